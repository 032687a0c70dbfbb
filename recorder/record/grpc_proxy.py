"""The recorder's gRPC listener: A2A's gRPC binding through the recorder (issue 26).

    client ──gRPC──▶ GrpcListener (grpc.aio, raw bytes) ──gRPC──▶ the agent's GRPC interface
                          │
                          └─▶ Recording (the HTTP proxy's): the same store, files, lineage

Every call is forwarded as it comes, message by message: a generic handler with identity
serializers takes the request's bytes, a channel's `unary_unary` / `unary_stream` with
identity (de)serializers sends them on, and each reply message reaches the client as soon as
the agent sends it (a server stream is never buffered). The call's metadata goes on (the
recorder's own, `recorder-scenario` and `recorder-title`, stripped, as the HTTP headers are),
its deadline too (the time the client has left), and the agent's initial metadata, trailing
metadata and status come back as they were. A client that cancels cancels the agent's call.
A call its client leaves (it cancels, or its deadline passes) is recorded `@truncated`, with
the messages that reached the client and the status of its leaving, the same whichever side
noticed first: CANCELLED "cancelled by the client", or DEADLINE_EXCEEDED "the client's
deadline expired" (the player cuts its replay there and compares what the client read).

The record is made beside the traffic, never in its way: the messages are decoded to ProtoJSON
(`recorder.bindings.grpc`) only for the transcript, the call joins its scenario's file (its
`recorder-scenario` metadata, else the control endpoint's scenario), else the file its ids
lead to (`recorder.record.lineage`: an id the agent generated in a gRPC reply gives it a home,
as in the other bindings), and the exchange is written by the HTTP proxy's writer thread with
secrets replaced (metadata by the rules' `secret_headers`, message fields by the same
redaction as JSON bodies). A GetExtendedAgentCard reply reaches the client with its
interfaces pointing at the recorder (`recorder.record.cards`), and is recorded as the agent
sent it.

Push notifications: a call that registers a push config (a SendMessage's or
SendStreamingMessage's `configuration.taskPushNotificationConfig`, a
CreateTaskPushNotificationConfig) reaches the agent with the config's url pointed at the HTTP
proxy's receiver (`recorder.record.proxy.push`, the one the other bindings' configs use: each
delivery forwarded to the client's webhook and recorded `# @push config N` in the call's
file); that message alone is re-encoded (from its ProtoJSON), and recorded as the client sent
it. A reply whose bytes hold a receiver URL (the agent's echo: Create, Get, List) is decoded
and reaches the client, and the transcript, with the client's URL again; no other reply is
decoded for it.

grpcio is imported only here and only when a listener is made (`recorder record` makes one
when the card lists a GRPC interface, or `--grpc-listen` asks).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any, NoReturn

from recorder.bindings import grpc as binding
from recorder.errors import RecorderError
from recorder.format.model import GRPC_METHOD
from recorder.record.cards import GrpcRoute, Origin, grpc_address, rewrite_card
from recorder.record.grpc_metadata import (
    SCENARIO_KEY,
    TITLE_KEY,
    TRANSPORT_KEYS,
    Metadata,
    metadata_pairs,
    raw,
    sendable,
    to_forward,
    unsendable,
)
from recorder.record.grpc_record import (
    BACKLOG,
    CallRecord,
    Records,
    decode,
    json_text,
    stream_exchange,
    unary_exchange,
)
from recorder.record.proxy.call import Call, CallRequest
from recorder.record.proxy.push import PushRoom
from recorder.record.proxy.recording import Recording
from recorder.record.proxy.scenarios import Scenarios

__all__ = ["GrpcListener", "card_grpc_interface", "grpc_target"]

log = logging.getLogger(__name__)

_GRACE = 2.0  # seconds the open calls get at shutdown


def grpc_target(url: str) -> str:
    """A card's GRPC interface url as a channel target: `host:port` (a `grpc://` or
    `http://` prefix, which some agents write, dropped)."""
    for prefix in ("grpc://", "grpcs://", "http://", "https://", "dns:///"):
        if url.startswith(prefix):
            return url[len(prefix) :].rstrip("/")
    return url


def card_grpc_interface(upstream: str, timeout: float = 5.0) -> str | None:
    """The url of the GRPC interface the agent at `upstream` lists in its card, on its own
    host (None: no card now, or none listed): where `recorder record` forwards gRPC."""
    import httpx

    try:
        origin = Origin.parse(upstream)
        reply = httpx.get(
            f"{origin.base}/.well-known/agent-card.json",
            headers={"A2A-Version": "1.0"},
            timeout=timeout,
        )
        card = reply.json() if reply.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    listed = card.get("supportedInterfaces") if isinstance(card, dict) else None
    for interface in listed if isinstance(listed, list) else ():
        if not isinstance(interface, dict) or interface.get("protocolBinding") != "GRPC":
            continue
        url = interface.get("url")
        address = grpc_address(url) if isinstance(url, str) else None
        if isinstance(url, str) and address is not None and origin.same_host(address[0]):
            return url
    return None


def _pointed(push: PushRoom | None, name: str, call: Call, request: bytes) -> bytes:
    """The request message as forwarded: each push config it registers pointed at the
    HTTP proxy's receiver (`PushRoom.point`: its deliveries pass through the recorder and
    are recorded), re-encoded from its ProtoJSON; `call.request.body`, what is recorded, stays the
    client's. Any other call's message goes on as its bytes came."""
    if push is None or name not in _REGISTERING or b'"url"' not in call.request.body:
        return request
    try:
        body = json.loads(call.request.body)
        if not push.point(call, body):
            return request
        data: bytes = binding.to_message(name, json.dumps(body)).SerializeToString()
    except Exception as exc:  # (the agent says what is wrong with a message)
        log.warning("%s: its push config goes on unrecorded: %s", call.request.target, exc)
        return request
    return data


def _restored(push: PushRoom | None, name: str, reply: bytes) -> bytes:
    """A reply message with each receiver URL in it the client's again (the agent's echo
    of a pointed push config: Create, Get, List); decoded only when its bytes hold one."""
    if push is None or not push.holds_receiver(reply):
        return reply
    try:
        restored = push.restore(
            binding.to_json(binding.message_type(name, reply=True).FromString(reply))
        )
        data: bytes = binding.to_message(name, restored, reply=True).SerializeToString()
    except Exception:  # (a reply the recorder cannot read goes on as it came)
        return reply
    return data


def _registers(push: PushRoom | None, name: str, request: bytes) -> bool:
    """Whether the request message registers a push config with a url (`_pointed` points
    it): read from its bytes, not its ProtoJSON."""
    if push is None or name not in _REGISTERING:
        return False
    try:
        message = binding.message_type(name).FromString(request)
    except Exception:  # (the agent says what is wrong with a message)
        return False
    if name == "CreateTaskPushNotificationConfig":
        return bool(message.url)
    return bool(message.configuration.task_push_notification_config.url)


class GrpcListener:
    """A grpc.aio server on `host:port` (0: a free port) forwarding each call to `upstream`
    (the agent's gRPC interface, `host:port`; None: learned from the first card relayed) and
    recording it through `recording`. `http_base`: the HTTP proxy as clients address it (a
    card relayed over gRPC points there); `timeout`: seconds the agent may take to send each
    reply message (and a call's end: `recorder record --timeout`; None: no bound);
    `max_message`: the longest message, in bytes, the recorder passes on either way (None:
    no limit of its own, the agent's and the client's hold; `--grpc-max-message`)."""

    def __init__(
        self,
        recording: Recording,
        scenarios: Scenarios,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        upstream: str | None = None,
        timeout: float | None = None,
        push: PushRoom | None = None,
        max_message: int | None = None,
    ) -> None:
        try:
            import grpc
            import grpc.aio
        except ImportError:
            raise RecorderError(binding.MISSING) from None
        self._grpc = grpc
        self.recording = recording
        self.scenarios = scenarios
        self.host = host
        self.port = port
        self.upstream = upstream
        # the HTTP proxy as clients address it, and the agent's HTTP origin (for the cards)
        self.http_base = ""
        self.http_upstream = ""
        self.timeout = timeout
        self.push = push
        self.max_message = max_message
        self.records = Records(recording)
        self._server: Any = None
        self._channel: Any = None
        self._channel_target: str | None = None
        self._unknown_warned: set[str] = set()
        self._stopping = False  # (a call cancelled from now on: the recorder's stop ended it)

    # ---------------------------------------------------------------- life

    @property
    def address(self) -> str:
        """`host:port` the listener is bound to (the port known once started)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def route(self) -> GrpcRoute | None:
        """What a relayed card's GRPC interface is rewritten by (None: no upstream yet)."""
        return GrpcRoute(self.upstream, self.port) if self.upstream else None

    async def start(self) -> None:
        """Bind and serve (in the running event loop)."""
        grpc = self._grpc
        server = grpc.aio.server(options=_NO_OWN_LIMITS)
        server.add_generic_rpc_handlers((_Handler(self),))
        try:
            bound = server.add_insecure_port(self.address)
        except RuntimeError as exc:
            raise RecorderError(f"--grpc-listen {self.address}: cannot listen ({exc})") from None
        if not bound:
            raise RecorderError(f"--grpc-listen {self.address}: cannot listen (port in use?)")
        self.port = bound
        await server.start()
        self._server = server

    async def stop(self, grace: float = _GRACE) -> None:
        """Stop taking calls; the open ones get `grace` seconds, then are cancelled (each is
        recorded as it ended)."""
        self._stopping = True
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
        await self.records.settle(_GRACE)
        if self._channel is not None:
            await self._channel.close()
            self._channel = None

    def _upstream_channel(self) -> Any:
        target = self.upstream
        if target is None:
            return None
        if self._channel is None or self._channel_target != target:
            self._channel = self._grpc.aio.insecure_channel(
                grpc_target(target), options=_NO_OWN_LIMITS
            )
            self._channel_target = target
        return self._channel

    # ---------------------------------------------------------------- what is not forwarded

    async def _refuse(self, context: Any, status: str, path: str, reason: str) -> NoReturn:
        """Answer a call the recorder does not forward (or cannot finish) with `status` and
        `reason`, said to be the recorder's; logged, and counted as not recorded."""
        log.warning("gRPC %s: %s", path, reason)
        self.recording.writer.count_failure(f"gRPC {path}: {reason}")
        await context.abort(getattr(self._grpc.StatusCode, status), f"recorder: {reason}")
        raise AssertionError("grpc.aio's abort raises")

    async def _screen(self, path: str, metadata: Metadata, request: bytes, context: Any) -> None:
        """Refuse what cannot go on as it came: metadata that gRPC cannot send (its client
        sent it over raw HTTP/2; the agent never sees the call), a message over
        `max_message`."""
        problem = unsendable(metadata)
        if problem is not None:
            await self._refuse(context, "INTERNAL", path, f"not forwarded: {problem}")
        if self.max_message is not None and len(request) > self.max_message:
            await self._refuse(
                context, "RESOURCE_EXHAUSTED", path, self._too_large(request, "request")
            )
        refused = self.push.grpc_refusal(path, request) if self.push is not None else None
        if refused is not None:  # (a webhook the recorder does not deliver to)
            await context.abort(self._grpc.StatusCode.INVALID_ARGUMENT, refused)

    def _too_large(self, message: bytes, which: str) -> str:
        return (
            f"the {which} message is {len(message):,} bytes, over the recorder's "
            f"--grpc-max-message ({self.max_message:,} bytes)"
        )

    def _timed_out(self) -> str:
        return f"the agent sent nothing for {self.timeout:g} s (recorder record --timeout)"

    # ---------------------------------------------------------------- one call

    async def _call(self, path: str, name: str, metadata: Metadata, context: Any) -> Call:
        """The call as the recording sees it, its scenario chosen (not begun yet)."""
        own = dict((k, v) for k, v in metadata if k in (SCENARIO_KEY, TITLE_KEY))
        call = Call(
            CallRequest(
                method=GRPC_METHOD,
                target=path,
                headers=(),
                body=b"",
                scenario_header=raw(own[SCENARIO_KEY]) if SCENARIO_KEY in own else None,
                title_header=raw(own[TITLE_KEY]) if TITLE_KEY in own else None,
            )
        )
        call.operation = "" if name in _CARDS else name
        try:
            self.scenarios.choose(call)
        except ValueError as exc:  # a scenario name that makes no file name
            await context.abort(self._grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        return call

    def _begin(self, call: Call, name: str, request: bytes, forwarded: Metadata) -> bytes:
        """Begin the call in the recording (its file, its place, its redactor; the lineage
        reads the request's values from its message's ProtoJSON) and return its message as
        forwarded (a push config it registers pointed at the proxy's receiver: `_pointed`)."""
        # (the lineage reads the request's values from the message's ProtoJSON)
        headers = [(k.encode("latin-1"), raw(v)) for k, v in forwarded if not k.endswith("-bin")]
        headers.append((b"content-type", b"application/json"))
        call.request = replace(
            call.request,
            body=json_text(decode(name, request, reply=False), request),
            headers=tuple(headers),
        )
        self.recording.begin(call)
        return _pointed(self.push, name, call, request)

    async def _send(
        self, call: Call, name: str, request: bytes, forwarded: Metadata, make: Any, context: Any
    ) -> Any:
        """The agent's call, begun in the recording: a message that registers a push config
        is pointed first; any other goes on its way before the recording reads it (grpc.aio
        sends it from a task of its own, which runs at the first turn of the loop)."""
        registers = _registers(self.push, name, request)
        if registers:
            request = self._begin(call, name, request, forwarded)
        rpc = make(request, metadata=forwarded or None, timeout=context.time_remaining())
        if not registers:
            try:
                await asyncio.sleep(0)
            finally:
                self._begin(call, name, request, forwarded)
        return rpc

    def _left(self, context: Any) -> tuple[int, str]:
        """The status a cancelled call is recorded with (the same text whichever side noticed
        first): DEADLINE_EXCEEDED when the client's deadline passed, CANCELLED by the client,
        or by the recorder's stop."""
        if _client_deadline_passed(context):
            return _DEADLINE_EXCEEDED, _CLIENT_DEADLINE
        if self._stopping:
            return 1, "the recorder stopped"
        return 1, "cancelled by the client"

    async def unary(self, path: str, request: bytes, context: Any) -> bytes:
        """A unary call, forwarded, and recorded once its reply is on its way."""
        grpc = self._grpc
        metadata = metadata_pairs(context.invocation_metadata())
        await self._screen(path, metadata, request, context)
        name = binding.method_of(path)
        channel = self._upstream_channel()
        if name is None or channel is None:
            return await self._unrecorded(path, request, context, channel, metadata)
        call = await self._call(path, name, metadata, context)
        forwarded = to_forward(metadata)
        rpc = await self._send(call, name, request, forwarded, channel.unary_unary(path), context)
        record = self.records.open(call, name, forwarded)
        code, details, reply = 0, "", b""
        truncated = False
        initial: Any = ()
        trailing: Any = ()
        own: str | None = None  # (the recorder's own refusal: not the agent's answer)
        try:
            async with asyncio.timeout(self.timeout):
                reply = _restored(self.push, name, await rpc)
                initial = await rpc.initial_metadata()
                trailing = await rpc.trailing_metadata()
            if self.max_message is not None and len(reply) > self.max_message:
                own, status = self._too_large(reply, "reply"), "RESOURCE_EXHAUSTED"
        except grpc.aio.AioRpcError as error:
            code, details, initial, trailing, truncated = _failed(error, context)
        except TimeoutError:
            rpc.cancel()
            own, status = self._timed_out(), "DEADLINE_EXCEEDED"
        except asyncio.CancelledError:
            rpc.cancel()
            self.recording.close(call)
            code, details = self._left(context)
            build = functools.partial(unary_exchange, record, code, details, [], [], None)
            self.records.end(record, functools.partial(build, truncated=True))
            raise
        except Exception as exc:  # (grpc refused to send it: said, never a hang)
            rpc.cancel()
            own, status = f"could not forward the call: {type(exc).__name__}: {exc}", "INTERNAL"
        loop = asyncio.get_running_loop()
        if code == 0 and own is None and self.push is not None:
            self.push.deleted_by(call)  # (a deleted push config: its receivers end)
        if own is not None:
            self.recording.close(call)
            loop.call_soon(self.records.end, record, None)
            await self._refuse(context, status, path, own)
        # the record, in the step after this one, in which grpc sends the reply or the
        # status (`recorder.record.grpc_record`)
        loop.call_soon(
            self._replied,
            record,
            code,
            details,
            metadata_pairs(initial),
            metadata_pairs(trailing),
            reply if code == 0 else None,
            truncated,
        )
        if initial:
            await context.send_initial_metadata(sendable(initial))
        if code != 0:
            await context.abort(_status(grpc, code), details, sendable(trailing))
        if trailing:
            context.set_trailing_metadata(sendable(trailing))
        if name in _CARDS:
            return _card_for_client(self, name, reply)
        return reply

    def _replied(
        self,
        record: CallRecord,
        code: int,
        details: str,
        initial: Metadata,
        trailing: Metadata,
        reply: bytes | None,
        truncated: bool,
    ) -> None:
        """A unary call answered: its ids learned, it is closed and recorded."""
        try:
            self.recording.close(record.call)
            if reply is not None:
                self.records.replied(record, reply)
        finally:
            build = functools.partial(
                unary_exchange, record, code, details, initial, trailing, reply
            )
            self.records.end(record, functools.partial(build, truncated=truncated))

    async def stream(self, path: str, request: bytes, context: Any) -> AsyncIterator[bytes]:
        """A server-streaming call, forwarded message by message; each message recorded as
        it passes (`recorder.record.grpc_record`), the exchange when the call ends."""
        grpc = self._grpc
        metadata = metadata_pairs(context.invocation_metadata())
        await self._screen(path, metadata, request, context)
        name = binding.method_of(path) or ""
        channel = self._upstream_channel()
        if channel is None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, _NO_UPSTREAM)
        call = await self._call(path, name, metadata, context)
        forwarded = to_forward(metadata)
        rpc = await self._send(call, name, request, forwarded, channel.unary_stream(path), context)
        record = self.records.open(call, name, forwarded)
        loop = asyncio.get_running_loop()
        code, details = 0, ""
        initial: Any = ()
        trailing: Any = ()
        truncated = False
        sent_initial = False
        messages = 0
        try:
            while True:
                if record.in_flight > BACKLOG:  # (its recording has fallen behind: it waits)
                    await self.records.caught_up(record)
                async with asyncio.timeout(self.timeout):
                    message = await rpc.read()
                if message is grpc.aio.EOF:
                    break
                if self.max_message is not None and len(message) > self.max_message:
                    rpc.cancel()
                    details = f"recorder: {self._too_large(message, 'reply')}"
                    code, truncated = _RESOURCE_EXHAUSTED, True
                    log.warning("gRPC %s: %s", path, details)
                    break
                message = _restored(self.push, name, message)
                if not sent_initial:
                    sent_initial = True
                    initial = await rpc.initial_metadata()
                    if initial:
                        await context.send_initial_metadata(sendable(initial))
                messages += 1
                self.recording.frames_arrived(call, messages)
                # (recorded in the step after this one, in which grpc sends it)
                loop.call_soon(self.records.message, record, message)
                yield message
            if code == 0:
                if not sent_initial:
                    initial = await rpc.initial_metadata()
                trailing = await rpc.trailing_metadata()
        except grpc.aio.AioRpcError as error:
            code, details, initial, trailing, truncated = _failed(error, context)
        except TimeoutError:
            rpc.cancel()
            details = f"recorder: {self._timed_out()}"
            code, truncated = _DEADLINE_EXCEEDED, True
            log.warning("gRPC %s: %s", path, details)
        except (asyncio.CancelledError, GeneratorExit):
            # the client cancelled, left or ran out of time: the agent's call ends too,
            # recorded as it was
            rpc.cancel()
            (code, details), truncated = self._left(context), True
            raise
        finally:
            self.recording.close(call)
            build = functools.partial(
                stream_exchange,
                record,
                code,
                details,
                metadata_pairs(initial),
                metadata_pairs(trailing),
                truncated=truncated,
            )
            # (after the messages' own steps)
            loop.call_soon(self.records.end, record, build)
        if code != 0:
            if not sent_initial and initial:
                await context.send_initial_metadata(sendable(initial))
            await context.abort(_status(grpc, code), details, sendable(trailing))
        if trailing:
            context.set_trailing_metadata(sendable(trailing))

    async def _unrecorded(
        self, path: str, request: bytes, context: Any, channel: Any, metadata: Metadata
    ) -> bytes:
        """A call the recorder cannot record (a method A2A's service has not, or no agent
        address yet): forwarded as it is, or refused with UNAVAILABLE saying why."""
        grpc = self._grpc
        if channel is None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, _NO_UPSTREAM)
        if path not in self._unknown_warned and len(self._unknown_warned) <= _UNKNOWN_NAMED:
            # each method named once, up to a bound: a client calling ever new names must not
            # grow the set (or the log) without end
            self._unknown_warned.add(path)
            more = " and more (no more are named)" * (len(self._unknown_warned) > _UNKNOWN_NAMED)
            log.warning("gRPC %s%s is not an A2A method: forwarded, not recorded", path, more)
        forwarded = [(k, v) for k, v in metadata if k not in TRANSPORT_KEYS and k[:1] != ":"]
        rpc = channel.unary_unary(path)(
            request, metadata=forwarded or None, timeout=context.time_remaining()
        )
        try:
            async with asyncio.timeout(self.timeout):
                reply: bytes = await rpc
        except grpc.aio.AioRpcError as error:
            await context.abort(
                error.code(), error.details() or "", sendable(error.trailing_metadata())
            )
        except TimeoutError:
            rpc.cancel()
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, f"recorder: {self._timed_out()}")
        return reply


