"""What a documentation block always shows (issue 15): the question, the answer, task states,
artifacts, stream frames' kinds; shortened ids; JSON paths picked; `render --list`."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from factories import make_exchange, make_request, make_response
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder import Headers, Response, SseEvent, load
from recorder.cli import main
from recorder.docs.render import (
    ELLIPSIS,
    RenderOptions,
    cut_data_line,
    cut_json_lines,
    render_exchange,
)
from recorder.docs.select import IdShortener, JsonPath, parse_pick, picked_paths
from recorder.docs.sync import parse_marker_options
from recorder.format.model import pretty_json

REPO = Path(__file__).resolve().parent.parent.parent
GOLDEN = sorted((REPO / "transcripts").glob("*.http"))
SEED = REPO / "tests" / "fixtures" / "seed"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


# --------------------------------------------------------------------------- every golden


def _json_values(raw: bytes, events: tuple[SseEvent, ...] | None) -> Iterator[Any]:
    if events is not None:
        for event in events:
            if event.data is not None:
                try:
                    yield json.loads(event.data)
                except ValueError:
                    continue
        return
    try:
        yield json.loads(raw)
    except ValueError:
        return


def _texts(parts: Any) -> Iterator[str]:
    for part in parts if isinstance(parts, list) else ():
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            yield part["text"]


def _what_matters(value: Any, parent: str = "") -> Iterator[str]:
    """Independently of the renderer: message parts' texts (not a task's history), task states,
    artifact texts, each as it is written in JSON."""
    if isinstance(value, dict):
        for key, member in value.items():
            if key == "history":
                continue
            if key == "parts" and parent in ("message", "artifact", "artifacts"):
                yield from (json.dumps(text, ensure_ascii=False) for text in _texts(member))
            elif key == "state" and parent == "status" and isinstance(member, str):
                yield json.dumps(member)
            else:
                yield from _what_matters(member, key if isinstance(member, dict) else parent)
    elif isinstance(value, list):
        for element in value:
            yield from _what_matters(element, parent)


def test_the_golden_transcripts_are_many_and_hold_questions_and_answers() -> None:
    questions = answers = 0
    for path in GOLDEN:
        for exchange in load(path).exchanges:
            questions += sum(
                len(list(_what_matters(v))) for v in _json_values(exchange.request.body, None)
            )
            response = exchange.response
            answers += sum(
                len(list(_what_matters(v))) for v in _json_values(response.body, response.events)
            )
    assert len(GOLDEN) >= 16
    assert questions >= 10  # the check below is not vacuous (16 transcripts: 21 and 40)
    assert answers >= 20


@pytest.mark.parametrize("ids", ["full", "short"])
@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.name)
def test_every_golden_exchange_shows_its_question_and_its_answer(path: Path, ids: str) -> None:
    options = RenderOptions(ids=ids)  # type: ignore[arg-type]
    for number, exchange in enumerate(load(path).exchanges, 1):
        text = render_exchange(exchange, options)
        request, response = exchange.request, exchange.response
        wanted = list(_json_values(request.body, None)) if request.is_json else []
        wanted += list(_json_values(response.body, response.events))
        for value in wanted:
            for shown in _what_matters(value):
                if ids == "short":
                    shown = IdShortener([shown]).text(shown)
                assert shown in text, f"{path.name}#{number}: {shown[:60]} is not shown"


# --------------------------------------------------------------------------- ids=short


def test_short_ids_are_consistent_across_the_block() -> None:
    exchange = load(REPO / "transcripts" / "03-review-task.http").exchanges[0]
    full = render_exchange(exchange, RenderOptions(full=True))
    short = render_exchange(exchange, RenderOptions(full=True, ids="short"))
    ids = set(UUID.findall(full))
    assert len(ids) >= 3
    assert not UUID.search(short)
    for uuid in ids:  # same id, same short form, as often as the full form was there
        assert short.count(f'"{uuid[:8]}…"') == full.count(f'"{uuid}"')


def test_short_ids_that_share_a_prefix_stay_apart() -> None:
    a = "3b4b1206-4b6f-467f-b735-2d7e4f7f4bcd"
    b = "3b4b1206-9999-467f-b735-2d7e4f7f4bcd"
    c = "dc423c62-d5f4-48e5-82c0-4963b9bc4334"
    shortener = IdShortener([f"{a} {b}", c.upper()])
    assert shortener.text(f"{a}/{b}/{c}") == "3b4b1206-4…/3b4b1206-9…/dc423c62…"
    assert shortener.text("not-a-uuid 3b4b1206") == "not-a-uuid 3b4b1206"


def test_short_ids_reach_the_request_line_and_frames() -> None:
    task = "01332e8e-1167-4e5a-85ef-c8ad07ff5cbb"
    request = make_request(method="GET", target=f"/a2a/rest/tasks/{task}", body=b"")
    events = (SseEvent(data=json.dumps({"statusUpdate": {"taskId": task}})),)
    response = Response(200, "OK", Headers([("Content-Type", "text/event-stream")]), events=events)
    text = render_exchange(
        make_exchange(request=request, response=response), RenderOptions(ids="short")
    )
    assert text.splitlines()[0] == "GET /a2a/rest/tasks/01332e8e… HTTP/1.1"
    assert text.endswith('data: {"statusUpdate": {"taskId": "01332e8e…"}}\n')


# --------------------------------------------------------------------------- pick


@pytest.mark.parametrize(
    ("path", "concrete", "matches"),
    [
        ("$.result.status.state", ("result", "status", "state"), True),
        ("$.result.status.state", ("result", "task", "status", "state"), False),
        ("$..status.state", ("result", "task", "status", "state"), True),
        ("$..status.state", ("status", "state"), True),
        ("$..message.parts", ("result", "task", "history", 0, "parts"), False),
        ("$.tasks[1].id", ("tasks", 1, "id"), True),
        ("$.tasks[1].id", ("tasks", 0, "id"), False),
        ("$.tasks[*].id", ("tasks", 7, "id"), True),
        ("$.a.*", ("a", "b"), True),
        ("$['a b']", ("a b",), True),
        ('$..["x"]', ("y", "x"), True),
        ("$.a", ("a", "b"), False),  # a path names a node; its inside goes with it
    ],
)
def test_json_path_matching(path: str, concrete: tuple[str | int, ...], matches: bool) -> None:
    assert JsonPath.parse(path).matches(concrete) is matches


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("result.id", "starts with '$'"),
        ("$.a[", "bad [...]"),
        ("$..", "expected a member name"),
        ("$a", "expected '.' or '['"),
        ("$.", "expected a member name"),
    ],
)
def test_bad_json_paths_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        JsonPath.parse(text)


def test_pick_none_is_nothing() -> None:
    assert parse_pick(["none"]) == ()
    assert RenderOptions(pick=("none",)).picks == ()


TASK_REPLY = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {
        "id": "t-1",
        "contextId": "c-1",
        "kind": "task",
        "metadata": {"a": 1, "b": 2, "c": 3},
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-29T19:36:38Z", "x": 1},
        "artifacts": [{"artifactId": "a-1", "parts": [{"text": "4 comments."}]}],
        "history": [{"role": "ROLE_USER", "parts": [{"text": "the question"}]}],
    },
}


def test_a_picked_member_is_shown_whole_with_its_enclosing_lines_and_gaps_as_ellipses() -> None:
    picks = parse_pick(["$.result.status.state", "$.result.artifacts"])
    lines, cut = cut_json_lines(TASK_REPLY, 4, picks=picks)
    assert cut
    assert lines == [
        "{",
        '  "jsonrpc": "2.0",',
        '  "id": 1,',
        '  "result": {',
        '    "id": "t-1",',
        "    …",  # contextId, kind, metadata (4 lines)
        '    "status": {',
        '      "state": "TASK_STATE_COMPLETED",',
        "      …",
        "    },",
        '    "artifacts": [',
        "      {",
        '        "artifactId": "a-1",',
        '        "parts": [',
        "          {",
        '            "text": "4 comments."',
        "          }",
        "        ]",
        "      }",
        "    ],",
        ELLIPSIS,  # the history is not picked
    ]


def test_pick_on_the_command_line_and_in_a_marker() -> None:
    assert parse_marker_options(["pick=$..status.state,$..artifacts", "ids=short"]) == (
        RenderOptions(pick=("$..status.state", "$..artifacts"), ids="short")
    )
    with pytest.raises(ValueError, match="starts with"):
        parse_marker_options(["pick=result"])
    with pytest.raises(ValueError, match="ids= takes short or full"):
        parse_marker_options(["ids=tiny"])
    path = REPO / "transcripts" / "03-review-task.http"
    result = CliRunner().invoke(
        main, ["render", f"{path}#1", "--only", "response", "--pick", "$..artifactId"]
    )
    assert result.exit_code == 0, result.output
    assert '"artifactId": ' in result.stdout
    assert "TASK_STATE_COMPLETED" not in result.stdout  # what is not picked goes under the budget
    bad = CliRunner().invoke(main, ["render", f"{path}#1", "--pick", "status"])
    assert bad.exit_code == 2
    assert bad.stderr.startswith("recorder render: --pick: a JSON path starts with '$'")


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(st.characters(exclude_categories=("Cc", "Cs", "Zl", "Zp")), max_size=5),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from("abcs"), children, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(
    JSON_VALUES,
    st.integers(min_value=1, max_value=12),
    st.sampled_from(["$..a", "$..s.c", "$.b[*]"]),
)
def test_picked_cut_keeps_transcript_lines_in_order_and_every_picked_line(
    value: Any, max_lines: int, pick: str
) -> None:
    pretty = pretty_json(value).split("\n")
    lines, cut = cut_json_lines(value, max_lines, picks=parse_pick([pick]))
    shown = [line for line in lines if line.strip() != ELLIPSIS]
    position = 0  # every shown line is a transcript line, in order
    for line in shown:
        position = pretty.index(line, position) + 1
    assert cut == (len(shown) < len(pretty))
    assert not any(a.strip() == b.strip() == ELLIPSIS for a, b in itertools.pairwise(lines))


# --------------------------------------------------------------------------- A2A 0.3 shapes

# A2A 0.3 over JSON-RPC (the a2a-sdk's v0.3 compat endpoint): the result IS the message
ANSWER_03 = "I review unified diffs in Python, TypeScript, Go and Rust."
MESSAGE_REPLY_03 = {
    "id": "6b",
    "jsonrpc": "2.0",
    "result": {
        "contextId": "df7ee03e-304c-49de-857b-6a01d74c8b20",
        "kind": "message",
        "messageId": "3b4b1206-4b6f-467f-b735-2d7e4f7f4bcd",
        "metadata": {"model": "reviewer-2", "tokens": 42},
        "parts": [{"kind": "text", "text": ANSWER_03}],
        "role": "agent",
    },
}


def test_an_a2a_0_3_message_reply_shows_its_answer_by_default() -> None:
    exchange = make_exchange(response=make_response(body=json.dumps(MESSAGE_REPLY_03).encode()))
    text = render_exchange(exchange, RenderOptions(only="response"))
    assert text.splitlines()[3:] == [
        "{",
        '  "jsonrpc": "2.0",',
        '  "id": "6b",',
        '  "result": {',
        '    "contextId": "df7ee03e-304c-49de-857b-6a01d74c8b20",',
        '    "kind": "message",',
        '    "messageId": "3b4b1206-4b6f-467f-b735-2d7e4f7f4bcd",',
        '    "metadata": {',
        "      …",  # the budget is spent: what is shown past it is the picked answer
        "    },",
        '    "parts": [',
        "      {",
        '        "kind": "text",',
        f'        "text": {json.dumps(ANSWER_03)}',
        "      }",
        "    ],",
        ELLIPSIS,
    ]


def test_an_a2a_0_3_message_frame_shows_its_answer_by_default() -> None:
    frame = SseEvent(data=json.dumps(MESSAGE_REPLY_03))
    lines = render_exchange(
        make_exchange(
            response=make_response(
                headers=Headers([("Content-Type", "text/event-stream")]),
                body=b"",
                events=(frame,),
            )
        ),
        RenderOptions(only="response"),
    ).splitlines()
    assert lines[-1].startswith('data: {"jsonrpc": "2.0", "id": "6b", "result": {')
    assert f'"parts": [{{"kind": "text", "text": {json.dumps(ANSWER_03)}}}]' in lines[-1]


def test_an_a2a_0_3_protojson_message_shows_its_content_by_default() -> None:
    # 0.3's HTTP+JSON and gRPC: SendMessageResponse {"message": {..., "content": [parts]}}
    reply = {
        "message": {
            "messageId": "3b4b1206-4b6f-467f-b735-2d7e4f7f4bcd",
            "contextId": "df7ee03e-304c-49de-857b-6a01d74c8b20",
            "taskId": "",
            "role": "ROLE_AGENT",
            "metadata": {"model": "reviewer-2"},
            "content": [{"text": ANSWER_03}],
        }
    }
    exchange = make_exchange(response=make_response(body=json.dumps(reply).encode()))
    text = render_exchange(exchange, RenderOptions(only="response"))
    assert f'        "text": {json.dumps(ANSWER_03)}' in text.splitlines()


# --------------------------------------------------------------------------- blank line, frames


def test_full_puts_a_blank_line_between_the_request_body_and_the_status_line() -> None:
    exchange = load(SEED / "02-message-reply.http").exchanges[0]
    text = render_exchange(exchange, RenderOptions(full=True))
    assert "\n}\n\nHTTP/1.1 200 OK\n" in text
    assert "\n\n\n" not in text


def test_an_elided_request_ends_in_its_ellipsis_with_no_blank_line() -> None:
    request = make_request(
        body=json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "GetTask",
                "params": {f"k{n}": n for n in range(12)},
            }
        ).encode()
    )
    text = render_exchange(make_exchange(request=request, response=make_response()))
    assert "\n…\nHTTP/1.1 200 OK\n" in text


def frames(*results: dict[str, Any]) -> Response:
    events = tuple(
        SseEvent(data=json.dumps({"jsonrpc": "2.0", "id": 1, "result": r})) for r in results
    )
    return Response(200, "OK", Headers([("Content-Type", "text/event-stream")]), events=events)


def test_past_the_budget_frames_with_a_state_are_still_shown_and_the_others_elided() -> None:
    response = frames(
        {"task": {"id": "t", "status": {"state": "TASK_STATE_SUBMITTED"}}},
        {"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}},
        {"artifactUpdate": {"taskId": "t", "append": True}},
        {"artifactUpdate": {"taskId": "t", "append": True}},
        {"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_COMPLETED"}}},
    )
    options = RenderOptions(only="response", max_lines=1)
    head = 'data: {"jsonrpc": "2.0", "id": 1, "result": '
    assert render_exchange(make_exchange(response=response), options).splitlines()[3:] == [
        head + '{"task": {"id": "t", "status": {"state": "TASK_STATE_SUBMITTED"}}}}',
        "",
        head + '{"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}}}',
        "",
        ELLIPSIS,
        "",
        head + '{"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_COMPLETED"}}}}',
    ]


def test_a_long_frame_keeps_its_kind_and_state_and_elides_the_rest() -> None:
    update = {
        "taskId": "x" * 30,
        "contextId": "y" * 30,
        "status": {"state": "TASK_STATE_WORKING", "timestamp": "z" * 30},
        "final": False,
    }
    text = render_exchange(
        make_exchange(response=frames({"statusUpdate": update})),
        RenderOptions(only="response", width=60),
    )
    assert text.splitlines()[-1] == (
        'data: {"jsonrpc": "2.0", "id": 1, "result": {"statusUpdate": {"taskId": "'
        + "x" * 30
        + '", …, '
        '"status": {"state": "TASK_STATE_WORKING", …'
    )


# --------------------------------------------------------------------------- --list


def test_cli_list_prints_numbers_and_titles() -> None:
    path = SEED / "11-errors.http"
    titles = [exchange.title for exchange in load(path).exchanges]
    result = CliRunner().invoke(main, ["render", str(path), "--list"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [f"#{n}  {title}" for n, title in enumerate(titles, 1)]
    one = CliRunner().invoke(main, ["render", f"{path}#3", "--list"])
    assert one.stdout == f"#3  {titles[2]}\n"


@settings(max_examples=200, deadline=None)
@given(
    JSON_VALUES,
    st.integers(min_value=10, max_value=80),
    st.sampled_from(["$..a", "$..s.c", "$.result.b[*]"]),
)
def test_a_cut_data_line_shows_every_picked_member_whole(value: Any, width: int, pick: str) -> None:
    value = {"jsonrpc": "2.0", "id": 1, "result": value}
    picks = parse_pick([pick])
    shown = cut_data_line(json.dumps(value), width, picks=picks)
    for path in picked_paths(value, picks):
        node: Any = value
        for step in path:
            node = node[step]
        key = f"{json.dumps(path[-1])}: " if isinstance(path[-1], str) else ""
        assert key + json.dumps(node, ensure_ascii=False) in shown
    if ELLIPSIS not in shown:  # nothing left out: the whole line
        assert json.loads(shown) == value
