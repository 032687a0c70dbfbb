"""Reading the `.http` format: `loads` (the grammar is in `recorder.format.httpfile`'s docstring).

Every step is linear in the text, whatever its shape: lines are split once, a body's end is
found by bisection in the numbers of the lines that can end one (found by one regular
expression search through the text), a header value is stripped by `str.strip`, and numbers
are read only when short (Python's `int()` refuses more than 4,300 digits). The shapes that
were not (a header value of many inner spaces: quadratic) are timed in
`bench/bench_parse_shapes.py`.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from recorder.errors import ParseError
from recorder.format import sse
from recorder.format.model import (
    AFTER_TAG,
    DOWNSTREAM_TAG,
    GRPC_METHOD,
    GRPC_VERSION,
    CallTag,
    Exchange,
    Headers,
    Request,
    Response,
    Transcript,
    is_event_stream,
)

__all__ = [
    "BODY_MARKER",
    "CALL_TAG",
    "DURING_TAG",
    "FORMAT_VERSION",
    "MARKER_PREFIX",
    "PUSH_TAG",
    "TRAILERS_TAG",
    "TRUNCATED_TAG",
    "after_lines",
    "loads",
]

FORMAT_VERSION = 1
MARKER_PREFIX = "# recorder-format:"
BODY_MARKER = "# recorder-body:"
TRUNCATED_TAG = "@truncated"
TRAILERS_TAG = "# @trailers"
"""The line that starts a gRPC reply's trailing metadata, after its body or frames."""
# what an SSE frame's first line starts with: a gRPC reply's body so is its stream's frames
# (ProtoJSON, an object, never starts so)
_FRAME_START = ("data:", "event:", "id:", "retry:", ":")
DURING_TAG = re.compile(r"^@during exchange (\d+) frame (\d+)$")
PUSH_TAG = re.compile(r"^@push config (\d+)$")
CALL_TAG = re.compile(
    r"^@call ([A-Za-z][A-Za-z0-9_-]*) exchange (\d+)(?: frame (\d+))?( ambiguous)?$"
)

_REQUEST_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*) (\S+)(?: (HTTP/\d+(?:\.\d+)?))?$")
_STATUS_LINE = re.compile(r"^(?:(HTTP/\d+(?:\.\d+)?) (\d{3})|(GRPC) (\d{1,2}))(?: (.*))?$")
# what a status line starts with, typo or not
_LIKE_STATUS = re.compile(r"^(?:HTTP/\d|GRPC \d)")
# a header line's name and colon; the value is the rest, stripped of spaces and tabs by
# `str.strip` (a regular expression that strips them, `[ \t]*(.*?)[ \t]*$`, is quadratic in
# the spaces inside a value: 40,000 took 4 s)
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+:")
# where a line that may end a body starts: "###" or a status line's "HTTP/<digit>" (or
# "GRPC <digit>") after a LF
_BOUNDARY = re.compile(r"\n(?=###|HTTP/\d|GRPC \d)")
# the longest number the parser reads as a number (Python's int() refuses past 4,300 digits)
_MAX_DIGITS = 18


@dataclass
class _Cursor:
    lines: list[str]
    path: str | None
    boundaries: list[int] = field(default_factory=list)
    """The numbers (0-based) of the lines that start with "###", "HTTP/<digit>" or
    "GRPC <digit>", in order:
    a body ends at one of them, found by bisection instead of a look at each line."""
    index: int = 0
    comments: list[str] = field(default_factory=list)
    body_lines: list[int] | None = None
    """When a list: each request's, then each reply's, first body line is appended."""

    @property
    def line_number(self) -> int:
        """1-based number of the current line (one past the end at the end)."""
        return self.index + 1

    def at_end(self) -> bool:
        return self.index >= len(self.lines)

    def peek(self) -> str:
        return self.lines[self.index]

    def body_end(self, *, at_status: bool) -> int:
        """The number of the first line from here on that starts with "###" (or, with
        `at_status`, is a status line); the number of lines when there is none."""
        lines, boundaries = self.lines, self.boundaries
        for position in range(bisect.bisect_left(boundaries, self.index), len(boundaries)):
            number = boundaries[position]
            line = lines[number]
            if line.startswith("###") or (at_status and _STATUS_LINE.match(line)):
                return number
        return len(lines)

    def error(self, message: str, line_number: int | None = None) -> ParseError:
        number = self.line_number if line_number is None else line_number
        return ParseError(message, path=self.path, line=number)


