"""`recorder serve --fallback URL [--record-new DIR]` end to end: the CLI in a subprocess, the
real kit as the fallback agent, the real a2a-sdk client.

What the recording has is served; what it has not goes to the kit and comes back as the kit
sent it (its card pointing at the stand-in); with `--record-new` the recorder's own proxy
records that traffic, and the next `recorder serve` of it answers it without the kit.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_message_text, new_text_message
from a2a.types import GetTaskRequest, Role, SendMessageRequest, TaskState
from helpers import TRANSCRIPTS
from test_serve_e2e import LIMIT, interrupt, recorder_serve
from traffic import DIFF

from recorder import load
from recorder.disk.transcripts import find_transcripts
from recorder.kit import KitServer

pytestmark = pytest.mark.e2e


async def _client_run(url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with httpx.AsyncClient(timeout=LIMIT, headers={"A2A-Version": "1.0"}) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        seen["interfaces"] = sorted(i.url for i in card.supported_interfaces)
        config = ClientConfig(
            httpx_client=http, streaming=False, supported_protocol_bindings=["JSONRPC"]
        )
        client = ClientFactory(config).create(card)
        question = new_text_message("What languages can you review?", role=Role.ROLE_USER)
        events = [e async for e in client.send_message(SendMessageRequest(message=question))]
        seen["question"] = get_message_text(events[0].message)
        diff = new_text_message(DIFF, role=Role.ROLE_USER)
        events = [e async for e in client.send_message(SendMessageRequest(message=diff))]
        task = events[-1].task
        got = await client.get_task(GetTaskRequest(id=task.id))
        seen["review"] = (TaskState.Name(task.status.state), got.id == task.id)
        await client.close()
    return seen


def _streamed(url: str) -> list[dict[str, Any]]:
    """A SendStreamingMessage of the diff, raw: the results of its frames."""
    body = {
        "jsonrpc": "2.0",
        "id": "s-1",
        "method": "SendStreamingMessage",
        "params": {"message": {"messageId": "s-1", "role": "ROLE_USER", "parts": [{"text": DIFF}]}},
    }
    headers = {"A2A-Version": "1.0", "Accept": "text/event-stream"}
    frames: list[dict[str, Any]] = []
    with httpx.stream(
        "POST", f"{url}/a2a/jsonrpc", json=body, headers=headers, timeout=LIMIT
    ) as reply:
        assert reply.headers["content-type"].startswith("text/event-stream")
        for line in reply.iter_lines():
            if line.startswith("data:"):
                frames.append(json.loads(line[5:])["result"])
    return frames


def test_what_matches_nothing_goes_to_the_agent_and_is_recorded(
    kit: KitServer, tmp_path: Path
) -> None:
    served, new = tmp_path / "served", tmp_path / "new"
    served.mkdir()
    shutil.copy(TRANSCRIPTS / "02-message-reply.http", served)  # the question, and nothing else
    options = ("--listen", "127.0.0.1:0", "--strict", "-v")
    with recorder_serve(str(served), *options, "--fallback", kit.url, "--record-new", str(new)) as (
        process,
        url,
    ):
        seen = asyncio.run(_client_run(url))
        frames = _streamed(url)
        err, _ = interrupt(process)
    assert process.returncode == 0, err
    # a stream the recording lacks comes from the kit frame by frame, to its final event
    assert [frame.get("statusUpdate", {}).get("status", {}).get("state") for frame in frames][
        -1
    ] == "TASK_STATE_COMPLETED"
    # the card came from the kit, its interfaces pointing at the stand-in, not the kit: its
    # HTTP URLs, and its GRPC interface the stand-in's gRPC address (the kit serves gRPC, so
    # unmatched gRPC calls are relayed too: tests/serve/test_serve_grpc.py)
    http_listed = [i for i in seen["interfaces"] if "//" in i]
    grpc_listed = [i for i in seen["interfaces"] if "//" not in i]
    assert http_listed == [f"{url}/a2a/jsonrpc", f"{url}/a2a/rest"]
    assert len(grpc_listed) == 1 and grpc_listed[0] != kit.grpc_address, grpc_listed
    assert grpc_listed[0].startswith("127.0.0.1:")
    assert seen["question"].startswith("I can review Python")
    assert seen["review"] == ("TASK_STATE_COMPLETED", True)
    # the question was served; the card, the diff and the GetTask were the kit's
    assert "stopped; 1 requests answered, 0 unmatched, 4 relayed" in err, err
    assert "recorded 4 new exchanges in" in err
    recorded = [load(path) for path in find_transcripts([new])]
    methods = sorted(
        exchange.title.split(":")[0] for transcript in recorded for exchange in transcript.exchanges
    )
    assert methods == ["GetAgentCard", "GetTask", "SendMessage", "SendStreamingMessage"]
    # next time, the stand-in of both folders answers all of it without the kit
    with recorder_serve(str(served), str(new), *options) as (process, url):
        again = asyncio.run(_client_run(url))
        err, _ = interrupt(process)
    assert again == {**seen, "interfaces": [f"{url}/a2a/jsonrpc", f"{url}/a2a/rest"]}
    assert "stopped; 4 requests answered, 0 unmatched" in err and process.returncode == 0


def test_record_new_needs_a_fallback(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "from recorder.cli import main; main()", "serve"]
    done = subprocess.run(
        [*command, str(TRANSCRIPTS), "--record-new", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )
    assert done.returncode == 2
    assert done.stderr == "recorder serve: -o/--output needs --fallback URL (the agent to record)\n"


def test_an_agent_that_cannot_be_reached_is_the_no_match_error_saying_so() -> None:
    with recorder_serve(
        str(TRANSCRIPTS), "--listen", "127.0.0.1:0", "--fallback", "http://127.0.0.1:9"
    ) as (process, url):
        reply = httpx.post(
            f"{url}/a2a/jsonrpc",
            json={"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "x"}},
            headers={"A2A-Version": "1.0"},
            timeout=LIMIT,
        ).json()
        err, _ = interrupt(process)
    assert reply["id"] == 3 and reply["error"]["code"] == -32099
    assert "the fallback agent http://127.0.0.1:9 failed: ConnectError" in reply["error"]["message"]
    assert "stopped; 0 requests answered, 1 unmatched, 0 relayed" in err


def test_a_fallback_that_is_no_http_url_is_refused_before_anything_starts(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "from recorder.cli import main; main()", "serve"]
    done = subprocess.run(
        [*command, str(TRANSCRIPTS), "--fallback", "ftp://x", "--record-new", str(tmp_path / "n")],
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )
    assert done.returncode == 2
    assert (
        done.stderr == "recorder serve: --fallback ftp://x: expected an http:// or https:// URL\n"
    )
    assert not (tmp_path / "n").exists()
