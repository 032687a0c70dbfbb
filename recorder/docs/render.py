"""Exchanges as documentation: the request and the reply with the parts a reader needs.

Pure: `render_exchange(exchange, options) -> str`; no files, no clock. The shape is the one the
guide in shared/seed/ publishes, with the question and the answer always in view:

    POST /a2a/jsonrpc HTTP/1.1          the request line, as recorded
    Content-Type: application/json      the chosen headers (default: Content-Type)
    …                                   one line for every other header left out
    {                                   the JSON body, pretty, cut to a line budget, but
      "jsonrpc": "2.0",                 the picked members (the message parts) always shown
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
   inside a token) after `max_lines` lines. The cut never hides the envelope nor the chain of
   first members from `params`/`result`/`error` down to the first plain value (`"result": {`,
   `"message": {`, `"messageId": …`): the budget grows to show it. It never hides a picked
   member either (`pick`, JSON paths; by default every message's `parts`, every task state,
   every artifact: see `recorder.docs.select.DEFAULT_PICK`): a picked member is shown whole,
   with the lines that open its enclosing objects and, when more is shown after it, the lines
   that close them. Each run of two or more hidden lines is one `…` line, indented as the first
   of them; a hidden end is one `…` at the margin, unless it would hide only closing brackets,
   which are then shown.
4. Streams. Each SSE frame is shown with its fields, a blank line between frames. Frames are
   shown whole while the line budget (`max_lines`, counting the blank lines between frames)
   allows; after that a frame is still shown when it holds a picked member (so every task state
   and artifact of a stream shows), and each run of other frames is one `…` line. A `data:` line
   longer than `width` characters is cut after a complete JSON member or element (rule 2 applies
   to it; it is written with `", "` and `": "` as the SDK writes SSE data): what the width
   leaves out is `…`, inside the line (`"taskId": "…", …, "status": {"state": …`) or at its end
   (`, …`, the closing brackets dropped). The cut never hides the chain of rule 3 (which names
   the frame's kind: `task`, `message`, `statusUpdate`, `artifactUpdate`) nor a picked member.
   Non-JSON data is cut at a space.
5. Request and reply are separated by a blank line, except after a request ending in `…` (the
   seed's shape); trailing blank lines are dropped. A reply recorded incompletely
   (`Exchange.truncated`) ends with a line saying so.
6. Ids. With `ids="short"`, every UUID in the block (the SDK's generated message, task, context
   and artifact ids, in bodies, targets and headers) is shortened to its first 8 hex digits and
   `…`, the same UUID the same way throughout the block (`recorder.docs.select.IdShortener`).

`full` turns rules 1 (except the header spelling), 3 and 4 off: every header, every line, every
frame (rule 6 still applies when asked).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from recorder.docs.frames import cut_data_line, stream_lines
from recorder.docs.select import (
    DEFAULT_PICK,
    ELLIPSIS,
    IdShortener,
    JsonPath,
    Step,
    dumps_scalar,
    envelope_first,
    first_leaf_path,
    parse_pick,
    picked_paths,
)
from recorder.format.httpread import TRAILERS_TAG
from recorder.format.model import Exchange, Headers, Request, Response

__all__ = [
    "DEFAULT_HEADERS",
    "DEFAULT_MAX_LINES",
    "DEFAULT_PICK",
    "DEFAULT_WIDTH",
    "ELLIPSIS",
    "TRUNCATED_NOTE",
    "RenderOptions",
    "cut_data_line",
    "cut_json_lines",
    "envelope_first",
    "exchange_ids",
    "parse_reference",
    "render_exchange",
    "render_exchanges",
]

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

Part = Literal["both", "request", "response"]
Ids = Literal["full", "short"]


@dataclass(frozen=True)
class RenderOptions:
    """How much to show. The defaults give the seed's shape with the payload in view.

    `pick`: JSON paths of the members always shown (None: `DEFAULT_PICK`; `()` or `("none",)`:
    none, the plain line budget). `ids`: "short" shortens UUIDs (rule 6).
    """

    headers: tuple[str, ...] = DEFAULT_HEADERS
    max_lines: int = DEFAULT_MAX_LINES
    width: int = DEFAULT_WIDTH
    full: bool = False
    only: Part = "both"
    pick: tuple[str, ...] | None = None
    ids: Ids = "full"
    _keep: frozenset[str] = field(init=False, repr=False, compare=False)
    picks: tuple[JsonPath, ...] = field(init=False, repr=False, compare=False)

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
        if self.ids not in ("full", "short"):
            raise ValueError(f"ids must be full or short, got {self.ids!r}")
        pick = DEFAULT_PICK if self.pick is None else tuple(self.pick)
        object.__setattr__(self, "picks", parse_pick(pick))

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


@dataclass(frozen=True)
class _Context:
    options: RenderOptions
    ids: IdShortener | None

    def text(self, text: str) -> str:
        return self.ids.text(text) if self.ids else text


def exchange_ids(exchange: Exchange) -> IdShortener:
    """Rule 6: the shortener for every UUID of the exchange (request and reply)."""
    texts = [exchange.request.target]
    for message in (exchange.request, exchange.response):
        texts.extend(value for _, value in message.headers)
        texts.append(message.body.decode("utf-8", "replace"))
    for event in exchange.response.events or ():
        texts.extend(event.lines())
    return IdShortener(texts)


def render_exchange(exchange: Exchange, options: RenderOptions = RenderOptions()) -> str:
    """One exchange as a documentation block (rule 5), ending in a line break."""
    context = _Context(options, exchange_ids(exchange) if options.ids == "short" else None)
    lines: list[str] = []
    if options.only in ("both", "request"):
        lines.extend(_request_lines(exchange.request, context))
    if options.only in ("both", "response"):
        if lines and lines[-1] not in ("", ELLIPSIS):
            lines.append("")
        lines.extend(_response_lines(exchange.response, context))
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


def _request_lines(request: Request, context: _Context) -> list[str]:
    # (a gRPC call's line has no version: `GRPC /lf.a2a.v1.A2AService/SendMessage`)
    line = f"{request.method} {request.target} {request.http_version}".rstrip()
    lines = [context.text(line)]
    lines.extend(_header_lines(request.headers, context))
    lines.extend(_body_lines(request.body, request.is_json, context))
    return lines


def _response_lines(response: Response, context: _Context) -> list[str]:
    status = f"{response.http_version} {response.status}"
    lines = [f"{status} {response.reason}" if response.reason else status]
    lines.extend(_header_lines(response.headers, context))
    if response.events is not None:
        options = context.options
        lines.extend(
            stream_lines(
                response.events,
                max_lines=options.max_lines,
                width=options.width,
                full=options.full,
                picks=options.picks,
                ids=context.ids,
            )
        )
    else:
        lines.extend(_body_lines(response.body, response.is_json, context))
    if response.trailers:
        # a gRPC call's trailing metadata, as the transcript writes it
        while lines and lines[-1] == "":
            lines.pop()
        trailers = _header_lines(response.trailers, context)
        if trailers[0] not in ("", ELLIPSIS):
            lines.extend(["", TRAILERS_TAG, *trailers])
    return lines


def _header_lines(headers: Headers, context: _Context) -> list[str]:
    """Rule 1: the kept headers, then `…` or the blank line that ends the section."""
    options = context.options
    lines: list[str] = []
    elided = False
    for name, value in headers:
        if options.full or options.keeps(name):
            shown = options.spelling(name)
            lines.append(context.text(f"{shown}: {value}" if value else f"{shown}:"))
        elif name.lower() not in _UNSHOWN_HEADERS:
            elided = True
    lines.append(ELLIPSIS if elided else "")
    return lines


def _body_lines(body: bytes, is_json: bool, context: _Context) -> list[str]:
    options = context.options
    if not body:
        return []
    if is_json:
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            pass
        else:
            value = envelope_first(value)
            if context.ids:
                value = context.ids.value(value)
            lines, _ = cut_json_lines(value, options.max_lines, options.full, options.picks)
            return lines
    try:
        text = context.text(body.decode("utf-8"))
    except UnicodeDecodeError:
        return [f"{ELLIPSIS} ({len(body)} bytes of binary data)"]
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if options.full or len(lines) <= options.max_lines:
        return lines
    return [*lines[: options.max_lines], ELLIPSIS]


# --------------------------------------------------------------------------- JSON


@dataclass(frozen=True)
class _Line:
    text: str
    path: tuple[Step, ...]
    closer: bool = False
    opener: bool = False


def _pretty_lines(value: Any) -> list[_Line]:
    """The lines of `json.dumps(value, indent=2)` (the transcript's form), each with its path."""
    out: list[_Line] = []
    _pretty_into(value, 0, "", (), "", out)
    return out


def _pretty_into(
    value: Any,
    depth: int,
    prefix: str,
    path: tuple[Step, ...],
    trailing: str,
    out: list[_Line],
) -> None:
    pad = "  " * depth
    if isinstance(value, dict) and value:
        out.append(_Line(f"{pad}{prefix}{{", path, opener=True))
        last = len(value) - 1
        for i, (key, member) in enumerate(value.items()):
            key_text = dumps_scalar(key) + ": "
            _pretty_into(member, depth + 1, key_text, (*path, key), "," if i < last else "", out)
        out.append(_Line(f"{pad}}}{trailing}", path, closer=True))
    elif isinstance(value, list) and value:
        out.append(_Line(f"{pad}{prefix}[", path, opener=True))
        last = len(value) - 1
        for i, element in enumerate(value):
            _pretty_into(element, depth + 1, "", (*path, i), "," if i < last else "", out)
        out.append(_Line(f"{pad}]{trailing}", path, closer=True))
    else:
        out.append(_Line(f"{pad}{prefix}{dumps_scalar(value)}{trailing}", path))


def cut_json_lines(
    value: Any, max_lines: int, full: bool = False, picks: Sequence[JsonPath] = ()
) -> tuple[list[str], bool]:
    """Rule 3: the pretty lines to show (`…` lines included) and whether anything was cut."""
    lines = _pretty_lines(value)
    texts = [line.text for line in lines]
    if full or len(lines) <= max_lines:
        return texts, False
    keep_path = first_leaf_path(value)
    floor = next(
        (i + 1 for i, line in enumerate(lines) if line.path == keep_path and not line.closer),
        1,
    )
    budget = max(max_lines, floor)
    shown = [index < budget for index in range(len(lines))]
    picked = set(picked_paths(value, picks))
    if picked:
        ancestors = {path[:depth] for path in picked for depth in range(len(path))}
        for index, line in enumerate(lines):
            path = line.path
            if (line.opener and path in ancestors) or any(
                path[:depth] in picked for depth in range(len(path) + 1)
            ):
                shown[index] = True
    last = max(index for index, show in enumerate(shown) if show)
    if all(line.closer for line in lines[last + 1 :]):
        for index in range(last + 1, len(lines)):
            shown[index] = True
    else:  # rule 3: the enclosing objects of what is shown are closed before more is shown
        opened = {line.path for line, show in zip(lines, shown, strict=True) if show}
        for index, line in enumerate(lines[:last]):
            if line.closer and line.path in opened:
                shown[index] = True
    out: list[str] = []
    index = 0
    while index < len(lines):
        if shown[index]:
            out.append(texts[index])
            index += 1
            continue
        end = index
        while end < len(lines) and not shown[end]:
            end += 1
        if end == len(lines):
            out.append(ELLIPSIS)
        elif end - index == 1:
            out.append(texts[index])
        else:
            text = texts[index]
            out.append(text[: len(text) - len(text.lstrip(" "))] + ELLIPSIS)
        index = end
    return out, ELLIPSIS in (line.strip() for line in out)
