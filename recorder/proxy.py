"""The recording reverse proxy: an ASGI app that forwards to one upstream agent and records.

    client ──▶ proxy (this app, under uvicorn) ──httpx──▶ upstream agent
                 │
                 └─▶ TranscriptStore: NN-slug.http, one file per scenario

Per request:

1. Forward method, target (path and query as received), headers and body. Dropped on the way:
   the hop-by-hop fields (RFC 9110 §7.6.1: Connection and every field it names, Proxy-Connection,
   Keep-Alive, TE, Transfer-Encoding, Upgrade), Host (httpx sets the upstream's), Content-Length
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
   reach the client with their interface URLs pointing at the proxy (`recorder.cardrewrite`), so
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
  with `truncated=True`; so is a stream the upstream breaks off, or one cut by shutdown.

Scenarios: the header `Recorder-Scenario: <name>` (or, for clients that cannot add headers,
`POST /_recorder/scenario {"name": ...}` until `DELETE /_recorder/scenario`) names the file
a request goes to; `Recorder-Title: <text>` adds a description to the exchange's title.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx

from recorder.cardrewrite import Origin, rewrite_card_body
from recorder.model import Exchange, Headers, Request, Response, is_event_stream
from recorder.redact import (
    DEFAULT_SECRET_FIELDS,
    DEFAULT_SECRET_HEADERS,
    Redactor,
    scrub_text,
    secret_names,
)
from recorder.sse import SseDecoder
from recorder.store import (
    TranscriptStore,
    describe_error,
    exchange_title,
    header_case,
    operation_name,
    slugify,
)

__all__ = ["CONTROL_PATH", "RecordingProxy", "create_proxy_app"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

log = logging.getLogger("recorder.proxy")

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
_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$")

Pool = Literal["per-connection", "shared"]
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0, read=60.0)


class _TransportPool:
    """Upstream connections, as httpx transports used directly (no AsyncClient: a client
    would keep the upstream's cookies and add them to other clients' requests, and its
    auth/redirect/cookie layers cost CPU on every request).

    "per-connection": a free list of transports that each hold one keep-alive connection; a
    request takes one (or makes one) and gives it back. "shared": one transport whose httpcore
    pool holds every connection; it walks its connections under a lock for every request,
    which costs CPU when many are in flight (bench/bench_proxy.py measures both). An injected
    transport (e.g. httpx.ASGITransport in tests) is shared.
    """

    def __init__(
        self,
        base: str,
        *,
        pool: Pool,
        transport: httpx.AsyncBaseTransport | None,
        max_idle: int = 256,
    ) -> None:
        self._mode: Pool = "shared" if transport is not None else pool
        self._shared: httpx.AsyncBaseTransport | None = transport
        self._owned = transport is None
        self._max_idle = max_idle
        self._idle: list[httpx.AsyncBaseTransport] = []
        # one TLS context for all: building one loads the CA bundle (~17 ms of CPU)
        self._verify: ssl.SSLContext | bool = (
            ssl.create_default_context() if base.startswith("https:") else False
        )

    def _make(self, connections: int) -> httpx.AsyncBaseTransport:
        return httpx.AsyncHTTPTransport(
            verify=self._verify,
            trust_env=False,
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        )

    def acquire(self) -> httpx.AsyncBaseTransport:
        if self._mode == "shared":
            if self._shared is None:
                self._shared = self._make(1024)
            return self._shared
        return self._idle.pop() if self._idle else self._make(1)

    async def release(self, transport: httpx.AsyncBaseTransport, *, reusable: bool) -> None:
        if self._mode == "shared":
            return
        if reusable and len(self._idle) < self._max_idle:
            self._idle.append(transport)
        else:
            await transport.aclose()

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for transport in idle:
            await transport.aclose()
        if self._shared is not None and self._owned:
            await self._shared.aclose()
            self._shared = None


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


class _WriteFailed(Exception):
    """A transcript could not be written (the reason is the message)."""


class RecordingProxy:
    """The ASGI app. Build it with `create_proxy_app`."""

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
    ) -> None:
        self.upstream = Origin.parse(upstream)
        self.upstream_url = self.upstream.base
        parts = httpx.URL(self.upstream_url)
        self._scheme = parts.scheme
        self._host = parts.host
        self._port = parts.port
        self._path_prefix = self.upstream.path
        self._host_header = parts.netloc.decode("ascii")
        self.store = TranscriptStore(Path(out), scrub=scrub_text)
        self._secret_headers = secret_names(secret_headers, fold=True)
        self._secret_fields = secret_names(secret_fields, fold=False)
        self._timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self._transports = _TransportPool(self.upstream_url, pool=pool, transport=transport)
        self._timeouts = {"timeout": self._timeout.as_dict()}
        self._buffer_limit = buffer_limit
        self.scenario: str | None = None  # set by the control endpoint
        # scenario slug -> {ticket of an open event stream: frames sent to the client so far}
        self._open_streams: dict[str, dict[int, int]] = {}
        self.recorded = 0

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
        await self._transports.aclose()

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
            await _send_json(
                send,
                500,
                _error_body(500, "INTERNAL", f"recorder failed: {exc}", self.upstream_url),
            )

    # ---------------------------------------------------------------- one request

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        if path == CONTROL_PATH:
            await self._control(scope, receive, send)
            return
        body = await _read_body(receive)
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
                    scenario = value.decode("latin-1").strip() or None
                elif name == TITLE_HEADER:
                    description = value.decode("utf-8", "replace").strip() or None
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
                await _send_json(
                    send, 400, _error_body(400, "INVALID_ARGUMENT", str(exc), self.upstream_url)
                )
                return

        call = _Call(
            method=method,
            target=target,
            headers=forwarded,
            body=body,
            scenario=scenario,
            description=description,
            ticket=self.store.begin(),
            redactor=Redactor(headers=self._secret_headers, fields=self._secret_fields),
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

        transport = self._transports.acquire()
        reusable = False
        try:
            request = httpx.Request(
                method,
                httpx.URL(
                    scheme=self._scheme,
                    host=self._host,
                    port=self._port,
                    raw_path=(self._path_prefix + target).encode("latin-1"),
                ),
                headers=call.headers,
                content=body,
                extensions=self._timeouts,
            )
            try:
                upstream = await transport.handle_async_request(request)
            except httpx.TimeoutException:
                log.warning("upstream %s timed out: %s %s", self.upstream_url, method, target)
                await _send_json(
                    send,
                    504,
                    _error_body(
                        504,
                        "GATEWAY_TIMEOUT",
                        f"the upstream {self.upstream_url} did not answer in time",
                        self.upstream_url,
                    ),
                )
                return
            except httpx.HTTPError as exc:
                log.warning(
                    "upstream %s failed: %s (%s %s)", self.upstream_url, exc, method, target
                )
                await _send_json(
                    send,
                    502,
                    _error_body(
                        502,
                        "BAD_GATEWAY",
                        f"the upstream {self.upstream_url} could not be reached: "
                        f"{_describe_http_error(exc)}",
                        self.upstream_url,
                    ),
                )
                return
            try:
                reusable = await self._reply(call, upstream, receive, send)
            finally:
                await upstream.aclose()
        finally:
            await self._transports.release(transport, reusable=reusable)

    async def _reply(
        self, call: _Call, upstream: httpx.Response, receive: Receive, send: Send
    ) -> bool:
        """Relay and record the upstream's reply; True when the connection can be reused."""
        raw_headers = upstream.headers.raw
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
            return await self._relay_stream(call, upstream, kept, receive, send)

        try:
            body = b"".join([chunk async for chunk in upstream.aiter_raw()])
        except httpx.HTTPError as exc:
            log.warning(
                "upstream %s broke off %s %s: %s",
                self.upstream_url,
                call.method,
                call.target,
                _describe_http_error(exc),
            )
            status = 504 if isinstance(exc, httpx.TimeoutException) else 502
            await _send_json(
                send,
                status,
                _error_body(
                    status,
                    "GATEWAY_TIMEOUT" if status == 504 else "BAD_GATEWAY",
                    f"the upstream {self.upstream_url} broke off its reply: "
                    f"{_describe_http_error(exc)}",
                    self.upstream_url,
                ),
            )
            return False
        exchange = self._exchange(call, upstream, kept, body=body)
        try:
            self._write(call, exchange)
        except _WriteFailed as exc:
            await _send_json(
                send,
                500,
                _error_body(
                    500,
                    "INTERNAL",
                    f"recorder could not write the transcript: {exc}; the upstream's reply was "
                    "not recorded",
                    self.upstream_url,
                ),
            )
            return True

        client_headers = [(n, v) for n, v in kept if n.lower() != b"content-length"]
        if call.operation in _CARD_OPERATIONS and upstream.status_code == 200:
            body, client_headers, not_modified = self._rewrite_card(call, body, client_headers)
            if not_modified:
                await send(
                    {"type": "http.response.start", "status": 304, "headers": client_headers}
                )
                await send({"type": "http.response.body", "body": b""})
                return True
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
        return True

    async def _relay_stream(
        self,
        call: _Call,
        upstream: httpx.Response,
        kept: list[tuple[bytes, bytes]],
        receive: Receive,
        send: Send,
    ) -> bool:
        # chunked to the client even when the upstream gave a length: a reply cut short (a
        # failed write, a broken upstream) must not look complete
        client_headers = [(n, v) for n, v in kept if n.lower() != b"content-length"]
        content_type = upstream.headers.get("content-type")
        decoder = SseDecoder() if is_event_stream(content_type) else None
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
        try:
            done, _ = await asyncio.wait(
                {pump_task, watch_task}, return_when=asyncio.FIRST_COMPLETED
            )
            if pump_task in done:
                upstream_error = pump_task.exception()
            else:
                client_gone = True
                pump_task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await pump_task
        except asyncio.CancelledError:
            # shutdown while streaming: keep what arrived, marked truncated
            pump_task.cancel()
            watch_task.cancel()
            self._record_partial(call, upstream, kept, decoder, chunks, "the proxy shut down")
            raise
        finally:
            if open_streams is not None:
                open_streams.pop(call.ticket, None)
            watch_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch_task

        truncated = client_gone or upstream_error is not None
        body = decoder.raw if decoder is not None else b"".join(chunks)
        exchange = self._exchange(
            call, upstream, kept, body=body, decoder=decoder, truncated=truncated
        )
        if client_gone:
            log.warning(
                "client went away during %s %s: upstream stream closed, exchange kept as truncated",
                call.method,
                call.target,
            )
        elif upstream_error is not None:
            log.error(
                "upstream %s broke off %s %s: %s; exchange kept as truncated",
                self.upstream_url,
                call.method,
                call.target,
                _describe_http_error(upstream_error),
            )
        try:
            self._write(call, exchange)
        except _WriteFailed as exc:
            raise RuntimeError(
                f"recorder could not write the transcript of {call.method} {call.target}: {exc}; "
                "closing the client connection without finishing the reply"
            ) from None
        if upstream_error is not None:
            raise RuntimeError(
                f"the upstream {self.upstream_url} broke off the reply: "
                f"{_describe_http_error(upstream_error)}"
            ) from None
        if not client_gone:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        return not truncated

    def _record_partial(
        self,
        call: _Call,
        upstream: httpx.Response,
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
            log.warning(
                "%s during %s %s: exchange kept as truncated", why, call.method, call.target
            )
        except Exception:
            log.exception("%s during %s %s: could not record it", why, call.method, call.target)

    # ---------------------------------------------------------------- recording

    def _exchange(
        self,
        call: _Call,
        upstream: httpx.Response,
        kept: list[tuple[bytes, bytes]],
        *,
        body: bytes,
        decoder: SseDecoder | None = None,
        truncated: bool = False,
    ) -> Exchange:
        redactor = call.redactor
        request_headers = Headers(
            [("Host", self._host_header)]
            + [(header_case(n.decode("latin-1")), v.decode("latin-1")) for n, v in call.headers]
        )
        request_headers = redactor.redact_headers(request_headers)
        request = Request(
            method=call.method,
            target=redactor.redact_target(call.target),
            headers=request_headers,
            body=redactor.redact_body(call.body, request_headers.get("Content-Type")),
        )
        response_headers = Headers(
            [
                (header_case(n.decode("latin-1")), v.decode("latin-1"))
                for n, v in kept
                if n.lower() != b"content-length"
            ]
        )
        response_headers = redactor.redact_headers(response_headers)
        if decoder is not None and decoder.close():
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
            title=exchange_title(request, call.description),
            truncated=truncated,
        )

    def _write(self, call: _Call, exchange: Exchange) -> None:
        try:
            path = self.store.write(
                call.ticket,
                exchange,
                scenario=call.scenario,
                operation=call.operation or operation_name(exchange.request),
                secrets=call.redactor.seen,
                during=call.during,
            )
        except Exception as exc:
            reason = describe_error(exc)
            log.error(
                "recorder could not write the transcript of %s %s to %s: %s",
                call.method,
                call.target,
                self.store.out,
                reason,
            )
            raise _WriteFailed(reason) from exc
        self.recorded += 1
        log.info("recorded %s -> %s", exchange.title, path)

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

    # ---------------------------------------------------------------- control endpoint

    async def _control(self, scope: Scope, receive: Receive, send: Send) -> None:
        """`POST {"name": ...}` starts a scenario, `DELETE` ends it, `GET` tells the current one."""
        body = await _read_body(receive)
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
            await _send_json(
                send,
                405,
                _error_body(
                    405, "METHOD_NOT_ALLOWED", "use GET, POST or DELETE", self.upstream_url
                ),
            )
            return
        name = _json_name(body)
        if name is None:
            await _send_json(
                send,
                400,
                _error_body(
                    400,
                    "INVALID_ARGUMENT",
                    'expected a JSON body such as {"name": "message-reply"}',
                    self.upstream_url,
                ),
            )
            return
        try:
            slug = slugify(name)
        except ValueError as exc:
            await _send_json(
                send, 400, _error_body(400, "INVALID_ARGUMENT", str(exc), self.upstream_url)
            )
            return
        if self.scenario is not None and self.scenario != name:
            with contextlib.suppress(ValueError):
                self.store.end(self.scenario)
        self.scenario = name
        await _send_json(send, 200, {"scenario": name, "slug": slug})


