"""The canonical JSON text of a body (`recorder.format.model` holds JSON bodies so): 2-space indent,
key order as received, non-ASCII kept, the characters editors hide escaped; a body is kept as
it came when that would lose anything (not JSON, not UTF-8, a repeated key, a lone surrogate).

Pure. `canonical_json_body` and `pretty_json` are what the model, the lineage and the renderer
use; `_canonical_json` also gives the parsed value, which the model keeps as `.json`.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Container
from json.encoder import INFINITY as _INFINITY
from json.encoder import encode_basestring as _encode_json_string
from typing import Any

import orjson

__all__ = ["NOT_JSON", "canonical_json_body", "json_value", "plain_json", "pretty_json"]


class _DuplicateKeyError(ValueError):
    pass


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _DuplicateKeyError
    return result


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
    """The canonical JSON text of a body: 2-space indent, key order kept, unicode kept.

    That is `json.dumps(value, indent=2, ensure_ascii=False)` with the invisible characters
    escaped. With an indent, `json` encodes in pure Python through nested generators; values
    made only of the types `json.loads` returns are written here instead, 2-3x faster and
    byte for byte the same (tests/test_model_pretty.py); anything else goes to `json.dumps`.
    """
    return _pretty_json(value)[0]


def _pretty_json(value: Any, *, float_free: bool = False) -> tuple[str, bool]:
    """(`pretty_json(value)`, strict): strict when `value` holds only plain JSON types and
    finite numbers (NaN and infinities, which `json` reads and writes but JSON has not, go to
    `json.dumps`), so that any JSON encoder writes it as `json` would, floats aside.

    `float_free`: the caller knows `value` came from `json.loads` and held no number with a
    fraction or exponent (nor NaN or Infinity): then orjson writes it, byte for byte as
    `json.dumps(indent=2)` would (tests/test_model_pretty.py), ~10x faster. orjson spells
    some floats otherwise (`1e-7`), and refuses integers past 64 bits, lone surrogates and
    deep nesting: those go to the writers below."""
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
        text = json.dumps(value, indent=2, ensure_ascii=False)
        strict = False
    return _escape_invisible_text(text), strict


class _NotPlainJson(Exception):
    pass


def _plain_scalar(value: Any, kind: type) -> str:
    """A scalar as `json.dumps` writes it (floats and ints by their exact types' repr)."""
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
    raise _NotPlainJson


def _write_plain_json(value: Any, indent: str, parts: list[str]) -> None:
    """Append the indented JSON text of `value` (exact dict, list, str, int, float, bool,
    None; string keys) to `parts`; `indent` is the newline and indentation of its level."""
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


class _NotJson:
    """The mark of a text that is not JSON (compared with `is`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_JSON"


NOT_JSON: Any = _NotJson()
"""What `json_value` gives for a text that is not JSON (empty, or not read), and what a
message's body parses to then: one mark for the whole recorder."""


def json_value(text: bytes | str, *, exact_numbers: bool = True) -> Any:
    """The JSON value of `text` as `json.loads` reads it (NaN and Infinity too, a repeated
    key's last value), or NOT_JSON when it is none (empty, or not JSON).

    `exact_numbers=False`, for a reader of its strings and structure only (the recorder's
    lineage, the stand-in's matching): orjson reads it first, 6-7x faster, and reads an integer
    past 64 bits as a float; `json` reads what orjson refuses (NaN, lone surrogates, UTF-16, a
    byte order mark, deep nesting)."""
    if not exact_numbers:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return NOT_JSON


def canonical_json_body(body: bytes) -> bytes:
    """Pretty-print a JSON body, or return it unchanged when that would lose anything."""
    return _canonical_json(body)[0]


def _canonical_json(body: bytes) -> tuple[bytes, Any, bool]:
    """(canonical body, its parsed value, strict: see `_pretty_json`), or
    (body, NOT_JSON, False) when it is not JSON.

    The common body first: one orjson reads and writes whole (no float, nothing orjson
    refuses), already canonical, or in the compact layout orjson writes itself, or in any
    layout without escapes, where its keys can be counted (either way it repeats no key).
    That is what `_canonical_json_general` gives for it, with no text decoded or
    encoded on the way (tests/record/test_build_fast_paths.py holds them to the same answers);
    any other body goes there."""
    if not body:
        return body, NOT_JSON, False
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _canonical_json_general(body)
    if _holds_float(value):
        return _canonical_json_general(body)
    pretty = _fast_text(body, value)
    if pretty is None:
        return _canonical_json_general(body, value)
    return pretty, value, True


def _fast_text(body: bytes, value: Any) -> bytes | None:
    """The canonical text of `body`, read by orjson as `value` (holding no float), written by
    orjson when that is what the general path writes; None when it cannot tell."""
    try:
        dumped = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except orjson.JSONEncodeError:
        return None
    if dumped.isascii():
        pretty = dumped.replace(b"\x7f", b"\\u007f") if b"\x7f" in dumped else dumped
    else:
        pretty = _escape_invisible_text(dumped.decode()).encode()
    if pretty == body:
        return body  # (the caller's object: orjson's keeps its buffer, 4 KiB for a small body)
    if (not _spaced(body) and orjson.dumps(value) == body) or (
        # no key repeats: without escapes every `"` opens or closes a string, so each key in
        # the text is a `"` then `:` (whitespace between); a string that starts with `:` only
        # adds to the count. As many as the value's keys: none was merged (any layout)
        b"\\" not in body and len(_KEY_END.findall(body)) == _count_keys(value)
    ):
        # (a copy of its length: orjson's object holds the buffer it grew to write, 4 KiB at
        # least whatever the text's size; `recorder check` of 40,000 small exchanges held
        # 450 MB so)
        return bytes(memoryview(pretty)) if pretty is dumped else pretty
    return None


def plain_json(
    body: bytes, names: Container[str], depth: int, known: set[str] | None = None
) -> tuple[bytes, Any] | None:
    """(the canonical text of `body`, its value) by the common body's path of
    `_canonical_json` (one orjson pass, no float), when no member of the body is named, once
    lowercased, in `names` and it is nested at most `depth` deep; None when it is not so (the
    caller asks `_canonical_json`). `known`: member names found not in `names` before (the
    caller's, for these `names`), looked up a whole object at a time, and added to. A string
    that may hide a secret (JSON text, a URL with a query) makes it None too.

    One walk of the value looks for floats and for those names at once (what the recording
    writer's direct path needs to know: its secret field names, `recorder.record.proxy.direct`),
    and the depth only when it holds many objects and arrays. The text is verbatim in a
    `.http` file: canonical JSON has no line that starts with `#` or `HTTP/` (every line but
    the first is indented or closes a bracket, and a string holds no raw line break), and no
    control or invisible character (JSON escapes the first, `_escape_invisible_text` the
    second)."""
    if not body:
        return None
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    containers = 0
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            containers += 1
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
    pretty = _fast_text(body, value)
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


_KEY_END = re.compile(rb'"[ \t\r\n]*:')


def _spaced(body: bytes) -> bool:
    """Whether a JSON body seems laid out as `json.dumps` writes by default (`{"a": 1, ...}`),
    not compact (`{"a":1,...}`): which encoder may have written it."""
    head = body[:256]
    return b'": ' in head or b", " in head


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


def _canonical_json_general(body: bytes, value: Any = NOT_JSON) -> tuple[bytes, Any, bool]:
    """`_canonical_json` of any body; `value`: the body as orjson read it, holding no float (the
    fast path has it), if it was read."""
    if not body:
        return body, NOT_JSON, False
    floats: list[str] = []  # the text of each float, NaN or Infinity read
    # orjson reads UTF-8 JSON 5-7x faster, to the value `json` reads when it holds no float
    # (orjson refuses NaN, Infinity, a byte order mark, lone surrogates and deep nesting, and
    # reads integers past 64 bits as floats): those go to `json`, below
    if value is NOT_JSON:
        with contextlib.suppress(orjson.JSONDecodeError):
            value = orjson.loads(body)
        if value is not NOT_JSON and _holds_float(value):
            value = NOT_JSON  # (the text of its floats is kept by reading it with `json`)
    if value is NOT_JSON:

        def read_float(text: str) -> float:
            floats.append(text)
            return float(text)

        try:
            # UTF-8 only: json.loads would also read UTF-16/32, which re-encoding would change
            value = json.loads(
                body.decode("utf-8"), parse_float=read_float, parse_constant=read_float
            )
        except (ValueError, RecursionError):
            # not JSON, or not UTF-8: keep the bytes as they are
            return body, NOT_JSON, False
    text, strict = _pretty_json(value, float_free=not floats)
    try:
        pretty = text.encode()
    except UnicodeEncodeError:
        # a lone surrogate (`"\ud800"` is JSON, but no character): UTF-8 cannot hold it raw
        return body, value, False
    if pretty == body:
        # already canonical (no key repeats either: pretty has each once)
        return body, value, strict
    # few objects for the size (a long text): the hook below runs rarely and beats encoding
    # with `json`, not with orjson (compact layouts: ~7x faster than the hook on 1 MiB)
    if (not _spaced(body) or body.count(b"{") * 512 >= len(body)) and _same_as_encoded(value, body):
        return pretty, value, strict  # no key repeats (see `_same_as_encoded`)
    try:
        json.loads(body, object_pairs_hook=_reject_duplicate_keys)
    except _DuplicateKeyError:
        # json.loads kept only the last of a repeated key: reformatting would lose the others
        return body, value, strict
    return pretty, value, strict


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


# the layouts agents send: compact (Starlette's JSONResponse), and json.dumps's default
_COMPACT_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_SPACED_ENCODER = json.JSONEncoder(ensure_ascii=False)


def _same_as_encoded(value: Any, body: bytes) -> bool:
    """Whether `body` is exactly what an encoder writes for `value` in the layout `body`
    seems to have: then it repeats no key (each repeat would be text the encoding lacks),
    and the second parse that looks for repeats is not needed (the encoder is ~5x faster;
    orjson, for the compact layout, ~5x faster again). A value orjson writes differently (a
    NaN as null, a float's exponent) only makes the answer False."""
    try:
        if _spaced(body):
            return _SPACED_ENCODER.encode(value).encode() == body
        try:
            return bool(orjson.dumps(value) == body)
        except orjson.JSONEncodeError:  # e.g. an integer past 64 bits
            return _COMPACT_ENCODER.encode(value).encode() == body
    except (ValueError, RecursionError):
        return False
