"""`# @call NAME exchange N [frame K]` and `# @downstream NAME URL`: an agent's own calls
read, written back byte for byte, checked at their lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from recorder import CallTag, Exchange, ParseError, Request, Response, Transcript, dumps, loads
from recorder.checking import check_paths
from recorder.docs.curlscript import export_curl
from recorder.docs.export import export_http
from recorder.docs.render import render_exchange

HEAD = "# recorder-format: 1\n# @downstream model https://api.example/v1\n\n"
ASK = (
    "### SendStreamingMessage\n"
    "POST /a2a/jsonrpc HTTP/1.1\n"
    "Host: 127.0.0.1:41242\n"
    "Content-Type: application/json\n"
    "\n"
    '{"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {}}\n'
    "\n"
    "HTTP/1.1 200 OK\n"
    "Content-Type: text/event-stream\n"
    "\n"
    'data: {"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "t1"}}}\n'
    "\n"
    'data: {"jsonrpc": "2.0", "id": 1, "result": {"statusUpdate": {"taskId": "t1"}}}\n'
    "\n"
)
CALL = (
    "### model: POST /v1/chat/completions\n"
    "# @call model exchange 1\n"
    "POST /v1/chat/completions HTTP/1.1\n"
    "Host: 127.0.0.1:41260\n"
    "Authorization: Bearer {{OPENAI_API_KEY}}\n"
    "Content-Type: application/json\n"
    "\n"
    '{"model": "m", "messages": [{"role": "user", "content": "review t1"}]}\n'
    "\n"
    "HTTP/1.1 200 OK\n"
    "Content-Type: text/event-stream\n"
    "\n"
    'data: {"id": "chatcmpl-1", "choices": [{"delta": {"content": "ok"}}]}\n'
    "\n"
    "data: [DONE]\n"
    "\n"
)


def _file(*blocks: str) -> str:
    return HEAD + "\n".join(block.rstrip("\n") + "\n" for block in blocks)


def test_the_tags_are_read_and_written_back_byte_for_byte() -> None:
    text = dumps(loads(_file(ASK, CALL, CALL.replace("exchange 1", "exchange 1 frame 2"))))
    transcript = loads(text)
    assert [e.call for e in transcript.exchanges] == [
        None,
        CallTag("model", 1),
        CallTag("model", 1, frame=2),
    ]
    assert transcript.exchanges[1].comments == ()
    assert transcript.downstreams == {"model": "https://api.example/v1"}
    assert "# @downstream model https://api.example/v1\n" in text
    assert "\n# @call model exchange 1 frame 2\nPOST /v1/chat/completions" in text
    assert dumps(loads(text)) == text
    assert transcript.exchanges[1].sent_by_agent and not transcript.exchanges[0].sent_by_agent


def test_an_ambiguous_call_says_so_after_its_frame() -> None:
    tag = "# @call model exchange 1 frame 1 ambiguous"
    text = dumps(loads(_file(ASK, CALL.replace("# @call model exchange 1", tag))))
    assert loads(text).exchanges[1].call == CallTag("model", 1, frame=1, ambiguous=True)
    assert f"\n{tag}\n" in text


def test_the_writer_puts_the_tag_after_the_comments_and_before_truncated() -> None:
    ask, call = loads(_file(ASK, CALL)).exchanges
    noted = Exchange(
        request=call.request,
        response=call.response,
        title=call.title,
        comments=("the first question",),
        truncated=True,
        call=CallTag("model", 1),
    )
    text = dumps(Transcript(exchanges=(ask, noted)))
    block = text.split("\n### model", 1)[1].split("\n")
    assert block[1:4] == ["# the first question", "# @call model exchange 1", "# @truncated"]


@pytest.mark.parametrize(
    ("tag", "message"),
    [
        ("# @call model exchange 3", "@call model exchange 3: no earlier exchange 3"),
        ("# @call model exchange 0", "@call model exchange 0: no earlier exchange 0"),
        ("# @call model exchange 1 frame 0", "frames count from 1"),
        ("# @call model", 'a @call tag reads "@call NAME exchange N"'),
        ("# @call 1model exchange 1", 'a @call tag reads "@call NAME exchange N"'),
        ("# @call model exchange 1 frames 2", 'a @call tag reads "@call NAME exchange N"'),
        ("# @call model exchange 1\n# @call model exchange 1", "a second @call tag"),
        ("# @call model exchange 1\n# @push config 1", "a call (@call) has no @push tag"),
        ("# @push config 1\n# @call model exchange 1", "a call (@call) has no @push tag"),
        (
            "# @call model exchange 1\n# @during exchange 1 frame 1",
            "a call (@call) has no @during tag",
        ),
        ("# @downstream model http://x", "a @downstream tag belongs to the file"),
    ],
)
def test_a_tag_that_does_not_read_so_is_a_parse_error_at_its_line(tag: str, message: str) -> None:
    text = _file(ASK, CALL.replace("# @call model exchange 1", tag))
    with pytest.raises(ParseError) as caught:
        loads(text, "f.http")
    assert message in caught.value.message
    last_tag_line = text[: text.index(tag)].count("\n") + tag.count("\n") + 1
    assert caught.value.line == last_tag_line


def test_a_call_names_an_exchange_of_the_clients_not_a_call() -> None:
    second = CALL.replace("# @call model exchange 1", "# @call model exchange 2")
    with pytest.raises(ParseError, match="exchange 2 is a call \\(@call\\), sent by the agent"):
        loads(_file(ASK, CALL, second), "f.http")
    during = ASK.replace("### SendStreamingMessage\n", "### cancel\n# @during exchange 2 frame 1\n")
    with pytest.raises(ParseError, match="exchange 2 is a call the agent made"):
        loads(_file(ASK, CALL, during), "f.http")


def test_a_malformed_downstream_tag_is_a_parse_error_at_its_line() -> None:
    text = "# recorder-format: 1\n# @downstream model\n\n" + ASK
    with pytest.raises(ParseError, match='a @downstream tag reads "@downstream NAME URL"') as got:
        loads(text, "f.http")
    assert got.value.line == 2


def test_the_model_refuses_the_tags_as_comments_and_bad_values() -> None:
    request, response = Request(method="GET", target="/"), Response(status=200)
    with pytest.raises(ValueError, match="is a tag"):
        Exchange(request=request, response=response, comments=("@call model exchange 1",))
    with pytest.raises(ValueError, match="not both"):
        Exchange(request=request, response=response, push_config=1, call=CallTag("m", 1))
    with pytest.raises(ValueError, match="a downstream's name"):
        CallTag("a b", 1)
    with pytest.raises(ValueError, match="1-based"):
        CallTag("m", 0)
    with pytest.raises(ValueError, match="frame"):
        CallTag("m", 1, frame=0)


def _check(tmp_path: Path, text: str) -> list[tuple[int | None, str]]:
    path = tmp_path / "calls.http"
    path.write_text(text)
    count, problems = check_paths([path])
    assert count == 1
    return [(p.line, p.message) for p in problems]


def test_check_passes_a_recorded_conversation_with_its_calls(tmp_path: Path) -> None:
    framed = CALL.replace("exchange 1", "exchange 1 frame 2")
    assert _check(tmp_path, _file(ASK, CALL, framed)) == []


def test_check_fails_a_frame_beyond_the_exchanges_frames_at_the_tag(tmp_path: Path) -> None:
    text = _file(ASK, CALL.replace("exchange 1", "exchange 1 frame 3"))
    line = text.split("\n").index("# @call model exchange 1 frame 3") + 1
    assert _check(tmp_path, text) == [
        (line, "@call model exchange 1 frame 3: exchange 1's reply has 2 frames")
    ]


def test_check_fails_a_frame_of_a_reply_that_is_no_stream(tmp_path: Path) -> None:
    plain = ASK.split("HTTP/1.1 200 OK")[0] + "HTTP/1.1 200 OK\n"
    text = _file(plain, CALL.replace("exchange 1", "exchange 1 frame 1"))
    [(_, message)] = _check(tmp_path, text)
    assert message == (
        "@call model exchange 1 frame 1: exchange 1's reply is not a stream of frames "
        "(drop the frame)"
    )


def test_check_fails_a_call_to_a_downstream_the_head_does_not_name(tmp_path: Path) -> None:
    text = _file(ASK, CALL.replace("@call model", "@call tools"))
    line = text.split("\n").index("# @call tools exchange 1") + 1
    assert _check(tmp_path, text) == [
        (
            line,
            "@call tools: no downstream tools in the file's head "
            '(a "# @downstream tools URL" tag says where its calls went)',
        )
    ]


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        (
            "# @downstream model https://api.example/v1\n# @downstream model http://b",
            "@downstream model: named twice (one URL per downstream)",
        ),
        (
            "# @downstream model https://user:sk-secret@api.example/v1",
            "@downstream model: the URL holds credentials (user:password@): remove them",
        ),
        ("# @downstream model ftp://api.example/v1", "ftp://api.example/v1 is no http://"),
    ],
)
def test_check_fails_a_downstream_tag_of_two_urls_or_credentials(
    tmp_path: Path, tags: str, message: str
) -> None:
    text = "# recorder-format: 1\n" + tags + "\n\n" + ASK + "\n" + CALL
    problems = _check(tmp_path, text)
    assert [line for line, _ in problems] == [len(tags.split("\n")) + 1]
    assert message in problems[0][1]
    assert "sk-secret" not in problems[0][1]


def test_exports_name_calls_under_their_exchange_and_send_none() -> None:
    transcript = loads(_file(ASK, CALL))
    http = export_http(transcript.exchanges)
    curl = export_curl(transcript.exchanges)
    note = "#   2. model: POST /v1/chat/completions (# @call model exchange 1)"
    for text in (http, curl):
        assert note in text.split("\n")
        assert "OPENAI_API_KEY" not in text
    assert "POST {{host}}/v1/chat/completions" not in http
    assert "/v1/chat/completions" not in curl.replace(note, "")
    rendered = render_exchange(transcript.exchanges[1])
    assert rendered.split("\n")[0] == "# @call model exchange 1"