# --------------------------------------------------------------------------- helpers


def create_proxy_app(
    upstream: str,
    *,
    out: Path,
    secret_headers: Mapping[str, str] | Iterable[str] = DEFAULT_SECRET_HEADERS,
    secret_fields: Mapping[str, str] | Iterable[str] = DEFAULT_SECRET_FIELDS,
    timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
    pool: Pool = "per-connection",
    transport: httpx.AsyncBaseTransport | None = None,
) -> RecordingProxy:
    """The recording proxy for `upstream` (an http(s) URL), writing transcripts under `out`."""
    return RecordingProxy(
        upstream,
        out=out,
        secret_headers=secret_headers,
        secret_fields=secret_fields,
        timeout=timeout,
        pool=pool,
        transport=transport,
    )


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None when the client disconnects first."""
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts) if len(parts) != 1 else parts[0]


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


def _error_body(code: int, status: str, message: str, upstream: str) -> dict[str, Any]:
    return {"error": {"code": code, "status": status, "message": message, "upstream": upstream}}


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


def serve(
    proxy: RecordingProxy,
    *,
    host: str = "127.0.0.1",
    port: int = 41241,
    announce: Callable[[str], None] = print,
) -> None:
    """Run the proxy under uvicorn until Ctrl-C (SIGINT) or SIGTERM; every finished exchange
    is on disk when it returns (writes happen before each reply completes)."""
    import uvicorn

    proxy.store.prepare()
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
        timeout_graceful_shutdown=5,
    )
    where = f"http://{shown}:{bound_port}"
    announce(f"recorder: listening on {where}, forwarding to {proxy.upstream_url}")
    announce(f"recorder: writing transcripts to {proxy.store.out}/ (Ctrl-C stops)")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn re-raises the Ctrl-C it handled: the shutdown already happened
    finally:
        sock.close()
    files = len(proxy.store.written)
    announce(f"recorder: stopped; {proxy.recorded} exchanges recorded in {files} files")
