"""A2A's gRPC binding through the recorder (issue 26): the real a2a-sdk client on its gRPC
transport (no recorder headers, uuid ids) through the real recorder's gRPC listener to the real
kit. Every call is recorded, grouped by id lineage, and `recorder check` passes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from a2a.types import StreamResponse
from a2a.utils.errors import TaskNotFoundError
from grpc_sdk_traffic import CANCELED, grpc_calls, session
from helpers import recorder_process
from sdk_clients import collect, open_client, user_message

from recorder import Transcript, load
from recorder.checking import check_paths
from recorder.kit import KitServer, start_kit
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


@pytest.fixture(scope="module")
def grpc_kit() -> Iterator[KitServer]:
    with start_kit(grpc_port=0) as server:
        yield server


@pytest.fixture(scope="module")
def recorded(
    grpc_kit: KitServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Any], Path, int]:
    out = tmp_path_factory.mktemp("grpc")
    proxy = create_proxy_app(grpc_kit.url, out=out, push_loopback=True)
    listener = proxy.listen_grpc(port=0)
    with ProxyServer(proxy) as server:
        seen = asyncio.run(session(server.url, grpc_kit.token))
        port = listener.port
    return seen, out, port


def test_the_card_the_client_gets_names_the_listener_and_the_calls_go_through_it(
    recorded: tuple[dict[str, Any], Path, int], grpc_kit: KitServer
) -> None:
    seen, _, port = recorded
    assert ("GRPC", f"127.0.0.1:{port}") in seen["card"]
    assert ("GRPC", grpc_kit.grpc_address) not in seen["card"]
    # the extended card, fetched over gRPC itself, points there too
    assert ("GRPC", f"127.0.0.1:{port}") in seen["extended"]
    assert seen["task"].id == seen["review"][0].task.id
    assert [e.status_update.status.state for e in seen["slow_rest"]] == [CANCELED]
    assert isinstance(seen.get("unknown"), TaskNotFoundError)


def test_every_call_is_recorded_grouped_by_the_ids_the_agent_generated(
    recorded: tuple[dict[str, Any], Path, int],
) -> None:
    _, out, _ = recorded
    files = grpc_calls(out)
    flat = [m for methods in files.values() for m in methods]
    for method in (
        "SendStreamingMessage",
        "GetTask",
        "ListTasks",
        "CancelTask",
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
        "GetExtendedAgentCard",
    ):
        assert method in flat, (method, files)
    assert len(flat) == 14, files
    # the review's follow-ups by its task id joined its file
    review = next(m for m in files.values() if "CreateTaskPushNotificationConfig" in m)
    assert review[:2] == ["SendStreamingMessage", "GetTask"]
    # the answer to the question for the file name joined the multi-turn task's file
    assert any(m == ["SendStreamingMessage", "SendStreamingMessage"] for m in files.values())
    # CancelTask went into the slow review's file, during its stream
    slow = next(p for p, m in files.items() if m == ["SendStreamingMessage", "CancelTask"])
    text = (out / slow).read_text()
    assert "# @during exchange 1 frame 2" in text
    assert "GRPC 0 OK" in text


def test_the_recording_checks_and_holds_no_secret(
    recorded: tuple[dict[str, Any], Path, int], grpc_kit: KitServer
) -> None:
    _, out, _ = recorded
    assert check_paths([out])[1] == []
    texts = "".join(p.read_text() for p in out.glob("*.http"))
    assert grpc_kit.token not in texts
    assert "authorization: Bearer {{" in texts
    assert "GRPC 5 NOT_FOUND" in texts
    assert "TASK_NOT_FOUND" in texts
    # the card recorded as the agent sent it
    assert f'"url": "{grpc_kit.grpc_address}"' in texts


def test_a_scenario_in_metadata_names_the_file_and_is_not_forwarded(
    grpc_kit: KitServer, tmp_path: Path
) -> None:
    from a2a.types import a2a_pb2, a2a_pb2_grpc

    proxy = create_proxy_app(grpc_kit.url, out=tmp_path, push_loopback=True)
    assert grpc_kit.grpc_address is not None
    listener = proxy.listen_grpc(port=0, upstream=grpc_kit.grpc_address)

    async def call() -> None:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{listener.port}") as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            metadata = (
                ("a2a-version", "1.0"),
                ("recorder-scenario", "grpc-question"),
                ("recorder-title", "ask over gRPC"),
            )
            request = a2a_pb2.SendMessageRequest(
                message=a2a_pb2.Message(
                    message_id="m1", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="Hi?")]
                )
            )
            await stub.SendMessage(request, metadata=metadata, timeout=20)

    with ProxyServer(proxy):
        asyncio.run(call())
    (path,) = tmp_path.glob("*.http")
    assert path.name == "01-grpc-question.http"
    text = path.read_text()
    assert "### SendMessage: ask over gRPC" in text
    assert "recorder-scenario" not in text and "recorder-title" not in text
    assert check_paths([tmp_path])[1] == []


def test_a_card_listing_an_interface_the_recorder_does_not_proxy_is_named_once(
    grpc_kit: KitServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import httpx

    proxy = create_proxy_app(grpc_kit.url, out=tmp_path)  # no gRPC listener
    with caplog.at_level(logging.WARNING, logger="recorder.record"), ProxyServer(proxy) as server:
        for _ in range(3):
            card = httpx.get(f"{server.url}/.well-known/agent-card.json", timeout=20).json()
    assert {"url": grpc_kit.grpc_address, "protocolBinding": "GRPC", "protocolVersion": "1.0"} in (
        card["supportedInterfaces"]
    )
    warnings = [r.getMessage() for r in caplog.records if "does not proxy" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert f"GRPC interface at {grpc_kit.grpc_address}" in warnings[0]
    assert "NOT recorded" in warnings[0]


def test_recorder_record_listens_for_grpc_when_the_card_lists_it(
    grpc_kit: KitServer, tmp_path: Path
) -> None:
    with recorder_process("--upstream", grpc_kit.url, "--out", str(tmp_path)) as (process, url):

        async def ask() -> list[StreamResponse]:
            async with await open_client(url) as client:
                return await collect(client.send_message(user_message("What can you review?")))

        assert len(asyncio.run(ask())) == 1
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert "gRPC listening on 127.0.0.1:" in stderr
    assert f"forwarding to {grpc_kit.grpc_address}" in stderr
    assert process.returncode == 0, stderr
    files = grpc_calls(tmp_path)
    assert list(files.values()) == [["SendStreamingMessage"]]


def test_the_planners_grpc_scenarios_record_checked_files_that_a_second_run_keeps(
    tmp_path: Path,
) -> None:
    from recorder.planner.grpc_scenarios import GRPC_SCENARIOS
    from recorder.planner.run import record_scenarios
    from recorder.planner.scenarios import SCENARIOS
    from recorder.replay.rerecord import keep_recorded_values
    from recorder.rules.ruleset import DEFAULT_RULES

    planned = (SCENARIOS[0], *GRPC_SCENARIOS)  # (the card first: the gRPC client is made from it)
    first = record_scenarios(tmp_path / "first", planned, kit_port=0)
    second = record_scenarios(tmp_path / "second", planned, kit_port=0)
    assert [p.name for p in first] == [
        "01-agent-card.http",
        "02-grpc-message-reply.http",
        "03-grpc-streaming.http",
        "04-grpc-get-task.http",
        "05-grpc-cancel-task.http",
        "06-grpc-errors.http",
    ]
    assert check_paths([tmp_path / "first"])[1] == []
    methods = [[e.request.target.rsplit("/", 1)[1] for e in load(p)] for p in first[1:]]
    assert methods == [
        ["SendMessage"],
        ["SendStreamingMessage"],
        ["SendMessage", "GetTask"],
        ["SendMessage", "CancelTask"],
        ["GetTask"],
    ]
    errors = first[-1].read_text()
    assert (
        "GRPC 5 NOT_FOUND" in errors and "### GetTask: a task id the agent never issued" in errors
    )
    assert "recorder-scenario" not in "".join(p.read_text() for p in first)
    # a second run with fresh ids, laid over the first (what make record does), is the first
    for old, new in zip(first[1:], second[1:], strict=True):
        previous = load(old)
        kept = keep_recorded_values(previous, load(new), DEFAULT_RULES)
        assert dump_text(kept) == old.read_text(), old.name


def dump_text(transcript: Transcript) -> str:
    from recorder import dumps

    return dumps(transcript)
