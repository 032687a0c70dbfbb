"""One table of cases drives both the writer and the reader.

Each case is a transcript value and its canonical text: `dumps(value) == text` and
`loads(text) == value`, so the two directions can never drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from factories import JSON, make_exchange, make_request, make_response

from recorder import Exchange, Headers, Request, Response, SseEvent, Transcript, dumps, loads


@dataclass(frozen=True)
class Case:
    name: str
    transcript: Transcript
    text: str


def one(exchange: Exchange, comments: tuple[str, ...] = ()) -> Transcript:
    return Transcript(exchanges=(exchange,), comments=comments)


EVENT_STREAM = Headers([("Content-Type", "text/event-stream")])

# how the factories' default request is written (most cases share it)
DEFAULT_REQUEST_TEXT = """\
POST /a2a/jsonrpc HTTP/1.1
Content-Type: application/json
A2A-Version: 1.0

{
  "jsonrpc": "2.0",
  "id": 1,
  "method": "GetTask",
  "params": {
    "id": "t-1"
  }
}

"""

CASES = [
    Case(
        "json request and reply, pretty-printed with key order kept",
        one(
            make_exchange(
                request=make_request(body=b'{"z": 1, "a": {"b": [1, 2]}}'),
                response=make_response(body=b'{"result": {}, "id": 1, "jsonrpc": "2.0"}'),
            )
        ),
        """\
# recorder-format: 1

### GetTask
POST /a2a/jsonrpc HTTP/1.1
Content-Type: application/json
A2A-Version: 1.0

{
  "z": 1,
  "a": {
    "b": [
      1,
      2
    ]
  }
}

HTTP/1.1 200 OK
Content-Type: application/json

{
  "result": {},
  "id": 1,
  "jsonrpc": "2.0"
}
""",
    ),
    Case(
        "file comments, exchange comments, empty title, empty bodies",
        Transcript(
            exchanges=(
                Exchange(
                    request=Request("GET", "/.well-known/agent-card.json"),
                    response=Response(304, "Not Modified", Headers([("ETag", 'W/"abc"')])),
                    comments=("the card did not change", ""),
                ),
            ),
            comments=("recorded by the planner", "second line"),
        ),
        """\
# recorder-format: 1
# recorded by the planner
# second line

###
# the card did not change
#
GET /.well-known/agent-card.json HTTP/1.1

HTTP/1.1 304 Not Modified
ETag: W/"abc"
""",
    ),
    Case(
        "several exchanges separated by one blank line; empty reply body mid-file",
        Transcript(
            exchanges=(
                make_exchange(title="first", response=Response(204, "No Content")),
                make_exchange(
                    title="second",
                    request=Request("DELETE", "/a2a/rest/tasks/t-1/pushNotificationConfigs/c-1"),
                    response=make_response(body=b"{}"),
                ),
            )
        ),
        """\
# recorder-format: 1

### first
"""
        + DEFAULT_REQUEST_TEXT
        + """HTTP/1.1 204 No Content

### second
DELETE /a2a/rest/tasks/t-1/pushNotificationConfigs/c-1 HTTP/1.1

HTTP/1.1 200 OK
Content-Type: application/json

{}
""",
    ),
    Case(
        "SSE frames kept as frames: data on one line, comments, event, id, retry",
        one(
            make_exchange(
                title="SendStreamingMessage",
                response=Response(
                    200,
                    "OK",
                    EVENT_STREAM,
                    events=(
                        SseEvent(data='{"jsonrpc": "2.0", "id": 1, "result": {"task": {}}}'),
                        SseEvent(comments=("ping - 2026-11-29 18:29:00",)),
                        SseEvent(data="line one\nline two", event="error", id="7", retry=1500),
                    ),
                ),
            )
        ),
        """\
# recorder-format: 1

### SendStreamingMessage
"""
        + DEFAULT_REQUEST_TEXT
        + """HTTP/1.1 200 OK
Content-Type: text/event-stream

data: {"jsonrpc": "2.0", "id": 1, "result": {"task": {}}}

: ping - 2026-11-29 18:29:00

event: error
id: 7
retry: 1500
data: line one
data: line two
""",
    ),
    Case(
        "a stream with no frames, then another exchange",
        Transcript(
            exchanges=(
                make_exchange(title="empty stream", response=Response(200, "OK", EVENT_STREAM)),
                make_exchange(title="after", response=Response(204)),
            )
        ),
        """\
# recorder-format: 1

### empty stream
"""
        + DEFAULT_REQUEST_TEXT
        + """HTTP/1.1 200 OK
Content-Type: text/event-stream

### after
"""
        + DEFAULT_REQUEST_TEXT
        + """HTTP/1.1 204
