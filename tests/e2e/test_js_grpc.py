"""Held-out gRPC traffic: the `@a2a-js/sdk` on its gRPC binding (`@grpc/grpc-js`, under
`node`, when present and installed by the Makefile's `tools` step), not the SDK the recorder
was built with.

- Its client (`js_grpc_client.mjs`) takes the card's GRPC interface and asks a question,
  reviews a diff, reads the task back, streams a review, cancels a slow review while its
  stream is open, and asks for a task that does not exist. Through `recorder record` it sees
  what it sees from the kit directly; what was recorded checks, replays clean on a fresh kit,
  and `recorder serve` of it gives the same client the same again.
- Its server (`js_grpc_agent.mjs`, the SDK's `grpcService`): the Python a2a-sdk client on its
  gRPC transport through `recorder record` sees what it sees from that agent directly, and
  what was recorded checks, replays clean against a fresh agent process (other ids), and
  `recorder serve` of it gives that client the same again.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from a2a.types import CancelTaskRequest, GetTaskRequest
from grpc_sdk_traffic import grpc_calls, serving
from helpers import js_sdk_folder, recorder_process
from sdk_clients import open_client, user_message

from recorder.checking import check_paths
from recorder.kit import start_kit
from recorder.replay.run import play

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

LIMIT = 30.0  # seconds, for one client run and for a process to stop
CLIENT = Path(__file__).parent / "js_grpc_client.mjs"
AGENT = Path(__file__).parent / "js_grpc_agent.mjs"

Client = Callable[[str], dict[str, Any]]


@pytest.fixture(scope="module")
def js_folder() -> tuple[str, Path]:
    """(node, the folder with the SDK and @grpc/grpc-js installed, the scripts beside them);
    skips without node or the packages."""
    node, folder = js_sdk_folder(grpc=True)
    for script in (CLIENT, AGENT):  # node finds the packages from the script's folder
        shutil.copy(script, folder / script.name)
    return node, folder


@pytest.fixture(scope="module")
def js_client(js_folder: tuple[str, Path]) -> Client:
    """Runs `js_grpc_client.mjs` with node against an agent's URL."""
    node, folder = js_folder
    script = folder / CLIENT.name

    def run(url: str) -> dict[str, Any]:
        done = subprocess.run(
            [node, str(script), url], capture_output=True, text=True, timeout=LIMIT
        )
        assert done.returncode == 0, done.stderr
        seen: dict[str, Any] = json.loads(done.stdout)
        return seen

    return run


def test_the_js_sdks_grpc_client_is_recorded_replayed_and_served(
    js_client: Client, tmp_path: Path
) -> None:
    with start_kit(port=0, grpc_port=0) as kit:
        direct = js_client(kit.url)
    # what the kit gives it (so that a client that got nothing cannot pass)
    assert direct["question"][0] == "message" and "Python" in direct["question"][1][0]
    assert direct["stream"][-1] == ["statusUpdate", 3]  # TASK_STATE_COMPLETED
    assert direct["canceled"] == 5 and direct["slow"][-1] == ["statusUpdate", 5]  # CANCELED
    assert direct["missing"] == "GrpcTaskNotFoundError"
    folder = tmp_path / "recorded"
    with (
        start_kit(port=0, grpc_port=0) as kit,
        recorder_process("--upstream", kit.url, "--out", str(folder)) as (process, url),
    ):
        through = js_client(url)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, stderr
    assert through == direct  # the recorder changed nothing of what the client got
    calls = sorted(m for methods in grpc_calls(folder).values() for m in methods)
    two = ["SendMessage", "GetTask", "SendStreamingMessage"]
    assert calls == sorted([*two, *two, "CancelTask"])
    assert check_paths([folder])[1] == []
    for _ in range(2):  # on fresh kits, that never saw the recorded ids
        with start_kit(port=0, grpc_port=0) as fresh:
            result = play([folder], agent=fresh.url)
        errors = [e.error for t in result.transcripts for e in t.exchanges if e.error]
        mismatches = [m.path for t in result.transcripts for e in t.exchanges for m in e.mismatches]
        assert (errors, mismatches) == ([], [])
    with serving(folder) as (served, served_url):
        again = js_client(served_url)
        served.send_signal(signal.SIGINT)
        _, err = served.communicate(timeout=LIMIT)
    assert again == direct
    assert "0 unmatched" in err, err


