"""The kit's gRPC binding: the SDK's `GrpcHandler` on the kit's request handler, served by
grpc.aio in the HTTP server's own event loop (one set of tasks, whichever binding a client
uses), started and stopped with the app's lifespan (`recorder.kit.app`).

GetExtendedAgentCard needs `authorization: Bearer <token>` metadata here too, as on the
HTTP bindings; without it, or with a wrong token, the call ends UNAUTHENTICATED with a
google.rpc.Status whose ErrorInfo says why.
"""

from __future__ import annotations

import hmac
from typing import Any

from recorder.bindings.grpc import MISSING
from recorder.errors import RecorderError

__all__ = ["GrpcKit", "card_host", "start_grpc"]

_LOOPBACK = ("127.0.0.1", "localhost", "0.0.0.0", "::", "::1", "")
# the gRPC server's own options: no SO_REUSEPORT (on by default in grpcio), so that a port in
# use is an error and not a second server silently sharing it
_OPTIONS = (("grpc.so_reuseport", 0),)


def card_host(host: str) -> str:
    """The host the card's gRPC interface names for a kit bound to `host`: a loopback or
    wildcard bind as 127.0.0.1 (what a gRPC channel dials without a name lookup)."""
    if host in _LOOPBACK:
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def grpc_available() -> bool:
    """Whether grpcio is installed (the grpc extra)."""
    try:
        import grpc  # noqa: F401
    except ImportError:
        return False
    return True


class GrpcKit:
    """A started gRPC server: `.address` (`127.0.0.1:PORT`, what the card says), `.port`."""

    def __init__(self, server: Any, address: str, port: int) -> None:
        self._server = server
        self.address = address
        self.port = port

    async def stop(self) -> None:
        """Stop at once: the calls still open (a stream) end CANCELLED, as a Ctrl-C asks."""
        await self._server.stop(0)


async def start_grpc(handler: Any, host: str, port: int, *, token: str) -> GrpcKit:
    """Serve the A2A gRPC service for `handler` (the kit's DefaultRequestHandler) on
    host:port (0: a free port), in the running event loop."""
    try:
        import grpc
        from a2a.server.request_handlers import GrpcHandler
        from a2a.types import a2a_pb2_grpc
    except ImportError:
        raise RecorderError(MISSING) from None

    class KitGrpcHandler(GrpcHandler):
        """The SDK's handler, with the kit's bearer token on GetExtendedAgentCard."""

        async def GetExtendedAgentCard(self, request: Any, context: Any) -> Any:
            problem = _token_problem(context.invocation_metadata() or (), token)
            if problem is not None:
                await _abort_unauthenticated(context, problem)
            return await super().GetExtendedAgentCard(request, context)

    server = grpc.aio.server(options=_OPTIONS)
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(  # type: ignore[no-untyped-call]
        KitGrpcHandler(handler), server
    )
    shown = f"[{host}]" if ":" in host else host
    try:
        bound = server.add_insecure_port(f"{shown}:{port}")
    except RuntimeError:
        raise RecorderError(f"cannot listen on {shown}:{port} (gRPC)") from None
    await server.start()
    return GrpcKit(server, f"{card_host(host)}:{bound}", bound)


def _token_problem(metadata: Any, token: str) -> str | None:
    """None when the call carries the right bearer token, else what is wrong."""
    value = None
    for key, item in metadata:
        if key.lower() == "authorization":
            value = item if isinstance(item, str) else item.decode("latin-1")
            break
    if value is None:
        return (
            "GetExtendedAgentCard needs authentication: "
            "send the metadata 'authorization: Bearer <token>'"
        )
    scheme, _, credentials = value.partition(" ")
    given = f"Bearer {credentials.strip()}" if scheme.lower() == "bearer" else value
    if hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        return None
    return "GetExtendedAgentCard: the bearer token is not valid"


async def _abort_unauthenticated(context: Any, message: str) -> None:
    import grpc
    from google.protobuf import any_pb2
    from google.rpc import error_details_pb2, status_pb2

    status = status_pb2.Status(code=grpc.StatusCode.UNAUTHENTICATED.value[0], message=message)
    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.ErrorInfo(reason="UNAUTHENTICATED", domain="a2a-protocol.org"))
    status.details.append(detail)
    context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
    await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)