""",
    ),
    Case(
        "malformed JSON under a JSON content type stays verbatim",
        one(
            make_exchange(
                title="malformed",
                request=make_request(body=b'{"jsonrpc":"2.0","id":7,"method":'),
                response=make_response(
                    body=b'{"error":{"code":-32700,"message":"Expecting value"},'
                    b'"id":null,"jsonrpc":"2.0"}'
                ),
            )
        ),
        """\
# recorder-format: 1

### malformed
POST /a2a/jsonrpc HTTP/1.1
Content-Type: application/json
A2A-Version: 1.0

{"jsonrpc":"2.0","id":7,"method":

HTTP/1.1 200 OK
Content-Type: application/json

{
  "error": {
    "code": -32700,
    "message": "Expecting value"
  },
  "id": null,
  "jsonrpc": "2.0"
}
""",
    ),
    Case(
        "a body line that looks like a status line is escaped, not verbatim",
        one(
            make_exchange(
                request=make_request(
                    headers=Headers([("Content-Type", "text/plain")]),
                    body=b"first\nHTTP/1.1 200 OK\n### not a title",
                ),
                response=make_response(
                    headers=Headers([("Content-Type", "text/plain")]), body=b"ok"
                ),
            )
        ),
        """\
# recorder-format: 1

### GetTask
POST /a2a/jsonrpc HTTP/1.1
Content-Type: text/plain

# recorder-body: escaped
"first\\nHTTP/1.1 200 OK\\n### not a title"

HTTP/1.1 200 OK
Content-Type: text/plain

ok
""",
    ),
    Case(
        "text bodies keep their trailing newlines and leading blank lines",
        Transcript(
            exchanges=(
                make_exchange(
                    title="a",
                    request=make_request(
                        headers=Headers([("Content-Type", "text/plain")]), body=b"\nhello\n"
                    ),
                    response=make_response(
                        headers=Headers([("Content-Type", "text/plain")]), body=b"bye\n\n"
                    ),
                ),
                make_exchange(
                    title="b",
                    response=make_response(
                        headers=Headers([("Content-Type", "text/plain")]), body=b"end\n"
                    ),
                ),
            )
        ),
        """\
# recorder-format: 1

### a
POST /a2a/jsonrpc HTTP/1.1
Content-Type: text/plain


hello


HTTP/1.1 200 OK
Content-Type: text/plain

bye



### b
"""
        + DEFAULT_REQUEST_TEXT
        + """HTTP/1.1 200 OK
Content-Type: text/plain

end

""",
    ),
    Case(
        "bytes that are not UTF-8 are base64 behind a marker; the exchange is truncated",
        one(
            make_exchange(
                title="binary",
                truncated=True,
                response=Response(
                    200,
                    "OK",
                    Headers([("Content-Type", "application/octet-stream")]),
                    bytes([0xFF, 0xFE, 0x00, 0x41]) * 20,
                ),
            )
        ),
        """\
# recorder-format: 1

### binary
# @truncated
"""
        + DEFAULT_REQUEST_TEXT
        + """HTTP/1.1 200 OK
Content-Type: application/octet-stream

# recorder-body: base64
//4AQf/+AEH//gBB//4AQf/+AEH//gBB//4AQf/+AEH//gBB//4AQf/+AEH//gBB//4AQf/+AEH/
/gBB//4AQf/+AEH//gBB//4AQf/+AEE=
""",
    ),
    Case(
        "an event stream that is not lossless SSE is kept raw (escaped)",
        one(
            make_exchange(
                title="raw stream",
                response=Response(200, "OK", EVENT_STREAM, b"data: one\r\nfoo: bar\r\n\r\n"),
            )
        ),
        """\
# recorder-format: 1

### raw stream
"""
        + DEFAULT_REQUEST_TEXT
        + """HTTP/1.1 200 OK
Content-Type: text/event-stream

# recorder-body: escaped
"data: one\\r\\nfoo: bar\\r\\n\\r\\n"
""",
    ),
    Case(
        "unicode everywhere, headers keep their case, empty header value, HTTP/2 versions",
        one(
            Exchange(
                request=Request(
                    "PUT",
                    "/caf%C3%A9?q=%E2%9C%93&x=1",
                    Headers([("x-lower", "é"), ("X-Empty", ""), ("Content-Type", "text/plain")]),
                    "Grüße, 世界 — ✓".encode(),
                    http_version="HTTP/2",
                ),
                response=Response(
                    200,
                    "Très bien",
                    Headers([("content-type", "application/a2a+json")]),
                    '{"text": "naïve ✓ \\u2028 line"}'.encode(),
                    http_version="HTTP/2",
                ),
                title="Unicode: ünïcödé ✓",
            )
        ),
        """\
# recorder-format: 1

### Unicode: ünïcödé ✓
PUT /caf%C3%A9?q=%E2%9C%93&x=1 HTTP/2
x-lower: é
X-Empty:
Content-Type: text/plain

Grüße, 世界 — ✓

HTTP/2 200 Très bien
content-type: application/a2a+json

{
  "text": "naïve ✓ \\u2028 line"
}
""",
    ),
    Case(
        "a very long line survives whole",
        one(
            make_exchange(
                response=make_response(body=('{"x": "' + "a" * 200_000 + '"}').encode()),
            )
        ),
        """\
# recorder-format: 1

### GetTask
"""
        + DEFAULT_REQUEST_TEXT
        + """HTTP/1.1 200 OK
Content-Type: application/json

{
  "x": \""""
        + "a" * 200_000
        + """"
}
""",
    ),
    Case(
        "a lone surrogate escape (JSON, but no character) is laid out, its escape kept",
        one(make_exchange(response=make_response(body=b'{"note": "a\\ud800b", "n": 1}'))),
        """\
# recorder-format: 1

### GetTask
"""
        + DEFAULT_REQUEST_TEXT
        + """HTTP/1.1 200 OK
Content-Type: application/json

{
  "note": "a\\ud800b",
  "n": 1
}
""",
    ),
    Case(
        "a gRPC call: no HTTP version, ProtoJSON, a stream's messages as frames, trailers",
        one(
            Exchange(
                request=Request(
                    method="GRPC",
                    target="/lf.a2a.v1.A2AService/SubscribeToTask",
                    headers=Headers([("a2a-version", "1.0")]),
                    body=b'{"id": "t-1"}',
                    http_version="",
                ),
                response=Response(
                    status=0,
                    reason="OK",
                    headers=Headers([("content-type", "application/grpc")]),
                    events=(SseEvent(data='{"task": {"id": "t-1"}}'),),
                    http_version="GRPC",
                    trailers=Headers([("x-served-by", "kit")]),
                ),
                title="SubscribeToTask",
            )
        ),
        """\
# recorder-format: 1

### SubscribeToTask
GRPC /lf.a2a.v1.A2AService/SubscribeToTask
a2a-version: 1.0

{
  "id": "t-1"
}

GRPC 0 OK
content-type: application/grpc

data: {"task": {"id": "t-1"}}

# @trailers
x-served-by: kit
""",
    ),
    Case(
        "a failed gRPC call: its google.rpc.Status as the body",
        one(
            Exchange(
                request=Request(
                    method="GRPC",
                    target="/lf.a2a.v1.A2AService/GetTask",
                    body=b'{"id": "t-9"}',
                    http_version="",
                ),
                response=Response(
                    status=5,
                    reason="NOT_FOUND",
                    body=b'{"code": 5, "message": "Task not found"}',
                    http_version="GRPC",
                ),
                title="GetTask",
            )
        ),
        """\
# recorder-format: 1

### GetTask
GRPC /lf.a2a.v1.A2AService/GetTask

{
  "id": "t-9"
}

GRPC 5 NOT_FOUND

{
  "code": 5,
  "message": "Task not found"
}
""",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_writer_produces_the_canonical_text(case: Case) -> None:
    assert dumps(case.transcript) == case.text


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_reader_parses_the_canonical_text(case: Case) -> None:
    assert loads(case.text) == case.transcript


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_crlf_and_missing_final_newline_read_the_same(case: Case) -> None:
    crlf = case.text.replace("\n", "\r\n")
    assert loads(crlf) == case.transcript
    if not case.text.endswith("\n\n"):
        # without its last line break the last body line is still whole
        assert loads(case.text[:-1]) == case.transcript


def test_json_request_body_is_pretty_in_the_model() -> None:
    request = make_request(body=b'{"a":1}')
    assert request.body == b'{\n  "a": 1\n}'
    assert request.json == {"a": 1}


def test_exchange_line_numbers_point_at_the_title() -> None:
    transcript = loads(CASES[2].text)
    assert [e.line for e in transcript] == [3, 19]


def test_json_with_duplicate_keys_keeps_both_members() -> None:
    body = b'{"a": 1, "a": 2}'
    assert make_response(body=body).body == b'{\n  "a": 1,\n  "a": 2\n}'


def test_an_unknown_status_reason_and_json_type_parameters() -> None:
    response = Response(
        200, headers=Headers([("Content-Type", "application/json; charset=utf-8")]), body=b"[1]"
    )
    assert response.body == b"[\n  1\n]"
    assert response.reason == ""
    assert JSON.get("content-type") == "application/json"
