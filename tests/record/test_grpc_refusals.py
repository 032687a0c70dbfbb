"""What the recorder's gRPC listener does not pass on as it came, against a grpc.aio agent of
the test's own (raw bytes, no message limit of its own): every such call is answered at once
with a status whose message says it is the recorder's, never recorded as the agent's reply,
and counted (`not_recorded`: the summary and exit status of `recorder record`).

- metadata no gRPC library sends (a NUL, a line break, non-ASCII in a value), sent over raw
  HTTP/2: grpcio cannot send it on, and a call made with it never ended;
- an agent slower than `--timeout` (the proxy's read timeout) for a reply message;
- messages over 4 MiB pass both ways (grpc's default limit is not the recorder's), and only
  `--grpc-max-message` sets one of the recorder's own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from a2a.types import a2a_pb2
from grpc_raw import raw_call

from recorder import load
from recorder.record.proxy import RecordingProxy, create_proxy_app

pytestmark = pytest.mark.timeout(90)

SERVICE = "/lf.a2a.v1.A2AService/"
LIMIT = 20.0
UNLIMITED = (("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1))
MIB = 1024 * 1024


def task(task_id: str, text_size: int = 0) -> a2a_pb2.Task:
    found = a2a_pb2.Task(id=task_id, context_id="c-1")
    if text_size:
        found.artifacts.add(artifact_id="a-1").parts.add(text="x" * text_size)
    return found


class Agent:
    """GetTask: the task `id` names ("big-N": with an artifact of N MiB; "slow": answered
    once `release` is set); SendMessage: the size of the request's first text part, in a
    task id; SendStreamingMessage: one message, then nothing until `release`. It notes the
    calls it saw."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.calls: list[str] = []
        self.server: Any = None
        self.port = 0

    async def start(self) -> None:
        agent = self

        async def get_task(request: bytes, context: Any) -> bytes:
            wanted = a2a_pb2.GetTaskRequest.FromString(request).id
            agent.calls.append(f"GetTask {wanted}")
            if wanted == "slow":
                await asyncio.wait_for(agent.release.wait(), LIMIT)
            size = int(wanted[4:]) * MIB if wanted.startswith("big-") else 0
            return task(wanted, size).SerializeToString()

        async def send(request: bytes, context: Any) -> bytes:
            sent = a2a_pb2.SendMessageRequest.FromString(request)
            agent.calls.append("SendMessage")
            size = len(sent.message.parts[0].text)
            return a2a_pb2.SendMessageResponse(task=task(f"got-{size}")).SerializeToString()

        async def stream(request: bytes, context: Any) -> AsyncIterator[bytes]:
            agent.calls.append("SendStreamingMessage")
            yield a2a_pb2.StreamResponse(task=task("t-1")).SerializeToString()
            await asyncio.wait_for(agent.release.wait(), LIMIT)
            yield a2a_pb2.StreamResponse(task=task("t-1")).SerializeToString()

        handlers = {
            "GetTask": grpc.unary_unary_rpc_method_handler(get_task),
            "SendMessage": grpc.unary_unary_rpc_method_handler(send),
            "SendStreamingMessage": grpc.unary_stream_rpc_method_handler(stream),
        }

        class Handler(grpc.GenericRpcHandler):
            def service(self, details: Any) -> Any:
                return handlers.get(details.method.removeprefix(SERVICE))

        self.server = grpc.aio.server(options=UNLIMITED)
        self.server.add_generic_rpc_handlers((Handler(),))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()


Body = Callable[[Agent, Any, RecordingProxy, str], Awaitable[Any]]


def through_listener(
    tmp_path: Path, body: Body, *, timeout: float = 60.0, max_message: int | None = None
) -> Any:
    async def run() -> Any:
        agent = Agent()
        await agent.start()
        proxy = create_proxy_app("http://127.0.0.1:9", out=tmp_path, timeout=timeout)
        proxy.store.prepare()
        limits = {"max_message": max_message} if max_message is not None else {}
        listener = proxy.listen_grpc(port=0, upstream=f"127.0.0.1:{agent.port}", **limits)
        await listener.start()
        address = f"127.0.0.1:{listener.port}"
        try:
            async with grpc.aio.insecure_channel(address, options=UNLIMITED) as channel:
                return await body(agent, channel, proxy, address)
        finally:
            agent.release.set()
            await listener.stop()
            await agent.server.stop(None)
            await proxy.aclose()

    return asyncio.run(run())


def get_task(channel: Any, task_id: str, *, timeout: float | None = LIMIT) -> Any:
    request = a2a_pb2.GetTaskRequest(id=task_id).SerializeToString()
    return channel.unary_unary(SERVICE + "GetTask")(request, timeout=timeout)


# --------------------------------------------------------------------------- metadata


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (b"a\x00b", "a NUL"),
        (b"a\r\nInjected: 1", "a line break"),
        ("café".encode(), "not ASCII"),
    ],
)
def test_metadata_grpc_cannot_send_is_answered_at_once_and_counted(
    tmp_path: Path, value: bytes, said: str
) -> None:
    async def body(agent: Agent, channel: Any, proxy: RecordingProxy, address: str) -> Any:
        request = a2a_pb2.GetTaskRequest(id="t-1").SerializeToString()
        reply = await asyncio.to_thread(
            raw_call,
            address,
            SERVICE + "GetTask",
            request,
            [(b"a2a-version", b"1.0"), (b"x-note", value)],
            limit=LIMIT,
        )
        # the listener goes on serving: a well-formed call after it is forwarded
        await get_task(channel, "t-2")
        return reply, list(agent.calls), proxy.status()

    reply, calls, status = through_listener(tmp_path, body)
    assert reply.ended, "no answer: the call hung"
    assert reply.status == grpc.StatusCode.INTERNAL.value[0]
    assert reply.message.startswith("recorder: not forwarded")
    assert "'x-note'" in reply.message and said in reply.message
    assert calls == ["GetTask t-2"]  # the agent never saw it
    assert status["failed"] == 1 and "x-note" in status["last_error"]
    (path,) = tmp_path.glob("*.http")  # only the call that went through is recorded
    assert [e.request.target for e in load(path)] == [SERVICE + "GetTask"]


