"""What a request that matches no recorded exchange gets (pure): the message and the error
body, in A2A 1.0's shapes.

- JSON-RPC (HTTP 200): `{"jsonrpc": "2.0", "id": ..., "error": {"code": -32099, "message": ...,
  "data": [ErrorInfo, BadRequest]}}`: A2A 1.0's `error.data` is an array of ProtoJSON `Any`
  details, each with its `@type`.
- Any other request (HTTP 404): a `google.rpc.Status`, as A2A's HTTP+JSON binding answers
  errors: `{"error": {"code": 404, "status": "NOT_FOUND", "message": ..., "details": [...]}}`.

The details: a `google.rpc.ErrorInfo` (`reason` NO_RECORDED_MATCH, `domain` recorder,
`metadata`: the closest recorded exchange as `closest` (file:line) and `title`) and, when
anything differs, a `google.rpc.BadRequest` whose `fieldViolations` name each place that
differs (`field`: `$.params.id`, `header a2a-version`, `target`; `description`: how).
"""

from __future__ import annotations

from typing import Any

from recorder.bindings import jsonrpc, rest
from recorder.format.jsonbody import NOT_JSON, compact_json
from recorder.serve.book import NotFound
from recorder.serve.match import LiveRequest

__all__ = ["NO_MATCH", "REASON", "error_body", "no_match_message"]

NO_MATCH = -32099
"""The JSON-RPC error code of a request no recorded request matches (server error range)."""
REASON = "NO_RECORDED_MATCH"
_DOMAIN = "recorder"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"


def no_match_message(live: LiveRequest, found: NotFound) -> str:
    """`no recorded exchange matches POST /a2a/jsonrpc GetTask; closest: FILE:LINE (title):
    $.params.id: ...`."""
    what = f"{live.method} {live.target}"
    if live.rpc_method:
        what += f" {live.rpc_method}"
    message = f"no recorded exchange matches {what}"
    if found.closest is not None:
        step = found.closest
        message += f"; closest: {step.where} ({step.title or step.exchange.request.method})"
    if found.differences:
        message += ": " + "; ".join(found.differences[:5])
        if len(found.differences) > 5:
            message += f"; and {len(found.differences) - 5} more"
    return message


def _details(found: NotFound) -> list[dict[str, Any]]:
    metadata: dict[str, str] = {}
    if found.closest is not None:
        metadata = {"closest": found.closest.where, "title": found.closest.title}
    details: list[dict[str, Any]] = [
        {"@type": _ERROR_INFO, "reason": REASON, "domain": _DOMAIN, "metadata": metadata}
    ]
    if found.differences:
        violations = []
        for difference in found.differences:
            where, _, why = difference.partition(": ")
            violations.append({"field": where, "description": why or difference})
        details.append({"@type": _BAD_REQUEST, "fieldViolations": violations})
    return details


def is_rpc(live: LiveRequest, found: NotFound) -> bool:
    """Whether the error is a JSON-RPC one: the request is a JSON-RPC call, or a body that
    is not JSON sent where the closest recorded request was one."""
    if jsonrpc.is_jsonrpc(live.json):
        return True
    if live.json is NOT_JSON and found.closest is not None:
        return jsonrpc.is_jsonrpc(found.closest.json)
    return False


def error_body(live: LiveRequest, found: NotFound, message: str) -> tuple[int, bytes]:
    """(the HTTP status, the JSON body) of the no-match error for `live` (its JSON-RPC id as
    the client wrote it: `1e2` too)."""
    details = _details(found)
    if is_rpc(live, found):
        error = jsonrpc.error_response(live.rpc_id, NO_MATCH, message, details)
        return 200, compact_json(error)
    return 404, compact_json(rest.error_envelope(404, "NOT_FOUND", message, details))
