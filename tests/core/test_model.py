"""The model: canonical forms, header semantics, validation."""

from __future__ import annotations

import dataclasses
import json

import pytest
from factories import make_exchange, make_request, make_response
from jsonref import canonical_layout

from recorder import Headers, Request, Response, SseEvent


def test_headers_keep_case_and_order_but_compare_case_insensitively() -> None:
    headers = Headers([("Content-Type", "a"), ("X-B", " b "), ("x-b", "c")])
    assert list(headers) == [("Content-Type", "a"), ("X-B", "b"), ("x-b", "c")]
    assert headers == Headers([("content-type", "a"), ("x-b", "b"), ("X-B", "c")])
    assert headers != Headers([("X-B", "b"), ("Content-Type", "a"), ("x-b", "c")])
    assert headers.get("CONTENT-TYPE") == "a"
    assert headers.get_all("x-b") == ["b", "c"]
    assert "x-B" in headers
    assert headers.without("x-b") == Headers([("Content-Type", "a")])
    assert headers.replaced("X-b", "z") == Headers([("Content-Type", "a"), ("X-B", "z")])
    assert hash(headers) == hash(Headers([("content-type", "a"), ("x-b", "b"), ("X-B", "c")]))


@pytest.mark.parametrize(
    "pairs",
    [[("Bad Name", "x")], [("X", "a\nb")], [("X", "a\rb")], [("#X", "1")], [("", "x")]],
)
def test_headers_that_cannot_be_written_are_rejected(pairs: list[tuple[str, str]]) -> None:
    with pytest.raises(ValueError):
        Headers(pairs)


def test_replace_runs_the_same_canonicalization() -> None:
    request = dataclasses.replace(make_request(), body=b'{"b":2}')
    assert request.body == b'{\n  "b": 2\n}'


def test_an_event_stream_body_becomes_events() -> None:
    response = Response(
        200, headers=Headers([("Content-Type", "text/event-stream")]), body=b"data: 1\r\n\r\n"
    )
    assert response.events == (SseEvent(data="1"),)
    assert response.body == b"data: 1\n\n"
    assert response.is_stream


