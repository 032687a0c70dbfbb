"""Where recorded exchanges go: naming, numbering, and the writer of transcript files.

Pure part (no I/O): `operation_name` (the A2A operation a request calls), `exchange_title`,
`slugify` (a scenario name made safe as a file name), `next_number` and `file_name`
(`NN-slug.http`, numbering after the highest number already in the folder), and
`header_case` (conventional spelling of lowercase header names).

I/O part: `TranscriptStore` appends the exchanges of one scenario to one file, in the order
their requests started, rewriting the whole file atomically each time
(`recorder.httpfile.write_text_atomic`: a temporary file, then a rename), so a reader sees the
file before or after an exchange, never half of one. The text of each exchange is made once and
kept, so a long scenario costs one `dumps` of the new exchange plus a copy of the file per
exchange. Exchanges without a scenario get a file each, named after the operation.
"""

from __future__ import annotations

import atexit
import bisect
import collections
import contextlib
import dataclasses
import functools
import json
import os
import re
import threading
import unicodedata
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from recorder.httpfile import (
    discard_temporary,
    dumps,
    dumps_exchange,
    loads,
    open_temporary,
    write_text_atomic,
)
from recorder.model import Exchange, Request, Transcript

__all__ = [
    "CONVERSATION",
    "FileKey",
    "TranscriptStore",
    "during_tagged",
    "exchange_title",
    "file_name",
    "header_case",
    "next_number",
    "operation_name",
    "operation_slug",
    "slugify",
]

# the first part of the file key of a conversation of unscripted traffic (no slug has a "#")
CONVERSATION = "#conversation"
FileKey = tuple[str, Hashable]

_NUMBERED = re.compile(r"^(\d+)-.*\.http$")
# `.NAME.PID.N.tmp`: a temporary file of `recorder.httpfile.write_text_atomic`
_TEMPORARY = re.compile(r"^\..+\.(\d+)\.\d+\.tmp$")
_MAX_SLUG = 60

_PUSH = r"/tasks/[^/]+/pushNotificationConfigs"
# REST routes of the HTTP+JSON binding (A2A §11), matched on the end of the path, so any
# interface prefix (`/a2a/rest`, a tenant) is allowed in front.
_REST_ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("POST", re.compile(r"/message:send$"), "SendMessage"),
    ("POST", re.compile(r"/message:stream$"), "SendStreamingMessage"),
    ("GET", re.compile(_PUSH + r"/[^/]+$"), "GetTaskPushNotificationConfig"),
    ("DELETE", re.compile(_PUSH + r"/[^/]+$"), "DeleteTaskPushNotificationConfig"),
    ("GET", re.compile(_PUSH + "$"), "ListTaskPushNotificationConfigs"),
    ("POST", re.compile(_PUSH + "$"), "CreateTaskPushNotificationConfig"),
    ("POST", re.compile(r"/tasks/[^/]+:cancel$"), "CancelTask"),
    ("POST", re.compile(r"/tasks/[^/]+:subscribe$"), "SubscribeToTask"),
    ("GET", re.compile(r"/tasks/[^/]+:subscribe$"), "SubscribeToTask"),
    ("GET", re.compile(r"/tasks/[^/:]+$"), "GetTask"),
    ("GET", re.compile(r"/tasks$"), "ListTasks"),
    ("GET", re.compile(r"/extendedAgentCard$"), "GetExtendedAgentCard"),
    # as the proxy tells a card (`_quick_operation`): under any prefix, like the routes above
    ("GET", re.compile(r"/\.well-known/agent-card\.json$"), "GetAgentCard"),
    ("GET", re.compile(r"^/\.well-known/agent\.json$"), "GetAgentCard"),
)
_JSONRPC_METHOD = re.compile(r"^[\w./:-]{1,80}$")

# spellings that simple capitalisation gets wrong (RFC 9110 and A2A §3.2.6 spell them so)
_HEADER_SPELLING = {
    "a2a-version": "A2A-Version",
    "a2a-extensions": "A2A-Extensions",
    "x-a2a-extensions": "X-A2A-Extensions",
    "etag": "ETag",
    "www-authenticate": "WWW-Authenticate",
    "te": "TE",
    "dnt": "DNT",
    "content-md5": "Content-MD5",
    "x-api-key": "X-API-Key",
    "x-request-id": "X-Request-ID",
    "x-xss-protection": "X-XSS-Protection",
}


