"""The record of a gRPC call, made beside the traffic (the gRPC listener's,
`recorder.record.grpc_proxy`): nothing here runs between receiving a message and passing it on.

The listener hands each reply message here in the step of the event loop right after grpc
sent it to the client (`loop.call_soon` before the handler returns or yields: grpc starts the
send in that same step, and no request that follows can be read before the callback runs).

- Its ids (`recorder.record.lineage`): a message of up to `ON_LOOP` bytes is decoded
  (ProtoJSON, as a parsed value) and learned right there, so a follow-up by one of its ids
  finds the call's file, as in the other bindings. A larger one is decoded on the worker
  thread, and its ids are learned on the loop as soon as it is (a follow-up sent in that
  moment may start a file of its own; a message whose JSON is over
  `lineage.MAX_SCANNED_BODY` is not read for ids, as a reply body of that size is not).
- Its text: a stream message's ProtoJSON with its secrets out (`Redactor.redact_events`) is
  made on the worker thread (`Records`: one thread per listener, in the order the messages
  came) and appended to the call's `MessageSpool` as it passes: in memory up to `SPOOL_AT`
  bytes, then in an anonymous temporary file; nothing else of a message stays in memory.
- The exchange: built on the recording's writer thread (handed over as a function) once the
  call has ended and the worker has its messages: the request's metadata and message
  redacted there, the reply's status, metadata and messages put together
  (`recorder.bindings.grpc.response_of`). A stream's is given as its block (`stream_block`):
  the frames read from the spool one at a time and written to the store's archive (an
  anonymous temporary file, `recorder.disk.archive`), the exchange's text around them kept
  in memory; the store writes the block a chunk at a time, and keeps it so for later
  rewrites. Its model, which holds the messages twice (events and their SSE text), is never
  made (but for a stream tagged `@during` another). A stream that stayed in the spool's
  memory (up to `SPOOL_AT` bytes) gives its block as one string.

The heavy parts (a large message's ProtoJSON, every redaction, the exchange's text) thus run
off the event loop: a long stream holds no other client, and its memory does not grow with
it while it runs, nor at its end, nor in the store after it (set by its messages' size,
whatever its length).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import json
import logging
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from recorder.bindings import grpc as binding
from recorder.disk.archive import Archive, Archived
from recorder.format import sse
from recorder.format.httpfile import dumps_exchange
from recorder.format.model import Exchange, Headers, Request, Response, SseEvent
from recorder.record.grpc_metadata import Metadata
from recorder.record.lineage import MAX_SCANNED_BODY
from recorder.record.naming import exchange_title
from recorder.record.proxy.call import Call, Recorded
from recorder.record.proxy.recording import Recording
from recorder.record.proxy.writer import EndedStream
from recorder.record.store.filetext import Block
from recorder.secrets.redact import Redactor

__all__ = ["BACKLOG", "ON_LOOP", "SPOOL_AT", "CallRecord", "MessageSpool", "Records", "decode"]

log = logging.getLogger(__name__)

Build = Callable[[], Exchange | Block]
"""What makes a call's record on the writer thread: its exchange, or a stream's block."""

# a reply message up to this many bytes is decoded for its ids on the event loop (~0.1 ms
# for the A2A messages of this size); a larger one on the worker thread
ON_LOOP = 64 * 1024
# a stream's recorded messages past this many bytes go to a temporary file as they come
SPOOL_AT = 1024 * 1024
# bytes of a stream's messages handed to the worker and not recorded yet past which the next
# message waits for it (`Records.caught_up`): the memory of a stream faster than its record
# stays bounded (a stream is then paced by its recording)
BACKLOG = 4 * 1024 * 1024


def decode(name: str, data: bytes, *, reply: bool) -> dict[str, Any] | None:
    """Method `name`'s request (`reply`: reply) message as its ProtoJSON value; None for
    bytes that do not parse as that type (recorded as they came)."""
    try:
        return binding.to_value(binding.message_type(name, reply=reply).FromString(data))
    except Exception:  # (a DecodeError, or the SDK's types missing: the call still goes on)
        return None


def json_text(value: dict[str, Any] | None, data: bytes) -> bytes:
    """The JSON of a decoded message (`binding.to_json`'s text), or its bytes as they came."""
    return data if value is None else json.dumps(value, ensure_ascii=False).encode()


_LENGTH = 8  # bytes: the length that stands before each message in a spool's file


def _framed(message: bytes) -> bytes:
    return len(message).to_bytes(_LENGTH, "big") + message


class MessageSpool:
    """A stream's messages as recorded (each one's JSON, secrets out), in order: in memory
    up to `spool_at` bytes, then in an anonymous temporary file (unlinked at once, gone when
    closed). Written by the worker thread while the stream runs, read once by the writer
    thread when it has ended. A file that cannot be written keeps the rest in memory."""

    def __init__(self, spool_at: int = SPOOL_AT) -> None:
        self._spool_at = spool_at
        self._lines: list[bytes] = []
        self._size = 0
        self._file: Any = None
        self.count = 0

    @property
    def spooled(self) -> bool:
        """Whether the messages are in the temporary file (past `spool_at` bytes)."""
        return self._file is not None

    def add(self, line: bytes) -> None:
        """One message's JSON, or its bytes as they came when it did not decode (which may
        hold a line break: the file keeps each message behind its length, not one a line)."""
        self.count += 1
        if self._file is not None:
            try:
                self._file.write(_framed(line))
                return
            except OSError as exc:
                log.warning("cannot spool a gRPC stream to a temporary file: %s", exc)
                self._unspool()
        self._lines.append(line)
        self._size += len(line)
        if self._size > self._spool_at and self._file is None:
            try:
                self._file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by `close`)
                self._file.writelines(_framed(part) for part in self._lines)
            except OSError as exc:
                log.warning("cannot spool a gRPC stream to a temporary file: %s", exc)
                self.close()
                self._spool_at = 1 << 62  # kept in memory from here on
                return
            self._lines = []

    def _unspool(self) -> None:
        """Back to memory: what the file holds, then the lines to come."""
        self._lines = list(self.lines())
        self.close()
        self._spool_at = 1 << 62

    def lines(self) -> Iterator[bytes]:
        """The messages' JSON, in order (read from the file a message at a time)."""
        if self._file is None:
            yield from self._lines
            return
        self._file.flush()
        self._file.seek(0)
        while head := self._file.read(_LENGTH):
            yield self._file.read(int.from_bytes(head, "big"))

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None


