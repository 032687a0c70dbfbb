"""The recorder's push receivers (issue 34, item 5; no network): a receiver's path is 128
random bits, it learns its config from the agent's echo, and it ends with its config or
a grace after its task's final state; the deletions each binding spells are read."""

from __future__ import annotations

import json
from typing import Any

import pytest
from factories import make_exchange

from recorder.bindings.push_configs import FORGED_TAG, deleted_config, delivery_state, is_forged
from recorder.record.proxy.receivers import PUSH_PREFIX, Receivers


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def added(receivers: Receivers, **config: Any) -> tuple[str, dict[str, Any]]:
    config = {"url": "http://127.0.0.1:9/hook", **config}
    receivers.add(config, ticket=1, file_key=None, origin="http://127.0.0.1:41241")
    return str(config["url"]).rsplit("/", 1)[1], config


def test_a_receiver_path_is_128_random_bits_and_keeps_the_clients_credentials() -> None:
    receivers = Receivers(30.0, Clock())
    ids = {added(receivers)[0] for _ in range(200)}
    assert len(ids) == 200 and all(len(i) == 22 for i in ids)  # token_urlsafe(16)
    hook_id, config = added(receivers, url="http://ann:pa55@127.0.0.1:9/hook")
    assert config["url"] == f"http://ann:pa55@127.0.0.1:41241{PUSH_PREFIX}{hook_id}"


def test_the_agents_echo_tells_the_config_and_a_deletion_ends_it() -> None:
    clock = Clock()
    receivers = Receivers(30.0, clock)
    hook_id, config = added(receivers, token="tk")
    echo = json.dumps({"result": {"id": "cfg-1", "taskId": "task-1", "url": config["url"]}})
    restored = receivers.restore(echo.encode())
    assert json.loads(restored)["result"]["url"] == "http://127.0.0.1:9/hook"
    hook = receivers.get(hook_id)
    assert hook is not None and (hook.task_id, hook.config_id, hook.token) == (
        "task-1",
        "cfg-1",
        "tk",
    )
    receivers.deleted("task-1", "other")
    assert receivers.end_state(hook) is None
    receivers.deleted("task-1", "cfg-1")
    assert receivers.end_state(hook) == "its push config was deleted"


def test_a_final_state_ends_the_tasks_receivers_after_the_grace() -> None:
    clock = Clock()
    receivers = Receivers(30.0, clock)
    first, _ = added(receivers, taskId="task-1")
    second, _ = added(receivers, taskId="task-1")
    other, _ = added(receivers, taskId="task-2")
    working = {"statusUpdate": {"taskId": "task-1", "status": {"state": "TASK_STATE_WORKING"}}}
    done = {"statusUpdate": {"taskId": "task-1", "status": {"state": "TASK_STATE_COMPLETED"}}}
    hook = receivers.get(first)
    assert hook is not None
    receivers.delivered(hook, json.dumps(working).encode())
    clock.now += 1000
    assert receivers.end_state(hook) is None  # (no final state yet: no end by time alone)
    receivers.delivered(hook, json.dumps(done).encode())
    clock.now += 29.9
    assert receivers.end_state(hook) is None
    clock.now += 0.2
    for hook_id, ended in ((first, True), (second, True), (other, False)):
        found = receivers.get(hook_id)
        assert found is not None
        assert (receivers.end_state(found) is not None) is ended


@pytest.mark.parametrize(
    ("method", "target", "body", "ids"),
    [
        (
            "POST",
            "/a2a/jsonrpc",
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "DeleteTaskPushNotificationConfig",
                "params": {"taskId": "t-1", "id": "c-1"},
            },
            ("t-1", "c-1"),
        ),
        (
            "POST",
            "/a2a/jsonrpc",
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tasks/pushNotificationConfig/delete",
                "params": {"id": "t-1", "pushNotificationConfigId": "c-1"},
            },
            ("t-1", "c-1"),
        ),
        ("DELETE", "/a2a/rest/tasks/t-1/pushNotificationConfigs/c-1", None, ("t-1", "c-1")),
        (
            "GRPC",
            "/lf.a2a.v1.A2AService/DeleteTaskPushNotificationConfig",
            {"taskId": "t-1", "id": "c-1"},
            ("t-1", "c-1"),
        ),
        ("GET", "/a2a/rest/tasks/t-1/pushNotificationConfigs/c-1", None, None),
        ("POST", "/a2a/jsonrpc", {"jsonrpc": "2.0", "id": 3, "method": "GetTask"}, None),
    ],
)
def test_the_deletion_each_binding_spells(
    method: str, target: str, body: Any, ids: tuple[str, str] | None
) -> None:
    assert deleted_config(method, target, body) == ids


def test_a_deliverys_task_and_final_state() -> None:
    assert delivery_state({"task": {"id": "t", "status": {"state": "TASK_STATE_FAILED"}}}) == (
        "t",
        True,
    )
    assert delivery_state({"artifactUpdate": {"taskId": "t", "artifact": {}}}) == ("t", False)
    assert delivery_state(
        {"kind": "status-update", "taskId": "t", "status": {"state": "completed"}}
    ) == ("t", True)
    assert delivery_state([]) == (None, False)


def test_the_forged_tag_is_a_comment_of_the_delivery() -> None:
    assert is_forged(make_exchange(comments=(FORGED_TAG,)))
    assert not is_forged(make_exchange(comments=("@forgedish",)))
