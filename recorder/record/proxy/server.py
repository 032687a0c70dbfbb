"""Serving the proxy: uvicorn on a listening socket, and the listen address.

Speed (bench/bench_proxy.py measures it): uvicorn runs with httptools and uvloop when they are
installed (`fast_server_options`), on a socket whose connections get TCP_NODELAY
(`listening_socket`). `serve` ends open streams as soon as Ctrl-C comes
(`RecordingProxy.stop_streams`), so that an endless stream does not hold the shutdown.
"""

from __future__ import annotations

import importlib.util
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from recorder.record.proxy import RecordingProxy


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
