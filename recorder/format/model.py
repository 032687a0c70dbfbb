"""The transcript model: Request, Response, SseEvent, Exchange, Transcript.

Every part of recorder (proxy, player, renderer) speaks in these values. They are frozen
dataclasses with liberal constructors and one canonical form inside:

- `Headers` are ordered (name, value) pairs. Names keep their case (files round-trip byte for
  byte) and compare case-insensitively. Values are stripped of surrounding whitespace (RFC 9110
  §5.5: leading and trailing whitespace is not part of a field value).
- A body is bytes. A body whose Content-Type is JSON (`application/json`, `application/*+json`)
  and which parses as JSON is held pretty-printed from its own tokens (`recorder.format.jsonbody`):
  2-space indent, key order as received, every number and string exactly as it was sent, a
  member named twice kept twice. The meaning is unchanged; the bytes are the ones the `.http`
  file shows. `.json` is its value, a number its int or float would not write back a
  `JsonNumber` (its text kept, compared by its exact value).
- A response whose Content-Type is `text/event-stream` holds its events when the body parses as
  SSE without loss (see `recorder.format.sse`); its body is then the canonical serialization of
  those events (LF line endings, fields in a fixed order). Otherwise `events` is None and the body
  is kept as it came.
- A gRPC call (`recorder.bindings.grpc`) is a `Request` with method `GRPC`, the call's path as
  its target and no HTTP version (`http_version=""`), its metadata as headers and the request
  message as ProtoJSON; its `Response` has `http_version="GRPC"`, the gRPC status code (0-16)
  as `status`, the initial metadata as headers, the reply message (or the google.rpc.Status of
  a failed call) as ProtoJSON, a server stream's messages as `events` (one per message, its
  compact JSON as `data`), and the trailing metadata as `trailers`. Their bodies are JSON
  whatever the content type says (`application/grpc`).

Edits go through `dataclasses.replace`, which runs the same canonicalization.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeAlias, overload

from recorder.format import sse
from recorder.format.jsonbody import NOT_JSON, _canonical_json
from recorder.format.jsonbody import canonical_json_body as canonical_json_body  # (re-exported)
from recorder.format.jsonbody import pretty_json as pretty_json  # (re-exported)

__all__ = [
    "AFTER_TAG",
    "DOWNSTREAM_TAG",
    "CallTag",
    "Exchange",
    "Headers",
    "Request",
    "Response",
    "SseEvent",
    "Transcript",
]

SseEvent = sse.SseEvent

HeadersLike: TypeAlias = "Headers | Mapping[str, str] | Iterable[tuple[str, str]]"

# (`\Z`, not `$`: `$` also matches before a final line break, which would end the line early)
# RFC 9110 §5.1: field-name = token; token = 1*tchar
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
# Methods are tokens; recorder takes the common subset a .http line can hold unambiguously.
_METHOD = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*\Z")
_HTTP_VERSION = re.compile(r"^HTTP/\d+(?:\.\d+)?\Z")
_REQUEST_TARGET = re.compile(r"^\S+\Z")
_JSON_MEDIA_TYPE = re.compile(r"^application/(?:[\w.+-]+\+)?json$")
_COMMON_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
GRPC_METHOD = "GRPC"
"""A gRPC call's request line: `GRPC /lf.a2a.v1.A2AService/SendMessage` (no HTTP version)."""
GRPC_VERSION = "GRPC"
"""A gRPC call's status line: `GRPC 0 OK` (`Response.http_version`)."""
_GRPC_STATUS_CODES = range(17)  # OK (0) .. UNAUTHENTICATED (16)


def media_type(content_type: str | None) -> str:
    """`"Application/JSON; charset=utf-8"` -> `"application/json"`."""
    if not content_type:
        return ""
    return content_type.partition(";")[0].strip().lower()


# (the same few Content-Type values come in every exchange, several times: remembered)
@functools.lru_cache(maxsize=256)
def is_json_media_type(content_type: str | None) -> bool:
    return _JSON_MEDIA_TYPE.match(media_type(content_type)) is not None


