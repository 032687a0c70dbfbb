"""A JSON body is recorded as it was sent: laid out anew, every scalar as written (numbers'
digits, sign and exponent; strings' escapes), a member named twice kept twice. Its value keeps
what the text said (`JsonNumber`). Hypothesis writes JSON *texts* (not values: a value has
lost the lexemes already), and the round trip model -> file -> parse keeps every byte of
meaning and every lexeme."""

from __future__ import annotations

import copy
import json
import math
import pickle
from decimal import Decimal
from typing import Any

import pytest
from factories import make_exchange, make_response
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonref import canonical_layout, tokens

from recorder.format import jsonbody
from recorder.format.httpfile import dumps, loads
from recorder.format.jsonbody import (
    JsonNumber,
    canonical_json_body,
    compact_json,
    pretty_json,
    relayout,
)
from recorder.format.model import Transcript

PI_31 = "3.141592653589793238462643383279"
THE_ISSUE_CASES = {
    "12345678901234567.89": "1.2345678901234568e+16",
    PI_31: "3.141592653589793",
    "-0": "0",
    "1E5": "100000.0",
    "1e400": "Infinity",
}


# ------------------------------------------------------------------ JSON texts

_DIGITS = st.text("0123456789", min_size=1, max_size=40)


@st.composite
def numbers(draw: st.DrawFn) -> str:
    """A JSON number's text: any sign, integer part, fraction and exponent JSON allows."""
    sign = draw(st.sampled_from(["", "-"]))
    whole = draw(st.sampled_from(["0", "1"]) | _DIGITS.map(lambda d: "1" + d))
    fraction = draw(st.sampled_from(["", ".0", ".50", ".89"]) | _DIGITS.map(lambda d: "." + d))
    exponent = draw(
        st.sampled_from(["", "e5", "E5", "e+07", "E-7", "e400", "e-400", "e0"])
        | st.integers(-999, 999).map(lambda n: f"e{n}")
    )
    return sign + whole + fraction + exponent


_SPECIAL_NUMBERS = st.sampled_from(
    [*THE_ISSUE_CASES, "1e-7", "0.1", "0.10", "-0.0", "18446744073709551616", "1" * 60]
)
_ESCAPES = st.sampled_from(
    [
        "\\n",
        "\\t",
        '\\"',
        "\\\\",
        "\\/",
        "\\b",
        "\\f",
        "\\r",
        "\\u00e9",
        "\\u00E9",
        "\\u0041",
        "\\u0000",
        "\\u001b",
        "\\u007f",
        "\\u2028",
        "\\ud800",  # a lone high surrogate
        "\\udfff",  # a lone low surrogate
        "\\ud83d\\ude00",  # a pair
        "\\ud83d",
        "\\u007b{",
    ]
)
_RAW = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters='"\\').filter(lambda c: c >= " "),
    max_size=6,
) | st.sampled_from(["\x7f", "\x85", "\u2028", "\u2029", "é", "✓", "{{x}}", "-0", "1e5"])


@st.composite
def strings(draw: st.DrawFn) -> str:
    """A JSON string's text: raw characters (invisible ones too) and escapes of every kind."""
    parts = draw(st.lists(_RAW | _ESCAPES, max_size=5))
    return '"' + "".join(parts) + '"'


_SPACE = st.sampled_from(["", " ", "\n", "\t", "\r\n", "  "])