def test_events_need_an_event_stream_content_type() -> None:
    with pytest.raises(ValueError, match="text/event-stream"):
        make_response(events=(SseEvent(data="1"),))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"method": "GET POST"},
        {"method": "#GET"},
        {"target": "/a b"},
        {"target": ""},
        {"http_version": "HTTP/x"},
    ],
)
def test_invalid_request_lines_are_rejected(kwargs: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        make_request(**kwargs)


def test_invalid_status_and_reason_are_rejected() -> None:
    with pytest.raises(ValueError):
        make_response(status=42)
    with pytest.raises(ValueError):
        make_response(reason="a\nb")


def test_truncated_is_a_flag_not_a_comment() -> None:
    with pytest.raises(ValueError, match="@truncated"):
        make_exchange(comments=("@truncated",))


def test_json_access_and_text() -> None:
    request = Request("POST", "/x?y=1", Headers([("Content-Type", "text/plain")]), b"\xffa")
    assert request.json is None
    assert request.text == "\ufffda"
    assert request.path == "/x"
    assert make_response().json == {"jsonrpc": "2.0", "id": 1, "result": {"id": "t-1"}}


def test_a_json_body_is_parsed_once_and_the_value_kept() -> None:
    response = make_response(body=b'{"b": [1, {"c": null}]}')
    assert response.__dict__["json"] == {"b": [1, {"c": None}]}  # set by the constructor
    assert response.json is response.json
    duplicate = make_response(body=b'{"a": 1, "a": 2}')
    assert (duplicate.body, duplicate.json) == (b'{\n  "a": 1,\n  "a": 2\n}', {"a": 2})
    assert "json" not in make_response(body=b"not json").__dict__


@pytest.mark.parametrize(
    "body",
    [
        b'{"a":1,"b":[true,null],"c":{"d":"\xc3\xa9"}}',  # compact (Starlette)
        b'{"a": 1, "b": [true, null], "c": {"d": "\xc3\xa9"}}',  # json.dumps's default
        b'{ "a" : 1 ,\n"b":[ true,null ], "c":{"d":"\xc3\xa9"}}',  # any other layout
    ],
)
def test_a_json_body_in_any_layout_is_held_pretty_printed(body: bytes) -> None:
    pretty = '{\n  "a": 1,\n  "b": [\n    true,\n    null\n  ],\n  "c": {\n    "d": "é"\n  }\n}'
    assert make_response(body=body).body == pretty.encode()


def test_a_json_body_keeps_its_string_escapes_as_they_came() -> None:
    # the bytes on the wire said `\u00e9`: the transcript says so too (the same character)
    response = make_response(body=b'{"d": "caf\\u00e9 \\/ \\u0041"}')
    assert response.body == b'{\n  "d": "caf\\u00e9 \\/ \\u0041"\n}'
    assert response.json == {"d": "café / A"}


@pytest.mark.parametrize(
    "body",
    [
        b'{"a":1,"a":2}',
        b'{"a": 1, "a": 2}',
        b'{"x":{"a":1,"b":2,"a":1}}',
        b'{"x": [{"k": "v", "k": "v"}]}',
        b'{"a":1,\n "a":2}',
        b'{"text":"' + b"x" * 4096 + b'","text":"y"}',  # a long text: found by the parse hook
    ],
)
def test_a_json_body_with_a_repeated_key_keeps_every_member(body: bytes) -> None:
    # laid out from its own tokens: each member as it came, none merged (the value, as
    # Python's `json` reads it, has the last)
    response = make_response(body=body)
    assert response.body == canonical_layout(body)
    assert response.body.count(b'":') == body.count(b'":') + body.count(b'" :')
    assert response.json == json.loads(body)


def test_a_long_text_body_is_held_pretty_printed() -> None:
    text = "review line\n" * 400
    for body in (json.dumps({"text": text}), json.dumps({"text": text}, separators=(",", ":"))):
        assert (
            make_response(body=body.encode()).body == json.dumps({"text": text}, indent=2).encode()
        )


@pytest.mark.parametrize(
    ("body", "strict"),
    [
        (b'{"a": [1, 2.5, "x", null, true], "b": {}}', True),
        (b'{"big": 123456789012345678901234567890}', True),  # plain, though past 64 bits
        (b'{"a": NaN}', False),  # Python's json reads it; JSON has no NaN
        (b'{"a": [-Infinity]}', False),
        (b'{"a": 1e400}', False),  # past the floats: a JsonNumber, its text kept
        (b'{"a": 12345678901234567.89}', False),  # no float holds it: a JsonNumber
        (b"not json", False),
    ],
)
def test_json_is_strict_says_whether_the_value_is_what_json_can_hold(
    body: bytes, strict: bool
) -> None:
    response = make_response(body=body)
    assert response.json_is_strict is strict
    if body.startswith(b"{"):  # the canonical text keeps each number as it came
        assert response.body == canonical_layout(body)


def test_with_values_keeps_the_canonical_body_it_is_given_and_parses_it_anew() -> None:
    # carry-forward replaces values inside the strings of a canonical body: the model takes
    # the text as it is (no second parse and print) and forgets the old body's parse
    request = Request(
        "POST",
        "/a2a/jsonrpc?task=t-1",
        {"Content-Type": "application/json"},
        b'{"params": {"id": "t-1"}}',
    )
    assert request.json == {"params": {"id": "t-1"}}  # parsed, and kept
    live_text = request.body.replace(b'"t-1"', b'"t-live"')
    live = request.with_values(
        target="/a2a/jsonrpc?task=t-live", headers={"Host": "live"}, body_text=live_text
    )
    assert live.body is live_text
    assert live.json == {"params": {"id": "t-live"}}
    assert (live.method, live.target, live.http_version) == (
        "POST",
        "/a2a/jsonrpc?task=t-live",
        "HTTP/1.1",
    )
    assert live.headers == Headers([("Host", "live")])
    assert live == dataclasses.replace(
        request, target=live.target, headers=live.headers, body=live_text
    )
    # the recorded request is as it was
    assert request.json == {"params": {"id": "t-1"}}
    assert request.target == "/a2a/jsonrpc?task=t-1"
    assert request.with_values() == request
    with pytest.raises(ValueError, match="invalid request target"):
        request.with_values(target="/a b")
