"""Serving the proxy: uvicorn on a listening socket, and the listen address.

Speed (bench/bench_proxy.py measures it): uvicorn runs with httptools and uvloop when they are
installed (`fast_server_options`), on a socket whose connections get TCP_NODELAY
(`listening_socket`). `serve` ends open streams as soon as Ctrl-C comes
(`RecordingProxy.stop_streams`), so that an endless stream does not hold the shutdown.

Slow clients (`guarded_protocol`): uvicorn bounds the idle time between two requests of a
connection (`timeout_keep_alive`) but not a connection that never sends a request, nor a
request head that never ends. The proxy's protocol closes a new connection that sends nothing
for `keep_alive` seconds, and one whose request head has not ended `client_timeout` seconds
after its first byte (a `408 Request Timeout` first, then the close). The body is the app's:
`read_body` answers 408 when it has not come `client_timeout` seconds after the head.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import logging
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from recorder.record.proxy import RecordingProxy

log = logging.getLogger(__name__)

# seconds a connection may stay idle: before its first request, and between two requests
KEEP_ALIVE = 5.0
# seconds a thread holding the GIL keeps it once another asks (Python's default: 0.005)
SWITCH_INTERVAL = 0.0005
# the cycle collector's thresholds while the proxy serves (Python's default: 700, 10, 10)
GC_THRESHOLDS = (10000, 10, 10)
_HEAD_TIMEOUT_REPLY = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
)


class _Terminated(Exception):
    """SIGTERM, raised once uvicorn's shutdown is done (`serve`)."""


def _terminated(signum: int, frame: object) -> None:
    raise _Terminated


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
        raise ValueError(f"invalid port {number} (ports are 0-65535)")
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


