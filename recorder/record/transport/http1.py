"""The proxy's own HTTP/1.1 server: asyncio protocols, llhttp (httptools) and ASGI 3.

    client ──TCP──▶ Http1Protocol (one per connection: httptools.HttpRequestParser)
                      └─▶ one Task per request: app(scope, receive, send)   (RecordingProxy)

Why not uvicorn: a proxy's own cost per request is what it adds to every exchange, and
uvicorn's HTTP/1.1 protocol is general (a header regex per response header, lowercased names,
a Date header ticking, an access log check, a request/response object per request, a keep-alive
timer armed and cancelled per request), about a sixth of the event loop's time per proxied
request (cProfile). This one does what the proxy needs, in the same ASGI 3 terms, so that the
app, and its tests through `httpx.ASGITransport`, do not know the difference:

- keep-alive; HTTP/1.0 and `Connection: close` close after the reply; pipelined requests are
  parsed ahead and answered in order, one at a time per connection (reading pauses while one
  waits); `Expect: 100-continue` is answered when the app first waits for a body still to
  come; request bodies (sized or chunked) reach `receive()` as they arrive, reading paused
  past `HIGH_WATER` bytes not yet taken; `receive()` answers at once when the body is whole,
  and `http.disconnect` once the reply is done or the client gone (a stream relay watches it).
- An Upgrade request (`Connection: upgrade`) is a plain request: llhttp skips the body of one
  and stops, so the body is parsed on by a fresh parser fed a head of the same framing.
- Replies: the app's headers go out as given (no Server or Date added: the upstream's are
  relayed), framed by the app's Content-Length, else chunked (HTTP/1.1) or closed (HTTP/1.0);
  no body for HEAD, 1xx, 204, 304. A CR or LF in a header closes the connection instead (two
  byte counts over the head, not a regex per header: the upstream's headers were checked by
  the client that parsed them). A small sized reply's head goes out with its body (one
  write); a chunked one (a stream) or a large one at once. `send()` waits for the transport
  only when it asked to pause writing; after the client left it does nothing.
- Errors: the app raising before its reply started gets a 500 and the connection closed;
  after, or returning with its reply unfinished, the connection is closed without the final
  chunk, so the client sees a reply cut short (logged, but not for streams the shutdown ends).
  A malformed request (llhttp's error, a bad method, an invalid header, a non-ASCII target, a
  broken chunked body, an unknown Transfer-Encoding) is answered `400 Bad Request` and its
  connection closed: at once when it is the request being answered (whose app waits for its
  body: it gets `http.disconnect`), else after the replies before it.
- Bounds: a request head (request line and header fields) past `max_head` bytes (16 KiB,
  h11's default; counted from the read after the one it began in, so the parser holds at most
  one read more) is answered `431 Request Header Fields Too Large` and closed.
- Trailers (the fields after a chunked body, RFC 9110 §6.5) are dropped: they never join the
  header fields the app gets (§6.5.1: a client could slip `Authorization` past a header
  filter so), and the proxy does not forward them.
- Slow clients: one timer per connection, armed lazily (a deadline it re-reads when it fires,
  not a timer per request): a connection silent `keep_alive` seconds before a request, or
  between two, is closed; a request head not ended `client_timeout` seconds after its first
  byte is answered `408 Request Timeout` and closed. The body is the app's to bound.
- Shutdown (`Http1Server.shutdown`): no new connections, idle ones closed, in-flight requests
  given a grace time (a forced stop cuts it), then cancelled.

Not carried over from uvicorn: WebSockets, the lifespan protocol (the caller prepares and
closes the app), `root_path`, proxy headers, an access log, `limit_concurrency`, TLS, the
`state` scope key, and `Server`/`Date` headers.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import urllib.parse
from collections import deque
from typing import Any

import httptools

from recorder.record.transport.cycle import App, Cycle

__all__ = ["HIGH_WATER", "MAX_HEAD", "Http1Protocol", "Http1Server", "listening_socket"]

log = logging.getLogger(__name__)

# request body bytes held for the app before reading from the client pauses
HIGH_WATER = 64 * 1024
# the most bytes a request head may hold (h11's default `max_incomplete_event_size`)
MAX_HEAD = 16 * 1024
_ASGI = {"version": "3.0", "spec_version": "2.3"}
_BAD_REQUEST = (
    b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 30\r\nconnection: close\r\n\r\nInvalid HTTP request received."
)
_HEAD_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 31\r\nconnection: close\r\n\r\nThe request head is too large.\n"
)
_HEAD_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class Http1Server:
    """Serves `app` (ASGI 3, http scopes only) on listening sockets in the running loop.

    `client_timeout`: seconds a request head may take from its first byte (a 408 after);
    `keep_alive`: seconds a connection may stay silent before a request and between two;
    `max_head`: the most bytes a request head may hold (a 431 past it)."""

    def __init__(
        self, app: App, *, client_timeout: float, keep_alive: float, max_head: int = MAX_HEAD
    ) -> None:
        self.app = app
        self.client_timeout = client_timeout
        self.keep_alive = keep_alive
        self.max_head = max_head
        self.connections: set[Http1Protocol] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.stopping = False  # the shutdown began: a reply cut short is not news
        self._servers: list[asyncio.AbstractServer] = []

    async def start(self, sock: socket.socket) -> None:
        """Accept connections on `sock` (listening already)."""
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: Http1Protocol(self, loop), sock=sock)
        self._servers.append(server)

    def close(self) -> None:
        """Stop accepting connections."""
        for server in self._servers:
            server.close()

    async def shutdown(self, grace: float, force: asyncio.Event | None = None) -> None:
        """Stop accepting; close idle connections, let the requests in flight finish (each
        connection closed after its reply) for at most `grace` seconds or until `force` is
        set, then cancel them."""
        self.stopping = True
        self.close()
        for connection in list(self.connections):
            connection.shutdown()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        forced = asyncio.ensure_future(force.wait()) if force is not None else None
        try:
            while self.tasks and (forced is None or not forced.done()):
                self.tasks.difference_update([task for task in self.tasks if task.done()])
                if not self.tasks:
                    break
                left = deadline - loop.time()
                if left <= 0:
                    break
                waiting: set[asyncio.Future[Any]] = set(self.tasks)
                if forced is not None:
                    waiting.add(forced)
                await asyncio.wait(waiting, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if forced is not None:
                forced.cancel()
        if self.tasks:
            log.warning(
                "%d request%s still in flight %s: cancelled",
                len(self.tasks),
                "" if len(self.tasks) == 1 else "s",
                "at the forced stop"
                if force is not None and force.is_set()
                else f"{grace:g} s after the shutdown began",
            )
            cancelled = set(self.tasks)
            for task in cancelled:
                task.cancel()
            await asyncio.wait(cancelled, timeout=grace)
            self.tasks.clear()
        for connection in list(self.connections):
            connection.transport.close()


def _address(address: Any) -> tuple[str, int] | None:
    if isinstance(address, tuple) and len(address) >= 2:
        return str(address[0]), int(address[1])
    return None


class Http1Protocol(asyncio.Protocol):
    """One client connection: requests parsed by llhttp, each answered by the app in turn."""

    def __init__(self, server: Http1Server, loop: asyncio.AbstractEventLoop) -> None:
        self.server = server
        self.loop = loop
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self.parser = httptools.HttpRequestParser(self)
        self.parser.set_dangerous_leniencies(lenient_data_after_close=True)
        self.client: tuple[str, int] | None = None
        self.sockname: tuple[str, int] | None = None
        self.write_paused = False
        self._read_paused = False
        self._drain: asyncio.Future[None] | None = None
        # the request being parsed
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._expect = False
        self._cycle: Cycle | None = None  # the last request whose head was parsed
        self._body_only = False  # parsing an Upgrade request's body (see `_upgraded`)
        # the request the app answers now, and those parsed ahead of their turn
        self.active: Cycle | None = None
        self._queue: deque[Cycle] = deque()
        # the answer to a malformed request that follows the queued ones (sent after them)
        self._bad: bytes | None = None
        self._refused = False  # answered as malformed: what else comes is not read
        self._in_head = False  # a request head is being parsed
        self._head_bytes = 0  # bytes of the reads since the one it began in
        # the slow-client bounds: one timer, reading these when it fires
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._idle_since = 0.0
        self._head_at: float | None = None  # when the request head being parsed began

    # ------------------------------------------------------------------------ connection

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # (uvloop's: no subclass)
        self.server.connections.add(self)
        self.client = _address(transport.get_extra_info("peername"))
        self.sockname = _address(transport.get_extra_info("sockname"))
        self._idle_since = self.loop.time()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for cycle in (self.active, self._cycle, *self._queue):
            if cycle is not None:
                cycle.disconnected = True
                cycle.pending = None
                cycle.wake()
        self._queue.clear()
        self.write_paused = False
        drain, self._drain = self._drain, None
        if drain is not None and not drain.done():
            drain.set_result(None)

    def eof_received(self) -> bool | None:
        return None  # the transport closes itself; a reply in flight is still written

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        drain, self._drain = self._drain, None
        if drain is not None and not drain.done():
            drain.set_result(None)

    async def drain(self) -> None:
        if self._drain is None:
            self._drain = self.loop.create_future()
        await self._drain

    def pause_reading(self) -> None:
        if not self._read_paused and not self.transport.is_closing():
            self._read_paused = True
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self._read_paused:
            self._read_paused = False
            if not self.transport.is_closing():
                self.transport.resume_reading()

    def shutdown(self) -> None:
        """The server stops: close now when idle, else after the reply in flight."""
        self._queue.clear()
        active = self.active
        if active is None:
            self.transport.close()
        else:
            active.keep_alive = False

    # ------------------------------------------------------------------------ reading

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._in_head:
            self._head_bytes += len(data)
            if self._head_bytes > self.server.max_head:
                self._head_too_large()
                return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade as upgrade:
            self._upgraded(data[upgrade.args[0] :])
        except httptools.HttpParserError as exc:
            self._malformed(exc)

    def _head_too_large(self) -> None:
        log.warning(
            "a request head from %s past %d bytes: answered 431, connection closed",
            _client_shown(self.client),
            self.server.max_head,
        )
        self._refuse(_HEAD_TOO_LARGE)

    def _upgraded(self, rest: bytes) -> None:
        """llhttp stopped after an Upgrade request's head (and skipped its body): go on with
        a fresh parser; a body, if the head announced one, is parsed as the body of a head of
        the same framing (`_body_only` keeps that head to itself)."""
        self.parser = httptools.HttpRequestParser(self)
        self.parser.set_dangerous_leniencies(lenient_data_after_close=True)
        try:
            if self._body_only:
                framing = self._framing()
                self.parser.feed_data(b"POST / HTTP/1.1\r\n" + framing + b"\r\n")
            if rest:
                self.parser.feed_data(rest)
        except httptools.HttpParserUpgrade as upgrade:
            self._upgraded(rest[upgrade.args[0] :])
        except httptools.HttpParserError as exc:
            self._malformed(exc)

    def _framing(self) -> bytes:
        """The framing headers of the request last parsed (an Upgrade request's)."""
        cycle = self._cycle
        assert cycle is not None
        for name, value in cycle.scope["headers"]:
            if name == b"transfer-encoding":
                return b"transfer-encoding: %b\r\n" % value
        for name, value in cycle.scope["headers"]:
            if name == b"content-length":
                return b"content-length: %b\r\n" % value
        return b"content-length: 0\r\n"

    def _malformed(self, exc: Exception) -> None:
        cause = exc.__context__ if exc.__context__ is not None else exc
        log.warning(
            "an invalid HTTP request from %s: answered 400, connection closed (%s)",
            _client_shown(self.client),
            cause,
        )
        self._refuse(_BAD_REQUEST)

    def _refuse(self, answer: bytes) -> None:
        """Answer the request being parsed with `answer` (a 400, a 431) and close: now when
        no reply is in flight, or when the request being answered is this one (its body is
        what broke: the app, waiting for it, gets `http.disconnect`); else after the replies
        before it."""
        self._refused = True
        self._in_head = False
        active = self.active
        if active is not None and active is self._cycle and active.more_body:
            active.disconnected = True
            active.pending = None
            active.wake()
            if active.started:  # (its reply began: it can only be cut short)
                self.transport.close()
                return
            self.active = None
        if self.active is None:
            self._answer_and_close(answer)
        else:  # a reply is in flight: the answer follows it and those queued
            self._bad = answer
            self.pause_reading()

    def _answer_and_close(self, answer: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(answer)
            self.transport.close()

    # llhttp's callbacks, one request after another

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = []
        self._expect = False
        self._in_head = True
        # (the reads after this one are counted: where in this one the head began is unknown,
        # and it may hold a pipelined request's body; the parser holds at most this read more)
        self._head_bytes = 0
        now = self._head_at = self.loop.time()
        if self.active is None and (
            self._timer is None or self._timer_at > now + self.server.client_timeout
        ):
            self._watch()  # the head's bound comes before the timer

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self._in_head:
            return  # a trailer field (after a chunked body): dropped, RFC 9110 §6.5.1
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self._expect = True
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._head_at = None
        self._in_head = False
        parser = self.parser
        if self._body_only:
            return  # the stand-in head of an Upgrade request's body
        url = self._url
        if url[:1] == b"/" and b"#" not in url:
            raw_path, _, query = url.partition(b"?")
        else:
            parsed = httptools.parse_url(url)
            raw_path, query = parsed.path or b"/", parsed.query or b""
        path = raw_path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        version = parser.get_http_version()
        http11 = version == "1.1"
        scope = {
            "type": "http",
            "asgi": _ASGI,
            "http_version": version,
            "server": self.sockname,
            "client": self.client,
            "scheme": "http",
            "method": parser.get_method().decode("ascii"),
            "root_path": "",
            "path": path,
            "raw_path": raw_path,
            "query_string": query,
            "headers": self._headers,
        }
        keep_alive = version != "1.0" and parser.should_keep_alive()
        cycle = self._cycle = Cycle(self, scope, keep_alive, self._expect, http11)
        if parser.should_upgrade():
            for name, value in self._headers:
                if (name == b"content-length" and value.strip() not in (b"", b"0")) or (
                    name == b"transfer-encoding"
                ):
                    self._body_only = True  # llhttp skips it: `_upgraded` parses it on
                    break
        if self.active is None:
            self._run(cycle)
        else:  # pipelined: its turn comes after the replies before it
            self._queue.append(cycle)
            self.pause_reading()

    def on_body(self, body: bytes) -> None:
        cycle = self._cycle
        if cycle is None or cycle.complete or cycle.disconnected:
            return  # answered already (without reading its body): dropped
        cycle.parts.append(body)
        cycle.buffered += len(body)
        if cycle.buffered > HIGH_WATER:
            self.pause_reading()
        cycle.wake()

    def on_message_complete(self) -> None:
        cycle = self._cycle
        if cycle is None:
            return
        if self._body_only:
            if self.parser.should_upgrade():
                return  # llhttp's end of the Upgrade request's head: its body comes next
            self._body_only = False
        cycle.more_body = False
        cycle.wake()

    # ------------------------------------------------------------------------ replies

    def _run(self, cycle: Cycle) -> None:
        self.active = cycle
        server = self.server
        # (the task leaves `server.tasks` itself as it ends: `Cycle.run`)
        task = cycle.task = self.loop.create_task(cycle.run(server.app))
        server.tasks.add(task)

    def response_complete(self, cycle: Cycle) -> None:
        """`cycle`'s reply is out: close, or serve the next request."""
        if cycle is self.active:
            self.active = None
        cycle.wake()  # a `receive` waiting (a stream's watch) gets http.disconnect
        transport = self.transport
        if not cycle.keep_alive:
            transport.close()
            return
        if transport.is_closing():
            return
        self.resume_reading()
        if self._queue:
            self._run(self._queue.popleft())
            return
        if self._bad is not None:
            self._answer_and_close(self._bad)
            return
        self._idle_since = self.loop.time()
        self._watch()

    # ------------------------------------------------------------------------ slow clients

    def _watch(self) -> None:
        """Arm the timer for the bound that applies now (a head's, else the idle one)."""
        if self._head_at is not None:
            deadline = self._head_at + self.server.client_timeout
        else:
            deadline = self._idle_since + self.server.keep_alive
        if self._timer is not None:
            if self._timer_at <= deadline:
                return  # it fires first, and re-reads the bounds then
            self._timer.cancel()
        self._timer_at = deadline
        self._timer = self.loop.call_at(deadline, self._expired)

    def _expired(self) -> None:
        self._timer = None
        transport = self.transport
        if transport.is_closing() or self.active is not None:
            return  # (armed again when the reply in flight is done)
        now = self.loop.time()
        if self._head_at is not None:
            if now >= self._head_at + self.server.client_timeout:
                log.warning(
                    "a request head from %s did not end within %g s: answered 408, "
                    "connection closed (recorder record --client-timeout)",
                    _client_shown(self.client),
                    self.server.client_timeout,
                )
                transport.write(_HEAD_TIMEOUT)
                transport.close()
                return
        elif now >= self._idle_since + self.server.keep_alive:
            transport.close()
            return
        self._watch()


def _client_shown(client: tuple[str, int] | None) -> str:
    return f"{client[0]}:{client[1]}" if client else "a client"


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
