"""Push receivers end, and forged deliveries are recorded as such (issue 34, item 5), end to
end: the real kit, the recorder's own server, a loopback webhook, and a third party that reads
the receiver's URL from the agent itself (ListTaskPushNotificationConfigs, not through the
recorder) and posts to it.

A delivery whose token is not its config's is forwarded (the webhook judges it) and recorded
`# @forged`, its token `{{FORGED_TOKEN}}` (it was written `{{TOKEN}}`, as the agent's); after
its config is deleted, or its task's final state and the grace, the receiver refuses
deliveries and records nothing (it forwarded and recorded them `@push`). The recording replays
clean against a fresh kit (a forged delivery is not awaited: the agent never sends it), passes
`recorder check`, and the stand-in does not send it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import httpx
import pytest

from recorder import load
from recorder.bindings.push_configs import FORGED_TAG
from recorder.checking import check_paths
from recorder.kit import KitServer, start_kit
from recorder.planner.webhook import Webhook
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.replay.run import play
from recorder.serve.deliveries import following_deliveries
from recorder.serve.steps import Step

pytestmark = pytest.mark.e2e

LIMIT = 20.0
ASKS = "@@ -1,2 +1,3 @@\n def total(items):\n+    # FIXME: handle it\n     return sum(items)\n"
TOKEN = "hook-token-real-4b2e"
FORGED = "forged-token-9c1d"
A2A = {"A2A-Version": "1.0"}


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll a condition (not a sleep standing in for one), bounded by LIMIT."""
    deadline = time.monotonic() + LIMIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def rpc(method: str, params: dict[str, Any], rpc_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}


def update(task: dict[str, Any], state: str) -> dict[str, Any]:
    status = {"state": state}
    return {
        "statusUpdate": {"taskId": task["id"], "contextId": task["contextId"], "status": status}
    }


def receiver_from_the_agent(kit: KitServer, task_id: str, config_id: str) -> str:
    """The receiver's URL as anyone who can list the task's configs at the agent reads it."""
    listed = httpx.post(
        kit.base_url + "/a2a/jsonrpc",
        json=rpc("ListTaskPushNotificationConfigs", {"taskId": task_id}, 99),
        headers=A2A,
        timeout=LIMIT,
    ).json()
    [url] = [c["url"] for c in listed["result"]["configs"] if c["id"] == config_id]
    assert "/_recorder/push/" in url
    return str(url)