def loads(
    text: str,
    source: str | os.PathLike[str] | None = None,
    *,
    body_lines: list[int] | None = None,
) -> Transcript:
    """Parse `.http` text. `source` names it in errors (`source:line: message`).

    `body_lines`, when given, gets the number of the first line of each body (or stream): the
    request's, then the reply's, exchange by exchange (`recorder check` names them)."""
    path = None if source is None else os.fspath(source)
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final line break ends the last line; it starts no new one
    cursor = _Cursor(lines, path, _boundary_lines(text), body_lines=body_lines)
    version, comments = _read_preamble(cursor)
    exchanges: list[Exchange] = []
    while not cursor.at_end():
        exchanges.append(_read_exchange(cursor, exchanges))
    return Transcript(
        exchanges=tuple(exchanges), comments=tuple(comments), format_version=version, source=path
    )


def after_lines(text: str) -> list[tuple[int, str]]:
    """The `# @after NAME` tags of a file's head, as (1-based line, NAME), in order: where
    `recorder check` and the player name a tag whose file is missing. `text` parses."""
    found: list[tuple[int, str]] = []
    for number, line in enumerate(text.lstrip("\ufeff").split("\n"), start=1):
        if line.startswith("###"):
            break
        match = AFTER_TAG.match(line[1:].strip()) if line.startswith("#") else None
        if match is not None:
            found.append((number, match.group(1)))
    return found


def _boundary_lines(text: str) -> list[int]:
    """The numbers of the lines of `text` (split at LF) that start with "###",
    "HTTP/<digit>" or "GRPC <digit>": one search through the text, and a count of the LFs
    between two hits."""
    padded = "\n" + text  # (the first line starts after a LF too)
    count = padded.count
    numbers: list[int] = []
    line, last = -1, 0
    for match in _BOUNDARY.finditer(padded):
        start = match.start() + 1
        line += count("\n", last, start)
        last = start
        numbers.append(line)
    return numbers


def _read_preamble(cursor: _Cursor) -> tuple[int, list[str]]:
    version = FORMAT_VERSION
    comments: list[str] = []
    first = True
    while not cursor.at_end():
        line = cursor.peek()
        if line.startswith("###"):
            break
        raw = line[len(MARKER_PREFIX) :] if first and line.startswith(MARKER_PREFIX) else None
        if raw is not None and len(raw.split(maxsplit=1)) < 2:
            # (a marker with more than one word is a comment, as it always was)
            version = _read_version(cursor, raw.strip())
        elif line.startswith("#"):
            comment = _comment_text(cursor, line)
            if _is_tag(comment, "@after") and not AFTER_TAG.match(comment.strip()):
                raise cursor.error(
                    'a @after tag names a transcript of the same folder, such as "@after '
                    f'04-send-message.http", got {_show(comment)}'
                )
            if _is_tag(comment, "@downstream") and not DOWNSTREAM_TAG.match(comment.strip()):
                raise cursor.error(
                    'a @downstream tag reads "@downstream NAME URL", such as "@downstream '
                    f'model https://api.example/v1" (NAME: a letter, then letters, digits, '
                    f"- or _), got {_show(comment)}"
                )
            comments.append(comment)
        elif line.strip():
            if _REQUEST_LINE.match(line):
                raise cursor.error('expected "###" (and a title) before the first request')
            raise cursor.error(f'expected "###" to start an exchange, got {_show(line)}')
        first = False
        cursor.index += 1
    return version, comments


