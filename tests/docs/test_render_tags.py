"""Render shows what happened on the wire (issue 32): where a request was sent during an open
exchange, push deliveries tagged, a gRPC reply's trailers never left out without a `…`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from factories import make_exchange, make_request, make_response

from recorder import Headers, SseEvent, load
from recorder.bindings import grpc as binding
from recorder.cli import main
from recorder.docs.render import ELLIPSIS, RenderOptions, render_exchange, render_exchanges
from recorder.format.model import Exchange

REPO = Path(__file__).resolve().parents[2]
SUBSCRIBE = REPO / "transcripts" / "08-subscribe.http"
PUSH = REPO / "transcripts" / "17-push-notifications.http"
CANCEL_MARK = "# here the client sent exchange 3 (CancelTask)"


def _state_line(lines: list[str], state: str) -> int:
    """The index of the one `data:` line that holds this task state."""
    found = [n for n, line in enumerate(lines) if line.startswith("data:") and state in line]
    assert len(found) == 1, (state, lines)
    return found[0]


# --------------------------------------------------------------------------- @during


def test_a_cancel_sent_during_a_stream_is_shown_where_it_was_sent() -> None:
    # the golden: SubscribeToTask's stream (frame 1 WORKING, frame 2 CANCELED) and the
    # CancelTask tagged `@during exchange 2 frame 1`; a reader must not see the stream end
    # CANCELED before anything asked for it
    exchanges = load(SUBSCRIBE).exchanges
    assert exchanges[2].comments == ("@during exchange 2 frame 1",)
    lines = render_exchanges(exchanges).splitlines()
    working = _state_line(lines, "TASK_STATE_WORKING")
    canceled = _state_line(lines, '"statusUpdate"')
    assert lines.index(CANCEL_MARK) == working + 2  # after frame 1, a blank line between
    assert canceled == working + 4
    cancel = lines.index("### CancelTask: cancel the review while the stream is open")
    assert lines[cancel + 1 : cancel + 3] == [
        "# @during exchange 2 frame 1",
        "POST /a2a/jsonrpc HTTP/1.1",
    ]
    assert lines.index("### SubscribeToTask: subscribe to the review in progress") < working


def test_the_stream_rendered_alone_still_says_where_the_cancel_went() -> None:
    result = CliRunner().invoke(main, ["render", f"{SUBSCRIBE}#2", "--only", "response"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    working = _state_line(lines, "TASK_STATE_WORKING")
    assert lines[working + 1 : working + 4] == ["", CANCEL_MARK, ""]
    assert "TASK_STATE_CANCELED" in lines[working + 4]


def test_the_request_sent_during_rendered_alone_opens_with_its_tag() -> None:
    result = CliRunner().invoke(main, ["render", f"{SUBSCRIBE}#CancelTask"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:2] == [
        "# @during exchange 2 frame 1",
        "POST /a2a/jsonrpc HTTP/1.1",
    ]


def _frame(state: str) -> SseEvent:
    result = {"statusUpdate": {"taskId": "t-1", "status": {"state": state}}}
    return SseEvent(data=json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}))


def _stream(states: list[str], *, ping_second: bool = False) -> Exchange:
    events = [_frame(state) for state in states]
    if ping_second:
        events.insert(1, SseEvent(comments=("keep-alive",)))
    response = make_response(
        headers=Headers([("Content-Type", "text/event-stream")]), body=b"", events=tuple(events)
    )
    request = make_request(body=b'{"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask"}')
    return make_exchange(request=request, response=response, title="SubscribeToTask: watch")


def _sent_during(frame: int, method: str = "CancelTask") -> Exchange:
    body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": method, "params": {"id": "t-1"}})
    return make_exchange(
        request=make_request(body=body.encode()),
        title=f"{method}: during",
        comments=(f"@during exchange 1 frame {frame}",),
    )


def test_the_mark_is_never_elided_and_splits_a_run_of_frames_left_out() -> None:
    states = [f"TASK_STATE_{n}" for n in ("A", "B", "C", "D", "E", "F")]
    exchanges = (_stream(states, ping_second=True), _sent_during(3))
    options = RenderOptions(only="response", max_lines=1, width=200, pick=())
    text = render_exchanges(exchanges, options, numbers=[1])
    # frame 1 shown; the ping and frames 2-3 left out; the cancel went after frame 3 (the ping
    # not counted), then frames 4-6 left out
    assert text.split("\n\n", 1)[1].splitlines() == [
        _frame_line("TASK_STATE_A"),
        "",
        ELLIPSIS,
        "",
        "# here the client sent exchange 2 (CancelTask)",
        "",
        ELLIPSIS,
    ]


def _frame_line(state: str) -> str:
    return f"data: {_frame(state).data}"


def test_a_request_sent_before_any_reply_came_is_marked_between_request_and_reply() -> None:
    # K = 0: only the request of exchange 1 had been sent (a blocking call answered late)
    exchanges = (make_exchange(title="SendMessage: blocking"), _sent_during(0))
    lines = render_exchanges(exchanges, numbers=[1]).splitlines()
    status = lines.index("HTTP/1.1 200 OK")
    assert lines[status - 3 : status] == [
        "",
        "# here the client sent exchange 2 (CancelTask)",
        "",
    ]
    assert lines[status - 4] == "}"  # the request's body, whole


def test_marks_for_frames_a_stream_never_sent_come_after_its_last_frame() -> None:
    exchanges = (_stream(["TASK_STATE_A"]), _sent_during(5))
    lines = render_exchanges(exchanges, RenderOptions(only="response"), numbers=[1]).splitlines()
    assert lines[-1] == "# here the client sent exchange 2 (CancelTask)"
    assert "TASK_STATE_A" in lines[-3]


def test_an_exchange_without_an_operation_is_named_by_its_request_line() -> None:
    late = make_exchange(
        request=make_request(method="GET", target="/health", headers=(), body=b""),
        title="",
        comments=("@during exchange 1 frame 1",),
    )
    text = render_exchanges((_stream(["TASK_STATE_A", "TASK_STATE_B"]), late), numbers=[1])
    assert "# here the client sent exchange 2 (GET /health)\n" in text


# --------------------------------------------------------------------------- push deliveries


def test_a_push_delivery_is_tagged_as_the_transcript_tags_it() -> None:
    exchanges = load(PUSH).exchanges
    delivery = exchanges[1]
    assert delivery.push_config == 1
    assert render_exchange(delivery).splitlines()[:2] == [
        "# @push config 1",
        "POST /.planner/push/{{PUSH_URL_SECRET}} HTTP/1.1",
    ]
    whole = render_exchanges(exchanges).split("\n### ")
    tagged = [block.splitlines()[0] for block in whole if "\n# @push config 1\n" in block]
    assert tagged == [e.title for e in exchanges if e.push_config is not None]
    assert len(tagged) == 6
    # the call the client made is not tagged
    assert not render_exchange(exchanges[0]).startswith("#")


# --------------------------------------------------------------------------- gRPC trailers


def _failed_call(trailing: list[tuple[str, str]]) -> Exchange:
    request = binding.request_of("GetTask", [("a2a-version", "1.0")], b'{"id": "t-9"}')
    failed = binding.response_of(5, message="Task not found", trailing=trailing)
    return Exchange(request, failed, title="GetTask")


def test_trailers_not_kept_are_elided_with_an_ellipsis_not_dropped() -> None:
    lines = render_exchange(_failed_call([("x-request-id", "r-9")])).splitlines()
    assert lines[-3:] == ["", "# @trailers", ELLIPSIS]


def test_trailers_kept_are_shown_and_the_others_elided() -> None:
    exchange = _failed_call([("x-request-id", "r-9"), ("x-trace", "abc")])
    lines = render_exchange(exchange, RenderOptions(headers=("x-request-id",))).splitlines()
    assert lines[-4:] == ["", "# @trailers", "x-request-id: r-9", ELLIPSIS]
    full = render_exchange(exchange, RenderOptions(full=True)).splitlines()
    assert full[-3:] == ["# @trailers", "x-request-id: r-9", "x-trace: abc"]
