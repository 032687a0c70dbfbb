"""The agent's calls in a replay, pure: which recorded call a live call stands for, the
stand-in's answer, and the call compared like a reply (`recorder.replay.calls`,
`recorder.replay.filecalls`)."""

from __future__ import annotations

import json

import pytest

from recorder.format.model import Headers, Request, Response
from recorder.format.sse import SseEvent
from recorder.replay.calls import (
    LiveCall,
    RecordedCall,
    answer_of,
    as_reply,
    choose_call,
    extra_call,
    frames_of,
    live_as_reply,
    not_made,
)
from recorder.replay.verdict.diff import Mismatch
from recorder.replay.verdict.state import ReplayState
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES

RULES = PairingRules(DEFAULT_RULES)
JSON_TYPE = [("Content-Type", "application/json")]
TASK = "0f7e3a52-1111-4222-8333-944455556666"
LIVE_TASK = "9a9a9a9a-aaaa-4bbb-8ccc-dddddddddddd"


def chat(content: str, *, task: str = TASK, model: str = "scripted") -> bytes:
    return json.dumps(
        {
            "model": model,
            "messages": [
                {"role": "system", "content": "You review diffs."},
                {"role": "user", "content": f"{content} (task {task})"},
            ],
        }
    ).encode()


def recorded(
    number: int,
    body: bytes,
    *,
    name: str = "model",
    index: int | None = None,
    exchange: int = 0,
    target: str = "/v1/chat/completions",
    reply: Response | None = None,
) -> RecordedCall:
    return RecordedCall(
        index=index if index is not None else number,
        name=name,
        exchange=exchange,
        number=number,
        request=Request("POST", target, Headers(JSON_TYPE), body),
        response=reply or Response(200, "OK", Headers(JSON_TYPE), b'{"choices": []}'),
    )


def live(body: bytes, *, name: str = "model", target: str = "/v1/chat/completions") -> LiveCall:
    return LiveCall(name, "POST", target, (("content-type", "application/json"),), body)


# --------------------------------------------------------------------------- which call


def test_the_first_waiting_call_that_matches_is_chosen() -> None:
    first = recorded(1, chat("review a.py"))
    second = recorded(2, chat("review b.py"))
    found = choose_call(live(chat("review b.py")), [first, second], RULES, {})
    assert found is not None and found.call is second and found.matches


def test_a_changed_call_is_the_first_waiting_one_of_its_downstream() -> None:
    # the order within the exchange decides when nothing matches: a changed prompt is still
    # the call it was, compared and reported
    tool = recorded(1, b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call"}', name="tools")
    first = recorded(2, chat("review a.py"))
    second = recorded(3, chat("review b.py"))
    found = choose_call(live(chat("REVIEW a.py")), [tool, first, second], RULES, {})
    assert found is not None and found.call is first and not found.matches


def test_a_changed_call_is_the_first_waiting_one_sent_the_same_way() -> None:
    # an MCP client's GET of its event stream may come before or after its POST of a tool
    # call: a tool call whose argument changed stands for the recorded POST, not the GET
    stream = RecordedCall(
        index=1,
        name="tools",
        exchange=0,
        number=1,
        request=Request("GET", "/mcp", Headers([("Accept", "text/event-stream")]), b""),
        response=Response(200, "OK", Headers([("Content-Type", "text/event-stream")]), b""),
    )
    call = b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"arguments": %s}}'
    tool = recorded(2, call % b'{"diff": "a"}', name="tools", target="/mcp")
    found = choose_call(
        live(call % b'{"diff": "b"}', name="tools", target="/mcp"), [stream, tool], RULES, {}
    )
    assert found is not None and found.call is tool and not found.matches
    # and the GET, when it comes, is the GET's
    get = LiveCall("tools", "GET", "/mcp", (("accept", "text/event-stream"),), b"")
    found = choose_call(get, [stream, tool], RULES, {})
    assert found is not None and found.call is stream


