"""Where the recorder's gRPC listener does its recording work (`recorder.record.grpc_record`),
told by where ProtoJSON is made (`recorder.bindings.grpc.to_value`, watched, not replaced)
against a grpc.aio agent of the test's own, in the test's event loop:

- nothing between receiving and forwarding: the agent has the request before the recorder
  reads it, and a reply (a unary one, or each message of a stream) is handed on to grpc
  before the recorder reads it;
- a long stream's large messages are never read on the event loop (a worker thread does),
  and each one is recorded while the stream still runs, not kept until it ends;
- the record itself is what it was: every message, its secrets out (a stream past
  `SPOOL_AT` bytes kept on disk to be written, `recorder.disk.archive`).

And `MessageSpool` (pure): a stream's recorded messages, in memory then in a temporary file.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from a2a.types import a2a_pb2

from recorder import load
from recorder.bindings import grpc as binding
from recorder.disk.archive import Archived
from recorder.record.grpc_record import ON_LOOP, MessageSpool
from recorder.record.proxy import create_proxy_app

pytestmark = pytest.mark.timeout(90)

SERVICE = "/lf.a2a.v1.A2AService/"
LIMIT = 20.0
LARGE = ON_LOOP * 3  # bytes of text in each message of the long stream
SECRET = "hunter2-very-secret"


def streamed(index: int, size: int) -> bytes:
    found = a2a_pb2.Task(id="t-1", context_id="c-1")
    found.metadata.update({"password": SECRET, "index": index})
    found.artifacts.add(artifact_id=f"a-{index}").parts.add(text="z" * size)
    return a2a_pb2.StreamResponse(task=found).SerializeToString()


class Agent:
    """GetTask answers the task; SendStreamingMessage sends `messages` messages of `size`
    bytes of text, then waits for `release` before it ends. Notes when it got each call."""

    def __init__(self, events: list[tuple[str, str]], messages: int, size: int) -> None:
        self.events = events
        self.messages, self.size = messages, size
        self.release = asyncio.Event()
        self.server: Any = None
        self.port = 0

    async def start(self) -> None:
        agent = self

        async def get_task(request: bytes, context: Any) -> bytes:
            agent.events.append(("agent got", "GetTask"))
            return a2a_pb2.Task(id="t-1", context_id="c-1").SerializeToString()

        async def stream(request: bytes, context: Any) -> AsyncIterator[bytes]:
            agent.events.append(("agent got", "SendStreamingMessage"))
            for index in range(agent.messages):
                yield streamed(index, agent.size)
            await asyncio.wait_for(agent.release.wait(), LIMIT)

        handlers = {
            "GetTask": grpc.unary_unary_rpc_method_handler(get_task),
            "SendStreamingMessage": grpc.unary_stream_rpc_method_handler(stream),
        }

        class Handler(grpc.GenericRpcHandler):
            def service(self, details: Any) -> Any:
                return handlers.get(details.method.removeprefix(SERVICE))

        self.server = grpc.aio.server()
        self.server.add_generic_rpc_handlers((Handler(),))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()


@pytest.fixture
def protojson(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(thread name, message type) of every message made ProtoJSON, in order, and in the
    shared event list the tests keep."""
    made: list[tuple[str, str]] = []
    original = binding.to_value

    def watched(message: Any, *args: Any, **kwargs: Any) -> Any:
        made.append((threading.current_thread().name, message.DESCRIPTOR.name))
        return original(message, *args, **kwargs)

    monkeypatch.setattr(binding, "to_value", watched)
    return made