@dataclass
class CallRecord:
    """What the record of one call needs while it runs: the call (its file, its redactor for
    the request), the metadata as forwarded, the messages' own redactor (the request's
    secrets stay apart: `Recorded.sent_secrets`), and the worker's work for it."""

    call: Call
    name: str
    forwarded: Metadata
    redactor: Redactor
    # where a long stream's block goes, kept on disk (`stream_block`; the store's)
    archive: Archive | None = None
    spool: MessageSpool = field(default_factory=MessageSpool)
    # the reply of a unary call: decoded on the loop (None: not, or not decodable), or its
    # JSON made on the worker (a large one)
    reply: dict[str, Any] | None = None
    reply_text: bytes | None = None
    # the worker's latest task for this call (done: so are all earlier ones), and the large
    # messages decoded there whose ids the loop has not learned yet
    pending: concurrent.futures.Future[Any] | None = None
    unlearned: int = 0
    # small messages decoded on the loop, not yet given to the worker: handed over together
    # past `ON_LOOP` bytes (a thread's wake-up per message would cost more than its record),
    # the last ones recorded by the writer thread with the exchange
    held: list[tuple[dict[str, Any] | None, bytes]] = field(default_factory=list)
    held_size: int = 0
    # the worker's tasks for this call not seen done yet, with their messages' bytes
    queued: collections.deque[tuple[concurrent.futures.Future[Any], int]] = field(
        default_factory=collections.deque
    )
    in_flight: int = 0


