"""Serving the proxy: its own HTTP/1.1 server on a listening socket, and the listen address.

`serve` (what `recorder record` runs) and `ProxyServer` (the same in a thread: the planner,
the tests) run `RecordingProxy` under `recorder.record.transport.http1.Http1Server` on uvloop
(asyncio's own loop where uvloop is missing), on a socket whose connections get TCP_NODELAY
(`recorder.record.transport.http1.listening_socket`, which the downstreams' listeners get
too). Not uvicorn: its general HTTP/1.1 protocol cost a sixth of the event
loop's time per proxied request (bench/bench_proxy.py measures the difference).

The shutdown (Ctrl-C or SIGTERM, alike): stop accepting; end the open streams at once
(`RecordingProxy.stop_streams`: an endless stream must not hold the shutdown); close idle
connections; give the requests in flight `GRACE` seconds, then cancel them; then
`RecordingProxy.aclose` writes the pending recordings (for at most `proxy.drain_timeout`
seconds). A second signal cuts the waiting short (those still pending are counted as not
recorded).

Slow clients (`http1`): a connection that sends nothing for `keep_alive` seconds, before its
first request or between two, is closed; a request head not ended `client_timeout` seconds
after its first byte gets a `408 Request Timeout` and the close. The body is the app's:
`read_body` answers 408 when it has not come `client_timeout` seconds after the head.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import TYPE_CHECKING, Any

from recorder.record.transport.http1 import Http1Server
from recorder.record.transport.http1 import listening_socket as listening_socket  # (moved)

if TYPE_CHECKING:
    from recorder.record.proxy import RecordingProxy

log = logging.getLogger(__name__)

# seconds a connection may stay idle: before its first request, and between two requests
KEEP_ALIVE = 5.0
# seconds a thread holding the GIL keeps it once another asks (Python's default: 0.005)
SWITCH_INTERVAL = 0.0005
# the cycle collector's thresholds while the proxy serves (Python's default: 700, 10, 10)
GC_THRESHOLDS = (10000, 10, 10)
# seconds the requests in flight get to finish once the shutdown began
GRACE = 5.0


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


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop when installed (about half the CPU per request of asyncio's)."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency but on Windows
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _run(main: Coroutine[Any, Any, None]) -> None:
    with asyncio.Runner(loop_factory=_new_loop) as runner:
        runner.run(main)


async def _serve_until(
    proxy: RecordingProxy,
    sock: socket.socket,
    stop: asyncio.Event,
    force: asyncio.Event,
    *,
    keep_alive: float,
    started: Callable[[], None] = lambda: None,
) -> None:
    """Serve `proxy` on `sock` until `stop` is set, then shut down (the module's docstring);
    `force` set meanwhile cuts the waits short."""
    server = Http1Server(proxy, client_timeout=proxy.client_timeout, keep_alive=keep_alive)
    await server.start(sock)
    # the agent's own calls, beside (`recorder.record.proxy.downstream`): a server each
    downstreams = []
    for listener in proxy.downstreams:
        beside = Http1Server(
            listener.app, client_timeout=proxy.client_timeout, keep_alive=keep_alive
        )
        await beside.start(listener.sock)
        downstreams.append(beside)
    # (where a push config registered over gRPC is pointed: the receiver on this listener)
    proxy.push.listening(*sock.getsockname()[:2])
    grpc = proxy.grpc
    if grpc is not None:  # A2A's gRPC binding, beside (`recorder.record.grpc_proxy`)
        try:
            await grpc.start()
        except BaseException:
            server.close()
            raise
    started()
    try:
        await stop.wait()
    finally:
        server.close()
        for beside in downstreams:
            beside.close()
        proxy.stop_streams()
        if grpc is not None:
            await grpc.stop()
        await server.shutdown(GRACE, force)
        for beside in downstreams:
            await beside.shutdown(GRACE, force)
        if force.is_set():
            proxy.drain_timeout = 0.0
        closing = asyncio.ensure_future(proxy.aclose())
        forced = asyncio.ensure_future(force.wait())
        await asyncio.wait({closing, forced}, return_when=asyncio.FIRST_COMPLETED)
        forced.cancel()
        if not closing.done():
            # a second Ctrl-C while the recordings drain: what is still pending is counted
            # as not recorded (and logged), and the files are left as they are now
            closing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await closing
            await proxy.writer.drain(0.0)
        else:
            closing.result()


def serve(
    proxy: RecordingProxy,
    *,
    host: str = "127.0.0.1",
    port: int = 41241,
    announce: Callable[[str], None] = print,
    keep_alive: float = KEEP_ALIVE,
) -> None:
    """Run the proxy until Ctrl-C (SIGINT) or SIGTERM. Replies go out first and the writer
    thread records them after (`recorder.record.proxy.recording`); at shutdown
    (`RecordingProxy.aclose`) it is given `proxy.drain_timeout` seconds to write what is
    pending, so every finished exchange is on disk when this returns, or counted in
    `proxy.not_recorded`. `keep_alive`: seconds a client connection may stay idle (request
    heads and bodies get `proxy.client_timeout`)."""
    proxy.store.prepare()
    try:
        sock = listening_socket(host, port)
    except OSError as error:
        from recorder.errors import RecorderError
        from recorder.servers import listen_problem

        raise RecorderError(listen_problem(host, port, error)) from None
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    where = f"http://{shown}:{bound_port}"
    announce(f"listening on {where}, forwarding to {proxy.upstream_url}")
    for listener in proxy.downstreams:
        announce(f"downstream {listener.app.name}: {listener.url} -> {listener.app.url}")
    announce(f"writing transcripts to {proxy.store.out}/ (Ctrl-C stops)")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop, force = asyncio.Event(), asyncio.Event()

        def stopping() -> None:
            (force if stop.is_set() else stop).set()

        # SIGTERM ends as orderly as Ctrl-C: both start the shutdown, a second one forces it
        handled: list[signal.Signals] = []
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(signum, stopping)
                    handled.append(signum)

        def started() -> None:
            grpc = proxy.grpc
            if grpc is not None:  # (its port is bound by now)
                target = grpc.upstream or "the GRPC interface of the first card relayed"
                announce(f"gRPC listening on {grpc.address}, forwarding to {target}")

        try:
            await _serve_until(proxy, sock, stop, force, keep_alive=keep_alive, started=started)
        finally:
            for signum in handled:
                loop.remove_signal_handler(signum)

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
        _run(main())
    except KeyboardInterrupt:
        pass  # a Ctrl-C before the signal handlers were in place, or after
    finally:
        sock.close()
        for listener in proxy.downstreams:
            listener.sock.close()
        sys.setswitchinterval(switch_interval)
        gc.set_threshold(*thresholds)
        gc.unfreeze()
    announce(f"stopped; {summary(proxy)}")


def summary(proxy: RecordingProxy) -> str:
    """`3 exchanges and 12 calls recorded in 2 files (1 call ambiguous)`: what a recording
    wrote (the calls only when the agent's calls were recorded)."""

    def count(number: int, noun: str) -> str:
        return f"{number} {noun}{'' if number == 1 else 's'}"

    files = len(proxy.store.written)
    what = count(proxy.recorded, "exchange")
    if proxy.downstreams:
        what += f" and {count(proxy.recorded_calls, 'call')}"
    line = f"{what} recorded in {count(files, 'file')}"
    notes = []
    if proxy.ambiguous_calls:
        notes.append(f"{count(proxy.ambiguous_calls, 'call')} ambiguous")
    if proxy.unrecorded_calls:
        notes.append(f"{count(proxy.unrecorded_calls, 'call')} not recorded")
    return f"{line} ({', '.join(notes)})" if notes else line


class ProxyServer:
    """`with ProxyServer(proxy) as server: httpx.get(server.url + "/")`: the proxy served as
    `serve` serves it, in a thread with its own event loop, on a loopback socket bound first
    (port 0: a free one); leaving the block shuts it down as Ctrl-C does (the recordings
    written by then). For the planner and the tests."""

    def __init__(
        self,
        proxy: RecordingProxy,
        *,
        sock: socket.socket | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        keep_alive: float = KEEP_ALIVE,
        startup_timeout: float = 10.0,
    ) -> None:
        self.proxy = proxy
        self.sock = sock if sock is not None else listening_socket(host, port)
        self.host, self.port = self.sock.getsockname()[:2]
        self.keep_alive = keep_alive
        self._startup_timeout = startup_timeout
        self._started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="recorder-proxy", daemon=True)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _main(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = stop = asyncio.Event()
            self.proxy.store.prepare()
            await _serve_until(
                self.proxy,
                self.sock,
                stop,
                asyncio.Event(),
                keep_alive=self.keep_alive,
                started=self._started.set,
            )

        try:
            _run(main())
        except BaseException as exc:  # reported by `start`, or lost with the thread
            self._error = exc

    def start(self) -> ProxyServer:
        self._thread.start()
        deadline = time.monotonic() + self._startup_timeout
        while not self._started.wait(0.01):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the proxy on {self.url} did not start: {self._error!r}")
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Shut down as Ctrl-C does; returns once the recordings are written (or counted)."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and self._thread.is_alive():
            with contextlib.suppress(RuntimeError):  # (the loop has just ended)
                loop.call_soon_threadsafe(stop.set)
        if self._thread.is_alive():
            self._thread.join(timeout)
        self.sock.close()
        for listener in self.proxy.downstreams:
            listener.sock.close()

    def __enter__(self) -> ProxyServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
