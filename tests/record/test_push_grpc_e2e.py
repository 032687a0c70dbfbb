"""Push configs registered over gRPC, through the recorder, end to end: the real kit serving
gRPC, the recorder's gRPC listener, the a2a-sdk client on its GRPC transport and a loopback
webhook. The config of a SendMessage and one made by CreateTaskPushNotificationConfig reach
the agent pointed at the recorder's receiver, so each delivery passes through it to the
client's webhook and is recorded `# @push config N` in the file of the call that registered
it; the client, and the transcript, only ever see the client's URL; no secret reaches the
disk. The recording replays clean on a fresh kit, and `recorder serve` sends its deliveries
to a live client's webhook."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from a2a.types import (
    AuthenticationInfo,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from sdk_clients import collect, open_client, user_message

from recorder import Transcript, load
from recorder.checking import check_paths
from recorder.kit import KitServer, start_kit
from recorder.planner.webhook import Delivery, Webhook
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.replay.run import play

pytestmark = pytest.mark.timeout(90)

LIMIT = 30.0
SECRET_SEGMENT = "q7Xk2mP9vL4tR8sW3nZ5"
TOKEN = "push-token-6a2d0c"
CREDENTIALS = "push-credentials-91e3f7"
ASKS = "@@ -1,2 +1,3 @@\n def total(items):\n+    # FIXME: handle it\n     return sum(items)\n"
COMPLETED = "TASK_STATE_COMPLETED"
# the first review's updates (its config came with the SendMessage): SUBMITTED, WORKING,
# INPUT_REQUIRED, then WORKING, the artifact, COMPLETED; the second's config, created once
# it asked, hears the last three
FIRST, SECOND = 6, 3


@pytest.fixture(scope="module")
def grpc_kit() -> Iterator[KitServer]:
    with start_kit(grpc_port=0) as server:
        yield server


def the_config(url: str) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(
        url=url,
        token=TOKEN,
        authentication=AuthenticationInfo(scheme="Bearer", credentials=CREDENTIALS),
    )


async def conversation(url: str, hook: str) -> dict[str, Any]:
    """Two reviews that each ask for a file name over gRPC: the first's push config in its
    SendMessage (unary), the second's made by CreateTaskPushNotificationConfig once it asked,
    read back by Get and List (its messages streamed). What the client saw of the urls."""
    seen: dict[str, Any] = {}
    async with await open_client(url, streaming=False) as client:
        request = user_message(ASKS)
        request.configuration.task_push_notification_config.CopyFrom(the_config(hook))
        task = (await collect(client.send_message(request)))[-1].task
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        seen["first"] = task.id
        answer = user_message("src/totals.py", task_id=task.id, context_id=task.context_id)
        done = (await collect(client.send_message(answer)))[-1].task
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
    async with await open_client(url) as client:
        events = await collect(client.send_message(user_message(ASKS)))
        task_id, context_id = events[0].task.id, events[0].task.context_id
        seen["second"] = task_id
        config = the_config(hook)
        config.task_id = task_id
        created = await client.create_task_push_notification_config(config)
        got = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task_id, id=created.id)
        )
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task_id)
        )
        seen["urls"] = [created.url, got.url, *(c.url for c in listed.configs)]
        answer = user_message("src/totals.py", task_id=task_id, context_id=context_id)
        await collect(client.send_message(answer))
    return seen


def _completed(deliveries: list[Delivery], task_id: str) -> bool:
    return any(
        d.state == COMPLETED and d.body.get("statusUpdate", {}).get("taskId") == task_id
        for d in deliveries
    )


@pytest.fixture(scope="module")
def recorded(
    grpc_kit: KitServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Any], list[Delivery], Path, str]:
    out = tmp_path_factory.mktemp("grpc-push")
    proxy = create_proxy_app(grpc_kit.url, out=out, push_loopback=True)
    assert grpc_kit.grpc_address is not None
    listener = proxy.listen_grpc(port=0, upstream=grpc_kit.grpc_address)
    with Webhook() as webhook, ProxyServer(proxy) as server:
        hook = webhook.url(f"/.client/push/{SECRET_SEGMENT}")
        seen = asyncio.run(asyncio.wait_for(conversation(server.url, hook), LIMIT))
        # each task's last update (COMPLETED) is its last delivery; then each is recorded
        # (the card, the first review's two calls, the second's five, and the deliveries)
        deadline = time.monotonic() + LIMIT
        while time.monotonic() < deadline and not (
            _completed(webhook.received, seen["first"])
            and _completed(webhook.received, seen["second"])
            and proxy.recorded >= len(webhook.received) + 8
        ):
            time.sleep(0.01)  # polling counts, bounded (what is awaited is another thread's)
        deliveries = list(webhook.received)
        assert listener.port
    return seen, deliveries, out, hook


def _file_of(out: Path, method: str) -> Transcript:
    """The transcript whose first call is `method` with a push config in it."""
    for path in sorted(out.glob("*.http")):
        transcript = load(path)
        if any(e.request.target.endswith("/" + method) for e in transcript.exchanges):
            return transcript
    raise AssertionError(f"no file holds a {method} call")


def test_the_webhook_gets_every_delivery_through_the_recorder_with_its_secrets(
    recorded: tuple[dict[str, Any], list[Delivery], Path, str],
) -> None:
    seen, deliveries, _, hook = recorded
    assert len([d for d in deliveries if seen["first"] in str(d.body)]) == FIRST
    assert len(deliveries) == FIRST + SECOND
    assert {d.path for d in deliveries} == {f"/.client/push/{SECRET_SEGMENT}"}
    assert {d.headers["x-a2a-notification-token"] for d in deliveries} == {TOKEN}
    assert {d.headers["authorization"] for d in deliveries} == {f"Bearer {CREDENTIALS}"}
    # the agent's echo of the created config reached the client with the client's url
    assert seen["urls"] == [hook] * 3


def test_each_delivery_is_recorded_in_the_file_of_the_call_that_registered_its_config(
    recorded: tuple[dict[str, Any], list[Delivery], Path, str],
) -> None:
    seen, deliveries, out, _ = recorded
    for method, registering, count, task_id in (
        ("SendMessage", 1, FIRST, seen["first"]),
        ("CreateTaskPushNotificationConfig", 2, SECOND, seen["second"]),
    ):
        transcript = _file_of(out, method)
        exchanges = transcript.exchanges
        assert exchanges[registering - 1].request.target.endswith("/" + method)
        pushed = [e for e in exchanges if e.push_config is not None]
        assert {e.push_config for e in pushed} == {registering}
        assert len(pushed) == count
        # as the webhook got them, in arrival order
        theirs = [d.body for d in deliveries if task_id in str(d.body)]
        assert [e.request.json for e in pushed] == theirs
        first = pushed[0].request
        assert first.method == "POST"
        assert first.target == "/.client/push/{{PUSH_URL_SECRET}}"
        assert first.headers.get("X-A2A-Notification-Token") == "{{TOKEN}}"
        assert first.headers.get("Authorization") == "Bearer {{CREDENTIALS}}"
        assert pushed[0].response.status == 200
        assert pushed[0].title.startswith("push: ")


async def streamed_review(url: str, hook: str) -> str:
    """A review whose push config comes with its SendStreamingMessage, then the answer
    (streamed too); the task's id."""
    async with await open_client(url) as client:
        request = user_message(ASKS)
        request.configuration.task_push_notification_config.CopyFrom(the_config(hook))
        task = (await collect(client.send_message(request)))[0].task
        answer = user_message("src/totals.py", task_id=task.id, context_id=task.context_id)
        await collect(client.send_message(answer))
    return str(task.id)