def _read_version(cursor: _Cursor, raw: str) -> int:
    if not (raw.isascii() and raw.isdigit()):
        raise cursor.error(f"the format marker needs a version number, got {_show(raw)}")
    digits = raw.lstrip("0") or "0"
    if len(digits) > _MAX_DIGITS or int(digits) != FORMAT_VERSION:
        raise cursor.error(
            f"unsupported transcript format version {_digits(digits)}: this recorder reads "
            f"version {FORMAT_VERSION} (upgrade recorder to read it)"
        )
    return FORMAT_VERSION


def _comment_text(cursor: _Cursor, line: str) -> str:
    text = line[1:]
    return _one_line(cursor, text[1:] if text.startswith(" ") else text, "a comment")


def _one_line(cursor: _Cursor, text: str, what: str) -> str:
    if "\r" in text:
        raise cursor.error(f"{what} holds a carriage return (CR) alone: lines end in LF or CRLF")
    return text


def _is_tag(comment: str, tag: str) -> bool:
    """Whether a comment's first word is `tag` (`@after`; not `@afterwards`)."""
    words = comment.split(maxsplit=1)
    return bool(words) and words[0] == tag


def _show(line: str, limit: int = 60) -> str:
    return json.dumps(line if len(line) <= limit else line[:limit] + "…", ensure_ascii=False)


def _read_exchange(cursor: _Cursor, earlier: Sequence[Exchange]) -> Exchange:
    start = cursor.line_number
    title = _one_line(cursor, cursor.peek()[3:].strip(), "a title")
    cursor.index += 1
    comments: list[str] = []
    truncated = False
    push_config: int | None = None
    call: CallTag | None = None
    during = False
    while not cursor.at_end():
        line = cursor.peek()
        if line.startswith("###"):
            break
        if line.startswith("#"):
            text = _comment_text(cursor, line)
            if text == TRUNCATED_TAG:
                truncated = True
            elif _is_tag(text, "@push"):
                if push_config is not None:
                    raise cursor.error("a second @push tag: a delivery has one push config")
                _no_call_with(cursor, call, "@push")
                push_config = _read_push(cursor, text, earlier)
            elif _is_tag(text, "@call"):
                if call is not None:
                    raise cursor.error("a second @call tag: a call was made for one exchange")
                if push_config is not None or during:
                    _no_call_with(cursor, True, "@push" if push_config is not None else "@during")
                call = _read_call(cursor, text, earlier)
            else:
                if text.strip().startswith("@during"):
                    _no_call_with(cursor, call, "@during")
                    _check_during(cursor, text, earlier)
                    during = True
                elif _is_tag(text, "@after") or _is_tag(text, "@downstream"):
                    tag = text.split(maxsplit=1)[0]
                    raise cursor.error(
                        f'a {tag} tag belongs to the file: put it in the head, after "'
                        f'{MARKER_PREFIX} {FORMAT_VERSION}" and before the first "###"'
                    )
                comments.append(text)
        elif line.strip():
            break
        cursor.index += 1
    if cursor.at_end() or cursor.peek().startswith("###"):
        raise cursor.error(
            'expected a request line such as "POST /a2a/jsonrpc HTTP/1.1" after the "###" '
            f"at line {start}"
        )
    request = _read_request(cursor)
    response = _read_response(cursor, start)
    try:
        return Exchange(
            request=request,
            response=response,
            title=title,
            comments=tuple(comments),
            truncated=truncated,
            push_config=push_config,
            call=call,
            line=start,
        )
    except ValueError as exc:
        raise cursor.error(str(exc), start) from None


def _read_push(cursor: _Cursor, tag: str, earlier: Sequence[Exchange]) -> int:
    """The N of a `@push config N` tag: an earlier exchange of the file (`recorder check`
    also fails one whose exchange registers no push config)."""
    match = PUSH_TAG.match(tag.strip())
    if match is None:
        raise cursor.error(f'a @push tag reads "@push config N", got {_show(tag)}')
    digits = match.group(1)
    number = int(digits) if len(digits) <= _MAX_DIGITS else 0
    if not 1 <= number <= len(earlier):
        shown = _digits(digits)
        raise cursor.error(
            f"@push config {shown}: no earlier exchange {shown}"
            f" (this is exchange {len(earlier) + 1})"
        )
    return number


