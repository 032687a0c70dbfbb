"""`recorder serve` answers the gRPC binding (issue 26): recorded gRPC calls to the real kit,
served by `recorder serve --grpc-listen`, give the a2a-sdk client on its gRPC transport the
same results as the kit itself; its card lists the stand-in's GRPC interface."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskState,
)
from grpc_traffic import DIFF, record_cancel_during_stream, record_card, record_review
from helpers import announced_address
from sdk_clients import open_client, user_message

from recorder import load
from recorder.checking import check_paths
from recorder.kit import start_kit

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

LIMIT = 20.0


@pytest.fixture(scope="module")
def goldens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("grpc-served")
    with start_kit(grpc_port=0) as kit:
        assert kit.grpc_address is not None
        record_card(kit.url, folder / "00-card.http")
        record_review(kit.grpc_address, folder / "01-review.http")
        record_cancel_during_stream(kit.grpc_address, folder / "02-cancel.http")
    return folder


@contextmanager
def serving(*args: str) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    """`recorder serve ARGS` in a subprocess: (it, its URL, its gRPC address)."""
    command = [sys.executable, "-c", "from recorder.cli import main; main()", "serve", *args]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stderr is not None
            url = announced_address(process.stderr.readline())
            second = process.stderr.readline()
            assert "gRPC" in second, second
            yield process, url, announced_address(second)
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                process.communicate(timeout=LIMIT)


async def review(url: str) -> dict[str, Any]:
    """The review file's calls, made by the SDK's client on its gRPC transport."""
    out: dict[str, Any] = {}
    for streaming in (False, True):
        async with await open_client(url, streaming=streaming) as client:
            events = [event async for event in client.send_message(user_message(DIFF))]
            task_id = events[0].task.id
            out[f"events {streaming}"] = [
                (e.WhichOneof("payload"), _state(e), _texts(e)) for e in events
            ]
            task = await client.get_task(GetTaskRequest(id=task_id))
            out[f"task {streaming}"] = (task.id == task_id, task.status.state, _texts(task))
            if streaming:
                try:
                    await client.get_task(GetTaskRequest(id="no-such-task"))
                except Exception as exc:  # (the A2A error the status details name)
                    out["unknown"] = (type(exc).__name__, str(exc))
    return out


def _state(event: Any) -> int:
    if event.HasField("task"):
        return int(event.task.status.state)
    if event.HasField("status_update"):
        return int(event.status_update.status.state)
    return -1


def _texts(value: Any) -> list[str]:
    task = value.task if hasattr(value, "task") and value.HasField("task") else value
    artifacts = getattr(task, "artifacts", None) or getattr(
        getattr(value, "artifact_update", None), "artifact", None
    )
    if artifacts is None:
        return []
    items = artifacts if isinstance(artifacts, list) or hasattr(artifacts, "__len__") else []
    return [part.text for artifact in items for part in getattr(artifact, "parts", [])]


def test_the_sdk_client_on_grpc_gets_from_serve_what_it_gets_from_the_kit(goldens: Path) -> None:
    with start_kit(grpc_port=0) as kit:
        from_kit = asyncio.run(review(kit.url))
    with serving(str(goldens), "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0") as (
        process,
        url,
        address,
    ):
        card = httpx.get(f"{url}/.well-known/agent-card.json", timeout=LIMIT).json()
        listed = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
        assert listed == [address]
        from_serve = asyncio.run(review(url))
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=LIMIT)
    assert from_serve == from_kit
    assert from_kit["unknown"][0] == "TaskNotFoundError"
    assert "0 unmatched" in err, err


def test_a_call_that_matches_nothing_ends_not_found_naming_the_closest(goldens: Path) -> None:
    with (
        serving(str(goldens), "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0") as (
            _,
            _url,
            address,
        ),
        grpc.insecure_channel(address) as channel,
    ):
        call = channel.unary_unary(
            "/lf.a2a.v1.A2AService/ListTasks",
            request_serializer=ListTasksRequest.SerializeToString,
            response_deserializer=lambda data: data,
        )
        with pytest.raises(grpc.RpcError) as caught:
            call(ListTasksRequest(), metadata=[("a2a-version", "1.0")], timeout=LIMIT)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert "GRPC /lf.a2a.v1.A2AService/ListTasks" in (caught.value.details() or "")


def test_a_call_that_matches_nothing_goes_to_the_fallback_agent_and_is_recorded(
    goldens: Path, tmp_path: Path
) -> None:
    new = tmp_path / "new"
    metadata = [("a2a-version", "1.0")]
    with start_kit(grpc_port=0) as kit:
        assert kit.grpc_address is not None
        with grpc.insecure_channel(kit.grpc_address) as direct:
            made = direct.unary_unary(
                "/lf.a2a.v1.A2AService/SendMessage",
                request_serializer=SendMessageRequest.SerializeToString,
                response_deserializer=SendMessageResponse.FromString,
            )(user_message(DIFF), metadata=metadata, timeout=LIMIT)
        with (
            serving(
                str(goldens),
                "--listen",
                "127.0.0.1:0",
                "--grpc-listen",
                "127.0.0.1:0",
                "--fallback",
                kit.url,
                "--record-new",
                str(new),
            ) as (process, _url, address),
            grpc.insecure_channel(address) as channel,
        ):
            listed = channel.unary_unary(
                "/lf.a2a.v1.A2AService/ListTasks",
                request_serializer=ListTasksRequest.SerializeToString,
                response_deserializer=ListTasksResponse.FromString,
            )(ListTasksRequest(), metadata=metadata, timeout=LIMIT)
            stream = channel.unary_stream(
                "/lf.a2a.v1.A2AService/SendStreamingMessage",
                request_serializer=SendMessageRequest.SerializeToString,
                response_deserializer=StreamResponse.FromString,
            )(user_message("Which languages do you review?"), metadata=metadata, timeout=LIMIT)
            events = list(stream)
            with pytest.raises(grpc.RpcError) as caught:
                channel.unary_unary(
                    "/lf.a2a.v1.A2AService/CancelTask",
                    request_serializer=CancelTaskRequest.SerializeToString,
                    response_deserializer=lambda data: data,
                )(CancelTaskRequest(id="no-such-task"), metadata=metadata, timeout=LIMIT)
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=LIMIT)
    # the kit's answers, as it sent them: its tasks, its streamed message, its error
    assert [t.id for t in listed.tasks] == [made.task.id]  # the kit's task, not a recorded one
    [event] = events
    assert "I can review Python" in event.message.parts[0].text
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert "Task not found" in (caught.value.details() or "")
    details = dict(caught.value.trailing_metadata() or ())
    assert "grpc-status-details-bin" in details  # (the SDK's client reads the A2A error there)
    assert "3 relayed" in err and "0 unmatched" in err, err
    assert "recorded 3 new exchanges" in err, err
    recorded = [e for p in sorted(new.glob("*.http")) for e in load(p)]
    assert sorted(e.request.target.rsplit("/", 1)[1] for e in recorded) == [
        "CancelTask",
        "ListTasks",
        "SendStreamingMessage",
    ]
    count, problems = check_paths([new])
    assert count >= 1 and problems == []


def _status_frame(state: str, at: str) -> str:
    update = {"taskId": "t-1", "contextId": "c-1", "status": {"state": state, "timestamp": at}}
    return json.dumps({"statusUpdate": update})


def test_pace_spaces_a_streams_messages_as_their_timestamps_say(tmp_path: Path) -> None:
    # paced: messages recorded 0.4 s apart; unpaced: 4.5 s apart (under the stand-in's longest
    # wait, 5 s), so an unpaced stream that arrived paced would show it by seconds, never by a
    # race with a busy machine's scheduling
    recorded_gap = {True: "39.400000", False: "43.500000"}
    gaps = {}
    for pace in (False, True):
        times = ("2026-11-29T19:36:39.000000Z", f"2026-11-29T19:36:{recorded_gap[pace]}Z")
        frames = "\n\n".join(
            f"data: {_status_frame(state, at)}"
            for state, at in zip(("TASK_STATE_WORKING", "TASK_STATE_COMPLETED"), times, strict=True)
        )
        (tmp_path / "01-subscribe.http").write_text(
            "# recorder-format: 1\n\n### SubscribeToTask\n"
            "GRPC /lf.a2a.v1.A2AService/SubscribeToTask\na2a-version: 1.0\n\n"
            '{\n  "id": "t-1"\n}\n\nGRPC 0 OK\n\n' + frames + "\n"
        )
        options = ["--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0"]
        with (
            serving(str(tmp_path), *options, *(["--pace"] if pace else [])) as (_, _url, address),
            grpc.insecure_channel(address) as channel,
        ):
            call = channel.unary_stream(
                "/lf.a2a.v1.A2AService/SubscribeToTask",
                request_serializer=SubscribeToTaskRequest.SerializeToString,
                response_deserializer=StreamResponse.FromString,
            )
            arrivals = []
            request = SubscribeToTaskRequest(id="t-1")
            for event in call(request, metadata=[("a2a-version", "1.0")], timeout=LIMIT):
                arrivals.append((time.monotonic(), event.status_update.status.state))
        assert [state for _, state in arrivals] == [
            TaskState.TASK_STATE_WORKING,
            TaskState.TASK_STATE_COMPLETED,
        ]
        gaps[pace] = arrivals[1][0] - arrivals[0][0]
    assert gaps[True] >= 0.35, gaps  # (asyncio.sleep waits at least that long)
    assert gaps[False] < 4.5, gaps  # (not the recorded 4.5 s: unpaced)