def test_a_config_in_a_streamed_send_is_recorded_the_same(
    grpc_kit: KitServer, tmp_path: Path
) -> None:
    proxy = create_proxy_app(grpc_kit.url, out=tmp_path, push_loopback=True)
    assert grpc_kit.grpc_address is not None
    proxy.listen_grpc(port=0, upstream=grpc_kit.grpc_address)
    with Webhook() as webhook, ProxyServer(proxy) as server:
        hook = webhook.url(f"/.client/push/{SECRET_SEGMENT}")
        task_id = asyncio.run(asyncio.wait_for(streamed_review(server.url, hook), LIMIT))
        got = webhook.wait(FIRST, LIMIT)
        deadline = time.monotonic() + LIMIT
        while time.monotonic() < deadline and proxy.recorded < FIRST + 3:
            time.sleep(0.01)  # polling a count, bounded (the writer thread's)
    assert [d.state for d in got if d.state][-1] == COMPLETED
    transcript = _file_of(out=tmp_path, method="SendStreamingMessage")
    pushed = [e for e in transcript.exchanges if e.push_config is not None]
    assert [e.push_config for e in pushed] == [1] * FIRST
    assert [e.request.json for e in pushed] == [d.body for d in got]
    assert task_id in str(pushed[-1].request.json)
    assert check_paths([tmp_path])[1] == []


