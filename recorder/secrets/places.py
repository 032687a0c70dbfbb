"""Where secrets hide in a body besides a secret member (pure; `recorder.secrets.redact` uses them).

- `looks_secret`: a URL path segment that reads as a secret (a webhook's key).
- `Pairs`, `loads_pairs`, `dumps_pairs`: a JSON object that names a member twice, kept whole
  (`json` keeps the last value only: the first would reach the disk unredacted, and the
  recording would hold one member where two were forwarded).
- `multipart_boundary`, `part_fields`: a `multipart/form-data` body's parts (RFC 7578).
- `redact_userinfo`: a URL's credentials in any string (`https://user:password@host`).
- `redact_parameters_in_text`: a secret parameter of a URL inside free text (`call
  https://h/cb?token=... back`: the value up to a space, a sentence's last mark left out).
- `BASE64_MEMBERS`, `base64_text`, `media_type`: a file's bytes in base64 (`Part.raw`,
  0.3's `file.bytes`), to be redacted as a body of the part's media type.

Each takes what it finds to `remember(value, placeholder name)` (the redactor's, which
scrubs those values from the whole transcript).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from recorder.format.jsonvalue import _read_float, _read_int, dumps

__all__ = [
    "BASE64_MEMBERS",
    "JSON_STARTS",
    "URL_CREDENTIALS",
    "Pairs",
    "base64_bytes",
    "base64_text",
    "dumps_pairs",
    "holds_pairs",
    "is_text",
    "loads_pairs",
    "looks_secret",
    "may_hide_credentials",
    "media_type",
    "multipart_boundary",
    "part_fields",
    "redact_multipart",
    "redact_parameters_in_text",
    "redact_userinfo",
]

Remember = Callable[[str, str], None]
"""(a secret value, its placeholder name): the redactor's note of what it took out."""

# the placeholder of a URL's credentials (`https://user:password@host/`), in any string
URL_CREDENTIALS = "URL_CREDENTIALS"
# the members whose string is a file's bytes in base64 (A2A 1.0's `Part.raw`, 0.3's
# `file.bytes`): their content is redacted as a body of the part's media type
BASE64_MEMBERS = frozenset({"raw", "bytes"})
_MEDIA_TYPE_MEMBERS = ("mediaType", "mimeType", "media_type", "mime_type")
# `scheme://userinfo@`: 1 up to the userinfo, 2 the userinfo
_USERINFO = re.compile(r"""(?i)\b([a-z][a-z0-9+.-]*://)([^\s/?#@"'<>\[\]]+)@""")
_USERINFO_BYTES = re.compile(rb"""://[^\s/?#@"'<>\[\]]+@""")
# `?name=value` / `&name=value` in free text: 1 the `?` or `&`, 2 the name, 3 the value
_TEXT_PARAMETER = re.compile(r"""([?&])([^=&#?\s"'<>]+)=([^&#\s"'<>]*)""")

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


def placeholder_of(name: str) -> str:
    return "{{" + name + "}}"


def redact_userinfo(text: str, remember: Remember) -> str:
    """`text` with the credentials of each URL in it (`scheme://user:password@`) made
    `{{URL_CREDENTIALS}}`: a push config's URL, a link in a message. The credentials are
    remembered whole, decoded, the password alone, and as Basic auth would carry them."""

    def hidden(match: re.Match[str]) -> str:
        userinfo = match.group(2)
        if "{{" in userinfo:
            return match.group()
        remember(userinfo, URL_CREDENTIALS)
        remember(urllib.parse.unquote(userinfo), URL_CREDENTIALS)
        user, colon, password = userinfo.partition(":")
        if colon and password:  # (an echo of the password alone, or as Basic auth's)
            remember(urllib.parse.unquote(password), URL_CREDENTIALS)
            plain = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
            remember(base64.b64encode(plain.encode()).decode("ascii"), URL_CREDENTIALS)
        return f"{match.group(1)}{placeholder_of(URL_CREDENTIALS)}@"

    return _USERINFO.sub(hidden, text)


def may_hide_credentials(body: bytes) -> bool:
    """Whether `body` may hold a URL with credentials (`scheme://user:password@`)."""
    return b"@" in body and _USERINFO_BYTES.search(body) is not None


def redact_parameters_in_text(text: str, fields: Mapping[str, str], remember: Remember) -> str:
    """Free text with the value of each secret parameter (`fields`: lowercase name ->
    placeholder name) of a URL or query in it (`?token=...`, `&api_key=...`) made its
    placeholder: the value ends at a space, `&`, `#` or a quote."""

    def hidden(match: re.Match[str]) -> str:
        env = fields.get(urllib.parse.unquote_plus(match.group(2)).lower())
        # (a sentence's last mark after a link is the sentence's, as linkifiers read it)
        value = match.group(3).rstrip(".,;:!?)]")
        if env is None or not value or "{{" in value:
            return match.group()
        remember(urllib.parse.unquote_plus(value), env)
        remember(value, env)
        rest = match.group(3)[len(value) :]
        return f"{match.group(1)}{match.group(2)}={placeholder_of(env)}{rest}"

    return _TEXT_PARAMETER.sub(hidden, text)


def base64_bytes(value: str) -> bytes | None:
    """The bytes `value` is the base64 of, None when it is not base64."""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def base64_text(value: str) -> str | None:
    """The UTF-8 text `value` is the base64 of, None when it is not."""
    data = base64_bytes(value)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def media_type(items: Iterable[tuple[Any, Any]]) -> str | None:
    """The media type a part names beside its bytes (`mediaType`, 0.3's `mimeType`)."""
    for key, value in items:
        if key in _MEDIA_TYPE_MEMBERS and isinstance(value, str):
            return value
    return None


def is_text(content_type: str | None) -> bool:
    """Whether `content_type` is a `text/*` media type (plain text, Markdown, HTML ...)."""
    return (content_type or "").split(";", 1)[0].strip().lower().startswith("text/")
