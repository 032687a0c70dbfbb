"""The JSON-RPC binding of A2A 1.0 (spec §9), in one place.

- The methods: the eleven operations by their JSON-RPC `method` (the gRPC method names, spec
  §9), which of them answer with an event stream (SSE, each frame's data a whole JSON-RPC
  response), and A2A 0.3's names for them (`message/send` …), which the SDK's compat layer
  still takes (`a2a/compat/v0_3/jsonrpc_adapter.py`).
- The envelope (JSON-RPC 2.0): a body is a JSON-RPC message when it is an object with a
  `jsonrpc` member; a request has `id`, `method`, `params`, a response `id` and `result` or
  `error` (`code`, `message`, `data`: in A2A 1.0 an array of ProtoJSON `Any` details).
- The error codes: JSON-RPC's own (-32700 … -32600) and A2A's (-32001 … -32009), by the A2A
  error's name (the SDK's exception class: `TaskNotFoundError`).
- The agent card's interface (`protocolBinding: "JSONRPC"`, the url the client POSTs to).

Pure: no I/O, no SDK import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

import orjson

from recorder.format.jsonvalue import find_bytes

__all__ = [
    "BINDING",
    "CLIENT_MEMBERS",
    "ENVELOPE",
    "ERROR_CODES",
    "INVALID_PARAMS",
    "LEGACY_METHODS",
    "METHODS",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PAYLOADS",
    "STREAMING",
    "VERSION",
    "Method",
    "card_interface",
    "client_member_path",
    "error_code",
    "error_response",
    "is_jsonrpc",
    "method_of",
]

BINDING = "JSONRPC"
"""The card's `protocolBinding` of a JSON-RPC interface."""
VERSION = "2.0"
"""The envelope's `jsonrpc` member."""
ENVELOPE = ("jsonrpc", "id", "method", "params", "result", "error")
"""The envelope's members, in the order that tells a reader what the message is."""
CLIENT_MEMBERS = ("jsonrpc", "method", "params")
"""What a client writes in a request (its `id` aside, which the reply echoes): what is under
these members is the client's."""
PAYLOADS = ("params", "result", "error")
"""The members that carry a message's content: a request's, a result's, an error's."""


@dataclass(frozen=True)
class Method:
    """One JSON-RPC method: its A2A 1.0 name, whether its reply is an event stream, and its
    A2A 0.3 name (None for ListTasks, new in 1.0)."""

    name: str
    streaming: bool = False
    legacy: str | None = None


METHODS: Mapping[str, Method] = {
    m.name: m
    for m in (
        Method("SendMessage", legacy="message/send"),
        Method("SendStreamingMessage", True, "message/stream"),
        Method("GetTask", legacy="tasks/get"),
        Method("ListTasks"),
        Method("CancelTask", legacy="tasks/cancel"),
        Method("SubscribeToTask", True, "tasks/resubscribe"),
        Method("CreateTaskPushNotificationConfig", legacy="tasks/pushNotificationConfig/set"),
        Method("GetTaskPushNotificationConfig", legacy="tasks/pushNotificationConfig/get"),
        Method("ListTaskPushNotificationConfigs", legacy="tasks/pushNotificationConfig/list"),
        Method("DeleteTaskPushNotificationConfig", legacy="tasks/pushNotificationConfig/delete"),
        Method("GetExtendedAgentCard", legacy="agent/getAuthenticatedExtendedCard"),
    )
}
"""The eleven operations' methods, by name (spec §9)."""

STREAMING = frozenset(name for name, method in METHODS.items() if method.streaming)
"""The methods whose reply is an event stream (SendStreamingMessage, SubscribeToTask)."""

LEGACY_METHODS: Mapping[str, str] = {
    **{m.legacy: m.name for m in METHODS.values() if m.legacy},
    # no 0.3 method (ListTasks is new in 1.0), but read as one: a client that guessed the
    # name in 0.3's style means ListTasks
    "tasks/list": "ListTasks",
}
"""A2A 0.3 JSON-RPC method -> its A2A 1.0 name."""

ERROR_CODES: Mapping[str, int] = {
    # A2A's own (spec §9.5)
    "TaskNotFoundError": -32001,
    "TaskNotCancelableError": -32002,
    "PushNotificationNotSupportedError": -32003,
    "UnsupportedOperationError": -32004,
    "ContentTypeNotSupportedError": -32005,
    "InvalidAgentResponseError": -32006,
    "ExtendedAgentCardNotConfiguredError": -32007,
    "ExtensionSupportRequiredError": -32008,
    "VersionNotSupportedError": -32009,
    # JSON-RPC 2.0's
    "InvalidParamsError": -32602,
    "InvalidRequestError": -32600,
    "MethodNotFoundError": -32601,
    "InternalError": -32603,
    "JSONParseError": -32700,
}
"""The `error.code` of each A2A error (by the SDK's name for it)."""
PARSE_ERROR = ERROR_CODES["JSONParseError"]
METHOD_NOT_FOUND = ERROR_CODES["MethodNotFoundError"]
INVALID_PARAMS = ERROR_CODES["InvalidParamsError"]


def is_jsonrpc(value: object) -> TypeGuard[dict[str, Any]]:
    """Whether a parsed body is a JSON-RPC message (an object with a `jsonrpc` member)."""
    return isinstance(value, dict) and "jsonrpc" in value


def client_member_path() -> re.Pattern[str]:
    """A rules path (`$.params…`, `$['method']`) that starts at a `CLIENT_MEMBERS` member."""
    names = "|".join(CLIENT_MEMBERS)
    return re.compile(r"""^\$(?:\.|\[\s*['"])(""" + names + r""")(?![A-Za-z0-9_])""")


def method_of(value: object) -> str | None:
    """The `method` a parsed JSON-RPC request calls (None when it names none)."""
    if isinstance(value, dict):
        method = value.get("method")
        if isinstance(method, str):
            return method
    return None


def error_code(body: bytes | str | None) -> int | None:
    """The `error.code` of a JSON-RPC error reply (None for any other body)."""
    if not body:
        return None
    data = body.encode("utf-8") if isinstance(body, str) else body
    if find_bytes(data, b'"error"') < 0:  # (most replies: no parse)
        return None
    try:
        value: Any = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict) or "result" in value:
        return None
    error = value.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        if isinstance(code, int) and not isinstance(code, bool):
            return code
    return None


def error_response(rpc_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response: `{"jsonrpc": "2.0", "id": …, "error": {"code", "message",
    "data"}}` (`data` left out when None)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": VERSION, "id": rpc_id, "error": error}


def card_interface(url: str, *, version: str = "1.0") -> dict[str, str]:
    """The agent card's JSON-RPC interface (camelCase JSON, as a card is written)."""
    return {"url": url, "protocolBinding": BINDING, "protocolVersion": version}
