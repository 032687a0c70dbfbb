"""`pretty_json` (the canonical JSON body text) stays byte-identical to its definition:
`json.dumps(value, indent=2, ensure_ascii=False)` with DEL, U+0080-U+009F, U+2028 and U+2029
written as `\\uXXXX`. Its fast paths (own writer for plain values, no escaping scan of ASCII
text) are pinned here against that definition."""

from __future__ import annotations

import enum
import json
import re
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recorder.format.model import canonical_json_body, pretty_json

_REFERENCE_INVISIBLE = re.compile("[\x7f-\x9f\u2028\u2029]")


def reference_pretty_json(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return _REFERENCE_INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# text biased towards the characters that matter: escapes, DEL, C1 controls, line separators,
# JSON punctuation, non-ASCII
_TRICKY = '\x00\x1f\x7f\x80\x85\x9f\xa0\u2028\u2029\ud7ff\U0001f600"\\/{}[],: \n\t'
text = st.one_of(
    st.text(),
    st.text(alphabet=st.sampled_from(_TRICKY + "ab"), max_size=20),
    st.text(alphabet=st.characters(max_codepoint=0x7F)),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**63, max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    text,
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(text, children, max_size=5),
    ),
    max_leaves=30,
)


@given(json_values)
def test_pretty_json_is_the_indented_dump_with_invisible_characters_escaped(value: Any) -> None:
    assert pretty_json(value) == reference_pretty_json(value)


@given(json_values)
def test_canonical_body_of_any_json_text_is_the_reference_pretty_form(value: Any) -> None:
    body = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    assert canonical_json_body(body) == reference_pretty_json(json.loads(body)).encode()


def test_each_invisible_character_is_escaped_in_ascii_and_non_ascii_text() -> None:
    for char in ["\x7f", "\x80", "\x9f", "\u2028", "\u2029"]:
        for context in ("a", "é", "\U0001f600"):
            value = {"k": f"{context}{char}{context}"}
            escaped = f"\\u{ord(char):04x}"
            assert f'"{context}{escaped}{context}"' in pretty_json(value)
    assert pretty_json("\xa0") == '"\xa0"'  # U+00A0 is visible enough: kept raw


class Level(enum.IntEnum):
    HIGH = 3


class Ratio(float):
    def __repr__(self) -> str:
        return "Ratio()"


unusual = st.one_of(
    st.just(Level.HIGH),
    st.just(Ratio(0.5)),
    st.just(OrderedDict([("b", 1), ("a", [])])),
    st.tuples(st.integers(), text),
    st.dictionaries(st.one_of(st.integers(), st.floats(), st.booleans(), st.none()), scalars),
)
values_with_unusual_types = st.recursive(
    st.one_of(scalars, unusual),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(text, children, max_size=4)
    ),
    max_leaves=15,
)


@given(values_with_unusual_types)
def test_values_beyond_what_json_loads_makes_are_written_as_json_dumps_writes_them(
    value: Any,
) -> None:
    assert pretty_json(value) == reference_pretty_json(value)


def test_cycles_and_unencodable_values_raise_as_json_dumps_does() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference"):
        pretty_json(cycle)
    with pytest.raises(TypeError, match="not JSON serializable"):
        pretty_json({"a": {1, 2}})


def test_what_orjson_refuses_is_written_by_the_other_writers() -> None:
    # past 64 bits, 300 levels deep (orjson stops at 254), a lone surrogate
    deep: list[Any] = []
    inner = deep
    for _ in range(300):
        inner.append([])
        inner = inner[0]
    for value in ({"n": 2**64 + 1}, deep, {"s": "\ud800"}):
        assert pretty_json(value) == reference_pretty_json(value)
    for value in ({"n": 2**64 + 1}, deep):
        body = json.dumps(value).encode()
        assert canonical_json_body(body) == reference_pretty_json(json.loads(body)).encode()


def test_a_body_with_a_lone_surrogate_escape_keeps_the_escape() -> None:
    # "\ud800" is valid JSON text but names no character: UTF-8 cannot hold it unescaped,
    # and the canonical text keeps each string's escapes as they came
    body = b'{"s": "a\\ud800b"}'
    assert canonical_json_body(body) == b'{\n  "s": "a\\ud800b"\n}'
