"""Run the stand-in under uvicorn on a loopback socket bound first, until Ctrl-C."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recorder.errors import RecorderError
from recorder.serve.app import StandIn
from recorder.servers import bind_socket, bounded_options, listen_problem, quiet_shutdown

__all__ = ["serve", "server_options"]


def server_options() -> dict[str, Any]:
    """uvicorn's options for the stand-in (the CLI, the pytest fixture, the benchmark)."""
    return {
        "log_level": "warning",
        "access_log": False,
        "lifespan": "off",
        "server_header": False,
        "date_header": False,
        # streams held for @during end at once at Ctrl-C; no shutdown waits on them
        "timeout_graceful_shutdown": 1,
        # a connection silent before a request, or a request head that never ends, is closed
        # (the proxy's bounds: uvicorn alone held them open for good)
        **bounded_options(),
    }


def serve(
    stand_in: StandIn,
    *,
    host: str = "127.0.0.1",
    port: int = 41242,
    announce: Callable[[str], None] = print,
    grpc_listen: tuple[str, int] | None = None,
) -> None:
    """Serve `stand_in` on host:port until Ctrl-C (SIGINT) or SIGTERM, and with `grpc_listen`
    (host, port; 0: any free one) its gRPC binding too, in the same event loop
    (`recorder.serve.grpc_server`). Raises RecorderError when an address cannot be listened
    on."""
    import uvicorn

    try:
        sock = bind_socket(host, port)
    except (OSError, OverflowError) as error:
        raise RecorderError(listen_problem(host, port, error)) from None
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    announce(
        f"serving {stand_in.exchanges} exchanges of {stand_in.transcripts} transcripts "
        f"on http://{shown}:{bound_port} (Ctrl-C stops)"
    )

    from recorder.serve.grpc_server import GrpcStandIn

    grpc_side = GrpcStandIn(stand_in)
    failed: list[RecorderError] = []

    class _Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            if grpc_listen is not None:
                try:
                    address = await grpc_side.start(*grpc_listen)
                except RecorderError as error:
                    failed.append(error)
                    self.should_exit = True
                    return
                announce(f"serving the gRPC binding on {address}")
            await super().startup(sockets)

        async def shutdown(self, sockets: Any = None) -> None:
            stand_in.stop_streams()  # replies held for @during end now
            await grpc_side.stop()
            await super().shutdown(sockets)
            await stand_in.aclose()  # the fallback's connections

    server = _Server(uvicorn.Config(stand_in, **server_options()))
    quiet_shutdown(server)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn re-raises the Ctrl-C it handled: the shutdown already happened
    finally:
        sock.close()
    if failed:
        raise failed[0]
    relayed = f", {stand_in.relayed} relayed" if stand_in.fallback is not None else ""
    announce(
        f"stopped; {stand_in.matched} requests answered, {stand_in.unmatched} unmatched{relayed}"
    )
