"""`--fallback URL` for the gRPC binding: a call that matches no recorded exchange goes to the
fallback agent's gRPC interface (or to the recorder's gRPC listener in front of it, with
`-o DIR`), and what the agent answers comes back to the client as it came.

The call is relayed as raw bytes, message by message: the client's metadata (less what grpcio
writes itself), its deadline, the agent's initial metadata, its reply or each message of its
stream as it arrives, its trailing metadata and status (a failed call's message and
`grpc-status-details-bin`, from which the SDK's client reads the A2A error). A client that
goes away cancels the relayed call. The HTTP bindings' relay is `recorder.serve.fallback`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

__all__ = ["GrpcRelay"]

# what grpcio writes itself on the relayed call: not sent again
_OWN = frozenset(
    {"content-type", "user-agent", "te", "content-length", "grpc-timeout", "grpc-accept-encoding"}
)


def _metadata(context: Any) -> list[tuple[str, str | bytes]]:
    return [
        (str(key), value)
        for key, value in (context.invocation_metadata() or ())
        if not str(key).startswith(":") and str(key).lower() not in _OWN
    ]


def _timeout(context: Any) -> float | None:
    remaining = context.time_remaining()
    return None if remaining is None or remaining > 1e8 else max(0.0, float(remaining))


class GrpcRelay:
    """Relays calls to the agent at `address` (`host:port`; one channel, opened on the serving
    event loop at the first relay)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self._channel: Any = None

    def _open(self, grpc: Any) -> Any:
        if self._channel is None:
            self._channel = grpc.aio.insecure_channel(self.address)
        return self._channel

    async def unary(self, grpc: Any, path: str, data: bytes, context: Any) -> bytes:
        """The agent's reply to the unary call `path` (its status the call's)."""
        call = self._open(grpc).unary_unary(path)(
            data, metadata=_metadata(context), timeout=_timeout(context)
        )
        try:
            await context.send_initial_metadata(await call.initial_metadata() or ())
            reply: bytes = await call
        except grpc.aio.AioRpcError as error:
            await _end(context, error)
            return b""  # (abort raises)
        finally:
            call.cancel()  # (done: nothing; else the client went away)
        context.set_trailing_metadata(await call.trailing_metadata() or ())
        return reply

    async def stream(self, grpc: Any, path: str, data: bytes, context: Any) -> AsyncIterator[bytes]:
        """The agent's messages for the server-streaming call `path`, each as it arrives."""
        call = self._open(grpc).unary_stream(path)(
            data, metadata=_metadata(context), timeout=_timeout(context)
        )
        try:
            await context.send_initial_metadata(await call.initial_metadata() or ())
            async for message in call:
                yield message
        except grpc.aio.AioRpcError as error:
            await _end(context, error)
            return
        finally:
            call.cancel()
        context.set_trailing_metadata(await call.trailing_metadata() or ())

    async def aclose(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None


async def _end(context: Any, error: Any) -> None:
    """End the client's call as the agent ended the relayed one."""
    trailing = tuple(error.trailing_metadata() or ())
    await context.abort(error.code(), error.details() or "", trailing_metadata=trailing)
