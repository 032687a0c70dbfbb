"""One request and its reply over HTTP/1.1 (`Cycle`): the ASGI `receive` and `send` the app
gets for it from `recorder.record.transport.http1`, and the reply's framing. What it needs of
its connection is `Connection` (so that this module does not import `http1`).

`receive` answers at once when the body (or the part of it that came) is there, and waits
otherwise, asking for `100 Continue` first when the client expects it; once the body is taken,
it waits for the end of the reply or of the connection and says `http.disconnect`.

`send` writes the reply's head as the app gave it (names and order kept, nothing added but the
framing the reply needs: `transfer-encoding: chunked` when it has no length on HTTP/1.1,
`connection: close` when the connection ends after it), checked for CR and LF by two byte
counts over the whole head. A small sized reply's head (up to 64 KiB, or no body) is held for
its body, one write for both: the proxy sends the body right after (an app that waited for
the request meanwhile gets the head sent then); a chunked one (a stream) or a large one goes
out at once. Each body part is written as it comes, chunk-encoded or counted against the
Content-Length.
"""

from __future__ import annotations

import asyncio
import http
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Protocol

__all__ = ["App", "Connection", "Cycle", "Message", "Scope"]

log = logging.getLogger("recorder.record.transport.http1")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
App = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
    Awaitable[None],
]

# a reply body up to this size is joined to its head (one write); longer ones go by writelines
_JOIN_AT = 64 * 1024


def _status_line(status: int) -> bytes:
    try:
        phrase = http.HTTPStatus(status).phrase.encode()
    except ValueError:
        phrase = b""
    return b"HTTP/1.1 %d %s\r\n" % (status, phrase)


_STATUS_LINES = {status: _status_line(status) for status in range(100, 600)}
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_SERVER_ERROR: list[tuple[bytes, bytes]] = [
    (b"content-type", b"text/plain; charset=utf-8"),
    (b"content-length", b"21"),
    (b"connection", b"close"),
]


class _Server(Protocol):
    stopping: bool
    tasks: set[asyncio.Task[None]]


class Connection(Protocol):
    """What a `Cycle` asks of its connection (`http1.Http1Protocol`)."""

    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    write_paused: bool

    @property
    def server(self) -> _Server: ...

    async def drain(self) -> None: ...

    def resume_reading(self) -> None: ...

    def response_complete(self, cycle: Cycle) -> None: ...