def header_text(value: bytes) -> str:
    """A header value's bytes as the transcript's text: UTF-8 (what clients send beyond ASCII
    today), else Latin-1 (RFC 9110 obs-text), so that a value's bytes in the file are the bytes
    on the wire whenever they are UTF-8 (as Latin-1 text, `é` was written as `Ã©`)."""
    if value.isascii():
        return value.decode("ascii")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


def header_bytes(value: str) -> bytes:
    """A header value's text as the bytes to send: the inverse of `header_text` for every
    value it reads as UTF-8. Text whose Latin-1 bytes are UTF-8 beyond ASCII (`cafÃ©`) is what
    a recorder before `header_text` wrote for UTF-8 bytes (Latin-1 text): those bytes."""
    try:
        raw = value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogateescape")
    if raw.isascii():
        return raw
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return value.encode("utf-8")
    return raw


@functools.lru_cache(maxsize=256)
def is_event_stream(content_type: str | None) -> bool:
    return media_type(content_type) == "text/event-stream"


def _set_json_body(message: _Message, body: bytes) -> None:
    """Set a JSON body in canonical form, keeping its parsed value as `message.json`."""
    body, value, strict = _canonical_json(body)
    object.__setattr__(message, "body", body)
    if value is not NOT_JSON:
        message.__dict__["json"] = value  # the cached_property's slot: parsed once, not twice
        message.__dict__["_strict_json"] = strict


# header names already found valid (the same few come in every exchange): not checked again
_VALID_NAMES: set[str] = set()
_MAX_VALID_NAMES = 4096

AFTER_TAG = re.compile(r"^@after ([^\s/\\]+\.http)\Z")
"""A file-level tag (a comment of the file's head): `@after 04-send-message.http` names a
transcript of the same folder whose state this one reads (`Transcript.after`)."""


DOWNSTREAM_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*\Z")
"""A downstream's name (`model`, `tools`, `peer-1`): what `@call` and `@downstream` name."""

DOWNSTREAM_TAG = re.compile(r"^@downstream ([A-Za-z][A-Za-z0-9_-]*) (\S+)\Z")
"""A file-level tag (a comment of the file's head): `@downstream model https://api.example/v1`
says where the calls named `model` went (the upstream's URL, never with credentials):
`Transcript.downstreams`."""


@dataclass(frozen=True)
class CallTag:
    """What `# @call NAME exchange N [frame K] [ambiguous]` says of a call block: the agent's
    own call to the downstream NAME (its model, an MCP tool server, a peer agent), made while
    it answered exchange N of the file (1-based, an A2A exchange before it); `frame` K when
    it went out after the K-th frame of N's streamed reply (None: before the reply's first
    byte); `ambiguous` when the recorder could not tell which of the exchanges open at the
    time caused it (N is the earliest of them)."""

    name: str
    exchange: int
    frame: int | None = None
    ambiguous: bool = False

    def __post_init__(self) -> None:
        if type(self.name) is not str or not DOWNSTREAM_NAME.match(self.name):
            raise ValueError(
                f"a downstream's name is a letter then letters, digits, - or _: {self.name!r}"
            )
        if type(self.exchange) is not int or self.exchange < 1:
            raise ValueError("a call's exchange is the 1-based number of an exchange")
        if self.frame is not None and (type(self.frame) is not int or self.frame < 1):
            raise ValueError("a call's frame is a 1-based frame number (none: before the reply)")

    @property
    def text(self) -> str:
        """The tag as a transcript writes it, without the comment's `# `."""
        frame = "" if self.frame is None else f" frame {self.frame}"
        ambiguous = " ambiguous" if self.ambiguous else ""
        return f"@call {self.name} exchange {self.exchange}{frame}{ambiguous}"


