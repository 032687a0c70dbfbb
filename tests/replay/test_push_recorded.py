"""A push conversation recorded through the real recorder (the a2a-sdk client, the kit, a
loopback webhook) replays clean: its deliveries awaited and compared (`recorder.replay.pushes`);
and `serve` sends them to a live client's webhook (`recorder.serve.deliveries`)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    AuthenticationInfo,
    GetTaskPushNotificationConfigRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskPushNotificationConfig,
)

from recorder.disk.transcripts import load
from recorder.kit import KitServer
from recorder.planner.webhook import Webhook
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.replay.run import play
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve import load_stand_in
from recorder.serve.server import server_options
from recorder.servers import ServerThread

LIMIT = 20.0
ASKS = "@@ -1,2 +1,3 @@\n def total(items):\n+    # FIXME: handle it\n     return sum(items)\n"


def _message(text: str, n: int, *, task_id: str = "", context_id: str = "") -> Message:
    found = Message(message_id=f"m-{n}", role=Role.ROLE_USER, parts=[Part(text=text)])
    if task_id:
        found.task_id, found.context_id = task_id, context_id
    return found


async def _conversation(url: str, binding: str, config: TaskPushNotificationConfig) -> list[str]:
    """A review that asks for a file name, its push config registered with the SendMessage
    (JSON-RPC) or by CreateTaskPushNotificationConfig and read back (HTTP+JSON), the answer.
    Returns the urls the agent echoed (HTTP+JSON: the Create's, the Get's)."""
    seen: list[str] = []
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        settings = ClientConfig(
            httpx_client=http, streaming=False, supported_protocol_bindings=[binding]
        )
        client = ClientFactory(settings).create(card)
        request = SendMessageRequest(message=_message(ASKS, 1))
        if binding == "JSONRPC":
            request.configuration.task_push_notification_config.CopyFrom(config)
        task = [event async for event in client.send_message(request)][-1].task
        if binding != "JSONRPC":
            config.task_id = task.id
            created = await client.create_task_push_notification_config(config)
            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)
            )
            seen += [created.url, got.url]
        answer = _message("src/totals.py", 2, task_id=task.id, context_id=task.context_id)
        _ = [event async for event in client.send_message(SendMessageRequest(message=answer))]
        await client.close()
    return seen


def _deliveries(binding: str) -> int:
    # the review's updates: SUBMITTED, WORKING, INPUT_REQUIRED, then WORKING, artifact,
    # COMPLETED; a config created after the first SendMessage hears the last three only
    return 6 if binding == "JSONRPC" else 3


def _recorded(kit: KitServer, folder: Path, binding: str) -> Path:
    config = TaskPushNotificationConfig(
        token="push-token-5f1e9a",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="push-credentials-77c2b4"),
    )
    proxy = create_proxy_app(kit.base_url, out=folder, push_loopback=True)
    with Webhook() as hook, ProxyServer(proxy) as server:
        config.url = hook.url("/hook")
        asyncio.run(asyncio.wait_for(_conversation(server.url, binding, config), LIMIT))
        deadline = time.monotonic() + LIMIT
        while len(hook.received) < _deliveries(binding) and time.monotonic() < deadline:
            time.sleep(0.01)  # polling a count, bounded (the webhook has no wait of its own)
        calls = 3 if binding == "JSONRPC" else 5
        while proxy.recorded < len(hook.received) + calls and time.monotonic() < deadline:
            time.sleep(0.01)
    return next(p for p in sorted(folder.glob("*.http")) if "agent-card" not in p.name)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_a_recorded_push_conversation_replays_clean_five_times(
    kit: KitServer, tmp_path: Path, binding: str
) -> None:
    path = _recorded(kit, tmp_path, binding)
    deliveries = [e for e in load(path).exchanges if e.push_config is not None]
    assert len(deliveries) == _deliveries(binding)
    for _ in range(5):
        result = play([path], agent=kit.url, environ={"A2A_TOKEN": kit.token})
        lines = [m.describe() for e in result.transcripts[0].exchanges for m in e.mismatches]
        assert result.passed, lines


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_serve_delivers_a_recorded_conversations_updates_to_the_clients_webhook(
    kit: KitServer, tmp_path: Path, binding: str
) -> None:
    _recorded(kit, tmp_path, binding)
    stand_in = load_stand_in([str(tmp_path)], DEFAULT_RULES)
    config = TaskPushNotificationConfig(
        token="live-token-3c",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="live-credentials-8d"),
    )
    with Webhook() as hook, ServerThread(stand_in, **server_options()) as server:
        config.url = hook.url("/client/hook")
        seen = asyncio.run(asyncio.wait_for(_conversation(server.url, binding, config), LIMIT))
        assert stand_in.deliveries.wait_idle(LIMIT)
        got = list(hook.received)
    assert stand_in.problems == []
    # the agent's echo of the config names the client's webhook, not the recorded one
    assert seen == ([] if binding == "JSONRPC" else [config.url] * 2)
    assert len(got) == _deliveries(binding) and {d.path for d in got} == {"/client/hook"}
    assert {d.headers["x-a2a-notification-token"] for d in got} == {"live-token-3c"}
    assert {d.headers["authorization"] for d in got} == {"Bearer live-credentials-8d"}
    states = [
        d.body[k]["status"]["state"] for d in got for k in ("task", "statusUpdate") if k in d.body
    ]
    assert states[-1] == "TASK_STATE_COMPLETED"
