"""The comparison, end to end on realistic A2A transcripts, without a network.

A `World` is one run of an agent: the ids and timestamps it generated. The same scenario is
built twice, once as the recorded (golden) transcript and once as what a fresh agent replies on
replay (every id and timestamp regenerated, the agent on another port). The reply shapes are
those of the A2A 1.0 reference captures (shared/reference, section 3): a SendMessage task, a
4-frame stream, GetTask, ListTasks, errors (JSON-RPC and HTTP+JSON), the agent card.

Each seeded fault changes one thing in one live reply and must produce exactly the expected
mismatches (path and frame), and nothing else anywhere in the transcript.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from helpers import as_wire
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder.format.model import Exchange, Headers, Request, Response, SseEvent
from recorder.replay.verdict import fastpath
from recorder.replay.verdict.diff import ABSENT, Mismatch, align, format_value, format_values
from recorder.replay.verdict.fastpath import FastPath
from recorder.replay.verdict.state import ReplayState
from recorder.replay.verdict.walk import Walk
from recorder.rules.ruleset import DEFAULT_RULES, Rules

RECORDED_BASE = "http://localhost:41242"
LIVE_BASE = "http://127.0.0.1:53117"


@dataclass
class World:
    """The generated values of one agent run."""

    base: str
    clock: int
    ids: dict[str, str] = field(default_factory=dict)

    def id(self, name: str) -> str:
        return self.ids.setdefault(name, str(uuid.uuid4()))

    def time(self, tick: int) -> str:
        seconds = self.clock + tick
        fraction = seconds * 7919 % 10**6
        return f"2026-11-29T18:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{fraction:06d}Z"


def rpc(result: Any, request_id: Any) -> dict[str, Any]:
    return {"result": result, "id": request_id, "jsonrpc": "2.0"}


def rpc_error(code: int, message: str, reason: str | None, request_id: Any) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if reason is not None:
        error["data"] = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": "a2a-protocol.org",
                "metadata": {},
            }
        ]
    return {"error": error, "id": request_id, "jsonrpc": "2.0"}


def task(w: World, name: str, text: str, *, state: str = "TASK_STATE_COMPLETED") -> dict[str, Any]:
    task_id, context_id = w.id(f"{name}.task"), w.id(f"{name}.context")
    return {
        "id": task_id,
        "contextId": context_id,
        "status": {"state": state, "timestamp": w.time(2)},
        "artifacts": [
            {
                "artifactId": w.id(f"{name}.artifact"),
                "name": "review",
                "parts": [{"text": f"review: {text}", "mediaType": "text/plain"}],
            }
        ],
        "history": [
            {
                "messageId": f"{name}-msg",
                "contextId": context_id,
                "taskId": task_id,
                "role": "ROLE_USER",
                "parts": [{"text": text}],
            }
        ],
    }


def card(w: World) -> dict[str, Any]:
    return {
        "name": "code-reviewer",
        "description": "Reviews diffs",
        "supportedInterfaces": [
            {
                "url": f"{w.base}/a2a/jsonrpc",
                "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0",
            },
            {"url": f"{w.base}/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        ],
        "provider": {"url": w.base, "organization": "recorder kit"},
        "version": "1.0.0",
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "review", "name": "Review", "description": "Review", "tags": ["diff"]}],
    }


def stream_frames(w: World, request_id: Any) -> list[dict[str, Any]]:
    task_id, context_id = w.id("s.task"), w.id("s.context")
    return [
        rpc(
            {
                "task": {
                    "id": task_id,
                    "contextId": context_id,
                    "status": {"state": "TASK_STATE_SUBMITTED"},
                    "history": [
                        {
                            "messageId": "s-msg",
                            "contextId": context_id,
                            "taskId": task_id,
                            "role": "ROLE_USER",
                            "parts": [{"text": "stream me"}],
                        }
                    ],
                }
            },
            request_id,
        ),
        rpc(
            {
                "statusUpdate": {
                    "taskId": task_id,
                    "contextId": context_id,
                    "status": {"state": "TASK_STATE_WORKING", "timestamp": w.time(5)},
                }
            },
            request_id,
        ),
        rpc(
            {
                "artifactUpdate": {
                    "taskId": task_id,
                    "contextId": context_id,
                    "artifact": {
                        "artifactId": w.id("s.artifact"),
                        "name": "review",
                        "parts": [{"text": "review: stream me", "mediaType": "text/plain"}],
                    },
                }
            },
            request_id,
        ),
        rpc(
            {
                "statusUpdate": {
                    "taskId": task_id,
                    "contextId": context_id,
                    "status": {"state": "TASK_STATE_COMPLETED", "timestamp": w.time(6)},
                }
            },
            request_id,
        ),
    ]


JSON_TYPE = "application/json"


def json_response(
    value: Any, *, status: int = 200, content_type: str = JSON_TYPE, date: str = "d1"
) -> Response:
    headers = [("Date", date), ("Server", "uvicorn"), ("Content-Type", content_type)]
    return Response(status, "", headers, json.dumps(value).encode())


def sse_response(frames: list[dict[str, Any]], *, date: str = "d1") -> Response:
    events = tuple(SseEvent(data=json.dumps(frame)) for frame in frames)
    headers = [
        ("Date", date),
        ("Server", "uvicorn"),
        ("Cache-Control", "no-store"),
        ("X-Accel-Buffering", "no"),
        ("Content-Type", "text/event-stream; charset=utf-8"),
    ]
    return Response(200, "OK", headers, events=events)


def rpc_request(w: World, body: dict[str, Any], *, stream: bool = False) -> Request:
    host = w.base.split("://", 1)[1]
    headers = [("Host", host), ("A2A-Version", "1.0"), ("Content-Type", JSON_TYPE)]
    if stream:
        headers.append(("Accept", "text/event-stream"))
    return Request("POST", "/a2a/jsonrpc", headers, json.dumps(body).encode())


def rest_request(w: World, method: str, target: str) -> Request:
    host = w.base.split("://", 1)[1]
    return Request(method, target, [("Host", host), ("A2A-Version", "1.0")])


def scenario(w: World) -> list[tuple[str, Request, Response]]:
    """The exchanges of one transcript, as this world's agent answers them."""
    message = {"messageId": "m-msg", "role": "ROLE_USER", "parts": [{"text": "hello"}]}
    t1 = task(w, "m", "hello")
    return [
        (
            "GetAgentCard",
            rest_request(w, "GET", "/.well-known/agent-card.json"),
            json_response(card(w)),
        ),
        (
            "SendMessage",
            rpc_request(
                w,
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "SendMessage",
                    "params": {"message": message},
                },
            ),
            json_response(rpc({"task": t1}, 1)),
        ),
        (
            "SendStreamingMessage",
            rpc_request(
                w,
                {
                    "jsonrpc": "2.0",
                    "id": "req-2",
                    "method": "SendStreamingMessage",
                    "params": {
                        "message": {
                            **message,
                            "messageId": "s-msg",
                            "parts": [{"text": "stream me"}],
                        }
                    },
                },
                stream=True,
            ),
            sse_response(stream_frames(w, "req-2")),
        ),
        (
            "GetTask",
            rpc_request(
                w,
                {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": w.id("m.task")}},
            ),
            json_response(rpc(task(w, "m", "hello"), 3)),
        ),
        (
            "ListTasks",
            rpc_request(
                w,
                {
                    "jsonrpc": "2.0",
                    "id": 4,
                    "method": "ListTasks",
                    "params": {"contextId": w.id("m.context")},
                },
            ),
            json_response(
                rpc(
                    {
                        "tasks": [task(w, "m", "hello")],
                        "nextPageToken": "",
                        "pageSize": 50,
                        "totalSize": 1,
                    },
                    4,
                )
            ),
        ),
        (
            "GetTask unknown",
            rpc_request(
                w, {"jsonrpc": "2.0", "id": 5, "method": "GetTask", "params": {"id": "nope"}}
            ),
            json_response(rpc_error(-32001, "Task not found", "TASK_NOT_FOUND", 5)),
        ),
        (
            "SubscribeToTask terminal",
            rpc_request(
                w,
                {
                    "jsonrpc": "2.0",
                    "id": 6,
                    "method": "SubscribeToTask",
                    "params": {"id": w.id("m.task")},
                },
            ),
            json_response(
                rpc_error(
                    -32004,
                    f"Task {w.id('m.task')} is in terminal state: TASK_STATE_COMPLETED",
                    "UNSUPPORTED_OPERATION",
                    6,
                )
            ),
        ),
        (
            "REST GetTask",
            rest_request(w, "GET", f"/a2a/rest/tasks/{w.id('m.task')}?historyLength=1"),
            json_response(task(w, "m", "hello"), content_type="application/a2a+json"),
        ),
        (
            "REST cancel",
            rest_request(w, "POST", f"/a2a/rest/tasks/{w.id('m.task')}:cancel"),
            json_response(
                {
                    "error": {
                        "code": 400,
                        "status": "FAILED_PRECONDITION",
                        "message": "Task cannot be canceled",
                        "details": [
                            {
                                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                "reason": "TASK_NOT_CANCELABLE",
                                "domain": "a2a-protocol.org",
                                "metadata": {},
                            }
                        ],
                    }
                },
                status=400,
            ),
        ),
    ]


