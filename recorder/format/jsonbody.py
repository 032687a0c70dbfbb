"""The canonical JSON text of a body (`recorder.format.model` holds JSON bodies so), and JSON values
that keep what their text said.

The canonical text is the body's own tokens laid out anew: a 2-space indent, one member or
item a line, `": "` after a name, `{}` and `[]` for empty ones (what `json.dumps(value,
indent=2)` lays out), and every scalar exactly as it came: a number's digits, sign and
exponent (`12345678901234567.89`, `-0`, `1E5`, `1e400`), a string with its escapes
(`"caf\\u00e9"` stays so, `"café"` too), a member named twice kept twice, in order. Only the
characters editors hide inside strings (DEL, the C1 controls, U+2028, U+2029) are written as
`\\uXXXX` escapes, which mean the same characters. A body that is no JSON (not UTF-8, not
JSON text, nested past what Python's `json` reads) is kept as it came.

The value a body is read to (`loads`, the model's `.json`: `recorder.format.jsonvalue`, re-exported
here) is what Python's `json` reads, but for the numbers whose text a Python `int` or `float`
would not write back as it came: those are `JsonNumber`s, which keep their text
(`pretty_json`, `dumps` and `compact_json` write it) and compare by the exact value that text
says when no float holds it (`12345678901234567.89` is not `12345678901234567.88`, which one
float holds both of).

Pure. orjson reads and lays out the common body in one pass each (`_canonical_json`); its
layout is taken and, where the body spells a scalar otherwise (escapes, numbers), its scalars
are swapped for the body's own (`_orjson_layout`: two regular expression passes more); what
orjson refuses goes to a tokenizer written here (`relayout`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Container
from json.encoder import INFINITY as _INFINITY
from json.encoder import encode_basestring as _encode_json_string
from typing import Any

import orjson

from recorder.format.jsonvalue import (
    _LONG_TEXT,
    _LOOKED_AT,
    _holds_float,
    _negative_zero,
    _read_float,
    _read_int,
    find_bytes,
)
from recorder.format.jsonvalue import JsonNumber as JsonNumber  # (re-exported)
from recorder.format.jsonvalue import compact_json as compact_json  # (re-exported)
from recorder.format.jsonvalue import dumps as dumps  # (re-exported)
from recorder.format.jsonvalue import holds_json_number as holds_json_number  # (re-exported)
from recorder.format.jsonvalue import loads as loads  # (re-exported)
from recorder.format.jsonvalue import read_json as read_json  # (re-exported)

__all__ = [
    "NOT_JSON",
    "JsonNumber",
    "canonical_json_body",
    "compact_json",
    "dumps",
    "holds_json_number",
    "json_value",
    "loads",
    "plain_json",
    "pretty_json",
    "read_json",
    "relayout",
]


# ------------------------------------------------------------------ writing values


# Characters that JSON allows raw inside strings but that editors show as line breaks or not at
# all (DEL, C1 controls, U+2028/U+2029): written as \uXXXX escapes so JSON bodies stay verbatim.
_INVISIBLE = re.compile("[\x7f-\x9f\u2028\u2029]")


def _escape_invisible(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _escape_invisible_text(text: str) -> str:
    """`text` with DEL, the C1 controls and U+2028/U+2029 written as `\\uXXXX` escapes."""
    if text.isascii():
        # O(1) test; DEL is the only ASCII character to escape, and `in` on ASCII text is a
        # memchr, where the regular expression walks the text character by character (about
        # 6 ms per MiB)
        return text.replace("\x7f", "\\u007f") if "\x7f" in text else text
    return _INVISIBLE.sub(_escape_invisible, text)


def pretty_json(value: Any) -> str:
    """The canonical JSON text of a value: 2-space indent, key order kept, unicode kept, a
    `JsonNumber` as its text.

    That is `json.dumps(value, indent=2, ensure_ascii=False)` with the invisible characters
    escaped. With an indent, `json` encodes in pure Python through nested generators; values
    made only of the types `json.loads` returns are written here instead, 2-3x faster and
    byte for byte the same (tests/core/test_model_pretty.py); anything else goes to `dumps`.
    """
    return _pretty_json(value)[0]


def _pretty_json(value: Any, *, float_free: bool = False) -> tuple[str, bool]:
    """(`pretty_json(value)`, strict): strict when `value` holds only plain JSON types and
    finite numbers (NaN and infinities, which `json` reads and writes but JSON has not, go to
    `json.dumps`), so that any JSON encoder writes it as `json` would, floats aside.

    `float_free`: the caller knows `value` came from `json.loads` and held no number with a
    fraction or exponent (nor NaN or Infinity): then orjson writes it, byte for byte as
    `json.dumps(indent=2)` would (tests/core/test_model_pretty.py), ~10x faster. orjson
    spells some floats otherwise (`1e-7`), and refuses integers past 64 bits, lone surrogates
    and deep nesting: those go to the writers below."""
    if float_free:
        try:
            text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
        except orjson.JSONEncodeError:
            pass
        else:
            return _escape_invisible_text(text), True
    parts: list[str] = []
    try:
        _write_plain_json(value, "\n", parts)
        text = "".join(parts)
        strict = True
    except (_NotPlainJson, RecursionError):
        # subclasses, non-string keys, cycles, deep nesting: json's own rules and errors
        text = dumps(value, indent=2)
        strict = False
    return _escape_invisible_text(text), strict


class _NotPlainJson(Exception):
    pass


def _plain_scalar(value: Any, kind: type) -> str:
    """A scalar as `json.dumps` writes it (floats and ints by their exact types' repr), a
    `JsonNumber` as its text."""
    if kind is str:
        return _encode_json_string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        if value != value or value == _INFINITY or value == -_INFINITY:
            raise _NotPlainJson  # written by json.dumps (NaN, Infinity), and not strict
        return float.__repr__(value)
    if kind is JsonNumber:
        return str(value.text)
    raise _NotPlainJson


def _write_plain_json(value: Any, indent: str, parts: list[str]) -> None:
    """Append the indented JSON text of `value` (exact dict, list, str, int, float, bool,
    None, JsonNumber; string keys) to `parts`; `indent` is the newline and indentation of
    its level."""
    kind = type(value)
    append = parts.append
    if kind is dict:
        if not value:
            append("{}")
            return
        inner = indent + "  "
        append("{" + inner)
        first = True
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlainJson
            if first:
                first = False
            else:
                append("," + inner)
            item_kind = type(item)
            if item_kind is dict or item_kind is list:
                append(_encode_json_string(key) + ": ")
                _write_plain_json(item, inner, parts)
            else:
                append(_encode_json_string(key) + ": " + _plain_scalar(item, item_kind))
        append(indent + "}")
    elif kind is list:
        if not value:
            append("[]")
            return
        inner = indent + "  "
        append("[" + inner)
        first = True
        for item in value:
            if first:
                first = False
            else:
                append("," + inner)
            item_kind = type(item)
            if item_kind is dict or item_kind is list:
                _write_plain_json(item, inner, parts)
            else:
                append(_plain_scalar(item, item_kind))
        append(indent + "]")
    else:
        append(_plain_scalar(value, kind))


# ------------------------------------------------------------------ laying out a body's text


# one JSON scalar: a string with its escapes as written (the unrolled loop: a run of plain
# characters, then an escape and another run), or a number or literal (NaN and Infinity too)
_SCALAR_PATTERN = rb'"[^"\\]*(?:\\.[^"\\]*)*"|[^ \t\r\n"{}\[\],:]+'
_SCALAR = re.compile(_SCALAR_PATTERN, re.DOTALL)
_SCALAR_SPLIT = re.compile(b"(" + _SCALAR_PATTERN + b")", re.DOTALL)


def _orjson_layout(
    body: bytes, value: Any, *, floats: bool = False, keys: int | None = None
) -> bytes | None:
    """The canonical text of `body` (valid JSON, read by orjson as `value`) from orjson's
    indented writing of `value` with its scalars swapped for the body's own; None when orjson
    cannot write `value` or dropped a member (a name given twice: fewer scalars).

    `floats`: `value` holds floats (whose text orjson may spell otherwise). Without, the swap
    is not needed when the body is orjson's own compact text, or `json.dumps`'s default one,
    or has no escape and as many names as the value (none was merged): its scalars are then
    orjson's (a string without escapes is its characters; an integer but `-0`, which the
    caller leaves out, has one spelling). `keys`: the members of the objects of `value`, when
    the caller counted them (None: counted here)."""
    try:
        written = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except orjson.JSONEncodeError:
        return None
    laid = written
    if written != body and not (not floats and _scalars_are_orjsons(body, value, keys)):
        parts = _SCALAR_SPLIT.split(written)
        own = _SCALAR.findall(body)
        if len(own) != len(parts) // 2:
            return None
        if parts[1::2] != own:
            parts[1::2] = own
            laid = b"".join(parts)
    if not laid.isascii():
        laid = _escape_invisible_text(laid.decode()).encode()
    elif b"\x7f" in laid:
        laid = laid.replace(b"\x7f", b"\\u007f")
    if laid is written:
        # a copy of its length: orjson's object holds the buffer it grew to write, 4 KiB at
        # least whatever the text's size (`recorder check` of 40,000 small exchanges held
        # 450 MB so)
        return bytes(memoryview(laid))
    return body if laid == body else laid


_KEY_END = re.compile(rb'"[ \t\r\n]*:')
_SPACED_ENCODER = json.JSONEncoder(ensure_ascii=False)


def _scalars_are_orjsons(body: bytes, value: Any, keys: int | None = None) -> bool:
    """Whether every scalar of `body` (read as `value`, which holds no float) is written as
    orjson writes it (see `_orjson_layout`)."""
    if b"\\" not in body:
        # without escapes every `"` opens or closes a string, so each name in the text is a
        # `"` then `:` (whitespace between); a string that starts with `:` only adds to it
        return _key_ends(body) == (_count_keys(value) if keys is None else keys)
    if b'": ' in body[:256] or b", " in body[:256]:  # `json.dumps`'s default layout
        try:
            return _SPACED_ENCODER.encode(value).encode() == body
        except (ValueError, RecursionError):
            return False
    try:
        return bool(orjson.dumps(value) == body)
    except orjson.JSONEncodeError:
        return False


def _key_ends(body: bytes) -> int:
    """`len(_KEY_END.findall(body))`; on long text by `memchr` of each `"` while they are
    rare (a large body is mostly a few long strings; the regular expression steps through
    every byte: 0.5 ms a MiB), then by the expression from there. (A match holds no other
    `"`: each quote is looked at on its own.)"""
    if len(body) < _LONG_TEXT:
        return len(_KEY_END.findall(body))
    count = 0
    at = body.find(b'"')
    for _ in range(_LOOKED_AT):
        if at < 0:
            return count
        if _KEY_END.match(body, at) is not None:
            count += 1
        at = body.find(b'"', at + 1)
    return count if at < 0 else count + len(_KEY_END.findall(body, at))


def _count_keys(value: Any) -> int:
    """The number of members of all the objects in a parsed JSON value."""
    count = 0
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            count += len(item)
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
    return count


# the tokens of JSON text: a scalar (as `_SCALAR`), or one punctuation character
_TOKEN = re.compile(
    r'"[^"\\]*(?:\\.[^"\\]*)*"|[^ \t\r\n"{}\[\],:]+|[{}\[\],:]',
    re.DOTALL,
)


def relayout(text: str, *, compact: bool = False, one_line: bool = False) -> str:
    """Valid JSON `text` (as Python's `json` reads it) laid out as the canonical body (or,
    `compact`, on one line without spaces; `one_line`, on one line as `json.dumps` writes by
    default: `{"a": 1, "b": 2}`), each scalar as it is written in `text`. The invisible
    characters are not escaped here (`_escape_invisible_text`)."""
    if compact or one_line:
        found = _TOKEN.findall(text)
        if one_line:
            found = [", " if t == "," else ": " if t == ":" else t for t in found]
        return "".join(found)
    out: list[str] = []
    append = out.append
    newlines = ["\n"]
    depth = 0
    opened = False  # the last token opened an object or array
    for token in _TOKEN.findall(text):
        first = token[0]
        if first == "{" or first == "[":
            if opened:
                append(newlines[depth])
            depth += 1
            if depth == len(newlines):
                newlines.append(newlines[-1] + "  ")
            append(token)
            opened = True
        elif first == "}" or first == "]":
            depth -= 1
            append(token if opened else newlines[depth] + token)
            opened = False
        elif first == ",":
            append("," + newlines[depth])
        elif first == ":":
            append(": ")
        else:
            if opened:
                append(newlines[depth])
                opened = False
            append(token)
    return "".join(out)


# ------------------------------------------------------------------ a body


class _NotJson:
    """The mark of a text that is not JSON (compared with `is`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_JSON"


NOT_JSON: Any = _NotJson()
"""What `json_value` gives for a text that is not JSON (empty, or not read), and what a
message's body parses to then: one mark for the whole recorder."""


def json_value(text: bytes | str, *, exact_numbers: bool = True) -> Any:
    """The JSON value of `text` as the model reads it (`loads`: NaN and Infinity too, a
    repeated key's last value, a number its Python value would not write back as it came a
    `JsonNumber`; bytes in the encodings `json` detects), or NOT_JSON when it is none (empty,
    not JSON).

    `exact_numbers=False`, for a reader of its strings and structure only (the recorder's
    lineage, the stand-in's matching): orjson's value when orjson reads it (an integer past 64
    bits as a float, a decimal as the nearest float), `loads` for what orjson refuses."""
    if not text:
        return NOT_JSON
    if not exact_numbers:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    try:
        return loads(text)
    except (ValueError, RecursionError):
        pass
    if isinstance(text, str):
        return NOT_JSON
    try:  # bytes in another encoding `json` reads (UTF-16, UTF-32, a byte order mark)
        return loads(text.decode(json.detect_encoding(text)))
    except (ValueError, RecursionError):
        return NOT_JSON


def canonical_json_body(body: bytes) -> bytes:
    """A JSON body laid out canonically (every scalar as it came), or unchanged when it is no
    JSON."""
    return _canonical_json(body)[0]


def _canonical_json(body: bytes) -> tuple[bytes, Any, bool]:
    """(canonical body, its parsed value, strict), or (body, NOT_JSON, False) when it is not
    JSON. Strict: the value holds only plain JSON types, finite numbers and no `JsonNumber`
    (so any JSON encoder writes it as its text says, floats' spelling aside).

    The common body first: orjson reads it (no float, no `-0`: the value `json` reads) and
    lays it out (`_orjson_layout`), already canonical or not; any other body goes to
    `_canonical_json_general`, which gives the same for this one (tests/record/
    test_build_fast_paths.py holds them to the same answers)."""
    if not body:
        return body, NOT_JSON, False
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _canonical_json_general(body)
    if _holds_float(value) or _negative_zero(body):
        return _canonical_json_general(body, value)
    pretty = _orjson_layout(body, value)
    if pretty is None:
        return _canonical_json_general(body)
    return pretty, value, True


def plain_json(
    body: bytes,
    names: Container[str],
    depth: int,
    known: set[str] | None = None,
    parsed: Any = None,
) -> tuple[bytes, Any] | None:
    """(the canonical text of `body`, its value) by the common body's path of
    `_canonical_json` (one orjson pass, no float, no `-0`), when no member of the body is
    named, once lowercased, in `names` and it is nested at most `depth` deep; None when it is
    not so (the caller asks `_canonical_json`). `known`: member names found not in `names`
    before (the caller's, for these `names`), looked up a whole object at a time, and added
    to. A string that may hide a secret (JSON text, a URL with a query) makes it None too.
    `parsed`: `orjson.loads(body)`, when the caller has it (None: read here; it is only
    read, never changed).

    One walk of the value looks for floats and for those names at once (what the recording
    writer's direct path needs to know: its secret field names, `recorder.record.proxy.direct`),
    and the depth only when it holds many objects and arrays. The text is verbatim in a
    `.http` file: canonical JSON has no line that starts with `#` or `HTTP/` (every line but
    the first is indented or closes a bracket, and a string holds no raw line break), and no
    control or invisible character (JSON escapes the first, `_escape_invisible_text` the
    second)."""
    if not body or find_bytes(body, b"{{") >= 0:
        return None  # (`{{`: a literal that reads as a placeholder, escaped by the redactor)
    if parsed is not None:
        value = parsed
    else:
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
    containers = keys = 0
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            containers += 1
            keys += len(item)
            if known is None or not known.issuperset(item):
                for key in item:
                    if key.lower() in names:
                        return None
                if known is not None:
                    known.update(item)
            stack.extend(item.values())
        elif kind is list:
            containers += 1
            stack.extend(item)
        elif kind is float:
            return None
        elif (
            kind is str
            and item
            and (item[0] in _JSON_STARTS or ("=" in item and ("?" in item or "&" in item)))
        ):
            return None  # JSON text or a URL's query inside a string: the redactor looks
    if containers > depth and _depth(value) > depth:
        return None
    if _negative_zero(body):
        return None
    pretty = _orjson_layout(body, value, keys=keys)
    return None if pretty is None else (pretty, value)


# what a string that may be JSON text starts with
_JSON_STARTS = frozenset("{[ \t\r\n")


def _depth(value: Any) -> int:
    """How deep a parsed JSON value nests objects and arrays (`[[]]`: 2, a scalar: 0)."""
    depth = 0
    level = [value]
    while True:
        below: list[Any] = []
        nested = False
        for item in level:
            kind = type(item)
            if kind is dict:
                below.extend(item.values())
                nested = True
            elif kind is list:
                below.extend(item)
                nested = True
        if not nested:
            return depth
        depth += 1
        level = below


def _canonical_json_general(body: bytes, read: Any = NOT_JSON) -> tuple[bytes, Any, bool]:
    """`_canonical_json` of any body: the value read by `json` (`_loads_text`), the text laid
    out from orjson's writing when it read the body (`read`, its value, or read here) and
    repeats no name, else by `relayout`."""
    if not body:
        return body, NOT_JSON, False
    try:
        # UTF-8 only: json.loads would also read UTF-16/32, which a file could not show
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return body, NOT_JSON, False
    special: list[str] = []  # NaN and Infinity, which `json` reads and JSON has not

    def read_constant(name: str) -> float:
        special.append(name)
        return float(name)

    try:
        value = json.loads(
            text, parse_float=_read_float, parse_int=_read_int, parse_constant=read_constant
        )
    except (ValueError, RecursionError):
        # not JSON, or nested past what `json` reads: keep the bytes as they are
        return body, NOT_JSON, False
    strict = not special and not holds_json_number(value)
    if read is NOT_JSON and not special:
        try:
            read = orjson.loads(body)
        except orjson.JSONDecodeError:
            read = NOT_JSON
    pretty = None if read is NOT_JSON else _orjson_layout(body, read, floats=True)
    if pretty is None:
        # a name given twice (or what orjson does not read): the layout of the same text
        # with each name made unique, whose scalars are swapped for the body's all the same
        try:
            template = json.loads(text, object_pairs_hook=_unique_names)
        except (ValueError, RecursionError):
            template = NOT_JSON
        if template is not NOT_JSON:
            pretty = _orjson_layout(body, template, floats=True)
    if pretty is None:
        pretty = _escape_invisible_text(relayout(text)).encode()
        if pretty == body:
            pretty = body
    return pretty, value, strict


def _unique_names(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose repeated names are made unique (a NUL added: only a layout is made of
    it, its names then swapped for the text's own)."""
    members: dict[str, Any] = {}
    for name, value in pairs:
        while name in members:
            name += "\0"
        members[name] = value
    return members
