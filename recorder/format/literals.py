"""`{{NAME}}` placeholders and literal `{{` in a transcript's text (pure).

A transcript's `{{NAME}}` (`PLACEHOLDER`: a name in double braces, spaces inside allowed) is
a variable: the redactor writes one where a secret was, the player fills it from the
environment, the exports turn it into their own variables. Text a client or an agent sent
that reads as one (a template in a reviewed diff: `Hello {{user_name}}`) is written escaped
where it stands, so that it is never read as a variable:

- in JSON text (a JSON body, an event's JSON data, a gRPC message), its first brace as the
  JSON escape `\\u007b`: `"Hello \\u007b{user_name}}"`. Every JSON reader reads the same
  string (the agent the player sends it to, the player's comparison, the stand-in's matching),
  and no `.http` client (JetBrains HTTP Client, VS Code REST Client, httpyac) sees `{{`;
- anywhere else (a header value, the request target, a body or event data that is no JSON,
  an event's id), as httpyac escapes one: `Hello \\{\\{user_name\\}\\}` (`literal_text`
  reads it back before the text is sent, served or shown). A text that itself holds
  `\\{\\{NAME\\}\\}` outside JSON reads back as `{{NAME}}`: that spelling is the escape.

A reader that decodes the text (a JSON string, `literal_text`) can no longer tell a literal
from a placeholder: `template` and `json_templates` read the placeholders where they stand, in
the text as written, and give each such text as a `Template` (the stand-in matches a recorded
request's placeholders, and only those, as any value).

Only what would read as a placeholder is escaped (`{{ x y }}` or `{{1}}` is no placeholder,
and stays as it came). The recorder escapes (`recorder.secrets.redact.Redactor`) before it writes
its own placeholders, which stay placeholders: `keep` names them where a body is written
anew after its secrets were taken out. A literal spelled as one of those in the same body
(`{{TOKEN}}` beside a redacted `token` member) reads as that placeholder.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass

from recorder.format.model import Exchange, Headers, Request, Response, SseEvent, is_json_media_type

__all__ = [
    "PLACEHOLDER",
    "Template",
    "as_sent",
    "body_as_sent",
    "escape_body",
    "escape_data",
    "escape_event",
    "escape_json_text",
    "escape_text",
    "has_escaped",
    "headers_as_sent",
    "json_templates",
    "literal_text",
    "rewrite",
    "template",
]

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
"""`{{NAME}}` (spaces inside the braces allowed), group 1 the name: what the redactor
writes, what the player fills from the environment and `recorder export` turns into a
variable of its dialect."""

# a literal `{{NAME}}` escaped outside JSON: `\{\{NAME\}\}` (group 1: what is inside)
_ESCAPED = re.compile(r"\\\{\\\{(\s*[A-Za-z_][A-Za-z0-9_]*\s*)\\\}\\\}")
_NOTHING: frozenset[str] = frozenset()
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # (a string literal, escapes included)


def escape_text(text: str, keep: Container[str] = _NOTHING) -> str:
    """`text` (no JSON) with each `{{NAME}}` whose NAME is not in `keep` written
    `\\{\\{NAME\\}\\}`."""
    if "{{" not in text:
        return text

    def escape(match: re.Match[str]) -> str:
        if match.group(1) in keep:
            return match.group()
        inside = match.group()[2:-2]
        return "\\{\\{" + inside + "\\}\\}"

    escaped = PLACEHOLDER.sub(escape, text)
    return text if escaped == text else escaped


def escape_json_text(text: str, keep: Container[str] = _NOTHING) -> str:
    """JSON text with the first brace of each `{{NAME}}` whose NAME is not in `keep` written
    `\\u007b` (in JSON text `{{` only stands inside a string, where the escape is the same
    character)."""
    if "{{" not in text:
        return text

    def escape(match: re.Match[str]) -> str:
        if match.group(1) in keep:
            return match.group()
        return "\\u007b" + match.group()[1:]

    escaped = PLACEHOLDER.sub(escape, text)
    return text if escaped == text else escaped


def escape_body(body: bytes, content_type: str | None) -> bytes:
    """A body's literal `{{NAME}}`s escaped (`recorder.format.literals`): as JSON where the model
    reads it as JSON (a JSON media type, and JSON text), as text where it is other UTF-8 text;
    bytes that are no UTF-8 are kept (no placeholder is read or filled there)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return body
    if is_json_media_type(content_type) and _is_json(text):
        escaped = escape_json_text(text)
    else:
        escaped = escape_text(text)
    return body if escaped is text else escaped.encode()