def _no_call_with(cursor: _Cursor, call: object, other: str) -> None:
    """A call block (`call` not None) has no `other` tag (`@push`, `@during`)."""
    if call is not None:
        raise cursor.error(
            f"a call (@call) has no {other} tag: the agent sent it, at the place its @call "
            "tag's frame says"
        )


def _read_call(cursor: _Cursor, tag: str, earlier: Sequence[Exchange]) -> CallTag:
    """A `@call NAME exchange N [frame K] [ambiguous]` tag: N an earlier exchange of the file
    that the client sent (not a call, not a push delivery); K from 1 (`recorder check` also
    fails a K beyond exchange N's frames)."""
    match = CALL_TAG.match(tag.strip())
    if match is None:
        raise cursor.error(
            'a @call tag reads "@call NAME exchange N", or "@call NAME exchange N frame K" '
            f"(NAME: a letter, then letters, digits, - or _), got {_show(tag)}"
        )
    name, digits, frame_digits, ambiguous = match.groups()
    number = int(digits) if len(digits) <= _MAX_DIGITS else 0
    if not 1 <= number <= len(earlier):
        shown = _digits(digits)
        raise cursor.error(
            f"@call {name} exchange {shown}: no earlier exchange {shown}"
            f" (this is exchange {len(earlier) + 1})"
        )
    named = earlier[number - 1]
    if named.sent_by_agent:
        what = "a call (@call)" if named.call is not None else "a push delivery (@push)"
        raise cursor.error(
            f"@call {name} exchange {number}: exchange {number} is {what}, sent by the agent: "
            "a call names the exchange of the client's that the agent was answering"
        )
    frame: int | None = None
    if frame_digits is not None:
        frame = int(frame_digits) if len(frame_digits) <= _MAX_DIGITS else -1
        if frame < 1:
            raise cursor.error(
                f"@call {name} exchange {number} frame {_digits(frame_digits)}: frames count "
                "from 1 (a call made before the reply's first frame has no frame)"
            )
    return CallTag(name, number, frame, ambiguous is not None)


def _check_during(cursor: _Cursor, tag: str, earlier: Sequence[Exchange]) -> None:
    # (an earlier exchange, whatever its reply: a stream the recorder could not parse as SSE
    # is kept raw, and its file must still load)
    match = DURING_TAG.match(tag.strip())
    if match is None:
        raise cursor.error(f'a @during tag reads "@during exchange N frame K", got {_show(tag)}')
    exchange, frame = match.group(1), match.group(2)
    if len(frame) > _MAX_DIGITS:
        raise cursor.error(f"@during ... frame {_digits(frame)}: too large a frame number")
    number = int(exchange) if len(exchange) <= _MAX_DIGITS else 0
    if not 1 <= number <= len(earlier):
        shown = _digits(exchange)
        raise cursor.error(
            f"@during exchange {shown}: no earlier exchange {shown}"
            f" (this is exchange {len(earlier) + 1})"
        )
    if earlier[number - 1].call is not None:
        raise cursor.error(
            f"@during exchange {number}: exchange {number} is a call the agent made (@call), "
            "not an exchange of the client's"
        )


def _digits(digits: str) -> str:
    """A number as read, shortened when it is long (a message stays one readable line)."""
    return digits if len(digits) <= _MAX_DIGITS else f"{digits[:12]}… ({len(digits)} digits)"