@functools.lru_cache(maxsize=1024)  # the same few names come in every exchange
def header_case(name: str) -> str:
    """`content-type` -> `Content-Type`, `a2a-version` -> `A2A-Version`, `etag` -> `ETag`."""
    known = _HEADER_SPELLING.get(name.lower())
    if known is not None:
        return known
    if name != name.lower():
        return name  # someone chose a spelling: keep it
    return "-".join(part[:1].upper() + part[1:] for part in name.split("-"))


def operation_name(request: Request) -> str:
    """The A2A operation a request calls: the JSON-RPC `method`, the REST route's operation,
    `GetAgentCard` for the card, else `METHOD /path`."""
    if request.method == "POST" and request.is_json:
        value = request.json
        if isinstance(value, dict):
            method = value.get("method")
            if isinstance(method, str) and _JSONRPC_METHOD.match(method):
                return method
    path = request.path
    for method, pattern, name in _REST_ROUTES:
        if request.method == method and pattern.search(path):
            return name
    return f"{request.method} {path}"


def exchange_title(request: Request, description: str | None = None) -> str:
    """`GetTask` or `GetTask: read the review back` (one line)."""
    title = operation_name(request)
    if description:
        text = " ".join(description.split())
        if text:
            title = f"{title}: {text}"
    return title


@functools.lru_cache(maxsize=1024)  # a scenario's name is slugged several times per request
@functools.lru_cache(maxsize=1024)  # a pure function, called a few times per request
def slugify(name: str) -> str:
    """A scenario or operation name as a file-name slug: lowercase ASCII letters, digits and
    single dashes; no separators, no dots (so no `..`), at most 60 characters. Raises
    ValueError when nothing usable is left."""
    # accents off (`Überprüfung` -> `Uberprufung`, not `berpr-fung`); other letters drop out
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    # CamelCase -> camel-case, so operation names read well
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", plain)
    slug = re.sub(r"[^a-z0-9]+", "-", spaced.lower()).strip("-")
    slug = slug[:_MAX_SLUG].rstrip("-")
    if not slug:
        raise ValueError(f"cannot make a file name from {name!r}: use letters or digits")
    return slug


def operation_slug(operation: str) -> str:
    """`GetTask` -> `get-task`; `GET /foo/bar` -> `get-foo-bar`."""
    try:
        return slugify(operation)
    except ValueError:
        return "exchange"


def next_number(names: Iterable[str]) -> int:
    """One more than the highest `NN` of the `NN-slug.http` names given (1 when there is none)."""
    highest = 0
    for name in names:
        match = _NUMBERED.match(name)
        if match:
            highest = max(highest, int(match.group(1)))
    return highest + 1


def remove_stale_temporaries(folder: Path) -> list[str]:
    """Remove the temporary files (`.NAME.PID.N.tmp`) that a process no longer running left
    in `folder` (one killed before its rename, or before it removed the files it had opened
    ahead); returns their names. Those of running processes are left alone."""
    removed = []
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
    """Whether process `pid` runs (True, to keep its files, when that cannot be told)."""
    if pid == os.getpid() or not 0 < pid < 2**31:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. EPERM: it exists, under another user
        return True
    return True


def file_name(number: int, slug: str) -> str:
    return f"{number:02d}-{slug}.http"


# --------------------------------------------------------------------------- writer


# temporary files `TranscriptStore.reserve` hands out at most at once (each holds a descriptor)
MAX_RESERVED = 64

_FILE_HEAD = dumps(Transcript())  # "# recorder-format: 1\n"


@dataclass
class _Entry:
    ticket: int
    exchange: Exchange
    during: tuple[int, int] | None
    # the exchange's block of the file, cached with the `@during` tag it was made with
    block: str = ""
    tag: str | None = None


