"""The recorded text of a common exchange straight from its bytes: the block that
`dumps_exchange(Builder.exchange(...))` writes, made without the model in between.

The common exchange is a buffered reply (no event stream) to a request of a common method,
tagged with nothing (no `@during`), with no secret in its query or its bodies (the redactor's
own checks say so, and take nothing out; a JSON body's members are looked at in the one walk
of `jsonbody.plain_json`, which leaves to the general path any body with a secret member, a
`url` member (a push config's may hold a secret path segment), or a string that may hide a
secret: JSON text, a URL with a query), and with header names and values the model takes as
they came. Secret headers are made placeholders by the call's redactor, as `Redactor.redact_headers`
does (their values remembered for the scrub, in the same order). Its block is made of the
parts the model and `recorder.format.httpfile` make, by the same functions: header names in
conventional case (`naming.header_case`), values stripped, the canonical JSON of a JSON body
(`jsonbody.plain_json`, else `jsonbody._canonical_json`), a body's lines
(`httpfile._body_lines`), joined as `dumps_exchange` joins them. Any other exchange gives
None, and the caller takes the general path, which also raises the model's errors for what
it refuses.

What it saves: the `Headers`, `Request`, `Response` and `Exchange` objects and their checks,
the redactor's text pre-check and a second walk of each JSON body, and the lines of headers
seen before (a header's line is remembered by its raw bytes: the same few come in every
exchange; a secret one's never). tests/record/test_direct.py holds the block, the operation,
the title and the secrets seen and sent to those of the general path, on tricky exchanges and
hypothesis's.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from recorder.format.httpfile import _body_lines
from recorder.format.jsonbody import NOT_JSON, _canonical_json, plain_json
from recorder.format.model import (
    _COMMON_METHODS,
    _REQUEST_TARGET,
    _TOKEN,
    header_text,
    is_event_stream,
    is_json_media_type,
)
from recorder.record.naming import header_case, operation_of
from recorder.secrets.redact import Redactor

__all__ = ["Direct"]

# a header field's line, and its value when the field is Content-Type
_Line = tuple[str, str | None]
# a reply's Content-Length: left out of the recording
_SKIP: _Line = ("", None)
# remembered lines at most (Date changes every second, a request id with every request)
_MAX_LINES = 4096


class _Uncommon(Exception):
    """A header field the general path takes."""


class Direct:
    """Blocks of common exchanges, for one proxy (one host header, one set of secret names)."""

    def __init__(self, host_header: str, redactor: Redactor) -> None:
        self._secret = redactor.headers  # lowercase names; the copies share the mapping
        # the lines of the fields seen before, by their raw bytes: a request's, a reply's
        self._request_lines: dict[tuple[bytes, bytes], _Line] = {}
        self._reply_lines: dict[tuple[bytes, bytes], _Line] = {}
        # member names of JSON bodies found to be no secret field's (`jsonbody.plain_json`)
        self._field_names = redactor.member_names
        self._known: set[str] = set()
        host = _field("Host", host_header)
        self._host = None if host is None or "host" in self._secret else _line_of(*host)[0]

    def block(
        self,
        *,
        method: str,
        target: str,
        headers: tuple[tuple[bytes, bytes], ...],
        body: bytes,
        description: str | None,
        redactor: Redactor,
        status: int,
        reason: str,
        kept: list[tuple[bytes, bytes]],
        reply: bytes,
        parsed: Any = None,
    ) -> tuple[str, str, str, dict[str, str] | None] | None:
        """(the block, the operation, the title, the secrets the request sent or None) of an
        exchange, or None when it is not a common one. `redactor` is the call's own (nothing
        seen yet: it remembers the secret header values it takes out, as on the general path);
        `kept` are the reply's header pairs as forwarded (Content-Length is left out, as the
        general path does); `parsed`: `reply` as `orjson.loads` reads it, when it was read
        already (None: read here)."""
        secret = redactor.headers
        if secret is not self._secret and secret != self._secret:
            return None  # (another redactor's names: the remembered lines are not for them)
        if redactor.seen or self._host is None:
            return None
        if method not in _COMMON_METHODS or not 100 <= status <= 999:
            return None
        if _REQUEST_TARGET.match(target) is None or "{{" in target:
            return None  # (a literal `{{NAME}}`: escaped by the redactor)
        if "\r" in reason or "\n" in reason or "\0" in reason:
            return None
        # the request
        parts = [self._host]
        try:
            content_type = self._fields(headers, parts, self._request_lines, redactor)
        except _Uncommon:
            return None
        if "?" in target and redactor.redact_target(target) is not target:
            return None
        json_body = is_json_media_type(content_type)
        plain = self._plain(body, redactor) if json_body else None
        if plain is not None:
            text, value = plain
            request_body = [text]
        else:
            seen = len(redactor.seen)  # (secret header values)
            if redactor.redact_body(body, content_type) is not body or len(redactor.seen) != seen:
                return None
            value = None
            if json_body and body:
                body, value, _ = _canonical_json(body)
                if value is NOT_JSON:
                    return None  # (the model then reads it with `json`, which reads UTF-16 too)
            request_body = _body_lines(body, raw_stream=False)
        sent = dict(redactor.seen) if redactor.seen else None
        request_head = "\n".join(parts)
        operation = operation_of(
            method, target.partition("?")[0], value if method == "POST" and json_body else None
        )
        title = operation
        if description:
            text = " ".join(description.split())
            if text:
                title = f"{operation}: {text}"
        if "\r" in title or "\n" in title:
            return None
        title = title.strip()
        # the reply
        parts.clear()
        try:
            reply_type = self._fields(kept, parts, self._reply_lines, redactor)
        except _Uncommon:
            return None
        if is_event_stream(reply_type):
            return None
        plain = self._plain(reply, redactor, parsed) if is_json_media_type(reply_type) else None
        if plain is not None:
            reply_body = [plain[0]]
        else:
            seen = len(redactor.seen)
            if redactor.redact_body(reply, reply_type) is not reply or len(redactor.seen) != seen:
                return None
            if is_json_media_type(reply_type):
                reply = _canonical_json(reply)[0]
            reply_body = _body_lines(reply, raw_stream=False)
        reason = reason.strip()
        status_line = f"HTTP/1.1 {status} {reason}" if reason else f"HTTP/1.1 {status}"
        # as `dumps_exchange` joins the lines
        out = [f"### {title}" if title else "###", f"{method} {target} HTTP/1.1", request_head]
        out.append("")
        if request_body:
            out.extend(request_body)
            out.append("")
        out.append(status_line)
        if parts:
            out.append("\n".join(parts))
        if reply_body:
            out.append("")
            out.extend(reply_body)
        out.append("")
        return "\n".join(out), operation, title, sent

    def _plain(self, body: bytes, redactor: Redactor, parsed: Any = None) -> tuple[str, Any] | None:
        """(the canonical text of a JSON body, its value) when it is the common one
        (`jsonbody.plain_json`: no float, no member named as a secret field), None otherwise.

        Such a body is one the redactor leaves as it is (`Redactor.redact_body`: it changes only
        members so named, and bytes that are no UTF-8, which orjson does not read), without its
        pre-check on the text; and its text needs no check to be verbatim. Bodies nested deep
        enough for Python's `json` to give up (the redactor then reads them as text) are left out
        (deeper than half the recursion limit).
        """
        if redactor.may_hide_credentials(body):
            return None  # (a URL's credentials in a string: the redactor takes them out)
        names = redactor.member_names
        known = self._known if names is self._field_names else None
        if known is not None and len(known) > _MAX_LINES:
            known.clear()
        found = plain_json(body, names, sys.getrecursionlimit() // 2, known, parsed)
        if found is None:
            return None
        return found[0].decode(), found[1]

    def _fields(
        self,
        pairs: Sequence[tuple[bytes, bytes]],
        lines: list[str],
        remembered: dict[tuple[bytes, bytes], _Line],
        redactor: Redactor,
    ) -> str | None:
        """Append the lines of header `pairs` to `lines` (a reply's Content-Length left out,
        `remembered` being the reply's; a secret one's value made its placeholder by
        `redactor`, as `Redactor.redact_headers` does); returns the first Content-Type value
        (None when there is none). Raises `_Uncommon` for a field the model refuses."""
        content_type: str | None = None
        found = False
        for pair in pairs:
            line = remembered.get(pair)
            if line is None:
                name, value = pair
                if remembered is self._reply_lines and name.lower() == b"content-length":
                    line = _SKIP
                else:
                    field = _field(header_case(name.decode("latin-1")), header_text(value))
                    if field is None:
                        raise _Uncommon
                    folded = field[0].lower()
                    if folded in self._secret or (
                        folded.endswith("-bin") and folded[:-4] in self._secret
                    ):  # (a secret header, or the `-bin` twin of one: `redact.header_env`)
                        if folded == "content-type":
                            raise _Uncommon  # (its placeholder would be the media type)
                        # made each time, never remembered: a secret stays out of memory
                        cased, taken = field
                        placed = redactor._header_value(cased, taken).strip()
                        lines.append(_line_of(cased, placed)[0])
                        continue
                    if "{{" in field[1]:
                        raise _Uncommon  # (a literal that reads as a placeholder: escaped)
                    line = _line_of(*field)
                if len(remembered) >= _MAX_LINES:
                    remembered.clear()
                remembered[pair] = line
            if line is _SKIP:
                continue
            lines.append(line[0])
            if line[1] is not None and not found:
                content_type, found = line[1], True
        return content_type


def _field(name: str, value: str) -> tuple[str, str] | None:
    """A header field as the model keeps it (the value stripped), None when it refuses it."""
    value = value.strip()
    if _TOKEN.match(name) is None or name.startswith("#"):
        return None
    if "\r" in value or "\n" in value or "\0" in value:
        return None
    return name, value


def _line_of(name: str, value: str) -> _Line:
    """The `.http` line of a field, with the value when the field is Content-Type."""
    line = f"{name}: {value}" if value else f"{name}:"
    return line, value if name.lower() == "content-type" else None