def _card_for_client(listener: GrpcListener, name: str, reply: bytes) -> bytes:
    """GetExtendedAgentCard's card with its interfaces pointing at the recorder (the
    transcript keeps it as the agent sent it)."""
    try:
        card = json.loads(json_text(decode(name, reply, reply=True), reply))
        proxy = Origin.parse(listener.http_base) if listener.http_base else None
        upstream = Origin.parse(listener.http_upstream) if listener.http_upstream else None
        if proxy is None or upstream is None:
            return reply
        rewritten = rewrite_card(card, upstream, proxy, grpc=listener.route())
        if rewritten == card:
            return reply
        message = binding.to_message(name, json.dumps(rewritten).encode(), reply=True)
        data: bytes = message.SerializeToString()
        return data
    except Exception:  # (a card the recorder cannot read goes on as it came)
        return reply


_DEADLINE_EXCEEDED = 4
_CLIENT_DEADLINE = "the client's deadline expired"
# (seconds: the agent's call has the client's deadline, computed a moment later, so it can
# end a moment before the client's is seen to pass)
_DEADLINE_SLACK = 0.5


def _client_deadline_passed(context: Any) -> bool:
    """Whether the client's deadline has passed (or is about to): its call ends by it."""
    remaining = context.time_remaining()
    return remaining is not None and remaining <= _DEADLINE_SLACK


