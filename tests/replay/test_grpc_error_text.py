"""A failed gRPC call's error compares as the JSON bindings' errors do (issue 32): on its code
and reason, its free text (`$.message`, what the agent words, often with parser output) left
out unless `compare_error_message`. The call's google.rpc.Status is what HTTP+JSON's error
envelope holds under `error`, so the default error paths (`$.error.message` …) apply to it from
its root; a successful reply's `message` (a SendMessage answer) is compared as ever.

The live replies are made as the player makes a gRPC call's (`bindings.grpc.response_of`, then
`LiveReply.of`) and compared by the player's own `ReplayState`."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from recorder.bindings.grpc import GRPC_MESSAGE, STATUS_DETAILS, response_of
from recorder.disk.transcripts import load
from recorder.format.model import Exchange, Headers, Response, SseEvent
from recorder.replay.verdict.diff import Mismatch
from recorder.replay.verdict.live import LiveReply
from recorder.replay.verdict.state import ReplayState
from recorder.rules.ruleset import DEFAULT_RULES, Rules

GOLDENS = Path(__file__).resolve().parent.parent.parent / "transcripts"
BASE = "http://127.0.0.1:41242"
NOT_FOUND = {
    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
    "reason": "TASK_NOT_FOUND",
    "domain": "a2a-protocol.org",
}


def golden(name: str) -> Exchange:
    return load(GOLDENS / name).exchanges[0]


def status_trailers(code: int, message: str, details: list[dict[str, Any]]) -> list[Any]:
    """A failed call's trailing metadata as grpcio hands it over: the status details as the
    serialized google.rpc.Status (`grpc-status-details-bin`)."""
    from google.protobuf import any_pb2
    from google.rpc import error_details_pb2, status_pb2

    status = status_pb2.Status(code=code, message=message)
    for detail in details:
        info = error_details_pb2.ErrorInfo(reason=detail["reason"], domain=detail["domain"])
        packed = any_pb2.Any()
        packed.Pack(info)
        status.details.append(packed)
    return [("grpc-status-details-bin", status.SerializeToString())]


def compare(exchange: Exchange, live: Response, rules: Rules = DEFAULT_RULES) -> list[Mismatch]:
    state = ReplayState(rules, recorded_base=BASE, live_base=BASE)
    state.prepare(exchange.request)
    return state.compare(exchange, LiveReply.of(live))


def failed_call(code: int, message: str, reason: str = "TASK_NOT_FOUND") -> Response:
    details = [{**NOT_FOUND, "reason": reason}]
    return response_of(code, message=message, trailing=status_trailers(code, message, details))


def test_the_recorded_error_replays_clean() -> None:
    exchange = golden("22-grpc-errors.http")
    assert json.loads(exchange.response.body)["message"] == "Task not found"
    assert compare(exchange, failed_call(5, "Task not found")) == []


def test_an_error_worded_otherwise_replays_clean() -> None:
    live = failed_call(5, "task 00000000-0000-4000-8000-000000000000 does not exist (line 1)")
    assert compare(golden("22-grpc-errors.http"), live) == []


def test_the_wording_is_compared_when_the_rules_say_so() -> None:
    rules = replace(DEFAULT_RULES, compare_error_message=True)
    found = compare(golden("22-grpc-errors.http"), failed_call(5, "gone"), rules)
    assert [(m.path, m.expected, m.actual) for m in found] == [
        ("$.message", "Task not found", "gone")
    ]


def test_another_status_code_still_fails() -> None:
    found = compare(golden("22-grpc-errors.http"), failed_call(3, "Task not found"))
    assert {m.path for m in found} == {"status", "$.code"}


def test_another_reason_still_fails() -> None:
    found = compare(
        golden("22-grpc-errors.http"), failed_call(5, "Task not found", "UNSUPPORTED_OPERATION")
    )
    assert [(m.path, m.expected, m.actual) for m in found] == [
        ("$.details[0].reason", "TASK_NOT_FOUND", "UNSUPPORTED_OPERATION")
    ]


def test_a_successful_replys_message_is_compared_as_ever() -> None:
    # SendMessage's answer is `{"message": {...}}`: the same name, not an error's free text
    exchange = golden("18-grpc-message-reply.http")
    reply = json.loads(exchange.response.body)
    assert isinstance(reply["message"], dict)
    reply["message"]["parts"][0]["text"] = "something else"
    live = replace(exchange.response, body=json.dumps(reply).encode())
    found = compare(exchange, live)
    assert [m.path for m in found] == ["$.message.parts[0].text"]


def failed_stream(message: str, reason: str = "TASK_NOT_FOUND") -> Response:
    """A server stream that failed after one message: its status in its trailers."""
    return response_of(
        5,
        message=message,
        messages=[b'{"task": {"id": "t-1", "status": {"state": "TASK_STATE_WORKING"}}}'],
        trailing=[
            ("x-kept", "yes"),
            *status_trailers(5, message, [{**NOT_FOUND, "reason": reason}]),
        ],
    )


def stream_exchange() -> Exchange:
    exchange = golden("19-grpc-streaming.http")
    return replace(exchange, response=failed_stream("Task not found"))


def test_a_stream_that_failed_after_its_messages_compares_its_status_alike() -> None:
    exchange = stream_exchange()
    recorded = exchange.response
    assert recorded.events == (SseEvent(data=recorded.events[0].data),)
    assert recorded.trailers.get(GRPC_MESSAGE) == "Task not found"
    assert json.loads(recorded.trailers.get(STATUS_DETAILS) or "")["message"] == "Task not found"
    assert compare(exchange, failed_stream("the task vanished (line 3)")) == []
    found = compare(exchange, failed_stream("Task not found", "UNSUPPORTED_OPERATION"))
    assert [(m.path, m.expected, m.actual) for m in found] == [
        (
            "trailer grpc-status-details $.details[0].reason",
            "TASK_NOT_FOUND",
            "UNSUPPORTED_OPERATION",
        )
    ]
    # the other trailers are compared as ever
    other = failed_stream("Task not found")
    other = replace(other, trailers=Headers([("x-kept", "no"), *list(other.trailers)[1:]]))
    assert [m.path for m in compare(exchange, other)] == ["trailer x-kept"]
