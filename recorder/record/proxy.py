"""The recording reverse proxy: an ASGI app that forwards to one upstream agent and records.

    client ──▶ proxy (this app, under uvicorn) ──recorder.record.upstream──▶ upstream agent
                 │
                 └─▶ TranscriptStore: NN-slug.http, one file per scenario

Per request:

1. Forward method, target (path and query as received), headers and body (read whole first,
   at most `max_body` bytes, else a 413). Dropped on the way:
   the hop-by-hop fields (RFC 9110 §7.6.1: Connection and every field it names, Proxy-Connection,
   Keep-Alive, TE, Transfer-Encoding, Upgrade), Host (the upstream's is sent), Content-Length
   (recomputed), Accept-Encoding (so the recorded body is the body, not gzip), and the
   proxy's own `Recorder-Scenario` / `Recorder-Title`.
2. Reply. An event stream, or a body of unknown or large size, is passed to the client chunk
   by chunk as it arrives (never buffered) while a copy is kept for the record. A small body
   is read whole, recorded, and then sent, so that a failed write can still become an error
   reply.
3. Record what the upstream got and sent: the request as forwarded (with `Host:` naming the
   upstream as the proxy addressed it), the reply without hop-by-hop fields and
   Content-Length; header names in conventional case; secrets replaced by `{{PLACEHOLDER}}`s
   (`recorder.redact`).
4. Agent cards (`/.well-known/agent-card.json`, GetExtendedAgentCard over JSON-RPC or REST)
   reach the client with their interface URLs pointing at the proxy (`recorder.record.cards`), so
   an A2A client sends every later call through the proxy too; the transcript keeps the card as
   the agent sent it. The upstream is asked without `If-None-Match` (its ETag names the
   unrewritten card); the client gets an ETag of the rewritten card and a 304 when it already
   holds that one.

Failures are never silent:
- upstream refused / reset: 502, timed out: 504, with a JSON body naming the upstream (not
  recorded: it is not the agent's reply);
- a transcript that cannot be written: a buffered reply becomes a 500 naming the reason; a
  streamed reply (headers already sent) is logged as an error and the connection is closed
  without the final chunk, so the client sees an incomplete reply rather than a complete one;
- a client that goes away mid-stream: the upstream stream is closed and the exchange recorded
  with `truncated=True`; so is a stream the upstream breaks off, or one cut by shutdown
  (`serve` ends open streams as soon as Ctrl-C comes, `RecordingProxy.stop_streams`; the
  client's connection is closed without the final chunk).

Speed (bench/bench_proxy.py measures it): uvicorn runs with httptools and uvloop when they are
installed. Upstream connections are kept on a free list, one request at a time each, their
replies parsed by httptools (`recorder.record.upstream.Http11Upstream`: no pool lock, no httpx
objects per request); an injected httpx transport (tests) or `pool="shared"` goes through
httpx (`HttpxUpstream`).
The recorded request is built while the upstream answers, and the file the reply's recording
will fill is taken from those the store's thread opens ahead (`TranscriptStore.reserve`: file
creation is most of a small write's cost, and a busy disk can stall it for a millisecond); the
rest of the recording (model, text, write, rename) is what a buffered reply waits for.
Writes are not fsynced unless `fsync=True` (`recorder record --fsync`): the rename already
makes them atomic for readers and for a crash of the recorder; fsync adds durability across
a power loss.

Scenarios: the header `Recorder-Scenario: <name>` (or, for clients that cannot add headers,
`POST /_recorder/scenario {"name": ...}` until `DELETE /_recorder/scenario`) names the file
a request goes to; `Recorder-Title: <text>` adds a description to the exchange's title.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import json
import logging
import re
import socket
import urllib.parse
from collections.abc import (
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    MutableMapping,
)
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx

from recorder.model import Exchange, Headers, Request, Response, is_event_stream
from recorder.record.cards import Origin, rewrite_card_body
from recorder.record.store import (
    TranscriptStore,
    describe_error,
    exchange_title,
    header_case,
    operation_name,
    slugify,
)
from recorder.record.upstream import Http11Upstream, HttpxUpstream, UpstreamReply, settle
from recorder.redact import (
    DEFAULT_SECRET_FIELDS,
    DEFAULT_SECRET_HEADERS,
    Redactor,
    scrub_text,
    secret_names,
)
from recorder.sse import SseDecoder

__all__ = ["CONTROL_PATH", "RecordingProxy", "create_proxy_app"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

log = logging.getLogger("recorder.record.proxy")

CONTROL_PATH = "/_recorder/scenario"
SCENARIO_HEADER = b"recorder-scenario"
TITLE_HEADER = b"recorder-title"
# RFC 9110 §7.6.1 (and Proxy-Connection, which RFC 9112 §9.6 asks proxies to drop)
HOP_BY_HOP = frozenset(
    {b"connection", b"proxy-connection", b"keep-alive", b"te", b"transfer-encoding", b"upgrade"}
)
_NOT_FORWARDED = HOP_BY_HOP | {
    b"host",
    b"expect",  # the proxy has read the whole body already
    b"content-length",
    b"accept-encoding",
    SCENARIO_HEADER,
    TITLE_HEADER,
}
_CONDITIONAL = frozenset({b"if-none-match", b"if-modified-since"})
_CARD_OPERATIONS = frozenset({"GetAgentCard", "GetExtendedAgentCard"})
# bodies up to this size with a Content-Length are read whole before the client gets them
BUFFER_LIMIT = 4 * 1024 * 1024
# request bodies are held whole (forwarded with a Content-Length, recorded): at most this much
MAX_REQUEST_BODY = 64 * 1024 * 1024
_MAX_CONTROL_BODY = 64 * 1024
_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$")

Pool = Literal["per-connection", "shared"]
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0, read=60.0)


@dataclass
class _Call:
    """What the proxy knows about one request while it handles it."""

    method: str
    target: str
    headers: list[tuple[bytes, bytes]]  # as forwarded (lowercase names)
    body: bytes
    scenario: str | None
    description: str | None
    ticket: int
    operation: str = ""
    client_base: str = ""
    if_none_match: bytes | None = None
    response_started: bool = False
    # (ticket, frames): sent while that event stream of the same scenario was open
    during: tuple[int, int] | None = None
    redactor: Redactor = field(default_factory=Redactor)
    # the request as recorded, with its title and operation, made while the upstream answers
    recorded_request: Request | None = None
    recorded_title: str = ""
    recorded_operation: str = ""
    written: bool = False  # the exchange is in its transcript
    finished: bool = False  # `_forward` is done with it
    # a temporary file made for the write while the upstream answers (`TranscriptStore.reserve`)
    temporary: tuple[str, int] | None = None
    sent_secrets: dict[str, str] = field(default_factory=dict)  # those in the request

    @property
    def shown(self) -> str:
        """`METHOD target` for logs and error messages, secret query values replaced."""
        return f"{self.method} {self.redactor.redact_target(self.target)}"


class _WriteFailed(Exception):
    """A transcript could not be written (the reason is the message)."""


class RecordingProxy:
    """The ASGI app: the recording proxy for `upstream` (an http(s) URL), writing transcripts
    under `out`.

    `fsync=True` flushes every transcript file to the disk before it replaces the old one
    (survives a power loss; costs a disk flush per exchange). Without it writes are still
    atomic: a reader, or a restart after the recorder crashed, sees whole files.
    `max_body`: the longest request body forwarded (bytes; a longer one gets a 413).
    `buffer_limit`: replies with a Content-Length up to this are read whole before the
    client gets them (so that a failed write can still become an error reply)."""

    def __init__(
        self,
        upstream: str,
        *,
        out: Path,
        secret_headers: Mapping[str, str] | Iterable[str] = DEFAULT_SECRET_HEADERS,
        secret_fields: Mapping[str, str] | Iterable[str] = DEFAULT_SECRET_FIELDS,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        pool: Pool = "per-connection",
        transport: httpx.AsyncBaseTransport | None = None,
        buffer_limit: int = BUFFER_LIMIT,
        max_body: int = MAX_REQUEST_BODY,
        fsync: bool = False,
    ) -> None:
        if "@" in urllib.parse.urlsplit(upstream).netloc:
            # httpx would send them as Basic auth; this proxy forwards the client's headers
            # only, so they would be dropped without a word (and the message leaves them out)
            raise ValueError(
                "the upstream URL holds credentials (user:password@): they are not sent; "
                "let the client send its Authorization header through the proxy instead"
            )
        self.upstream = Origin.parse(upstream)
        self.upstream_url = self.upstream.base
        parts = httpx.URL(self.upstream_url)
        self._path_prefix = self.upstream.path
        self._host_header = parts.netloc.decode("ascii")
        self.store = TranscriptStore(Path(out), scrub=scrub_text, fsync=fsync)
        self._redactor = Redactor(
            headers=secret_names(secret_headers, fold=True),
            fields=secret_names(secret_fields, fold=False),
        )
        self._timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self._upstream: HttpxUpstream | Http11Upstream = (
            Http11Upstream(parts, self._timeout)
            if transport is None and pool == "per-connection"
            else HttpxUpstream(parts, self._timeout, transport)
        )
        self._buffer_limit = buffer_limit
        self._max_body = max_body
        self.scenario: str | None = None  # set by the control endpoint
        # scenario slug -> {ticket of an open event stream: frames sent to the client so far}
        self._open_streams: dict[str, dict[int, int]] = {}
        self.recorded = 0
        # one future per relayed stream: set by `stop_streams` when the server shuts down
        self._stopping = False
        self._stream_stops: set[asyncio.Future[None]] = set()

    # ---------------------------------------------------------------- ASGI entry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    self.store.prepare()
                except OSError as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def aclose(self) -> None:
        await self._upstream.aclose()
        self.store.close()

    def stop_streams(self) -> None:
        """End every relayed stream now (called in the event loop when the server shuts down,
        before it waits for open connections): each is recorded as truncated and its client
        connection closed without the final chunk. Without this an endless stream (e.g.
        SubscribeToTask) would hold Ctrl-C for the server's whole grace period and then be
        cancelled."""
        self._stopping = True
        for stop in self._stream_stops:
            settle(stop)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self._handle(scope, receive, tracking_send)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if started:
                raise  # uvicorn closes the connection: the client sees an incomplete reply
            log.exception("recorder: cannot handle %s %s", scope.get("method"), scope.get("path"))
            await self._send_error(send, 500, f"recorder failed: {exc}")

    # ---------------------------------------------------------------- one request

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        if path == CONTROL_PATH:
            await self._control(scope, receive, send)
            return
        try:
            body = await _read_body(receive, self._max_body)
        except _BodyTooLarge:
            log.warning(
                "request body of %s %s larger than %d bytes: answered 413, not forwarded",
                scope["method"],
                path,
                self._max_body,
            )
            await self._send_error(
                send,
                413,
                f"the request body is larger than {self._max_body} bytes, the most the "
                "recorder holds in memory (recorder record --max-body); not forwarded",
            )
            return
        if body is None:
            return  # the client went away before it finished sending
        method: str = scope["method"]
        raw_path: bytes | None = scope.get("raw_path")
        target = raw_path.decode("latin-1") if raw_path else path
        query: bytes = scope.get("query_string", b"")
        if query:
            target = f"{target}?{query.decode('latin-1')}"

        scenario: str | None = self.scenario
        description: str | None = None
        forwarded: list[tuple[bytes, bytes]] = []
        connection_tokens: set[bytes] = set()
        client_host: bytes | None = None
        if_none_match: bytes | None = None
        for name, value in scope["headers"]:
            if name == b"connection":
                connection_tokens.update(t.strip().lower() for t in value.split(b","))
        for name, value in scope["headers"]:
            if name in _NOT_FORWARDED or name in connection_tokens:
                if name == SCENARIO_HEADER:
                    scenario = _header_text(value).strip() or None
                elif name == TITLE_HEADER:
                    description = _header_text(value).strip() or None
                elif name == b"host":
                    client_host = value
                continue
            if name == b"if-none-match":
                if_none_match = value
            forwarded.append((name, value))

        if scenario is not None:
            try:
                slugify(scenario)
            except ValueError as exc:
                await self._send_error(send, 400, str(exc))
                return

        call = _Call(
            method=method,
            target=target,
            headers=forwarded,
            body=body,
            scenario=scenario,
            description=description,
            ticket=self.store.begin(scenario),
            redactor=self._redactor.fresh(),
        )
        call.operation = _quick_operation(method, path, body)
        if scenario is not None:
            open_streams = self._open_streams.get(slugify(scenario))
            if open_streams:
                latest = max(open_streams)
                call.during = (latest, open_streams[latest])
        if call.operation in _CARD_OPERATIONS:
            # ask for the whole card: the upstream's validators name the unrewritten one
            call.headers = [(n, v) for n, v in forwarded if n not in _CONDITIONAL]
            call.if_none_match = if_none_match
            call.client_base = self._client_base(scope, client_host)

        try:
            await self._forward(call, receive, send)
        except asyncio.CancelledError:
            if not call.written:  # e.g. the server's shutdown grace period ran out
                log.warning("%s was cancelled before its reply was recorded", call.shown)
            raise
        finally:
            self.store.forget(call.ticket)  # a request that was not written (upstream error)
            call.finished = True
            if call.temporary is not None:  # made for a write that did not come
                self.store.release(call.temporary)
                call.temporary = None

    async def _forward(self, call: _Call, receive: Receive, send: Send) -> None:
        """Send the request upstream; relay and record the reply, or answer 502/504."""
        method, target = call.method, call.target
        asyncio.get_running_loop().call_soon(self._prepare_request, call)
        try:
            upstream = await self._upstream.send(
                method, (self._path_prefix + target).encode("latin-1"), call.headers, call.body
            )
        except httpx.TimeoutException:
            log.warning("upstream %s timed out: %s", self.upstream_url, call.shown)
            await self._send_error(
                send, 504, f"the upstream {self.upstream_url} did not answer in time"
            )
            return
        except httpx.HTTPError as exc:
            log.warning("upstream %s failed: %s (%s)", self.upstream_url, exc, call.shown)
            await self._send_error(
                send,
                502,
                f"the upstream {self.upstream_url} could not be reached: "
                f"{_describe_http_error(exc)}",
            )
            return
        try:
            await self._reply(call, upstream, receive, send)
        finally:
            await upstream.aclose()

    async def _reply(
        self, call: _Call, upstream: UpstreamReply, receive: Receive, send: Send
    ) -> None:
        """Relay and record the upstream's reply."""
        raw_headers = upstream.raw_headers
        connection_tokens: set[bytes] = set()
        content_type: bytes | None = None
        content_length: int | None = None
        for name, value in raw_headers:
            lower = name.lower()
            if lower == b"connection":
                connection_tokens.update(t.strip().lower() for t in value.split(b","))
            elif lower == b"content-type":
                content_type = value
            elif lower == b"content-length" and value.strip().isdigit():
                content_length = int(value)
        kept = [
            (name, value)
            for name, value in raw_headers
            if name.lower() not in HOP_BY_HOP and name.lower() not in connection_tokens
        ]
        streamed = (
            content_length is None
            or content_length > self._buffer_limit
            or (content_type is not None and is_event_stream(content_type.decode("latin-1")))
        )
        if streamed:
            if call.operation in _CARD_OPERATIONS and upstream.status_code == 200:
                log.warning(
                    "the agent card of %s is streamed (no Content-Length, or over %d bytes): "
                    "passed through without pointing its URLs at the proxy, so the client may "
                    "call the agent directly",
                    call.shown,
                    self._buffer_limit,
                )
            await self._relay_stream(call, upstream, kept, receive, send)
            return

        try:
            body = b"".join([chunk async for chunk in upstream.aiter_raw()])
        except httpx.HTTPError as exc:
            log.warning(
                "upstream %s broke off %s: %s",
                self.upstream_url,
                call.shown,
                _describe_http_error(exc),
            )
            status = 504 if isinstance(exc, httpx.TimeoutException) else 502
            await self._send_error(
                send,
                status,
                f"the upstream {self.upstream_url} broke off its reply: "
                f"{_describe_http_error(exc)}",
            )
            return
        exchange = self._exchange(call, upstream, kept, body=body)
        try:
            self._write(call, exchange)
        except _WriteFailed as exc:
            await self._send_error(
                send,
                500,
                f"recorder could not write the transcript: {exc}; the upstream's reply was "
                "not recorded",
            )
            return

        client_headers = [(n, v) for n, v in kept if n.lower() != b"content-length"]
        if call.operation in _CARD_OPERATIONS and upstream.status_code == 200:
            body, client_headers, not_modified = self._rewrite_card(call, body, client_headers)
            if not_modified:
                await send(
                    {"type": "http.response.start", "status": 304, "headers": client_headers}
                )
                await send({"type": "http.response.body", "body": b""})
                return
        if call.method == "HEAD" or upstream.status_code in (204, 304):
            # no body by definition (RFC 9110 §8.6, §9.3.2): keep the upstream's framing
            client_headers = [(n, v) for n, v in kept if n.lower() != b"transfer-encoding"]
        else:
            client_headers.append((b"content-length", str(len(body)).encode()))
        await send(
            {
                "type": "http.response.start",
                "status": upstream.status_code,
                "headers": client_headers,
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _relay_stream(
        self,
        call: _Call,
        upstream: UpstreamReply,
        kept: list[tuple[bytes, bytes]],
        receive: Receive,
        send: Send,
    ) -> None:
        # chunked to the client even when the upstream gave a length: a reply cut short (a
        # failed write, a broken upstream) must not look complete
        client_headers = [(n, v) for n, v in kept if n.lower() != b"content-length"]
        content_type = next((v for n, v in kept if n.lower() == b"content-type"), b"")
        decoder = SseDecoder() if is_event_stream(content_type.decode("latin-1")) else None
        chunks: list[bytes] = []
        client_gone = False
        upstream_error: BaseException | None = None

        await send(
            {
                "type": "http.response.start",
                "status": upstream.status_code,
                "headers": client_headers,
            }
        )
        call.response_started = True

        # an event stream of a scenario stays visible while open: requests of the same
        # scenario sent meanwhile are tagged `@during exchange N frame K`
        open_streams: dict[int, int] | None = None
        if decoder is not None and call.scenario is not None:
            open_streams = self._open_streams.setdefault(slugify(call.scenario), {})
            open_streams[call.ticket] = 0

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
            self._record_partial(call, upstream, kept, decoder, chunks, "the proxy shut down")
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
            self._record_partial(call, upstream, kept, decoder, chunks, "the proxy shut down")
            return

        truncated = client_gone or upstream_error is not None
        body = decoder.raw if decoder is not None else b"".join(chunks)
        exchange = self._exchange(
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
                _describe_http_error(upstream_error),
            )
        try:
            self._write(call, exchange)
        except _WriteFailed as exc:
            raise RuntimeError(
                f"recorder could not write the transcript of {call.shown}: {exc}; "
                "closing the client connection without finishing the reply"
            ) from None
        if upstream_error is not None:
            raise RuntimeError(
                f"the upstream {self.upstream_url} broke off the reply: "
                f"{_describe_http_error(upstream_error)}"
            ) from None
        if not client_gone:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _record_partial(
        self,
        call: _Call,
        upstream: UpstreamReply,
        kept: list[tuple[bytes, bytes]],
        decoder: SseDecoder | None,
        chunks: list[bytes],
        why: str,
    ) -> None:
        body = decoder.raw if decoder is not None else b"".join(chunks)
        try:
            exchange = self._exchange(
                call, upstream, kept, body=body, decoder=decoder, truncated=True
            )
            self._write(call, exchange)
            log.warning("%s during %s: exchange kept as truncated", why, call.shown)
        except Exception:
            log.exception("%s during %s: could not record it", why, call.shown)

    # ---------------------------------------------------------------- recording

    def _exchange(
        self,
        call: _Call,
        upstream: UpstreamReply,
        kept: list[tuple[bytes, bytes]],
        *,
        body: bytes,
        decoder: SseDecoder | None = None,
        truncated: bool = False,
    ) -> Exchange:
        redactor = call.redactor
        request = call.recorded_request or self._record_request(call)
        response_headers = Headers(
            [
                (header_case(n.decode("latin-1")), v.decode("latin-1"))
                for n, v in kept
                if n.lower() != b"content-length"
            ]
        )
        response_headers = redactor.redact_headers(response_headers)
        # a stream that ended inside a frame is marked truncated and keeps its whole frames
        # (the player compares those), not one blob that no frame can be compared with
        whole_frames = decoder is not None and decoder.lossless
        ended_whole = decoder is not None and decoder.close()
        cut_in_frame = whole_frames and not ended_whole
        truncated = truncated or cut_in_frame
        if decoder is not None and (ended_whole or (cut_in_frame and decoder.events)):
            response = Response(
                status=upstream.status_code,
                reason=upstream.reason_phrase,
                headers=response_headers,
                events=redactor.redact_events(decoder.events),
            )
        else:
            response = Response(
                status=upstream.status_code,
                reason=upstream.reason_phrase,
                headers=response_headers,
                body=redactor.redact_body(body, response_headers.get("Content-Type")),
            )
        return Exchange(
            request=request,
            response=response,
            title=call.recorded_title,
            truncated=truncated,
        )

    def _request_model(self, call: _Call) -> Request:
        """The request as recorded: as forwarded, Host naming the upstream, secrets out."""
        redactor = call.redactor
        request_headers = Headers(
            [("Host", self._host_header)]
            + [(header_case(n.decode("latin-1")), v.decode("latin-1")) for n, v in call.headers]
        )
        request_headers = redactor.redact_headers(request_headers)
        return Request(
            method=call.method,
            target=redactor.redact_target(call.target),
            headers=request_headers,
            body=redactor.redact_body(call.body, request_headers.get("Content-Type")),
        )

    def _record_request(self, call: _Call) -> Request:
        """The request as recorded, with its exchange title and operation, kept in `call`."""
        request = self._request_model(call)
        if call.redactor.seen:
            call.sent_secrets = dict(call.redactor.seen)
        call.recorded_title = exchange_title(request, call.description)
        call.recorded_operation = operation_name(request)
        call.recorded_request = request
        return request

    def _prepare_request(self, call: _Call) -> None:
        """Record the request while the upstream works on the reply (scheduled when the
        request is forwarded), so that it adds nothing to the client's wait. A failure here
        is left to `_exchange`, which records the request again and reports it."""
        if call.recorded_request is None:
            with contextlib.suppress(Exception):
                self._record_request(call)
        if not call.finished and call.temporary is None:
            # the file the reply's write will fill: opening it is a third of the write's cost
            call.temporary = self.store.reserve()

    def _write(self, call: _Call, exchange: Exchange) -> None:
        temporary, call.temporary = call.temporary, None  # (the store's from here on)
        try:
            path = self.store.write(
                call.ticket,
                exchange,
                scenario=call.scenario,
                operation=call.operation or call.recorded_operation,
                secrets=call.redactor.seen,
                sent_secrets=call.sent_secrets,
                during=call.during,
                temporary=temporary,
            )
        except Exception as exc:
            reason = describe_error(exc)
            log.error(
                "recorder could not write the transcript of %s to %s: %s",
                call.shown,
                self.store.out,
                reason,
            )
            raise _WriteFailed(reason) from exc
        self.recorded += 1
        call.written = True
        if log.isEnabledFor(logging.INFO):
            # after the reply has gone to the client (the loop runs it when this request's
            # task next yields or ends): a log line costs a write to the terminal
            asyncio.get_running_loop().call_soon(
                log.info, "recorded %s -> %s", exchange.title, path
            )

    # ---------------------------------------------------------------- agent cards

    def _client_base(self, scope: Scope, client_host: bytes | None) -> str:
        """The proxy's address as the client used it (Host header), else the listening socket."""
        scheme = scope.get("scheme", "http")
        if client_host is not None:
            host = client_host.decode("latin-1").strip()
            if _HOST.match(host):
                return f"{scheme}://{host}"
        server = scope.get("server")
        if server:
            host, port = server[0], server[1]
            host = f"[{host}]" if ":" in host else host
            return f"{scheme}://{host}:{port}"
        return f"{scheme}://127.0.0.1"

    def _rewrite_card(
        self, call: _Call, body: bytes, headers: list[tuple[bytes, bytes]]
    ) -> tuple[bytes, list[tuple[bytes, bytes]], bool]:
        """The card for the client, its headers (own ETag), and whether a 304 answers it."""
        try:
            proxy = Origin.parse(call.client_base)
        except ValueError:
            return body, headers, False
        rewritten = rewrite_card_body(body, self.upstream, proxy)
        if rewritten is None:
            return body, headers, False
        etag = b'W/"' + hashlib.sha256(rewritten).hexdigest().encode() + b'"'
        headers = [(n, v) for n, v in headers if n.lower() not in (b"etag", b"last-modified")]
        headers.append((b"etag", etag))
        if call.if_none_match is not None and _etag_matches(call.if_none_match, etag):
            return b"", headers, True
        return rewritten, headers, False

    async def _send_error(self, send: Send, status: int, message: str) -> None:
        """The proxy's own error reply: a JSON body naming the upstream."""
        error = {
            "code": status,
            "status": _ERROR_STATUS[status],
            "message": message,
            "upstream": self.upstream_url,
        }
        await _send_json(send, status, {"error": error})

    # ---------------------------------------------------------------- control endpoint

    async def _control(self, scope: Scope, receive: Receive, send: Send) -> None:
        """`POST {"name": ...}` starts a scenario, `DELETE` ends it, `GET` tells the current one."""
        try:
            body = await _read_body(receive, _MAX_CONTROL_BODY)
        except _BodyTooLarge:
            await self._send_error(send, 413, "a scenario request is a small JSON body")
            return
        if body is None:
            return
        method = scope["method"]
        if method == "GET":
            await _send_json(send, 200, {"scenario": self.scenario})
            return
        if method == "DELETE":
            ended = self.scenario
            name = _json_name(body) or ended
            if name is not None:
                with contextlib.suppress(ValueError):
                    self.store.end(name)
            if name == self.scenario:
                self.scenario = None
            await _send_json(send, 200, {"ended": name})
            return
        if method != "POST":
            await self._send_error(send, 405, "use GET, POST or DELETE")
            return
        name = _json_name(body)
        if name is None:
            await self._send_error(
                send, 400, 'expected a JSON body such as {"name": "message-reply"}'
            )
            return
        try:
            slug = slugify(name)
        except ValueError as exc:
            await self._send_error(send, 400, str(exc))
            return
        if self.scenario is not None and self.scenario != name:
            with contextlib.suppress(ValueError):
                self.store.end(self.scenario)
        self.scenario = name
        await _send_json(send, 200, {"scenario": name, "slug": slug})


# --------------------------------------------------------------------------- helpers


# the name the CLI, the tests and the benchmarks build the proxy by
create_proxy_app = RecordingProxy


class _BodyTooLarge(Exception):
    """A request body longer than the proxy holds."""


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or None when the client disconnects first. Raises
    `_BodyTooLarge` as soon as more than `limit` bytes came."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        part = message.get("body", b"")
        size += len(part)
        if size > limit:
            raise _BodyTooLarge
        parts.append(part)
        if not message.get("more_body", False):
            return b"".join(parts) if len(parts) != 1 else parts[0]


def _header_text(value: bytes) -> str:
    """A header value as text: UTF-8 as clients send names today, else Latin-1 (RFC 9110
    obs-text), so that every byte keeps a meaning."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


def _quick_operation(method: str, path: str, body: bytes) -> str:
    """The operation name, computed cheaply before forwarding (it decides card rewriting)."""
    if method == "GET":
        if path.endswith("/.well-known/agent-card.json") or path == "/.well-known/agent.json":
            return "GetAgentCard"
        if path.endswith("/extendedAgentCard"):
            return "GetExtendedAgentCard"
        return ""
    if method == "POST" and b"GetExtendedAgentCard" in body:
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            return ""
        if isinstance(value, dict) and value.get("method") == "GetExtendedAgentCard":
            return "GetExtendedAgentCard"
    return ""


def _etag_matches(if_none_match: bytes, etag: bytes) -> bool:
    """RFC 9110 §13.1.2: weak comparison; `*` matches any current representation."""
    wanted = etag.removeprefix(b"W/")
    for candidate in if_none_match.split(b","):
        candidate = candidate.strip()
        if candidate == b"*" or candidate.removeprefix(b"W/") == wanted:
            return True
    return False


def _json_name(body: bytes) -> str | None:
    try:
        value = json.loads(body) if body else None
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return str(value["name"])
    return None


def _describe_http_error(exc: BaseException) -> str:
    kind = type(exc).__name__
    text = str(exc)
    if isinstance(exc, httpx.ConnectError):
        return f"connection refused or failed ({text or kind})"
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        return f"the connection was reset or broken ({text or kind})"
    return f"{kind}: {text}" if text else kind


_ERROR_STATUS = {
    400: "INVALID_ARGUMENT",
    405: "METHOD_NOT_ALLOWED",
    413: "CONTENT_TOO_LARGE",
    500: "INTERNAL",
    502: "BAD_GATEWAY",
    504: "GATEWAY_TIMEOUT",
}


async def _send_json(send: Send, status: int, value: Any) -> None:
    body = json.dumps(value, ensure_ascii=False).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def parse_listen(listen: str) -> tuple[str, int]:
    """`127.0.0.1:41241` -> ("127.0.0.1", 41241); `[::1]:8080` and a bare port are accepted."""
    text = listen.strip()
    if text.isdigit():
        return "127.0.0.1", int(text)
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"expected HOST:PORT such as 127.0.0.1:41241, got {listen!r}")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    number = int(port)
    if not 0 <= number <= 65535:
        raise ValueError(f"port {number} is out of range (0-65535)")
    return host, number


def listening_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket whose connections get TCP_NODELAY.

    asyncio turns Nagle's algorithm off only for sockets whose `proto` is IPPROTO_TCP
    (`asyncio.base_events._set_nodelay`); a socket made as `socket.socket(AF_INET,
    SOCK_STREAM)` has proto 0, and then every reply sent in two writes (headers, body) waits
    for the client's delayed ACK: about 40 ms per exchange on Linux loopback.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def fast_server_options() -> tuple[Literal["httptools", "h11"], Literal["uvloop", "asyncio"]]:
    """(http, loop) for uvicorn: its C-accelerated parts when installed, the httptools HTTP/1.1
    parser and the uvloop event loop (less than half the CPU per proxied request of h11 on
    asyncio, bench/bench_proxy.py); else h11 and asyncio."""
    http: Literal["httptools", "h11"] = (
        "httptools" if importlib.util.find_spec("httptools") is not None else "h11"
    )
    loop: Literal["uvloop", "asyncio"] = (
        "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"
    )
    return http, loop


def _server_class() -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, telling the proxy to end its open streams when it shuts down."""

        def __init__(self, config: uvicorn.Config, proxy: RecordingProxy) -> None:
            super().__init__(config)
            self.proxy = proxy

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            self.proxy.stop_streams()
            await super().shutdown(sockets)

    return Server


def serve(
    proxy: RecordingProxy,
    *,
    host: str = "127.0.0.1",
    port: int = 41241,
    announce: Callable[[str], None] = print,
    stack: tuple[Literal["httptools", "h11"], Literal["uvloop", "asyncio"]] | None = None,
) -> None:
    """Run the proxy under uvicorn until Ctrl-C (SIGINT) or SIGTERM; every finished exchange
    is on disk when it returns (writes happen before each reply completes). `stack` (http,
    loop) overrides `fast_server_options()`."""
    import uvicorn

    proxy.store.prepare()
    http, loop = stack or fast_server_options()
    _Server = _server_class()
    sock = listening_socket(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    config = uvicorn.Config(
        proxy,
        log_level="warning",
        access_log=False,
        lifespan="on",
        server_header=False,  # the upstream's Server and Date headers are relayed
        date_header=False,
        proxy_headers=False,  # X-Forwarded-* are forwarded to the agent, not obeyed here
        timeout_graceful_shutdown=5,
        http=http,
        loop=loop,
    )
    where = f"http://{shown}:{bound_port}"
    announce(f"recorder: listening on {where}, forwarding to {proxy.upstream_url}")
    announce(f"recorder: writing transcripts to {proxy.store.out}/ (Ctrl-C stops)")
    try:
        _Server(config, proxy).run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn re-raises the Ctrl-C it handled: the shutdown already happened
    finally:
        sock.close()
    files = len(proxy.store.written)
    announce(f"recorder: stopped; {proxy.recorded} exchanges recorded in {files} files")
