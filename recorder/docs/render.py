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
   (`Exchange.truncated`) ends with a line saying so. A gRPC reply's trailing metadata follows
   its body or frames under `# @trailers`, its entries kept or elided as rule 1 says.
6. Ids. With `ids="short"`, every UUID in the block (the SDK's generated message, task, context
   and artifact ids, in bodies, targets and headers) is shortened to its first 8 hex digits and
   `…`, the same UUID the same way throughout the block (`recorder.docs.select.IdShortener`).
7. Tags. An exchange the transcript tags opens with the tag as the transcript writes it: a push
   delivery (a call the agent made to the client's webhook) with `# @push config N`, a call the
   agent made to a downstream of its own with `# @call NAME exchange N [frame K]`, a request
   sent while an earlier exchange was open with `# @during exchange N frame K`. Where such a
   request went out is shown in exchange N too, rendered alone or with the rest of its file:
   `# here the client sent exchange M (Operation)`, after N's K-th frame (K = 0: between N's
   request and its reply), never elided. (Only the request's sending is known: its reply may
   have come before or after N's later frames, so the block says where it was sent, not more.)
8. Open end. With `open_end`, a body or a stream cut at its end stops at its last line shown,
   without the closing `…` line (a guide's excerpt that its text goes on from); every other
   elision is still marked.

`full` turns rules 1 (except the header spelling), 3 and 4 off: every header, every line, every
frame (rule 6 still applies when asked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    exchange_operations,
    first_leaf_path,
    parse_pick,
    picked_paths,
)
from recorder.format.httpread import DURING_TAG, TRAILERS_TAG
from recorder.format.jsonbody import loads
from recorder.format.literals import as_sent
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
    "render_exchange",
    "render_exchanges",
    "sent_during",
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
    none, the plain line budget). `ids`: "short" shortens UUIDs (rule 6). `open_end`: no
    closing `…` after a body or stream cut at its end (rule 8).
    """

    headers: tuple[str, ...] = DEFAULT_HEADERS
    max_lines: int = DEFAULT_MAX_LINES
    width: int = DEFAULT_WIDTH
    full: bool = False
    only: Part = "both"
    pick: tuple[str, ...] | None = None
    ids: Ids = "full"
    open_end: bool = False
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


# --------------------------------------------------------------------------- whole blocks


@dataclass(frozen=True)
class _Context:
    options: RenderOptions
    ids: IdShortener | None

    def text(self, text: str) -> str:
        return self.ids.text(text) if self.ids else text


# Rule 7: what a stream or a late reply shows where a later request was sent during it: the
# frames of the exchange received by then (0: only its request sent) -> the lines to show there.
Marks = Mapping[int, Sequence[str]]


def exchange_ids(exchange: Exchange) -> IdShortener:
    """Rule 6: the shortener for every UUID of the exchange (request and reply)."""
    texts = [exchange.request.target]
    for message in (exchange.request, exchange.response):
        texts.extend(value for _, value in message.headers)
        texts.append(message.body.decode("utf-8", "replace"))
    for event in exchange.response.events or ():
        texts.extend(event.lines())
    return IdShortener(texts)


def render_exchange(
    exchange: Exchange, options: RenderOptions = RenderOptions(), *, marks: Marks | None = None
) -> str:
    """One exchange as a documentation block (rules 5 and 7), ending in a line break.

    `marks`: the lines rule 7 shows in its reply where later requests were sent during it
    (`sent_during` finds them in a transcript; `render_exchanges` passes them)."""
    exchange = as_sent(exchange)  # (a literal `{{NAME}}` shown as it went over the wire)
    context = _Context(options, exchange_ids(exchange) if options.ids == "short" else None)
    marks = marks or {}
    lines = _tag_lines(exchange)
    request = options.only in ("both", "request")
    if request:
        lines.extend(_request_lines(exchange.request, context))
    if options.only in ("both", "response"):
        early = marks.get(0, ())
        if early:  # sent before this reply came (rule 7): between the request and the reply
            _paragraph(lines, early)
        elif request and lines[-1] not in ("", ELLIPSIS):
            lines.append("")
        late = {frame: shown for frame, shown in marks.items() if frame > 0}
        lines.extend(_response_lines(exchange.response, context, late))
    while lines and lines[-1] == "":
        lines.pop()
    if exchange.truncated and options.only != "request":
        lines.append(TRUNCATED_NOTE)
    return "\n".join(lines) + "\n"


def render_exchanges(
    exchanges: Sequence[Exchange],
    options: RenderOptions = RenderOptions(),
    *,
    numbers: Sequence[int] | None = None,
) -> str:
    """Exchanges `numbers` (from 1; None: all) of a transcript's `exchanges`: one block each,
    opened by its `###` title line when there are several, a blank line between.

    `exchanges` is the whole transcript, so that an exchange shows where a later one of the file
    was sent during it (rule 7) whether or not that one is rendered too."""
    chosen = range(1, len(exchanges) + 1) if numbers is None else numbers
    during = sent_during(exchanges)
    if len(chosen) == 1:
        number = chosen[0]
        return render_exchange(exchanges[number - 1], options, marks=during.get(number))
    blocks = []
    for number in chosen:
        exchange = exchanges[number - 1]
        title = f"### {exchange.title}" if exchange.title else "###"
        block = render_exchange(exchange, options, marks=during.get(number))
        blocks.append(f"{title}\n{block}")
    return "\n".join(blocks)


def sent_during(exchanges: Sequence[Exchange]) -> dict[int, dict[int, list[str]]]:
    """Rule 7: for each exchange (by number from 1) that later ones were sent during, the lines
    its reply shows, by the frames it had sent by then."""
    marks: dict[int, dict[int, list[str]]] = {}
    for number, exchange in enumerate(exchanges, start=1):
        tag = _during(exchange)
        if tag is None or not 1 <= tag[0] < number:
            continue
        operations = exchange_operations(exchange)
        request = exchange.request
        what = operations[0] if operations else f"{request.method} {request.target}"
        line = f"# here the client sent exchange {number} ({what})"
        marks.setdefault(tag[0], {}).setdefault(tag[1], []).append(line)
    return marks


def _during(exchange: Exchange) -> tuple[int, int] | None:
    """The exchange (from 1) and frame count of an exchange's `@during` tag, if it has one."""
    for comment in exchange.comments:
        match = DURING_TAG.match(comment.strip())
        if match is not None:
            return int(match.group(1)), int(match.group(2))
    return None


def _tag_lines(exchange: Exchange) -> list[str]:
    """Rule 7: the tags that say what an exchange is, as the transcript writes them."""
    lines = []
    if exchange.push_config is not None:
        lines.append(f"# @push config {exchange.push_config}")
    if exchange.call is not None:
        lines.append(f"# {exchange.call.text}")
    during = _during(exchange)
    if during is not None:
        lines.append(f"# @during exchange {during[0]} frame {during[1]}")
    return lines


def _paragraph(lines: list[str], shown: Sequence[str]) -> None:
    """`shown` appended as a paragraph of its own: a blank line before it (unless `…` or a
    blank line ends `lines`) and after it."""
    if lines and lines[-1] not in ("", ELLIPSIS):
        lines.append("")
    lines.extend([*shown, ""])


def _request_lines(request: Request, context: _Context) -> list[str]:
    # (a gRPC call's line has no version: `GRPC /lf.a2a.v1.A2AService/SendMessage`)
    line = f"{request.method} {request.target} {request.http_version}".rstrip()
    lines = [context.text(line)]
    lines.extend(_header_lines(request.headers, context))
    lines.extend(_body_lines(request.body, request.is_json, context))
    return lines


def _response_lines(response: Response, context: _Context, marks: Marks) -> list[str]:
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
                marks=marks,
                open_end=options.open_end,
            )
        )
    else:
        lines.extend(_body_lines(response.body, response.is_json, context))
        for frame in sorted(marks):  # (a reply without frames: tagged after its body)
            _paragraph(lines, marks[frame])
    if response.trailers:
        # a gRPC call's trailing metadata, as the transcript writes it; its entries kept or
        # elided as headers are (rule 1), the block itself never left out
        while lines and lines[-1] == "":
            lines.pop()
        trailers = _header_lines(response.trailers, context)
        if trailers != [""]:  # (only transport entries: nothing the API says is left out)
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
            value = loads(body)  # (each number as it was written: `jsonbody.JsonNumber`)
        except (ValueError, RecursionError):
            pass
        else:
            value = envelope_first(value)
            if context.ids:
                value = context.ids.value(value)
            lines, _ = cut_json_lines(
                value, options.max_lines, options.full, options.picks, open_end=options.open_end
            )
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
    shown = lines[: options.max_lines]
    return shown if options.open_end else [*shown, ELLIPSIS]


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
    value: Any,
    max_lines: int,
    full: bool = False,
    picks: Sequence[JsonPath] = (),
    *,
    open_end: bool = False,
) -> tuple[list[str], bool]:
    """Rule 3: the pretty lines to show (`…` lines included) and whether anything was cut
    (with `open_end`, rule 8: a hidden end is not marked)."""
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
            if open_end:
                return out, True
            out.append(ELLIPSIS)
        elif end - index == 1:
            out.append(texts[index])
        else:
            text = texts[index]
            out.append(text[: len(text) - len(text.lstrip(" "))] + ELLIPSIS)
        index = end
    return out, ELLIPSIS in (line.strip() for line in out)
