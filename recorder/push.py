"""Push notification configs in requests: where a request registers one (pure).

A client registers a webhook (A2A's TaskPushNotificationConfig: `url`, `token`,
`authentication`) in a SendMessage's `configuration.taskPushNotificationConfig`, or by a
CreateTaskPushNotificationConfig (JSON-RPC: `params` is the config; HTTP+JSON: `POST
/tasks/{id}/pushNotificationConfigs`, the body is the config). A2A 0.3's spellings are read
too (`configuration.pushNotificationConfig`, `tasks/pushNotificationConfig/set` with `params.
pushNotificationConfig`). `config_objects` finds them in a parsed body, for the recorder (the
url rewritten to its receiver) and `recorder check` (a `@push config N` names an exchange that
registers one).
"""

from __future__ import annotations

import re
from typing import Any

from recorder.model import Request

__all__ = ["config_objects", "registers_push_config"]

_SEND_METHODS = frozenset({"SendMessage", "SendStreamingMessage", "message/send", "message/stream"})
_CREATE_METHODS = frozenset(
    {"CreateTaskPushNotificationConfig", "tasks/pushNotificationConfig/set"}
)
_CONFIG_KEYS = ("taskPushNotificationConfig", "pushNotificationConfig")
_REST_SEND = re.compile(r"/message:(?:send|stream)$")
_REST_CREATE = re.compile(r"/tasks/[^/]+/pushNotificationConfigs$")


def _configs_in(holder: object) -> list[dict[str, Any]]:
    """The config objects (with a string `url`) `holder` holds under a config key."""
    if not isinstance(holder, dict):
        return []
    found = [holder.get(key) for key in _CONFIG_KEYS]
    return [c for c in found if isinstance(c, dict) and isinstance(c.get("url"), str)]


def config_objects(method: str, target: str, body: object) -> list[dict[str, Any]]:
    """The push configs a request registers, as the (mutable) objects of its parsed JSON
    `body`: [] when it registers none. `method` and `target` are the HTTP ones."""
    if not isinstance(body, dict):
        return []
    rpc = body.get("method")
    if isinstance(rpc, str) and "jsonrpc" in body:
        params = body.get("params")
        if rpc in _SEND_METHODS and isinstance(params, dict):
            return _configs_in(params.get("configuration"))
        if rpc in _CREATE_METHODS and isinstance(params, dict):
            if isinstance(params.get("url"), str):
                return [params]
            return _configs_in(params)
        return []
    if method.upper() != "POST":
        return []
    path = target.split("?", 1)[0]
    if _REST_SEND.search(path):
        return _configs_in(body.get("configuration"))
    if _REST_CREATE.search(path):
        if isinstance(body.get("url"), str):
            return [body]
        return _configs_in(body) or _configs_in({"pushNotificationConfig": body.get("config")})
    return []


def registers_push_config(request: Request) -> bool:
    """Whether `request` registers a push config (a JSON body `config_objects` finds one in)."""
    if not request.is_json:
        return False
    return bool(config_objects(request.method, request.target, request.json))