def escape_data(data: str) -> str:
    """An event's data with its literal `{{NAME}}`s escaped: as JSON when it is JSON."""
    return escape_json_text(data) if _is_json(data) else escape_text(data)


def escape_event(event: SseEvent) -> SseEvent:
    """An event with the literal `{{NAME}}`s of its data and id escaped."""
    if (event.data and "{{" in event.data) or (event.id and "{{" in event.id):
        data = None if event.data is None else escape_data(event.data)
        identifier = None if event.id is None else escape_text(event.id)
        return dataclasses.replace(event, data=data, id=identifier)
    return event


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def has_escaped(text: str) -> bool:
    """Whether `text` (no JSON) holds an escaped literal (`\\{\\{NAME\\}\\}`)."""
    return "\\{\\{" in text and _ESCAPED.search(text) is not None


def literal_text(text: str) -> str:
    """`text` (no JSON) as it was sent: each `\\{\\{NAME\\}\\}` as `{{NAME}}`."""
    if "\\{\\{" not in text:
        return text
    return _ESCAPED.sub(lambda m: "{{" + m.group(1) + "}}", text)


@dataclass(frozen=True)
class Template:
    """Recorded text that holds placeholders: what was sent between them (`pieces`, one more
    than `placeholders`, literals read back) and each placeholder as written (`{{A2A_TOKEN}}`).
    `value` is the text as a reader of it sees it (the decoded JSON string, the header as
    sent); `pattern` matches the texts it stands for: each placeholder any text."""

    pieces: tuple[str, ...]
    placeholders: tuple[str, ...]

    @property
    def value(self) -> str:
        parts = [self.pieces[0]]
        for placeholder, piece in zip(self.placeholders, self.pieces[1:], strict=True):
            parts.extend((placeholder, piece))
        return "".join(parts)

    def filled(self, values: Mapping[str, str]) -> str:
        """The text with each placeholder that `values` holds (by `{{NAME}}`) as its value."""
        parts = [self.pieces[0]]
        for placeholder, piece in zip(self.placeholders, self.pieces[1:], strict=True):
            parts.extend((values.get(placeholder, placeholder), piece))
        return "".join(parts)

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        """Each piece as it is, each placeholder `(.+?)` (group N: the Nth placeholder's)."""
        parts = [re.escape(self.pieces[0])]
        for piece in self.pieces[1:]:
            parts.extend(("(.+?)", re.escape(piece)))
        return re.compile("".join(parts), re.DOTALL)


def template(text: str, sent: Callable[[str], str] = literal_text) -> Template | None:
    """`text` as written in a transcript (no JSON: a header value, a target piece, a body) as
    a `Template`, each piece between its placeholders read back by `sent`; None when it holds
    no placeholder (an escaped literal is none)."""
    if "{{" not in text:
        return None
    pieces: list[str] = []
    placeholders: list[str] = []
    position = 0
    for match in PLACEHOLDER.finditer(text):
        pieces.append(sent(text[position : match.start()]))
        placeholders.append(match.group())
        position = match.end()
    if not placeholders:
        return None
    pieces.append(sent(text[position:]))
    return Template(tuple(pieces), tuple(placeholders))


