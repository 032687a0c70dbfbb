"""Forwarding: the client's request to the upstream, and a buffered reply back.

1. Forward method, target (path and query as received), headers and body (read whole first,
   at most `max_body` bytes, else a 413). Dropped on the way:
   the hop-by-hop fields (RFC 9110 §7.6.1: Connection and every field it names, Proxy-Connection,
   Keep-Alive, TE, Transfer-Encoding, Upgrade), Host (the upstream's is sent), Content-Length
   (recomputed), Accept-Encoding (so the recorded body is the body, not gzip), and the
   proxy's own `Recorder-Scenario` / `Recorder-Title`.
2. Reply. An event stream, or a body of unknown or large size (no Content-Length, or more
   than `buffer_limit`), goes to the stream relay. A small body is read whole, sent, its
   generated values learned in the same step of the event loop (`Recording.settle`), and
   then handed to the recording writer (`Recording.submit`): the client waits neither for
   the learning nor for the recording, and a failed write never changes its reply (it is
   logged and counted). A sized body over `PASS_THROUGH_AT` (not a card) passes on as it
   arrives, with its Content-Length, all but its last chunk, which follows once the body is
   whole. The reply loses its hop-by-hop fields.

Upstream refused / reset: 502, timed out: 504, with a JSON body naming the upstream (not
recorded: it is not the agent's reply); so is a buffered reply the upstream breaks off (one
passed through has its head sent: its client connection is closed, the reply cut short, and
it is recorded `@truncated`).

Upstream connections are kept on a free list, one request at a time each, their replies parsed
by httptools (`recorder.record.transport.upstream.Http11Upstream`: no pool lock, no httpx
objects per request); an injected httpx transport (tests) or `pool="shared"` goes through httpx
(`HttpxUpstream`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

import httpx

from recorder.format.model import is_event_stream
from recorder.record.cards import Origin
from recorder.record.proxy.agent_cards import CARD_OPERATIONS, AgentCards
from recorder.record.proxy.call import (
    BodyTimedOut,
    BodyTooLarge,
    Call,
    CallRequest,
    Receive,
    Scope,
    Send,
    describe_http_error,
    read_body,
    send_error,
)
from recorder.record.proxy.recording import Recording
from recorder.record.proxy.relay import StreamRelay
from recorder.record.proxy.scenarios import SCENARIO_HEADER, TITLE_HEADER
from recorder.record.transport.upstream import Http11Upstream, HttpxUpstream, UpstreamReply

log = logging.getLogger(__name__)

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
# bodies up to this size with a Content-Length are read whole before the client gets them
BUFFER_LIMIT = 4 * 1024 * 1024
# ... and passed on as they arrive (but for their last chunk) past this size: a 1 MiB reply
# held whole would reach the client only after it has all come (`Forwarder._pass_through`)
PASS_THROUGH_AT = 64 * 1024
# request bodies are held whole (forwarded with a Content-Length, recorded): at most this much
MAX_REQUEST_BODY = 64 * 1024 * 1024
# seconds a request's body may take after its head (`recorder record --client-timeout`; the
# head gets as long, `recorder.record.transport.http1`)
CLIENT_TIMEOUT = 30.0

Pool = Literal["per-connection", "shared"]
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0, read=60.0)


class Forwarder:
    """Reads the client's request, sends it upstream, and answers with the upstream's reply
    (buffered here, streamed through the relay) or the proxy's 413/502/504."""

    def __init__(
        self,
        upstream: Origin,
        parts: httpx.URL,
        *,
        timeout: httpx.Timeout,
        pool: Pool,
        transport: httpx.AsyncBaseTransport | None,
        buffer_limit: int,
        max_body: int,
        client_timeout: float | None = CLIENT_TIMEOUT,
        recording: Recording,
        relay: StreamRelay,
        cards: AgentCards,
    ) -> None:
        self.upstream_url = upstream.base
        self._path_prefix = upstream.path
        self._upstream: HttpxUpstream | Http11Upstream = (
            Http11Upstream(parts, timeout)
            if transport is None and pool == "per-connection"
            else HttpxUpstream(parts, timeout, transport)
        )
        self._buffer_limit = buffer_limit
        self._max_body = max_body
        self.client_timeout = client_timeout
        self.recording = recording
        self.relay = relay
        self.cards = cards
        # a buffered reply's body as the client gets it and it is recorded (the push room's
        # `restore`: its receiver's urls back to the client's)
        self.restore: Callable[[bytes], bytes] | None = None

    async def aclose(self) -> None:
        await self._upstream.aclose()

    async def _error(self, send: Send, status: int, message: str) -> None:
        await send_error(send, status, message, self.upstream_url)

    async def take(self, scope: Scope, receive: Receive, send: Send) -> Call | None:
        """The client's request as it will be forwarded, with the proxy's own headers put
        aside; None when it was answered here (413) or the client went away."""
        path: str = scope["path"]
        try:
            body = await read_body(receive, self._max_body, self.client_timeout)
        except BodyTimedOut:
            log.warning(
                "the body of %s %s did not come whole within %g s: answered 408, not forwarded",
                scope["method"],
                path,
                self.client_timeout,
            )
            await send_error(
                send,
                408,
                f"the request body did not come whole within {self.client_timeout:g} s "
                "(recorder record --client-timeout); not forwarded",
                self.upstream_url,
                close=True,
            )
            return None
        except BodyTooLarge:
            log.warning(
                "request body of %s %s larger than %d bytes: answered 413, not forwarded",
                scope["method"],
                path,
                self._max_body,
            )
            await self._error(
                send,
                413,
                f"the request body is larger than {self._max_body} bytes, the most the "
                "recorder holds in memory (recorder record --max-body); not forwarded",
            )
            return None
        if body is None:
            return None  # the client went away before it finished sending
        raw_path: bytes | None = scope.get("raw_path")
        target = raw_path.decode("latin-1") if raw_path else path
        query: bytes = scope.get("query_string", b"")
        if query:
            target = f"{target}?{query.decode('latin-1')}"

        forwarded: list[tuple[bytes, bytes]] = []
        scenario = title = host = if_none_match = None
        connection_tokens: set[bytes] = set()
        for name, value in scope["headers"]:
            if name == b"connection":
                connection_tokens.update(t.strip().lower() for t in value.split(b","))
        for name, value in scope["headers"]:
            if name in _NOT_FORWARDED or name in connection_tokens:
                if name == SCENARIO_HEADER:
                    scenario = value
                elif name == TITLE_HEADER:
                    title = value
                elif name == b"host":
                    host = value
                continue
            if name == b"if-none-match":
                if_none_match = value
            forwarded.append((name, value))
        request = CallRequest(
            scope["method"], target, tuple(forwarded), body, scenario, title, host, if_none_match
        )
        return Call(request)

    async def forward(self, call: Call, receive: Receive, send: Send) -> None:
        """Send the request upstream; relay and record the reply, or answer 502/504."""
        method, target = call.request.method, call.request.target
        body = call.request.body if call.upstream_body is None else call.upstream_body
        try:
            upstream = await self._upstream.send(
                method, (self._path_prefix + target).encode("latin-1"), call.request.headers, body
            )
        except httpx.TimeoutException:
            log.warning("upstream %s timed out: %s", self.upstream_url, call.shown)
            await self._error(send, 504, f"the upstream {self.upstream_url} did not answer in time")
            return
        except httpx.HTTPError as exc:
            log.warning("upstream %s failed: %s (%s)", self.upstream_url, exc, call.shown)
            await self._error(
                send,
                502,
                f"the upstream {self.upstream_url} could not be reached: "
                f"{describe_http_error(exc)}",
            )
            return
        try:
            await self._reply(call, upstream, receive, send)
        finally:
            await upstream.aclose()

    async def _reply(
        self, call: Call, upstream: UpstreamReply, receive: Receive, send: Send
    ) -> None:
        """Relay and record the upstream's reply."""
        raw_headers = upstream.raw_headers
        connection_tokens: set[bytes] = set()
        content_type: bytes | None = None
        content_length: int | None = None
        lengths = 0  # 1: one Content-Length frames the body
        for name, value in raw_headers:
            lower = name.lower()
            if lower == b"connection":
                connection_tokens.update(t.strip().lower() for t in value.split(b","))
            elif lower == b"content-type":
                content_type = value
            elif lower == b"content-length" and value.strip().isdigit():
                content_length = int(value)
                lengths += 1
            elif lower == b"transfer-encoding":
                lengths += 2  # (the length does not frame the body)
        kept = [
            (name, value)
            for name, value in raw_headers
            if name.lower() not in HOP_BY_HOP and name.lower() not in connection_tokens
        ]
        event_stream = content_type is not None and is_event_stream(content_type.decode("latin-1"))
        body: bytes | None = None
        if (
            content_length is None
            and not event_stream
            and call.operation in CARD_OPERATIONS
            and upstream.status_code == 200
        ):
            # a card sent chunked (Node's http.ServerResponse without a Content-Length, say):
            # read whole, up to the limit, so that its URLs can point at the proxy
            body = await self._unsized_card(call, upstream, kept, send)
            if body is None:
                return  # (over the limit: passed on as it came; or the upstream broke off)
        elif content_length is None or content_length > self._buffer_limit or event_stream:
            self.cards.warn_streamed(call, upstream.status_code, self._buffer_limit)
            await self.relay.relay(call, upstream, kept, receive, send)
            return

        if (
            body is None
            and content_length is not None
            and content_length > PASS_THROUGH_AT
            and lengths == 1
            and call.operation not in CARD_OPERATIONS
            and call.request.method != "HEAD"
            and upstream.status_code not in (204, 304)
        ):
            await self._pass_through(call, upstream, kept, send)
            return
        if body is None:
            try:
                body = b"".join([chunk async for chunk in upstream.aiter_raw()])
            except httpx.HTTPError as exc:
                await self._broke_off(call, exc, send)
                return
        if self.restore is not None:
            body = self.restore(body)  # (the agent's echo of a push url: the client's again)
        recording = self.recording
        try:
            await self._send_buffered(call, upstream, kept, body, send)
        finally:
            recording.settle(call, body)
            # after the client has it (or has gone): off the reply path, in the writer
            recording.submit(call, upstream, kept, body)

    async def _broke_off(self, call: Call, exc: httpx.HTTPError, send: Send) -> None:
        """A buffered reply the upstream broke off: a 502 (504: timed out), not recorded."""
        log.warning(
            "upstream %s broke off %s: %s", self.upstream_url, call.shown, describe_http_error(exc)
        )
        status = 504 if isinstance(exc, httpx.TimeoutException) else 502
        await self._error(
            send,
            status,
            f"the upstream {self.upstream_url} broke off its reply: {describe_http_error(exc)}",
        )

    async def _unsized_card(
        self, call: Call, upstream: UpstreamReply, kept: list[tuple[bytes, bytes]], send: Send
    ) -> bytes | None:
        """A card without a Content-Length, read whole (None when it is answered here: over
        `buffer_limit` it is passed on as it came, unrewritten, with a warning, and recorded
        as it came; broken off, a 502 as for any buffered reply)."""
        parts: list[bytes] = []
        size = 0
        chunks = upstream.aiter_raw().__aiter__()
        try:
            async for chunk in chunks:
                parts.append(chunk)
                size += len(chunk)
                if size > self._buffer_limit:
                    break
            else:
                return b"".join(parts)
        except httpx.HTTPError as exc:
            await self._broke_off(call, exc, send)
            return None
        self.cards.warn_streamed(call, upstream.status_code, self._buffer_limit)
        await send({"type": "http.response.start", "status": upstream.status_code, "headers": kept})
        for part in parts:
            await send({"type": "http.response.body", "body": part, "more_body": True})
        try:
            async for chunk in chunks:
                parts.append(chunk)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except httpx.HTTPError as exc:
            self.recording.write_truncated(
                call, upstream, kept, None, parts, "the upstream broke off the reply"
            )
            raise RuntimeError(
                f"the upstream {self.upstream_url} broke off the reply: {describe_http_error(exc)}"
            ) from None
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        body = b"".join(parts)
        self.recording.settle(call, body)
        self.recording.submit(call, upstream, kept, body)
        return None

    async def _pass_through(
        self,
        call: Call,
        upstream: UpstreamReply,
        kept: list[tuple[bytes, bytes]],
        send: Send,
    ) -> None:
        """A sized reply too large to hold back whole (over `PASS_THROUGH_AT`): its chunks go
        to the client as they arrive, with the upstream's Content-Length, all but the last;
        the last goes once the body is whole, and its values are learned right after it
        (`Recording.settle`). The upstream breaking off
        after the head: the client's connection is closed with the reply cut short (fewer
        bytes than its length), and what came is recorded `@truncated` (as a stream cut
        short is: `Recording.write_truncated`)."""
        await send({"type": "http.response.start", "status": upstream.status_code, "headers": kept})
        parts: list[bytes] = []
        held: bytes | None = None
        try:
            async for chunk in upstream.aiter_raw():
                if held is not None:
                    await send({"type": "http.response.body", "body": held, "more_body": True})
                parts.append(chunk)
                held = chunk
        except httpx.HTTPError as exc:
            log.warning(
                "upstream %s broke off %s: %s; the client's reply is cut short",
                self.upstream_url,
                call.shown,
                describe_http_error(exc),
            )
            self.recording.write_truncated(
                call, upstream, kept, None, parts, "the upstream broke off the reply"
            )
            raise RuntimeError(
                f"the upstream {self.upstream_url} broke off the reply: {describe_http_error(exc)}"
            ) from None
        recording = self.recording
        try:
            await send({"type": "http.response.body", "body": held or b"", "more_body": False})
        finally:
            body = b"".join(parts)
            del parts
            recording.settle(call, body)
            recording.submit(call, upstream, kept, body)

    async def _send_buffered(
        self,
        call: Call,
        upstream: UpstreamReply,
        kept: list[tuple[bytes, bytes]],
        body: bytes,
        send: Send,
    ) -> None:
        """The buffered reply to the client (a card's URLs pointed at the proxy)."""
        client_headers = [(n, v) for n, v in kept if n.lower() != b"content-length"]
        if call.operation in CARD_OPERATIONS and upstream.status_code == 200:
            body, client_headers, not_modified = self.cards.rewrite(call, body, client_headers)
            if not_modified:
                await send(
                    {"type": "http.response.start", "status": 304, "headers": client_headers}
                )
                await send({"type": "http.response.body", "body": b""})
                return
        if call.request.method == "HEAD" or upstream.status_code in (204, 304):
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
