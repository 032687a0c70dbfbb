"""`recorder serve` answers the gRPC binding (issue 26): recorded gRPC calls to the real kit,
served by `recorder serve --grpc-listen`, give the a2a-sdk client on its gRPC transport the
same results as the kit itself; its card lists the stand-in's GRPC interface."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import new_text_message
from a2a.types import GetTaskRequest, ListTasksRequest, Role, SendMessageRequest
from grpc_traffic import DIFF, record_cancel_during_stream, record_card, record_review

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
            first = process.stderr.readline()
            url = re.search(r"on (http://\S+) ", first)
            second = process.stderr.readline()
            address = re.search(r"gRPC binding on (\S+)$", second.strip())
            assert url and address, first + second
            yield process, url.group(1), address.group(1)
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                process.communicate(timeout=LIMIT)


def question(text: str) -> SendMessageRequest:
    return SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER))


async def review(url: str) -> dict[str, Any]:
    """The review file's calls, made by the SDK's client on its gRPC transport."""
    out: dict[str, Any] = {}
    for streaming in (False, True):
        config = ClientConfig(
            streaming=streaming,
            supported_protocol_bindings=["GRPC"],
            grpc_channel_factory=grpc.aio.insecure_channel,
        )
        async with await create_client(url, client_config=config) as client:
            events = [event async for event in client.send_message(question(DIFF))]
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
