"""The recording proxy's HTTP/1.1 clients for its one upstream.

`Http11Upstream` (the default) keeps a free list of keep-alive connections, each an asyncio
protocol whose replies are parsed by httptools (llhttp, the parser uvicorn serves with). A
request takes an idle connection or opens one, sends its head and body in one write, and
gives the connection back when the reply has been read to its end and both sides keep it
alive. There is no pool lock and no per-request object beyond the reply: the httpx transport
this replaced (httpcore with h11, pure Python) cost about 40% of the proxy's CPU per request
(bench/bench_proxy.py compares the two).

`HttpxUpstream` sends through one httpx transport: for an injected transport (tests use
httpx.ASGITransport) and for `pool="shared"` (one httpcore pool for every request, kept for
the benchmark's comparison).

Both raise httpx's exceptions (ConnectError, ConnectTimeout, ReadTimeout, ReadError,
RemoteProtocolError, WriteTimeout), so the proxy maps failures to 502/504 one way.

Framing follows RFC 9112 §6.3: a reply to HEAD, a 1xx/204/304 reply, has no body (llhttp
knows all but HEAD: after a reply to HEAD the connection gets a new parser, since llhttp
would read the next reply as the body the head announced); Content-Length and chunked bodies
end where they say, and a reply with neither ends when the upstream closes. A connection
closed before its reply ended is an error (the proxy records the exchange truncated), not a
short reply.

Bounds: a reply head (status line and header fields, interim replies included) past
`MAX_REPLY_HEAD` bytes is an error (the proxy answers 502), its bytes not kept. Trailers (the
fields after a chunked body, RFC 9110 §6.5) are dropped: they are not header fields, and the
proxy does not pass them on, so they are not recorded as the reply's either.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import httptools
import httpx

__all__ = ["MAX_REPLY_HEAD", "Http11Upstream", "HttpxUpstream", "UpstreamReply", "tls_context"]

Headers = list[tuple[bytes, bytes]]
SentHeaders = Sequence[tuple[bytes, bytes]]  # a request's, as forwarded

# the most bytes a reply head may hold (h11's default `max_incomplete_event_size`)
MAX_REPLY_HEAD = 16 * 1024


class UpstreamReply:
    """The upstream's answer as the proxy uses it: status, reason, raw header pairs (names as
    sent), and the body as it arrives (`aiter_raw`, transfer coding removed; failures raised
    as httpx exceptions). `aclose` ends it, and gives the connection back when it is clean."""

    __slots__ = ("_chunks", "_close", "raw_headers", "reason_phrase", "status_code")

    def __init__(
        self,
        status_code: int,
        reason_phrase: str,
        raw_headers: Headers,
        chunks: AsyncIterator[bytes],
        close: Callable[[], Awaitable[None]],
    ) -> None:
        self.status_code = status_code
        self.reason_phrase = reason_phrase
        self.raw_headers = raw_headers
        self._chunks = chunks
        self._close = close

    def aiter_raw(self) -> AsyncIterator[bytes]:
        return self._chunks

    async def aclose(self) -> None:
        await self._close()


_TLS_CONTEXT: ssl.SSLContext | None = None


def tls_context(scheme: str) -> ssl.SSLContext | None:
    """One TLS context for all https connections (building one loads the CA bundle: ~17 ms
    of CPU); None for plain HTTP."""
    global _TLS_CONTEXT
    if scheme != "https":
        return None
    if _TLS_CONTEXT is None:
        _TLS_CONTEXT = ssl.create_default_context()
    return _TLS_CONTEXT


# --------------------------------------------------------------------------- httptools

# seconds an idle upstream connection is kept for reuse: below the idle timeouts of common
# servers (uvicorn, Node, Apache: 5 s), so that the proxy rarely sends on a connection the
# upstream is closing (and when it does, the request is sent again: `Http11Upstream.send`)
IDLE_LIMIT = 4.0


def _expire(waiter: asyncio.Future[None], error: type[Exception]) -> None:
    if not waiter.done():
        waiter.set_exception(error("timed out"))


def settle(future: asyncio.Future[None] | None) -> None:
    """Wake whoever awaits `future` (nothing when there is no such future, or it is done)."""
    if future is not None and not future.done():
        future.set_result(None)


class _Connection(asyncio.Protocol):
    """One upstream connection: the reply being read (head, body chunks, end), flow control
    both ways, and how the connection ended. The httptools parser calls the `on_*` methods
    from `data_received`."""

    HIGH_WATER = 1024 * 1024  # reading pauses while more than this is unread

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.lost: asyncio.Future[None] = loop.create_future()
        self.closed = False  # EOF, reset, or closed by us: never reused
        self.error: Exception | None = None  # why the reply cannot be read to its end
        self.waiter: asyncio.Future[None] | None = None  # a read or write waiting
        self.writing_paused = False
        self.reading_paused = False
        self.active = False  # a request was sent and its reply is not done
        self.idle_since = 0.0  # loop time it was put on the free list
        self.head_only = False
        self._reset(head_only=False)

    def _reset(self, *, head_only: bool) -> None:
        if self.head_only:
            # llhttp still waits for the body the HEAD reply's head announced: a new parser
            self.parser = httptools.HttpResponseParser(self)
        self.head_only = head_only
        self.got_data = False  # a byte of this request's reply came
        self.status = 0
        self.reason = b""
        self.headers: Headers = []
        self.head_done = False
        self.head_bytes = 0  # bytes received before the head was done (whole reads)
        self.complete = False
        self.keep_alive = False
        self.framed = False  # Content-Length or chunked: EOF before the end is an error
        self.chunks: collections.deque[bytes] = collections.deque()
        self.buffered = 0

    # asyncio

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.got_data = True
        if not self.active or self.complete:
            # nothing was asked: a connection that talks out of turn is not reused
            self._fail(httpx.RemoteProtocolError("the upstream sent data out of turn"))
            return
        if not self.head_done:
            self.head_bytes += len(data)
            if self.head_bytes > MAX_REPLY_HEAD + len(data):
                self._head_too_large()
                return
        try:
            self.parser.feed_data(data)
        except Exception as exc:  # HttpParserError, HttpParserUpgrade
            detail = str(exc) or type(exc).__name__
            self._fail(httpx.RemoteProtocolError(f"invalid HTTP reply: {detail}"))
            return
        if not self.head_done and self.head_bytes > MAX_REPLY_HEAD:
            self._head_too_large()

    def _head_too_large(self) -> None:
        self._fail(
            httpx.RemoteProtocolError(f"the reply head is larger than {MAX_REPLY_HEAD} bytes")
        )

    def eof_received(self) -> bool:
        self.closed = True
        if self.head_done and not self.complete and not self.framed:
            self.complete = True  # the body of a reply without a length ends here
        self._end()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._end(exc)
        self.writing_paused = False
        settle(self.lost)

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        settle(self.waiter)

    # httptools callbacks

    def on_message_begin(self) -> None:
        if self.head_done:
            # a second reply to one request: stop parsing (the parser raises this as
            # HttpParserCallbackError), and do not reuse the connection
            raise httpx.RemoteProtocolError("the upstream sent more than one reply")

    def on_status(self, status: bytes) -> None:
        self.reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.head_done:
            return  # a trailer field (after a chunked body): dropped, RFC 9110 §6.5.1
        self.headers.append((name, value))
        lower = name.lower()
        if lower == b"content-length" or (
            lower == b"transfer-encoding" and b"chunked" in value.lower()
        ):
            self.framed = True

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:
            # an interim reply (103 Early Hints): the real one follows on this connection
            self.reason = b""
            self.headers = []
            self.framed = False
            return
        self.status = status
        self.keep_alive = self.parser.should_keep_alive()
        self.head_done = True
        if self.head_only or status in (204, 304):
            self.complete = True  # no body, whatever the head says
        settle(self.waiter)

    def on_body(self, body: bytes) -> None:
        if self.complete:
            # a body after a reply to HEAD: the connection cannot be trusted with another
            self._fail(httpx.RemoteProtocolError("the upstream sent a body with a HEAD reply"))
            return
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > self.HIGH_WATER and not self.reading_paused:
            self.reading_paused = True
            if self.transport is not None:
                self.transport.pause_reading()
        settle(self.waiter)

    def on_message_complete(self) -> None:
        if self.head_done:  # (not the end of an interim reply)
            self.complete = True
            settle(self.waiter)

    # the client's side

    def _fail(self, error: Exception) -> None:
        if self.error is None and not self.complete:
            self.error = error
        self.closed = True
        if self.transport is not None:
            self.transport.close()
        settle(self.waiter)

    def _end(self, reset: Exception | None = None) -> None:
        if self.active and not self.complete and self.error is None:
            why = f" ({reset})" if reset is not None else ""
            if not self.head_done:
                self.error = httpx.RemoteProtocolError(
                    f"the upstream closed the connection without sending a reply{why}"
                )
            elif reset is not None:
                self.error = httpx.ReadError(f"the connection broke{why}")
            else:
                self.error = httpx.RemoteProtocolError(
                    "the upstream closed the connection before the end of its reply"
                )
        settle(self.waiter)

    async def wait(self, timeout: float | None, error: type[Exception]) -> None:
        """Until the parser or the transport says something new (or `timeout` passes)."""
        waiter = self.waiter = self.loop.create_future()
        timer = None if timeout is None else self.loop.call_later(timeout, _expire, waiter, error)
        try:
            await waiter
        finally:
            self.waiter = None
            if timer is not None:
                timer.cancel()

    def take(self) -> bytes:
        chunk = self.chunks.popleft()
        self.buffered -= len(chunk)
        if self.reading_paused and self.buffered <= self.HIGH_WATER // 4:
            self.reading_paused = False
            if self.transport is not None and not self.closed:
                self.transport.resume_reading()
        return chunk

    def reusable(self) -> bool:
        return self.complete and self.keep_alive and not self.closed and not self.chunks

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class _Body:
    """The body of one reply, chunk by chunk as it arrives."""

    __slots__ = ("_connection", "_timeout")

    def __init__(self, connection: _Connection, timeout: float | None) -> None:
        self._connection = connection
        self._timeout = timeout

    def __aiter__(self) -> _Body:
        return self

    async def __anext__(self) -> bytes:
        connection = self._connection
        while True:
            if connection.chunks:
                return connection.take()
            if connection.complete:
                raise StopAsyncIteration
            if connection.error is not None:
                raise connection.error
            if connection.closed:
                raise httpx.ReadError("the connection was closed")
            await connection.wait(self._timeout, httpx.ReadTimeout)


class Http11Upstream:
    """A free list of HTTP/1.1 keep-alive connections to one origin, one request at a time
    each (see the module docstring). `send` adds Host (first, as httpx does) and, for a body
    or a method that carries one, Content-Length; the caller's headers go as given."""

    def __init__(self, origin: httpx.URL, timeout: httpx.Timeout, max_idle: int = 256) -> None:
        self._scheme = origin.scheme
        self._host = origin.host
        self._port = origin.port or (443 if origin.scheme == "https" else 80)
        self._host_line = b"\r\nHost: " + origin.netloc
        self._tls = tls_context(origin.scheme)
        self._timeout = timeout
        self._max_idle = max_idle
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()

    async def _connection(self, *, fresh: bool = False) -> tuple[_Connection, bool]:
        """An idle connection (True: reused), or a new one. Connections idle for more than
        `IDLE_LIMIT` seconds are closed rather than reused: servers close idle keep-alive
        connections after a few seconds (uvicorn and Node after 5 s), and a request sent as
        the server closes is lost in the race."""
        loop = asyncio.get_running_loop()
        if not fresh:
            now = loop.time()
            while self._idle:
                connection = self._idle.pop()
                if connection.closed:
                    continue
                if now - connection.idle_since > IDLE_LIMIT:
                    connection.close()
                    continue
                return connection, True
        try:
            async with asyncio.timeout(self._timeout.connect):
                _, protocol = await loop.create_connection(
                    lambda: _Connection(loop),
                    self._host,
                    self._port,
                    ssl=self._tls,
                    server_hostname=self._host if self._tls is not None else None,
                )
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(
                f"connecting to {self._host}:{self._port} timed out"
            ) from exc
        except OSError as exc:  # refused, unreachable, TLS failures (ssl.SSLError)
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        self._open.add(protocol)
        protocol.lost.add_done_callback(lambda _: self._open.discard(protocol))
        return protocol, False

    async def send(
        self, method: str, target: bytes, headers: SentHeaders, body: bytes
    ) -> UpstreamReply:
        lines = [method.encode("ascii"), b" ", target, b" HTTP/1.1", self._host_line]
        for name, value in headers:
            lines += (b"\r\n", name, b": ", value)
        length = bool(body) or method in ("POST", "PUT", "PATCH")
        if length:
            lines += (b"\r\nContent-Length: ", b"%d" % len(body))
        lines.append(b"\r\n\r\n")
        head = b"".join(lines)
        # the values came through a parser, but a CR or LF inside one would split the head
        breaks = 3 + len(headers) + length
        if head.count(b"\n") != breaks or head.count(b"\r") != breaks:
            raise httpx.LocalProtocolError("a header or the target holds a line break")
        connection, reused = await self._connection()
        try:
            await self._start(connection, method, head, body)
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
            if not reused or connection.got_data:
                raise
            # A kept-alive connection the upstream closed (EOF, reset, broken pipe) before a
            # byte of the reply came: sent again, once, on a new connection, whatever the
            # method. This is the race of a server's idle timeout (RFC 9112 §9.3.1, RFC 9110
            # §9.2.2): the server closes a connection only between requests, so one it
            # closed as idle was closed before this request arrived, unread and unanswered:
            # even a POST (not idempotent) was not acted on. A new connection that fails
            # the same way is an error (a 502), as is any failure after the first byte.
            connection, _ = await self._connection(fresh=True)
            await self._start(connection, method, head, body)

        async def close() -> None:
            connection.active = False
            if connection.reusable() and len(self._idle) < self._max_idle:
                connection.idle_since = connection.loop.time()
                self._idle.append(connection)
            else:
                connection.close()

        return UpstreamReply(
            connection.status,
            connection.reason.decode("latin-1"),
            connection.headers,
            _Body(connection, self._timeout.read),
            close,
        )

    async def _start(self, connection: _Connection, method: str, head: bytes, body: bytes) -> None:
        """Send the request on `connection` and wait for the head of its reply."""
        connection._reset(head_only=method == "HEAD")
        connection.active = True
        transport = connection.transport
        assert transport is not None
        try:
            if len(body) <= 65536:
                transport.write(head + body)
            else:
                transport.write(head)
                transport.write(body)
            while connection.writing_paused and not connection.closed:
                await connection.wait(self._timeout.write, httpx.WriteTimeout)
            while not connection.head_done:
                if connection.error is not None:
                    raise connection.error
                if connection.closed:
                    raise httpx.RemoteProtocolError("the upstream closed the connection")
                await connection.wait(self._timeout.read, httpx.ReadTimeout)
        except BaseException:
            connection.close()
            raise

    async def aclose(self) -> None:
        """Close every connection, and wait (at most 1 s) until their sockets are closed, so
        that a proxy that stops right after this leaves no half-open connection behind."""
        self._idle = []
        open_now = list(self._open)
        for connection in open_now:
            connection.close()
        lost = [c.lost for c in open_now if not c.lost.done()]
        if lost:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    await asyncio.wait(lost)