def _read_request(cursor: _Cursor) -> Request:
    line_number = cursor.line_number
    line = cursor.peek()
    match = _REQUEST_LINE.match(line)
    if not match:
        raise cursor.error(
            f'expected a request line such as "POST /a2a/jsonrpc HTTP/1.1", got {_show(line)}'
        )
    method, target, version = match.groups()
    if version is None:  # "GRPC /service/Method": a gRPC call; any other method: HTTP/1.1
        version = "" if method == GRPC_METHOD else "HTTP/1.1"
    cursor.index += 1
    headers = _read_headers(cursor, stop_at_status=True)
    body_start = cursor.line_number
    end = cursor.body_end(at_status=True)
    region = cursor.lines[cursor.index : end]
    cursor.index = end
    if cursor.at_end() or cursor.peek().startswith("###"):
        for offset, text in enumerate(region):
            if _LIKE_STATUS.match(text):  # a status line with a typo: said at its own line
                raise cursor.error(
                    f"invalid status line {_show(text)}: expected the HTTP version, a 3-digit "
                    'status code and a reason, such as "HTTP/1.1 200 OK"',
                    body_start + offset,
                )
        raise cursor.error(
            'expected a status line such as "HTTP/1.1 200 OK" after the request body '
            f"(the request starts at line {line_number})"
        )
    if region and region[-1] == "":
        region.pop()  # the blank line before the status line
    body = _decode_body(cursor, region, body_start)
    if cursor.body_lines is not None:
        cursor.body_lines.append(body_start)
    try:
        return Request(
            method=method,
            target=target,
            headers=headers,
            body=body,
            http_version=version,
        )
    except ValueError as exc:
        raise cursor.error(str(exc), line_number) from None


def _read_response(cursor: _Cursor, exchange_start: int) -> Response:
    line_number = cursor.line_number
    match = _STATUS_LINE.match(cursor.peek())
    assert match is not None  # _read_request stops only at a status line
    http, http_status, grpc, grpc_status, reason = match.groups()
    version, status = (http, http_status) if http else (grpc, grpc_status)
    if http and status.startswith("0"):
        raise cursor.error(f"invalid status code {status}: expected 100 to 999")
    cursor.index += 1
    headers = _read_headers(cursor, stop_at_status=False)
    body_start = cursor.line_number
    end = cursor.body_end(at_status=False)
    region = cursor.lines[cursor.index : end]
    cursor.index = end
    followed_by_exchange = not cursor.at_end()
    if cursor.body_lines is not None:
        cursor.body_lines.append(body_start)
    if grpc:
        at = (line_number, body_start, followed_by_exchange)
        return _read_grpc_reply(cursor, at, int(status), reason, headers, region)
    content_type = headers.get("Content-Type")
    if is_event_stream(content_type) and not (region and region[0].startswith(BODY_MARKER)):
        if region and region[-1] == "":
            # the blank lines at the end, dropped in C (a pop each: 1 MB of them took 50 ms)
            text = "\n".join(region).rstrip("\n")
            region = text.split("\n") if text else []
        try:
            events = sse.parse_lines(region, require_final_blank=False)
        except sse.SseSyntaxError as exc:
            raise cursor.error(str(exc), body_start + exc.offset) from None
        except ValueError as exc:
            raise cursor.error(f"invalid SSE frame: {exc}", body_start) from None
        try:
            return Response(
                status=int(status),
                reason=reason or "",
                headers=headers,
                events=tuple(events),
                http_version=version,
            )
        except ValueError as exc:
            raise cursor.error(str(exc), line_number) from None
    if followed_by_exchange and region and region[-1] == "":
        region.pop()  # the blank line before the next "###"
    body = _decode_body(cursor, region, body_start)
    try:
        return Response(
            status=int(status),
            reason=reason or "",
            headers=headers,
            body=body,
            http_version=version,
        )
    except ValueError as exc:
        raise cursor.error(str(exc), line_number) from None


