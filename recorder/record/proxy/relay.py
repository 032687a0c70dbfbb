"""Stream relay: a streamed reply reaches the client chunk by chunk as it arrives.

An event stream, or a body of unknown or large size, is passed to the client chunk by chunk
as it arrives (never buffered; chunked to the client even when the upstream gave a length, so
that a reply cut short never looks complete) while a copy is kept for the record (an event
stream's frames through `SseDecoder`).

Each data frame's generated values are learned (`Recording.learn_frame`, id lineage) and
counted (`@during` tags) in the step of the event loop that writes it to the client, before
the proxy can read another request. A stream ends in one of four ways, and is
recorded in each:
- the upstream finishes it: the exchange handed to the recording, then the final chunk sent;
- the client goes away: the upstream is still read for a bounded grace time (`grace`,
  `recorder record --stream-grace`, 2 s), so that a stream about to end (an SDK client closes
  it as soon as it has the final event) is recorded whole; one that has not ended by then is
  closed and recorded with `truncated=True`. Nothing more goes to the client meanwhile;
- the upstream breaks it off: recorded with `truncated=True`, logged as an error, and the
  client's connection closed without the final chunk;
- shutdown (`serve` ends open streams as soon as Ctrl-C comes, `StreamRelay.stop_all`): recorded
  with `truncated=True` and the client's connection closed without the final chunk.
The recording is queued, never waited for: the exchange goes to the writer thread
(`Recording.write`), which records it in request order after the client has its reply. A
transcript that cannot be written is logged and counted there; it never cuts the stream.

Memory: the copy of a body that is no event stream is kept in a `BodySpool`: in memory up to
`SPOOL_AT` bytes, then in an anonymous temporary file (removed when closed, never seen in a
folder) as it streams, and read back whole, once, when the reply has ended, for the record.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from typing import Any

from recorder.format.model import is_event_stream
from recorder.format.sse import SseDecoder
from recorder.record.proxy.call import Call, Receive, Send, describe_http_error
from recorder.record.proxy.recording import Recording
from recorder.record.transport.upstream import UpstreamReply

log = logging.getLogger(__name__)

# seconds the upstream is still read after the client left a stream (`record --stream-grace`)
STREAM_GRACE = 2.0
# a streamed body's copy past this many bytes goes to a temporary file while it streams
SPOOL_AT = 1024 * 1024


class BodySpool:
    """A streamed body's copy for the record: chunks in memory up to `spool_at` bytes, then an
    anonymous temporary file (`tempfile.TemporaryFile`: unlinked at once, gone when closed),
    so that a long body is held once (when read back for the record), not chunk by chunk and
    then joined. A file that cannot be written (a full disk) keeps the rest in memory."""

    def __init__(self, spool_at: int = SPOOL_AT) -> None:
        self._spool_at = spool_at
        self._chunks: list[bytes] = []
        self._size = 0
        self._file: Any = None  # an unbuffered FileIO once spooled

    def add(self, chunk: bytes) -> None:
        if self._file is not None:
            try:
                view = memoryview(chunk)
                while view:  # (a write to a regular file is whole unless the disk is full)
                    view = view[self._file.write(view) :]
                return
            except OSError as exc:
                log.warning("cannot spool a streamed body to a temporary file: %s", exc)
                self._unspool()
        self._chunks.append(chunk)
        self._size += len(chunk)
        if self._size > self._spool_at and self._file is None:
            try:
                # (closed by `read` or `close`: it outlives this call)
                self._file = tempfile.TemporaryFile(buffering=0)  # noqa: SIM115
                for part in self._chunks:
                    self._file.write(part)
            except OSError as exc:
                log.warning("cannot spool a streamed body to a temporary file: %s", exc)
                self.close()
                self._spool_at = 1 << 62  # kept in memory from here on
                return
            self._chunks.clear()

    def _unspool(self) -> None:
        """Back to memory: what the file holds, then the chunks to come."""
        file, self._file = self._file, None
        try:
            file.seek(0)
            self._chunks = [file.readall()]
        finally:
            file.close()
        self._spool_at = 1 << 62  # kept in memory from here on

    def read(self) -> bytes:
        """The whole body (one allocation when spooled); the spool is empty after it."""
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.seek(0)
                data: bytes = file.readall()
            finally:
                file.close()
        else:
            data = b"".join(self._chunks)  # (one chunk: itself, no copy)
        self._chunks = []
        return data

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None


class StreamRelay:
    """Relays streamed replies, recording each when it ends; ends them all at shutdown."""

    def __init__(
        self, recording: Recording, upstream_url: str, *, grace: float = STREAM_GRACE
    ) -> None:
        self.recording = recording
        self.upstream_url = upstream_url
        self.grace = grace
        # one deadline per relayed stream: `stop_all` moves it to now when the server shuts down
        self._stopping = False
        self._deadlines: set[asyncio.Timeout] = set()

    def stop_all(self) -> None:
        """End every relayed stream now: each is recorded as truncated and its client
        connection closed without the final chunk."""
        self._stopping = True
        now = asyncio.get_running_loop().time()
        for deadline in self._deadlines:
            deadline.reschedule(now)

    def _learn(self, call: Call, decoder: SseDecoder, chunk: bytes, frames: int) -> int:
        """The frames `chunk` completes, learned and counted (data frames, not comment-only
        ones): the count of `call`'s data frames so far. Called in the step of the event loop
        that wrote `chunk` to the client (a server writes as `send` asks and returns without
        giving the loop a turn), so no request is read in between: a follow-up by an id a
        frame holds finds its file, and is `@during` after this frame; the client does not
        wait for it."""
        arrived = decoder.feed(chunk)
        if arrived:
            recording = self.recording
            for event in arrived:
                if event.data is not None or event.event is not None or event.id:
                    frames += 1
                    recording.learn_frame(call, event)
            recording.frames_arrived(call, frames)
        return frames

    async def relay(
        self,
        call: Call,
        upstream: UpstreamReply,
        kept: list[tuple[bytes, bytes]],
        receive: Receive,
        send: Send,
    ) -> None:
        """Relay the upstream's streamed reply to the client, then record it.

        The relay loop runs in the request's own task, so that a frame that has come with the
        head goes on at once (no task to start first). Its deadline (`asyncio.timeout`, none
        at first) ends it: `stop_all` moves it to now, and a client that goes away (a watcher
        task waits for `http.disconnect`) moves it to `grace` seconds later."""
        # chunked to the client even when the upstream gave a length: a reply cut short (a
        # failed write, a broken upstream) must not look complete
        client_headers = [(n, v) for n, v in kept if n.lower() != b"content-length"]
        content_type = next((v for n, v in kept if n.lower() == b"content-type"), b"")
        decoder = SseDecoder() if is_event_stream(content_type.decode("latin-1")) else None
        spool = BodySpool()
        upstream_error: BaseException | None = None
        recording = self.recording

        await send(
            {
                "type": "http.response.start",
                "status": upstream.status_code,
                "headers": client_headers,
            }
        )

        frames = 0  # data frames arrived (comment-only frames, keep-alive pings, are not)
        gone = False  # the client went away: the upstream is still read, for the grace time
        ended = False  # the upstream finished, broke off, or the deadline passed
        loop = asyncio.get_running_loop()

        async def watch(deadline: asyncio.Timeout) -> None:
            nonlocal gone
            while (await receive())["type"] != "http.disconnect":
                pass
            if not ended:
                # an SDK client closes a stream as soon as it has the final event: read on for
                # a bounded time, so that a stream about to end is recorded whole; only one
                # that does not end is truncated
                gone = True
                when = loop.time() + self.grace
                current = deadline.when()
                if current is None or when < current:
                    deadline.reschedule(when)

        timed_out = False
        deadline = asyncio.timeout(loop.time() if self._stopping else None)
        self._deadlines.add(deadline)
        watcher = asyncio.ensure_future(watch(deadline))
        try:
            async with deadline:
                try:
                    async for chunk in upstream.aiter_raw():
                        try:
                            if not gone:
                                await send(
                                    {"type": "http.response.body", "body": chunk, "more_body": True}
                                )
                        finally:
                            # kept, and its frames learned, in the step that wrote it (`_learn`)
                            if decoder is None:
                                spool.add(chunk)
                            else:
                                frames = self._learn(call, decoder, chunk, frames)
                except Exception as exc:  # (a CancelledError is no Exception)
                    upstream_error = exc
        except TimeoutError:
            timed_out = True  # the deadline passed: the client left, or the proxy shuts down
        except asyncio.CancelledError:
            # cancelled while streaming (the server's grace period ran out): keep what
            # arrived, marked truncated
            recording.write_truncated(
                call, upstream, kept, decoder, [spool.read()], "the proxy shut down"
            )
            raise
        finally:
            ended = True
            self._deadlines.discard(deadline)
            recording.close(call)
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        client_gone = timed_out and gone
        shut_down = timed_out and not gone
        if shut_down:
            # returning without the final chunk: the server closes the connection, so the
            # client sees a reply cut short, not a complete one
            recording.write_truncated(
                call, upstream, kept, decoder, [spool.read()], "the proxy shut down"
            )
            return
        if gone and not client_gone and upstream_error is None:
            log.info(
                "client went away during %s; the stream ended within %g s: recorded whole",
                call.shown,
                self.grace,
            )

        truncated = client_gone or upstream_error is not None
        body = decoder.raw if decoder is not None else spool.read()
        exchange = recording.builder.exchange(
            call, upstream, kept, body=body, decoder=decoder, truncated=truncated
        )
        del body  # (the exchange holds it)
        if client_gone:
            log.warning(
                "client went away during %s: upstream stream closed, exchange kept as truncated",
                call.shown,
            )
        elif upstream_error is not None:
            log.error(
                "upstream %s broke off %s: %s; exchange kept as truncated",
                self.upstream_url,
                call.shown,
                describe_http_error(upstream_error),
            )
        recording.write(call, exchange)
        if upstream_error is not None:
            raise RuntimeError(
                f"the upstream {self.upstream_url} broke off the reply: "
                f"{describe_http_error(upstream_error)}"
            ) from None
        if not gone:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
