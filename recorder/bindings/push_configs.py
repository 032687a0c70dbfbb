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
"""

from __future__ import annotations

from typing import Any

from recorder.bindings import grpc, jsonrpc, rest
from recorder.format.model import GRPC_METHOD, Request

__all__ = ["config_objects", "registers_push_config"]

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