# --------------------------------------------------------------------------- httpx


class HttpxUpstream:
    """Through one httpx transport, used directly (no AsyncClient: a client would keep the
    upstream's cookies and add them to other clients' requests, and its auth/redirect/cookie
    layers cost CPU on every request). For an injected transport (e.g. httpx.ASGITransport in
    tests), and for the "shared" pool: one httpcore pool holding every connection, which walks
    them under a lock for every request (bench/bench_proxy.py compares it with the free list).
    """

    def __init__(
        self,
        origin: httpx.URL,
        timeout: httpx.Timeout,
        transport: httpx.AsyncBaseTransport | None,
    ) -> None:
        self._origin = origin
        self._owned = transport is None
        self._transport = transport or httpx.AsyncHTTPTransport(
            verify=tls_context(origin.scheme) or False,
            trust_env=False,
            limits=httpx.Limits(max_connections=1024, max_keepalive_connections=1024),
        )
        self._extensions: dict[str, Any] = {"timeout": timeout.as_dict()}

    async def send(
        self, method: str, target: bytes, headers: SentHeaders, body: bytes
    ) -> UpstreamReply:
        request = httpx.Request(
            method,
            httpx.URL(
                scheme=self._origin.scheme,
                host=self._origin.host,
                port=self._origin.port,
                raw_path=target,
            ),
            headers=headers,
            content=body,
            extensions=self._extensions,
        )
        response = await self._transport.handle_async_request(request)
        response.request = request
        return UpstreamReply(
            response.status_code,
            response.reason_phrase,
            response.headers.raw,
            response.aiter_raw(),
            response.aclose,
        )

    async def aclose(self) -> None:
        if self._owned:
            await self._transport.aclose()