# --------------------------------------------------------------------------- --timeout


def test_a_unary_call_is_bounded_by_the_read_timeout_and_not_recorded_as_the_agents(
    tmp_path: Path,
) -> None:
    async def body(agent: Agent, channel: Any, proxy: RecordingProxy, address: str) -> Any:
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await get_task(channel, "slow", timeout=None)  # (the client sets no deadline)
        return raised.value, proxy.status()

    error, status = through_listener(tmp_path, body, timeout=1.0)
    assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert error.details() == "recorder: the agent sent nothing for 1 s (recorder record --timeout)"
    assert status["failed"] == 1 and "--timeout" in status["last_error"]
    assert list(tmp_path.glob("*.http")) == []


def test_a_stream_the_agent_stops_sending_is_cut_at_the_timeout_and_recorded_so(
    tmp_path: Path,
) -> None:
    async def body(agent: Agent, channel: Any, proxy: RecordingProxy, address: str) -> Any:
        request = a2a_pb2.SendMessageRequest().SerializeToString()
        call = channel.unary_stream(SERVICE + "SendStreamingMessage")(request)
        first = await asyncio.wait_for(call.read(), LIMIT)
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await asyncio.wait_for(call.read(), LIMIT)
        return first, raised.value

    first, error = through_listener(tmp_path, body, timeout=1.0)
    assert a2a_pb2.StreamResponse.FromString(first).task.id == "t-1"
    assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert error.details().startswith("recorder: the agent sent nothing for 1 s")
    (path,) = tmp_path.glob("*.http")
    (exchange,) = load(path).exchanges
    # the agent's message is kept; the end is the recorder's, and says so
    assert exchange.truncated and exchange.response.status == 4
    assert len(exchange.response.events or ()) == 1
    assert exchange.response.trailers.get("grpc-message", "").startswith("recorder: ")


# --------------------------------------------------------------------------- message sizes


def test_messages_over_grpcs_4_mib_default_pass_both_ways_and_are_recorded(
    tmp_path: Path,
) -> None:
    async def body(agent: Agent, channel: Any, proxy: RecordingProxy, address: str) -> Any:
        reply = await get_task(channel, "big-5")
        message = a2a_pb2.Message(message_id="m-1", role=a2a_pb2.ROLE_USER)
        message.parts.add(text="y" * (5 * MIB))
        request = a2a_pb2.SendMessageRequest(message=message).SerializeToString()
        sent = await channel.unary_unary(SERVICE + "SendMessage")(request, timeout=LIMIT)
        await proxy.flush()
        return a2a_pb2.Task.FromString(reply), a2a_pb2.SendMessageResponse.FromString(sent)

    reply, sent = through_listener(tmp_path, body)
    assert len(reply.artifacts[0].parts[0].text) == 5 * MIB
    assert sent.task.id == f"got-{5 * MIB}"  # the agent had the whole request
    exchanges = [e for path in sorted(tmp_path.glob("*.http")) for e in load(path)]
    assert sorted(e.response.status for e in exchanges) == [0, 0]


def test_grpc_max_message_refuses_as_the_recorders_own_never_as_the_agents(
    tmp_path: Path,
) -> None:
    async def body(agent: Agent, channel: Any, proxy: RecordingProxy, address: str) -> Any:
        errors = []
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await get_task(channel, "big-2")  # the reply is over the limit
        errors.append(raised.value)
        message = a2a_pb2.Message(message_id="m-1", role=a2a_pb2.ROLE_USER)
        message.parts.add(text="y" * (2 * MIB))
        request = a2a_pb2.SendMessageRequest(message=message).SerializeToString()
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await channel.unary_unary(SERVICE + "SendMessage")(request, timeout=LIMIT)
        errors.append(raised.value)
        await get_task(channel, "t-1")  # a small one goes through
        return errors, list(agent.calls), proxy.status()

    errors, calls, status = through_listener(tmp_path, body, max_message=MIB)
    for error, which in zip(errors, ("reply", "request"), strict=True):
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert error.details().startswith(f"recorder: the {which} message is ")
        assert "--grpc-max-message (1,048,576 bytes)" in error.details()
    assert calls == ["GetTask big-2", "GetTask t-1"]  # the large request never reached it
    assert status["failed"] == 2
    # neither refusal is in a transcript as the agent's reply
    exchanges = [e for path in tmp_path.glob("*.http") for e in load(path)]
    assert [(e.request.target, e.response.status) for e in exchanges] == [(SERVICE + "GetTask", 0)]


def test_grpc_max_message_is_a_size_in_mib() -> None:
    from click.testing import CliRunner

    from recorder.cli import main

    result = CliRunner().invoke(
        main, ["record", "--upstream", "http://127.0.0.1:9", "--grpc-max-message", "0"]
    )
    assert result.exit_code == 2
    assert "--grpc-max-message" in result.output