def json_templates(text: str) -> dict[str, Template]:
    """The strings of JSON text that hold placeholders, by their value: a literal `{{NAME}}`
    (written `\\u007b{NAME}}`) is the same string once decoded, and is none."""
    found: dict[str, Template] = {}
    if "{{" not in text:
        return found
    for token in _JSON_STRING.findall(text):
        if "{{" not in token:
            continue
        # (a piece between placeholders is a string's text still: no escape is cut, none
        # holds a brace)
        held = template(token[1:-1], _json_piece)
        if held is not None:
            found.setdefault(held.value, held)
    return found


def _json_piece(piece: str) -> str:
    if "\\" not in piece:
        return piece
    try:
        value: str = json.loads('"' + piece + '"')
    except ValueError:  # (no JSON string: kept as written)
        return piece
    return value


def rewrite(text: str, literal: Callable[[str], str], variable: Callable[[str], str]) -> str:
    """`text` with each piece between placeholders written by `literal` (it still holds its
    escapes: `literal_text` gives what was sent) and each placeholder's NAME by `variable`:
    how an export writes transcript text in its dialect."""
    parts: list[str] = []
    position = 0
    for match in PLACEHOLDER.finditer(text):
        parts.append(literal(text[position : match.start()]))
        parts.append(variable(match.group(1)))
        position = match.end()
    parts.append(literal(text[position:]))
    return "".join(parts)


def as_sent(exchange: Exchange) -> Exchange:
    """`exchange` with each literal escaped outside JSON (`\\{\\{NAME\\}\\}`) as it was
    sent (`{{NAME}}`): in the target, header values and trailers, a body that is no JSON,
    and event data that is no JSON and ids (JSON text reads the same either way). What a
    reader is shown
    (`recorder render`, `recorder docs`)."""
    request, response = exchange.request, exchange.response
    sent_request = _request_as_sent(request)
    sent_response = _response_as_sent(response)
    if sent_request is request and sent_response is response:
        return exchange
    return dataclasses.replace(exchange, request=sent_request, response=sent_response)


def headers_as_sent(headers: Headers) -> Headers:
    """Header values (or trailers) with each literal escaped (`\\{\\{NAME\\}\\}`) as it
    was sent (`{{NAME}}`)."""
    if not any("\\{\\{" in value for _, value in headers):
        return headers
    return Headers([(name, literal_text(value)) for name, value in headers])


def body_as_sent(body: bytes, is_json: bool) -> bytes:
    """A body (`is_json`: read as JSON by the model) as it was sent: one that is no JSON with
    its literals (`\\{\\{NAME\\}\\}`) read back (a JSON body's are the same strings once
    read)."""
    if is_json or b"\\{\\{" not in body:
        return body
    try:
        return literal_text(body.decode("utf-8")).encode()
    except UnicodeDecodeError:
        return body


def _request_as_sent(request: Request) -> Request:
    target = literal_text(request.target)
    headers = headers_as_sent(request.headers)
    body = body_as_sent(request.body, request.json is not None)
    if target is request.target and headers is request.headers and body is request.body:
        return request
    return dataclasses.replace(request, target=target, headers=headers, body=body)


def _response_as_sent(response: Response) -> Response:
    trailers = headers_as_sent(response.trailers)
    if trailers is not response.trailers:
        response = dataclasses.replace(response, trailers=trailers)
    headers = headers_as_sent(response.headers)
    if response.events is not None:
        events = tuple(
            dataclasses.replace(
                event,
                data=event.data if event.data is None else _data_as_sent(event.data),
                id=event.id if event.id is None else literal_text(event.id),
            )
            for event in response.events
        )
        if headers is response.headers and events == response.events:
            return response
        return response.with_content(headers, events=events)
    body = body_as_sent(response.body, response.json is not None)
    if headers is response.headers and body is response.body:
        return response
    return response.with_content(headers, body=body)


def _data_as_sent(data: str) -> str:
    if "\\{\\{" not in data:
        return data
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return literal_text(data)
    return data
