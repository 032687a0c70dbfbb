"""recorder.docs.render: exchanges as documentation blocks in the seed guide's shape."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from factories import make_exchange, make_request, make_response
from hypothesis import given, settings
from hypothesis import strategies as st
from seed_text import (
    SEED_MESSAGE_REPLY,
    SEED_STREAM,
    SEED_STREAM_OPTIONS,
    seed_stream_going_on,
)

from recorder import Headers, Response, SseEvent, Transcript, dump, load
from recorder.cli import main
from recorder.docs.render import (
    ELLIPSIS,
    TRUNCATED_NOTE,
    RenderOptions,
    cut_data_line,
    cut_json_lines,
    envelope_first,
    render_exchange,
    render_exchanges,
)
from recorder.docs.select import parse_exchange_reference
from recorder.docs.sync import parse_marker_options
from recorder.format.model import pretty_json

SEED = Path(__file__).parent.parent / "fixtures" / "seed"
# The seed guide's blocks are the plain line budget: nothing picked.
PLAIN = RenderOptions(pick=())
FORMAT_FIXTURES = Path(__file__).parent.parent / "fixtures" / "format"

# "The kit answers the old name message/send with -32601, as exchange 3 of 11-errors.http shows."
# The request is shown whole (its hidden part would be only closing brackets once the picked
# parts are in), so a blank line separates it from the reply.
OLD_METHOD_NAME = """\
POST /a2a/jsonrpc HTTP/1.1
Content-Type: application/json
…
{
  "jsonrpc": "2.0",
  "id": 3,
  "method": "message/send",
  "params": {
    "message": {
      "messageId": "msg-3",
      "role": "user",
      "kind": "message",
      "parts": [
        {
          "kind": "text",
          "text": "What languages can you review?"
        }
      ]
    }
  }
}

HTTP/1.1 200 OK
Content-Type: application/json

{
  "jsonrpc": "2.0",
  "id": 3,
  "error": {
    "code": -32601,
    "message": "Method not found"
  }
}
"""


MESSAGE_REPLY_WITH_PARTS = """\
POST /a2a/jsonrpc HTTP/1.1
Content-Type: application/json
…
{
  "jsonrpc": "2.0",
  "id": 1,
  "method": "SendMessage",
  "params": {
    "message": {
      "messageId": "d95bafc8-f2a4-427b-9cf4-bb99f4bea973",
      "role": "ROLE_USER",
      "parts": [
        {
          "text": "What languages can you review?"
        }
      ]
    }
  }
}

HTTP/1.1 200 OK
Content-Type: application/json

