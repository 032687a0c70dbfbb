"""Where secrets hide in a body besides a secret member (pure; `recorder.secrets.redact` uses them).

- `looks_secret`: a URL path segment that reads as a secret (a webhook's key).
- `Pairs`, `loads_pairs`, `dumps_pairs`: a JSON object that names a member twice, kept whole
  (`json` keeps the last value only: the first would reach the disk unredacted, and the
  recording would hold one member where two were forwarded).
- `multipart_boundary`, `part_fields`: a `multipart/form-data` body's parts (RFC 7578).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from recorder.format.jsonvalue import _read_float, _read_int, dumps

__all__ = [
    "JSON_STARTS",
    "Pairs",
    "dumps_pairs",
    "holds_pairs",
    "loads_pairs",
    "looks_secret",
    "multipart_boundary",
    "part_fields",
    "redact_multipart",
]

# a path segment that may be a secret: long, of URL-safe characters (a UUID is an id)
_SECRET_SEGMENT = re.compile(r"[A-Za-z0-9._~%+=-]{16,}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def looks_secret(segment: str) -> bool:
    """Whether a URL path segment looks like a secret: 16 characters or more of a URL's
    unreserved ones, letters and digits both (`a8Fq3...`, a webhook's key), and no UUID (an id
    the agent or client made, which the player pairs, not a secret)."""
    if _SECRET_SEGMENT.fullmatch(segment) is None or _UUID.fullmatch(segment) is not None:
        return False
    return any(c.isdigit() for c in segment) and any(c.isalpha() for c in segment)


class Pairs(list[tuple[Any, Any]]):
    """A JSON object that names a member twice, as its (name, value) pairs in order: `json`
    would keep the last value only (and the first would reach the disk unredacted)."""


def _object(pairs: list[tuple[Any, Any]]) -> dict[str, Any] | Pairs:
    value = dict(pairs)
    return value if len(value) == len(pairs) else Pairs(pairs)


def loads_pairs(text: str | bytes) -> Any:
    """`json.loads`, with an object that names a member twice kept as `Pairs` (and a number
    its int or float would not write back as a `JsonNumber`: `dumps_pairs` writes its text)."""
    return json.loads(text, object_pairs_hook=_object, parse_float=_read_float, parse_int=_read_int)


def holds_pairs(value: Any) -> bool:
    """Whether a value `loads_pairs` gave holds a `Pairs` anywhere."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Pairs):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def dumps_pairs(value: Any, *, ensure_ascii: bool) -> str:
    """`json.dumps`, writing `Pairs` as an object with each of its members."""
    if not holds_pairs(value):
        return dumps(value, ensure_ascii=ensure_ascii)

    def dump(item: Any) -> str:
        if isinstance(item, Pairs | dict):
            pairs = item if isinstance(item, Pairs) else item.items()
            inner = ", ".join(
                f"{json.dumps(str(k), ensure_ascii=ensure_ascii)}: {dump(v)}" for k, v in pairs
            )
            return "{" + inner + "}"
        if isinstance(item, list):
            return "[" + ", ".join(dump(v) for v in item) + "]"
        return dumps(item, ensure_ascii=ensure_ascii)

    return dump(value)


JSON_STARTS = frozenset("{[ \t\r\n")


def multipart_boundary(content_type: str | None) -> bytes | None:
    """The boundary of a `multipart/form-data` Content-Type, None for any other."""
    media, _, parameters = (content_type or "").partition(";")
    if media.strip().lower() != "multipart/form-data":
        return None
    for parameter in parameters.split(";"):
        name, eq, value = parameter.partition("=")
        if eq and name.strip().lower() == "boundary":
            value = value.strip().strip('"')
            return value.encode("latin-1", "replace") if value else None
    return None


def part_fields(head: bytes) -> dict[str, str]:
    """A multipart part's `name` (from Content-Disposition) and `content-type`."""
    out: dict[str, str] = {}
    for line in head.decode("latin-1").split("\r\n"):
        name, colon, value = line.partition(":")
        folded = name.strip().lower()
        if not colon:
            continue
        if folded == "content-type":
            out["content-type"] = value.strip()
        elif folded == "content-disposition":
            match = re.search(r';\s*name\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))', value)
            if match is not None:
                out["name"] = match.group(1) if match.group(1) is not None else match.group(2)
    return out


def redact_multipart(
    body: bytes, boundary: bytes, redact_part: Callable[[str, str | None, bytes], bytes]
) -> bytes:
    """`body` (multipart, parts split at `boundary`) with each part's content replaced by
    `redact_part(field name, part Content-Type, content)`; `body` itself when none changed."""
    delimiter = b"--" + boundary
    pieces = body.split(delimiter)
    changed = False
    for n in range(1, len(pieces)):
        piece = pieces[n]
        head, sep, content = piece.partition(b"\r\n\r\n")
        if not sep or piece.startswith(b"--"):
            continue
        ending = b"\r\n" if content.endswith(b"\r\n") else b""
        value = content[: len(content) - len(ending)]
        fields = part_fields(head)
        redacted = redact_part(fields.get("name", ""), fields.get("content-type"), value)
        if redacted is not value:
            pieces[n] = head + sep + redacted + ending
            changed = True
    return delimiter.join(pieces) if changed else body