class Headers(Sequence[tuple[str, str]]):
    """Ordered (name, value) pairs; names keep their case and compare case-insensitively."""

    __slots__ = ("_first", "_items")

    _items: tuple[tuple[str, str], ...]
    # lowercase name -> its first value, made at the first look-up (`get`, `in`)
    _first: dict[str, str] | None

    def __init__(self, items: HeadersLike = ()) -> None:
        if isinstance(items, Headers):
            pairs: tuple[tuple[str, str], ...] = items._items
        else:
            source = items.items() if isinstance(items, Mapping) else items
            checked = []
            valid = _VALID_NAMES
            for name, value in source:
                if type(name) is not str:
                    name = str(name)
                if type(value) is not str:
                    value = str(value)
                value = value.strip()
                if name not in valid:
                    if not _TOKEN.match(name):
                        raise ValueError(f"invalid header name {name!r}")
                    if name.startswith("#"):
                        # a .http line starting with "#" is a comment, "###" a new exchange
                        raise ValueError(f"a header name may not start with '#': {name!r}")
                    if len(valid) < _MAX_VALID_NAMES:
                        valid.add(name)
                if "\r" in value or "\n" in value or "\0" in value:
                    raise ValueError(f"header {name} has a line break or NUL in its value")
                checked.append((name, value))
            pairs = tuple(checked)
        object.__setattr__(self, "_items", pairs)
        object.__setattr__(self, "_first", None)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Headers are immutable")

    @overload
    def __getitem__(self, index: int) -> tuple[str, str]: ...
    @overload
    def __getitem__(self, index: slice) -> Headers: ...
    def __getitem__(self, index: int | slice) -> tuple[str, str] | Headers:
        if isinstance(index, slice):
            return Headers(self._items[index])
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._items)

    def _folded(self) -> tuple[tuple[str, str], ...]:
        return tuple((name.lower(), value) for name, value in self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Headers):
            return self._folded() == other._folded()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._folded())

    def __repr__(self) -> str:
        return f"Headers({list(self._items)!r})"

    def _first_values(self) -> dict[str, str]:
        first = self._first
        if first is None:
            first = {}
            for n, v in self._items:
                first.setdefault(n.lower(), v)
            object.__setattr__(self, "_first", first)
        return first

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        return name.lower() in self._first_values()

    def get(self, name: str, default: str | None = None) -> str | None:
        """The first value of `name` (case-insensitive), or `default`."""
        return self._first_values().get(name.lower(), default)

    def get_all(self, name: str) -> list[str]:
        wanted = name.lower()
        return [v for n, v in self._items if n.lower() == wanted]

    def names(self) -> list[str]:
        return [n for n, _ in self._items]

    def without(self, *names: str) -> Headers:
        """A copy without every field named in `names` (case-insensitive)."""
        drop = {n.lower() for n in names}
        return Headers(tuple((n, v) for n, v in self._items if n.lower() not in drop))

    def replaced(self, name: str, value: str) -> Headers:
        """A copy where `name` has exactly one value: in place of the first, else appended."""
        wanted = name.lower()
        out: list[tuple[str, str]] = []
        done = False
        for n, v in self._items:
            if n.lower() == wanted:
                if not done:
                    out.append((n, value))
                    done = True
            else:
                out.append((n, v))
        if not done:
            out.append((name, value))
        return Headers(out)


def _to_headers(value: HeadersLike) -> Headers:
    return value if isinstance(value, Headers) else Headers(value)


def _to_bytes(value: bytes | bytearray | memoryview | str) -> bytes:
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


