"""JSON values that keep what their text said (pure): `JsonNumber`, a number whose text a
Python `int` or `float` would not write back as it came, and the readers and writers that
keep it (`loads`, `read_json`, `dumps`, `compact_json`). `recorder.format.jsonbody` lays out a
body's text; this is its value.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from decimal import Decimal
from json.encoder import INFINITY as _INFINITY
from json.encoder import encode_basestring as _encode_json_string
from json.encoder import encode_basestring_ascii as _encode_json_string_ascii
from typing import Any

import orjson

__all__ = [
    "JsonNumber",
    "compact_json",
    "dumps",
    "find_bytes",
    "holds_json_number",
    "loads",
    "read_json",
]


class JsonNumber(float):
    """A JSON number whose text a Python `int` or `float` would not write back as it came:
    `12345678901234567.89` (no float holds it), 31 digits of pi, `1e400` (past the floats),
    `-0`, `1E5`, `1.50`, an integer past Python's 4,300 digits.

    It is the nearest float (arithmetic and order work as with any number; `1e400` is
    infinite), and it keeps its `text`, which `pretty_json`, `dumps` and `compact_json`
    write. It compares (and hashes) as the exact number its text says: as that float when
    the float says the same number (`1E5` is `100000.0`, `-0` is `0`), else as the exact
    decimal (`Decimal(text)`), so two texts that one float rounds both to are two values.
    """

    __slots__ = ("_exact", "text")

    text: str
    _exact: float | Decimal

    def __new__(cls, text: str) -> JsonNumber:
        self = float.__new__(cls, text)  # (`1e400` and huge integers: infinite)
        self.text = text
        nearest = float(self)
        decimal = Decimal(text)
        if math.isfinite(nearest) and Decimal(float.__repr__(nearest)) == decimal:
            self._exact = nearest
        else:
            self._exact = decimal
        return self

    @property
    def exact_float(self) -> bool:
        """Whether a float holds the number the text says (`1E5`; not `0.1000000000000000001`)."""
        return type(self._exact) is float

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JsonNumber):
            return self._exact == other._exact
        if isinstance(other, int | float | Decimal):
            return self._exact == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(self._exact)

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__

    def __reduce__(self) -> tuple[type[JsonNumber], tuple[str]]:
        return (JsonNumber, (self.text,))

    def __copy__(self) -> JsonNumber:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> JsonNumber:
        return self


def _read_float(text: str) -> float:
    """A JSON number with a fraction or an exponent: a float when the float writes back
    `text`, else a `JsonNumber`."""
    value = float(text)
    return value if float.__repr__(value) == text else JsonNumber(text)


def _read_int(text: str) -> int | float:
    """A JSON integer: an int, but `-0` (which an int writes as `0`) and one of more digits
    than Python's `int()` reads (4,300) as `JsonNumber`s."""
    if text == "-0":
        return JsonNumber(text)
    try:
        return int(text)
    except ValueError:
        return JsonNumber(text)


def _loads_text(text: str) -> Any:
    """`json.loads(text)`, numbers read as `_read_float` and `_read_int` read them (NaN and
    Infinity, which `json` reads, stay floats)."""
    return json.loads(text, parse_float=_read_float, parse_int=_read_int)


def loads(data: bytes | str) -> Any:
    """The value of JSON text as the model reads it: what `json.loads` gives, but a number
    its Python value would not write back as it came is a `JsonNumber`. orjson reads it when
    it holds no float and no `-0` (the value is then the same). Raises ValueError (or
    RecursionError) as `json.loads` does."""
    return read_json(data)[0]


def read_json(data: bytes | str) -> tuple[Any, bool]:
    """(`loads(data)`, whether the value holds a `JsonNumber`): a writer that would write a
    float where the text had its own digits (`json`'s C encoder) needs to know."""
    raw = data.encode() if isinstance(data, str) else data
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    else:
        if not _holds_float(value) and not _negative_zero(raw):
            return value, False
    value = _loads_text(data if isinstance(data, str) else data.decode("utf-8"))
    return value, holds_json_number(value)


