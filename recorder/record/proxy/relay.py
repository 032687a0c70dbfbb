"""Stream relay: a streamed reply reaches the client chunk by chunk as it arrives.

An event stream, or a body of unknown or large size, is passed to the client chunk by chunk
as it arrives (never buffered; chunked to the client even when the upstream gave a length, so
that a reply cut short never looks complete) while a copy is kept for the record (an event
stream's frames through `SseDecoder`).

A stream ends in one of four ways, and is recorded in each:
- the upstream finishes it: recorded, then the final chunk sent;
- the client goes away: the upstream stream is closed and the exchange recorded with
  `truncated=True`;
- the upstream breaks it off: recorded with `truncated=True`, logged as an error, and the
  client's connection closed without the final chunk;
- shutdown (`serve` ends open streams as soon as Ctrl-C comes, `StreamRelay.stop_all`): recorded
  with `truncated=True` and the client's connection closed without the final chunk.
A transcript that cannot be written (headers already sent) is logged as an error and the
connection closed without the final chunk, so the client sees an incomplete reply rather
than a complete one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from recorder.model import is_event_stream
from recorder.record.proxy.call import Call, Receive, Send, describe_http_error
from recorder.record.proxy.recording import Recording, WriteFailed
from recorder.record.upstream import UpstreamReply, settle
from recorder.sse import SseDecoder

log = logging.getLogger(__name__)


class StreamRelay:
    """Relays streamed replies, recording each when it ends; ends them all at shutdown."""

    def __init__(self, recording: Recording, upstream_url: str) -> None:
        self.recording = recording
        self.upstream_url = upstream_url
        # one future per relayed stream: set by `stop_all` when the server shuts down
        self._stopping = False
        self._stream_stops: set[asyncio.Future[None]] = set()

    def stop_all(self) -> None:
        """End every relayed stream now: each is recorded as truncated and its client
        connection closed without the final chunk."""
        self._stopping = True
        for stop in self._stream_stops:
            settle(stop)

    async def relay(
        self,
        call: Call,
        upstream: UpstreamReply,
        kept: list[tuple[bytes, bytes]],
        receive: Receive,
        send: Send,
    ) -> None:
        """Relay the upstream's streamed reply to the client (its relay loop is `pump`), then
        record it."""
        # chunked to the client even when the upstream gave a length: a reply cut short (a
        # failed write, a broken upstream) must not look complete
        client_headers = [(n, v) for n, v in kept if n.lower() != b"content-length"]
        content_type = next((v for n, v in kept if n.lower() == b"content-type"), b"")
        decoder = SseDecoder() if is_event_stream(content_type.decode("latin-1")) else None
        chunks: list[bytes] = []
        client_gone = False
        upstream_error: BaseException | None = None
        recording = self.recording

        await send(
            {
                "type": "http.response.start",
                "status": upstream.status_code,
                "headers": client_headers,
            }
        )
        call.response_started = True

        # frames sent so far, for requests of the same scenario sent meanwhile (`@during`)
        open_streams = recording.open_stream(call) if decoder is not None else None

        async def pump() -> None:
            async for chunk in upstream.aiter_raw():
                if decoder is not None:
                    decoder.feed(chunk)
                else:
                    chunks.append(chunk)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if open_streams is not None and decoder is not None:
                    open_streams[call.ticket] = len(decoder.events)

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return

        pump_task = asyncio.ensure_future(pump())
        watch_task = asyncio.ensure_future(watch())
        stop: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._stopping:
            stop.set_result(None)
        self._stream_stops.add(stop)
        shut_down = False
        try:
            done, _ = await asyncio.wait(
                {pump_task, watch_task, stop}, return_when=asyncio.FIRST_COMPLETED
            )
            if pump_task in done:
                upstream_error = pump_task.exception()
            else:
                client_gone = watch_task in done
                shut_down = not client_gone
                pump_task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await pump_task
        except asyncio.CancelledError:
            # cancelled while streaming (the server's grace period ran out): keep what
            # arrived, marked truncated; the pump is awaited so that no task outlives this one
            pump_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pump_task
            recording.write_truncated(call, upstream, kept, decoder, chunks, "the proxy shut down")
            raise
        finally:
            self._stream_stops.discard(stop)
            if open_streams is not None:
                open_streams.pop(call.ticket, None)
            watch_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch_task
        if shut_down:
            # returning without the final chunk: the server closes the connection, so the
            # client sees a reply cut short, not a complete one
            recording.write_truncated(call, upstream, kept, decoder, chunks, "the proxy shut down")
            return

        truncated = client_gone or upstream_error is not None
        body = decoder.raw if decoder is not None else b"".join(chunks)
        exchange = recording.exchange(
            call, upstream, kept, body=body, decoder=decoder, truncated=truncated
        )
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
        try:
            recording.write(call, exchange)
        except WriteFailed as exc:
            raise RuntimeError(
                f"recorder could not write the transcript of {call.shown}: {exc}; "
                "closing the client connection without finishing the reply"
            ) from None
        if upstream_error is not None:
            raise RuntimeError(
                f"the upstream {self.upstream_url} broke off the reply: "
                f"{describe_http_error(upstream_error)}"
            ) from None
        if not client_gone:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
