"""Exchanges as documentation: the request and the reply with the parts a reader needs.

Pure: `render_exchange(exchange, options) -> str`; no files, no clock. The shape is the one the
guide in shared/seed/ publishes:

    POST /a2a/jsonrpc HTTP/1.1          the request line, as recorded
    Content-Type: application/json      the chosen headers (default: Content-Type)
    …                                   one line for every other header left out
    {                                   the JSON body, pretty, cut to a line budget
      "jsonrpc": "2.0",
      …
    HTTP/1.1 200 OK                     the reply the same way
    Content-Type: text/event-stream

    data: {"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "728ba…", …

The rules, numbered so tests and docs can point at them:

1. Headers. A header named in `headers` is kept, in recorded order, its name written as spelled
   in `headers` (names are case-insensitive, RFC 9110 §5.1; the agent's lowercase `content-type`
   reads as `Content-Type`). Transport, caching, timing and software headers (`Host`,
   `Content-Length`, hop-by-hop ones, `Accept-Encoding`, `Cache-Control`, `ETag`,
   `X-Accel-Buffering`, `Date`, `Server`, `User-Agent` …) say nothing about the API and are left
   out silently.
   Every other header left out is replaced by one `…` line, which also stands for the blank line
   that ends the header section; when nothing was elided the blank line is written.
2. JSON-RPC envelope first. In a JSON-RPC body (a top-level object with `jsonrpc`), the members
   that tell what the message is come first: `jsonrpc`, `id`, `method`, `params`, `result`,
   `error`, then any others in recorded order. The a2a-sdk server writes `result`, `id`,
   `jsonrpc`; JSON member order carries no meaning (RFC 8259 §4), and the reordering is applied
   everywhere, elided or `full`, so every block reads the same way. Nothing else is reordered.
3. JSON bodies are pretty-printed as in the transcript and cut at a line boundary (so never
   inside a token) after `max_lines` lines, followed by one `…` line. The cut never hides the
   envelope nor the chain of first members from `params`/`result`/`error` down to the first
   plain value (`"result": {`, `"message": {`, `"messageId": …`): the budget grows to show it.
   A body whose hidden part would be only closing brackets is shown whole.
4. Streams. Each SSE frame is shown with its fields; frames are shown whole while the line
   budget (`max_lines`, counting the blank lines between frames) allows, then one `…` line. A
   `data:` line longer than `width` characters is cut after a complete JSON member or element
   and ended with `, …` (rule 2 applies to it; it is written with `", "` and `": "` as the SDK
   writes SSE data); the cut never hides the chain of rule 3. Non-JSON data is cut at a space.
5. Request and reply follow each other with no blank line between; trailing blank lines are
   dropped. A reply recorded incompletely (`Exchange.truncated`) ends with a line saying so.
   `full` turns rules 1 (except the header spelling), 3 and 4 off: every header, every line,
   every frame.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from recorder.model import Exchange, Headers, Request, Response, SseEvent

__all__ = [
    "DEFAULT_HEADERS",
    "DEFAULT_MAX_LINES",
    "DEFAULT_WIDTH",
    "ELLIPSIS",
    "TRUNCATED_NOTE",
    "RenderOptions",
    "cut_data_line",
    "cut_json_lines",
    "envelope_first",
    "parse_reference",
    "render_exchange",
    "render_exchanges",
]

ELLIPSIS = "…"
TRUNCATED_NOTE = "… (the reply was cut off here when it was recorded)"
DEFAULT_HEADERS: tuple[str, ...] = ("Content-Type",)
DEFAULT_MAX_LINES = 8
DEFAULT_WIDTH = 100

# Rule 1: transport, caching, timing and software-identification headers: they say nothing
# about the API an example shows, so leaving them out elides nothing a reader needs.
_UNSHOWN_HEADERS = frozenset(
    name.lower()
    for name in (
        # connection and framing (RFC 9110 §7.6.1 hop-by-hop, RFC 9112)
        "Host",
        "Connection",
        "Keep-Alive",
        "Proxy-Connection",
        "Transfer-Encoding",
        "TE",
        "Trailer",
        "Upgrade",
        "Content-Length",
        "Accept-Encoding",
        # caching and buffering
        "Cache-Control",
        "ETag",
        "Last-Modified",
        "Expires",
        "Age",
        "Vary",
        "X-Accel-Buffering",
        # timing and software
        "Date",
        "Server",
        "User-Agent",
    )
)
# Rule 2: the JSON-RPC 2.0 members, in the order the spec's examples write them.
_ENVELOPE = ("jsonrpc", "id", "method", "params", "result", "error")
_PAYLOADS = ("params", "result", "error")
# Characters that JSON allows raw in strings but editors show as line breaks or not at all.
_INVISIBLE = re.compile("[\x7f-\x9f\u2028\u2029]")

Part = Literal["both", "request", "response"]


@dataclass(frozen=True)
class RenderOptions:
    """How much to show. The defaults give the seed's shape."""

    headers: tuple[str, ...] = DEFAULT_HEADERS
    max_lines: int = DEFAULT_MAX_LINES
    width: int = DEFAULT_WIDTH
    full: bool = False
    only: Part = "both"
    _keep: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        headers = tuple(h.strip() for h in self.headers if h.strip())
        object.__setattr__(self, "headers", headers)
        object.__setattr__(self, "_keep", frozenset(h.lower() for h in headers))
        if self.max_lines < 1:
            raise ValueError(f"max-lines must be at least 1, got {self.max_lines}")
        if self.width < 20:
            raise ValueError(f"width must be at least 20, got {self.width}")
        if self.only not in ("both", "request", "response"):
            raise ValueError(f"only must be request or response, got {self.only!r}")

    def spelling(self, name: str) -> str:
        """The name as the options spell it (rule 1), else as recorded."""
        wanted = name.lower()
        for chosen in self.headers:
            if chosen.lower() == wanted:
                return chosen
        return name

    def keeps(self, name: str) -> bool:
        return name.lower() in self._keep


