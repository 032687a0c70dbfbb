"""Sending a recorded gRPC call to the agent and reading its live reply (`recorder.replay.send`
for the HTTP bindings).

The call goes to the agent's gRPC address (`host:port`: `--grpc-agent`, else the `GRPC`
interface its card lists, else the started kit's) over one grpcio channel per address, shared
by the workers (a channel is thread-safe). The request message is the recorded ProtoJSON body
(after carry-forward and placeholders) made into the method's message type; the recorded
metadata is sent, but for what grpcio writes itself (content-type, user-agent, te, grpc-*,
host). `--timeout` is the call's deadline.

The live reply is the same `LiveReply` the other bindings give, its model `Response` built as
the recorder builds a recorded one (`recorder.bindings.grpc.response_of`): the status code
(`GRPC 5 NOT_FOUND`), the initial metadata, the unary reply's ProtoJSON or the failed call's
google.rpc.Status as the body, a server stream's messages as events (read message by
message), the trailing metadata as trailers. So comparison, `@during` and `--update` see a
gRPC reply as they see any other.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import httpx

from recorder.bindings import grpc as binding
from recorder.errors import NoReplyError, RecorderError, UpstreamError
from recorder.format.model import Request, Transcript
from recorder.replay.verdict.live import LiveReply

__all__ = [
    "GrpcChannels",
    "GrpcTarget",
    "card_grpc_address",
    "grpc_address",
    "grpc_target",
    "has_grpc",
    "send_call",
    "send_grpc",
]

# what grpcio writes itself, or refuses as metadata
_NOT_SENT = frozenset({"host", "content-type", "user-agent", "te", "content-length"})


def _grpc() -> Any:
    try:
        import grpc
    except ImportError:
        raise RecorderError(binding.MISSING) from None
    return grpc


class GrpcChannels:
    """One grpcio channel per agent address, made on first use; `close()` ends them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._channels: dict[str, Any] = {}

    def channel(self, address: str) -> Any:
        with self._lock:
            found = self._channels.get(address)
            if found is None:
                found = self._channels[address] = _grpc().insecure_channel(address)
            return found

    def close(self) -> None:
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            channel.close()


def card_grpc_address(base_url: str, timeout: float) -> str | None:
    """The `host:port` of the `GRPC` interface the agent card at `base_url` lists (the
    public card at /.well-known/agent-card.json), or None (no card, no such interface)."""
    try:
        reply = httpx.get(
            f"{base_url}/.well-known/agent-card.json",
            headers={"A2A-Version": "1.0"},
            timeout=timeout,
        )
        card = reply.json() if reply.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    if not isinstance(card, dict):
        return None
    interfaces = card.get("supportedInterfaces") or card.get("additionalInterfaces") or []
    for interface in interfaces if isinstance(interfaces, list) else []:
        if isinstance(interface, dict) and interface.get("protocolBinding") == binding.BINDING:
            url = interface.get("url")
            if isinstance(url, str) and url:
                return url.removeprefix("grpc://").rstrip("/")
    return None


def _json_text(body: bytes) -> bool:
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


def _same_bytes(data: bytes) -> bytes:
    return data


def send_call(
    channels: GrpcChannels,
    address: str,
    request: Request,
    *,
    timeout: float,
    max_events: int | None = None,
    on_frames: Callable[[int], None] | None = None,
    on_chunk: Callable[[bytes], None] | None = None,
    on_sent: Callable[[], None] | None = None,
) -> LiveReply:
    """Send the gRPC call `request` to the agent at `address`; its reply as it arrived.

    As `recorder.replay.send.send_raw`: `max_events` stops reading a server stream after that
    many messages (the reply is `cut`); 0 for a unary call (its recording's client left before
    the reply): no reply by `timeout` is a `cut` reply, not NoReplyError. `on_frames(n)` is
    told the messages so far (0 when the initial metadata arrives), `on_chunk` each message as
    an SSE frame's bytes (what `@during` decodes), `on_sent()` once the call has started.
    Raises `UpstreamError` when the agent cannot be reached and `NoReplyError` when the call
    does not end within `timeout`."""
    grpc = _grpc()
    name = binding.method_of(request.target)
    if name is None:
        raise NoReplyError(f"cannot send GRPC {request.target}: not a method of {binding.SERVICE}")
    message: Any
    try:
        message = binding.to_message(name, request.body or b"{}")
        serialize = type(message).SerializeToString
    except ValueError as exc:  # (a UnicodeDecodeError too)
        if _json_text(request.body):
            raise NoReplyError(f"cannot send GRPC {request.target}: {exc}") from None
        # bytes that are no message, as the recording's client sent them (the recorder kept
        # them so): sent as they are, for the agent to fail the call again
        message, serialize = request.body, _same_bytes
    metadata = [
        (key, value)
        for key, value in binding.metadata_of(request.headers)
        if key not in _NOT_SENT and not key.startswith(("grpc-", ":"))
    ]
    reply_type = binding.message_type(name, reply=True)
    channel = channels.channel(address)
    streaming = binding.is_server_streaming(name)
    make = channel.unary_stream if streaming else channel.unary_unary
    stub = make(
        request.target,
        request_serializer=serialize,
        response_deserializer=reply_type.FromString,
    )
    started = time.monotonic()
    messages: list[Any] = []
    reply: Any = None
    cut = False
    call: Any
    try:
        if streaming:
            call = stub(message, metadata=metadata, timeout=timeout)
            if on_sent is not None:
                on_sent()
            call.initial_metadata()
            if on_frames is not None:
                on_frames(0)
            if max_events is not None and max_events <= 0:
                cut = True
            else:
                for item in call:
                    messages.append(item)
                    if on_chunk is not None:
                        on_chunk(b"data: " + binding.to_json(item) + b"\n\n")
                    if on_frames is not None:
                        on_frames(len(messages))
                    if max_events is not None and len(messages) >= max_events:
                        cut = True
                        break
            if cut:
                call.cancel()
        else:
            future = stub.future(message, metadata=metadata, timeout=timeout)
            if on_sent is not None:
                on_sent()
            reply = future.result()
            call = future
    except grpc.RpcError as exc:
        call = exc
        if not streaming and max_events == 0 and exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
            # the recording's client left before the reply, and the agent has not replied by
            # the player's deadline either: that is the call as recorded, cut where it was
            cut = True
    return _live(grpc, call, address, request, started, timeout, messages, reply, cut, streaming)