def golden_transcript() -> tuple[list[Exchange], World]:
    world = World(RECORDED_BASE, clock=100)
    exchanges = [Exchange(request, response, title) for title, request, response in scenario(world)]
    return exchanges, world


Fault = Callable[[int, Response], Response]


def replay(
    exchanges: list[Exchange],
    fault: Fault | None = None,
    *,
    rules: Rules = DEFAULT_RULES,
    live_world: World | None = None,
) -> tuple[list[tuple[int, Mismatch]], ReplayState, list[Response]]:
    """Replay against a simulated fresh agent; return (exchange number, mismatch) pairs."""
    live_world = live_world or World(LIVE_BASE, clock=5000)
    state = ReplayState(rules, recorded_base=RECORDED_BASE, live_base=LIVE_BASE)
    live_exchanges = scenario(live_world)
    found: list[tuple[int, Mismatch]] = []
    lives = []
    for number, (golden, (_, live_request, live_response)) in enumerate(
        zip(exchanges, live_exchanges, strict=True), start=1
    ):
        sent = state.prepare(golden.request)
        # carry-forward: what the player sends is what the live client would have sent
        assert sent == live_request, f"exchange {number}: prepare sent {sent}"
        live_response = replace(live_response, headers=live_response.headers.replaced("Date", "d2"))
        if fault is not None:
            live_response = fault(number, live_response)
        lives.append(live_response)
        form = LIVE_FORM["form"]
        live_reply = (
            live_response if form == "Response" else as_wire(live_response, spaced=form == "spaced")
        )
        found.extend((number, m) for m in state.compare(golden, live_reply))
    return found, state, lives


# how `replay` hands the live replies to `compare`: as `Response`s, or as the bytes that came
# over the wire (`LiveReply`, what the player compares), compact or spaced JSON; the
# `walk_only` fixture runs each
LIVE_FORM = {"form": "Response"}