@dataclass
class _OpenFile:
    path: Path
    entries: list[_Entry] = field(default_factory=list)  # sorted by ticket
    lock: threading.Lock = field(default_factory=threading.Lock)
    on_disk: bool = False  # written once at least (then it is in `TranscriptStore.written`)

    def text(self) -> str:
        """The whole file: the blocks of unchanged exchanges are reused, so an exchange costs
        one `dumps` of itself, not of the whole file."""
        position = {entry.ticket: n for n, entry in enumerate(self.entries, start=1)}
        parts = [_FILE_HEAD]
        for entry in self.entries:
            tag = _during_tag(entry.during, position)
            if not entry.block or tag != entry.tag:
                exchange = entry.exchange
                if tag is not None:
                    comments = (*exchange.comments, tag)
                    exchange = dataclasses.replace(exchange, comments=comments)
                entry.block, entry.tag = dumps_exchange(exchange), tag
            parts.append("\n")
            parts.append(entry.block)
        return "".join(parts)


class _TemporaryPool:
    """Temporary files opened ahead in a folder by a daemon thread: up to SIZE are kept
    ready, and the thread is woken to make more when half are gone. File creation releases
    the GIL, so the thread's waits on the disk cost the event loop nothing."""

    SIZE = 16

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._ready: collections.deque[tuple[str, int]] = collections.deque()
        self._wake = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._fill, name="recorder-tmpfiles", daemon=True)
        self._thread.start()
        self._wake.set()
        # a store nobody closes (an app served without lifespan events) still takes its
        # files away when the interpreter exits
        atexit.register(self.close)

    def take(self) -> tuple[str, int] | None:
        try:
            temporary: tuple[str, int] | None = self._ready.popleft()
        except IndexError:
            temporary = None
        if len(self._ready) <= self.SIZE // 2 and not self._wake.is_set():
            self._wake.set()
        return temporary

    def _fill(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._closed:
                break
            while len(self._ready) < self.SIZE and not self._closed:
                try:
                    self._ready.append(open_temporary(self._folder))
                except OSError:
                    break  # e.g. the folder is gone: the writes will say so; try when woken
        self._discard()

    def _discard(self) -> None:
        while True:
            try:
                discard_temporary(self._ready.popleft())
            except IndexError:
                return

    def close(self) -> None:
        atexit.unregister(self.close)
        self._closed = True
        self._wake.set()
        self._thread.join(5.0)
        self._discard()


class TranscriptStore:
    """Writes recorded exchanges under `out`. Thread-safe; every write is atomic.

    `begin(scenario)` is called when a request starts and returns a ticket (its place in the
    request order); `write(ticket, exchange, secrets)` puts the finished exchange in its file,
    and `forget(ticket)` lets go of a request that will not be written (an upstream error).
    `end(scenario)` closes a scenario: its next request starts a new file, while requests begun
    before the end still go to the file they belong to when they finish.
    `scrub` (text, secrets) -> text is applied to the whole file text before it is written.
    `fsync` flushes each file to the disk before it replaces the old one (durable across a
    power loss; without it a write is still atomic for readers and for a crash of the process).
    """

    def __init__(
        self,
        out: Path,
        *,
        scrub: Callable[[str, Mapping[str, str]], str] | None = None,
        fsync: bool = False,
    ) -> None:
        self.out = Path(out)
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
        self._next: int | None = None
        self.written: list[Path] = []
        self._locks: dict[Path, threading.Lock] = {}  # each written file's lock
        self._reserved = 0  # temporary files handed out by `reserve`
        self._pool: _TemporaryPool | None = None

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
                slug = slugify(scenario)
                self._pending[self._order] = (slug, self._generation.get(slug, 0))
            elif into is not None:
                if into[0] == CONVERSATION:
                    self._slugs.setdefault(into, operation_slug(operation))
                self._pending[self._order] = into
            return self._order

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
            return
        if generation < self._generation.get(slug, 0) and key not in self._pending.values():
            self._open.pop(key, None)

    def _allocate(self, slug: str) -> Path:
        # called with self._lock held. The folder is read once; after that the numbers this
        # store hands out are counted in memory (a scan per exchange would make every
        # recording cost more than the one before).
        if self._next is None:
            self.out.mkdir(parents=True, exist_ok=True)
            self._next = next_number(p.name for p in self.out.iterdir())
        number, self._next = self._next, self._next + 1
        return self.out / file_name(number, slug)

    def reserve(self) -> tuple[str, int] | None:
        """A temporary file in `out` for a `write` to come, so that the write has less to do:
        taken from files a background thread opens ahead (creating a file is most of a small
        write's cost, and on a busy disk it can take a millisecond: not in the caller's
        thread). None when none is ready, or when `MAX_RESERVED` are out already (each holds
        a file descriptor): the write then makes its own, and reports what fails. Give it to
        `write`, or back to `release`. `close` stops the thread."""
        with self._lock:
            if self._reserved >= MAX_RESERVED:
                return None
            if self._pool is None:
                self._pool = _TemporaryPool(self.out)
            temporary = self._pool.take()
            if temporary is not None:
                self._reserved += 1
            return temporary

    def release(self, temporary: tuple[str, int]) -> None:
        """Give back a file from `reserve` that no write used (it is closed and removed)."""
        discard_temporary(temporary)
        with self._lock:
            self._reserved -= 1

    def close(self) -> None:
        """Stop opening temporary files ahead, and remove those not handed out."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def write(
        self,
        ticket: int,
        exchange: Exchange,
        *,
        scenario: str | None,
        operation: str,
        secrets: Mapping[str, str] = {},
        sent_secrets: Mapping[str, str] = {},
        during: tuple[int, int] | None = None,
        temporary: tuple[str, int] | None = None,
    ) -> Path:
        """Record one finished exchange; returns the file it went to. Raises OSError when the
        file cannot be written (nothing is half written: the old file stays as it was).
        `temporary` (from `reserve`) is used for the write, or discarded: it is this call's.

        `during` = (ticket, frames): the request was sent while the event stream of the
        exchange with that ticket (same scenario) was open, after `frames` of its frames had
        gone to the client. It is written as the tag `# @during exchange N frame K` (N counted
        from 1 in the file), which tells a player to send this request at the same point.

        `sent_secrets` (the part of `secrets` the client sent): one never seen before is also
        scrubbed from the files written earlier, where an agent's reply may have carried it
        (a token a login returned, then sent as `Authorization`). Only these: secrets an
        agent sends (a new Set-Cookie on every reply) are in the reply they come with, and
        rescanning every file for each of them would cost more with every exchange."""
        reserved = temporary is not None
        try:
            with self._lock:
                new = [value for value in sent_secrets if value not in self._secrets]
                earlier = list(self.written) if new else []
                if secrets:
                    self._secrets.update(secrets)
                all_secrets = dict(self._secrets) if self._secrets else {}
                key = self._pending.pop(ticket, None)
                if key is None and scenario is not None:
                    slug = slugify(scenario)
                    key = (slug, self._generation.get(slug, 0))
                if key is None:
                    record = _OpenFile(self._allocate(operation_slug(operation)))
                else:
                    found = self._open.get(key)
                    if found is None:
                        found = _OpenFile(self._allocate(self._slugs.get(key, key[0])))
                        self._open[key] = found
                    self._release(key)
                    record = found
            with record.lock:
                entry = _Entry(ticket, exchange, during)
                bisect.insort(record.entries, entry, key=lambda item: item.ticket)
                try:
                    text = record.text()
                    if self._scrub is not None and all_secrets:
                        scrubbed = self._scrub(text, all_secrets)
                        if scrubbed != text:
                            # scrubbing replaced text inside values: the file must still parse
                            loads(scrubbed, source=record.path)
                            text = scrubbed
                    # (the write closes the temporary file, and removes it when it fails)
                    given, temporary = temporary, None
                    # a file this store has not written yet has a new number: nothing to keep
                    write_text_atomic(
                        record.path,
                        text,
                        fsync=self._fsync,
                        keep_mode=record.on_disk,
                        temporary=given,
                    )
                except BaseException:
                    record.entries.remove(entry)
                    raise
                if not record.on_disk:
                    record.on_disk = True
                    with self._lock:
                        self.written.append(record.path)
                        self._locks[record.path] = record.lock
        finally:
            if reserved:
                if temporary is not None:
                    discard_temporary(temporary)
                with self._lock:
                    self._reserved -= 1
        if new and self._scrub is not None:
            self._rescrub(earlier, {value: sent_secrets[value] for value in new}, record.path)
        return record.path

    def _rescrub(self, paths: Iterable[Path], secrets: Mapping[str, str], skip: Path) -> None:
        """Scrub newly learned secrets from files already written (each under its lock)."""
        assert self._scrub is not None
        for path in paths:
            if path == skip:
                continue
            with self._locks[path]:
                text = path.read_bytes().decode("utf-8")  # as written: no newline changes
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
