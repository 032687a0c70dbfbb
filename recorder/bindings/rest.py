"""The HTTP+JSON binding of A2A 1.0 (spec §11), in one place.

- The routes: each operation's verb and path template (`POST /message:send`,
  `GET /tasks/{id}`, `POST /tasks/{id}:cancel` …, the proto's `google.api.http` rules; the
  SDK's `a2a/server/routes/rest_routes.py` serves the same), under any interface prefix
  (`/a2a/rest`, a `/{tenant}`); which of them answer with an event stream (SSE, each frame's
  data a bare StreamResponse).
- The error envelope: a google.rpc.Status as JSON, `{"error": {"code": <HTTP status>,
  "status": <google.rpc.Code name>, "message": …, "details": [Any …]}}`, with the HTTP status
  of each A2A error (by the SDK's name for it: `TaskNotFoundError` is 404).
- The agent card's interface (`protocolBinding: "HTTP+JSON"`, the routes' prefix as url).

Pure: no I/O, no SDK import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BINDING",
    "EXTENDED_CARD_PATH",
    "HTTP_STATUS",
    "MEDIA_TYPE",
    "ROUTES",
    "Route",
    "card_interface",
    "error_envelope",
    "operation_of",
    "streams",
]

BINDING = "HTTP+JSON"
"""The card's `protocolBinding` of an HTTP+JSON interface."""
MEDIA_TYPE = "application/a2a+json"
"""The media type the binding SHOULD use for requests and replies (§11)."""

EXTENDED_CARD_PATH = "/extendedAgentCard"
"""GetExtendedAgentCard's route (GET), under the interface's prefix."""

_VARIABLE = re.compile(r"\{(\w+)\}")


def _pattern(template: str) -> re.Pattern[str]:
    """The regex that finds the template at the end of a path. A variable is one segment
    (`[^/]+`), but a task `{id}` that ends the path holds no `:`, so that `/tasks/ID:cancel`
    is never read as GetTask's `/tasks/{id}` (AIP-136: a custom method follows its `:`)."""
    out, last = [], 0
    for found in _VARIABLE.finditer(template):
        out.append(re.escape(template[last : found.start()]))
        ends = found.end() == len(template)
        out.append("[^/:]+" if ends and found.group(1) == "id" else "[^/]+")
        last = found.end()
    out.append(re.escape(template[last:]))
    return re.compile("".join(out) + "$")


@dataclass(frozen=True)
class Route:
    """One route: the HTTP verb, the path template (after the interface's prefix) and the
    operation it calls; `pattern` finds the template at the end of a request's path."""

    verb: str
    template: str
    operation: str
    streaming: bool = False
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", _pattern(self.template))


_PUSH = "/tasks/{id}/pushNotificationConfigs"
ROUTES: tuple[Route, ...] = (
    Route("POST", "/message:send", "SendMessage"),
    Route("POST", "/message:stream", "SendStreamingMessage", streaming=True),
    Route("GET", _PUSH + "/{configId}", "GetTaskPushNotificationConfig"),
    Route("DELETE", _PUSH + "/{configId}", "DeleteTaskPushNotificationConfig"),
    Route("GET", _PUSH, "ListTaskPushNotificationConfigs"),
    Route("POST", _PUSH, "CreateTaskPushNotificationConfig"),
    Route("POST", "/tasks/{id}:cancel", "CancelTask"),
    # the spec's text says POST, the proto's http rule GET: the SDK serves both
    Route("POST", "/tasks/{id}:subscribe", "SubscribeToTask", streaming=True),
    Route("GET", "/tasks/{id}:subscribe", "SubscribeToTask", streaming=True),
    Route("GET", "/tasks/{id}", "GetTask"),
    Route("GET", "/tasks", "ListTasks"),
    Route("GET", EXTENDED_CARD_PATH, "GetExtendedAgentCard"),
)
"""The routes, in the order they are tried (a longer path before the one it extends)."""

HTTP_STATUS: Mapping[str, int] = {
    "TaskNotFoundError": 404,
    "TaskNotCancelableError": 400,
    "PushNotificationNotSupportedError": 400,
    "UnsupportedOperationError": 400,
    "ContentTypeNotSupportedError": 400,
    "InvalidAgentResponseError": 500,
    "ExtendedAgentCardNotConfiguredError": 400,
    "ExtensionSupportRequiredError": 400,
    "VersionNotSupportedError": 400,
    "InvalidParamsError": 400,
    "InvalidRequestError": 400,
    "MethodNotFoundError": 404,
    "InternalError": 500,
}
"""The HTTP status of each A2A error's reply (spec §11.6; by the SDK's name for it)."""


def operation_of(verb: str, path: str) -> str | None:
    """The operation a request calls by its verb and path (no query), under any prefix:
    `POST /a2a/rest/tasks/t-1:cancel` -> `CancelTask`; None for another request."""
    for route in ROUTES:
        if verb == route.verb and route.pattern.search(path):
            return route.operation
    return None


def streams(path: str) -> bool:
    """Whether a path ends as a streaming route does (`:stream`, `:subscribe`), whatever
    the verb."""
    return path.endswith(":stream") or path.endswith(":subscribe")


def error_envelope(
    code: int, status: str, message: str, details: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """An error reply's body: `{"error": {"code": <HTTP status>, "status": <the
    google.rpc.Code name, NOT_FOUND>, "message": …, "details": […]}}` (details left out when
    None)."""
    error: dict[str, Any] = {"code": code, "status": status, "message": message}
    if details is not None:
        error["details"] = details
    return {"error": error}


def card_interface(url: str, *, version: str = "1.0") -> dict[str, str]:
    """The agent card's HTTP+JSON interface (camelCase JSON, as a card is written): `url` is
    the routes' prefix (`http://host:port/a2a/rest`)."""
    return {"url": url, "protocolBinding": BINDING, "protocolVersion": version}
