"""A recording made with one SDK serves the other's client: `@a2a-js/sdk` (under `node`, when
present and installed by the Makefile's `tools` step) and the Python a2a-sdk, both A2A 1.0.

Both clients do the same (`js_client.mjs` and `_python_client` here): a question, a diff (a
task), that task read back, and a task that does not exist (`tck-missing-<random>`). Each
SDK's recording, made through the real recorder in front of the real kit, is served to the
other SDK's client and to its own again: each client sees what it saw against the kit.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_message_text, new_text_message
from a2a.types import GetTaskRequest, Role, SendMessageRequest
from helpers import js_sdk_folder
from traffic import DIFF

from recorder.kit import KitServer
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve import load_stand_in
from recorder.serve.server import server_options
from recorder.servers import ServerThread

pytestmark = pytest.mark.e2e

LIMIT = 10.0
CLIENT = Path(__file__).parent / "js_client.mjs"

Client = Callable[[str], dict[str, Any]]


@pytest.fixture(scope="module")
def js_client() -> Client:
    """Runs `js_client.mjs` with node against a URL (skips without node or the package)."""
    node, folder = js_sdk_folder()
    script = folder / CLIENT.name  # node finds the package from the script's folder
    shutil.copy(CLIENT, script)

    def run(url: str) -> dict[str, Any]:
        done = subprocess.run(
            [node, str(script), url], capture_output=True, text=True, timeout=LIMIT * 3
        )
        assert done.returncode == 0, done.stderr
        seen: dict[str, Any] = json.loads(done.stdout)
        return seen

    return run


async def _python_client_run(url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with httpx.AsyncClient(timeout=LIMIT, headers={"A2A-Version": "1.0"}) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        config = ClientConfig(
            httpx_client=http, streaming=False, supported_protocol_bindings=["JSONRPC"]
        )
        client = ClientFactory(config).create(card)
        question = new_text_message("Which languages do you review?", role=Role.ROLE_USER)
        events = [e async for e in client.send_message(SendMessageRequest(message=question))]
        seen["question"] = [e.WhichOneof("payload") for e in events]
        seen["question_text"] = [get_message_text(e.message) for e in events]
        diff = new_text_message(DIFF, role=Role.ROLE_USER)
        task = [e async for e in client.send_message(SendMessageRequest(message=diff))][-1].task
        seen["review"] = [task.status.state, [artifact.name for artifact in task.artifacts]]
        got = await client.get_task(GetTaskRequest(id=task.id, history_length=1))
        seen["get_task"] = [got.id == task.id, got.status.state, len(got.history)]
        try:
            await client.get_task(GetTaskRequest(id=f"tck-missing-{uuid.uuid4().hex[:8]}"))
            seen["missing"] = "no error"
        except Exception as error:  # the error is the answer
            seen["missing"] = type(error).__name__
        await client.close()
    return seen


def python_client(url: str) -> dict[str, Any]:
    return asyncio.run(_python_client_run(url))


def _record(kit: KitServer, out: Path, client: Client) -> dict[str, Any]:
    with ProxyServer(create_proxy_app(kit.url, out=out)) as proxy:
        return client(proxy.url)


def _served(folder: Path, client: Client) -> dict[str, Any]:
    stand_in = load_stand_in([str(folder)], DEFAULT_RULES)
    with ServerThread(stand_in, **server_options()) as server:
        seen = client(server.url)
    assert stand_in.problems == []
    return seen


def test_a_js_sdk_recording_serves_the_python_client_and_itself(
    kit: KitServer, js_client: Client, tmp_path: Path
) -> None:
    from_kit = python_client(kit.url)
    js_from_kit = _record(kit, tmp_path / "js", js_client)
    assert js_from_kit["review"] == ["task", 3, ["review"]]  # TASK_STATE_COMPLETED
    assert _served(tmp_path / "js", python_client) == from_kit
    assert _served(tmp_path / "js", js_client) == js_from_kit


def test_a_python_sdk_recording_serves_the_js_client(
    kit: KitServer, js_client: Client, tmp_path: Path
) -> None:
    from_kit = js_client(kit.url)
    _record(kit, tmp_path / "py", python_client)
    assert _served(tmp_path / "py", js_client) == from_kit