_RESOURCE_EXHAUSTED = 8
# no message size limit of the recorder's own (grpc's default refuses a message over 4 MiB
# received): the agent's and the client's limits hold (`--grpc-max-message` adds one)
_NO_OWN_LIMITS = (("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1))
_CARDS = frozenset({"GetExtendedAgentCard"})
# the methods that are not A2A's named in the log, each once (then one line says more came)
_UNKNOWN_NAMED = 64

# the methods whose request may register a push config
# (`recorder.bindings.push_configs.config_objects`)
_REGISTERING = frozenset(
    {"SendMessage", "SendStreamingMessage", "CreateTaskPushNotificationConfig"}
)
_NO_UPSTREAM = (
    "the recorder does not know the agent's gRPC address yet: its card lists no GRPC interface "
    "(fetch the card through the recorder first)"
)


def _failed(error: Any, context: Any) -> tuple[int, str, Any, Any, bool]:
    """(code, details, initial, trailing metadata, truncated) of a call the agent ended with
    `error`: as it came, or, when the client's deadline passed (which the agent's call has
    too, noticed there first), the client's leaving, recorded `@truncated` without trailers."""
    code, details = error.code().value[0], error.details() or ""
    initial, trailing = error.initial_metadata(), error.trailing_metadata()
    if code == _DEADLINE_EXCEEDED and _client_deadline_passed(context):
        return _DEADLINE_EXCEEDED, _CLIENT_DEADLINE, initial, (), True
    return code, details, initial, trailing, False


def _status(grpc: Any, value: int) -> Any:
    """grpc's StatusCode of a code number (UNKNOWN for one it has not)."""
    for status in grpc.StatusCode:
        if status.value[0] == value:
            return status
    return grpc.StatusCode.UNKNOWN


class _Handler:
    """grpc's generic handler: every method, on raw bytes (no (de)serializers)."""

    def __init__(self, listener: GrpcListener) -> None:
        self._listener = listener
        grpc = listener._grpc
        self._unary = grpc.unary_unary_rpc_method_handler
        self._stream = grpc.unary_stream_rpc_method_handler

    def service(self, details: Any) -> Any:
        path: str = details.method
        listener = self._listener
        name = binding.method_of(path)
        if name is not None and binding.is_server_streaming(name):
            # (a partial of the async generator method: grpc.aio tells a streaming behaviour
            # by `inspect.isasyncgenfunction`, which sees through it)
            return self._stream(functools.partial(listener.stream, path))
        return self._unary(functools.partial(listener.unary, path))
