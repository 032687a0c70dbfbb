"""The line `recorder record` prints for each recorded exchange (pure, no I/O).

    recorded 200               3.1 ms  GetTask -> out/02-get-task.http
    recorded 200 -32001         12 ms  SendMessage -> out/03-send-message.http
    recorded 200 14 frames     850 ms  SendStreamingMessage -> out/04-review.http
    recorded 307               0.8 ms  GET /old -> out/05-get-old.http

The reply's status (`outcome`: the HTTP status, then the JSON-RPC error code when the reply is
a JSON-RPC error, or a stream's frame count) and the exchange's duration (from its request
read to its reply handed on) stand in columns of a steady width, so that the titles line up.
"""

from __future__ import annotations

from recorder.bindings.jsonrpc import error_code as jsonrpc_error_code

__all__ = ["jsonrpc_error_code", "outcome", "record_line"]

_OUTCOME = 14  # columns of the status, padded: "200 14 frames", "200 -32001"
_DURATION = 6  # columns of the duration, right-aligned: "0.4", "12", "12345"
# (`jsonrpc_error_code`: the `error.code` of a JSON-RPC error reply, `recorder.bindings.jsonrpc`)


def outcome(status: int, *, error_code: int | None = None, frames: int | None = None) -> str:
    """`200`, `200 -32001` (a JSON-RPC error), `200 14 frames` (an event stream)."""
    if frames is not None:
        return f"{status} {frames} frame{'' if frames == 1 else 's'}"
    if error_code is not None:
        return f"{status} {error_code}"
    return str(status)


def _duration(seconds: float) -> str:
    ms = max(seconds, 0.0) * 1000
    return f"{ms:.1f}" if ms < 10 else f"{ms:.0f}"


def record_line(result: str, seconds: float, title: str, path: object) -> str:
    """One exchange's line: its `outcome`, its duration, its title and its file."""
    return f"recorded {result:<{_OUTCOME}} {_duration(seconds):>{_DURATION}} ms  {title} -> {path}"