def test_no_call_of_the_downstream_waits() -> None:
    tool = recorded(1, b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call"}', name="tools")
    assert choose_call(live(chat("review a.py")), [tool], RULES, {}) is None


def test_a_value_the_file_paired_reads_as_its_live_value() -> None:
    # the prompt names the task the agent made: recorded and live ids differ
    call = recorded(1, chat("review a.py"))
    found = choose_call(live(chat("review a.py", task=LIVE_TASK)), [call], RULES, {TASK: LIVE_TASK})
    assert found is not None and found.matches
    # paired with another live id, it is not the same call
    other = choose_call(
        live(chat("review a.py", task=LIVE_TASK)),
        [call],
        RULES,
        {TASK: "11111111-2222-4333-8444-555555555555"},
    )
    assert other is not None and not other.matches


def test_headers_choose_nothing() -> None:
    call = recorded(1, chat("review a.py"))
    sent = LiveCall(
        "model",
        "POST",
        "/v1/chat/completions",
        (("content-type", "application/json"), ("authorization", "Bearer sk-live")),
        chat("review a.py"),
    )
    found = choose_call(sent, [call], RULES, {})
    assert found is not None and found.matches


# --------------------------------------------------------------------------- the answer


def test_the_answer_is_the_recorded_reply_with_the_files_values_made_live() -> None:
    reply = Response(
        200,
        "OK",
        Headers([*JSON_TYPE, ("Mcp-Session-Id", "s-1")]),
        json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"text": f"task {TASK} ok"}}).encode(),
    )
    call = recorded(1, b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call"}', reply=reply)
    sent = live(b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call"}', name="model")
    answer = answer_of(call, sent, {TASK: LIVE_TASK}, RULES.shapes)
    assert answer.json == {"jsonrpc": "2.0", "id": 9, "result": {"text": f"task {LIVE_TASK} ok"}}
    assert answer.headers.get("Mcp-Session-Id") == "s-1"


def test_a_streamed_answer_keeps_its_frames() -> None:
    events = (
        SseEvent(data='{"choices": [{"delta": {"content": "Two"}}]}'),
        SseEvent(data='{"choices": [{"delta": {"content": " findings"}}]}'),
        SseEvent(data="[DONE]"),
    )
    reply = Response(200, "OK", Headers([("Content-Type", "text/event-stream")]), events=events)
    call = recorded(1, chat("review a.py"), reply=reply)
    answer = answer_of(call, live(chat("review a.py")), {}, RULES.shapes)
    assert answer is reply
    assert frames_of(answer) == [
        b'data: {"choices": [{"delta": {"content": "Two"}}]}\n\n',
        b'data: {"choices": [{"delta": {"content": " findings"}}]}\n\n',
        b"data: [DONE]\n\n",
    ]


def test_a_jsonrpc_answer_in_frames_gets_the_live_id() -> None:
    events = (SseEvent(event="message", data='{"jsonrpc": "2.0", "id": 1, "result": {}}'),)
    reply = Response(200, "OK", Headers([("Content-Type", "text/event-stream")]), events=events)
    call = recorded(1, b'{"jsonrpc": "2.0", "id": 1, "method": "initialize"}', reply=reply)
    sent = live(b'{"jsonrpc": "2.0", "id": "a", "method": "initialize"}')
    answer = answer_of(call, sent, {}, RULES.shapes)
    assert answer.events is not None
    assert json.loads(answer.events[0].data or "") == {"jsonrpc": "2.0", "id": "a", "result": {}}


# --------------------------------------------------------------------------- the comparison


def compare(call: RecordedCall, sent: LiveCall) -> list[Mismatch]:
    replay = ReplayState(DEFAULT_RULES, recorded_base=None, live_base="http://127.0.0.1:1")
    return replay.compare(as_reply(call), live_as_reply(sent))


def test_a_call_compares_like_a_reply() -> None:
    call = recorded(2, chat("review a.py"))
    assert compare(call, live(chat("review a.py"))) == []
    found = compare(call, live(chat("review a.py, kindly")))
    assert [m.path for m in found] == ["$.messages[1].content"]


def test_a_call_that_names_the_files_task_compares_by_its_pairs() -> None:
    call = recorded(1, chat("review a.py"))
    replay = ReplayState(DEFAULT_RULES, recorded_base=None, live_base="http://127.0.0.1:1")
    sent = live(chat("review a.py", task=LIVE_TASK))
    assert replay.compare(as_reply(call), live_as_reply(sent)) == []
    assert replay.mapping == {TASK: LIVE_TASK}


@pytest.mark.parametrize(
    ("mismatch", "text"),
    [
        (
            Mismatch("$.messages[1].content", "a", "b", call="call 2 (model)"),
            'call 2 (model) $.messages[1].content: expected "a", got "b"',
        ),
        (not_made(recorded(3, b"{}", name="tools")), "call 3 (tools): not made"),
        (
            extra_call(live(chat("x"))),
            "an extra call (model): POST /v1/chat/completions",
        ),
        (
            extra_call(live(chat("x")), "made late: call 1 (model) of exchange 1"),
            "an extra call (model): POST /v1/chat/completions (made late: call 1 (model) of "
            "exchange 1)",
        ),
    ],
)
def test_a_calls_mismatch_is_named_by_the_call(mismatch: Mismatch, text: str) -> None:
    assert str(mismatch) == text
