"""Where recorded exchanges go: the writer of transcript files (names are
`recorder.record.naming`'s, new files' numbers `recorder.record.numbering`'s).

`TranscriptStore` puts the exchanges of one scenario in one file, in the order their requests
started. A new file's number is claimed on disk (`recorder.record.numbering`: the file is
made whole, under a name no other writer holds), so any number of recorders on one
folder, or a user deleting files, never make one file overwrite another: a number found taken
is passed over. The folder is made again when it disappears, and a file of this store that a
user deleted is made again whole on its next write: the store holds every file it wrote to,
as text (of an exchange once written only its block, unless its `@during` tag may have to be
numbered again: ~3 KB per exchange of small JSON instead of the ~21 KB its model took).

An exchange that comes next in its file's order (the common case) is appended to the file
(`recorder.atomic.append_text`), so recording costs the same at the 5,000th exchange of a
scenario as at the first; the file is rewritten whole and atomically
(`recorder.atomic.write_text_atomic`: a temporary file, then a rename) only when an exchange
lands before one already written (concurrent requests finishing out of order, whose `@during`
tags may change) or when a newly learned secret changes text already written. The appended
text is what a rewrite would write (`dumps` of the file's exchanges, byte for byte). A reader
may see the last exchange half written while it is appended; a write that fails is cut
back; a recorder killed inside an append (or a power loss without `fsync`) may leave the
start of one exchange at the end of a file, which `recorder check` reports.

Record modes (`mode`: `new`, `replace`, `once`) say what a scenario that already has a file
does: `recorder.record.modes`.

Temporary files are made when a write needs one (a rewrite; a new file where the system has
no unnamed files, `O_TMPFILE`), in a hidden folder of the process (`FOLDER/.recorder-tmp/RANDOM/`,
`recorder.atomic`) that the store makes at its first write and keeps until `close` (or the
process exits): it also tells other writers on the folder that this one is there. The folder
of a process that crashed is removed by the next recorder or `play --update` writing there.

The proxy writes from one thread, its recording writer, after the client has its reply
(`recorder.record.proxy.recording`), so no write's cost is on a reply's path; the store is
thread-safe all the same (tests and benchmarks write from several threads, several stores
may share a folder).
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import json
import os
import re
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from recorder.atomic import (
    append_text,
    hold_scratch,
    release_scratch,
    remove_stale_scratch,
    write_text_atomic,
)
from recorder.httpfile import dumps, dumps_exchange, loads
from recorder.model import Exchange, Transcript
from recorder.record.modes import MODES, Keep, existing_file, keep_in_place
from recorder.record.naming import operation_slug, slugify
from recorder.record.numbering import Numbers

__all__ = [
    "CONVERSATION",
    "MODES",
    "FileKey",
    "Keep",
    "TranscriptStore",
    "during_tagged",
]

# the first part of the file key of a conversation of unscripted traffic (no slug has a "#")
CONVERSATION = "#conversation"
FileKey = tuple[str, Hashable]
# the generation of a scenario whose file `once` keeps: its exchanges are not written
_KEPT = "#kept"

# `.NAME.PID.N.tmp`: a temporary file that recorders before `recorder.atomic` made in the folder
_TEMPORARY = re.compile(r"^\..+\.(\d+)\.\d+\.tmp$")


def remove_stale_temporaries(folder: Path) -> list[str]:
    """Remove what killed processes left in `folder`: their temporary folders under
    `.recorder-tmp` (whose lock no process holds, `recorder.atomic.remove_stale_scratch`),
    and the `.NAME.PID.N.tmp` files of recorders before it, unless their process runs
    (this process's id counts as gone: it makes no such file; a recorder that is PID 1 in
    every container finds its previous run's files under its own id). Returns their names."""
    removed = remove_stale_scratch(folder)
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            match = _TEMPORARY.match(entry.name)
            if match is None or _running(int(match.group(1))):
                continue
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(entry.name)
    return removed


def _running(pid: int) -> bool:
    """Whether another process `pid` runs (True, to keep its files, when that cannot be
    told)."""
    if pid == os.getpid():
        return False
    if not 0 < pid < 2**31:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. EPERM: it exists, under another user
        return True
    return True


# --------------------------------------------------------------------------- writer


_FILE_HEAD = dumps(Transcript())  # "# recorder-format: 1\n"


@dataclass
class _Entry:
    ticket: int
    # let go once written when the entry has no `@during` tag (`TranscriptStore.write`): its block
    # is then all a rewrite of its file needs, as no tag of it can change
    exchange: Exchange | None
    during: tuple[int, int] | None
    # the exchange's block of the file, cached with the `@during` tag it was made with
    block: str = ""
    tag: str | None = None

    def text(self, tag: str | None) -> str:
        if not self.block or tag != self.tag:
            exchange = self.exchange
            assert exchange is not None, "an exchange let go is never rendered again"
            if tag is not None:
                exchange = dataclasses.replace(exchange, comments=(*exchange.comments, tag))
            self.block, self.tag = dumps_exchange(exchange), tag
        return self.block


@dataclass
class _OpenFile:
    slug: str
    path: Path | None = None  # claimed on disk by its first write
    # `path` is an earlier file of its scenario (`replace`): its first write replaces it
    replacing: bool = False
    entries: list[_Entry] = field(default_factory=list)  # sorted by ticket
    lock: threading.Lock = field(default_factory=threading.Lock)
    # entries[:written] are the file on disk, scrubbed with the store's first `secrets` secrets
    written: int = 0
    secrets: int = 0

    def text(self) -> str:
        """The whole file: the blocks of unchanged exchanges are reused, so an exchange costs
        one `dumps` of itself, not of the whole file."""
        if len(self.entries) == 1:  # (a new file: its one exchange has no tag)
            return _FILE_HEAD + "\n" + self.entries[0].text(None)
        position = {entry.ticket: n for n, entry in enumerate(self.entries, start=1)}
        parts = [_FILE_HEAD]
        for entry in self.entries:
            parts.append("\n")
            parts.append(entry.text(_during_tag(entry.during, position)))
        return "".join(parts)

    def last_block(self) -> str:
        """The text the last exchange adds to the file (the earlier ones are unchanged)."""
        entry = self.entries[-1]
        tag = None
        if entry.during is not None:
            entries = self.entries
            at = bisect.bisect_left(entries, entry.during[0], key=lambda e: e.ticket)
            if at < len(entries) and entries[at].ticket == entry.during[0]:
                tag = _during_tag(entry.during, {entry.during[0]: at + 1})
        return "\n" + entry.text(tag)

    def written_text(self) -> str:
        """The exchanges on disk as made, before scrubbing (head left out)."""
        return "".join(entry.block for entry in self.entries[: self.written])


class TranscriptStore:
    """Writes recorded exchanges under `out`. Thread-safe; every rewrite is atomic.

    `begin(scenario)` is called when a request starts and returns a ticket (its place in the
    request order); `write(ticket, exchange, secrets)` puts the finished exchange in its file,
    and `forget(ticket)` lets go of a request that will not be written (an upstream error).
    `end(scenario)` closes a scenario: its next request starts a new file, while requests begun
    before the end still go to the file they belong to when they finish.
    `scrub` (text, secrets) -> text is applied to the text before it is written.
    `fsync` flushes each file to the disk before it replaces the old one, and each append
    (durable across a power loss; without it a rewrite is still atomic for readers and for a
    crash of the process).
    """

    def __init__(
        self,
        out: Path,
        *,
        scrub: Callable[[str, Mapping[str, str]], str] | None = None,
        fsync: bool = False,
        mode: str = "new",
        keep: Keep | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown record mode {mode!r}: use one of {', '.join(MODES)}")
        self.out = Path(out)
        self.mode = mode
        self._keep = keep
        # slug -> its file on disk when the store first saw the scenario (replace, once)
        self._found: dict[str, Path | None] = {}
        # slug -> the file this store wrote its scenario to (replace: the next run's file)
        self._paths: dict[str, Path] = {}
        # a file `replace` rewrites -> its text before this store wrote it
        self._previous: dict[Path, str] = {}
        # a file `replace` rewrote -> whether `close` found it changed (after the keep pass)
        self.replaced: dict[Path, bool] = {}
        self._scrub = scrub
        self._fsync = fsync
        self._lock = threading.Lock()
        # (scenario slug, generation) -> its file; `end` starts the slug's next generation
        self._open: dict[FileKey, _OpenFile] = {}
        self._generation: dict[str, int] = {}
        # ticket -> (slug, generation) of a scenario request begun and not yet written, or
        # (CONVERSATION, id) of a conversation's
        self._pending: dict[int, FileKey] = {}
        self._slugs: dict[FileKey, str] = {}  # a conversation's file name, from its first request
        self._order = 0
        self._secrets: dict[str, str] = {}
        self._secret_log: list[tuple[str, str]] = []  # each change of `_secrets`, in order
        self.written: list[Path] = []
        # each written file's lock, by its path as a string (a `Path`'s hash costs ~3 us)
        self._locks: dict[str, threading.Lock] = {}
        self._holding = False  # this process's temporary folder in `out` (`recorder.atomic`)
        self._numbers = Numbers(self.out)  # new files' numbers, claimed on disk

    def prepare(self) -> None:
        """Create the folder (and fail early, with the reason, if it cannot be written), and
        remove the temporary files a recorder that was killed left in it."""
        self.out.mkdir(parents=True, exist_ok=True)
        if not os.access(self.out, os.W_OK | os.X_OK):
            raise PermissionError(f"cannot write to {self.out}")
        remove_stale_temporaries(self.out)

    def begin(
        self,
        scenario: str | None = None,
        *,
        into: FileKey | None = None,
        operation: str = "",
    ) -> int:
        """A ticket: the request's place in the order of request starts. A request of a
        scenario belongs to the scenario's file as it is now, whenever it finishes. Without
        a scenario, a request `into` a file key (`file_key` of an earlier request, or
        `(CONVERSATION, id)` for a conversation of unscripted traffic, whose file is named
        after the `operation` of its first request; `recorder.record.lineage`) goes to that
        file; with neither, to a file of its own."""
        with self._lock:
            self._order += 1
            if scenario is not None:
                self._pending[self._order] = self._scenario_key(slugify(scenario))
            elif into is not None:
                if into[0] == CONVERSATION:
                    self._slugs.setdefault(into, operation_slug(operation))
                self._pending[self._order] = into
            return self._order

    def _scenario_key(self, slug: str) -> FileKey:
        # called with self._lock held: the key of a scenario's request (`_KEPT` under `once`
        # for a scenario whose file was there when the store first saw it)
        if self.mode == "once" and self._existing(slug) is not None:
            return (slug, _KEPT)
        return (slug, self._generation.get(slug, 0))

    def _existing(self, slug: str) -> Path | None:
        """The file named for `slug` in the folder when the store first asked (the lowest
        number when there are several; None when there is none, or the folder cannot be
        read). Read once per scenario."""
        if slug not in self._found:
            self._found[slug] = existing_file(self.out, slug)
        return self._found[slug]

    def file_key(self, ticket: int) -> FileKey | None:
        """The key of the file a request begun with `ticket` goes to (None: a file of its
        own). Keys are hashable and stay the same for the file's life."""
        return self._pending.get(ticket)

    def forget(self, ticket: int) -> None:
        """The request of `ticket` will not be written (cheap; nothing when it was written)."""
        if ticket in self._pending:
            with self._lock:
                key = self._pending.pop(ticket, None)
                if key is not None:
                    self._release(key)

    def end(self, scenario: str) -> None:
        with self._lock:
            slug = slugify(scenario)
            generation = self._generation.get(slug, 0)
            self._generation[slug] = generation + 1
            self._release((slug, generation))

    def _release(self, key: FileKey) -> None:
        # called with self._lock held: an ended generation's file is dropped from memory once
        # no request begun in it is still on the way. A conversation's file stays: any later
        # request may carry one of its ids
        slug, generation = key
        if slug == CONVERSATION or not isinstance(generation, int):
            return  # (nor is a scenario's that `once` keeps: it has no file in memory)
        if generation < self._generation.get(slug, 0) and key not in self._pending.values():
            self._open.pop(key, None)

    def close(self) -> None:
        """Finish the files `replace` rewrote (`finish_replaced`), and remove this process's
        temporary folder in `out` (made again if a write comes)."""
        self.finish_replaced()
        with self._lock:
            holding, self._holding = self._holding, False
        if holding:
            release_scratch(self.out)

    def finish_replaced(self) -> dict[Path, bool]:
        """Lay each file `replace` rewrote over its text before this store wrote it, through
        `keep` (recorded generated values back where the behaviour did not change), and write
        it when that changes it. Returns the files, each with whether it now differs from
        its text before (also kept in `replaced`). Raises OSError when a file cannot be
        written; a file that does not parse, before or now, is left as recorded."""
        with self._lock:
            previous, self._previous = self._previous, {}
        for path, before in previous.items():
            lock = self._locks.get(os.fspath(path))
            with lock if lock is not None else contextlib.nullcontext():
                self.replaced[path] = keep_in_place(path, before, self._keep, fsync=self._fsync)
        return dict(self.replaced)

    def _hold(self) -> None:
        # called with self._lock held: keep the temporary folder from write to write
        if not self._holding:
            hold_scratch(self.out)
            self._holding = True

    def write(
        self,
        ticket: int,
        exchange: Exchange | str,
        *,
        scenario: str | None,
        operation: str,
        secrets: Mapping[str, str] = {},
        sent_secrets: Mapping[str, str] = {},
        during: tuple[int, int] | None = None,
    ) -> Path | None:
        """Record one finished exchange; returns the file it went to (None: not written, its
        scenario's file is kept, `once`). Raises OSError when the file cannot be written (the
        file stays as it was). `exchange` may be given as its block, the text `dumps_exchange`
        writes for it (`recorder.record.proxy.direct`), when it has no `during`.

        `during` = (ticket, frames): the request was sent while the event stream of the
        exchange with that ticket (same scenario) was open, after `frames` of its frames had
        gone to the client. It is written as the tag `# @during exchange N frame K` (N counted
        from 1 in the file), which tells a player to send this request at the same point.

        `sent_secrets` (the part of `secrets` the client sent): one never seen before is also
        scrubbed from the files written earlier, where an agent's reply may have carried it
        (a token a login returned, then sent as `Authorization`). Only these: secrets an
        agent sends (a new Set-Cookie on every reply) are in the reply they come with, and
        rescanning every file for each of them would cost more with every exchange."""
        with self._lock:
            self._hold()
            new = [value for value in sent_secrets if value not in self._secrets]
            earlier = list(self.written) if new else []
            for value, name in secrets.items():
                if self._secrets.get(value) != name:
                    self._secrets[value] = name
                    self._secret_log.append((value, name))
            all_secrets = dict(self._secrets) if self._secrets else {}
            version = len(self._secret_log)
            key = self._pending.pop(ticket, None)
            if key is None and scenario is not None:
                key = self._scenario_key(slugify(scenario))
            if key is None:
                record = _OpenFile(operation_slug(operation))
            elif key[1] == _KEPT:
                return None
            else:
                found = self._open.get(key)
                if found is None:
                    found = self._new_file(key)
                    self._open[key] = found
                self._release(key)
                record = found
        with record.lock:
            if isinstance(exchange, str):
                if during is not None:
                    raise ValueError("an exchange given as its block has no @during tag")
                entry = _Entry(ticket, None, None, block=exchange)
            else:
                entry = _Entry(ticket, exchange, during)
            entries = record.entries
            if not entries or entries[-1].ticket < ticket:
                entries.append(entry)  # (in order: the common case)
            else:
                bisect.insort(entries, entry, key=lambda item: item.ticket)
            first = record.path is None or record.replacing
            try:
                self._put(record, entry, all_secrets, version)
            except BaseException:
                record.entries.remove(entry)
                raise
            if entry.during is None and entry.block:
                # its block stays (the file's text); the exchange, several times its size in
                # memory, is not needed again: a store holds every file it writes to
                entry.exchange = None
            assert record.path is not None
            if first:
                with self._lock:
                    name = os.fspath(record.path)
                    if name not in self._locks:
                        self.written.append(record.path)
                    self._locks[name] = record.lock
                    if key is not None and key[0] != CONVERSATION:
                        self._paths.setdefault(key[0], record.path)
        if new and self._scrub is not None:
            self._rescrub(earlier, {value: sent_secrets[value] for value in new}, record.path)
        return record.path

    def _new_file(self, key: FileKey) -> _OpenFile:
        # called with self._lock held: the file of a scenario's run, or of a conversation.
        # Under `replace`, a scenario's earlier file (on disk when first seen, or written by
        # an earlier run of it here) is written again in place
        slug = key[0]
        if self.mode != "replace" or slug == CONVERSATION:
            return _OpenFile(self._slugs.get(key, slug))
        path = self._existing(slug) or self._paths.get(slug)
        if path is None:
            return _OpenFile(slug)
        for other in self._open.values():
            if other.path == path:
                # an earlier run of the scenario with a request still on the way: what it
                # still writes goes to a new file, not over this run's
                other.path, other.written = None, 0
        return _OpenFile(slug, path=path, replacing=True)

    def _put(
        self,
        record: _OpenFile,
        entry: _Entry,
        secrets: Mapping[str, str],
        version: int,
    ) -> None:
        """Write `record`'s new last entry or changed entries (its lock held): appended when
        the new entry is the last and the text on disk stays as a rewrite would write it."""
        scrub = self._scrub if secrets else None
        count = len(record.entries)
        if record.replacing:
            assert record.path is not None
            with self._lock:
                if record.path not in self._previous and record.path not in self.replaced:
                    with contextlib.suppress(FileNotFoundError, UnicodeDecodeError):
                        self._previous[record.path] = record.path.read_bytes().decode("utf-8")
        if (
            not record.replacing
            and record.path is not None
            and record.entries[-1] is entry
            and record.written == count - 1
            and self._unchanged(record)
        ):
            tail = record.last_block()
            if scrub is not None:
                scrubbed = scrub(tail, secrets)
                if scrubbed != tail:
                    # scrubbing replaced text inside values: the exchange must still parse
                    # (let go only after this; given as its block only when it has no tag)
                    exchange = entry.exchange
                    plain = entry.block if exchange is None else dumps_exchange(exchange)
                    loads(_FILE_HEAD + "\n" + scrub(plain, secrets), source=record.path)
                    tail = scrubbed
            try:
                append_text(record.path, tail, fsync=self._fsync)
            except FileNotFoundError:
                pass  # deleted: made again whole, below
            else:
                record.written, record.secrets = count, version
                return
        text = record.text()
        if scrub is not None:
            scrubbed = scrub(text, secrets)
            if scrubbed != text:
                loads(scrubbed, source=record.path)  # the file must still parse
                text = scrubbed
        self._write_whole(record, text)
        record.written, record.secrets = count, version
        record.replacing = False

    def _unchanged(self, record: _OpenFile) -> bool:
        """Whether the secrets learned since `record` was last written leave its text on
        disk as it is (scrubbing it with them changes nothing)."""
        if record.secrets == len(self._secret_log):
            return True
        if self._scrub is None:
            return True
        learned = dict(self._secret_log[record.secrets :])
        text = record.written_text()
        return self._scrub(text, learned) == text

    def _write_whole(self, record: _OpenFile, text: str) -> None:
        """Write the whole file: over the file when it is there (atomically), else as a new
        file whose name is claimed on disk (a number found taken is passed over)."""
        path = record.path
        if path is not None and os.path.lexists(path):
            try:
                write_text_atomic(path, text, fsync=self._fsync)
                return
            except FileNotFoundError:
                if os.path.isdir(self.out):
                    raise  # (else the folder is gone: made again below)
        candidate = self._numbers.claim(record.slug, text, path, fsync=self._fsync)
        if record.path is not None and candidate != record.path:
            # deleted, and its name taken by another writer since: this file moved
            with self._lock:
                self.written[self.written.index(record.path)] = candidate
                self._locks[os.fspath(candidate)] = self._locks.pop(os.fspath(record.path))
        record.path = candidate

    def _rescrub(self, paths: Iterable[Path], secrets: Mapping[str, str], skip: Path) -> None:
        """Scrub newly learned secrets from files already written (each under its lock)."""
        assert self._scrub is not None
        for path in paths:
            if path == skip:
                continue
            lock = self._locks.get(os.fspath(path))
            if lock is None:
                continue
            with lock:
                try:
                    text = path.read_bytes().decode("utf-8")  # as written: no newline changes
                except FileNotFoundError:
                    continue  # deleted by a user: made again whole on its next write
                scrubbed = self._scrub(text, secrets)
                if scrubbed != text:
                    loads(scrubbed, source=path)
                    write_text_atomic(path, scrubbed, fsync=self._fsync)


def during_tagged(
    entries: Iterable[tuple[int, Exchange, tuple[int, int] | None]],
) -> tuple[Exchange, ...]:
    """The exchanges of (ticket, exchange, during) entries in ticket order, each `during`
    written as the comment `@during exchange N frame K` once exchange N is in the list."""
    ordered = sorted(entries, key=lambda item: item[0])
    position = {ticket: n for n, (ticket, _, _) in enumerate(ordered, start=1)}
    out = []
    for _, exchange, during in ordered:
        tag = _during_tag(during, position)
        if tag is not None:
            exchange = dataclasses.replace(exchange, comments=(*exchange.comments, tag))
        out.append(exchange)
    return tuple(out)


def _during_tag(during: tuple[int, int] | None, position: Mapping[int, int]) -> str | None:
    if during is None or during[0] not in position:
        return None
    return f"@during exchange {position[during[0]]} frame {during[1]}"


def describe_error(exc: BaseException) -> str:
    """A one-line reason for a failed write, for logs and error replies."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return json.dumps(str(exc))
