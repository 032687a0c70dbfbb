"""Run an ASGI app with uvicorn in a background thread, on a loopback socket bound first.

Binding the socket before the app starts gives the real port up front (port 0 picks a free
one), with no race between choosing a port and listening on it. Used by the kit, the player's
embedded default agent, and the end-to-end tests.

Slow clients are bounded as the recording proxy's own server bounds them
(`recorder.record.transport.http1`): a connection silent `KEEP_ALIVE` seconds before its first
request, or between two, is closed, and a request head not ended `HEAD_TIMEOUT` seconds after
its first byte is answered `408 Request Timeout` and closed (`bounded_http`). uvicorn closes
an idle connection only after a reply (`timeout_keep_alive`): one that never sent a whole head
(an idle client, slowloris) was held open for good.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = [
    "HEAD_TIMEOUT",
    "KEEP_ALIVE",
    "SHUTDOWN_GRACE",
    "ServerThread",
    "bind_socket",
    "bounded_http",
    "bounded_options",
    "listen_problem",
    "parse_listen",
    "quiet_shutdown",
]

# Seconds uvicorn lets the calls still open at a shutdown go on before it cancels them
# (`timeout_graceful_shutdown`). Without a bound it waits for each to end: a blocking call
# to the kit's slow review held Ctrl-C for the 30 s of the review.
SHUTDOWN_GRACE = 0.2

# seconds a connection may stay silent before its first request and between two, and a
# request head may take from its first byte: the recording proxy's defaults (`recorder record
# --keep-alive`, `--client-timeout`)
KEEP_ALIVE = 5.0
HEAD_TIMEOUT = 30.0
_HEAD_TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 35\r\nconnection: close\r\n\r\nThe request head took too long.\n"
)

log = logging.getLogger(__name__)

# what uvicorn logs as an ERROR when an app returns before its reply ended: at shutdown, an
# event stream that the shutdown cut (the client sees it cut); at any other time, a bug
_INCOMPLETE = "ASGI callable returned without completing response."
# what it logs as an ERROR when SHUTDOWN_GRACE has passed and it cancels the open calls
_CANCELLED = "timeout graceful shutdown exceeded"


class _BoundedHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol with the two bounds it lacks (module docstring): a timer
    from the connection's start until its first request begins, and from a request's first
    byte until its head has ended. Between requests uvicorn's own keep-alive timer runs."""

    idle_timeout = KEEP_ALIVE
    head_timeout = HEAD_TIMEOUT
    _timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.idle_timeout, head=False)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm(self.head_timeout, head=True)

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self, seconds: float, *, head: bool) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._expired, head)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self, head: bool) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        if head:
            client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
            log.warning(
                "a request head from %s did not end within %g s: answered 408, connection closed",
                client,
                self.head_timeout,
            )
            self.transport.write(_HEAD_TIMED_OUT)
        self.transport.close()


def bounded_http(idle: float = KEEP_ALIVE, head: float = HEAD_TIMEOUT) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class (its `http` option) that closes a connection silent
    `idle` seconds before its first request, and answers 408 and closes one whose request
    head has not ended `head` seconds after its first byte."""
    return type("BoundedHttp", (_BoundedHttp,), {"idle_timeout": idle, "head_timeout": head})


def bounded_options(idle: float = KEEP_ALIVE, head: float = HEAD_TIMEOUT) -> dict[str, Any]:
    """uvicorn's options for those bounds (`bounded_http`, and `timeout_keep_alive` between
    requests)."""
    return {"http": bounded_http(idle, head), "timeout_keep_alive": idle}


class _QuietShutdown(logging.Filter):
    def __init__(self, server: uvicorn.Server) -> None:
        super().__init__()
        self.server = server

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.server.should_exit:
            return True
        message = record.getMessage()
        # a call SHUTDOWN_GRACE cancelled: its task ends in CancelledError, which uvicorn
        # logs with a traceback as an "Exception in ASGI application"
        cancelled = record.exc_info is not None and isinstance(
            record.exc_info[1], asyncio.CancelledError
        )
        return not (message == _INCOMPLETE or message.endswith(_CANCELLED) or cancelled)


def quiet_shutdown(server: uvicorn.Server) -> None:
    """Keep uvicorn from printing `ERROR: ASGI callable returned without completing
    response.` for the streams still open when Ctrl-C (or SIGTERM) stops `server`, and
    `ERROR: Cancel 1 running task(s), timeout graceful shutdown exceeded` (and the
    CancelledError's traceback) for the calls cut after SHUTDOWN_GRACE: ending them is what
    was asked. The same lines before the
    shutdown still show."""
    logging.getLogger("uvicorn.error").addFilter(_QuietShutdown(server))


def parse_listen(listen: str) -> tuple[str, int]:
    """`127.0.0.1:41242` -> ("127.0.0.1", 41242); `[::1]:8080` and a bare port are accepted.

    What `--listen` takes (the kit; the same rules as the recorder's and the stand-in's, here
    so that `recorder kit` does not import the recording proxy to read its address).
    """
    text = listen.strip()
    if text.isdigit():
        return "127.0.0.1", int(text)
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"expected HOST:PORT such as 127.0.0.1:41242, got {listen!r}")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    number = int(port)
    if not 0 <= number <= 65535:
        raise ValueError(f"invalid port {number} (ports are 0-65535)")
    return host, number


def listen_problem(host: str, port: int, error: BaseException) -> str:
    """`cannot listen on 127.0.0.1:41241: address already in use`: why `bind_socket` failed."""
    shown = f"[{host}]" if ":" in host else host
    if isinstance(error, OverflowError):
        reason = f"invalid port {port}"
    elif isinstance(error, OSError) and error.strerror:
        reason = error.strerror[:1].lower() + error.strerror[1:]
    else:
        reason = str(error)
    return f"cannot listen on {shown}:{port}: {reason}"


def bind_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket on host:port (port 0: a free port chosen by the OS)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio turns on TCP_NODELAY only for sockets whose `proto` says
    # TCP, and without it a reply written as headers then body waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except BaseException:  # OSError, and OverflowError for a port above 65535
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class ServerThread:
    """`with ServerThread(app) as server: httpx.get(server.url + "/")`.

    `sock` may be passed when the app must know its own address before it is built (the kit
    puts its URL in its agent card): bind first with `bind_socket`, build, then start.
    """

    def __init__(
        self,
        app: Any,
        *,
        sock: socket.socket | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        startup_timeout: float = 10.0,
        **uvicorn_options: Any,
    ) -> None:
        self.sock = sock if sock is not None else bind_socket(host, port)
        self.host, self.port = self.sock.getsockname()[:2]
        options: dict[str, Any] = {"log_level": "warning", "lifespan": "off"}
        options.update(bounded_options())  # (idle and slow clients closed, as the proxy does)
        options.update(uvicorn_options)
        self._server = uvicorn.Server(uvicorn.Config(app, **options))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self._startup_timeout = startup_timeout

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + self._startup_timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server on {self.url} did not start")
            time.sleep(0.005)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        self.sock.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
