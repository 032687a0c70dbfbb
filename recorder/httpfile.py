"""The `.http` transcript format: `loads`, `dumps`, `load`, `dump`.

Grammar (version 1). Lines end in LF (CRLF and a missing final line break are read too); a
line is split only at LF, never at other Unicode line separators.

    file          = [marker] *(comment / blank) *exchange
    marker        = "# recorder-format: " 1*DIGIT                  ; first line; absent = 1
    exchange      = "###" [SP title] LF
                    *(comment / blank)                             ; tags: see below
                    request-line *header-line blank
                    request-body
                    status-line *header-line blank
                    response-body
    comment       = "#" [SP text]                                  ; not "###"
    request-line  = method SP target [SP http-version]             ; "POST /a2a/jsonrpc HTTP/1.1"
    status-line   = http-version SP 3DIGIT [SP reason]             ; "HTTP/1.1 200 OK"
    header-line   = field-name ":" [SP field-value]                ; no obs-fold
    http-version  = "HTTP/" DIGIT ["." DIGIT]

Bodies. The request body is every line after the blank line that ends the request headers, up
to the status line; the response body is every line up to the next `###` line or the end of
the file. One blank line before the status line, or before the next `###`, separates and is not
part of the body. A body is written in one of these forms:

    verbatim      its UTF-8 text, line by line. JSON bodies are pretty-printed (2 spaces, key
                  order kept). Used when the text has no CR, no control character but TAB, no
                  line starting with "###", no line that looks like a status line, and does not
                  start with "# recorder-body:".
    SSE           for a response with Content-Type text/event-stream: its frames, each frame's
                  fields ("data: …", "event: …", "id: …", "retry: …", ": comment") then a blank
                  line. `data:` JSON stays on one line as on the wire.
    escaped       "# recorder-body: escaped" then one line holding the text as a JSON string
                  (any UTF-8 text that cannot be verbatim, and raw event streams).
    base64        "# recorder-body: base64" then base64 lines of 76 characters (bytes that are
                  not UTF-8 text).

Tags are comments of an exchange that start with "@": "# @truncated" (the reply was cut off
while recording: `Exchange.truncated`), and "# @during exchange N frame K" (this request was
sent while the event stream of exchange N, an earlier one, was still open, once its frame K
had arrived: a CancelTask sent during a SubscribeToTask stream). A `@during` tag that does not
read so, or names no earlier exchange, is a parse error.

Canonical form (what `dumps` writes, what `recorder check --canonical` expects): the marker,
the file comments, a blank line, then the exchanges separated by one blank line, every line
ending in LF. `dumps(loads(s)) == s` for every canonical `s`, and `loads(dumps(t)) == t` for
every transcript `t`.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import gc
import itertools
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from recorder import sse
from recorder.errors import ParseError
from recorder.model import (
    Exchange,
    Headers,
    Request,
    Response,
    Transcript,
    is_event_stream,
)

__all__ = ["FORMAT_VERSION", "dump", "dumps", "load", "loads"]

FORMAT_VERSION = 1
MARKER_PREFIX = "# recorder-format:"
BODY_MARKER = "# recorder-body:"
TRUNCATED_TAG = "@truncated"
DURING_TAG = re.compile(r"^@during exchange (\d+) frame (\d+)$")

_MARKER = re.compile(r"^# recorder-format:\s*(\S*)\s*$")
_REQUEST_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*) (\S+)(?: (HTTP/\d+(?:\.\d+)?))?$")
_STATUS_LINE = re.compile(r"^(HTTP/\d+(?:\.\d+)?) (\d{3})(?: (.*))?$")
# a body line that would end the body: "###" (next exchange) or a status line
_AMBIGUOUS_LINE = re.compile(r"^(?:###|HTTP/\d)", re.MULTILINE)
_SAFE_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n"
_HEADER_LINE = re.compile(r"^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*$")
# control characters (TAB and LF excepted) and the characters editors take as line breaks
_UNSAFE_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_BASE64_WIDTH = 76


# --------------------------------------------------------------------------- writing


def dumps(transcript: Transcript) -> str:
    """The canonical `.http` text of a transcript."""
    head = [f"{MARKER_PREFIX} {transcript.format_version}"]
    head.extend(_comment(c) for c in transcript.comments)
    blocks = ["\n".join(head) + "\n"]
    blocks.extend(map(dumps_exchange, transcript.exchanges))
    return "\n".join(blocks)


def dumps_exchange(exchange: Exchange) -> str:
    """The text of one exchange as `dumps` writes it in a file: `dumps` joins the file's head
    and these blocks with blank lines."""
    lines = _exchange_lines(exchange)
    lines.append("")  # the final line break, in the join: `+ "\n"` would copy the text again
    return "\n".join(lines)


def splice(text: str, transcript: Transcript, replaced: Mapping[int, Exchange]) -> str | None:
    """`text` (the file `transcript` was read from) with the exchanges numbered in `replaced`
    (0-based) written anew, every other line kept as it was: an update shows in `git diff` as
    the exchanges it changed, not as a file rewritten in the canonical layout. The new blocks
    take the file's line ending (CRLF or LF). None when the text and the transcript do not
    agree (the file changed since it was read): the caller writes `dumps` instead."""
    starts = [exchange.line or 0 for exchange in transcript.exchanges]
    if not replaced or 0 in starts:
        return None  # a transcript not read from a file
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    lines = text[len(bom) :].split("\n")
    crlf = lines[0].endswith("\r")
    for index in sorted(replaced, reverse=True):
        begin = starts[index] - 1
        end = starts[index + 1] - 1 if index + 1 < len(starts) else len(lines)
        if not (0 <= begin < end <= len(lines)) or not lines[begin].startswith("###"):
            return None
        # the block and one blank line: before the next "###", or the file's final line break
        block = [*dumps_exchange(replaced[index]).split("\n")[:-1], ""]
        if crlf:
            block = [line + "\r" for line in block]
            if end == len(lines):
                block[-1] = ""  # after the final line break: nothing
        lines[begin:end] = block
    new = bom + "\n".join(lines)
    expected = tuple(replaced.get(i, e) for i, e in enumerate(transcript.exchanges))
    try:
        if loads(new).exchanges != expected:
            return None
    except ParseError:
        return None
    return new


def _comment(text: str) -> str:
    return f"# {text}" if text else "#"


def _exchange_lines(exchange: Exchange) -> list[str]:
    request, response = exchange.request, exchange.response
    lines = [f"### {exchange.title}" if exchange.title else "###"]
    lines.extend(_comment(c) for c in exchange.comments)
    if exchange.truncated:
        lines.append(_comment(TRUNCATED_TAG))
    lines.append(f"{request.method} {request.target} {request.http_version}")
    lines.extend(_header_line(n, v) for n, v in request.headers)
    lines.append("")
    request_body = _body_lines(request.body, raw_stream=False)
    if request_body:
        lines.extend(request_body)
        lines.append("")
    status = f"{response.http_version} {response.status}"
    lines.append(f"{status} {response.reason}" if response.reason else status)
    lines.extend(_header_line(n, v) for n, v in response.headers)
    if response.events is not None:
        body = [response.body.decode().rstrip("\n")] if response.events else []
    else:
        body = _body_lines(response.body, raw_stream=is_event_stream(response.content_type))
    if body:  # an empty response body needs no blank line: "###" or the end follows
        lines.append("")
        lines.extend(body)
    return lines


def _header_line(name: str, value: str) -> str:
    return f"{name}: {value}" if value else f"{name}:"


def _body_lines(body: bytes, *, raw_stream: bool) -> list[str]:
    """The lines that stand for `body` ([] for none); a body's lines are one item holding its
    line breaks (a list of a million short strings would cost twice the text)."""
    if not body:
        return []
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return [f"{BODY_MARKER} base64", _base64_text(body)]
    if raw_stream or not _verbatim_safe(text):
        return [f"{BODY_MARKER} escaped", json.dumps(text, ensure_ascii=False)]
    return [text]


def _base64_text(body: bytes) -> str:
    """`body` as base64 lines of 76 characters joined by LF, made in blocks of about 1 MiB
    (`base64.encodebytes` holds a bytes object per line: 1.4 times the text on top)."""
    width, block, size = _BASE64_WIDTH, _BASE64_WIDTH * 3 // 4 * 16384, -(-len(body) // 3) * 4
    encoded = bytearray(size + max(-(-size // width) - 1, 0))  # made once, at its size
    view, at = memoryview(body), 0
    for start in range(0, len(body), block):
        text = binascii.b2a_base64(view[start : start + block], newline=False)
        part = b"\n".join([text[i : i + width] for i in range(0, len(text), width)])
        encoded[at : at + len(part)] = part
        at += len(part)
        if at < len(encoded):
            encoded[at], at = 0x0A, at + 1
    return encoded.decode("ascii")


def _verbatim_safe(text: str) -> bool:
    if text.startswith(BODY_MARKER) or _has_ambiguous_line(text):
        return False
    if text.isascii():
        # C-speed scan: delete every safe byte; anything left is a control character
        return not text.encode("ascii").translate(None, _SAFE_ASCII)
    return _UNSAFE_CHARS.search(text) is None


def _has_ambiguous_line(text: str) -> bool:
    """Whether a line of `text` starts with "###" or a status line's "HTTP/<digit>". The `in`
    tests are memory searches; `_AMBIGUOUS_LINE` (a MULTILINE `^`) tries every position of
    the text (about 5 ms per MiB), so it runs only when "HTTP/" is there at all."""
    if text.startswith("###") or "\n###" in text:
        return True
    return "HTTP/" in text and _AMBIGUOUS_LINE.search(text) is not None


# --------------------------------------------------------------------------- reading


@dataclass
class _Cursor:
    lines: list[str]
    path: str | None
    index: int = 0
    comments: list[str] = field(default_factory=list)

    @property
    def line_number(self) -> int:
        """1-based number of the current line (one past the end at the end)."""
        return self.index + 1

    def at_end(self) -> bool:
        return self.index >= len(self.lines)

    def peek(self) -> str:
        return self.lines[self.index]

    def error(self, message: str, line_number: int | None = None) -> ParseError:
        number = self.line_number if line_number is None else line_number
        return ParseError(message, path=self.path, line=number)


def loads(text: str, source: str | os.PathLike[str] | None = None) -> Transcript:
    """Parse `.http` text. `source` names it in errors (`source:line: message`)."""
    path = None if source is None else os.fspath(source)
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final line break ends the last line; it starts no new one
    cursor = _Cursor(lines, path)
    version, comments = _read_preamble(cursor)
    exchanges: list[Exchange] = []
    # Parsing allocates many objects that live on (the models, their parsed JSON) and make no
    # reference cycles; the cyclic collector's passes over them would cost a third of the time
    # on large files. Paused for the parse, restored as it was.
    collecting = gc.isenabled()
    gc.disable()
    try:
        while not cursor.at_end():
            exchanges.append(_read_exchange(cursor, exchanges))
    finally:
        if collecting:
            gc.enable()
    return Transcript(
        exchanges=tuple(exchanges), comments=tuple(comments), format_version=version, source=path
    )


def _read_preamble(cursor: _Cursor) -> tuple[int, list[str]]:
    version = FORMAT_VERSION
    comments: list[str] = []
    first = True
    while not cursor.at_end():
        line = cursor.peek()
        if line.startswith("###"):
            break
        match = _MARKER.match(line)
        if match and first:
            raw = match.group(1)
            if not raw.isdigit():
                raise cursor.error(f"the format marker needs a version number, got {raw!r}")
            version = int(raw)
            if version != FORMAT_VERSION:
                raise cursor.error(
                    f"unsupported transcript format version {version}: this recorder reads "
                    f"version {FORMAT_VERSION} (upgrade recorder to read it)"
                )
        elif line.startswith("#"):
            comments.append(_comment_text(cursor, line))
        elif line.strip():
            if _REQUEST_LINE.match(line):
                raise cursor.error('expected "###" (and a title) before the first request')
            raise cursor.error(f'expected "###" to start an exchange, got {_show(line)}')
        first = False
        cursor.index += 1
    return version, comments


def _comment_text(cursor: _Cursor, line: str) -> str:
    text = line[1:]
    return _one_line(cursor, text[1:] if text.startswith(" ") else text, "a comment")


def _one_line(cursor: _Cursor, text: str, what: str) -> str:
    if "\r" in text:
        raise cursor.error(f"{what} holds a carriage return (CR) alone: lines end in LF or CRLF")
    return text


def _show(line: str, limit: int = 60) -> str:
    return json.dumps(line if len(line) <= limit else line[:limit] + "…", ensure_ascii=False)


def _read_exchange(cursor: _Cursor, earlier: Sequence[Exchange]) -> Exchange:
    start = cursor.line_number
    title = _one_line(cursor, cursor.peek()[3:].strip(), "a title")
    cursor.index += 1
    comments: list[str] = []
    truncated = False
    while not cursor.at_end():
        line = cursor.peek()
        if line.startswith("###"):
            break
        if line.startswith("#"):
            text = _comment_text(cursor, line)
            if text == TRUNCATED_TAG:
                truncated = True
            else:
                if text.strip().startswith("@during"):
                    _check_during(cursor, text, earlier)
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
            line=start,
        )
    except ValueError as exc:
        raise cursor.error(str(exc), start) from None


def _check_during(cursor: _Cursor, tag: str, earlier: Sequence[Exchange]) -> None:
    # (an earlier exchange, whatever its reply: a stream the recorder could not parse as SSE
    # is kept raw, and its file must still load)
    match = DURING_TAG.match(tag.strip())
    if match is None:
        raise cursor.error(f'a @during tag reads "@during exchange N frame K", got {_show(tag)}')
    number = int(match.group(1))
    if not 1 <= number <= len(earlier):
        raise cursor.error(
            f"@during exchange {number}: no earlier exchange {number}"
            f" (this is exchange {len(earlier) + 1})"
        )


def _read_request(cursor: _Cursor) -> Request:
    line_number = cursor.line_number
    line = cursor.peek()
    match = _REQUEST_LINE.match(line)
    if not match:
        raise cursor.error(
            f'expected a request line such as "POST /a2a/jsonrpc HTTP/1.1", got {_show(line)}'
        )
    method, target, version = match.groups()
    cursor.index += 1
    headers = _read_headers(cursor, stop_at_status=True)
    body_start = cursor.line_number
    region: list[str] = []
    while not cursor.at_end():
        line = cursor.peek()
        if _STATUS_LINE.match(line) or line.startswith("###"):
            break
        region.append(line)
        cursor.index += 1
    if cursor.at_end() or cursor.peek().startswith("###"):
        raise cursor.error(
            'expected a status line such as "HTTP/1.1 200 OK" after the request body '
            f"(the request starts at line {line_number})"
        )
    if region and region[-1] == "":
        region.pop()  # the blank line before the status line
    body = _decode_body(cursor, region, body_start)
    try:
        return Request(
            method=method,
            target=target,
            headers=headers,
            body=body,
            http_version=version or "HTTP/1.1",
        )
    except ValueError as exc:
        raise cursor.error(str(exc), line_number) from None


def _read_response(cursor: _Cursor, exchange_start: int) -> Response:
    line_number = cursor.line_number
    match = _STATUS_LINE.match(cursor.peek())
    assert match is not None  # _read_request stops only at a status line
    version, status, reason = match.groups()
    if status.startswith("0"):
        raise cursor.error(f"invalid status code {status}: expected 100 to 999")
    cursor.index += 1
    headers = _read_headers(cursor, stop_at_status=False)
    body_start = cursor.line_number
    region: list[str] = []
    while not cursor.at_end() and not cursor.peek().startswith("###"):
        region.append(cursor.peek())
        cursor.index += 1
    followed_by_exchange = not cursor.at_end()
    content_type = headers.get("Content-Type")
    if is_event_stream(content_type) and not (region and region[0].startswith(BODY_MARKER)):
        while region and region[-1] == "":
            region.pop()
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
        match = _HEADER_LINE.match(line)
        if not match:
            raise cursor.error(
                f'expected a header line such as "Content-Type: application/json" or a blank '
                f"line before the body, got {_show(line)}"
            )
        pairs.append((match.group(1), match.group(2)))
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


# --------------------------------------------------------------------------- files


def load(path: str | os.PathLike[str]) -> Transcript:
    """Read and parse one `.http` file."""
    name = os.fspath(path)
    try:
        data = Path(name).read_bytes()
    except OSError as exc:
        raise ParseError(f"cannot read the file: {exc.strerror or exc}", path=name) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ParseError(
            "the file is not UTF-8 text (binary bodies are written as base64 by recorder)",
            path=name,
            line=line,
        ) from None
    return loads(text, source=name)


def dump(transcript: Transcript, path: str | os.PathLike[str]) -> None:
    """Write a transcript atomically: a temporary file in the same folder, then a rename."""
    write_text_atomic(Path(path), dumps(transcript))


def write_text_atomic(
    path: Path,
    text: str | bytes,
    *,
    fsync: bool = True,
    keep_mode: bool = True,
    temporary: tuple[str, int] | None = None,
) -> None:
    """Write `text` (or UTF-8 bytes) to `path` so that readers see the old file or the new one,
    never half: a temporary file in the same folder, then a rename over `path`.

    The rename alone is what readers rely on. `fsync=True` also flushes the data to the disk
    before the rename, so that the new file survives a power loss or a kernel crash (not
    needed against a crash of this process); it costs a disk flush, 0.2 ms to several ms.
    `keep_mode=False` skips looking up the mode of a file at `path` (the caller knows there
    is none): the new file gets 0666 less the umask. `temporary`: a file made beforehand by
    `open_temporary` in the same folder, used (and closed, and removed on failure) instead of
    a new one. A symbolic link at `path` stays one: the file it points to is written.
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    if temporary is None and keep_mode and os.path.islink(path):
        path = Path(os.path.realpath(path))
    if temporary is None:
        tmp, fd = _create_temporary(path, keep_mode=keep_mode)
    else:
        tmp, fd = temporary
    try:
        try:
            if temporary is not None and keep_mode:
                with contextlib.suppress(FileNotFoundError):
                    os.fchmod(fd, os.stat(path).st_mode & 0o7777)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def open_temporary(folder: Path) -> tuple[str, int]:
    """A new temporary file in `folder`, opened for writing, for a `write_text_atomic` to come
    (made ahead, e.g. while waiting for the text). Its mode is 0666 less the umask. Give it to
    `write_text_atomic`, or to `discard_temporary`."""
    return _create_temporary(Path(folder) / "recorder", keep_mode=False)


def discard_temporary(temporary: tuple[str, int]) -> None:
    """Close and remove a file from `open_temporary` that will not be used."""
    tmp, fd = temporary
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


_temporary_names = itertools.count()


def _create_temporary(path: Path, *, keep_mode: bool = True) -> tuple[str, int]:
    """A new file `.NAME.PID.N.tmp` beside `path`, opened for writing (cheaper than mkstemp's
    random names). Its mode is the one `path` has, or, for a new file, 0666 less the umask
    (what any new file gets): the rename hands the temporary file's mode to `path`."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    mode: int | None = None
    if keep_mode:
        with contextlib.suppress(OSError):
            mode = os.stat(path).st_mode & 0o7777
    folder, name = os.path.split(os.fspath(path))
    for _ in range(100):
        tmp = os.path.join(folder, f".{name}.{os.getpid()}.{next(_temporary_names)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666 if mode is None else 0o600)
        except FileExistsError:
            continue  # left by an earlier process with the same id
        if mode is not None:
            os.fchmod(fd, mode)
        return tmp, fd
    raise FileExistsError(f"cannot create a temporary file beside {path}")
