"""The gRPC listener's forwarding, against a tiny grpc.aio agent of the test's own (raw bytes,
the A2A service's paths): a stream is passed on message by message, never buffered; metadata,
trailers, the status and its details come back; the deadline goes on; a client's cancel
cancels the agent's call. And the card rewriting of a GRPC interface (pure)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from a2a.types import a2a_pb2

from recorder import load
from recorder.checking import check_paths
from recorder.record.cards import GrpcRoute, Origin, rewrite_card, unproxied
from recorder.record.proxy import create_proxy_app

pytestmark = pytest.mark.timeout(60)

SERVICE = "/lf.a2a.v1.A2AService/"
LIMIT = 20.0


def status_event(state: int, task_id: str = "t-1") -> bytes:
    update = a2a_pb2.TaskStatusUpdateEvent(task_id=task_id, context_id="c-1")
    update.status.state = state  # type: ignore[assignment]
    return a2a_pb2.StreamResponse(status_update=update).SerializeToString()


class Agent:
    """A grpc.aio server answering SendStreamingMessage one message per `release`, and
    GetTask with a NOT_FOUND carrying trailers; it notes what it saw."""

    def __init__(self) -> None:
        self.release: asyncio.Queue[int] = asyncio.Queue()
        self.metadata: list[tuple[str, Any]] = []
        self.requests: list[bytes] = []
        self.remaining: float | None = None
        self.cancelled = asyncio.Event()
        self.server: Any = None
        self.port = 0

    async def start(self) -> None:
        agent = self

        async def stream(request: bytes, context: Any) -> AsyncIterator[bytes]:
            agent.requests.append(request)
            agent.metadata = list(context.invocation_metadata())
            agent.remaining = context.time_remaining()
            await context.send_initial_metadata((("x-initial", "first"),))
            try:
                for state in (1, 2, 3):
                    await asyncio.wait_for(agent.release.get(), LIMIT)
                    yield status_event(state)
            except asyncio.CancelledError:
                agent.cancelled.set()
                raise
            context.set_trailing_metadata((("x-trailer", "last"),))

        async def get_task(request: bytes, context: Any) -> bytes:
            await context.abort(grpc.StatusCode.NOT_FOUND, "no such task", (("x-trailer", "gone"),))
            return b""

        class Handler(grpc.GenericRpcHandler):
            def service(self, details: Any) -> Any:
                if details.method == SERVICE + "SendStreamingMessage":
                    return grpc.unary_stream_rpc_method_handler(stream)
                if details.method == SERVICE + "GetTask":
                    return grpc.unary_unary_rpc_method_handler(get_task)
                return None

        self.server = grpc.aio.server()
        self.server.add_generic_rpc_handlers((Handler(),))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()


def send_request() -> bytes:
    message = a2a_pb2.Message(message_id="m-1", role=a2a_pb2.ROLE_USER)
    message.parts.add(text="hello")
    return a2a_pb2.SendMessageRequest(message=message).SerializeToString()


async def through_listener(
    tmp_path: Path, body: Any, *, http_at: tuple[str, int] | None = None, **options: Any
) -> Any:
    agent = Agent()
    await agent.start()
    proxy = create_proxy_app("http://127.0.0.1:9", out=tmp_path, **options)
    if http_at is not None:  # (where the HTTP proxy listens, as its server tells it)
        proxy.push.listening(*http_at)
    proxy.store.prepare()
    listener = proxy.listen_grpc(port=0, upstream=f"127.0.0.1:{agent.port}")
    await listener.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{listener.port}") as channel:
            return await body(agent, channel)
    finally:
        await listener.stop()
        await agent.server.stop(None)
        await proxy.aclose()


def test_a_stream_passes_on_message_by_message_with_metadata_trailers_and_deadline(
    tmp_path: Path,
) -> None:
    async def body(agent: Agent, channel: Any) -> dict[str, Any]:
        call = channel.unary_stream(SERVICE + "SendStreamingMessage")(
            send_request(),
            metadata=(("a2a-version", "1.0"), ("authorization", "Bearer s3cret")),
            timeout=30,
        )
        got = []
        for _ in range(3):
            # the next message is sent by the agent only after the client has this one:
            # a listener that buffered the stream would wait here for ever
            agent.release.put_nowait(1)
            got.append(await asyncio.wait_for(call.read(), LIMIT))
        agent.release.put_nowait(1)
        assert await asyncio.wait_for(call.read(), LIMIT) is grpc.aio.EOF
        return {
            "got": got,
            "initial": list(await call.initial_metadata()),
            "trailing": list(await call.trailing_metadata()),
            "code": await call.code(),
        }

    seen = asyncio.run(through_listener(tmp_path, body))
    assert seen["got"] == [status_event(s) for s in (1, 2, 3)]
    assert ("x-initial", "first") in seen["initial"]
    assert ("x-trailer", "last") in seen["trailing"]
    assert seen["code"] == grpc.StatusCode.OK
    (path,) = tmp_path.glob("*.http")
    text = path.read_text()
    assert "s3cret" not in text and "authorization: Bearer {{" in text
    assert text.count("\ndata: ") == 3
    assert "# @trailers" in text and "x-trailer: last" in text
    assert check_paths([tmp_path])[1] == []


def test_the_deadline_goes_on_and_a_cancel_cancels_the_agents_call(tmp_path: Path) -> None:
    async def body(agent: Agent, channel: Any) -> dict[str, Any]:
        call = channel.unary_stream(SERVICE + "SendStreamingMessage")(
            send_request(), metadata=(("a2a-version", "1.0"),), timeout=25
        )
        agent.release.put_nowait(1)
        first = await asyncio.wait_for(call.read(), LIMIT)
        call.cancel()
        await asyncio.wait_for(agent.cancelled.wait(), LIMIT)
        return {"first": first, "remaining": agent.remaining}

    seen = asyncio.run(through_listener(tmp_path, body))
    assert seen["first"] == status_event(1)
    # (None without a deadline; grpc rounds the one it sends up a little)
    assert seen["remaining"] is not None and 0 < seen["remaining"] <= 26
    (path,) = tmp_path.glob("*.http")
    transcript = load(path)
    (exchange,) = transcript.exchanges
    assert exchange.response.status == 1  # CANCELLED, the one message that came kept
    assert exchange.truncated
    assert len(exchange.response.events or ()) == 1


def test_a_client_whose_deadline_passes_mid_stream_is_recorded_truncated_as_it_left(
    tmp_path: Path,
) -> None:
    async def body(agent: Agent, channel: Any) -> dict[str, Any]:
        call = channel.unary_stream(SERVICE + "SendStreamingMessage")(
            send_request(), metadata=(("a2a-version", "1.0"),), timeout=6
        )
        agent.release.put_nowait(1)
        first = await asyncio.wait_for(call.read(), LIMIT)
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await asyncio.wait_for(call.read(), LIMIT)  # (the agent sends no second message)
        await asyncio.wait_for(agent.cancelled.wait(), LIMIT)
        return {"first": first, "code": raised.value.code()}

    seen = asyncio.run(through_listener(tmp_path, body))
    assert seen["first"] == status_event(1)
    assert seen["code"] == grpc.StatusCode.DEADLINE_EXCEEDED
    (path,) = tmp_path.glob("*.http")
    (exchange,) = load(path).exchanges
    # whichever side saw the deadline first, the agent's call or the client's, the same record
    assert exchange.truncated
    assert (exchange.response.status, exchange.response.reason) == (4, "DEADLINE_EXCEEDED")
    assert len(exchange.response.events or ()) == 1
    assert list(exchange.response.trailers) == [("grpc-message", "the client's deadline expired")]
    assert check_paths([tmp_path])[1] == []


def test_a_stream_open_when_the_recorder_stops_is_recorded_truncated_saying_so(
    tmp_path: Path,
) -> None:
    async def run() -> None:
        agent = Agent()
        await agent.start()
        proxy = create_proxy_app("http://127.0.0.1:9", out=tmp_path)
        proxy.store.prepare()
        listener = proxy.listen_grpc(port=0, upstream=f"127.0.0.1:{agent.port}")
        await listener.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{listener.port}") as channel:
                call = channel.unary_stream(SERVICE + "SendStreamingMessage")(
                    send_request(), metadata=(("a2a-version", "1.0"),), timeout=LIMIT
                )
                agent.release.put_nowait(1)
                await asyncio.wait_for(call.read(), LIMIT)
                await listener.stop(0)
                with pytest.raises(grpc.aio.AioRpcError):
                    await asyncio.wait_for(call.read(), LIMIT)
        finally:
            await agent.server.stop(None)
            await proxy.aclose()

    asyncio.run(run())
    (path,) = tmp_path.glob("*.http")
    (exchange,) = load(path).exchanges
    assert exchange.truncated and exchange.response.status == 1
    assert len(exchange.response.events or ()) == 1
    assert exchange.response.trailers.get("grpc-message") == "the recorder stopped"


def test_a_failed_call_comes_back_with_its_status_and_trailers(tmp_path: Path) -> None:
    async def body(agent: Agent, channel: Any) -> grpc.aio.AioRpcError:
        request = a2a_pb2.GetTaskRequest(id="nope").SerializeToString()
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await channel.unary_unary(SERVICE + "GetTask")(request, timeout=20)
        return raised.value

    error = asyncio.run(through_listener(tmp_path, body))
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert error.details() == "no such task"
    assert ("x-trailer", "gone") in list(error.trailing_metadata())
    (path,) = tmp_path.glob("*.http")
    text = path.read_text()
    assert "GRPC 5 NOT_FOUND" in text and '"message": "no such task"' in text


UPSTREAM = Origin.parse("http://localhost:41242")
PROXY = Origin.parse("http://127.0.0.1:41241")


def card(grpc_url: str) -> dict[str, Any]:
    return {
        "supportedInterfaces": [
            {"url": "http://localhost:41242/a2a/jsonrpc", "protocolBinding": "JSONRPC"},
            {"url": grpc_url, "protocolBinding": "GRPC"},
        ]
    }


@pytest.mark.parametrize("url", ["127.0.0.1:41243", "localhost:41243", "grpc://[::1]:41243"])
def test_a_grpc_interface_of_the_agent_names_the_listener(url: str) -> None:
    rewritten = rewrite_card(card(url), UPSTREAM, PROXY, GrpcRoute("127.0.0.1:41243", 41250))
    urls = [i["url"] for i in rewritten["supportedInterfaces"]]
    assert urls == ["http://127.0.0.1:41241/a2a/jsonrpc", "127.0.0.1:41250"]
    assert unproxied(rewritten, PROXY, 41250) == []


def test_a_grpc_interface_elsewhere_or_without_a_listener_stays_and_is_named() -> None:
    other = rewrite_card(card("agent.example:443"), UPSTREAM, PROXY, GrpcRoute("127.0.0.1:1", 2))
    assert other["supportedInterfaces"][1]["url"] == "agent.example:443"
    assert unproxied(other, PROXY, 2) == [("GRPC", "agent.example:443")]
    plain = rewrite_card(card("127.0.0.1:41243"), UPSTREAM, PROXY)
    assert plain["supportedInterfaces"][1]["url"] == "127.0.0.1:41243"
    assert unproxied(plain, PROXY) == [("GRPC", "127.0.0.1:41243")]


def test_the_default_grpc_port_is_the_next_one_that_is_not_the_agents() -> None:
    from recorder.cli.record import _next_port

    # in front of the kit (HTTP 41242, gRPC 41243): 41241 + 1 and + 2 are the kit's
    assert _next_port(41241, "http://localhost:41242", "127.0.0.1:41243") == 41244
    assert _next_port(8000, "http://agent:9000", "agent:9001") == 8001
    assert _next_port(0, "http://localhost:41242", "127.0.0.1:41243") == 0


def _registering(url: str) -> bytes:
    request = a2a_pb2.SendMessageRequest.FromString(send_request())
    request.configuration.task_push_notification_config.url = url
    request.configuration.task_push_notification_config.token = "hook-token-1f"
    return request.SerializeToString()


async def _one_registering_stream(agent: Agent, channel: Any) -> None:
    call = channel.unary_stream(SERVICE + "SendStreamingMessage")(
        _registering("http://127.0.0.1:9/hook"), metadata=(("a2a-version", "1.0"),), timeout=30
    )
    for _ in range(4):
        agent.release.put_nowait(1)
    assert len([m async for m in call]) == 3


@pytest.mark.parametrize("http_at", [("0.0.0.0", 41999), None])
def test_a_push_config_reaches_the_agent_pointed_at_the_http_proxys_receiver(
    tmp_path: Path, http_at: tuple[str, int] | None, caplog: pytest.LogCaptureFixture
) -> None:
    agents: list[Agent] = []

    async def body(agent: Agent, channel: Any) -> None:
        agents.append(agent)
        await _one_registering_stream(agent, channel)

    # (its webhook is on loopback: local work, said so)
    asyncio.run(through_listener(tmp_path, body, http_at=http_at, push_loopback=True))
    (sent,) = agents[0].requests
    config = a2a_pb2.SendMessageRequest.FromString(sent).configuration
    url = config.task_push_notification_config.url
    if http_at is not None:
        # the receiver on the HTTP listener (any address: loopback), the rest of it as sent
        assert url.startswith("http://127.0.0.1:41999/_recorder/push/"), url
        assert len(url) > len("http://127.0.0.1:41999/_recorder/push/") + 10
        assert config.task_push_notification_config.token == "hook-token-1f"
        assert a2a_pb2.SendMessageRequest.FromString(sent).message.parts[0].text == "hello"
    else:  # the HTTP address unknown: forwarded as sent, and said so
        assert url == "http://127.0.0.1:9/hook"
        assert "its deliveries go to the webhook directly, unrecorded" in caplog.text
    # recorded as the client sent it, its token a placeholder
    (path,) = tmp_path.glob("*.http")
    (exchange,) = load(path).exchanges
    recorded = exchange.request.json["configuration"]["taskPushNotificationConfig"]
    assert recorded == {"url": "http://127.0.0.1:9/hook", "token": "{{TOKEN}}"}
