"""The stand-in's gRPC binding: a grpc.aio server beside its HTTP server, in the same event
loop, answering `lf.a2a.v1.A2AService` calls from the recorded gRPC exchanges.

A live call is a `LiveRequest` like any other (`GRPC /lf.a2a.v1.A2AService/<Method>`, its
metadata as headers, its message as ProtoJSON), matched by the same `Book` (the handed-out
ids, the client's own values); the recorded reply is rendered for the conversation and sent
as the call's: the initial metadata, the unary message or the stream's messages one by one
(held where `@during` says), the trailing metadata, and the recorded status (a failed call's
message and google.rpc.Status details, which the SDK's client reads the A2A error from). A
call that matches nothing ends NOT_FOUND, its message naming the closest recorded request, or
with a `--fallback` agent that serves gRPC is relayed to it (`recorder.serve.grpc_relay`).
A call that registers a push config has its recorded deliveries sent to the live config's
webhook once it is answered, as an HTTP request's (`recorder.serve.deliveries`).

`--faults` (`recorder.serve.faults`): a delay before the reply; an A2A error (its gRPC status
and google.rpc.Status details) or a status ending the call at once; a stream ended
UNAVAILABLE after N messages; a message N whose bytes are no protobuf.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from recorder.bindings import grpc as binding
from recorder.errors import RecorderError
from recorder.format.literals import headers_as_sent
from recorder.format.model import GRPC_METHOD, Response
from recorder.serve.app import PACE_LIMIT, StandIn
from recorder.serve.book import Found, NotFound
from recorder.serve.faults import (
    CUT,
    ERROR,
    MALFORMED,
    MALFORMED_MESSAGE,
    STATUS,
    Fault,
    grpc_error,
)
from recorder.serve.grpc_relay import GrpcRelay
from recorder.serve.match import LiveRequest
from recorder.serve.nomatch import no_match_message
from recorder.serve.replies import Renderer, pacing

__all__ = ["GrpcStandIn"]

# what grpcio writes itself: not sent again as recorded metadata
_OWN = frozenset({"content-type", "date", "server", "user-agent", "te", "content-length"})
_OPTIONS = (("grpc.so_reuseport", 0),)  # a port in use is an error, not a shared port

logger = logging.getLogger(__name__)


def _grpc() -> Any:
    try:
        import grpc
    except ImportError:
        raise RecorderError(binding.MISSING) from None
    return grpc


class GrpcStandIn:
    """The gRPC server of a `StandIn` (`start` in its serving loop, `stop` before it ends)."""

    def __init__(self, stand_in: StandIn) -> None:
        self.stand_in = stand_in
        self._server: Any = None
        fallback = stand_in.grpc_fallback
        self.relay = GrpcRelay(fallback) if fallback is not None else None

    async def start(self, host: str, port: int) -> str:
        """Listen on host:port (0: any free port); the address (`127.0.0.1:PORT`), which the
        stand-in's cards then list as their GRPC interface. RecorderError when it cannot."""
        grpc = _grpc()
        handlers = {}
        for name in binding.METHODS:
            if binding.is_server_streaming(name):
                handlers[name] = grpc.unary_stream_rpc_method_handler(self._streaming(name))
            else:
                handlers[name] = grpc.unary_unary_rpc_method_handler(self._unary(name))
        server = grpc.aio.server(options=_OPTIONS)
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(binding.SERVICE, handlers),)
        )
        shown = f"[{host}]" if ":" in host else host
        try:
            bound = server.add_insecure_port(f"{shown}:{port}")
        except RuntimeError as exc:
            raise RecorderError(f"cannot listen for gRPC on {shown}:{port}: {exc}") from None
        if not bound:
            raise RecorderError(f"cannot listen for gRPC on {shown}:{port}: the port is in use")
        await server.start()
        self._server = server
        loopback = host in ("", "0.0.0.0", "::", "localhost", "127.0.0.1", "::1")
        address = f"{'127.0.0.1' if loopback else shown}:{bound}"
        self.stand_in.grpc_address = address
        return address

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(0)
            self._server = None
        if self.relay is not None:
            await self.relay.aclose()

    # ------------------------------------------------------------------ calls

    async def _take(
        self, name: str, data: bytes, context: Any
    ) -> tuple[Found, Renderer, LiveRequest, Fault | None] | str | GrpcRelay:
        """The recorded exchange that answers the call, with its renderer, the live call
        (a push config it registers kept for the deliveries: `Deliveries.registered`) and the
        fault that spoils its reply; or the no-match message; or the relay to the fallback
        agent (a call that matches nothing). A fault that ends the call ends it here."""
        try:
            body = binding.to_json(binding.message_type(name).FromString(data))
        except Exception as exc:  # (protobuf's DecodeError): a bad message, not a crash
            return f"GRPC {binding.target_of(name)}: not a {name} request message: {exc}"
        headers = binding.metadata_headers(context.invocation_metadata() or ())
        live = LiveRequest(GRPC_METHOD, binding.target_of(name), list(headers), body)
        fault, place = await self.stand_in.fault_for(live)
        if fault is not None and fault.kind in (ERROR, STATUS):
            grpc = _grpc()
            code, message, details = grpc_error(fault)
            trailing = () if details is None else ((binding.STATUS_DETAILS_BIN, details),)
            await context.abort(grpc.StatusCode[code], message, trailing_metadata=trailing)
        found = self.stand_in.take(live)
        if isinstance(found, NotFound):
            if self.relay is not None:
                self.stand_in.relayed += 1
                message = no_match_message(live, found)
                logger.info("%s; relayed to %s", message, self.relay.address)
                return self.relay
            return self.stand_in.missed(live, found)
        if fault is not None and self.stand_in.faults is not None:
            self.stand_in.faults.spoiled(place, found.step.where)
        self.stand_in.deliveries.registered(found, live)
        renderer = Renderer(
            self.stand_in.pairing,
            found.step,
            found.branch,
            None,
            None,
            grpc=self.stand_in.grpc_address,
        )
        return found, renderer, live, fault

    def _unary(self, name: str) -> Any:
        grpc = _grpc()

        async def call(data: bytes, context: Any) -> bytes:
            taken = await self._take(name, data, context)
            if isinstance(taken, GrpcRelay):
                return await taken.unary(grpc, binding.target_of(name), data, context)
            if isinstance(taken, str):
                await context.abort(grpc.StatusCode.NOT_FOUND, taken)
                return b""  # (abort raises)
            found, renderer, live, fault = taken
            response = _trailers_as_sent(found.step.exchange.response)
            await _initial(context, renderer)
            if not await self.stand_in.hold(found, 0):
                await context.abort(grpc.StatusCode.CANCELLED, "the stand-in is stopping")
            if fault is not None and fault.kind in (CUT, MALFORMED):
                self.stand_in.book.release(found)  # (the client cannot read it: a retry can)
            if fault is not None and fault.kind == CUT:
                await context.abort(grpc.StatusCode.UNAVAILABLE, _cut_message(fault))
            if fault is not None and fault.kind == MALFORMED:
                return MALFORMED_MESSAGE
            # (the push deliveries that follow it go out in the background: as an agent's,
            # they may reach the webhook before the client has this reply)
            self.stand_in.deliveries.answered(found, live, None)
            if response.status != 0:
                await _end(grpc, context, response, renderer)
            reply = binding.to_message(name, renderer.body(), reply=True)
            context.set_trailing_metadata(_trailing(response))
            data_out: bytes = reply.SerializeToString()
            return data_out

        return call

    def _streaming(self, name: str) -> Any:
        grpc = _grpc()

        async def call(data: bytes, context: Any) -> AsyncIterator[bytes]:
            taken = await self._take(name, data, context)
            if isinstance(taken, GrpcRelay):
                async for message in taken.stream(grpc, binding.target_of(name), data, context):
                    yield message
                return
            if isinstance(taken, str):
                await context.abort(grpc.StatusCode.NOT_FOUND, taken)
                return
            found, renderer, live, fault = taken
            response = _trailers_as_sent(found.step.exchange.response)
            kind = fault.kind if fault is not None else None
            frames = fault.frames if fault is not None else 0
            await _initial(context, renderer)
            if not await self.stand_in.hold(found, 0):
                return
            sent = 0
            # --pace: the messages spaced as their timestamps say, as the HTTP bindings' frames
            pace = self.stand_in.pace
            waits = pacing(found.step, self.stand_in.pairing, limit=PACE_LIMIT) if pace else None
            for number in range(len(response.events or ())):
                text = renderer.frame_data(number)
                if text is None:
                    continue  # (a comment-only frame: no message)
                if kind == CUT and sent == frames:
                    break
                if waits is not None and waits[number] > 0:
                    await asyncio.sleep(waits[number])
                if kind == MALFORMED and sent + 1 == frames:
                    yield MALFORMED_MESSAGE
                else:
                    yield binding.to_message(name, text, reply=True).SerializeToString()
                sent += 1
                if not await self.stand_in.hold(found, sent):
                    return
            if fault is not None and kind == CUT:
                await context.abort(grpc.StatusCode.UNAVAILABLE, _cut_message(fault))
            self.stand_in.deliveries.answered(found, live, None)  # (its stream sent)
            if response.status != 0:
                await _end(grpc, context, response, renderer)
            context.set_trailing_metadata(_trailing(response))

        return call