def run(tmp_path: Path, agent: Agent, body: Any, *, wrap: bool = False) -> Any:
    """`body(channel, listener)` against `agent` through the listener; with `wrap`, the
    listener's handlers note in the agent's events when they hand a reply on to grpc."""

    async def main() -> Any:
        await agent.start()
        proxy = create_proxy_app("http://127.0.0.1:9", out=tmp_path)
        proxy.store.prepare()
        listener = proxy.listen_grpc(port=0, upstream=f"127.0.0.1:{agent.port}")
        if wrap:
            unary, stream = listener.unary, listener.stream
            upstream = listener._upstream_channel

            class Channel:
                """The channel to the agent, noting when a call is made on it."""

                def __init__(self, channel: Any) -> None:
                    self.channel = channel

                def __getattr__(self, kind: str) -> Any:
                    def multicallable(path: str) -> Any:
                        made = getattr(self.channel, kind)(path)

                        def call(*args: Any, **kwargs: Any) -> Any:
                            agent.events.append(("forwarded", path))
                            return made(*args, **kwargs)

                        return call

                    return multicallable

            listener._upstream_channel = lambda: Channel(upstream())  # type: ignore[method-assign]

            async def handed_unary(path: str, request: bytes, context: Any) -> bytes:
                reply = await unary(path, request, context)
                agent.events.append(("handed on", path))
                return reply

            async def handed_stream(
                path: str, request: bytes, context: Any
            ) -> AsyncIterator[bytes]:
                async for message in stream(path, request, context):
                    agent.events.append(("handed on", path))
                    yield message

            listener.unary = handed_unary  # type: ignore[method-assign]
            listener.stream = handed_stream  # type: ignore[method-assign]
        await listener.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{listener.port}") as channel:
                return await body(channel, agent)
        finally:
            agent.release.set()
            await listener.stop()
            await agent.server.stop(None)
            await proxy.aclose()

    return asyncio.run(main())


def test_nothing_is_read_between_receiving_a_call_and_forwarding_it_or_its_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, str]] = []
    original = binding.to_value

    def noted(message: Any, *args: Any, **kwargs: Any) -> Any:
        events.append(("read", message.DESCRIPTOR.name))
        return original(message, *args, **kwargs)

    monkeypatch.setattr(binding, "to_value", noted)

    async def body(channel: Any, agent: Agent) -> None:
        request = a2a_pb2.GetTaskRequest(id="t-1").SerializeToString()
        await channel.unary_unary(SERVICE + "GetTask")(request, timeout=LIMIT)
        agent.release.set()
        stream = channel.unary_stream(SERVICE + "SendStreamingMessage")
        assert len([m async for m in stream(b"", timeout=LIMIT)]) == 2

    run(tmp_path, Agent(events, messages=2, size=10), body, wrap=True)
    events = [event for event in events if event[0] != "agent got"]
    unary = SERVICE + "GetTask"
    assert events[:4] == [
        ("forwarded", unary),
        ("read", "GetTaskRequest"),
        ("handed on", unary),
        ("read", "Task"),
    ]
    stream = SERVICE + "SendStreamingMessage"
    assert events[4:6] == [("forwarded", stream), ("read", "SendMessageRequest")]
    # each message is read after it was handed on (its ids learned before anything else runs)
    assert events[6:] == [("handed on", stream), ("read", "StreamResponse")] * 2