def _read_grpc_reply(
    cursor: _Cursor,
    at: tuple[int, int, bool],
    status: int,
    reason: str | None,
    headers: Headers,
    region: list[str],
) -> Response:
    """A gRPC reply from its body region (`at`: the status line's number, the body's, and
    whether an exchange follows): the body or frames, then, after a `# @trailers` line, the
    trailing metadata."""
    line_number, body_start, followed_by_exchange = at
    trailers = Headers()
    try:
        tag = region.index(TRAILERS_TAG)
    except ValueError:
        tag = -1
    if tag >= 0:
        trailers = _trailer_lines(cursor, region[tag + 1 :], body_start + tag + 1)
        region = region[:tag]
    if (tag >= 0 or followed_by_exchange) and region and region[-1] == "":
        region.pop()  # the blank line before the trailers, or before the next "###"
    events: tuple[sse.SseEvent, ...] | None = None
    body = b""
    if region and region[0].startswith(_FRAME_START):
        try:
            events = tuple(sse.parse_lines(region, require_final_blank=False))
        except sse.SseSyntaxError as exc:
            raise cursor.error(str(exc), body_start + exc.offset) from None
        except ValueError as exc:
            raise cursor.error(f"invalid stream message frame: {exc}", body_start) from None
    else:
        body = _decode_body(cursor, region, body_start)
    try:
        return Response(
            status=status,
            reason=reason or "",
            headers=headers,
            body=body,
            events=events,
            http_version=GRPC_VERSION,
            trailers=trailers,
        )
    except ValueError as exc:
        raise cursor.error(str(exc), line_number) from None


def _trailer_lines(cursor: _Cursor, region: list[str], start: int) -> Headers:
    """The trailing metadata: header lines up to the next `###` (blank lines at the end)."""
    while region and region[-1] == "":
        region = region[:-1]
    pairs: list[tuple[str, str]] = []
    for offset, line in enumerate(region):
        match = _HEADER_NAME.match(line)
        if not match:
            raise cursor.error(
                f'expected a trailer line such as "x-request-id: 7" after "{TRAILERS_TAG}", '
                f"got {_show(line)}",
                start + offset,
            )
        pairs.append((line[: match.end() - 1], line[match.end() :].strip(" \t")))
    try:
        return Headers(pairs)
    except ValueError as exc:
        raise cursor.error(str(exc), start) from None


def _read_headers(cursor: _Cursor, *, stop_at_status: bool) -> Headers:
    pairs: list[tuple[str, str]] = []
    while not cursor.at_end():
        line = cursor.peek()
        if line == "":
            cursor.index += 1
            break
        if line.startswith("###") or (stop_at_status and _STATUS_LINE.match(line)):
            break  # no blank line and no body: the next part starts right away
        if line[:1] in (" ", "\t"):
            raise cursor.error(
                "a header line may not start with whitespace (obsolete line folding is not "
                "supported): put the whole value on one line"
            )
        match = _HEADER_NAME.match(line)
        if not match:
            raise cursor.error(
                f'expected a header line such as "Content-Type: application/json" or a blank '
                f"line before the body, got {_show(line)}"
            )
        pairs.append((line[: match.end() - 1], line[match.end() :].strip(" \t")))
        cursor.index += 1
    try:
        return Headers(pairs)
    except ValueError as exc:
        raise cursor.error(str(exc)) from None


def _decode_body(cursor: _Cursor, region: Sequence[str], start: int) -> bytes:
    if not region:
        return b""
    first = region[0]
    if not first.startswith(BODY_MARKER):
        return "\n".join(region).encode()
    encoding = first[len(BODY_MARKER) :].strip()
    payload = [line.strip() for line in region[1:]]
    if encoding == "base64":
        try:
            return base64.b64decode("".join(payload), validate=True)
        except (binascii.Error, ValueError):
            raise cursor.error(
                "the base64 body has characters outside the base64 alphabet or bad padding",
                start + 1,
            ) from None
    if encoding == "escaped":
        lines = [line for line in payload if line]
        if len(lines) != 1:
            raise cursor.error(
                "an escaped body is one line holding a JSON string after its marker", start + 1
            )
        try:
            value = json.loads(lines[0])
        except ValueError as exc:
            raise cursor.error(f"the escaped body is not a JSON string: {exc}", start + 1) from None
        if not isinstance(value, str):
            raise cursor.error("the escaped body must be a JSON string", start + 1)
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:
            raise cursor.error("the escaped body holds a lone surrogate", start + 1) from None
    raise cursor.error(
        f'unknown body encoding {encoding!r}: expected "{BODY_MARKER} base64" or '
        f'"{BODY_MARKER} escaped"',
        start,
    )