def _cut_message(fault: Fault) -> str:
    return f"recorder serve: injected {fault.describe()}"


async def _initial(context: Any, renderer: Renderer) -> None:
    metadata = [
        (key, value)
        for key, value in binding.metadata_of(renderer.headers())
        if key not in _OWN and not key.startswith(("grpc-", ":"))
    ]
    if metadata:
        await context.send_initial_metadata(metadata)


def _trailers_as_sent(response: Response) -> Response:
    """The recorded reply with its trailers as the agent sent them (a literal `{{NAME}}`,
    escaped in the transcript: `recorder.format.literals`), a stream's failure message too."""
    trailers = headers_as_sent(response.trailers)
    if trailers is response.trailers:
        return response
    return dataclasses.replace(response, trailers=trailers)


def _trailing(response: Response) -> list[tuple[str, str | bytes]]:
    return [
        (key, value)
        for key, value in binding.reply_trailing(response)
        if not (key.startswith("grpc-") and key != binding.STATUS_DETAILS_BIN)
    ]


async def _end(grpc: Any, context: Any, response: Response, renderer: Renderer) -> None:
    """End the call with the recorded status: its message and details rendered for the
    conversation (the ids in them are the ones handed out)."""
    status = binding.call_status(response)
    if response.events is None and response.body:
        try:
            rendered = json.loads(renderer.body())
        except ValueError:
            rendered = None
        if isinstance(rendered, dict):
            status = {**rendered, "code": response.status}
    trailing = [(k, v) for k, v in _trailing(response) if k != binding.STATUS_DETAILS_BIN]
    if status.get("details"):
        trailing.append((binding.STATUS_DETAILS_BIN, binding.status_details_bin(status)))
    code = next(c for c in grpc.StatusCode if c.value[0] == response.status)
    await context.abort(code, str(status.get("message", "")), trailing_metadata=tuple(trailing))
