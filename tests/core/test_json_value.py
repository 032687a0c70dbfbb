"""One reading of a JSON text for the whole recorder (`recorder.format.jsonbody.json_value`),
and one mark for a text that is none (`NOT_JSON`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from recorder import Request, Response
from recorder.format.jsonbody import NOT_JSON, json_value
from recorder.replay.verdict.live import body_value
from recorder.serve.match import LiveRequest


@pytest.mark.parametrize(
    "body",
    [
        b'{"a": [1, 2.5, "x"], "b": null}',
        b'{"a":1,"a":2}',
        b"[NaN, Infinity]",
        b"[123456789012345678901234567890]",
        b'"\\ud800"',
        b"\xef\xbb\xbf{}",
        '{"a": "b"}'.encode("utf-16"),
    ],
)
def test_json_value_for_strings_reads_what_json_reads(body: bytes) -> None:
    def numbers_as_floats(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: numbers_as_floats(v) for k, v in value.items()}
        if isinstance(value, list):
            return [numbers_as_floats(v) for v in value]
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        return value

    # the same strings, objects and arrays (an integer past 64 bits may come as a float)
    expected = numbers_as_floats(json.loads(body))
    fast = json_value(body, exact_numbers=False)
    assert repr(numbers_as_floats(fast)) == repr(expected)  # (NaN != NaN)
    assert repr(json_value(body)) == repr(json.loads(body))  # exact: as json reads it


@pytest.mark.parametrize("body", [b"", b"{", b"not json", b"\xff\xfe\x00"])
def test_json_value_is_not_json_for_what_json_refuses(body: bytes) -> None:
    assert json_value(body) is NOT_JSON
    assert json_value(body, exact_numbers=False) is NOT_JSON


def test_every_room_marks_a_body_that_is_no_json_alike() -> None:
    # the comparison, the stand-in's matching and the model say "not JSON" with one object
    text = {"Content-Type": "application/json"}
    assert body_value(Response(200, "OK", text, b"{not json")) is NOT_JSON
    assert LiveRequest("POST", "/", [], b"{not json").json is NOT_JSON
    assert "json" not in Request("POST", "/", text, b"{not json").__dict__  # (not parsed)
    assert repr(NOT_JSON) == "NOT_JSON"


def test_an_integer_past_64_bits_is_exact_unless_only_strings_are_read() -> None:
    big = b"[123456789012345678901234567890]"
    assert json_value(big) == [123456789012345678901234567890]
    assert json_value(big, exact_numbers=False) == [1.2345678901234568e29]  # (orjson)


@pytest.mark.parametrize("text", ['"\\ud800"', '{"a":["\\udfff",1.50]}', '{"\\ud83d":-0}'])
def test_compact_json_writes_a_lone_surrogate_as_its_escape(text: str) -> None:
    # valid JSON text (serve answers it from a recording): orjson refuses it, UTF-8 cannot
    # carry it raw (serve answered 500, UnicodeEncodeError)
    from recorder.format.jsonvalue import compact_json, loads

    written = compact_json(loads(text))
    assert written == text.encode()
    assert loads(written) == loads(text)