def parse_reference(reference: str) -> tuple[str, int | None]:
    """`"transcripts/02-message-reply.http#1"` -> `("transcripts/02-message-reply.http", 1)`.

    Exchanges are numbered from 1 in file order. Without `#N`, the index is None (all).
    """
    path, hash_sign, number = reference.rpartition("#")
    if hash_sign and number.isascii() and number.isdigit():
        index = int(number)
        if index < 1:
            raise ValueError(f"exchanges are numbered from 1: {reference!r}")
        return path, index
    return reference, None


# --------------------------------------------------------------------------- whole blocks


def render_exchange(exchange: Exchange, options: RenderOptions = RenderOptions()) -> str:
    """One exchange as a documentation block (rule 5), ending in a line break."""
    lines: list[str] = []
    if options.only in ("both", "request"):
        lines.extend(request_lines(exchange.request, options))
    if options.only in ("both", "response"):
        lines.extend(response_lines(exchange.response, options))
    while lines and lines[-1] == "":
        lines.pop()
    if exchange.truncated and options.only != "request":
        lines.append(TRUNCATED_NOTE)
    return "\n".join(lines) + "\n"


def render_exchanges(
    exchanges: Sequence[Exchange], options: RenderOptions = RenderOptions()
) -> str:
    """Several exchanges: one block each, opened by its `###` title line, a blank line between."""
    if len(exchanges) == 1:
        return render_exchange(exchanges[0], options)
    blocks = []
    for exchange in exchanges:
        title = f"### {exchange.title}" if exchange.title else "###"
        blocks.append(f"{title}\n{render_exchange(exchange, options)}")
    return "\n".join(blocks)


def request_lines(request: Request, options: RenderOptions) -> list[str]:
    lines = [f"{request.method} {request.target} {request.http_version}"]
    lines.extend(_header_lines(request.headers, options))
    lines.extend(_body_lines(request.body, request.is_json, options))
    return lines


