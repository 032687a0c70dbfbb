"""Push notification configs in requests: where a request registers one (pure).

A client registers a webhook (A2A's TaskPushNotificationConfig: `url`, `token`,
`authentication`) in a SendMessage's `configuration.taskPushNotificationConfig`, or by a
CreateTaskPushNotificationConfig (JSON-RPC: `params` is the config; HTTP+JSON: `POST
/tasks/{id}/pushNotificationConfigs`, the body is the config; gRPC: the request message is
the config, its ProtoJSON the body). A2A 0.3's spellings are read
too (`configuration.pushNotificationConfig`, `tasks/pushNotificationConfig/set` with `params.
pushNotificationConfig`). `config_objects` finds them in a parsed body, for the recorder (the
url rewritten to its receiver) and `recorder check` (a `@push config N` names an exchange that
registers one).

And what else the recorder's push receivers need to know of the traffic (pure):
`deleted_config` (the task and config a DeleteTaskPushNotificationConfig names: its receiver
ends with it), `delivery_state` (the task a delivery is about, and whether its state is final:
its receivers end a grace after), and the `@forged` tag: a delivery whose
`X-A2A-Notification-Token` is not the token its config registered (none where one was, one
where none was) is recorded with `# @forged` beside its `# @push config N`, its token header
`{{FORGED_TOKEN}}`: not the agent's delivery so far as the recorder can tell (`is_forged`).
The player neither awaits nor counts it, the stand-in does not send it, `recorder check`
fails the tag on an exchange that is no delivery.
"""

from __future__ import annotations

import re
from typing import Any

from recorder.bindings import grpc, jsonrpc, rest
from recorder.format.model import GRPC_METHOD, Exchange, Request

__all__ = [
    "FORGED_TAG",
    "FORGED_TOKEN",
    "TERMINAL_STATES",
    "config_objects",
    "deleted_config",
    "delivery_state",
    "is_forged",
    "registers_push_config",
]

FORGED_TAG = "@forged"
"""The tag (a comment of the delivery) of a delivery whose token is not its config's."""
FORGED_TOKEN = "FORGED_TOKEN"
"""The placeholder a forged delivery's token header is written as (not `{{TOKEN}}`: that
would read as the config's own)."""
TERMINAL_STATES = frozenset(
    {
        "TASK_STATE_COMPLETED",
        "TASK_STATE_FAILED",
        "TASK_STATE_CANCELED",
        "TASK_STATE_REJECTED",
        # A2A 0.3's spellings
        "completed",
        "failed",
        "canceled",
        "rejected",
    }
)
"""A task's final states: no update follows one."""
_DELETE = "DeleteTaskPushNotificationConfig"
# the ids of a REST Delete's path: /tasks/{id}/pushNotificationConfigs/{configId}
_DELETE_PATH = re.compile(r"/tasks/([^/]+)/pushNotificationConfigs/([^/]+)$")

_SENDS = frozenset({"SendMessage", "SendStreamingMessage"})
_CREATE = "CreateTaskPushNotificationConfig"
_CONFIG_KEYS = ("taskPushNotificationConfig", "pushNotificationConfig")


def _configs_in(holder: object) -> list[dict[str, Any]]:
    """The config objects (with a string `url`) `holder` holds under a config key."""
    if not isinstance(holder, dict):
        return []
    found = [holder.get(key) for key in _CONFIG_KEYS]
    return [c for c in found if isinstance(c, dict) and isinstance(c.get("url"), str)]


def config_objects(method: str, target: str, body: object) -> list[dict[str, Any]]:
    """The push configs a request registers, as the (mutable) objects of its parsed JSON
    `body`: [] when it registers none. `method` and `target` are the request line's (a
    gRPC call's: `GRPC` and the call's path, its body the message's ProtoJSON)."""
    if not isinstance(body, dict):
        return []
    if method == GRPC_METHOD:
        name = grpc.method_of(target)
        if name in _SENDS:
            return _configs_in(body.get("configuration"))
        if name == _CREATE and isinstance(body.get("url"), str):
            return [body]
        return []
    rpc = jsonrpc.method_of(body)
    if rpc is not None and jsonrpc.is_jsonrpc(body):
        params = body.get("params")
        operation = jsonrpc.LEGACY_METHODS.get(rpc, rpc)  # (0.3's names read as 1.0's)
        if operation in _SENDS and isinstance(params, dict):
            return _configs_in(params.get("configuration"))
        if operation == _CREATE and isinstance(params, dict):
            if isinstance(params.get("url"), str):
                return [params]
            return _configs_in(params)
        return []
    if method.upper() != "POST":
        return []
    routed = rest.operation_of("POST", target.split("?", 1)[0])
    if routed in _SENDS:
        return _configs_in(body.get("configuration"))
    if routed == _CREATE:
        if isinstance(body.get("url"), str):
            return [body]
        return _configs_in(body) or _configs_in({"pushNotificationConfig": body.get("config")})
    return []


def registers_push_config(request: Request) -> bool:
    """Whether `request` registers a push config (a JSON body `config_objects` finds one in)."""
    if not request.is_json:
        return False
    return bool(config_objects(request.method, request.target, request.json))


def is_forged(exchange: Exchange) -> bool:
    """Whether `exchange` is tagged `# @forged` (a delivery whose token was not its
    config's)."""
    return any(comment.strip() == FORGED_TAG for comment in exchange.comments)


def deleted_config(method: str, target: str, body: object) -> tuple[str, str] | None:
    """(task id, config id) of the push config a request deletes (a
    DeleteTaskPushNotificationConfig, on any binding; 0.3's `tasks/pushNotificationConfig/
    delete` too), None for any other request. `body` is its parsed JSON (None: none)."""
    if method == GRPC_METHOD:
        if grpc.method_of(target) == _DELETE and isinstance(body, dict):
            return _ids(body.get("taskId"), body.get("id"))
        return None
    if jsonrpc.is_jsonrpc(body):
        rpc = jsonrpc.method_of(body)
        params = body.get("params")
        if rpc is None or not isinstance(params, dict):
            return None
        if rpc == _DELETE:
            return _ids(params.get("taskId"), params.get("id"))
        if jsonrpc.LEGACY_METHODS.get(rpc) == _DELETE:
            return _ids(params.get("id"), params.get("pushNotificationConfigId"))
        return None
    path = target.split("?", 1)[0]
    if method.upper() == "DELETE" and rest.operation_of("DELETE", path) == _DELETE:
        found = _DELETE_PATH.search(path)
        if found is not None:
            return found.group(1), found.group(2)
    return None


def _ids(task: object, config: object) -> tuple[str, str] | None:
    if isinstance(task, str) and isinstance(config, str) and task and config:
        return task, config
    return None


def delivery_state(body: object) -> tuple[str | None, bool]:
    """(the id of the task a delivery's body is about, whether it says the task reached a
    final state): a StreamResponse's `task`, `statusUpdate` or `artifactUpdate` (A2A 1.0), or
    0.3's bare Task or event (`kind`)."""
    if not isinstance(body, dict):
        return None, False
    for kind in ("task", "statusUpdate", "artifactUpdate"):
        event = body.get(kind)
        if isinstance(event, dict):
            break
    else:
        event = body  # (0.3: the event itself)
    task = event.get("taskId", event.get("id") if "status" in event else None)
    status = event.get("status")
    state = status.get("state") if isinstance(status, dict) else None
    final = isinstance(state, str) and state in TERMINAL_STATES
    return (task if isinstance(task, str) else None), final