def json_texts() -> st.SearchStrategy[str]:
    scalars = numbers() | _SPECIAL_NUMBERS | strings() | st.sampled_from(["true", "false", "null"])

    def containers(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        def array(items: list[str], space: str) -> str:
            return "[" + space + ("," + space).join(items) + space + "]"

        @st.composite
        def obj(draw: st.DrawFn) -> str:
            names = draw(st.lists(strings() | st.sampled_from(['"a"', '"id"']), max_size=4))
            if names and draw(st.booleans()):
                names.append(names[0])  # a member named twice
            space = draw(_SPACE)
            members = [f"{n}{space}:{draw(_SPACE)}{draw(inner)}" for n in names]
            return "{" + space + ("," + space).join(members) + space + "}"

        return st.builds(array, st.lists(inner, max_size=4), _SPACE) | obj()

    return st.recursive(scalars, containers, max_leaves=20)


def scalar_tokens(text: str) -> list[str]:
    return [t for t in tokens(text) if t not in ("{", "}", "[", "]", ",", ":")]


def _invisible_escaped(token: str) -> str:
    return canonical_layout(token.encode()).decode() if token.startswith('"') else token


# ------------------------------------------------------------------ the canonical text


@settings(max_examples=400, deadline=None)
@given(json_texts(), _SPACE)
def test_a_json_text_is_laid_out_with_every_scalar_as_written(text: str, space: str) -> None:
    body = (space + text + space).encode()
    canonical = canonical_json_body(body)
    assert canonical == canonical_layout(body)
    laid = canonical.decode()
    assert scalar_tokens(laid) == [_invisible_escaped(t) for t in scalar_tokens(text)]
    # the same meaning: Python's json reads the same value
    assert repr(json.loads(laid)) == repr(json.loads(text))
    assert canonical_json_body(canonical) == canonical  # canonical: laid out once for all


@settings(max_examples=200, deadline=None)
@given(json_texts())
def test_the_round_trip_model_file_parse_keeps_every_lexeme(text: str) -> None:
    body = text.encode()
    response = make_response(body=body)
    transcript = Transcript(exchanges=(make_exchange(response=response),))
    read = loads(dumps(transcript))
    assert read == transcript
    again = read.exchanges[0].response
    assert again.body == response.body == canonical_layout(body)
    assert scalar_tokens(again.body.decode()) == [
        _invisible_escaped(t) for t in scalar_tokens(text)
    ]
    assert repr(again.json) == repr(jsonbody.loads(body))


def test_the_numbers_of_the_issue_are_recorded_as_sent() -> None:
    for text, lossy in THE_ISSUE_CASES.items():
        body = f'{{"n": {text}, "list": [{text}]}}'.encode()
        response = make_response(body=body)
        assert response.body == f'{{\n  "n": {text},\n  "list": [\n    {text}\n  ]\n}}'.encode()
        assert lossy not in scalar_tokens(response.body.decode())
        value = response.json["n"]
        assert repr(value) == text and str(value) == text
        assert pretty_json(response.json) == response.body.decode()
        assert compact_json(response.json) == f'{{"n":{text},"list":[{text}]}}'.encode()
        assert jsonbody.dumps(response.json) == f'{{"n": {text}, "list": [{text}]}}'


def test_a_number_a_float_writes_back_stays_a_float_and_ints_stay_ints() -> None:
    value = jsonbody.loads(b'{"a": 0.5, "b": 1.0, "c": 12, "d": 123456789012345678901234567890}')
    assert [type(v) for v in value.values()] == [float, float, int, int]
    assert jsonbody.loads('{"a": 1e-7}')["a"] == 1e-07  # orjson and json read the same
    assert type(jsonbody.loads('{"a": 1e-7}')["a"]) is JsonNumber  # (its text is not 1e-07)


def test_relayout_compact_and_pretty() -> None:
    text = '{ "a" : [ 1E5 , "x\\u0041" ] , "b":{} , "c" : [ ] }'
    assert relayout(text, compact=True) == '{"a":[1E5,"x\\u0041"],"b":{},"c":[]}'
    assert relayout(text) == '{\n  "a": [\n    1E5,\n    "x\\u0041"\n  ],\n  "b": {},\n  "c": []\n}'


# ------------------------------------------------------------------ the values


def test_json_numbers_compare_by_the_exact_number_their_text_says() -> None:
    a, b = JsonNumber("12345678901234567.89"), JsonNumber("12345678901234567.88")
    assert float(a) == float(b)  # one float holds both: a float compare cannot tell them apart
    assert a != b
    assert not a == b  # noqa: SIM201 (__eq__ itself)
    assert a == JsonNumber("1234567890123456789e-2") and hash(a) == hash(
        JsonNumber("1234567890123456789e-2")
    )
    assert a != 1.2345678901234568e16
    pi = JsonNumber(PI_31)
    assert pi != math.pi and pi == Decimal(PI_31)
    big = JsonNumber("1e400")
    assert math.isinf(big) and big != float("inf") and big == JsonNumber("10E399")
    # what a float holds exactly is that float: equal, and hashed alike
    for text, number in (("1E5", 100000.0), ("-0", 0), ("1.50", 1.5), ("1e-7", 1e-07)):
        value = JsonNumber(text)
        assert value == number and hash(value) == hash(number) and value.exact_float
    assert JsonNumber("-0") == 0 and str(JsonNumber("-0")) == "-0"
    huge = JsonNumber("9" * 5000)  # past Python's int() digits
    assert huge == Decimal("9" * 5000) and huge != JsonNumber("9" * 4999)


def test_json_numbers_copy_and_pickle_with_their_text() -> None:
    value = {"n": JsonNumber("12345678901234567.89"), "z": JsonNumber("-0")}
    for copied in (copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
        assert copied == value
        assert [n.text for n in copied.values()] == ["12345678901234567.89", "-0"]


def test_a_huge_integer_is_json_and_keeps_its_digits() -> None:
    digits = "7" * 5000  # Python's int() refuses past 4,300 digits
    response = make_response(body=f"[{digits}]".encode())
    assert response.body == f"[\n  {digits}\n]".encode()
    assert response.json[0].text == digits


@pytest.mark.parametrize(
    "body",
    [b'{"a": NaN}', b"[Infinity, -Infinity]", b'{"a": 1, "a": 2}', b"[" * 700 + b"]" * 700],
)
def test_what_python_reads_beyond_orjson_is_laid_out_too(body: bytes) -> None:
    assert canonical_json_body(body) == canonical_layout(body)


def test_values_beyond_plain_json_hold_their_numbers_text() -> None:
    value: Any = ({"n": JsonNumber("1E5")}, [JsonNumber("-0")])
    assert jsonbody.dumps(value) == '[{"n": 1E5}, [-0]]'
    assert pretty_json(value) == '[\n  {\n    "n": 1E5\n  },\n  [\n    -0\n  ]\n]'


def test_a_body_written_anew_without_its_secrets_keeps_its_numbers_as_sent() -> None:
    from recorder.secrets.redact import Redactor

    body = b'{"token": "t-123456", "n": [1E5, 12345678901234567.89, -0, 0.5]}'
    redacted = Redactor().redact_body(body, "application/json")
    assert b"t-123456" not in redacted
    assert scalar_tokens(canonical_json_body(redacted).decode())[-4:] == [
        "1E5",
        "12345678901234567.89",
        "-0",
        "0.5",
    ]