def guarded_protocol(
    http: Literal["httptools", "h11"], *, client_timeout: float, keep_alive: float = KEEP_ALIVE
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol (`http`) with a bound on a client's silence and on its
    request head: a new connection that sends nothing for `keep_alive` seconds is closed; a
    request head that has not ended `client_timeout` seconds after its first byte is answered
    `408 Request Timeout` and its connection closed. Between requests uvicorn's own
    `timeout_keep_alive` applies (`serve` sets it to `keep_alive`)."""
    from uvicorn.config import HTTP_PROTOCOLS
    from uvicorn.importer import import_from_string

    base: Any = import_from_string(HTTP_PROTOCOLS[http])

    class GuardedProtocol(base):  # type: ignore[misc]
        # one timer per connection: the idle bound until the first byte, then the head's
        _guard: asyncio.TimerHandle | None = None
        _head_started = False

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            self._guard = self.loop.call_later(keep_alive, self._idle_expired)

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_guard()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            cycle = self.cycle
            if not self._head_started and (cycle is None or cycle.response_complete):
                # the first byte of a request head: from now on it has `client_timeout`
                self._cancel_guard()
                self._head_started = True
                self._guard = self.loop.call_later(client_timeout, self._head_expired)
            super().data_received(data)
            if self.cycle is not cycle and self._head_started:
                self._cancel_guard()  # the head ended: the body is the app's to bound
                self._head_started = False

        def _cancel_guard(self) -> None:
            if self._guard is not None:
                self._guard.cancel()
                self._guard = None

        def _idle_expired(self) -> None:
            self._guard = None
            if not self.transport.is_closing():
                self.transport.close()

        def _head_expired(self) -> None:
            self._guard = None
            if self.transport.is_closing():
                return
            log.warning(
                "a request head from %s did not end within %g s: answered 408, connection "
                "closed (recorder record --client-timeout)",
                _address(self.client),
                client_timeout,
            )
            self.transport.write(_HEAD_TIMEOUT_REPLY)
            self.transport.close()

    GuardedProtocol.__name__ = GuardedProtocol.__qualname__ = f"Guarded{base.__name__}"
    return GuardedProtocol


def _address(client: tuple[str, int] | None) -> str:
    return f"{client[0]}:{client[1]}" if client else "a client"


def _server_class() -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, telling the proxy to end its open streams when it shuts down."""

        def __init__(self, config: uvicorn.Config, proxy: RecordingProxy) -> None:
            from recorder.servers import quiet_shutdown

            super().__init__(config)
            self.proxy = proxy
            quiet_shutdown(self)  # the streams open at Ctrl-C end without an ERROR line

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            self.proxy.stop_streams()
            await super().shutdown(sockets)

    return Server


def server_options(
    proxy: RecordingProxy,
    http: Literal["httptools", "h11"],
    loop: Literal["uvloop", "asyncio"],
    *,
    keep_alive: float = KEEP_ALIVE,
) -> dict[str, Any]:
    """uvicorn's options for the proxy (`serve`, and the tests that run it in a thread)."""
    return {
        "log_level": "warning",
        "access_log": False,
        "lifespan": "on",
        "server_header": False,  # the upstream's Server and Date headers are relayed
        "date_header": False,
        "proxy_headers": False,  # X-Forwarded-* are forwarded to the agent, not obeyed here
        "timeout_graceful_shutdown": 5,
        "http": guarded_protocol(http, client_timeout=proxy.client_timeout, keep_alive=keep_alive),
        # typed int, used as call_later's delay: a fraction of a second works
        "timeout_keep_alive": keep_alive,
        "loop": loop,
    }


def serve(
    proxy: RecordingProxy,
    *,
    host: str = "127.0.0.1",
    port: int = 41241,
    announce: Callable[[str], None] = print,
    stack: tuple[Literal["httptools", "h11"], Literal["uvloop", "asyncio"]] | None = None,
    keep_alive: float = KEEP_ALIVE,
) -> None:
    """Run the proxy under uvicorn until Ctrl-C (SIGINT) or SIGTERM. Replies go out first and
    the writer thread records them after (`recorder.record.proxy.recording`); at shutdown
    (`RecordingProxy.aclose`) it is given `proxy.drain_timeout` seconds to write what is
    pending, so every finished exchange is on disk when this returns, or counted in
    `proxy.not_recorded`. `stack` (http, loop) overrides `fast_server_options()`.
    `keep_alive`: seconds a client connection may stay idle (`guarded_protocol`; request
    heads and bodies get `proxy.client_timeout`)."""
    import uvicorn

    proxy.store.prepare()
    http, loop = stack or fast_server_options()
    _Server = _server_class()
    try:
        sock = listening_socket(host, port)
    except OSError as error:
        from recorder.errors import RecorderError
        from recorder.servers import listen_problem

        raise RecorderError(listen_problem(host, port, error)) from None
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    config = uvicorn.Config(proxy, **server_options(proxy, http, loop, keep_alive=keep_alive))
    where = f"http://{shown}:{bound_port}"
    announce(f"listening on {where}, forwarding to {proxy.upstream_url}")
    announce(f"writing transcripts to {proxy.store.out}/ (Ctrl-C stops)")
    # uvicorn re-raises the signal it stopped on once its shutdown is done: SIGTERM then
    # raises `_Terminated` here, as Ctrl-C raises KeyboardInterrupt, so that a SIGTERM ends
    # as orderly as a Ctrl-C (the summary below, the exit status)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminated)
    # the writer thread holds the GIL while it builds and renders an exchange: the event
    # loop, woken by a request meanwhile, gets it back within SWITCH_INTERVAL, not 5 ms
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(min(switch_interval, SWITCH_INTERVAL))
    # a proxy allocates a few hundred objects per request, nearly all freed by reference
    # counting: the cycle collector, run every 700 allocations by default and walking what
    # was there at startup, costs ~10% of the CPU per request (interleaved runs)
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        _Server(config, proxy).run(sockets=[sock])
    except (KeyboardInterrupt, _Terminated):
        pass  # the shutdown already happened
    finally:
        sock.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        sys.setswitchinterval(switch_interval)
        gc.set_threshold(*thresholds)
        gc.unfreeze()
    files = len(proxy.store.written)
    exchanges = f"{proxy.recorded} exchange{'' if proxy.recorded == 1 else 's'}"
    announce(f"stopped; {exchanges} recorded in {files} file{'' if files == 1 else 's'}")
