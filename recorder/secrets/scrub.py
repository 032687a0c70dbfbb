"""Secrets seen while redacting, scrubbed from whole texts (pure; `recorder.secrets.redact` uses
and re-exports them): `placeholder` and its name, `scrub_text` (every occurrence of each
secret value in a transcript's text: inside longer text from 6 characters, where it is a
whole value whatever its length), `scrub_bytes` (a body that is no UTF-8 text),
`with_spellings` (each value as JSON writes it escaped too), `scrub_response`.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import replace

from recorder.format.model import Headers, Response

__all__ = [
    "placeholder",
    "placeholder_name",
    "scrub_bytes",
    "scrub_response",
    "scrub_text",
    "with_spellings",
]

# secrets shorter than this are not scrubbed from free text: they would match at random (a
# secret of any length is scrubbed where it is a whole value: `_scrub_whole_values`)
_MIN_SCRUB_LENGTH = 6
# where a value is whole in a transcript: a header line's value, a query or form parameter's
_HEADER_LINE = r"(?m)^([!#$%&'*+.^_`|~0-9A-Za-z-]+:[ \t]*)({})(?=[ \t]*\r?$)"
_PARAMETER = r"""(?m)((?:^|[?&])[^=&#\s"?]*=)({})(?=[&#\s"]|$)"""


def placeholder_name(name: str) -> str:
    """`x-api-key` -> `X_API_KEY`: an environment variable name for a header or field."""
    cleaned = re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_").upper()
    if not cleaned:
        return "SECRET"
    return f"_{cleaned}" if cleaned[0].isdigit() else cleaned


def placeholder(name: str) -> str:
    return "{{" + name + "}}"


def scrub_text(text: str, secrets: Mapping[str, str]) -> str:
    """Replace every occurrence of each secret value (long enough to be one) by its placeholder,
    in each spelling it may have in a transcript (`with_spellings`).

    Longer secrets first, so that a secret containing another is replaced whole. A secret of
    any length is replaced where it is a whole value (`_scrub_whole_values`): `text` itself, a
    JSON string, a header line's value, a query or form parameter's value.
    """
    if not secrets:
        return text
    spelled = with_spellings(secrets)
    if text in spelled:
        return placeholder(spelled[text])
    short: dict[str, str] = {}
    for value in sorted(spelled, key=len, reverse=True):
        if len(value) >= _MIN_SCRUB_LENGTH:
            if value in text:
                text = text.replace(value, placeholder(spelled[value]))
        elif value.strip():
            short[value] = spelled[value]
    if short:
        text = _scrub_whole_values(text, short)
    return text


def _scrub_whole_values(text: str, secrets: Mapping[str, str]) -> str:
    """The `secrets` (too short to be looked for inside text) where each is a whole value: a
    JSON string (`"abcde"`), a header line's value (`X-Echo: abcde`), a query or form
    parameter's value (`?echo=abcde&`, also percent-encoded)."""
    ordered = sorted(secrets, key=len, reverse=True)
    alternatives = "|".join(map(re.escape, ordered))
    if any(f'"{value}"' in text for value in ordered):

        def in_json(match: re.Match[str]) -> str:
            return f'"{placeholder(secrets[match.group(1)])}"'

        text = re.sub(rf'(?<!\\)"({alternatives})"', in_json, text)

    def after_prefix(match: re.Match[str]) -> str:
        return match.group(1) + placeholder(names[match.group(2)])

    names = dict(secrets)
    text = re.sub(_HEADER_LINE.format(alternatives), after_prefix, text)
    for value, name in secrets.items():
        for encoded in (urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)):
            names.setdefault(encoded, name)
    encoded_alternatives = "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
    return re.sub(_PARAMETER.format(encoded_alternatives), after_prefix, text)


def scrub_bytes(data: bytes, secrets: Mapping[str, str]) -> bytes:
    """`scrub_text` on bytes that are no UTF-8 text: each secret's UTF-8 and Latin-1 bytes."""
    spelled = with_spellings(secrets)
    for value in sorted(spelled, key=len, reverse=True):
        if len(value) < _MIN_SCRUB_LENGTH:
            continue
        for encoding in ("utf-8", "latin-1"):
            try:
                needle = value.encode(encoding)
            except UnicodeEncodeError:
                continue
            if needle in data:
                data = data.replace(needle, placeholder(spelled[value]).encode())
    return data


def with_spellings(secrets: Mapping[str, str]) -> dict[str, str]:
    """`secrets` (value -> placeholder name) with each value also as JSON writes it escaped
    (a line break, a quote, a non-ASCII character) and as its UTF-8 bytes read as Latin-1 (how
    a header echoed back was read before `model.header_text`, and where such text recurs)."""
    spelled = dict(secrets)
    for value, name in secrets.items():
        for other in (
            json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1],
            value.encode("utf-8", "surrogateescape").decode("latin-1"),
        ):
            spelled.setdefault(other, name)
    return spelled


def scrub_response(response: Response, secrets: Mapping[str, str]) -> Response:
    """`scrub_text` on a reply's header values, body text and frames: what the player's
    --update does to the replies it rewrites (and to nothing else in the file)."""
    if not secrets:
        return response
    headers = Headers([(name, scrub_text(value, secrets)) for name, value in response.headers])
    if response.events is not None:
        events = tuple(
            replace(
                event,
                data=None if event.data is None else scrub_text(event.data, secrets),
                id=None if event.id is None else scrub_text(event.id, secrets),
            )
            for event in response.events
        )
        return response.with_content(headers, events=events)
    body = response.body
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        pass  # bytes that are no text: no text secret in them
    else:
        body = scrub_text(text, secrets).encode()
    return response.with_content(headers, body=body)
