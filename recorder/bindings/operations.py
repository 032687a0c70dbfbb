"""The three bindings side by side: each A2A operation's name in each, and each A2A error's.

Built from the binding modules (`jsonrpc`, `rest`, `grpc`), which hold the wire knowledge;
this module only lines them up, one row per operation (`operations_table()` prints them all):

    operation             REST route               stream  JSON-RPC  gRPC
    SendMessage           POST /message:send       no      =         =
    SendStreamingMessage  POST /message:stream     yes     =         =
    GetTask               GET /tasks/{id}          no      =         =
    …

(`=`: the JSON-RPC and gRPC methods are the operation's name, spec §9 and §10), and one
row per A2A error (`errors_table()`):

    error                 reason          JSON-RPC  HTTP  gRPC
    TaskNotFoundError     TASK_NOT_FOUND  -32001    404   NOT_FOUND
    …

Also what every binding shares: the agent card's well-known path (discovery, spec §8.2).

Pure: no I/O, no SDK import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from recorder.bindings import grpc, jsonrpc, rest

__all__ = [
    "AGENT_CARD_PATH",
    "ERRORS",
    "LEGACY_AGENT_CARD_PATH",
    "OPERATIONS",
    "A2AError",
    "Operation",
    "errors_table",
    "operations_table",
]

AGENT_CARD_PATH = "/.well-known/agent-card.json"
"""Where an agent serves its public card (spec §8.2), under any prefix."""
LEGACY_AGENT_CARD_PATH = "/.well-known/agent.json"
"""A2A 0.3's card path (at the root only)."""


@dataclass(frozen=True)
class Operation:
    """One operation in the three bindings: its JSON-RPC method, REST routes (verb and
    template), gRPC method, and whether its reply is a stream."""

    name: str
    jsonrpc: str
    rest: tuple[str, ...]
    grpc: str
    streaming: bool


def _operations() -> Mapping[str, Operation]:
    table = {}
    for name, method in jsonrpc.METHODS.items():
        routes = tuple(f"{r.verb} {r.template}" for r in rest.ROUTES if r.operation == name)
        grpc_method = grpc.METHODS[name]
        table[name] = Operation(name, method.name, routes, grpc_method.name, method.streaming)
    return table


OPERATIONS: Mapping[str, Operation] = _operations()
"""The eleven operations (spec §5.3), by their A2A 1.0 name."""

# The ErrorInfo `reason` each binding sends in its error's details (the SDK's strings: the
# error's name in UPPER_SNAKE_CASE without `Error`, but INTERNAL_ERROR)
_REASONS: Mapping[str, str] = {
    "TaskNotFoundError": "TASK_NOT_FOUND",
    "TaskNotCancelableError": "TASK_NOT_CANCELABLE",
    "PushNotificationNotSupportedError": "PUSH_NOTIFICATION_NOT_SUPPORTED",
    "UnsupportedOperationError": "UNSUPPORTED_OPERATION",
    "ContentTypeNotSupportedError": "CONTENT_TYPE_NOT_SUPPORTED",
    "InvalidAgentResponseError": "INVALID_AGENT_RESPONSE",
    "ExtendedAgentCardNotConfiguredError": "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    "ExtensionSupportRequiredError": "EXTENSION_SUPPORT_REQUIRED",
    "VersionNotSupportedError": "VERSION_NOT_SUPPORTED",
    "InvalidParamsError": "INVALID_PARAMS",
    "InvalidRequestError": "INVALID_REQUEST",
    "MethodNotFoundError": "METHOD_NOT_FOUND",
    "InternalError": "INTERNAL_ERROR",
}


@dataclass(frozen=True)
class A2AError:
    """One A2A error in the three bindings: its ErrorInfo reason, JSON-RPC code, HTTP
    status and gRPC status (None where the binding has none: JSON-RPC's parse error)."""

    name: str
    reason: str | None
    jsonrpc: int
    http: int | None
    grpc: str | None


ERRORS: Mapping[str, A2AError] = {
    name: A2AError(
        name, _REASONS.get(name), code, rest.HTTP_STATUS.get(name), grpc.ERROR_STATUS.get(name)
    )
    for name, code in jsonrpc.ERROR_CODES.items()
}
"""The A2A errors (spec §3.3.2, §9.5, §11.6), by the SDK's name for each."""


def _table(rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows)
    return "\n".join(line.rstrip() for line in lines)


def operations_table() -> str:
    """The operations side by side, one line each (a second REST route on a line of its
    own): the operation, its REST route, whether it streams, and its JSON-RPC and gRPC
    methods where they are not the operation's name (`=` where they are)."""
    rows = [("operation", "REST route", "stream", "JSON-RPC", "gRPC")]
    for op in OPERATIONS.values():
        for index, route in enumerate(op.rest):
            if index:
                rows.append(("", route, "", "", ""))
                continue
            stream = "yes" if op.streaming else "no"
            rpc = "=" if op.jsonrpc == op.name else op.jsonrpc
            rows.append((op.name, route, stream, rpc, "=" if op.grpc == op.name else op.grpc))
    return _table(rows)


def errors_table() -> str:
    """The A2A errors side by side, one line each."""
    rows = [("error", "reason", "JSON-RPC", "HTTP", "gRPC")]
    for e in ERRORS.values():
        http = "" if e.http is None else str(e.http)
        rows.append((e.name, e.reason or "", str(e.jsonrpc), http, e.grpc or ""))
    return _table(rows)
