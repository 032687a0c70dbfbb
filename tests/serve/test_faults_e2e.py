"""`recorder serve --faults FILE` seen by the real a2a-sdk client (issue 38), on each binding:
the SDK's own traffic to the real kit recorded through the recorder (JSON-RPC and HTTP+JSON)
and over gRPC, served with a faults file, and the same client's calls made again. Each fault
kind is what the client sees: a 503 (gRPC UNAVAILABLE) it raises as a client error, an A2A
error it raises as that error, a delay it times out on, a stream cut after its first event
(the events before the cut, then the error), a malformed frame (the events before it, then
what the SDK makes of it). The closing report, in text and JSON, says what was served, left
unused, not matched, and which fault fired on which request."""

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

import httpx
import pytest
from a2a.client import A2AClientError, A2AClientTimeoutError, ClientCallContext
from a2a.types import GetTaskRequest
from a2a.utils.errors import TaskNotFoundError
from grpc_traffic import DIFF, record_card, record_review
from helpers import announced_address
from sdk_clients import open_client, user_message

from recorder.kit import start_kit
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

LIMIT = 20.0
DELAY = 1.0  # seconds the delayed GetTask waits
TIMEOUT = 1.0  # the client's, on a GetTask delayed 30 s (until the stand-in stops)
FAULTS = f"""\
seed: 1
faults:
  - method: SendMessage
    nth: 1
    status: 503
    grpc_status: UNAVAILABLE
  - method: GetTask
    nth: 1
    error: TaskNotFoundError
  - method: GetTask
    nth: 2
    delay: {DELAY}
  - method: SendStreamingMessage
    nth: 1
    cut_after: 1
  - method: SendStreamingMessage
    nth: 2
    malformed_frame: 2
  - method: GetTask
    nth: 3
    delay: 30
"""


async def _conversation(url: str, binding: str) -> None:
    """The SDK's review: SendMessage, GetTask of its task, a streamed review."""
    async with await open_client(url, binding, streaming=False) as client:
        events = [event async for event in client.send_message(user_message(DIFF))]
        await client.get_task(GetTaskRequest(id=events[-1].task.id))
    async with await open_client(url, binding, streaming=True) as client:
        [event async for event in client.send_message(user_message(DIFF))]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("faults")
    with start_kit(grpc_port=0) as kit:
        with ProxyServer(create_proxy_app(kit.url, out=folder / "http")) as proxy:
            for binding in ("JSONRPC", "HTTP+JSON"):
                asyncio.run(_conversation(proxy.url, binding))
        assert kit.grpc_address is not None
        (folder / "grpc").mkdir()
        record_card(kit.url, folder / "grpc" / "00-card.http")
        record_review(kit.grpc_address, folder / "grpc" / "01-review.http")
    (folder / "faults.yaml").write_text(FAULTS)
    return folder