class _Message:
    """What requests and responses share: headers, a body, JSON access."""

    headers: Headers
    body: bytes

    @property
    def content_type(self) -> str | None:
        return self.headers.get("Content-Type")

    @property
    def is_grpc(self) -> bool:
        """Whether this is a gRPC call's request or reply (its body is ProtoJSON)."""
        return False

    @property
    def is_json(self) -> bool:
        """Whether the body is JSON: by its media type, or a gRPC message (not a stream's
        frames)."""
        if self.is_grpc:
            return getattr(self, "events", None) is None
        return is_json_media_type(self.content_type)

    @cached_property
    def json(self) -> Any:
        """The body parsed as JSON, or None when it is empty or not JSON."""
        if not self.body:
            return None
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError):
            return None

    @property
    def text(self) -> str:
        """The body decoded as UTF-8 (undecodable bytes replaced)."""
        return self.body.decode("utf-8", errors="replace")

    @property
    def json_is_strict(self) -> bool:
        """Whether the body is JSON (under a JSON media type) whose value holds only plain
        JSON types and finite numbers: no NaN or Infinity, which Python's `json` reads and
        writes but JSON has not. Then any JSON encoder writes `.json` as `json` would,
        floats' spelling aside."""
        return bool(self.__dict__.get("_strict_json", False))


@dataclass(frozen=True, eq=True)
class Request(_Message):
    """One HTTP request as recorded: `POST /a2a/jsonrpc HTTP/1.1`, headers, body; or a gRPC
    call: `GRPC /lf.a2a.v1.A2AService/SendMessage` (`http_version=""`), metadata, message."""

    method: str
    target: str
    headers: Headers = field(default_factory=Headers)
    body: bytes = b""
    http_version: str = "HTTP/1.1"

    def __post_init__(self) -> None:
        if self.method not in _COMMON_METHODS and not _METHOD.match(self.method):
            raise ValueError(f"invalid request method {self.method!r}")
        if not _REQUEST_TARGET.match(self.target):
            raise ValueError(f"invalid request target {self.target!r} (empty or has whitespace)")
        version = self.http_version
        if version == "":
            if self.method != GRPC_METHOD:
                raise ValueError(f"a request without an HTTP version is a gRPC call: {version!r}")
        elif version != "HTTP/1.1" and not _HTTP_VERSION.match(version):
            raise ValueError(f"invalid HTTP version {version!r}")
        headers = self.headers
        if type(headers) is not Headers:
            headers = _to_headers(headers)
            object.__setattr__(self, "headers", headers)
        body = self.body
        if type(body) is not bytes:
            body = _to_bytes(body)
        if version == "" or is_json_media_type(headers.get("Content-Type")):
            _set_json_body(self, body)
        else:
            object.__setattr__(self, "body", body)

    @property
    def is_grpc(self) -> bool:
        return self.http_version == ""

    @property
    def path(self) -> str:
        """The target without its query string."""
        return self.target.partition("?")[0]

    def with_values(
        self,
        *,
        target: str | None = None,
        headers: HeadersLike | None = None,
        body_text: bytes | None = None,
    ) -> Request:
        """This request with values replaced in its target, headers or body (carry-forward: a
        recorded id made live), its method and version kept. `body_text` is this body's text
        with values replaced inside its strings (JSON strings as JSON strings, as
        `map_json_strings` writes them), so a canonical body stays canonical: it is not parsed
        and printed again (its parse is made anew when asked for). `replace(request, body=...)`
        is the constructor for any other body."""
        if target is not None and not _REQUEST_TARGET.match(target):
            raise ValueError(f"invalid request target {target!r} (empty or has whitespace)")
        edited = copy.copy(self)
        if target is not None:
            object.__setattr__(edited, "target", target)
        if headers is not None:
            object.__setattr__(
                edited, "headers", headers if type(headers) is Headers else _to_headers(headers)
            )
        if body_text is not None:
            object.__setattr__(edited, "body", body_text)
            edited.__dict__.pop("json", None)  # the parse of the old body
        return edited