class Cycle:
    """One request and its reply: the ASGI `receive` and `send` the app gets."""

    __slots__ = (
        "buffered",
        "chunked",
        "complete",
        "delivered",
        "disconnected",
        "expect_continue",
        "head_request",
        "http11",
        "keep_alive",
        "more_body",
        "no_body",
        "parts",
        "pending",
        "proto",
        "remaining",
        "scope",
        "started",
        "task",
        "waiter",
    )

    def __init__(
        self, proto: Connection, scope: Scope, keep_alive: bool, expect: bool, http11: bool
    ) -> None:
        self.proto = proto
        self.scope = scope
        self.parts: list[bytes] = []  # body bytes not yet taken by `receive`
        self.buffered = 0
        self.more_body = True
        self.delivered = False  # the last `http.request` was taken
        self.waiter: asyncio.Future[None] | None = None
        self.keep_alive = keep_alive
        self.expect_continue = expect
        self.http11 = http11
        self.head_request = scope["method"] == "HEAD"
        self.started = False
        self.complete = False
        self.disconnected = False
        self.no_body = False
        self.chunked = False
        self.remaining: int | None = 0  # body bytes its length still owes (None: unsized)
        self.pending: bytes | None = None  # a sized reply's head, waiting for its body
        self.task: asyncio.Task[None] | None = None  # the app's, answering this request

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    # ------------------------------------------------------------------------ ASGI receive

    async def receive(self) -> Message:
        while True:
            if self.disconnected or self.complete:
                return {"type": "http.disconnect"}
            if not self.delivered and (self.parts or not self.more_body):
                parts = self.parts
                body = parts[0] if len(parts) == 1 else b"".join(parts)
                self.parts = []
                self.buffered = 0
                more = self.more_body
                self.delivered = not more
                return {"type": "http.request", "body": body, "more_body": more}
            proto = self.proto
            if self.pending is not None:
                self._flush()
            if self.expect_continue:
                self.expect_continue = False
                if not proto.transport.is_closing():
                    proto.transport.write(_CONTINUE)
            proto.resume_reading()
            waiter = self.waiter = proto.loop.create_future()
            await waiter

    # ------------------------------------------------------------------------ ASGI send

    async def send(self, message: Message) -> None:
        proto = self.proto
        if proto.write_paused and not self.disconnected:
            await proto.drain()
        if self.disconnected:
            return  # the client went away: nothing to say to it
        kind = message["type"]
        if not self.started:
            if kind != "http.response.start":
                raise RuntimeError(f"expected 'http.response.start', got {kind!r}")
            self.started = True
            self.expect_continue = False
            self._start(message["status"], message.get("headers", ()))
            return
        if self.complete:
            raise RuntimeError(f"{kind!r} sent after the reply was complete")
        if kind != "http.response.body":
            raise RuntimeError(f"expected 'http.response.body', got {kind!r}")
        body: bytes = message.get("body", b"")
        more: bool = message.get("more_body", False)
        if self.no_body:
            data = b""
        elif self.chunked:
            if body:
                data = (
                    b"%x\r\n%b\r\n" % (len(body), body)
                    if more
                    else (b"%x\r\n%b\r\n0\r\n\r\n" % (len(body), body))
                )
            else:
                data = b"" if more else b"0\r\n\r\n"
        else:
            if self.remaining is not None:
                self.remaining -= len(body)
                if self.remaining < 0:
                    raise RuntimeError("the reply body is longer than its Content-Length")
            data = body
        head = self.pending
        transport = proto.transport
        if head is not None:
            self.pending = None
            if len(data) <= _JOIN_AT:
                transport.write(head + data)
            else:
                transport.writelines((head, data))
        elif data:
            transport.write(data)
        if not more:
            if self.remaining and not self.no_body:
                raise RuntimeError("the reply body is shorter than its Content-Length")
            self.complete = True
            proto.response_complete(self)

    def _start(self, status: int, headers: Any) -> None:
        """The reply's head: written now (a stream), or held for its body (a sized reply)."""
        line = _STATUS_LINES.get(status) or _status_line(status)
        out = [line]
        length: int | None = None
        chunked = close = False
        lines = 2  # the status line and the blank line
        for name, value in headers:
            lines += 1
            if len(name) in (10, 14, 17):
                lower = name.lower()
                if lower == b"content-length":
                    if length is None:
                        length = int(value)
                elif lower == b"transfer-encoding":
                    chunked = chunked or b"chunked" in value.lower()
                elif lower == b"connection":
                    close = close or b"close" in [t.strip() for t in value.lower().split(b",")]
            out += (name, b": ", value, b"\r\n")
        keep_alive = self.keep_alive and not close
        no_body = self.head_request or status < 200 or status in (204, 304)
        if chunked:
            length = None
        elif length is None and not no_body:
            if self.http11:
                chunked = True
                out.append(b"transfer-encoding: chunked\r\n")
                lines += 1
            else:
                keep_alive = False  # HTTP/1.0: the body ends where the connection does
        if not keep_alive and not close:
            out.append(b"connection: close\r\n")
            lines += 1
        out.append(b"\r\n")
        head = b"".join(out)
        if head.count(b"\n") != lines or head.count(b"\r") != lines:
            raise RuntimeError("a reply header holds a CR or LF")
        self.keep_alive = keep_alive
        self.no_body = no_body
        self.chunked = chunked and not no_body
        # (HTTP/1.0 without a length: the body ends where the connection does)
        self.remaining = 0 if no_body or chunked else length
        if no_body or (length is not None and length <= _JOIN_AT):
            # a small sized reply (or none): the head goes with the body, in one write (a
            # `call_soon` to send it alone would cost the loop a turn, an epoll, per reply)
            self.pending = head
        else:
            self.proto.transport.write(head)  # a stream, or a large body: at once

    def _flush(self) -> None:
        """A held head, sent alone: the app waits for the request before its body."""
        head = self.pending
        if head is not None:
            self.pending = None
            if not self.disconnected and not self.proto.transport.is_closing():
                self.proto.transport.write(head)

    # ------------------------------------------------------------------------ the app

    async def run(self, app: App) -> None:
        """The app answers; what it leaves undone is done here (a 500, a close)."""
        proto = self.proto
        try:
            await app(self.scope, self.receive, self.send)
        except asyncio.CancelledError:
            # the shutdown's grace time ran out (it said so): the client sees a cut reply
            proto.transport.close()
        except Exception:
            log.exception("exception in the proxy while handling %s", _shown(self.scope))
            if not self.started and not self.disconnected:
                await self.error_500()
            else:
                self._flush()  # (a held head: the client sees the reply cut short)
                proto.transport.close()
        else:
            if self.disconnected or self.complete:
                pass
            elif not self.started:
                log.error("the proxy returned without a reply to %s", _shown(self.scope))
                await self.error_500()
            else:
                if not proto.server.stopping:
                    log.error("the proxy returned before its reply to %s ended", _shown(self.scope))
                self._flush()
                proto.transport.close()  # without the final chunk: the client sees it cut
        finally:
            # (the task leaves the server's set itself: no done callback to schedule)
            if self.task is not None:
                proto.server.tasks.discard(self.task)

    async def error_500(self) -> None:
        self.keep_alive = False
        await self.send({"type": "http.response.start", "status": 500, "headers": _SERVER_ERROR})
        await self.send({"type": "http.response.body", "body": b"Internal Server Error"})


def _shown(scope: Scope) -> str:
    return f"{scope['method']} {scope['path']}"