def response_lines(response: Response, options: RenderOptions) -> list[str]:
    status = f"{response.http_version} {response.status}"
    lines = [f"{status} {response.reason}" if response.reason else status]
    lines.extend(_header_lines(response.headers, options))
    if response.events is not None:
        lines.extend(_stream_lines(response.events, options))
    else:
        lines.extend(_body_lines(response.body, response.is_json, options))
    return lines


def _header_lines(headers: Headers, options: RenderOptions) -> list[str]:
    """Rule 1: the kept headers, then `…` or the blank line that ends the section."""
    lines: list[str] = []
    elided = False
    for name, value in headers:
        if options.full or options.keeps(name):
            shown = options.spelling(name)
            lines.append(f"{shown}: {value}" if value else f"{shown}:")
        elif name.lower() not in _UNSHOWN_HEADERS:
            elided = True
    lines.append(ELLIPSIS if elided else "")
    return lines


def _body_lines(body: bytes, is_json: bool, options: RenderOptions) -> list[str]:
    if not body:
        return []
    if is_json:
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            pass
        else:
            lines, cut = cut_json_lines(envelope_first(value), options.max_lines, options.full)
            return [*lines, ELLIPSIS] if cut else lines
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return [f"{ELLIPSIS} ({len(body)} bytes of binary data)"]
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if options.full or len(lines) <= options.max_lines:
        return lines
    return [*lines[: options.max_lines], ELLIPSIS]


# --------------------------------------------------------------------------- JSON


def envelope_first(value: Any) -> Any:
    """Rule 2: a JSON-RPC object with its envelope members first; anything else unchanged."""
    if not isinstance(value, dict) or "jsonrpc" not in value:
        return value
    ordered = {key: value[key] for key in _ENVELOPE if key in value}
    ordered.update((key, member) for key, member in value.items() if key not in ordered)
    return ordered