def edit_json(number: int, change: Callable[[Any], None]) -> Fault:
    def fault(at: int, response: Response) -> Response:
        if at != number:
            return response
        value = copy.deepcopy(response.json)
        change(value)
        return replace(response, body=json.dumps(value).encode())

    return fault


def edit_frames(number: int, change: Callable[[list[SseEvent]], None]) -> Fault:
    def fault(at: int, response: Response) -> Response:
        if at != number:
            return response
        assert response.events is not None
        events = list(response.events)
        change(events)
        return replace(response, events=tuple(events))

    return fault


def edit_frame_json(number: int, frame: int, change: Callable[[Any], None]) -> Fault:
    def edit(events: list[SseEvent]) -> None:
        value = json.loads(events[frame - 1].data or "")
        change(value)
        events[frame - 1] = SseEvent(data=json.dumps(value))

    return edit_frames(number, edit)


def set_in(path: tuple[str | int, ...], value: Any) -> Callable[[Any], None]:
    def change(document: Any) -> None:
        for key in path[:-1]:
            document = document[key]
        document[path[-1]] = value

    return change


def delete_in(path: tuple[str | int, ...]) -> Callable[[Any], None]:
    def change(document: Any) -> None:
        for key in path[:-1]:
            document = document[key]
        del document[path[-1]]

    return change


def swap_task_id(document: Any) -> None:
    # the wrong-task bug: GetTask answers with another task's id (the streamed task)
    document["result"]["id"] = LIVE_STREAM_TASK[0]


LIVE_STREAM_TASK: list[str] = []


def with_header(number: int, name: str, value: str) -> Fault:
    def fault(at: int, response: Response) -> Response:
        if at != number:
            return response
        return replace(response, headers=response.headers.replaced(name, value))

    return fault


def with_status(number: int, status: int) -> Fault:
    def fault(at: int, response: Response) -> Response:
        return replace(response, status=status) if at == number else response

    return fault


FAULTS: list[tuple[str, Fault, list[tuple[int, str, int | None]]]] = [
    (
        "changed task state",
        edit_json(2, set_in(("result", "task", "status", "state"), "TASK_STATE_FAILED")),
        [(2, "$.result.task.status.state", None)],
    ),
    (
        "changed error code",
        edit_json(6, set_in(("error", "code"), -32004)),
        [(6, "$.error.code", None)],
    ),
    (
        "changed error reason",
        edit_json(6, set_in(("error", "data", 0, "reason"), "UNSUPPORTED_OPERATION")),
        [(6, "$.error.data[0].reason", None)],
    ),
    (
        "changed HTTP+JSON error status",
        edit_json(9, set_in(("error", "status"), "NOT_FOUND")),
        [(9, "$.error.status", None)],
    ),
    (
        "changed artifact text",
        edit_json(
            2, set_in(("result", "task", "artifacts", 0, "parts", 0, "text"), "review: hullo")
        ),
        [(2, "$.result.task.artifacts[0].parts[0].text", None)],
    ),
    (
        "GetTask names another task",
        edit_json(4, swap_task_id),
        [(4, "$.result.id", None)],
    ),
    (
        "missing SSE frame",
        edit_frames(3, lambda events: events.pop(2)),
        [(3, "frames", None)],
    ),
    (
        "extra SSE frame",
        edit_frames(3, lambda events: events.insert(2, events[1])),
        [(3, "frames", None)],
    ),
    (
        "changed state in SSE frame 4",
        edit_frame_json(
            3, 4, set_in(("result", "statusUpdate", "status", "state"), "TASK_STATE_FAILED")
        ),
        [(3, "$.result.statusUpdate.status.state", 4)],
    ),
    (
        "SSE frame names another task",
        edit_frame_json(3, 2, set_in(("result", "statusUpdate", "taskId"), str(uuid.uuid4()))),
        [(3, "$.result.statusUpdate.taskId", 2)],
    ),
    (
        "dropped field",
        edit_json(2, delete_in(("result", "task", "artifacts", 0, "name"))),
        [(2, "$.result.task.artifacts[0].name", None)],
    ),
    (
        "added field",
        edit_json(2, set_in(("result", "task", "metadata"), {"reviewer": "v2"})),
        [(2, "$.result.task.metadata", None)],
    ),
    (
        "dropped history item",
        edit_json(5, delete_in(("result", "tasks", 0, "history", 0))),
        [(5, "$.result.tasks[0].history[0]", None)],
    ),
    (
        "changed content type",
        with_header(2, "Content-Type", "text/plain"),
        [(2, "header content-type", None)],
    ),
    (
        "changed status code",
        with_status(8, 404),
        [(8, "status", None)],
    ),
    (
        "changed JSON-RPC id (client value)",
        edit_json(4, set_in(("id",), 33)),
        [(4, "$.id", None)],
    ),
    (
        "changed user messageId (client value)",
        edit_json(2, set_in(("result", "task", "history", 0, "messageId"), "other-msg")),
        [(2, "$.result.task.history[0].messageId", None)],
    ),
    (
        "card names another path",
        edit_json(1, set_in(("supportedInterfaces", 0, "url"), f"{LIVE_BASE}/rpc")),
        [(1, "$.supportedInterfaces[0].url", None)],
    ),
    (
        "new header",
        with_header(2, "X-Review-Mode", "strict"),
        [(2, "header x-review-mode", None)],
    ),
]


@pytest.fixture(autouse=True)
def _live_stream_task() -> Any:
    LIVE_STREAM_TASK.clear()
    yield
    LIVE_STREAM_TASK.clear()


