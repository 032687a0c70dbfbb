"""The kit's gRPC binding end to end: the real a2a-sdk client on its gRPC transport (and
grpcio's own stub where the wire itself is the point), no recorder in between."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from a2a.client import A2AClientError, ClientCallContext
from a2a.helpers import get_message_text
from a2a.types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Role,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
    a2a_pb2,
    a2a_pb2_grpc,
)
from a2a.utils.errors import TaskNotFoundError
from google.protobuf.json_format import MessageToDict
from helpers import announced_address, cli_process
from sdk_clients import collect, kinds, open_client, state_of, user_message

from recorder import Exchange, Transcript, dump, loads
from recorder.bindings import grpc as binding
from recorder.checking import check_paths
from recorder.kit import KitServer, start_kit

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

LIMIT = 20.0  # seconds, for every wait
SUBMITTED, WORKING = TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING
COMPLETED, CANCELED = TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED
INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED
DIFF = (
    "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,4 @@\n import os\n"
    "+# TODO: read the port from the config\n+print(os.getcwd())\n x = 1\n"
)
HEADERLESS_DIFF = "@@ -1,2 +1,3 @@\n import os\n+# FIXME: handle errors\n x = 1\n"
SLOW_DIFF = "please review slowly\n" + DIFF
VERSION = [("a2a-version", "1.0")]


@pytest.fixture(scope="module")
def kit() -> Iterator[KitServer]:
    """The kit serving gRPC too, on a free port."""
    with start_kit(grpc_port=0) as server:
        yield server


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_the_card_lists_the_grpc_interface_at_its_address(kit: KitServer) -> None:
    assert kit.grpc_address is not None
    assert re.fullmatch(r"127\.0\.0\.1:\d+", kit.grpc_address)
    card = httpx.get(kit.url + "/.well-known/agent-card.json", timeout=LIMIT).json()
    assert card["supportedInterfaces"][2] == {
        "url": kit.grpc_address,
        "protocolBinding": "GRPC",
        "protocolVersion": "1.0",
    }
    assert [i["protocolBinding"] for i in card["supportedInterfaces"]] == [
        "JSONRPC",
        "HTTP+JSON",
        "GRPC",
    ]


def test_a_kit_started_without_a_grpc_port_serves_http_only() -> None:
    with start_kit(grpc_port=None) as plain:
        card = httpx.get(plain.url + "/.well-known/agent-card.json", timeout=LIMIT).json()
    assert plain.grpc_address is None
    assert [i["protocolBinding"] for i in card["supportedInterfaces"]] == ["JSONRPC", "HTTP+JSON"]


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
def test_a_question_gets_one_direct_message(kit: KitServer, streaming: bool) -> None:
    async def scenario() -> list[StreamResponse]:
        async with await open_client(kit.url, streaming=streaming) as client:
            return await collect(client.send_message(user_message("What languages?")))

    events = run(scenario())
    assert kinds(events) == ["message"]
    assert events[0].message.role == Role.ROLE_AGENT
    assert get_message_text(events[0].message).startswith("I can review Python, JavaScript")


def test_a_review_streams_its_fixed_frames_and_a_blocking_send_gets_the_task(
    kit: KitServer,
) -> None:
    async def scenario() -> tuple[list[StreamResponse], list[StreamResponse]]:
        async with await open_client(kit.url) as client:
            streamed = await collect(client.send_message(user_message(DIFF)))
        async with await open_client(kit.url, streaming=False) as client:
            sent = await collect(client.send_message(user_message(DIFF)))
        return streamed, sent

    streamed, sent = run(scenario())
    assert kinds(streamed) == ["task", "status_update", "artifact_update", "status_update"]
    assert [state_of(streamed[i]) for i in (0, 1, 3)] == [SUBMITTED, WORKING, COMPLETED]
    review = streamed[2].artifact_update.artifact.parts[0].text
    assert review.startswith("Reviewed 1 file: 3 comments.")
    (only,) = sent
    assert only.task.status.state == COMPLETED
    assert only.task.artifacts[0].parts[0].text == review


def test_get_task_and_list_tasks_see_the_same_tasks_as_json_rpc(kit: KitServer) -> None:
    async def scenario() -> tuple[Any, Any, Any]:
        async with await open_client(kit.url, "JSONRPC", streaming=False) as client:
            (event,) = await collect(client.send_message(user_message(DIFF)))
        async with await open_client(kit.url) as client:
            task = await client.get_task(GetTaskRequest(id=event.task.id, history_length=0))
            listed = await client.list_tasks(ListTasksRequest(context_id=event.task.context_id))
        return event.task, task, listed

    made, task, listed = run(scenario())
    assert (task.id, task.context_id, task.status.state) == (made.id, made.context_id, COMPLETED)
    assert list(task.history) == []
    assert [t.id for t in listed.tasks] == [made.id]


def test_a_slow_review_is_subscribed_to_and_canceled_during_its_stream(kit: KitServer) -> None:
    async def scenario() -> dict[str, Any]:
        async with await open_client(kit.url) as client:
            stream = client.send_message(user_message(SLOW_DIFF))
            opened = [await anext(stream), await anext(stream)]
            task_id = opened[0].task.id
            subscription = client.subscribe(SubscribeToTaskRequest(id=task_id))
            snapshot = await anext(subscription)
            canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
            return {
                "opened": opened,
                "snapshot": snapshot,
                "canceled": canceled,
                "stream_rest": await collect(stream),
                "subscription_rest": await collect(subscription),
            }

    result = run(scenario())
    assert [state_of(e) for e in result["opened"]] == [SUBMITTED, WORKING]
    assert result["snapshot"].task.status.state == WORKING
    assert result["canceled"].status.state == CANCELED
    for rest in (result["stream_rest"], result["subscription_rest"]):
        assert [state_of(e) for e in rest] == [CANCELED]


def test_a_headerless_diff_asks_for_the_file_name_then_completes(kit: KitServer) -> None:
    async def scenario() -> tuple[list[StreamResponse], list[StreamResponse]]:
        async with await open_client(kit.url) as client:
            first = await collect(client.send_message(user_message(HEADERLESS_DIFF)))
            task = first[0].task
            answer = await collect(
                client.send_message(
                    user_message("src/app.py", task_id=task.id, context_id=task.context_id)
                )
            )
            return first, answer

    first, answer = run(scenario())
    assert [state_of(e) for e in first] == [SUBMITTED, WORKING, INPUT_REQUIRED]
    assert "Which file is it for?" in get_message_text(first[2].status_update.status.message)
    assert [state_of(answer[0]), state_of(answer[2])] == [WORKING, COMPLETED]


def test_push_notification_configs_are_created_read_listed_and_deleted(kit: KitServer) -> None:
    url = "http://127.0.0.1:9/hook"  # never called: the task is done before the config

    async def scenario() -> dict[str, Any]:
        async with await open_client(kit.url, streaming=False) as client:
            (event,) = await collect(client.send_message(user_message(DIFF)))
            task_id = event.task.id
            created = await client.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task_id, id="hook-1", url=url, token="tok")
            )
            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task_id, id="hook-1")
            )
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            )
            await client.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="hook-1")
            )
            after = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            )
            return {"id": task_id, "created": created, "got": got, "listed": listed, "after": after}

    result = run(scenario())
    expected = {"id": "hook-1", "taskId": result["id"], "url": url, "token": "tok"}
    assert MessageToDict(result["created"]) == expected
    assert MessageToDict(result["got"]) == expected
    assert [MessageToDict(c) for c in result["listed"].configs] == [expected]
    assert list(result["after"].configs) == []


def test_an_unknown_task_is_not_found_with_its_error_info(kit: KitServer) -> None:
    async def scenario() -> tuple[type[Exception], grpc.aio.AioRpcError]:
        async with await open_client(kit.url) as client:
            with pytest.raises(Exception) as raised:
                await client.get_task(GetTaskRequest(id="no-such-task"))
        assert kit.grpc_address is not None
        async with grpc.aio.insecure_channel(kit.grpc_address) as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as wire:
                await stub.GetTask(a2a_pb2.GetTaskRequest(id="no-such-task"), metadata=VERSION)
        return raised.type, wire.value

    raised, error = run(scenario())
    assert raised is TaskNotFoundError
    assert error.code() == grpc.StatusCode.NOT_FOUND
    status = json.loads(binding.status_json(error))
    assert status["code"] == 5
    assert status["details"] == [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "TASK_NOT_FOUND",
            "domain": "a2a-protocol.org",
        }
    ]


@pytest.mark.parametrize(
    ("authorization", "message"),
    [(None, "needs authentication"), ("Bearer wrong", "not valid"), ("Basic a2l0", "not valid")],
)
def test_the_extended_card_needs_the_token(
    kit: KitServer, authorization: str | None, message: str
) -> None:
    async def scenario() -> tuple[A2AClientError, Any]:
        parameters = {} if authorization is None else {"Authorization": authorization}
        async with await open_client(kit.url) as client:
            with pytest.raises(A2AClientError) as refused:
                await client.get_extended_agent_card(
                    GetExtendedAgentCardRequest(),
                    context=ClientCallContext(service_parameters=parameters),
                )
            bearer = {"Authorization": f"Bearer {kit.token}"}
            card = await client.get_extended_agent_card(
                GetExtendedAgentCardRequest(),
                context=ClientCallContext(service_parameters=bearer),
            )
        return refused.value, card

    refused, card = run(scenario())
    assert "UNAUTHENTICATED" in str(refused)
    assert message in str(refused)
    assert [skill.id for skill in card.skills] == ["languages", "review-diff", "review-rules"]
    assert card.supported_interfaces[2].protocol_binding == "GRPC"


def test_recorder_kit_serves_grpc_on_the_next_port_and_stops_at_once_with_a_stream_open() -> None:
    with cli_process("kit", "--port", "0") as process:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(6)]
        assert lines[4].startswith("  gRPC        127.0.0.1:"), lines
        address = announced_address(lines[4])
        opened = threading.Event()
        ended: list[str] = []

        async def stream() -> None:
            async with grpc.aio.insecure_channel(address) as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)
                call = stub.SendStreamingMessage(user_message(SLOW_DIFF), metadata=VERSION)
                try:
                    async for _ in call:
                        opened.set()
                    ended.append("ended")
                except grpc.aio.AioRpcError as error:
                    ended.append(error.code().name)

        reader = threading.Thread(target=lambda: asyncio.run(stream()), daemon=True)
        reader.start()
        assert opened.wait(LIMIT)
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=LIMIT)
        took = time.monotonic() - started
        reader.join(LIMIT)
    assert process.returncode == 0, err
    assert took < 5.0  # the slow review would hold it 30 s
    assert out.endswith("code-reviewer stopped.\n")
    assert "Traceback" not in err, err
    assert ended and ended[0] in ("CANCELLED", "UNAVAILABLE"), ended


def test_recorder_kit_grpc_port_is_the_http_port_plus_one_unless_given() -> None:
    from recorder.cli.kit import _grpc_port
    from recorder.servers import bind_socket

    with bind_socket("127.0.0.1", 0) as http:
        port = http.getsockname()[1]
        assert _grpc_port("127.0.0.1", 0, None, http) == 0  # --port 0: any free one
        assert _grpc_port("127.0.0.1", port, 0, http) == 0
        with pytest.raises(SystemExit):  # the HTTP port itself: busy
            _grpc_port("127.0.0.1", port - 1, None, http)
        if port < 65535:
            try:
                bind_socket("127.0.0.1", port + 1).close()
            except OSError:
                return  # taken by another process: nothing to say about the default
            assert _grpc_port("127.0.0.1", port, None, http) == port + 1


def test_recorder_kit_refuses_a_busy_grpc_port(kit: KitServer) -> None:
    assert kit.grpc_address is not None
    busy = kit.grpc_address.rpartition(":")[2]
    with cli_process("kit", "--port", "0", "--grpc-port", busy) as process:
        out, err = process.communicate(timeout=LIMIT)
    assert process.returncode == 2
    assert out == ""
    assert err == (
        f"recorder kit: cannot listen on 127.0.0.1:{busy}: address already in use"
        " (gRPC: see --grpc-listen)\n"
    )


async def _call(channel: grpc.aio.Channel, name: str, request: Any) -> Exchange:
    """One real call to the kit, as the transcript model holds it (`recorder.bindings.grpc`)."""
    target = binding.target_of(name)
    reply_type = binding.message_type(name, reply=True)
    metadata = [*VERSION, ("x-trace-bin", b"\x00\x01")]
    request_type = binding.message_type(name)
    streaming = binding.is_server_streaming(name)
    if streaming:
        multi = channel.unary_stream(
            target,
            request_serializer=request_type.SerializeToString,
            response_deserializer=reply_type.FromString,
        )
        call: Any = multi(request, metadata=metadata)
    else:
        single = channel.unary_unary(
            target,
            request_serializer=request_type.SerializeToString,
            response_deserializer=reply_type.FromString,
        )
        call = single(request, metadata=metadata)
    messages: list[Any] = []
    reply = None
    try:
        if streaming:
            messages.extend([m async for m in call])
        else:
            reply = await call
    except grpc.aio.AioRpcError:
        pass
    code = (await call.code()).value[0]
    response = binding.response_of(
        code,
        message=await call.details() or "",
        initial=await call.initial_metadata() or (),
        trailing=await call.trailing_metadata() or (),
        reply=reply,
        messages=messages if streaming else None,
    )
    return Exchange(binding.request_of(name, metadata, request), response, title=name)


def test_real_calls_make_a_transcript_that_checks_and_round_trips(
    kit: KitServer, tmp_path: Path
) -> None:
    async def scenario() -> list[Exchange]:
        assert kit.grpc_address is not None
        async with grpc.aio.insecure_channel(kit.grpc_address) as channel:
            streamed = await _call(channel, "SendStreamingMessage", user_message(DIFF))
            assert streamed.response.events
            task_id = json.loads(streamed.response.events[0].data or "")["task"]["id"]
            config = a2a_pb2.TaskPushNotificationConfig(
                task_id=task_id, id="hook-1", url="http://127.0.0.1:9/hook"
            )
            delete = a2a_pb2.DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="hook-1")
            return [
                await _call(channel, "SendMessage", user_message("What languages?")),
                streamed,
                await _call(channel, "GetTask", a2a_pb2.GetTaskRequest(id=task_id)),
                await _call(channel, "ListTasks", a2a_pb2.ListTasksRequest()),
                await _call(channel, "CancelTask", a2a_pb2.CancelTaskRequest(id=task_id)),
                await _call(channel, "SubscribeToTask", a2a_pb2.SubscribeToTaskRequest(id=task_id)),
                await _call(channel, "CreateTaskPushNotificationConfig", config),
                await _call(channel, "DeleteTaskPushNotificationConfig", delete),
                await _call(channel, "GetTask", a2a_pb2.GetTaskRequest(id="no-such-task")),
                await _call(channel, "GetExtendedAgentCard", a2a_pb2.GetExtendedAgentCardRequest()),
            ]

    exchanges = run(scenario())
    statuses = [(e.response.status, e.response.reason) for e in exchanges]
    assert statuses == [
        *[(0, "OK")] * 4,
        (9, "FAILED_PRECONDITION"),  # CancelTask of a completed task
        (9, "FAILED_PRECONDITION"),  # SubscribeToTask of a completed task: no message
        *[(0, "OK")] * 2,
        (5, "NOT_FOUND"),
        (16, "UNAUTHENTICATED"),
    ]
    not_found = exchanges[8].response
    assert not_found.events is None
    assert not_found.json["details"][0]["reason"] == "TASK_NOT_FOUND"
    assert exchanges[5].response.events is None  # failed before any message: the status
    assert exchanges[7].response.body == b"{}"
    path = tmp_path / "01-grpc.http"
    transcript = Transcript(tuple(exchanges))
    dump(transcript, path)
    text = path.read_text()
    assert "GRPC /lf.a2a.v1.A2AService/SendStreamingMessage\na2a-version: 1.0\n" in text
    assert "\nx-trace-bin: AAE=\n" in text
    assert text.count("\ndata: {") == len(exchanges[1].response.events or ())
    assert loads(text) == transcript
    assert check_paths([path], canonical=True) == (1, [])


def test_recorder_kit_no_grpc_serves_and_lists_http_only() -> None:
    with cli_process("kit", "--port", "0", "--no-grpc") as process:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(5)]
        assert lines[-1] == "Press Ctrl-C to stop.\n", lines
        url = announced_address(lines[0])
        card = httpx.get(url + "/.well-known/agent-card.json", timeout=LIMIT).json()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=LIMIT)
    assert not any("gRPC" in line for line in lines)
    assert [i["protocolBinding"] for i in card["supportedInterfaces"]] == ["JSONRPC", "HTTP+JSON"]
    assert process.returncode == 0, err
    assert out == "code-reviewer stopped.\n"


def test_without_grpcio_the_kit_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from click.testing import CliRunner

    from recorder.cli import main
    from recorder.errors import RecorderError
    from recorder.kit.grpc_server import grpc_available, start_grpc

    monkeypatch.setitem(sys.modules, "grpc", None)  # `import grpc` fails as if not installed
    assert not grpc_available()
    with pytest.raises(RecorderError, match=re.escape(binding.MISSING)):
        run(start_grpc(object(), "127.0.0.1", 0, token="t"))
    result = CliRunner().invoke(main, ["kit", "--port", "0", "--grpc-port", "0"])
    assert result.exit_code == 2
    assert result.stderr == (
        "recorder kit: --grpc-listen 0: gRPC needs the grpc extra: "
        "pip install 'a2a-recorder[grpc]'\n"
    )


def test_the_readme_grpc_example_prints_the_languages_message(
    kit: KitServer, capsys: pytest.CaptureFixture[str]
) -> None:
    page = Path(__file__).parent.parent.parent / "docs" / "kit.md"
    blocks = re.findall(r"^```python\n(.*?)^```$", page.read_text(), re.S | re.M)
    (source,) = [block for block in blocks if "grpc_channel_factory" in block]
    source = source.replace("http://localhost:41242", kit.url)
    exec(compile(source, "docs/kit.md", "exec"), {"__name__": "readme"})
    assert capsys.readouterr().out.startswith("I can review Python, JavaScript")