class Records:
    """The records of a listener's calls: the worker thread (`ProtoJSON` of large messages,
    redaction, spooling) and the hand-over of each finished call to the recording's writer."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self._worker = concurrent.futures.ThreadPoolExecutor(1, "recorder-grpc")
        self._ending: set[asyncio.Task[None]] = set()

    def open(self, call: Call, name: str, forwarded: Metadata) -> CallRecord:
        return CallRecord(
            call, name, forwarded, call.redactor.fresh(), archive=self.recording.store.archive
        )

    # ---------------------------------------------------------------- in the event loop

    def _learn(self, call: Call, value: Any) -> None:
        lineage = self.recording.lineage
        lineage.learn(value, call.routing.file_key, call.routing.client_values)
        call.reply.after = lineage.needs(call.routing.file_key)

    def _learned(self, record: CallRecord, future: concurrent.futures.Future[Any]) -> None:
        record.unlearned -= 1
        found = None if future.cancelled() or future.exception() else future.result()
        if found:
            call = record.call
            lineage = self.recording.lineage
            lineage.learn_generated(found, call.routing.file_key, call.routing.client_values)
            call.reply.after = lineage.needs(call.routing.file_key)

    def _submit(
        self,
        record: CallRecord,
        size: int,
        work: Callable[..., Any],
        *args: Any,
        learned: bool = False,
    ) -> None:
        future = self._worker.submit(work, *args)
        record.pending = future
        record.queued.append((future, size))
        record.in_flight += size
        if learned:  # (its ids go to the lineage in the loop, as soon as they are found)
            record.unlearned += 1
            loop = asyncio.get_running_loop()

            def done(found: concurrent.futures.Future[Any]) -> None:
                with contextlib.suppress(RuntimeError):  # (the loop closed: no one to route)
                    loop.call_soon_threadsafe(self._learned, record, found)

            future.add_done_callback(done)

    def replied(self, record: CallRecord, reply: bytes) -> None:
        """A unary call's reply went to the client: its ids learned (a large one's from the
        worker)."""
        if len(reply) <= ON_LOOP:
            record.reply = decode(record.name, reply, reply=True)
            if record.reply is not None:
                self._learn(record.call, record.reply)
        else:
            self._submit(record, len(reply), self._found, record, reply, learned=True)

    def message(self, record: CallRecord, data: bytes) -> None:
        """A stream message went to the client: its ids learned, its record made on the
        worker."""
        if len(data) <= ON_LOOP:
            value = decode(record.name, data, reply=True)
            if value is not None:
                self._learn(record.call, value)
            record.held.append((value, data))
            record.held_size += len(data)
            if record.held_size > ON_LOOP:
                self._hand_held(record)
        else:
            self._hand_held(record)
            self._submit(record, len(data), self._spool_found, record, data, learned=True)

    def _hand_held(self, record: CallRecord) -> None:
        """The small messages held so far go to the worker, before any message after them."""
        if record.held:
            held, size = record.held, record.held_size
            record.held, record.held_size = [], 0
            self._submit(record, size, spool_held, record, held)

    async def caught_up(self, record: CallRecord) -> None:
        """Wait while more than `BACKLOG` bytes of the call's messages wait for the worker
        (called before the next message is read from the agent)."""
        queued = record.queued
        while queued:
            future, size = queued[0]
            if not future.done():
                if record.in_flight <= BACKLOG:
                    return
                with contextlib.suppress(Exception):
                    await asyncio.wrap_future(future)
            queued.popleft()
            record.in_flight -= size

    def end(self, record: CallRecord, build: Build | None) -> None:
        """The call has ended: `build` (None: not recorded) handed to the writer once the
        loop has learned its ids, and the call finished."""
        if record.unlearned == 0:
            self._hand(record, build)
            return
        task = asyncio.get_running_loop().create_task(self._end_later(record, build))
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)

    async def _end_later(self, record: CallRecord, build: Build | None) -> None:
        while record.unlearned and record.pending is not None:
            # (the worker's tasks run in order: the last one done, every one is, and the
            # loop learns their ids before it hears of that)
            with contextlib.suppress(Exception):
                await asyncio.wrap_future(record.pending)
            await asyncio.sleep(0)
        self._hand(record, build)

    def _hand(self, record: CallRecord, build: Build | None) -> None:
        try:
            if build is not None:
                # (straight to the writer: `Recording.write` takes a model, a stream's build
                # gives its block)
                self.recording.writer.hand_over(EndedStream(record.call, build))
        finally:
            self.recording.finish(record.call)

    async def settle(self, timeout: float) -> None:
        """At shutdown: the calls that ended get (at most `timeout` seconds) to be handed to
        the writer; the worker finishes what it was given (the writer waits for it)."""
        await asyncio.sleep(0)  # (the ends the stopped calls scheduled)
        if self._ending:
            await asyncio.wait(set(self._ending), timeout=timeout)
        self._worker.shutdown(wait=False)

    # ---------------------------------------------------------------- on the worker thread

    def _found(self, record: CallRecord, data: bytes) -> list[tuple[str, str]]:
        """A large unary reply decoded: its JSON kept for the record, its generated values
        returned."""
        value = decode(record.name, data, reply=True)
        record.reply_text = text = json_text(value, data)
        return self._generated(value, text)

    def _generated(self, value: dict[str, Any] | None, text: bytes) -> list[tuple[str, str]]:
        # (JSON too large to read for ids is not read: as `Lineage.learn_body`)
        if value is None or len(text) > MAX_SCANNED_BODY:
            return []
        return self.recording.lineage.generated(value)

    def _spool_found(self, record: CallRecord, data: bytes) -> list[tuple[str, str]]:
        value = decode(record.name, data, reply=True)
        return self._generated(value, spool(record, value, data))


def spool(record: CallRecord, value: dict[str, Any] | None, data: bytes) -> bytes:
    """Record one stream message (its JSON, secrets out) in the call's spool; returns its
    JSON (on the worker thread, or the writer's for the last small ones)."""
    text = json_text(value, data)
    (event,) = record.redactor.redact_events((SseEvent(data=text.decode("utf-8", "replace")),))
    record.spool.add((event.data or "").encode())
    return text


def spool_held(record: CallRecord, held: list[tuple[dict[str, Any] | None, bytes]]) -> None:
    for value, data in held:
        spool(record, value, data)


# ---------------------------------------------------------------- on the writer thread


def _request(record: CallRecord) -> tuple[Request, str]:
    """The call's request as recorded, secrets out, and its title; kept in the call with its
    operation and the secrets the client sent (`Call.recorded`)."""
    call = record.call
    redactor = call.redactor
    request = binding.request_of(call.request.target, record.forwarded, call.request.body)
    request = Request(
        method=request.method,
        target=request.target,
        headers=redactor.redact_headers(request.headers),
        body=redactor.redact_body(request.body, "application/json"),
        http_version=request.http_version,
    )
    title = exchange_title(request, call.description)
    operation = binding.method_of(call.request.target) or ""
    call.recorded = Recorded(title, operation, request, dict(redactor.seen))
    return request, title


def _redacted(response: Response, redactor: Redactor) -> Response:
    """`response` with its metadata's and body's secrets replaced (a stream's messages are
    redacted already, on the worker: its body is their text, not read again)."""
    body = response.body
    if body and response.events is None:
        body = redactor.redact_body(body, "application/json")
    headers = redactor.redact_headers(response.headers)
    trailers = redactor.redact_headers(response.trailers) if response.trailers else Headers()
    if headers is response.headers and trailers == response.trailers and body is response.body:
        return response  # (nothing secret: a stream's messages are not joined again)
    return Response(
        status=response.status,
        reason=response.reason,
        headers=headers,
        body=body if response.events is None else b"",
        events=response.events,
        http_version=response.http_version,
        trailers=trailers,
    )


def unary_exchange(
    record: CallRecord,
    code: int,
    details: str,
    initial: Metadata,
    trailing: Metadata,
    reply: bytes | None,
    *,
    truncated: bool = False,
) -> Exchange:
    """A unary call's exchange (`reply`: its message's bytes, None: it failed)."""
    request, title = _request(record)
    recorded = None
    if reply is not None:
        if record.pending is not None:
            record.pending.result()  # (a large reply, decoded on the worker)
        recorded = record.reply_text or json_text(record.reply, reply)
    response = binding.response_of(
        code, message=details, initial=initial, trailing=trailing, reply=recorded
    )
    response = _redacted(response, record.call.redactor)
    return Exchange(
        request=request,
        response=response,
        title=title,
        truncated=truncated,
    )


def stream_exchange(
    record: CallRecord,
    code: int,
    details: str,
    initial: Metadata,
    trailing: Metadata,
    *,
    truncated: bool = False,
) -> Exchange | Block:
    """A server stream's exchange: its messages from the spool, as the worker recorded them.
    Given as its block (`stream_block`) unless its file tags it `@during` another exchange
    (a tag made from the model)."""
    request, title = _request(record)
    if record.pending is not None:
        record.pending.result()  # (the worker has recorded every message it was given)
    spool_held(record, record.held)  # (and the last small ones, here)
    record.held = []
    call = record.call
    call.redactor.seen.update(record.redactor.seen)  # (the messages' secrets: in the text's scrub)
    try:
        if call.routing.during is None and record.spool.count:
            return stream_block(record, request, title, code, details, initial, trailing, truncated)
        # (read from the spool a message at a time, into the events: never a list of them too)
        response = binding.response_of(
            code, message=details, initial=initial, trailing=trailing, messages=record.spool.lines()
        )
    finally:
        record.spool.close()
    return Exchange(
        request=request,
        response=_redacted(response, call.redactor),
        title=title,
        truncated=truncated,
    )


def stream_block(
    record: CallRecord,
    request: Request,
    title: str,
    code: int,
    details: str,
    initial: Metadata,
    trailing: Metadata,
    truncated: bool,
) -> Block:
    """A stream's block (the text `dumps_exchange` writes for its exchange) made from its
    spool a message at a time: the exchange is rendered with one marker message in their
    place, and the messages' frames go where its frame is. Its events and their SSE text are
    thus never held beside the block (the model of a stream holds both, and its rendering
    copies them twice more: about five times the stream at its end). A stream spooled to a
    file (past `SPOOL_AT` bytes) has its frames written to the archive, never joined
    (`Archived`); one that cannot be, or that stayed in memory, is joined into a string."""
    call = record.call
    marker = f'"recorder-frames-{uuid.uuid4().hex}"'
    response = binding.response_of(
        code, message=details, initial=initial, trailing=trailing, messages=(marker.encode(),)
    )
    exchange = Exchange(
        request=request,
        response=_redacted(response, call.redactor),
        title=title,
        truncated=truncated,
    )
    before, frame, after = dumps_exchange(exchange).partition(f"data: {marker}")
    if not frame or frame in after or frame in before:  # (never: a uuid's marker)
        raise ValueError("a gRPC stream's block has no single place for its messages")
    if record.archive is not None and record.spool.spooled and after.startswith("\n"):
        # (the span ends with its last line's break, as `Archived` wants: taken from `after`)
        try:
            text: str | Archived = Archived.of(
                record.archive, before, _frames(record.spool.lines(), "\n"), after[1:]
            )
        except OSError as exc:
            log.warning("cannot keep a gRPC stream's record in a temporary file: %s", exc)
        else:
            return Block(text, title, status=code, frames=record.spool.count)
    parts = [before, *_frames(record.spool.lines(), ""), after]
    return Block("".join(parts), title, status=code, frames=record.spool.count)


def _frames(lines: Iterator[bytes], last_end: str) -> Iterator[str]:
    """Each message's frame as `sse.serialize` writes it (its blank line after), the last
    one's blank line left out (`dumps_exchange`'s, in the text after them) for `last_end`."""
    previous = None
    for line in lines:
        if previous is not None:
            yield previous
        previous = sse.serialize((SseEvent(data=line.decode()),)).decode()
    if previous is not None:
        yield previous.rstrip("\n") + last_end
