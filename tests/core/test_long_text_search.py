"""The memory searches of long bodies (`jsonvalue.find_bytes`, `_negative_zero`,
`jsonbody._key_ends`) say what the plain searches say: by `memchr` of a first byte while it
is rare, then by the general search from where they stopped, on texts past the size where
they switch and on both sides of the count where they fall back."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder.bindings.jsonrpc import error_code
from recorder.format import jsonbody, jsonvalue
from recorder.format.jsonvalue import find_bytes

LONG = jsonvalue._LONG_TEXT
MANY = jsonvalue._LOOKED_AT
# English text: its bytes share bloom bits with `-0` and `"error"` (`find_bytes`)
FILLER = b"lorem ipsum dolor sit amet consectetur adipiscing elit " * (LONG // 40)


def _negative_zero_reference(body: bytes) -> bool:
    return re.search(rb"-0(?=[ \t\r\n,\]}]|\Z)", body) is not None


def _key_ends_reference(body: bytes) -> int:
    return len(re.findall(rb'"[ \t\r\n]*:', body))


# pieces a long JSON-ish text is made of: the needles, near misses, and what ends a number
_PIECES = st.sampled_from(
    [
        *(b"-0", b"-0,", b"-0]", b"-01", b"a-0b", b"{{", b"{ {", b'"error"', b'"err'),
        *(b'"', b'":', b'" :', b'"\n:', b"-", b"0", b" ", b"}", b"x" * 50),
    ]
)


def _long_texts() -> st.SearchStrategy[bytes]:
    """Texts past `LONG`, the pieces at random places, some of them past `MANY` times."""
    pieces = st.lists(st.tuples(st.integers(0, 2 * LONG), _PIECES), max_size=3 * MANY)
    return st.builds(_lay, pieces, st.booleans())


def _lay(pieces: list[tuple[int, bytes]], end_with_piece: bool) -> bytes:
    text = bytearray(FILLER[: 2 * LONG])
    for at, piece in sorted(pieces, reverse=True):
        text[at:at] = piece
    if end_with_piece and pieces:
        text += pieces[0][1]
    return bytes(text)


@settings(max_examples=200, deadline=None)
@given(_long_texts(), st.sampled_from([b"-0", b"{{", b'"error"', b'":', b"x" * 50]))
def test_find_bytes_finds_what_find_finds(text: bytes, needle: bytes) -> None:
    assert find_bytes(text, needle) == text.find(needle)
    start = len(text) // 3
    assert find_bytes(text, needle, start) == text.find(needle, start)


@settings(max_examples=200, deadline=None)
@given(_long_texts())
def test_negative_zero_and_key_ends_say_what_the_expressions_say(text: bytes) -> None:
    assert jsonvalue._negative_zero(text) is _negative_zero_reference(text)
    assert jsonbody._key_ends(text) == _key_ends_reference(text)


@pytest.mark.parametrize("count", [0, 1, MANY - 1, MANY, MANY + 1, 3 * MANY])
def test_past_the_first_bytes_looked_at_the_search_goes_on_from_there(count: int) -> None:
    # `count` near misses before the one match, at the end: each path finds it
    near = (b"a-01 " * count) + FILLER + b"[-0]"
    assert jsonvalue._negative_zero(near)
    assert not jsonvalue._negative_zero(near[:-4])
    quotes = (b'"x" ' * count) + FILLER + b'"error": 1'
    assert find_bytes(quotes, b'"error"') == quotes.find(b'"error"')
    assert jsonbody._key_ends(quotes) == _key_ends_reference(quotes) == 1
    assert find_bytes(quotes[:-10], b'"error"') == -1


def test_a_long_reply_is_read_for_its_error_code_as_before() -> None:
    filler = FILLER.decode()
    error = f'{{"jsonrpc":"2.0","id":1,"error":{{"code":-32001,"message":"{filler}"}}}}'
    assert error_code(error.encode()) == -32001
    result = f'{{"jsonrpc":"2.0","id":1,"result":{{"text":"{filler} error"}}}}'
    assert error_code(result.encode()) is None
