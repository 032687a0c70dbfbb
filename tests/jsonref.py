"""A reference for the canonical JSON body (tests only): the body's own tokens laid out as
`json.dumps(value, indent=2)` lays out a value, every scalar as written, the invisible
characters escaped; the body as it came when Python's `json` does not read it as UTF-8 JSON.

Written character by character (no regular expression, no orjson), independently of
`recorder.format.jsonbody`, whose fast paths the tests hold to it."""

from __future__ import annotations

import json

_WHITESPACE = " \t\r\n"
_INVISIBLE = {chr(c) for c in range(0x7F, 0xA0)} | {"\u2028", "\u2029"}


def tokens(text: str) -> list[str]:
    """The tokens of valid JSON text: punctuation, strings (escapes as written), numbers and
    literals."""
    found: list[str] = []
    at = 0
    while at < len(text):
        char = text[at]
        if char in _WHITESPACE:
            at += 1
        elif char in "{}[],:":
            found.append(char)
            at += 1
        elif char == '"':
            end = at + 1
            while text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            found.append(text[at : end + 1])
            at = end + 1
        else:
            end = at
            while end < len(text) and text[end] not in _WHITESPACE + '{}[],:"':
                end += 1
            found.append(text[at:end])
            at = end
    return found


def layout(text: str) -> str:
    """Valid JSON text laid out with a 2-space indent, scalars as written."""
    out: list[str] = []
    depth = 0
    items = tokens(text)
    for index, token in enumerate(items):
        after = items[index + 1] if index + 1 < len(items) else ""
        if token in "{[":
            out.append(token)
            depth += 1
            if after not in "}]":
                out.append("\n" + "  " * depth)
        elif token in "}]":
            depth -= 1
            before = items[index - 1]
            if before not in "{[":
                out.append("\n" + "  " * depth)
            out.append(token)
        elif token == ",":
            out.append(",\n" + "  " * depth)
        elif token == ":":
            out.append(": ")
        else:
            out.append(token)
    return "".join(c if c not in _INVISIBLE else f"\\u{ord(c):04x}" for c in "".join(out))


def canonical_layout(body: bytes) -> bytes:
    """The canonical JSON body of `body` (see the module docstring)."""
    try:
        text = body.decode("utf-8")
        json.loads(text)
    except (ValueError, RecursionError):
        return body
    return layout(text).encode()
