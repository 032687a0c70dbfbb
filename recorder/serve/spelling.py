"""A2A 0.3's spelling of a request, read as A2A 1.0's (pure).

The a2a-sdk's compat layer (`a2a/compat/v0_3/conversions.py`, `jsonrpc_adapter.py`) takes a
0.3 request as the 1.0 one it converts to; so does the stand-in, when the recording has the
other spelling only (a recording of a 0.3 client served to a 1.0 one, or back):

- JSON-RPC methods: `message/send` is `SendMessage`, `tasks/get` is `GetTask`, … (`METHODS`,
  the JSON-RPC binding's `LEGACY_METHODS`).
- A message: `"kind": "message"` dropped; `role` `user` / `agent` is `ROLE_USER` / `ROLE_AGENT`.
- A part: `{"kind": "text", "text": …}` is `{"text": …}`; `{"kind": "data", "data": …}` is
  `{"data": …}`; `{"kind": "file", "file": {"uri" | "bytes", "mimeType", "name"}}` is
  `{"url" | "raw", "mediaType", "filename"}`.
- A send's configuration: `blocking: b` is `returnImmediately: not b`;
  `pushNotificationConfig` is `taskPushNotificationConfig`.

Only requests are read so; a reply goes as recorded (in the recording's spelling).
"""

from __future__ import annotations

from typing import Any

from recorder.bindings.jsonrpc import LEGACY_METHODS

__all__ = ["METHODS", "canonical_method", "modern"]

METHODS = LEGACY_METHODS
"""A2A 0.3 JSON-RPC method -> its A2A 1.0 name (`recorder.bindings.jsonrpc`)."""
_ROLES = {"user": "ROLE_USER", "agent": "ROLE_AGENT"}
_FILE_MEMBERS = {"uri": "url", "bytes": "raw", "mimeType": "mediaType", "name": "filename"}


def canonical_method(method: str | None) -> str | None:
    """The A2A 1.0 name of a JSON-RPC method (the same name when it is no 0.3 one)."""
    if method is None:
        return None
    return METHODS.get(method, method)


def modern(body: Any) -> tuple[Any, bool]:
    """(`body` spelled as A2A 1.0, whether anything was respelled); `body` is not changed."""
    if not isinstance(body, dict):
        return body, False
    method = body.get("method")
    if isinstance(method, str) and method in METHODS:
        out = dict(body, method=METHODS[method])
        params = body.get("params")
        if isinstance(params, dict):
            out["params"] = _params(params)
        return out, True
    if "message" in body and isinstance(body["message"], dict):  # HTTP+JSON message:send
        params = _params(body)
        return params, params != body
    return body, False


def _params(params: dict[str, Any]) -> dict[str, Any]:
    out = dict(params)
    message = params.get("message")
    if isinstance(message, dict):
        out["message"] = _message(message)
    configuration = params.get("configuration")
    if isinstance(configuration, dict):
        out["configuration"] = _configuration(configuration)
    return out


def _message(message: dict[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in message.items() if key != "kind"}
    role = message.get("role")
    if isinstance(role, str):
        out["role"] = _ROLES.get(role, role)
    parts = message.get("parts")
    if isinstance(parts, list):
        out["parts"] = [_part(part) if isinstance(part, dict) else part for part in parts]
    return out


def _part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("kind")
    out = {key: value for key, value in part.items() if key != "kind"}
    if kind == "file" and isinstance(part.get("file"), dict):
        del out["file"]
        for key, value in part["file"].items():
            out[_FILE_MEMBERS.get(key, key)] = value
    return out


def _configuration(configuration: dict[str, Any]) -> dict[str, Any]:
    out = dict(configuration)
    if "blocking" in out:
        blocking = out.pop("blocking")
        out["returnImmediately"] = not blocking if isinstance(blocking, bool) else blocking
    if "pushNotificationConfig" in out:
        out["taskPushNotificationConfig"] = out.pop("pushNotificationConfig")
    return out