def _dumps_scalar(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@dataclass(frozen=True)
class _Line:
    text: str
    path: tuple[str | int, ...]
    closer: bool = False


def _pretty_lines(value: Any) -> list[_Line]:
    """The lines of `json.dumps(value, indent=2)` (the transcript's form), each with its path."""
    out: list[_Line] = []
    _pretty_into(value, 0, "", (), "", out)
    return out


def _pretty_into(
    value: Any,
    depth: int,
    prefix: str,
    path: tuple[str | int, ...],
    trailing: str,
    out: list[_Line],
) -> None:
    pad = "  " * depth
    if isinstance(value, dict) and value:
        out.append(_Line(f"{pad}{prefix}{{", path))
        last = len(value) - 1
        for i, (key, member) in enumerate(value.items()):
            key_text = _dumps_scalar(key) + ": "
            _pretty_into(member, depth + 1, key_text, (*path, key), "," if i < last else "", out)
        out.append(_Line(f"{pad}}}{trailing}", path, closer=True))
    elif isinstance(value, list) and value:
        out.append(_Line(f"{pad}{prefix}[", path))
        last = len(value) - 1
        for i, element in enumerate(value):
            _pretty_into(element, depth + 1, "", (*path, i), "," if i < last else "", out)
        out.append(_Line(f"{pad}]{trailing}", path, closer=True))
    else:
        out.append(_Line(f"{pad}{prefix}{_dumps_scalar(value)}{trailing}", path))


def _first_leaf_path(value: Any) -> tuple[str | int, ...]:
    """The path down the chain that rules 3 and 4 never hide.

    In a JSON-RPC object: the payload member (`params`, `result`, `error`), then its first
    member, and so on, down to the first value that is not a non-empty container. Elsewhere the
    same chain from the top.
    """
    path: tuple[str | int, ...] = ()
    node = value
    if isinstance(value, dict) and "jsonrpc" in value:
        payload = next((key for key in _PAYLOADS if key in value), None)
        if payload is None:
            return (next(reversed(value)),) if value else ()
        path, node = (payload,), value[payload]
    while True:
        if isinstance(node, dict) and node:
            key = next(iter(node))
            path, node = (*path, key), node[key]
        elif isinstance(node, list) and node:
            path, node = (*path, 0), node[0]
        else:
            return path


def cut_json_lines(value: Any, max_lines: int, full: bool = False) -> tuple[list[str], bool]:
    """Rule 3: the pretty lines to show and whether anything was cut."""
    lines = _pretty_lines(value)
    texts = [line.text for line in lines]
    if full or len(lines) <= max_lines:
        return texts, False
    keep_path = _first_leaf_path(value)
    floor = next(
        (i + 1 for i, line in enumerate(lines) if line.path == keep_path and not line.closer),
        1,
    )
    budget = max(max_lines, floor)
    if all(line.closer for line in lines[budget:]):
        return texts, False
    return texts[:budget], True


# --------------------------------------------------------------------------- SSE


def _stream_lines(events: Sequence[SseEvent], options: RenderOptions) -> list[str]:
    """Rule 4: frames while the line budget allows, each data line cut to the width."""
    lines: list[str] = []
    for number, event in enumerate(events):
        frame = [_frame_line(line, options) for line in event.lines()]
        needed = len(frame) + (1 if lines else 0)
        if not options.full and lines and len(lines) + needed > options.max_lines:
            lines.extend(["", ELLIPSIS])
            return lines
        if number:
            lines.append("")
        lines.extend(frame)
    return lines


def _frame_line(line: str, options: RenderOptions) -> str:
    if not line.startswith("data:"):
        return line
    data = line[len("data:") :].removeprefix(" ")
    return "data: " + cut_data_line(data, options.width - len("data: "), options.full)


def cut_data_line(data: str, width: int, full: bool = False) -> str:
    """Rule 4 for one `data:` value: JSON reordered and cut at a member boundary, ending `, …`."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return data if full or len(data) <= width else _cut_text(data, width)
    value = envelope_first(value)
    pieces = list(_flat_pieces(value, ()))
    whole = "".join(piece.text for piece in pieces)
    if full or len(whole) <= width:
        return whole
    keep_path = _first_leaf_path(value)
    marker = ", " + ELLIPSIS
    best: int | None = None  # index of the last piece kept
    floor: int | None = None
    length = 0
    for index, piece in enumerate(pieces):
        length += len(piece.text)
        if not piece.boundary:
            continue
        if floor is None and piece.path == keep_path:
            floor = index
        if floor is not None and (best is None or length + len(marker) <= width):
            best = index
        if length + len(marker) > width and floor is not None:
            break
    if best is None:  # unreachable: every value ends at a boundary
        return whole
    # a cut right after a container's last member takes its closing brackets along: that
    # container is complete, and what follows begins with ", " at an outer level
    while best + 1 < len(pieces) and pieces[best + 1].closer:
        best += 1
    if best + 1 >= len(pieces):
        return whole
    return "".join(piece.text for piece in pieces[: best + 1]) + marker


@dataclass(frozen=True)
class _Piece:
    text: str
    path: tuple[str | int, ...]
    boundary: bool = False  # a complete value ends here
    closer: bool = False


def _flat_pieces(value: Any, path: tuple[str | int, ...]) -> Iterator[_Piece]:
    """`json.dumps(value)` (", " and ": " separators) in pieces, marking where values end."""
    if isinstance(value, dict) and value:
        yield _Piece("{", path)
        for i, (key, member) in enumerate(value.items()):
            yield _Piece((", " if i else "") + _dumps_scalar(key) + ": ", path)
            yield from _flat_pieces(member, (*path, key))
        yield _Piece("}", path, boundary=True, closer=True)
    elif isinstance(value, list) and value:
        yield _Piece("[", path)
        for i, element in enumerate(value):
            if i:
                yield _Piece(", ", path)
            yield from _flat_pieces(element, (*path, i))
        yield _Piece("]", path, boundary=True, closer=True)
    else:
        yield _Piece(_dumps_scalar(value), path, boundary=True)


def _cut_text(text: str, width: int) -> str:
    """Plain text cut at the last space that fits, then ` …` (never inside a word)."""
    limit = max(width - 2, 1)
    space = text.rfind(" ", 0, limit + 1)
    cut = text[:space] if space > 0 else text[:limit]
    return cut.rstrip() + " " + ELLIPSIS