@contextmanager
def serving(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`recorder serve ARGS` with HTTP and gRPC on free ports: (it, its URL)."""
    command = [sys.executable, "-c", "from recorder.cli import main; main()", "serve", *args]
    command += ["--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stderr is not None
            url = announced_address(process.stderr.readline())
            assert "gRPC" in process.stderr.readline()
            yield process, url
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate(timeout=LIMIT)


async def _stream(url: str, binding: str) -> tuple[list[str | None], BaseException | None]:
    """A streamed review: each event's kind as it came, and what the client raised."""
    seen: list[str | None] = []
    async with await open_client(url, binding, streaming=True) as client:
        try:
            async for event in client.send_message(user_message(DIFF)):
                seen.append(event.WhichOneof("payload") if event is not None else None)
        except Exception as exc:
            return seen, exc
    return seen, None


async def _under_faults(url: str, binding: str) -> dict[str, Any]:
    """The review again, each call meeting its fault; what the client saw."""
    seen: dict[str, Any] = {}
    async with await open_client(url, binding, streaming=False) as client:
        with pytest.raises(Exception) as status:
            [event async for event in client.send_message(user_message(DIFF))]
        seen["status"] = status.value
        # the recorded exchange the 503 stood in for is still there: the retry gets it
        events = [event async for event in client.send_message(user_message(DIFF))]
        task_id = events[-1].task.id
        with pytest.raises(Exception) as error:
            await client.get_task(GetTaskRequest(id=task_id))
        seen["error"] = error.value
        started = time.monotonic()
        task = await client.get_task(GetTaskRequest(id=task_id))
        seen["delay"] = (task.id == task_id, time.monotonic() - started)
        with pytest.raises(Exception) as late:
            await client.get_task(
                GetTaskRequest(id=task_id), context=ClientCallContext(timeout=TIMEOUT)
            )
        seen["timeout"] = late.value
    seen["cut"] = await _stream(url, binding)
    seen["malformed"] = await _stream(url, binding)
    return seen


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
def test_each_fault_is_what_the_sdk_client_sees(recorded: Path, binding: str) -> None:
    folder = recorded / ("grpc" if binding == "GRPC" else "http")
    report = recorded / f"report-{binding}.json"
    with serving(
        str(folder), "--faults", str(recorded / "faults.yaml"), "--json-report", str(report)
    ) as (process, url):
        seen = asyncio.run(_under_faults(url, binding))
        with httpx.Client(timeout=LIMIT) as http:  # a request no recording answers
            http.post(f"{url}/a2a/jsonrpc", json={"jsonrpc": "2.0", "id": 1, "method": "Nope"})
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=LIMIT)
    print(binding, {k: (type(v).__name__, str(v)[:160]) for k, v in seen.items()}, err)
    assert process.returncode == 0, err
    # the status: an HTTP 503, or gRPC UNAVAILABLE
    assert isinstance(seen["status"], A2AClientError)
    assert ("UNAVAILABLE" if binding == "GRPC" else "503") in str(seen["status"])
    # the A2A error, raised as the SDK's own error class, in each binding
    assert isinstance(seen["error"], TaskNotFoundError)
    assert "injected fault 2" in str(seen["error"])
    # a delay: the recorded reply, late; one that outlasts the client's timeout
    answered, took = seen["delay"]
    assert answered is True and took >= DELAY
    assert isinstance(seen["timeout"], A2AClientTimeoutError)
    # the stream cut after its first event: that event, then a client error
    events, raised = seen["cut"]
    assert events == ["task"] and isinstance(raised, A2AClientError), (events, raised)
    # the malformed second frame: the first event whole, then the SDK fails on the second
    # (JSON-RPC: a client error; HTTP+JSON: protobuf's ParseError, not wrapped by the SDK;
    # gRPC: the SDK yields None for a message it cannot read, then fails on it)
    events, raised = seen["malformed"]
    assert events[:1] == ["task"] and raised is not None, (events, raised)
    assert set(events[1:]) <= {None}
    # the closing report: text on stderr, JSON to the file
    data = json.loads(report.read_text())
    kinds = [(fired["fault"], fired["kind"]) for fired in data["faults"]]
    assert kinds == [
        (1, "status"),
        (2, "error"),
        (3, "delay"),
        (6, "delay"),  # (the client left; the stand-in stopped during it)
        (4, "cut"),
        (5, "malformed"),
    ]
    spoiled = [f["exchange"] is not None for f in data["faults"]]
    assert spoiled == [False, False, True, False, True, True]
    summary = data["summary"]
    assert summary["unmatched"] == 1 and data["unmatched"][0]["request"].endswith(" Nope")
    assert summary["served"] + summary["unused"] == summary["recorded"]
    assert summary["served"] >= 3 and summary["unused"] >= 1  # (another binding's, the card)
    assert summary["faults"] == 6
    assert f"{summary['unused']} unused; 1 unmatched; 6 faults injected" in err
    assert "unmatched:\n  POST /a2a/jsonrpc Nope: no recorded exchange matches" in err
    assert "ASGI callable returned" not in err and "Traceback" not in err


UNARY = """\
faults:
  - method: GetTask
    nth: 1
    cut_after: 0
  - method: GetTask
    nth: 2
    malformed_frame: 1
"""


async def _unary_under_faults(url: str, binding: str) -> list[BaseException | bool]:
    """SendMessage, then its task's GetTask three times: cut, malformed, whole."""
    seen: list[BaseException | bool] = []
    async with await open_client(url, binding, streaming=False) as client:
        events = [event async for event in client.send_message(user_message(DIFF))]
        task_id = events[-1].task.id
        for _ in range(3):
            try:
                got = await client.get_task(GetTaskRequest(id=task_id))
            except Exception as exc:
                seen.append(exc)
            else:
                seen.append(got is not None and got.id == task_id)
    return seen


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
def test_a_reply_that_is_no_stream_cut_or_malformed(recorded: Path, binding: str) -> None:
    folder = recorded / ("grpc" if binding == "GRPC" else "http")
    faults = recorded / "unary.yaml"
    faults.write_text(UNARY)
    with serving(str(folder), "--faults", str(faults)) as (process, url):
        seen = asyncio.run(_unary_under_faults(url, binding))
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=LIMIT)
    print(binding, [(type(s).__name__, str(s)[:160]) for s in seen])
    assert process.returncode == 0, err
    cut, malformed, retried = seen
    # cut: the connection closed inside the body (gRPC: UNAVAILABLE), a client error
    assert isinstance(cut, A2AClientError), cut
    # malformed: a body that is no JSON (gRPC: no protobuf): the client does not get the task
    assert malformed is not True, malformed
    # neither reply could be read: the recorded exchange answers the retry
    assert retried is True, retried
    assert "2 faults injected" in err and "Traceback" not in err, err
