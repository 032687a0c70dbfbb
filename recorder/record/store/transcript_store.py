"""Where recorded exchanges go: the writer of transcript files (names are
`recorder.record.naming`'s, new files' numbers `recorder.record.store.numbering`'s, which file a
request goes to `recorder.record.store.routing`'s, a file's text
`recorder.record.store.filetext`'s).

`TranscriptStore` puts the exchanges of one scenario in one file, in the order their requests
started. A new file's number is claimed on disk (`recorder.record.store.numbering`: the file is
made whole, under a name no other writer holds), so any number of recorders on one
folder, or a user deleting files, never make one file overwrite another: a number found taken
is passed over. The folder is made again when it disappears, and a file of this store that a
user deleted is made again whole on its next write: the store holds every file it wrote to,
as text (of an exchange once written only its block, unless its `@during` tag may have to be
numbered again: ~3 KB per exchange of small JSON instead of the ~21 KB its model took; a long
gRPC stream's block given kept on disk, `Archived`, stays there, read a chunk at a time when
its file is written).

An exchange that comes next in its file's order (the common case) is appended to the file
(`recorder.disk.locking.append_held`), so recording costs the same at the 5,000th exchange of a
scenario as at the first; the file is rewritten whole and atomically
(`recorder.disk.atomic.write_text_atomic`: a temporary file, then a rename) only when an exchange
lands before one already written (concurrent requests finishing out of order, whose `@during`
tags may change) or when a newly learned secret changes text already written. The appended
text is what a rewrite would write (`dumps` of the file's exchanges, byte for byte). A reader
may see the last exchange half written while it is appended; a write that fails is cut
back; a recorder killed inside an append (or a power loss without `fsync`) may leave the
start of one exchange at the end of a file, which `recorder check` reports.

Every write to a file that is there is made holding the file's lock on disk
(`recorder.disk.locking.locked`), and checks that the file is as this store left it (its size and
inode). One that another writer wrote meanwhile (two recorders on one scenario, both
replacing its file, or one joining the file another runs) is shared from then on
(`recorder.record.store.sharing`): each exchange is appended at its end, under the lock, and never
rewritten from this store's memory (an exchange that comes out of order is appended too; a
newly learned secret is scrubbed from the text on disk), so every exchange of every writer is
in it once. `replace` replaces a file only when it is as it was when the recorder started and
no running recorder noted it as one it writes (`recorder.disk.atomic.note_file`).

Record modes (`mode`: `new`, `replace`, `once`) say what a scenario that already has a file
does: `recorder.record.store.modes`.

Temporary files are made when a write needs one (a rewrite; a new file where the system has
no unnamed files, `O_TMPFILE`), in a hidden folder of the process (`FOLDER/.recorder-tmp/RANDOM/`,
`recorder.disk.atomic`) that the store makes at its first write and keeps until `close` (or the
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
import json
import os
import threading
from collections.abc import Hashable, Iterable, Mapping
from pathlib import Path

from recorder.disk.archive import Archive
from recorder.disk.atomic import (
    Pieces,
    hold_scratch,
    note_file,
    noted_by_others,
    other_writers,
    release_scratch,
    write_text_atomic,
)
from recorder.disk.locking import Held, append_held, locked, read_held
from recorder.disk.transcripts import natural_key
from recorder.format.httpfile import loads
from recorder.format.model import Exchange
from recorder.record.store.filetext import Block, CallOf, Disk, Entry, OpenFile, during_tagged
from recorder.record.store.leftovers import remove_stale_temporaries
from recorder.record.store.modes import MODES, Keep, keep_in_place
from recorder.record.store.numbering import Numbers
from recorder.record.store.routing import CONVERSATION, FileKey, Routes
from recorder.record.store.scrubbing import (
    Scrub,
    changes,
    rescrub,
    scrubbed,
    scrubbed_block,
    unchanged_on_disk,
)
from recorder.record.store.sharing import as_left, join, refresh

__all__ = [
    "CONVERSATION",
    "MODES",
    "FileKey",
    "Keep",
    "TranscriptStore",
    "describe_error",
    "during_tagged",
    "remove_stale_temporaries",
]


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
        scrub: Scrub | None = None,
        fsync: bool = False,
        mode: str = "new",
        keep: Keep | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown record mode {mode!r}: use one of {', '.join(MODES)}")
        self.out = Path(out)
        self.mode = mode
        self._keep = keep
        # a file `replace` rewrites -> its text before this store wrote it
        self._previous: dict[Path, str] = {}
        # a file `replace` rewrote -> whether `close` found it changed (after the keep pass)
        self.replaced: dict[Path, bool] = {}
        self._scrub = scrub
        self._fsync = fsync
        self._lock = threading.Lock()
        self.routes = Routes(self.out, mode, self._lock)  # which file each request goes to
        self._secrets: dict[str, str] = {}
        self._secret_log: list[tuple[str, str]] = []  # each change of `_secrets`, in order
        self.written: list[Path] = []
        # each written file's lock and state, by its path as a string (a `Path`'s hash
        # costs ~3 us)
        self._disks: dict[str, Disk] = {}
        self._names: dict[Hashable, str] = {}  # a written file's name, by key (`# @after`)
        # a need not yet written -> the files that need it, to name it in once it is
        self._awaiting: dict[Hashable, list[OpenFile]] = {}
        self._holding = False  # this process's temporary folder in `out` (`recorder.disk.atomic`)
        self._numbers = Numbers(self.out)  # new files' numbers, claimed on disk
        self._folder = os.path.abspath(self.out)
        # where a long stream's block is kept, given `Archived` (`recorder.disk.archive`):
        # its file is made at the first, and lives as long as the store
        self.archive = Archive()

    def prepare(self) -> None:
        """Create the folder (and fail early, with the reason, if it cannot be written), and
        remove the temporary files a recorder that was killed left in it."""
        self.out.mkdir(parents=True, exist_ok=True)
        if not os.access(self.out, os.W_OK | os.X_OK):
            raise PermissionError(f"cannot write to {self.out}")
        remove_stale_temporaries(self.out)
        self.routes.look()

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
        return self.routes.begin(scenario, into=into, operation=operation)

    def file_key(self, ticket: int) -> FileKey | None:
        """The key of the file a request begun with `ticket` goes to (None: a file of its
        own). Keys are hashable and stay the same for the file's life."""
        return self.routes.pending.get(ticket)

    def forget(self, ticket: int) -> None:
        """The request of `ticket` will not be written (cheap; nothing when it was written)."""
        self.routes.forget(ticket)

    def fold(self, ticket: int, key: FileKey) -> None:
        """The request of `ticket`, the first of its conversation, goes to the file of `key`
        instead (a card fetch like the one before it, `recorder.record.proxy.folding`); so do
        the later requests of its conversation."""
        self.routes.fold(ticket, key)

    def move(self, ticket: int, key: FileKey) -> None:
        """The request of `ticket`, not yet written, goes to the file of `key` instead (an
        agent's call, once the exchange it belongs to is known: `recorder.record.calls`)."""
        self.routes.move(ticket, key)

    def end(self, scenario: str) -> None:
        """Close a scenario: its next request starts a new file."""
        self.routes.end(scenario)

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
            disk = self._disks.get(os.fspath(path))
            with disk.lock if disk is not None else contextlib.nullcontext():
                try:
                    # (under the file's lock on disk: another writer's append waits for it)
                    with locked(path):
                        changed = keep_in_place(path, before, self._keep, fsync=self._fsync)
                except FileNotFoundError:
                    changed = False
                self.replaced[path] = changed
        return dict(self.replaced)

    def _hold(self) -> None:
        # called with self._lock held: keep the temporary folder from write to write
        if not self._holding:
            hold_scratch(self.out)
            self._holding = True

    def write(
        self,
        ticket: int,
        exchange: Exchange | Block,
        *,
        scenario: str | None,
        operation: str,
        secrets: Mapping[str, str] = {},
        sent_secrets: Mapping[str, str] = {},
        during: tuple[int, int] | None = None,
        after: Iterable[Hashable] = (),
        push: int | None = None,
        call: CallOf | None = None,
    ) -> Path | None:
        """Record one finished exchange; returns the file it went to (None: not written, its
        scenario's file is kept, `once`). Raises OSError when the file cannot be written (the
        file stays as it was). `exchange` may be given as its `Block`, the text `dumps_exchange`
        writes for it (`recorder.record.proxy.direct`), when it has no `during` and no `push`.

        `during` = (ticket, frames): the request was sent while the event stream of the
        exchange with that ticket (same scenario) was open, after `frames` of its frames had
        gone to the client. It is written as the tag `# @during exchange N frame K` (N counted
        from 1 in the file), which tells a player to send this request at the same point.

        `push`: the exchange is a push notification delivery, and this is the ticket of the
        exchange (of the same file) that registered its config: written as the tag `# @push
        config N`, N that exchange's place in the file.

        `call`: the exchange is a call the agent made to a downstream while it answered the
        exchange of ticket `call.exchange` (of the same file): written as the tag `# @call NAME
        exchange N [frame K]`, N that exchange's place in the file; the file's head names the
        downstream (`# @downstream NAME URL`).

        `after`: the keys of the files whose state the file's replies read so far
        (`Lineage.needs`); each one already written is named in the file's head as
        `# @after NN-name.http`, and the player plays it first.

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
            key, found = self.routes.file_for(ticket, scenario, operation)
            if found is None:
                return None  # (`once` keeps its scenario's file)
            record = found
            needed = {self._names[k] for k in after if k != key and k in self._names}
            for unnamed in {k for k in after if k != key and k not in self._names}:
                # a need not written yet (its first exchange, a stream, still open): named
                # when it is (`_name_in_dependents`)
                waiting = self._awaiting.setdefault(unnamed, [])
                if not any(other is record for other in waiting):
                    waiting.append(record)
            dependents: list[OpenFile] = []
        with record.lock:
            _add_needs(record, needed)
            if isinstance(exchange, Block):  # (its text may be `Archived`, kept on disk)
                if during is not None or push is not None or call is not None:
                    raise ValueError("an exchange given as its block has no @during tag")
                entry = Entry(ticket, None, None, block=exchange.text)
            else:
                entry = Entry(ticket, exchange, during, push=push, call=call)
            if call is not None:
                record.add_downstream(call.name, call.url)
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
            if entry.during is None and entry.push is None and entry.call is None and entry.block:
                # its block stays (the file's text); the exchange, several times its size in
                # memory, is not needed again: a store holds every file it writes to
                entry.exchange = None
            assert record.path is not None
            if first:
                with self._lock:
                    name = os.fspath(record.path)
                    if name not in self._disks:
                        self.written.append(record.path)
                        # (other recorders do not replace it, `noted_by_others`)
                        note_file(self._folder, record.path.name)
                    self._disks[name] = record.disk
                    if key is not None:
                        self._names[key] = record.path.name  # (for the files that need it)
                        dependents = self._awaiting.pop(key, [])
        for dependent in dependents:
            self._name_in_dependent(dependent, record.path.name)
        if new and self._scrub is not None:
            self._rescrub(earlier, {value: sent_secrets[value] for value in new}, record.path)
        return record.path

    def _name_in_dependent(self, dependent: OpenFile, name: str) -> None:
        """A file that needs the file just written first (`name`) names it in its head:
        rewritten whole (under its lock on disk) if it is on disk already, else at its first
        write. A file other writers write too keeps its head (it is only appended to)."""
        with dependent.lock:
            _add_needs(dependent, {name})
            path = dependent.path
            if path is None or not dependent.written or dependent.replacing:
                return
            if dependent.disk.shared:
                return
            with self._lock:
                secrets = dict(self._secrets)
            text = scrubbed(self._scrub, dependent.pieces(), secrets, path)
            try:
                with locked(path) as held:
                    if not as_left(dependent, held):
                        return  # changed by another writer: never rewritten from memory
                    write_text_atomic(path, text, fsync=self._fsync)
                    held.size, held.ino = text.size, 0
            except FileNotFoundError:
                return  # deleted: made again whole, with its head, at its next write
            dependent.disk.size, dependent.disk.ino = held.size, held.ino
            dependent.head_written = dependent.head_tags()

    def _put(
        self,
        record: OpenFile,
        entry: Entry,
        secrets: Mapping[str, str],
        version: int,
    ) -> None:
        """Write `record`'s new last entry or changed entries (its lock held): appended when
        the new entry is the last and the text on disk stays as a rewrite would write it.
        Every write to a file that is there is made under the file's lock on disk
        (`recorder.disk.locking`): a file another writer wrote since is joined (`sharing`), and
        only appended to from then on."""
        path = record.path
        if path is not None:
            try:
                with locked(path) as held:
                    if record.replacing:
                        self._claim_replace(record, entry, path, held)
                    elif not record.disk.shared and not as_left(record, held):
                        join(record, entry, held)
                    if record.disk.shared:
                        self._put_shared(record, entry, held, secrets)
                    else:
                        self._put_own(record, entry, held, secrets)
                record.secrets = version
                return
            except FileNotFoundError:
                if os.path.isdir(self.out) and os.path.lexists(path):
                    raise
                # deleted (or its folder): made again whole, below, with this store's part
        # (written in its pieces, never joined)
        text = scrubbed(self._scrub, record.pieces(), secrets, record.path)
        self._write_whole(record, text)
        record.written, record.secrets = len(record.entries), version
        record.replacing = False
        record.head_written = record.head_tags()

    def _claim_replace(self, record: OpenFile, entry: Entry, path: Path, held: Held) -> None:
        """`replace`'s first write of `record` (the file `held`): its text is kept for the
        keep pass and the file rewritten, unless another writer changed it since the
        recording started or writes it now: then this store joins it (nothing replaced)."""
        record.replacing = False
        stamp = self.routes.stamps.get(path)
        if stamp == (held.ino, held.size, held.mtime_ns) and not (
            other_writers(self.out) and noted_by_others(self.out, path.name)
        ):
            with self._lock:
                if path not in self._previous and path not in self.replaced:
                    with contextlib.suppress(UnicodeDecodeError):
                        self._previous[path] = read_held(held).decode("utf-8")
            record.disk.size = None  # (not as left: rewritten whole by `_put_own`)
            return
        record.disk.size = None
        join(record, entry, held)

    def _put_own(
        self, record: OpenFile, entry: Entry, held: Held, secrets: Mapping[str, str]
    ) -> None:
        """Write to a file only this store writes: the new entry appended when it is the
        last and nothing on disk changes, else the file rewritten whole (atomically)."""
        count = len(record.entries)
        assert record.path is not None
        if (
            record.disk.size is not None
            and record.entries[-1] is entry
            and record.written == count - 1
            and record.head_tags() == record.head_written
            and self._unchanged(record)
        ):
            # (appended in its pieces, never joined)
            tail = scrubbed_block(self._scrub, record.last_pieces(), entry, secrets, record.path)
            append_held(held, tail, fsync=self._fsync)
        else:
            text = scrubbed(self._scrub, record.pieces(), secrets, record.path)
            write_text_atomic(record.path, text, fsync=self._fsync)
            held.size, held.ino = text.size, 0  # (a new file: its inode learned next time)
            record.head_written = record.head_tags()
        record.disk.size, record.disk.ino = held.size, held.ino
        record.written = count

    def _put_shared(
        self, record: OpenFile, entry: Entry, held: Held, secrets: Mapping[str, str]
    ) -> None:
        """Append the new entry to a file other writers write too (at its end, whatever its
        ticket). Secrets learned since the file was last written are scrubbed from its text
        on disk, not rewritten from memory."""
        assert record.path is not None
        refresh(record, held)
        disk = record.disk
        block = entry.text(
            record.shared_tag(entry), record.shared_push(entry), record.shared_call(entry)
        )
        tail: Pieces | None = scrubbed_block(
            self._scrub, ("\n", block), entry, secrets, record.path
        )
        if (
            record.secrets != len(self._secret_log)
            and self._scrub is not None
            and secrets
            and not unchanged_on_disk(self._scrub, held, secrets)
        ):
            # (the text on disk, read whole: another writer's, which this store never held)
            text = read_held(held).decode("utf-8")
            scrubbed = self._scrub(text, secrets)
            if scrubbed != text and tail is not None:
                loads(scrubbed, source=record.path)
                whole = Pieces((scrubbed, *tail.parts))
                write_text_atomic(record.path, whole, fsync=self._fsync)
                held.size, held.ino = whole.size, 0
                tail = None
        if tail is not None:
            append_held(held, tail, fsync=self._fsync)
        disk.size, disk.ino = held.size, held.ino
        if disk.count is not None:
            disk.count += 1
            entry.at = disk.count
        record.written += 1

    def _unchanged(self, record: OpenFile) -> bool:
        """Whether the secrets learned since `record` was last written leave its text on
        disk as it is (scrubbing it with them changes nothing)."""
        if record.secrets == len(self._secret_log):
            return True
        if self._scrub is None:
            return True
        learned = dict(self._secret_log[record.secrets :])
        return not changes(self._scrub, record.written_pieces(), learned)

    def _write_whole(self, record: OpenFile, text: Pieces) -> None:
        """Write the file whole as a new file whose name is claimed on disk (a number found
        taken is passed over): a new file, or one of this store's that is gone (its name
        again, unless another writer took it since)."""
        path = record.path
        candidate = self._numbers.claim(record.slug, text, path, fsync=self._fsync)
        if path is not None and candidate != path:
            # deleted, and its name taken by another writer since: this file moved
            with self._lock:
                self.written[self.written.index(path)] = candidate
                self._disks[os.fspath(candidate)] = self._disks.pop(os.fspath(path))
            note_file(self._folder, candidate.name)
        record.path = candidate
        disk = record.disk
        disk.size, disk.ino, disk.shared, disk.count = text.size, 0, False, 0

    def _rescrub(self, paths: Iterable[Path], secrets: Mapping[str, str], skip: Path) -> None:
        """Scrub newly learned secrets from files already written, from their text on disk
        (`recorder.record.store.scrubbing.rescrub`)."""
        assert self._scrub is not None
        for path in paths:
            disk = self._disks.get(os.fspath(path))
            if path != skip and disk is not None:
                rescrub(self._scrub, path, disk, secrets, self._fsync)


def _add_needs(record: OpenFile, names: set[str]) -> None:
    """`names` (files `record` needs) in its head's `@after` tags, in number order."""
    if not names.issubset(record.after):
        record.after = tuple(
            sorted({*record.after, *names}, key=lambda name: natural_key(Path(name)))
        )


def describe_error(exc: BaseException) -> str:
    """A one-line reason for a failed write, for logs and error replies."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return json.dumps(str(exc))