@dataclass(frozen=True, eq=True)
class Response(_Message):
    """One HTTP response: `HTTP/1.1 200 OK`, headers, body (and SSE events for a stream).

    A gRPC call's (`http_version="GRPC"`): `GRPC 5 NOT_FOUND`, the initial metadata, the reply
    message or the call's google.rpc.Status as ProtoJSON, or a server stream's messages as
    `events`; `trailers` is its trailing metadata (empty for HTTP). A gRPC reply without
    events and without a body is a stream of no message (`events=()`): every unary reply has
    a message (`{}` at least) or a status."""

    status: int
    reason: str = ""
    headers: Headers = field(default_factory=Headers)
    body: bytes = b""
    events: tuple[SseEvent, ...] | None = None
    http_version: str = "HTTP/1.1"
    trailers: Headers = field(default_factory=Headers)

    def __post_init__(self) -> None:
        grpc = self.http_version == GRPC_VERSION
        if grpc:
            if self.status not in _GRPC_STATUS_CODES:
                raise ValueError(f"invalid gRPC status code {self.status}: expected 0 to 16")
        elif not 100 <= self.status <= 999:
            raise ValueError(f"invalid status code {self.status}")
        reason = self.reason
        if "\r" in reason or "\n" in reason or "\0" in reason:
            raise ValueError("the reason phrase has a line break or NUL")
        object.__setattr__(self, "reason", reason.strip())
        if (
            not grpc
            and self.http_version != "HTTP/1.1"
            and not _HTTP_VERSION.match(self.http_version)
        ):
            raise ValueError(f"invalid HTTP version {self.http_version!r}")
        headers = self.headers
        if type(headers) is not Headers:
            headers = _to_headers(headers)
            object.__setattr__(self, "headers", headers)
        trailers = self.trailers
        if type(trailers) is not Headers:
            trailers = _to_headers(trailers)
            object.__setattr__(self, "trailers", trailers)
        if trailers and not grpc:
            raise ValueError("only a gRPC reply has trailers (trailing metadata)")
        body = self.body
        if type(body) is not bytes:
            body = _to_bytes(body)
        events = self.events
        if grpc:
            self._grpc_content(body, events)
            return
        content_type = headers.get("Content-Type")
        if events is not None:
            events = tuple(events)
            if not is_event_stream(content_type):
                raise ValueError("a response with SSE events needs Content-Type: text/event-stream")
            body = sse.serialize(events)
        elif is_event_stream(content_type):
            parsed = sse.parse_lossless(body)
            if parsed is not None:
                events = parsed
                body = sse.serialize(parsed)
        object.__setattr__(self, "events", events)
        if events is None and is_json_media_type(content_type):
            _set_json_body(self, body)
        else:
            object.__setattr__(self, "body", body)

    def _grpc_content(self, body: bytes, events: tuple[SseEvent, ...] | None) -> None:
        """A gRPC reply's content: its messages as events, or its JSON body."""
        if events is None and not body:
            events = ()
        if events is not None:
            events = tuple(events)
            object.__setattr__(self, "events", events)
            object.__setattr__(self, "body", sse.serialize(events))
        else:
            _set_json_body(self, body)

    @property
    def is_grpc(self) -> bool:
        return self.http_version == GRPC_VERSION

    @property
    def is_stream(self) -> bool:
        return self.events is not None

    def with_content(
        self,
        headers: Headers,
        *,
        body: bytes = b"",
        events: tuple[SseEvent, ...] | None = None,
    ) -> Response:
        """This reply's status line (and trailers) with other headers and content: a body, or
        frames."""
        return Response(
            status=self.status,
            reason=self.reason,
            headers=headers,
            body=body,
            events=events,
            http_version=self.http_version,
            trailers=self.trailers,
        )