def holds_json_number(value: Any) -> bool:
    """Whether a JSON value holds a `JsonNumber` anywhere (a value that holds itself is looked
    into once: `json` then says it is circular)."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is JsonNumber:
            return True
        if kind is str or not isinstance(item, dict | list | tuple):
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        # (subclasses and tuples too: what `pretty_json` and `dumps` are handed beside
        # parsed values)
        stack.extend(item.values() if isinstance(item, dict) else item)
    return False


# a `-0` integer (what an int writes as `0`): `-0` followed by what ends a number in JSON
# text; inside a string ("a-0 b") it only sends the body the exact way
_NEGATIVE_ZERO = re.compile(rb"-0(?=[ \t\r\n,\]}]|\Z)")
_NUMBER_ENDS = b" \t\r\n,]}"
# text shorter than this is searched by `bytes.find` alone (`find_bytes`)
_LONG_TEXT = 16 * 1024
# occurrences of a needle's first byte (or of `-0`) looked at one by one before a search
# falls back to the general one from there
_LOOKED_AT = 64


def find_bytes(data: bytes, needle: bytes, start: int = 0) -> int:
    """`data.find(needle, start)`, fast on long text too. CPython's search for a needle
    under 6 bytes steps one byte at a time wherever a byte of the text shares its low 6 bits
    with one of the needle's (`m` with `-`, `p` with `0`): a MiB of English text took 1.2 ms
    for `-0`, 0.6 ms for `"error"`. On long text the needle's first byte is found by
    `memchr` instead (microseconds a MiB) while it is rare; past `_LOOKED_AT` of them, the
    general search from there."""
    if len(data) - start < _LONG_TEXT or len(needle) < 2:
        return data.find(needle, start)
    first = needle[:1]
    at = data.find(first, start)
    for _ in range(_LOOKED_AT):
        if at < 0 or data.startswith(needle, at):
            return at
        at = data.find(first, at + 1)
    return at if at < 0 else data.find(needle, at)


def _negative_zero(body: bytes) -> bool:
    """Whether `body` may hold the number `-0` (`_NEGATIVE_ZERO`; by memory searches while
    `-0` is rare: dates and uuids hold it)."""
    at = find_bytes(body, b"-0")
    for _ in range(_LOOKED_AT):
        if at < 0:
            return False
        if body[at + 2 : at + 3] in _NUMBER_ENDS:  # (b"" too: the end of the text)
            return True
        at = find_bytes(body, b"-0", at + 1)
    return at >= 0 and _NEGATIVE_ZERO.search(body, at) is not None


def _number_text(value: float, repr_: Callable[[float], str] = float.__repr__) -> str:
    """A float as `json` writes one, a `JsonNumber` as its text."""
    if type(value) is JsonNumber:
        return str(value.text)
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return repr_(value)


class _TextNumberEncoder(json.JSONEncoder):
    """`json.JSONEncoder` (its Python writer: the C one writes any float by `float.__repr__`)
    with each `JsonNumber` written as its text."""

    def iterencode(self, o: Any, _one_shot: bool = False) -> Any:
        markers: dict[int, Any] | None = {} if self.check_circular else None
        encoder = _encode_json_string_ascii if self.ensure_ascii else _encode_json_string

        def floatstr(value: float, allow_nan: bool = self.allow_nan) -> str:
            text = _number_text(value)
            if not allow_nan and text in ("NaN", "Infinity", "-Infinity"):
                raise ValueError("Out of range float values are not JSON compliant: " + text)
            return text

        make = json.encoder._make_iterencode  # type: ignore[attr-defined]
        return make(
            markers,
            self.default,
            encoder,
            self.indent,
            floatstr,
            self.key_separator,
            self.item_separator,
            self.sort_keys,
            self.skipkeys,
            _one_shot,
        )(o, 0)


def dumps(
    value: Any,
    *,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    ensure_ascii: bool = False,
) -> str:
    """`json.dumps(value, ...)` (non-ASCII kept by default), each `JsonNumber` written as its
    text; the C encoder when the value holds none."""
    if not holds_json_number(value):
        return json.dumps(value, indent=indent, separators=separators, ensure_ascii=ensure_ascii)
    encoder = _TextNumberEncoder(indent=indent, separators=separators, ensure_ascii=ensure_ascii)
    return encoder.encode(value)


def compact_json(value: Any) -> bytes:
    """A value as compact JSON text (`{"a":1}`), as agents send it: by orjson, which refuses a
    `JsonNumber` (and integers past 64 bits) and a lone surrogate, else by `dumps`, which
    writes a number's text, and a lone surrogate as its JSON escape (`"\\ud800"`, valid JSON
    text that UTF-8 cannot carry raw)."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        # (only a string holds a lone surrogate: Python's `\\udfff` is then JSON's escape)
        return dumps(value, separators=(",", ":")).encode("utf-8", "backslashreplace")


def _holds_float(value: Any) -> bool:
    """Whether a parsed JSON value holds a float anywhere."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is float:
            return True
    return False