def test_a_long_streams_large_messages_are_recorded_off_the_loop_as_they_pass(
    tmp_path: Path, protojson: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.current_thread().name
    count = 8  # (1.5 MiB: past `SPOOL_AT`, in a temporary file, its block kept on disk)
    spooled: list[bytes] = []
    recorded_all = threading.Event()  # every message's record is in the call's spool
    add = MessageSpool.add

    def noted(self: MessageSpool, line: bytes) -> None:
        add(self, line)
        spooled.append(line)
        if len(spooled) == count:
            recorded_all.set()

    monkeypatch.setattr(MessageSpool, "add", noted)
    archived: list[Archived] = []
    keep = Archived.of

    def kept(*args: Any) -> Archived:
        archived.append(keep(*args))
        return archived[-1]

    monkeypatch.setattr(Archived, "of", kept)

    async def body(channel: Any, agent: Agent) -> bool:
        call = channel.unary_stream(SERVICE + "SendStreamingMessage")(b"", timeout=LIMIT)
        for _ in range(count):
            await asyncio.wait_for(call.read(), LIMIT)
        # every message recorded while the agent still holds the stream open
        during = await asyncio.to_thread(recorded_all.wait, LIMIT)
        agent.release.set()
        assert await asyncio.wait_for(call.read(), LIMIT) is grpc.aio.EOF
        return during

    during = run(tmp_path, Agent([], messages=count, size=LARGE), body)
    assert during, "the messages were not recorded while the stream ran"
    on_loop = [kind for thread, kind in protojson if thread == loop_thread]
    assert "StreamResponse" not in on_loop
    (path,) = tmp_path.glob("*.http")
    text = path.read_text()
    assert SECRET not in text and '"password": "{{PASSWORD}}"' in text
    (exchange,) = load(path).exchanges
    tasks = [json.loads(e.data or "")["task"] for e in exchange.response.events or ()]
    assert [t["metadata"]["index"] for t in tasks] == list(range(count))
    assert all(len(t["artifacts"][0]["parts"][0]["text"]) == LARGE for t in tasks)
    # its frames went to the store's archive, never joined into one string
    (block,) = archived
    assert block.length > count * LARGE and block.text() == text.split("\n\n", 1)[1]


def test_the_spool_keeps_lines_in_memory_then_in_a_file() -> None:
    spool = MessageSpool(spool_at=10)
    spool.add(b'{"a": 1}')
    assert list(spool.lines()) == [b'{"a": 1}']
    spool.add(b'{"b": "' + b"x" * 20 + b'"}')
    spool.add(b'{"c": "\xc3\xa9"}')
    assert spool._file is not None and spool._lines == []  # (past 10 bytes: in the file)
    assert list(spool.lines()) == [
        b'{"a": 1}',
        b'{"b": "' + b"x" * 20 + b'"}',
        b'{"c": "\xc3\xa9"}',
    ]
    assert spool.count == 3
    spool.close()


def test_the_spools_file_keeps_a_message_that_holds_a_line_break_whole() -> None:
    # a message that did not decode is kept as it came, line breaks and all: one message, not
    # two, whether the spool holds it in memory, in its file, or in memory again
    odd = b"\x08\x01\n\x02ok\r\n"
    spool = MessageSpool(spool_at=4)
    spool.add(b'{"a": 1}')
    spool.add(odd)
    assert spool._file is not None
    assert list(spool.lines()) == [b'{"a": 1}', odd]
    spool._unspool()  # (a file that can no longer be written: back to memory)
    spool.add(b"")
    assert list(spool.lines()) == [b'{"a": 1}', odd, b""]
    assert spool.count == 3


def test_a_stream_faster_than_its_recording_waits_for_it_memory_stays_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recorder.record.grpc_record import BACKLOG, Records

    size = 1024 * 1024  # (over ON_LOOP: each message is recorded by the worker)
    count = BACKLOG // size * 2 + 2
    gate = threading.Event()  # the worker records nothing until it is set
    record_one = Records._spool_found

    def slow(self: Records, record: Any, data: bytes) -> Any:
        gate.wait(LIMIT)
        return record_one(self, record, data)

    monkeypatch.setattr(Records, "_spool_found", slow)
    waiting = asyncio.Event()
    caught_up = Records.caught_up

    async def noted(self: Records, record: Any) -> None:
        waiting.set()
        await caught_up(self, record)

    monkeypatch.setattr(Records, "caught_up", noted)

    async def body(channel: Any, agent: Agent) -> tuple[int, int]:
        received: list[bytes] = []

        async def read() -> None:
            stream = channel.unary_stream(SERVICE + "SendStreamingMessage")
            async for message in stream(b"", timeout=LIMIT):
                received.append(message)

        reader = asyncio.create_task(read())
        agent.release.set()
        await asyncio.wait_for(waiting.wait(), LIMIT)
        # the listener waits for its recording, with no more than BACKLOG (and the message
        # over it) handed to the worker, and as many with the client
        before = len(received)
        gate.set()
        await asyncio.wait_for(reader, LIMIT)
        return before, len(received)

    before, after = run(tmp_path, Agent([], messages=count, size=size), body)
    assert before <= BACKLOG // size + 1 < count
    assert after == count
    (path,) = tmp_path.glob("*.http")
    (exchange,) = load(path).exchanges
    assert len(exchange.response.events or ()) == count