@contextmanager
def js_agent(js_folder: tuple[str, Path]) -> Iterator[str]:
    """`js_grpc_agent.mjs` running: its HTTP base URL (its card there lists its gRPC port)."""
    node, folder = js_folder
    with subprocess.Popen(
        [node, str(folder / AGENT.name)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()  # (the agent prints it once it listens)
            assert line.startswith("serving "), line + (
                process.stderr.read() if process.stderr else ""
            )
            yield line.split()[1]
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.communicate(timeout=LIMIT)
            finally:
                if process.poll() is None:
                    process.kill()


async def python_session(url: str) -> dict[str, Any]:
    """The Python a2a-sdk client on its gRPC transport, blocking then streaming: a message, a
    task, its GetTask, a task canceled during its stream, an unknown task."""
    seen: dict[str, Any] = {}
    for streaming in (False, True):
        async with await open_client(url, streaming=streaming) as client:
            events = [e async for e in client.send_message(user_message("hello there"))]
            seen[f"hello {streaming}"] = [e.WhichOneof("payload") for e in events]
            events = [e async for e in client.send_message(user_message("review this"))]
            seen[f"task {streaming}"] = [e.WhichOneof("payload") for e in events]
            task_id = events[0].task.id
            task = await client.get_task(GetTaskRequest(id=task_id))
            texts = [part.text for artifact in task.artifacts for part in artifact.parts]
            seen[f"get {streaming}"] = (task.id == task_id, task.status.state, texts)
            if streaming:
                stream = client.send_message(user_message("please wait"))
                opened = [await anext(stream), await anext(stream)]
                canceled = await client.cancel_task(CancelTaskRequest(id=opened[0].task.id))
                rest = [e async for e in stream]
                events = [e.WhichOneof("payload") for e in opened + rest]
                seen["cancel"] = (canceled.status.state, events)
                try:
                    await client.get_task(GetTaskRequest(id="no-such-task"))
                except Exception as exc:  # (the A2A error the status details name)
                    seen["unknown"] = type(exc).__name__
    return seen


def test_a_js_sdk_grpc_agent_is_recorded_and_replayed_with_the_python_client(
    js_folder: tuple[str, Path], tmp_path: Path
) -> None:
    with js_agent(js_folder) as url:
        direct = asyncio.run(asyncio.wait_for(python_session(url), LIMIT))
    assert direct["task True"] == ["task", "status_update", "artifact_update", "status_update"]
    assert direct["get False"] == (True, 3, ["REVIEW THIS"])  # TASK_STATE_COMPLETED
    assert direct["cancel"][0] == 5 and direct["unknown"] == "TaskNotFoundError"
    folder = tmp_path / "recorded"
    with (
        js_agent(js_folder) as url,
        recorder_process("--upstream", url, "--out", str(folder)) as (process, proxy_url),
    ):
        through = asyncio.run(asyncio.wait_for(python_session(proxy_url), LIMIT))
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, stderr
    assert through == direct
    calls = sorted(m for methods in grpc_calls(folder).values() for m in methods)
    assert calls.count("SendMessage") == 2 and calls.count("SendStreamingMessage") == 3
    assert calls.count("GetTask") == 3 and calls.count("CancelTask") == 1
    assert check_paths([folder])[1] == []
    with js_agent(js_folder) as fresh:  # another process: none of the recorded ids
        result = play([folder], agent=fresh)
    errors = [e.error for t in result.transcripts for e in t.exchanges if e.error]
    mismatches = [m.path for t in result.transcripts for e in t.exchanges for m in e.mismatches]
    assert (errors, mismatches) == ([], [])
    assert result.exchange_count >= len(calls)
    # the recording as a stand-in for the JS agent: the same client gets the same again
    with serving(folder) as (served, served_url):
        again = asyncio.run(asyncio.wait_for(python_session(served_url), LIMIT))
        served.send_signal(signal.SIGINT)
        _, err = served.communicate(timeout=LIMIT)
    assert again == direct
    assert "0 unmatched" in err, err
