"""Push notifications through the recorder, end to end: the real kit, the recorder's own
server, the a2a-sdk client and a loopback webhook. The deliveries reach the client's webhook
through the recorder and are recorded in the task's file, tagged `# @push config N`; no
secret of the config reaches the disk."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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

from recorder import ParseError, load
from recorder.checking import check_paths
from recorder.kit import KitServer
from recorder.planner.webhook import Webhook
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer

LIMIT = 20.0
SECRET_SEGMENT = "q7Xk2mP9vL4tR8sW3nZ5"
SECRET_PATH = f"/.other-tool/push/{SECRET_SEGMENT}"
TOKEN = "push-token-5f1e9a"
CREDENTIALS = "push-credentials-77c2b4"
ASKS = "@@ -1,2 +1,3 @@\n def total(items):\n+    # FIXME: handle it\n     return sum(items)\n"


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll a condition (not a sleep standing in for one), bounded by LIMIT."""
    deadline = time.monotonic() + LIMIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    with Webhook() as hook:
        yield hook


def message(text: str, n: int, *, task_id: str = "", context_id: str = "") -> Message:
    found = Message(message_id=f"m-{n}", role=Role.ROLE_USER, parts=[Part(text=text)])
    if task_id:
        found.task_id, found.context_id = task_id, context_id
    return found


async def conversation(proxy_url: str, binding: str, config: TaskPushNotificationConfig) -> Any:
    """A review that asks a question, its task's push config registered with the first
    SendMessage (JSON-RPC) or by CreateTaskPushNotificationConfig (HTTP+JSON), then the
    answer. Returns what the client saw of the config's url."""
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        card = await A2ACardResolver(http, proxy_url).get_agent_card()
        config_for = ClientConfig(
            httpx_client=http, streaming=False, supported_protocol_bindings=[binding]
        )
        client = ClientFactory(config_for).create(card)
        request = SendMessageRequest(message=message(ASKS, 1))
        if binding == "JSONRPC":
            request.configuration.task_push_notification_config.CopyFrom(config)
        events = [event async for event in client.send_message(request)]
        task = events[-1].task
        assert task.status.state == 6  # INPUT_REQUIRED
        seen = []
        if binding != "JSONRPC":
            config.task_id = task.id
            created = await client.create_task_push_notification_config(config)
            seen.append(created.url)
            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)
            )
            seen.append(got.url)
        answer = message("src/totals.py", 2, task_id=task.id, context_id=task.context_id)
        events = [event async for event in client.send_message(SendMessageRequest(message=answer))]
        assert events[-1].task.status.state == 3  # COMPLETED
        await client.close()
        return seen


def the_config(url: str) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(
        url=url,
        token=TOKEN,
        authentication=AuthenticationInfo(scheme="Bearer", credentials=CREDENTIALS),
    )


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_deliveries_reach_the_webhook_through_the_recorder_and_are_recorded_in_the_tasks_file(
    kit: KitServer, webhook: Webhook, tmp_path: Path, binding: str
) -> None:
    proxy = create_proxy_app(kit.base_url, out=tmp_path, push_loopback=True)
    with ProxyServer(proxy) as server:
        seen = asyncio.run(conversation(server.url, binding, the_config(webhook.url(SECRET_PATH))))
        # the review's last update (COMPLETED) is the last delivery
        wait_until(
            lambda: any(
                d.body.get("statusUpdate", {}).get("status", {}).get("state")
                == "TASK_STATE_COMPLETED"
                for d in webhook.received
            ),
            "the COMPLETED delivery",
        )
        deliveries = list(webhook.received)
        # the card, the two SendMessages (and the Create and the Get on HTTP+JSON)
        calls = 3 if binding == "JSONRPC" else 5
        wait_until(lambda: proxy.recorded >= len(deliveries) + calls, "the deliveries recorded")
    # the client sees its own url in the agent's echo, never the recorder's receiver
    assert seen == ([] if binding == "JSONRPC" else [webhook.url(SECRET_PATH)] * 2)
    # the webhook got each delivery, with the config's token and credentials
    assert {d.path for d in deliveries} == {SECRET_PATH}
    assert {d.headers["x-a2a-notification-token"] for d in deliveries} == {TOKEN}
    assert {d.headers["authorization"] for d in deliveries} == {f"Bearer {CREDENTIALS}"}
    states = [
        d.body[kind]["status"]["state"]
        for d in deliveries
        for kind in ("task", "statusUpdate")
        if kind in d.body
    ]
    assert states[-1] == "TASK_STATE_COMPLETED"
    # one file: the task's, with the card fetch aside
    files = sorted(tmp_path.glob("*.http"))
    task_file = next(p for p in files if "agent-card" not in p.name)
    transcript = load(task_file)
    tags = [e.push_config for e in transcript.exchanges]
    registering = 1 if binding == "JSONRPC" else 2
    assert tags.count(registering) == len(deliveries)
    assert set(tags) == {None, registering}
    recorded = [e for e in transcript.exchanges if e.push_config is not None]
    # arrival order: what the webhook got, in the order it got it
    assert [e.request.json for e in recorded] == [d.body for d in deliveries]
    first = recorded[0].request
    assert first.target == "/.other-tool/push/{{PUSH_URL_SECRET}}"
    assert first.headers.get("Host") == f"127.0.0.1:{webhook.port}"
    assert first.headers.get("X-A2A-Notification-Token") == "{{TOKEN}}"
    assert first.headers.get("Authorization") == "Bearer {{CREDENTIALS}}"
    assert recorded[0].response.status == 200
    assert recorded[0].response.json == {"ok": True}
    assert recorded[0].title.startswith("push: ")
    # no secret on disk, and no trace of the recorder's receiver
    for path in files:
        text = path.read_text()
        for secret in (TOKEN, CREDENTIALS, SECRET_SEGMENT, "/_recorder/push/"):
            assert secret not in text, (secret, path.name)
    assert check_paths([tmp_path]) == (len(files), [])


def _recorded_deliveries(folder: Path) -> list[Any]:
    found = []
    for path in sorted(folder.glob("*.http")):
        with contextlib.suppress(ParseError):  # (a file being appended to)
            found.extend(e for e in load(path).exchanges if e.push_config is not None)
    return found


def test_a_webhook_that_cannot_be_reached_is_a_502_to_the_agent_and_recorded_so(
    kit: KitServer, tmp_path: Path
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}/hook"
        proxy = create_proxy_app(kit.base_url, out=tmp_path, push_loopback=True)
        with ProxyServer(proxy) as server:

            async def run() -> None:
                async with httpx.AsyncClient(timeout=LIMIT) as http:
                    card = await A2ACardResolver(http, server.url).get_agent_card()
                    config = ClientConfig(httpx_client=http, streaming=False)
                    client = ClientFactory(config).create(card)
                    request = SendMessageRequest(message=message(ASKS, 1))
                    request.configuration.task_push_notification_config.CopyFrom(
                        TaskPushNotificationConfig(url=dead, token=TOKEN)
                    )
                    _ = [event async for event in client.send_message(request)]
                    await client.close()

            asyncio.run(run())
            # the review's three updates (SUBMITTED, WORKING, INPUT_REQUIRED), one after another
            wait_until(lambda: len(_recorded_deliveries(tmp_path)) >= 3, "three deliveries")
    dead_ones = _recorded_deliveries(tmp_path)
    for exchange in dead_ones:
        assert exchange.push_config == 1
        assert exchange.response.status == 502
        assert "could not be reached" in exchange.response.json["error"]["message"]
    for path in tmp_path.glob("*.http"):
        assert TOKEN not in path.read_text()