def test_forged_deliveries_are_tagged_and_ended_receivers_refuse(
    kit: KitServer, tmp_path: Path
) -> None:
    out = tmp_path / "rec"
    proxy = create_proxy_app(kit.base_url, out=out, push_loopback=True, push_grace=0.0)
    with (
        Webhook() as hook,
        ProxyServer(proxy) as server,
        httpx.Client(base_url=server.url, timeout=LIMIT, headers=A2A) as client,
    ):
        scenario = {"Recorder-Scenario": "forged"}
        message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": ASKS}]}
        reply = client.post(
            "/a2a/jsonrpc", json=rpc("SendMessage", {"message": message}, 1), headers=scenario
        )
        task = reply.json()["result"]["task"]
        config = {"taskId": task["id"], "id": "cfg-1", "url": hook.url("/hook"), "token": TOKEN}
        created = client.post(
            "/a2a/jsonrpc",
            json=rpc("CreateTaskPushNotificationConfig", config, 2),
            headers=scenario,
        ).json()
        assert created["result"]["url"] == hook.url("/hook")  # (the client's, never the receiver)
        receiver = receiver_from_the_agent(kit, task["id"], "cfg-1")
        # forged: a wrong token, then none (the right one is readable at the agent too)
        wrong = httpx.post(
            receiver,
            json=update(task, "TASK_STATE_WORKING"),
            headers={"X-A2A-Notification-Token": FORGED},
            timeout=LIMIT,
        )
        missing = httpx.post(receiver, json=update(task, "TASK_STATE_WORKING"), timeout=LIMIT)
        assert (wrong.status_code, missing.status_code) == (
            200,
            200,
        )  # forwarded: the webhook judges
        assert [d.headers.get("x-a2a-notification-token") for d in hook.received] == [FORGED, None]
        # the config deleted through the recorder: its receiver ends
        deleted = client.post(
            "/a2a/jsonrpc",
            json=rpc("DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "cfg-1"}, 3),
            headers=scenario,
        ).json()
        assert "result" in deleted
        after_delete = httpx.post(
            receiver,
            json=update(task, "TASK_STATE_WORKING"),
            headers={"X-A2A-Notification-Token": TOKEN},
            timeout=LIMIT,
        )
        assert after_delete.status_code == 410
        unknown = httpx.post(
            receiver.rsplit("/", 1)[0] + "/not-a-receiver-at-all", json={}, timeout=LIMIT
        )
        assert unknown.status_code == 404
        # a second config, its task then finished: the receiver ends after the grace (0 s)
        config2 = {**config, "id": "cfg-2", "url": hook.url("/second")}
        client.post(
            "/a2a/jsonrpc",
            json=rpc("CreateTaskPushNotificationConfig", config2, 4),
            headers=scenario,
        )
        second = receiver_from_the_agent(kit, task["id"], "cfg-2")
        answer = {**message, "messageId": "m-2", "parts": [{"text": "src/totals.py"}]}
        answer |= {"taskId": task["id"], "contextId": task["contextId"]}
        done = client.post(
            "/a2a/jsonrpc", json=rpc("SendMessage", {"message": answer}, 5), headers=scenario
        ).json()
        assert done["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        wait_until(
            lambda: any(d.state == "TASK_STATE_COMPLETED" for d in hook.received),
            "the COMPLETED delivery",
        )
        got = len(hook.received)
        late = httpx.post(
            second,
            json=update(task, "TASK_STATE_WORKING"),
            headers={"X-A2A-Notification-Token": TOKEN},
            timeout=LIMIT,
        )
        assert late.status_code == 410
        assert len(hook.received) == got  # not forwarded
        status = client.get("/_recorder/status").json()
        wait_until(lambda: proxy.status()["pending"] == 0, "the recordings written")
    assert status["push_refused"] == 3  # after the delete, the unknown one, after the end
    [path] = out.glob("*.http")
    text = path.read_text()
    exchanges = load(path).exchanges
    forged = [e for e in exchanges if FORGED_TAG in e.comments]
    assert [e.request.headers.get("X-A2A-Notification-Token") for e in forged] == [
        "{{FORGED_TOKEN}}",
        None,
    ]
    genuine = [e for e in exchanges if e.push_config is not None and e not in forged]
    creates = [
        n
        for n, e in enumerate(exchanges, 1)
        if e.request.json and e.request.json.get("method") == "CreateTaskPushNotificationConfig"
    ]
    assert [e.push_config for e in forged] == [creates[0]] * 2
    assert genuine and all(e.push_config == creates[1] for e in genuine)  # the second's
    assert all(e.request.headers.get("X-A2A-Notification-Token") == "{{TOKEN}}" for e in genuine)
    for secret in (TOKEN, FORGED, "/_recorder/push/"):
        assert secret not in text
    assert check_paths([path]) == (1, [])
    # the stand-in does not send a forged delivery
    steps = [cast(Step, SimpleNamespace(exchange=e)) for e in exchanges]  # (what it reads)
    sent = [s.exchange for s in following_deliveries(steps, 1)]
    assert sent == []  # (both deliveries after the Create are forged)
    # and the player neither sends nor awaits it: clean on a fresh kit, its updates compared
    with start_kit() as fresh, Webhook():
        result = play([str(path)], agent=fresh.base_url, environ={}, timeout=LIMIT)
    assert result.passed, [
        (e.number, e.error, [str(m) for m in e.mismatches])
        for t in result.transcripts
        for e in t.exchanges
        if not e.passed
    ]