def _live(
    grpc: Any,
    call: Any,
    address: str,
    request: Request,
    started: float,
    timeout: float,
    messages: list[Any],
    reply: Any,
    cut: bool,
    streaming: bool,
) -> LiveReply:
    """The LiveReply of a finished (or, `cut`, canceled) call."""
    code = grpc.StatusCode.OK if cut else call.code()
    details = "" if cut else call.details() or ""
    if code == grpc.StatusCode.DEADLINE_EXCEEDED and time.monotonic() - started >= timeout:
        raise NoReplyError(
            f"the agent at {address} did not end GRPC {request.target} within {timeout:g} s"
        )
    initial = call.initial_metadata() or ()
    if code == grpc.StatusCode.UNAVAILABLE and not initial and not messages:
        raise UpstreamError(f"cannot reach the agent at {address} (gRPC): {details or code.name}")
    response = binding.response_of(
        code.value[0],
        message=details,
        initial=initial,
        trailing=() if cut else call.trailing_metadata() or (),
        reply=reply,
        messages=messages if streaming else None,
    )
    return LiveReply.of(response, cut=cut)


class GrpcTarget:
    """Where a run's gRPC calls go: `address` (`--grpc-agent`), else the one `find()` gives
    (the started kit's, or the card's), asked once, on the first gRPC call; the channels."""

    def __init__(self, address: str | None, find: Callable[[], str | None]) -> None:
        self._address = address
        self._find: Callable[[], str | None] | None = find if address is None else None
        self._lock = threading.Lock()
        self.channels = GrpcChannels()

    def address(self) -> str:
        with self._lock:
            if self._find is not None:
                self._address, self._find = self._find(), None
            if not self._address:
                raise UpstreamError(
                    "no gRPC address for the agent: its card lists no GRPC interface;"
                    " give one with --grpc-agent HOST:PORT"
                )
            return self._address


def send_grpc(
    target: GrpcTarget | None, request: Request, *, timeout: float, **options: Any
) -> LiveReply:
    """`send_call` to the target's address (see `GrpcTarget`)."""
    if target is None:
        raise UpstreamError("no gRPC address for the agent: give one with --grpc-agent HOST:PORT")
    return send_call(target.channels, target.address(), request, timeout=timeout, **options)


def grpc_address(value: str) -> str:
    """`--grpc-agent`: `HOST:PORT` (a `grpc://` prefix allowed); ValueError naming the
    problem."""
    text = value.removeprefix("grpc://").rstrip("/")
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT such as 127.0.0.1:41243, got {value!r}")
    return text


def has_grpc(transcripts: Iterable[Transcript]) -> bool:
    """Whether a transcript holds a gRPC call (a started agent then serves gRPC too)."""
    return any(exchange.request.is_grpc for t in transcripts for exchange in t.exchanges)


def grpc_target(agent: str | None, base_url: str, handle: object, timeout: float) -> GrpcTarget:
    """The run's `GrpcTarget`: `agent` (`--grpc-agent`), else the started agent's
    `grpc_address` (the kit's), else the GRPC interface of the card at `base_url`."""
    started = getattr(handle, "grpc_address", None) if handle is not None else None
    if agent is not None or started:
        return GrpcTarget(agent or started, lambda: None)
    return GrpcTarget(None, lambda: card_grpc_address(base_url, min(timeout, 10.0)))