def test_the_transcripts_show_the_clients_url_hold_no_secret_and_check(
    recorded: tuple[dict[str, Any], list[Delivery], Path, str],
) -> None:
    _, _, out, hook = recorded
    transcript = _file_of(out, "CreateTaskPushNotificationConfig")
    urls = []
    for exchange in transcript.exchanges:
        name = exchange.request.target.rpartition("/")[2]
        body = exchange.response.json
        if name in ("CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig"):
            urls.append(body["url"])
        elif name == "ListTaskPushNotificationConfigs":
            urls.extend(c["url"] for c in body["configs"])
    assert urls == [hook.replace(SECRET_SEGMENT, "{{PUSH_URL_SECRET}}")] * 3
    files = sorted(out.glob("*.http"))
    for path in files:
        text = path.read_text()
        for secret in (TOKEN, CREDENTIALS, SECRET_SEGMENT, "/_recorder/push/"):
            assert secret not in text, (secret, path.name)
    assert check_paths([out]) == (len(files), [])


def test_the_recording_replays_clean_on_a_fresh_kit_its_deliveries_compared(
    recorded: tuple[dict[str, Any], list[Delivery], Path, str], tmp_path: Path
) -> None:
    _, _, out, _ = recorded
    with start_kit(grpc_port=0) as fresh:
        result = play([out], agent=fresh.url)
    lines = [
        f"{Path(t.path).name} {e.number}: {e.error or ''} {[m.describe() for m in e.mismatches]}"
        for t in result.transcripts
        for e in t.exchanges
        if e.error or e.mismatches
    ]
    assert result.passed, lines
    played = {Path(t.path).name: len(t.exchanges) for t in result.transcripts}
    # the cards; the first review's two calls and six deliveries; the second's five and three
    assert sorted(played.values()) == [1, 1, 8, 8], played


def test_a_changed_delivery_of_a_grpc_registered_config_fails_at_its_place(
    recorded: tuple[dict[str, Any], list[Delivery], Path, str], tmp_path: Path
) -> None:
    _, _, out, _ = recorded
    source = next(p for p in sorted(out.glob("*.http")) if "CreateTask" in p.read_text())
    text = source.read_text()
    at = text.index("### push: artifact review")
    changed = text[:at] + text[at:].replace('"name": "review"', '"name": "notes"', 1)
    path = tmp_path / source.name
    path.write_text(changed)
    with start_kit(grpc_port=0) as fresh:
        result = play([path], agent=fresh.url)
    found = [
        (e.number, m.path, m.expected, m.actual)
        for t in result.transcripts
        for e in t.exchanges
        for m in e.mismatches
    ]
    assert found == [(7, "$.artifactUpdate.artifact.name", "notes", "review")]


@contextmanager
def serving(folder: Path) -> Iterator[str]:
    """`recorder serve FOLDER` with its gRPC binding, in a subprocess: its URL."""
    command = [sys.executable, "-c", "from recorder.cli import main; main()", "serve"]
    command += [str(folder), "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stderr is not None
            first = process.stderr.readline()
            second = process.stderr.readline()
            url = re.search(r"on (http://\S+) ", first)
            assert url and "gRPC binding on" in second, first + second
            yield url.group(1)
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                process.communicate(timeout=LIMIT)


def test_serve_sends_the_recorded_deliveries_to_the_live_clients_webhook(
    recorded: tuple[dict[str, Any], list[Delivery], Path, str],
) -> None:
    _, _, out, _ = recorded
    with serving(out) as url, Webhook() as webhook:
        hook = webhook.url("/live/hook")
        seen = asyncio.run(asyncio.wait_for(conversation(url, hook), LIMIT))
        got = webhook.wait(FIRST + SECOND, LIMIT)
    # the stand-in's echo of the created config names the live webhook
    assert seen["urls"] == [hook] * 3
    assert len(got) == FIRST + SECOND
    assert {d.path for d in got} == {"/live/hook"}
    assert {d.headers["x-a2a-notification-token"] for d in got} == {TOKEN}
    # each with the live ids (the two conversations' deliveries may interleave)
    for task_id, count in ((seen["first"], FIRST), (seen["second"], SECOND)):
        theirs = [d for d in got if task_id in str(d.body)]
        assert len(theirs) == count
        assert [d.state for d in theirs if d.state][-1] == COMPLETED