@pytest.fixture(
    params=[
        (mode, form)
        for mode in ("fast path", "fast path for many values", "tree walk only")
        for form in ("Response", "wire", "spaced")
    ],
    ids=lambda param: "-".join(param),
)
def walk_only(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Run a test nine ways: as shipped (these replies hold few values), with the fast path's
    pairing for many values, and with the fast path off; each with the live replies given as
    `Response`s and as wire bytes (`LiveReply`, compact or spaced JSON). They must agree."""
    mode, form = request.param
    monkeypatch.setitem(LIVE_FORM, "form", form)
    if mode == "tree walk only":
        monkeypatch.setattr(FastPath, "matches_text", lambda self, *a, **k: False)
        return True
    if mode == "fast path for many values":
        monkeypatch.setattr(fastpath, "_SMALL", 0)
    return False


def test_no_fault_no_mismatch(walk_only: bool) -> None:
    exchanges, _ = golden_transcript()
    found, _, _ = replay(exchanges)
    assert found == []


@pytest.mark.parametrize(("name", "fault", "expected"), FAULTS, ids=[f[0] for f in FAULTS])
def test_seeded_fault_gives_exactly_its_mismatch(
    name: str, fault: Fault, expected: list[tuple[int, str, int | None]], walk_only: bool
) -> None:
    exchanges, _ = golden_transcript()
    live_world = World(LIVE_BASE, clock=5000)
    LIVE_STREAM_TASK.append(live_world.id("s.task"))
    found, _, _ = replay(exchanges, fault, live_world=live_world)
    assert [(number, m.path, m.frame) for number, m in found] == expected, [
        (number, str(m)) for number, m in found
    ]


def test_wrong_task_report_names_both_tasks() -> None:
    exchanges, golden_world = golden_transcript()
    live_world = World(LIVE_BASE, clock=5000)
    LIVE_STREAM_TASK.append(live_world.id("s.task"))
    found, _, _ = replay(exchanges, edit_json(4, swap_task_id), live_world=live_world)
    [(number, mismatch)] = found
    assert number == 4
    assert mismatch.expected == "<id:1>"
    assert mismatch.actual == "<id:4>"  # the streamed task: the fourth id seen
    assert golden_world.id("s.task") in mismatch.message  # which recorded task it stands for
    assert live_world.id("m.task") in mismatch.message  # the id that was expected live
    assert mismatch.describe().startswith('$.result.id: expected "<id:1>", got "<id:4>" (')


def test_missing_frame_message_names_the_frame() -> None:
    exchanges, _ = golden_transcript()
    found, _, _ = replay(exchanges, edit_frames(3, lambda events: events.pop(2)))
    [(_, mismatch)] = found
    assert (mismatch.expected, mismatch.actual) == (4, 3)
    assert mismatch.message == "missing recorded frame 3 (artifactUpdate)"


def test_extra_frame_message_names_the_frame() -> None:
    exchanges, _ = golden_transcript()
    found, _, _ = replay(exchanges, edit_frames(3, lambda events: events.append(events[3])))
    [(_, mismatch)] = found
    assert mismatch.message == "unexpected live frame 5 (statusUpdate TASK_STATE_COMPLETED)"


def test_changed_state_reads_like_the_design() -> None:
    exchanges, _ = golden_transcript()
    fault = edit_frame_json(
        3, 4, set_in(("result", "statusUpdate", "status", "state"), "TASK_STATE_FAILED")
    )
    found, _, _ = replay(exchanges, fault)
    [(_, mismatch)] = found
    assert mismatch.describe() == (
        "$.result.statusUpdate.status.state:"
        ' expected "TASK_STATE_COMPLETED", got "TASK_STATE_FAILED"'
    )
    assert str(mismatch).startswith("frame 4: $.result.statusUpdate")


def test_error_message_text_is_not_compared_by_default() -> None:
    exchanges, _ = golden_transcript()
    fault = edit_json(6, set_in(("error", "message"), "Task not found: nope"))
    found, _, _ = replay(exchanges, fault)
    assert found == []


def test_error_message_text_is_compared_when_the_rules_say_so() -> None:
    exchanges, _ = golden_transcript()
    rules = replace(DEFAULT_RULES, compare_error_message=True)
    found, _, _ = replay(exchanges, edit_json(6, set_in(("error", "message"), "gone")), rules=rules)
    assert [(n, m.path, m.expected, m.actual) for n, m in found] == [
        (6, "$.error.message", "Task not found", "gone")
    ]


def test_error_message_with_an_id_compares_through_the_alias_when_compared() -> None:
    exchanges, _ = golden_transcript()
    rules = replace(DEFAULT_RULES, compare_error_message=True)
    found, _, _ = replay(exchanges, rules=rules)
    assert found == []  # "Task <uuid> is in terminal state" with the live uuid matches


def test_volatile_headers_are_not_compared() -> None:
    exchanges, _ = golden_transcript()
    fault = with_header(2, "Server", "hypercorn")
    found, _, _ = replay(exchanges, fault)
    assert found == []


def test_ignored_path_is_not_compared() -> None:
    exchanges, _ = golden_transcript()
    rules = replace(DEFAULT_RULES, ignored_paths=("$..artifacts[*].parts[*].text",))
    fault = edit_json(2, set_in(("result", "task", "artifacts", 0, "parts", 0, "text"), "other"))
    found, _, _ = replay(exchanges, fault, rules=rules)
    assert found == []


def test_live_json_against_recorded_stream_is_a_clear_mismatch() -> None:
    # pitfall R10: an error before the stream starts comes back as plain JSON
    exchanges, _ = golden_transcript()

    def fault(at: int, response: Response) -> Response:
        if at != 3:
            return response
        return json_response(rpc_error(-32001, "Task not found", "TASK_NOT_FOUND", "req-2"))

    found, _, _ = replay(exchanges, fault)
    assert [(n, m.path) for n, m in found] == [
        (3, "header content-type"),
        (3, "header cache-control"),  # sent with streams only
        (3, "header x-accel-buffering"),
        (3, "body"),
    ]
    assert found[3][1].message == "expected an SSE stream (text/event-stream), got a single body"


def test_live_text_against_recorded_json_is_a_clear_mismatch() -> None:
    exchanges, _ = golden_transcript()

    def fault(at: int, response: Response) -> Response:
        if at != 6:
            return response
        return Response(
            500, "", [("Content-Type", "text/plain; charset=utf-8")], b"Internal Server Error"
        )

    found, _, _ = replay(exchanges, fault)
    assert [(n, m.path) for n, m in found] == [
        (6, "status"),
        (6, "header content-type"),
        (6, "body"),
    ]
    body = found[2][1]
    assert body.actual == "Internal Server Error"
    assert body.message == "expected a JSON body, got a non-JSON body"


def test_live_json_against_recorded_text() -> None:
    request = Request("GET", "/a2a/rest/nope")
    golden = Exchange(request, Response(404, "", [("Content-Type", "text/plain")], b"Not Found"))
    live = Response(404, "", [("Content-Type", "text/plain")], b'{"detail": "Not Found"}')
    state = ReplayState(DEFAULT_RULES, recorded_base=None, live_base=LIVE_BASE)
    [mismatch] = state.compare(golden, live)
    assert (mismatch.path, mismatch.message) == (
        "body",
        "expected a non-JSON body, got a JSON body",
    )


def test_text_bodies_compare_with_aliases() -> None:
    request = Request("GET", "/a2a/rest/nope")
    golden_id, live_id = str(uuid.uuid4()), str(uuid.uuid4())
    text = [("Content-Type", "text/plain")]
    golden = Exchange(request, Response(404, "", text, f"no task {golden_id}".encode()))
    state = ReplayState(DEFAULT_RULES, recorded_base=None, live_base=LIVE_BASE)
    assert state.compare(golden, Response(404, "", text, f"no task {live_id}".encode())) == []
    [mismatch] = state.compare(golden, Response(404, "", text, f"no tusk {live_id}".encode()))
    assert (mismatch.path, mismatch.expected, mismatch.actual) == (
        "body",
        "no task <id:1>",
        "no tusk <id:1>",
    )


def test_binary_bodies_compare_as_bytes() -> None:
    request = Request("GET", "/blob")
    octets = [("Content-Type", "application/octet-stream")]
    golden = Exchange(request, Response(200, "", octets, b"\xff\x00\x01"))
    state = ReplayState(DEFAULT_RULES, recorded_base=None, live_base=LIVE_BASE)
    assert state.compare(golden, Response(200, "", octets, b"\xff\x00\x01")) == []
    [mismatch] = state.compare(golden, Response(200, "", octets, b"\xff\x00\x02"))
    assert mismatch.path == "body"


def test_content_type_parameters_ignored_unless_asked() -> None:
    exchanges, _ = golden_transcript()
    fault = with_header(2, "Content-Type", "application/json; charset=utf-8")
    assert replay(exchanges, fault)[0] == []
    rules = replace(DEFAULT_RULES, compare_content_type_params=True)
    found, _, _ = replay(exchanges, fault, rules=rules)
    assert [(n, m.path) for n, m in found] == [(2, "header content-type")]


def test_the_card_from_another_port_matches() -> None:
    exchanges, _ = golden_transcript()
    state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED_BASE, live_base="http://localhost:9")
    live = json_response(card(World("http://localhost:9", 0)))
    assert state.compare(exchanges[0], live) == []
    other = json_response(card(World("http://localhost:10", 0)))
    found = state.compare(exchanges[0], other)
    assert [m.path for m in found] == [
        "$.supportedInterfaces[0].url",
        "$.supportedInterfaces[1].url",
        "$.provider.url",
    ]
    # the address is the alias, the scheme and the path are text
    assert found[0].expected == "http://<agent>/a2a/jsonrpc"
    assert found[0].actual == "http://localhost:10/a2a/jsonrpc"
    assert found[0].message == (
        "recorded localhost:41242 is live localhost:9, but the reply names localhost:10"
    )


@pytest.mark.parametrize("played", ["http://127.0.0.1:9", "http://[::1]:9", "http://LOCALHOST:9"])
def test_a_loopback_agent_may_name_itself_by_any_loopback_name(played: str) -> None:
    # played against 127.0.0.1:9, the agent's card says localhost:9: the same address; bless
    # writes the recorded address back
    exchanges, _ = golden_transcript()
    state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED_BASE, live_base=played)
    live = json_response(card(World("http://localhost:9", 0)))
    assert state.compare(exchanges[0], live) == []
    other = json_response(card(World("http://localhost:10", 0)))
    found = state.compare(exchanges[0], other)
    assert [m.path for m in found][:1] == ["$.supportedInterfaces[0].url"]
    changed = json_response({**card(World("http://localhost:9", 0)), "name": "renamed"})
    assert [m.path for m in state.compare(exchanges[0], changed)] == ["$.name"]
    blessed = state.bless(exchanges[0].response, changed, matched=False).json
    assert blessed["supportedInterfaces"] == exchanges[0].response.json["supportedInterfaces"]


def test_unordered_array() -> None:
    request = Request("GET", "/things")
    golden = Exchange(request, json_response({"tags": ["a", "b", "c"]}))
    rules = replace(DEFAULT_RULES, unordered_paths=("$.tags",))
    state = ReplayState(rules, recorded_base=None, live_base=LIVE_BASE)
    assert state.compare(golden, json_response({"tags": ["c", "a", "b"]})) == []
    found = state.compare(golden, json_response({"tags": ["c", "a", "d"]}))
    assert [(m.path, m.expected, m.actual) for m in found] == [
        ("$.tags[1]", "b", ABSENT),
        ("$.tags[2]", ABSENT, "d"),
    ]
    ordered = ReplayState(DEFAULT_RULES, recorded_base=None, live_base=LIVE_BASE)
    assert [m.path for m in ordered.compare(golden, json_response({"tags": ["c", "a", "b"]}))] == [
        "$.tags[0]",
        "$.tags[1]",
        "$.tags[2]",
    ]


def test_every_differing_member_is_named_whatever_its_name() -> None:
    # deepdiff explains the mismatches: members named "__x" are members like any other (deepdiff
    # skips them by default), and an object whose members mostly differ is still reported
    # member by member (deepdiff reports it whole past a threshold by default)
    request = Request("GET", "/things")
    golden = Exchange(request, json_response({"__meta": {"a": 1, "b": 2, "c": 3}, "n": [1, 2]}))
    state = ReplayState(DEFAULT_RULES, recorded_base=None, live_base=LIVE_BASE)
    live = json_response({"__meta": {"a": 9, "d": 3, "e": 4, "f": 5}, "n": [1.0, True]})
    assert [(m.path, m.expected, m.actual) for m in state.compare(golden, live)] == [
        ("$.__meta.a", 1, 9),
        ("$.__meta.b", 2, ABSENT),
        ("$.__meta.c", 3, ABSENT),
        ("$.__meta.d", ABSENT, 3),
        ("$.__meta.e", ABSENT, 4),
        ("$.__meta.f", ABSENT, 5),
        ("$.n[1]", 2, True),  # JSON true is not 2, and 1.0 is 1
    ]


def test_items_of_an_array_of_another_length_are_named_by_their_own_index() -> None:
    # the walk lays the arrays out item by item (a dropped item against ABSENT); the reports
    # name each item by its recorded index, or its live index when only the live reply has it
    request = Request("GET", "/things")

    def items(*pairs: tuple[str, int]) -> Response:
        return json_response({"items": [{"k": k, "v": v} for k, v in pairs]})

    golden = Exchange(request, items(("a", 1), ("b", 2), ("c", 3)))
    state = ReplayState(DEFAULT_RULES, recorded_base=None, live_base=LIVE_BASE)
    found = state.compare(golden, items(("b", 2), ("c", 4), ("x", 5), ("y", 6)))
    assert [(m.path, m.expected, m.actual, m.message) for m in found] == [
        ("$.items[0]", {"k": "a", "v": 1}, ABSENT, "expected 3 items, got 4"),
        ("$.items[2].v", 3, 4, ""),
        ("$.items[2]", ABSENT, {"k": "x", "v": 5}, "expected 3 items, got 4"),
        ("$.items[3]", ABSENT, {"k": "y", "v": 6}, "expected 3 items, got 4"),
    ]


def test_unordered_array_of_tasks_pairs_their_ids() -> None:
    w_golden, w_live = World(RECORDED_BASE, 1), World(LIVE_BASE, 2)
    request = Request("GET", "/a2a/rest/tasks")

    def listing(w: World, order: list[str]) -> Response:
        return json_response({"tasks": [task(w, name, name) for name in order]})

    golden = Exchange(request, listing(w_golden, ["a", "b"]))
    rules = replace(DEFAULT_RULES, unordered_paths=("$.tasks",))
    state = ReplayState(rules, recorded_base=RECORDED_BASE, live_base=LIVE_BASE)
    assert state.compare(golden, listing(w_live, ["b", "a"])) == []
    assert state.mapping[w_golden.id("a.task")] == w_live.id("a.task")


def test_truncated_recording_compares_only_its_frames() -> None:
    exchanges, _ = golden_transcript()
    stream = exchanges[2]
    assert stream.response.events is not None
    truncated = replace(
        stream, response=replace(stream.response, events=stream.response.events[:2]), truncated=True
    )
    live_world = World(LIVE_BASE, clock=9)
    live = sse_response(stream_frames(live_world, "req-2"))
    state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED_BASE, live_base=LIVE_BASE)
    assert state.compare(truncated, live) == []
    short = sse_response(stream_frames(World(LIVE_BASE, clock=9), "req-2")[:1])
    state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED_BASE, live_base=LIVE_BASE)
    [mismatch] = state.compare(truncated, short)
    assert (mismatch.path, mismatch.expected, mismatch.actual) == ("frames", 2, 1)
    assert mismatch.message.endswith("(the recording is truncated)")


def test_keepalive_comment_frames_are_not_frames() -> None:
    exchanges, _ = golden_transcript()
    live_world = World(LIVE_BASE, clock=9)
    live = sse_response(stream_frames(live_world, "req-2"))
    assert live.events is not None
    pinged = replace(
        live, events=(live.events[0], SseEvent(comments=("ping - 2026",)), *live.events[1:])
    )
    state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED_BASE, live_base=LIVE_BASE)
    assert state.compare(exchanges[2], pinged) == []


def test_event_names_are_compared() -> None:
    exchanges, _ = golden_transcript()
    live = sse_response(stream_frames(World(LIVE_BASE, clock=9), "req-2"))
    assert live.events is not None
    named = replace(live, events=(*live.events[:3], replace(live.events[3], event="error")))
    state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED_BASE, live_base=LIVE_BASE)
    found = state.compare(exchanges[2], named)
    assert [(m.path, m.frame, m.expected, m.actual) for m in found] == [
        ("event", 4, ABSENT, "error")
    ]


def test_stream_recorded_in_another_json_layout_still_matches() -> None:
    # key order and spacing differ (pitfall R4): the walk, not the text, decides
    exchanges, _ = golden_transcript()
    frames = stream_frames(World(LIVE_BASE, clock=9), "req-2")
    events = tuple(
        SseEvent(data=json.dumps(dict(reversed(list(frame.items()))), separators=(",", ":")))
        for frame in frames
    )
    live = replace(sse_response(frames), events=events)
    state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED_BASE, live_base=LIVE_BASE)
    assert state.compare(exchanges[2], live) == []


def test_reordered_keys_in_a_body_still_match() -> None:
    exchanges, _ = golden_transcript()
    state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED_BASE, live_base=LIVE_BASE)
    live_value = rpc({"task": task(World(LIVE_BASE, 9), "m", "hello")}, 1)
    live_value["result"]["task"] = dict(reversed(list(live_value["result"]["task"].items())))
    state.compare(exchanges[0], json_response(card(World(LIVE_BASE, 9))))
    assert (
        state.compare(exchanges[1], json_response(dict(reversed(list(live_value.items()))))) == []
    )


# --- Mismatch and the pure helpers ------------------------------------------------------------


def test_describe_formats_values_as_json() -> None:
    assert Mismatch("status", 200, 500).describe() == "status: expected 200, got 500"
    assert (
        Mismatch("$.a", ABSENT, {"b": [1, "x"]}).describe()
        == '$.a: expected absent, got {"b": [1, "x"]}'
    )
    assert Mismatch("frames", 4, 3, message="missing recorded frame 3").describe() == (
        "frames: expected 4, got 3 (missing recorded frame 3)"
    )


def test_long_values_are_shortened() -> None:
    text = format_value("x" * 500)
    assert len(text) == 200 and text.endswith("…")


def test_two_long_values_are_shown_around_their_first_difference() -> None:
    # cut at the start, two long texts that differ near their end would read the same
    review = "Reviewed 1 file: " + "src/payments.py: fine. " * 20
    mismatch = Mismatch("$.text", review + "add tests.", review + "add testz.")
    expected_shown = "…" + json.dumps(review + "add tests.")[-(60 + 3) :]  # from 60 before
    actual_shown = "…" + json.dumps(review + "add testz.")[-(60 + 3) :]
    assert mismatch.describe() == f"$.text: expected {expected_shown}, got {actual_shown}"
    # against an absent value each is shown from its start; a short value is shown whole
    assert format_values("x" * 500, ABSENT) == (format_value("x" * 500), "absent")
    short = "The review: " + "y" * 100
    assert format_values(short, short + "z" * 300)[0] == json.dumps(short)


def test_absent_is_one_value_and_survives_pickling() -> None:
    import pickle

    assert pickle.loads(pickle.dumps(ABSENT)) is ABSENT
    assert repr(ABSENT) == "ABSENT"


def test_mismatch_is_frozen() -> None:
    mismatch = Mismatch("status", 200, 500)
    with pytest.raises(AttributeError):
        mismatch.path = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("expected", "actual", "pairs"),
    [
        ("abc", "abc", [(0, 0), (1, 1), (2, 2)]),
        ("abcd", "abd", [(0, 0), (1, 1), (2, None), (3, 2)]),
        ("abd", "abcd", [(0, 0), (1, 1), (None, 2), (2, 3)]),
        ("abc", "axc", [(0, 0), (1, 1), (2, 2)]),
        ("ab", "", [(0, None), (1, None)]),
    ],
)
def test_align(expected: str, actual: str, pairs: list[tuple[int | None, int | None]]) -> None:
    assert align(list(expected), list(actual)) == pairs


def test_headers_with_generated_values_are_aliased() -> None:
    request = Request("POST", "/a2a/rest/message:send")
    golden_id, live_id = str(uuid.uuid4()), str(uuid.uuid4())
    golden = Exchange(
        request,
        Response(201, "", Headers([("Location", f"{RECORDED_BASE}/a2a/rest/tasks/{golden_id}")])),
    )
    state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED_BASE, live_base=LIVE_BASE)
    live = Response(201, "", Headers([("Location", f"{LIVE_BASE}/a2a/rest/tasks/{live_id}")]))
    assert state.compare(golden, live) == []
    assert state.mapping == {golden_id: live_id}
    missing = Response(201, "", Headers([]))
    [mismatch] = state.compare(golden, missing)
    assert (mismatch.path, mismatch.actual) == ("header location", ABSENT)


def test_the_fast_path_decides_ordinary_replies(monkeypatch: pytest.MonkeyPatch) -> None:
    # the tree walk runs only where the text differs beyond whole generated values: here the
    # error message that embeds the task id ("Task <uuid> is in terminal state")
    walked: list[int] = []
    current = [0]
    original = Walk.compare_json

    def spy(self: Walk, *args: Any, **kwargs: Any) -> None:
        walked.append(current[0])
        original(self, *args, **kwargs)

    monkeypatch.setattr(Walk, "compare_json", spy)
    exchanges, _ = golden_transcript()
    state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED_BASE, live_base=LIVE_BASE)
    for number, (golden, (_, _, live)) in enumerate(
        zip(exchanges, scenario(World(LIVE_BASE, clock=77)), strict=True), start=1
    ):
        current[0] = number
        state.prepare(golden.request)
        assert state.compare(golden, live) == []
    assert walked == [7]


def test_a_live_stream_that_is_not_well_formed_sse_is_named_so() -> None:
    exchanges, _ = golden_transcript()
    broken = Response(200, "OK", [("Content-Type", "text/event-stream")], b"data: {}\nbogus: 1\n\n")
    assert broken.events is None
    state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED_BASE, live_base=LIVE_BASE)
    found = state.compare(exchanges[2], broken)
    assert found[-1].path == "body"
    assert found[-1].message == "the live event stream is not well-formed SSE (kept as raw bytes)"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["a", "b", 1.5]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["x", "y", "__z"]), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(json_values, json_values)
def test_the_walk_without_recursion_finds_what_deepdiff_finds(golden: Any, live: Any) -> None:
    # used past ~490 levels of nesting, where deepdiff recurses too deep: the same report
    from recorder.replay.verdict.walk import _differences, _differences_without_recursion

    def key(found: tuple[Any, Any, Any]) -> str:
        return repr(found)

    assert sorted(_differences_without_recursion(golden, live), key=key) == sorted(
        _differences(golden, live), key=key
    )


def test_a_reply_nested_deeper_than_deepdiff_can_follow_is_still_explained(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import deepdiff

    def no_deepdiff(*args: Any, **kwargs: Any) -> Any:
        # deepdiff copies its path at each level (12 s to reach its RecursionError at ~490
        # levels): a difference this deep is explained without it
        raise AssertionError("deepdiff used on a difference 700 levels deep")

    monkeypatch.setattr(deepdiff, "DeepDiff", no_deepdiff)

    def nest(depth: int, leaf: int) -> dict[str, Any]:
        value: dict[str, Any] = {"leaf": leaf}
        for _ in range(depth):
            value = {"a": value}
        return value

    request = Request("GET", "/deep")
    golden = Exchange(request, json_response(nest(700, 1)))
    state = ReplayState(DEFAULT_RULES, recorded_base=None, live_base=LIVE_BASE)
    [mismatch] = state.compare(golden, json_response(nest(700, 2)))
    assert mismatch.path == "$" + ".a" * 700 + ".leaf"
    assert (mismatch.expected, mismatch.actual) == (1, 2)


def test_a_card_recorded_through_127_0_0_1_that_says_localhost_replays() -> None:
    # recorded with --upstream http://127.0.0.1:41242 (the Host the transcript keeps); the
    # kit's card says localhost: both are the recorded address, and bless keeps the spelling
    exchanges, _ = golden_transcript()
    state = ReplayState(
        DEFAULT_RULES, recorded_base="http://127.0.0.1:41242", live_base="http://127.0.0.1:9"
    )
    live = json_response(card(World("http://localhost:9", 0)))
    assert state.compare(exchanges[0], live) == []
    changed = json_response({**card(World("http://localhost:9", 0)), "name": "renamed"})
    assert [m.path for m in state.compare(exchanges[0], changed)] == ["$.name"]
    blessed = state.bless(exchanges[0].response, changed, matched=False).json
    assert blessed["supportedInterfaces"] == exchanges[0].response.json["supportedInterfaces"]


def _grpc_stream_reply(code: int, states: list[str], message: str = "") -> Response:
    from recorder.bindings import grpc as binding

    frames = [{"statusUpdate": {"taskId": "t-1", "status": {"state": s}}} for s in states]
    return binding.response_of(
        code, message=message, messages=[json.dumps(f).encode() for f in frames]
    )


def test_a_truncated_grpc_call_compares_its_messages_not_how_its_client_left() -> None:
    from recorder.bindings import grpc as binding
    from recorder.replay.verdict.live import LiveReply, frames_read

    request = binding.request_of("SendStreamingMessage", [("a2a-version", "1.0")], b"{}")
    left = _grpc_stream_reply(1, ["TASK_STATE_SUBMITTED"], "cancelled by the client")
    golden = Exchange(request, left, truncated=True)
    assert frames_read(golden) == 1
    # the replay read as many messages, then cut the call: no status, no trailers
    cut = LiveReply.of(_grpc_stream_reply(0, ["TASK_STATE_SUBMITTED"]), cut=True)
    state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED_BASE, live_base=LIVE_BASE)
    assert state.compare(golden, cut) == []
    other = LiveReply.of(_grpc_stream_reply(0, ["TASK_STATE_WORKING"]), cut=True)
    [mismatch] = state.compare(golden, other)
    assert (mismatch.frame, mismatch.path) == (1, "$.statusUpdate.status.state")
    # a whole recording's status and trailers are compared as ever (the status's free text,
    # `grpc-message`, as the other bindings' error messages: when the rules say so)
    whole = replace(golden, truncated=False)
    found = {m.path for m in state.compare(whole, cut)}
    assert found == {"status"}
    rules = replace(DEFAULT_RULES, compare_error_message=True)
    state = ReplayState(rules, recorded_base=RECORDED_BASE, live_base=LIVE_BASE)
    found = {m.path for m in state.compare(whole, cut)}
    assert found == {"status", "trailer grpc-message"}
    # a call cut before its first message: the replay reads none (its body is the status)
    nothing = Exchange(request, binding.response_of(4, message="deadline"), truncated=True)
    assert nothing.response.events is None and frames_read(nothing) == 0
    assert frames_read(whole) is None