@dataclass(frozen=True, eq=True)
class Exchange:
    """A request and its response, with a title (the text after `###`) and comments.

    `truncated` marks a response that did not arrive whole (the client went away mid-stream,
    the upstream reset the connection); it is written as `# @truncated` and a player compares
    only what was recorded. `push_config` marks a push notification delivery (the agent's
    POST to the client's webhook, and the webhook's answer): the number (1-based, in its file)
    of the exchange whose request registered the config, written as `# @push config N`.
    `call` marks a call the agent made to a downstream of its own (its model, an MCP server,
    a peer) while it answered an exchange of the file: `# @call NAME exchange N [frame K]`
    (`CallTag`). Both are requests the agent sent, never the client (`sent_by_agent`).
    `line` is where the exchange starts in its file (not compared).
    """

    request: Request
    response: Response
    title: str = ""
    comments: tuple[str, ...] = ()
    truncated: bool = False
    push_config: int | None = None
    call: CallTag | None = None
    line: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.request.is_grpc != self.response.is_grpc:
            raise ValueError(
                "a gRPC call (GRPC /service/Method) and its reply (GRPC 0 OK) go together: "
                "the request and the reply are of different bindings"
            )
        title = self.title
        if "\r" in title or "\n" in title:
            raise ValueError("an exchange title is one line")
        object.__setattr__(self, "title", title.strip())
        comments = self.comments
        if type(comments) is not tuple:
            comments = tuple(comments)
        for comment in comments:
            if any(ch in comment for ch in "\r\n"):
                raise ValueError("a comment is one line")
            if comment.strip() == "@truncated":
                raise ValueError('"@truncated" is a tag: set Exchange.truncated instead')
            first = comment.split(maxsplit=1)[:1]
            if first == ["@push"]:
                raise ValueError('"@push config N" is a tag: set Exchange.push_config instead')
            if first == ["@call"]:
                raise ValueError('"@call NAME exchange N" is a tag: set Exchange.call instead')
        if self.push_config is not None and (
            type(self.push_config) is not int or self.push_config < 1
        ):
            raise ValueError("push_config is the 1-based number of an exchange")
        if self.call is not None:
            if not isinstance(self.call, CallTag):
                raise ValueError("call is a CallTag (or None)")
            if self.push_config is not None:
                raise ValueError("an exchange is a push delivery or a call, not both")
        object.__setattr__(self, "comments", comments)

    @property
    def sent_by_agent(self) -> bool:
        """Whether the agent sent this request, not the client: a push delivery to the
        client's webhook, or a call to a downstream of its own. The player does not send it,
        an export leaves it out, and it counts as no A2A exchange."""
        return self.push_config is not None or self.call is not None


@dataclass(frozen=True, eq=True)
class Transcript:
    """The exchanges of one `.http` file, in order, with the file's leading comments.

    `source` is where it was read from (not compared).
    """

    exchanges: tuple[Exchange, ...] = ()
    comments: tuple[str, ...] = ()
    format_version: int = 1
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "exchanges", tuple(self.exchanges))
        comments = tuple(self.comments)
        for comment in comments:
            if any(ch in comment for ch in "\r\n"):
                raise ValueError("a comment is one line")
        object.__setattr__(self, "comments", comments)

    def __iter__(self) -> Iterator[Exchange]:
        return iter(self.exchanges)

    def __len__(self) -> int:
        return len(self.exchanges)

    @property
    def after(self) -> tuple[str, ...]:
        """The files this one needs played first (its `# @after NAME.http` comments, in
        order): files of the same folder whose state its replies read (a ListTasks that
        lists the tasks they created)."""
        found = (AFTER_TAG.match(comment.strip()) for comment in self.comments)
        return tuple(match.group(1) for match in found if match is not None)

    @property
    def downstreams(self) -> dict[str, str]:
        """Each downstream the file's calls went to, by name: its `# @downstream NAME URL`
        head tags, in order (the first of a name twice, which `recorder check` fails)."""
        found: dict[str, str] = {}
        for comment in self.comments:
            match = DOWNSTREAM_TAG.match(comment.strip())
            if match is not None:
                found.setdefault(match.group(1), match.group(2))
        return found

    @property
    def calls(self) -> tuple[Exchange, ...]:
        """Its call blocks (`Exchange.call`), in file order."""
        return tuple(exchange for exchange in self.exchanges if exchange.call is not None)

    @property
    def recorded_base_url(self) -> str | None:
        """The agent address it was recorded against: `http://` + the first Host header (of
        a request the client sent: a call's Host is a downstream listener's)."""
        for exchange in self.exchanges:
            if exchange.sent_by_agent:
                continue
            host = exchange.request.headers.get("Host")
            if host:
                return f"http://{host}"
        return None