{
  "jsonrpc": "2.0",
  "id": 1,
  "result": {
    "message": {
      "messageId": "3b4b1206-4b6f-467f-b735-2d7e4f7f4bcd",
      "contextId": "dc423c62-d5f4-48e5-82c0-4963b9bc4334",
      "role": "ROLE_AGENT",
      "parts": [
        {
          "text": "I review unified diffs in Python, TypeScript, Go and Rust."
        }
      ]
    }
  }
}
"""


def seed_exchange(name: str, number: int = 1) -> Any:
    return load(SEED / name).exchanges[number - 1]


# --------------------------------------------------------------------------- the seed


def test_seed_message_reply_is_reproduced_from_the_transcript() -> None:
    # the fixture is SDK-shaped: lowercase reply headers with Date/Server, `result` before `id`
    assert render_exchange(seed_exchange("02-message-reply.http"), PLAIN) == SEED_MESSAGE_REPLY


def test_seed_message_reply_is_reproduced_from_the_format_fixture_too() -> None:
    # the format tests' fixture, written independently in the guide's own member order
    exchange = load(FORMAT_FIXTURES / "02-message-reply.http").exchanges[0]
    assert render_exchange(exchange, PLAIN) == SEED_MESSAGE_REPLY


def test_seed_stream_is_reproduced_from_the_transcript() -> None:
    exchange = seed_exchange("04-streaming-review.http")
    options = RenderOptions(only="response", pick=())
    assert render_exchange(exchange, options) == SEED_STREAM


def test_by_default_the_seed_block_shows_the_question_and_the_answer() -> None:
    # the seed's shape with the message parts the seed cut off; what would still be hidden is
    # only closing brackets, so both bodies are whole and a blank line precedes the reply
    text = render_exchange(seed_exchange("02-message-reply.http"))
    assert text == MESSAGE_REPLY_WITH_PARTS
    assert text.startswith(SEED_MESSAGE_REPLY.split('      "role": "ROLE_USER",')[0])


def test_by_default_stream_frames_show_their_kind_and_state() -> None:
    exchange = seed_exchange("04-streaming-review.http")
    text = render_exchange(exchange, RenderOptions(only="response", ids="short"))
    assert text == (
        "HTTP/1.1 200 OK\n"
        "Content-Type: text/event-stream\n"
        "\n"
        'data: {"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "728ba084…", '
        '"contextId": "0b6f3c1e…", "status": {"state": "TASK_STATE_SUBMITTED"}, …\n'
        "\n"
        'data: {"jsonrpc": "2.0", "id": 1, "result": {"statusUpdate": {"taskId": "728ba084…", '
        '…, "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": {…, '
        '"parts": [{"text": "Which file is this diff for?"}]}, …\n'
    )


def test_exchange_3_of_the_errors_transcript_is_the_old_method_name() -> None:
    assert render_exchange(seed_exchange("11-errors.http", 3)) == OLD_METHOD_NAME


def test_cli_render_prints_the_seed_block_exactly() -> None:
    ref = f"{SEED / '02-message-reply.http'}#1"
    result = CliRunner().invoke(main, ["render", ref, "--pick", "none"])
    assert result.exit_code == 0, result.output
    assert result.stdout == SEED_MESSAGE_REPLY


def test_cli_render_only_response() -> None:
    ref = f"{SEED / '04-streaming-review.http'}#1"
    result = CliRunner().invoke(main, ["render", ref, "--only", "response", "--pick", "none"])
    assert (result.exit_code, result.stdout) == (0, SEED_STREAM)


# the options the guide's stream is rendered with, as a docs marker writes them
STREAM_OPTIONS = parse_marker_options(SEED_STREAM_OPTIONS.split())


def test_seed_stream_is_reproduced_from_a_stream_of_four_frames() -> None:
    exchange = seed_stream_going_on(seed_exchange("04-streaming-review.http"))
    assert render_exchange(exchange, STREAM_OPTIONS) == SEED_STREAM
    # without open_end, the two frames left out are one closing `…` the guide does not have
    closed = dataclasses.replace(STREAM_OPTIONS, open_end=False)
    assert render_exchange(exchange, closed) == SEED_STREAM + "\n…\n"


def test_seed_stream_is_reproduced_from_the_format_fixtures_four_frames() -> None:
    # the format tests' stream goes on to an artifact and the task completed, as the kit's do;
    # its reply header is as the SDK sends it, with a charset the guide leaves out
    exchange = load(FORMAT_FIXTURES / "04-streaming-review.http").exchanges[0]
    assert exchange.response.events is not None and len(exchange.response.events) == 4
    recorded = SEED_STREAM.replace(
        "Content-Type: text/event-stream\n", "Content-Type: text/event-stream; charset=utf-8\n"
    )
    assert render_exchange(exchange, STREAM_OPTIONS) == recorded


def test_cli_render_open_end_leaves_out_only_the_closing_ellipsis(tmp_path: Path) -> None:
    path = tmp_path / "04-streaming-review.http"
    dump(Transcript((seed_stream_going_on(seed_exchange("04-streaming-review.http")),)), path)
    args = ["render", f"{path}#1", "--only", "response", "--pick", "none", "--max-lines", "3"]
    result = CliRunner().invoke(main, [*args, "--open-end"])
    assert (result.exit_code, result.stdout) == (0, SEED_STREAM)


def test_open_end_leaves_a_cut_json_body_unmarked_and_the_other_elisions_marked() -> None:
    exchange = seed_exchange("02-message-reply.http")
    text = render_exchange(exchange, RenderOptions(pick=(), open_end=True))
    # the request's closing `…` (which also stood between request and reply) and the reply's
    # are gone; the elided headers' `…` stays
    expected = SEED_MESSAGE_REPLY.replace(
        '"ROLE_USER",\n…\nHTTP/1.1', '"ROLE_USER",\n\nHTTP/1.1'
    ).removesuffix("…\n")
    assert text == expected
    assert text.splitlines()[2] == ELLIPSIS


def test_open_end_changes_nothing_that_is_not_cut_at_its_end() -> None:
    exchange = seed_exchange("11-errors.http", 3)
    assert render_exchange(exchange, RenderOptions(open_end=True)) == OLD_METHOD_NAME


# --------------------------------------------------------------------------- headers


def test_chosen_headers_are_kept_in_recorded_order_and_spelled_as_asked() -> None:
    exchange = seed_exchange("02-message-reply.http")
    options = RenderOptions(headers=("A2A-Version", "content-type"), max_lines=2)
    lines = render_exchange(exchange, options).splitlines()
    assert lines[:4] == [
        "POST /a2a/jsonrpc HTTP/1.1",
        "content-type: application/json",
        "A2A-Version: 1.0",
        ELLIPSIS,  # Accept is left out (Host, Accept-Encoding, User-Agent say nothing)
    ]


def test_no_ellipsis_when_only_transport_headers_are_left_out() -> None:
    request = make_request(
        headers=Headers([("Host", "localhost:41242"), ("Content-Type", "application/json")]),
        body=b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}',
    )
    text = render_exchange(make_exchange(request=request), RenderOptions(only="request"))
    assert text.splitlines()[:3] == [
        "POST /a2a/jsonrpc HTTP/1.1",
        "Content-Type: application/json",
        "",
    ]


def test_full_shows_every_header_and_every_line() -> None:
    exchange = seed_exchange("02-message-reply.http")
    text = render_exchange(exchange, RenderOptions(full=True))
    assert ELLIPSIS not in text
    assert "Host: localhost:41242\n" in text
    assert "server: uvicorn\n" in text
    assert '"text": "What languages can you review?"' in text


def test_request_without_body_or_elided_headers_ends_its_header_section_with_a_blank() -> None:
    request = make_request(
        method="GET", target="/.well-known/agent-card.json", headers=(), body=b""
    )
    response = make_response(body=b'{"name": "code-reviewer"}')
    assert render_exchange(make_exchange(request=request, response=response)) == (
        "GET /.well-known/agent-card.json HTTP/1.1\n"
        "\n"
        "HTTP/1.1 200 OK\n"
        "Content-Type: application/json\n"
        "\n"
        "{\n"
        '  "name": "code-reviewer"\n'
        "}\n"
    )


# --------------------------------------------------------------------------- JSON bodies


def test_envelope_members_come_first_and_the_rest_keeps_its_order() -> None:
    value = {"result": {"b": 1, "a": 2}, "extra": True, "id": 7, "jsonrpc": "2.0"}
    assert list(envelope_first(value)) == ["jsonrpc", "id", "result", "extra"]
    assert list(envelope_first(value)["result"]) == ["b", "a"]  # only the top level moves


def test_non_json_rpc_bodies_are_not_reordered() -> None:
    value = {"task": {"id": "t"}, "id": 1}
    assert list(envelope_first(value)) == ["task", "id"]


def test_the_budget_grows_to_show_the_discriminating_chain() -> None:
    value = envelope_first(
        {"result": {"task": {"id": "t-1", "contextId": "c-1"}}, "id": 1, "jsonrpc": "2.0"}
    )
    lines, cut = cut_json_lines(value, max_lines=2)
    assert cut
    assert lines == [
        "{",
        '  "jsonrpc": "2.0",',
        '  "id": 1,',
        '  "result": {',
        '    "task": {',
        '      "id": "t-1",',
        ELLIPSIS,
    ]


def test_a_body_whose_hidden_part_is_only_closing_brackets_is_shown_whole() -> None:
    value = {"a": {"b": {"c": 1}}}
    lines, cut = cut_json_lines(value, max_lines=4)
    assert not cut
    assert lines == json.dumps(value, indent=2).splitlines()


def test_error_chain_keeps_the_code() -> None:
    body = {
        "error": {
            "code": -32001,
            "message": "Task not found",
            "data": [{"reason": "TASK_NOT_FOUND"}],
        },
        "id": 5,
        "jsonrpc": "2.0",
    }
    lines, cut = cut_json_lines(envelope_first(body), max_lines=1)
    assert cut
    assert lines[-2:] == ['    "code": -32001,', ELLIPSIS]


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES, st.integers(min_value=1, max_value=30))
def test_json_cut_is_a_prefix_of_the_transcript_lines(value: Any, max_lines: int) -> None:
    pretty = pretty_json(value).split("\n")  # the lines of the transcript
    lines, cut = cut_json_lines(value, max_lines)
    if cut:
        assert lines[-1] == ELLIPSIS
        assert max_lines <= len(lines) - 1 < len(pretty)
        assert lines[:-1] == pretty[: len(lines) - 1]
    else:
        assert lines == pretty


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES, st.integers(min_value=10, max_value=120))
def test_data_line_cut_ends_after_a_complete_member(value: Any, width: int) -> None:
    value = {"jsonrpc": "2.0", "id": 1, "result": value}
    whole = cut_data_line(json.dumps(value), 10**9)
    assert json.loads(whole) == value
    shown = cut_data_line(json.dumps(value), width)
    if shown == whole:
        return
    assert shown.endswith(", " + ELLIPSIS)
    kept = shown[: -len(", " + ELLIPSIS)]
    assert whole.startswith(kept)
    assert whole[len(kept) :].startswith(", ")  # what is hidden starts at a member boundary


def test_data_line_that_fits_is_only_reordered() -> None:
    data = '{"result": {"task": {"id": "t"}}, "id": 1, "jsonrpc": "2.0"}'
    assert (
        cut_data_line(data, 100) == '{"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "t"}}}'
    )


def test_data_line_takes_more_members_while_they_fit() -> None:
    data = json.dumps(
        {
            "error": {"code": -32001, "message": "Task not found", "data": [{"reason": "X"}]},
            "id": 1,
            "jsonrpc": "2.0",
        }
    )
    assert cut_data_line(data, 94) == (
        '{"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Task not found", …'
    )


def test_non_json_data_is_cut_at_a_space() -> None:
    assert cut_data_line("one two three four five six", 15) == "one two three …"


# --------------------------------------------------------------------------- streams


def stream(count: int) -> Response:
    events = tuple(
        SseEvent(data=json.dumps({"result": {"statusUpdate": {"n": n}}, "id": 1, "jsonrpc": "2.0"}))
        for n in range(count)
    )
    return Response(200, "OK", Headers([("Content-Type", "text/event-stream")]), events=events)


def test_frames_are_shown_while_the_budget_allows_then_an_ellipsis() -> None:
    text = render_exchange(
        make_exchange(response=stream(4)), RenderOptions(only="response", max_lines=3)
    )
    assert text == (
        "HTTP/1.1 200 OK\n"
        "Content-Type: text/event-stream\n"
        "\n"
        'data: {"jsonrpc": "2.0", "id": 1, "result": {"statusUpdate": {"n": 0}}}\n'
        "\n"
        'data: {"jsonrpc": "2.0", "id": 1, "result": {"statusUpdate": {"n": 1}}}\n'
        "\n"
        "…\n"
    )


def test_event_and_comment_lines_of_a_frame_are_kept() -> None:
    events = (
        SseEvent(data='{"jsonrpc": "2.0", "id": 1, "error": {"code": -32603}}', event="error"),
    )
    response = Response(200, "OK", Headers([("Content-Type", "text/event-stream")]), events=events)
    text = render_exchange(make_exchange(response=response), RenderOptions(only="response"))
    assert text.endswith(
        'event: error\ndata: {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603}}\n'
    )


def test_a_truncated_reply_says_so() -> None:
    exchange = make_exchange(response=stream(1), truncated=True)
    text = render_exchange(exchange, RenderOptions(only="response"))
    assert text.endswith("}}}\n" + TRUNCATED_NOTE + "\n")


# --------------------------------------------------------------------------- other bodies


def test_binary_body_is_named_not_shown() -> None:
    response = make_response(
        headers=Headers([("Content-Type", "application/octet-stream")]), body=b"\xff\x00\x01"
    )
    text = render_exchange(make_exchange(response=response), RenderOptions(only="response"))
    assert text.endswith("\n… (3 bytes of binary data)\n")


def test_text_body_is_cut_by_lines() -> None:
    body = "\n".join(f"line {n}" for n in range(10)).encode()
    response = make_response(headers=Headers([("Content-Type", "text/plain")]), body=body)
    text = render_exchange(
        make_exchange(response=response), RenderOptions(only="response", max_lines=2)
    )
    assert text.endswith("\nline 0\nline 1\n…\n")


def test_several_exchanges_are_titled_and_separated() -> None:
    exchanges = load(SEED / "11-errors.http").exchanges[:2]
    text = render_exchanges(exchanges, RenderOptions(only="response", max_lines=20))
    assert text.startswith("### GetTask: a task id the agent never gave\nHTTP/1.1 200 OK\n")
    assert (
        "\n}\n\n### SendMessage without A2A-Version is read as version 0.3\nHTTP/1.1 200 OK\n"
        in text
    )


# --------------------------------------------------------------------------- references, errors


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("transcripts/02-message-reply.http#1", ("transcripts/02-message-reply.http", 1)),
        ("transcripts/02-message-reply.http", ("transcripts/02-message-reply.http", None)),
        ("odd#name.http", ("odd#name.http", None)),
        ("a.http#12", ("a.http", 12)),
    ],
)
def test_parse_reference(reference: str, expected: tuple[str, int | None]) -> None:
    assert parse_exchange_reference(reference) == expected


def test_exchange_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="numbered from 1"):
        parse_exchange_reference("a.http#0")


def test_cli_render_names_a_missing_exchange_and_exits_2() -> None:
    path = SEED / "02-message-reply.http"
    result = CliRunner().invoke(main, ["render", f"{path}#2"])
    assert result.exit_code == 2
    assert result.stderr == f"recorder render: {path} has 1 exchange: there is no #2\n"


def test_cli_render_names_a_missing_file_and_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["render", str(tmp_path / "nope.http")])
    assert (result.exit_code, result.stderr) == (
        2,
        f"recorder render: {tmp_path / 'nope.http'}: no such transcript\n",
    )


def test_cli_render_reports_a_parse_error_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.http"
    bad.write_text("### x\nPOST /a2a/jsonrpc HTTP/1.1\n\n{}\n")
    result = CliRunner().invoke(main, ["render", str(bad)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"recorder render: {bad}:")


@pytest.mark.parametrize(
    ("suffix", "message"),
    [
        ("#x", ": no exchange is x (its operations: GetTask, SendMessage, message/send)"),
        (
            "#-1",
            "#-1: no such transcript; after '#' comes an exchange number or name, e.g. {path}#1"
            " or {path}#SendMessage",
        ),
    ],
)
def test_cli_render_explains_a_reference_that_is_not_a_number(suffix: str, message: str) -> None:
    path = SEED / "11-errors.http"
    result = CliRunner().invoke(main, ["render", f"{path}{suffix}"])
    assert result.exit_code == 2
    assert result.stderr == f"recorder render: {path}{message.format(path=path)}\n"


def test_cli_render_of_a_folder_says_to_name_a_file() -> None:
    result = CliRunner().invoke(main, ["render", str(SEED)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"recorder render: {SEED}: is a folder; name one transcript file (FILE or FILE#N)\n"
    )


@pytest.mark.parametrize("command", [["render"], ["export", "--to", "curl"]])
def test_cli_a_transcript_without_exchanges_is_an_error_not_empty_output(
    tmp_path: Path, command: list[str]
) -> None:
    empty = tmp_path / "empty.http"
    empty.write_text("# recorder-format: 1\n")
    result = CliRunner().invoke(main, [*command, str(empty)])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"recorder {command[0]}: {empty}:2: no exchanges: a transcript holds at least one\n"
    )
