"""Replay state: alias generated values, carry them forward, compare replies, bless updates.

One `ReplayState` per transcript file, fed its exchanges in order (see DESIGN.md, "Generated
values: aliasing, not masking"):

    state = ReplayState(rules, recorded_base="http://localhost:41242", live_base=agent_url)
    for exchange in transcript:
        live = send(state.prepare(exchange.request))      # the I/O shell's job
        mismatches = state.compare(exchange, live)        # [] means the reply matches
        blessed = state.bless(exchange.response, live)    # for --update only

The rules of the comparison, numbered so that code and tests can point at them:

1. A string is *generated* when it sits at a generated member (`rules.generated_fields`, a
   `generated_fields_beside` member beside one of its siblings, a `generated_paths` place) or,
   as a whole or in part, matches a generated shape (UUID, RFC 3339 time). An empty string is
   never generated.
2. A value the client sent itself is never generated: every string of the recorded request (body,
   path segments, query values, header values) and every shape inside them that is not a value
   learned from an earlier reply is a *client value*, for the rest of the transcript. Client
   values are compared exactly (the JSON-RPC `id`, the user's `messageId`).
3. A recorded generated value and the live value in the same place are *paired*. For strict
   kinds (ids) pairs must form a one-to-one mapping across the whole transcript: a recorded
   value already paired with another live value, or a live value already paired with another
   recorded value, is a mismatch at that path (a reply that names the wrong task). For loose
   kinds (`rules.loose_kinds`, timestamps) any value of the kind matches; the first pairing is
   kept for carry-forward and bless.
4. Aliases are numbered by first appearance of the recorded value in the transcript, per kind:
   `<id:1>`, `<time:1>`. Reports show aliases, and the real values in the message.
5. The recorded agent address (`recorded_base`) in a recorded string and the live address in
   a live string are both read as `<agent>`, so a card recorded on localhost:41242 matches one
   served on 127.0.0.1:any-port.
6. Objects compare member by member (order free), arrays item by item; an array of another
   length is aligned first (`recorder.replay.diff.align`) so a dropped item is one mismatch.
   `rules.ignored_paths` (and the error free-text paths unless `compare_error_message`) are
   skipped; `rules.unordered_paths` arrays compare as multisets.
7. SSE replies compare frame by frame: count, order, `event:` names, each frame's data (JSON or
   text). Frames that hold only comments (keep-alive pings) are not frames of the reply. A
   `truncated` recording compares only the frames it holds (a truncated single body: status
   and headers only).
8. The status code and the Content-Type (media type) are always compared; other headers unless
   `rules.ignored_headers` or `rules.secret_headers` name them. A member that
   `rules.secret_fields` names is compared for presence only: the recording holds a placeholder
   (`{{API_KEY}}`) where the agent sends the secret.
9. A secret placeholder (`secret_placeholders`) left in a recorded string, because its
   variable is not set (the player fills the set ones first), matches any text: the recorder
   wrote a secret the agent made and echoed (`"key {{API_KEY}} accepted"`) so.

Fast path: the bodies of both replies (the pretty JSON the model holds, or the serialized SSE
frames) are split by one regex (`Rules.token_pattern`) into the text between generated values
and those values: a member's whole string value that is generated (by its name or its shape).
A live JSON reply given as it came over the wire (`LiveReply`, what the player passes) is not
pretty-printed for this: compact JSON is split as it came (`Rules.compact_token_pattern`)
against the recorded value written compactly, any other layout is parsed and both sides are
written on one line; its `Response` is built only when the fast path cannot decide.
When the text between is identical and the values pair under rule 3, the reply matches and no
tree is walked; the pairs are checked as sets, not one by one. Anything else (another key
order, compact spacing, an ignored place that differs, a generated value inside a longer
string or as an array item that differs) falls back to the walk, which decides.

The fast path says "equal" only where the walk would, with one documented exception: a shape
that is not a member's whole value (inside a longer string, or an array item) and is identical
on both sides is taken as literal text, where the walk would also check that the mapping
pairs it with itself. That needs a live agent to emit a recorded uuid it was never sent. A
non-shape value the walk would alias (an `id` "task-1" beside a contextId) is checked against
the learned values before the fast path may pass.

The walk (`_normalize`) pairs the values of both trees place by place (rules 1-6) and returns
both normalized: generated values as their aliases, ignored members left out, arrays of
another length or order laid out item by item. A place that compares equal comes back as one
and the same object on both sides, so `golden is live` is the verdict, and the normalized
values share every part that matches. Only when they differ does deepdiff run, on the
normalized values, to say where and how (`_explain`); it passes over the shared parts without
looking into them, and the notes the walk kept (which real ids stand behind two aliases, an
array's item counts) become the mismatches' messages.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import gc
import itertools
import json
import re
from collections.abc import Callable, Iterable
from operator import itemgetter
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import orjson

from recorder import sse
from recorder.jsonpath import State, format_path
from recorder.model import (
    Exchange,
    Headers,
    Request,
    Response,
    SseEvent,
    is_event_stream,
    is_json_media_type,
    media_type,
)
from recorder.redact import PLACEHOLDER
from recorder.replay.diff import ABSENT, Mismatch, align
from recorder.rules import Rules

__all__ = ["LiveReply", "ReplayState"]

_AGENT = "<agent>"
_NOT_SCANNED = frozenset({"host", "content-length"})
_SMALL = 24  # up to this many values in a reply, the fast path pairs them in one plain loop
_BULK = 16  # from this many values on, check shapes with one regex call over them all
_GC_PAUSE_BYTES = 256 * 1024  # replies at least this large are compared with the collector paused
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
# the line breaks and indentation of the model's pretty JSON (never inside a string of valid
# JSON, where a raw line break is not allowed)
_LAYOUT = re.compile("\n *")
# what the model's pretty JSON writes as \uXXXX escapes (DEL, C1 controls, U+2028, U+2029)
_INVISIBLE = re.compile("[\x7f-\x9f\u2028\u2029]")
_Keys = tuple[str | int, ...]


def _disagree(pairs: dict[str, str], known: dict[str, str]) -> bool:
    """Whether `pairs` maps a value `known` already maps to something else."""
    return any(known[key] != pairs[key] for key in pairs.keys() & known.keys())


def _map_json_strings(text: str, mapper: Callable[[str], str]) -> str:
    """JSON text with each string literal passed through `mapper`; everything else kept."""

    def sub(match: re.Match[str]) -> str:
        token = match.group()
        value = _string_value(token)
        if value is None:
            return token  # no JSON string (the text is no JSON): kept as it is
        new = mapper(value)
        if new == value:
            return token
        return json.dumps(new, ensure_ascii=False)

    return _JSON_STRING.sub(sub, text)


class _NotJson:
    """Marks a body or frame whose text is not JSON."""


_NOT_JSON = _NotJson()
_EMPTY = object()
_SAME_HEADERS = Headers()  # marks "prepare leaves these headers as they are"


def _base(url: str | None) -> tuple[str, str] | None:
    """`"http://localhost:41242/"` -> ("http://localhost:41242", "localhost:41242")."""
    if not url:
        return None
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}", parts.netloc


_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def _loopback_spellings(url: str | None) -> tuple[str, ...]:
    """`http://127.0.0.1:5000` -> that URL, then `http://localhost:5000` and
    `http://[::1]:5000`: the names a loopback agent may give itself. Other URLs: themselves."""
    if url is None:
        return ()
    scheme, _, netloc = url.partition("://")
    host, colon, port = netloc.rpartition(":") if not netloc.endswith("]") else (netloc, "", "")
    if not colon or not port.isdigit():
        host, colon, port = netloc, "", ""
    if host.lower() not in _LOOPBACK:
        return (url,)
    others = [f"{scheme}://{name}{colon}{port}" for name in _LOOPBACK if name != host]
    return (url, *others)


def _string_value(token: str) -> str | None:
    """The value of a JSON string token (`"a\\"b"` -> `a"b`), or None when it is no valid JSON
    string (a bad escape, a raw control character: a body that is not JSON)."""
    if "\\" not in token:
        return token[1:-1]
    try:
        value: str = json.loads(token)
    except ValueError:
        return None
    return value


def _parse_json_text(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _body_value(message: Response) -> Any:
    """The parsed body, `_EMPTY`, or `_NOT_JSON` (uses the cached `Response.json`)."""
    if not message.body:
        return _EMPTY
    value = message.json
    if value is None and message.body.strip() != b"null":
        return _NOT_JSON
    return value


def _same_scalar(a: Any, b: Any) -> bool:
    # JSON true is not 1, and 1 is not "1"
    if type(a) is not type(b) and not (
        isinstance(a, int | float)
        and isinstance(b, int | float)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        return False
    return bool(a == b)


def _real_frames(events: tuple[SseEvent, ...]) -> list[SseEvent]:
    """The frames of a reply: comment-only frames (keep-alive pings) are not part of it."""
    return [
        e
        for e in events
        if not (e.data is None and e.event is None and e.id is None and e.retry is None)
    ]


_ONE_LINE = json.JSONEncoder(ensure_ascii=False, separators=(",", ": "))


def _one_line_text(value: Any) -> str:
    """`value` as the model's pretty JSON would be with its line breaks and indentation taken
    out: `{"a": [1,2],"b": "c"}` (C encoder; non-ASCII kept, the same characters escaped)."""
    text = _ONE_LINE.encode(value)
    if text.isascii():
        return text.replace("\x7f", "\\u007f") if "\x7f" in text else text
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _looks_compact(body: bytes) -> bool:
    """Whether a JSON body seems written without spaces (`{"a":1}`): which way to try first."""
    head = body[:256]
    return b'":' in head and b'": ' not in head and b"\n" not in head


def _golden_one_line(message: Response) -> str:
    """The one-line text (see `_one_line_text`) of a recorded body known to be JSON. The model
    holds a JSON body pretty-printed, and a line break cannot sit inside a string of valid
    JSON, so taking the layout out is enough; a body the model kept as it came (duplicate
    keys, another layout) gives another text, which only sends the comparison the slow way."""
    return _LAYOUT.sub("", message.body.decode("utf-8", errors="replace"))


def _golden_compact(message: Response, value: Any) -> str:
    """A recorded JSON body written without spaces, as agents send JSON: by orjson (~10x
    faster than `json`'s C encoder) when the model says the value is strict JSON, else (a NaN
    orjson would write as null) by `json`. orjson spells some floats' exponents otherwise
    (`1.5e-7`, not `1.5e-07`): such a reply only goes the slow way."""
    if message.json_is_strict:
        try:
            return orjson.dumps(value).decode()
        except orjson.JSONEncodeError:  # e.g. an integer past 64 bits
            pass
    return _COMPACT.encode(value)


class LiveReply:
    """A live reply as it arrived: status, reason, header pairs, raw body bytes.

    `ReplayState.compare` takes it in place of a `Response` so that a JSON reply that matches
    is never pretty-printed: the fast path reads the wire bytes (parsed and written on one line
    by the C encoder), and the model's `Response` (`.response`, built on first use) is made
    only for a stream, a reply the fast path cannot decide, and `bless`. Header values are
    stripped as `Headers` strips them.
    """

    __slots__ = ("_response", "body", "headers", "http_version", "reason", "status")

    def __init__(
        self,
        status: int,
        reason: str,
        headers: Iterable[tuple[str, str]],
        body: bytes,
        http_version: str = "HTTP/1.1",
    ) -> None:
        self.status = status
        self.reason = reason
        self.headers: tuple[tuple[str, str], ...] = tuple(
            (name, value.strip()) for name, value in headers
        )
        self.body = body
        self.http_version = http_version
        self._response: Response | None = None

    @property
    def content_type(self) -> str | None:
        for name, value in self.headers:
            if name.lower() == "content-type":
                return value
        return None

    @property
    def response(self) -> Response:
        """The reply in the model's canonical form (built once, on first use)."""
        if self._response is None:
            self._response = Response(
                status=self.status,
                reason=self.reason,
                # a field named "#..." is valid HTTP that a .http file cannot hold (it reads as a
                # comment): left out here, it is still compared (and reported) from `headers`
                headers=Headers([(n, v) for n, v in self.headers if not n.startswith("#")]),
                body=self.body,
                http_version=self.http_version,
            )
        return self._response

    def __repr__(self) -> str:
        return f"LiveReply({self.status}, {len(self.body)} bytes)"


class ReplayState:
    """The aliasing and carry-forward state of one transcript (see the module docstring)."""

    def __init__(
        self,
        rules: Rules,
        *,
        recorded_base: str | None,
        live_base: str,
        secret_placeholders: Iterable[str] = (),
    ) -> None:
        self.rules = rules
        # rule 9: `{{NAME}}` of these, left in a recorded string (its variable is not set),
        # stands for any text: a secret the agent made and echoed, written as its placeholder
        self._secret_placeholders = frozenset(secret_placeholders)
        recorded = _base(recorded_base)
        live = _base(live_base)
        self._recorded_url: str | None = recorded[0] if recorded else None
        self._recorded_host: str | None = recorded[1] if recorded else None
        self._live_url: str | None = live[0] if live else None
        self._live_host: str | None = live[1] if live else None
        if self._recorded_url is None or self._live_url is None:
            self._recorded_url = self._live_url = None
        # every spelling of each address (an agent on 127.0.0.1 may call itself localhost)
        self._live_urls: tuple[str, ...] = _loopback_spellings(self._live_url)
        self._recorded_urls: tuple[str, ...] = _loopback_spellings(self._recorded_url)
        self._bless_url = self._recorded_url  # the recorded spelling bless writes back
        compiled = _compile(rules)
        self._shapes = compiled.shapes
        self._loose = rules.loose_kinds
        self._fields = compiled.fields
        self._beside = compiled.beside
        self._ignored = rules.ignored_matcher
        self._unordered = rules.unordered_matcher
        self._generated_paths = rules.generated_matcher
        self._tokens = compiled.tokens
        self._compact_tokens = compiled.compact_tokens
        self._token_kinds = compiled.kinds
        self._value_columns = compiled.value_columns
        self._skip_headers = compiled.skip_headers
        self._secret_fields = frozenset(rules.secret_fields)
        # rule 3: the mapping, both ways; rule 4: aliases of recorded values
        self._golden_to_live: dict[str, str] = {}
        self._live_to_golden: dict[str, str] = {}
        self._seen: dict[str, str] = {}  # recorded value -> kind, in order of first sight
        self._alias: dict[str, str] = {}
        self._counters: dict[str, int] = {}
        self._numbered = 0
        # learned non-identity values that are no shape: the fast path must see them pair
        self._literal_danger: set[str] = set()
        # rule 2
        self._client: set[str] = set()
        self._scanned: tuple[Request, frozenset[str]] | None = None
        self._last_match: tuple[Response, Response | LiveReply] | None = None
        self._line_patterns: dict[str | None, re.Pattern[str]] = {}
        self._forwarded_headers: dict[tuple[tuple[str, str], ...], Headers] = {}
        self._dashed = compiled.dashed

    # --- the mapping ------------------------------------------------------------------------

    @property
    def mapping(self) -> dict[str, str]:
        """Recorded generated value -> live value, as learned so far (a copy)."""
        return dict(self._golden_to_live)

    def alias(self, golden: str, kind: str) -> str:
        """The alias of a recorded generated value, numbered by first sight per kind (rule 4)."""
        self._seen.setdefault(golden, kind)
        return self._alias_of(golden) or f"<{kind}:?>"

    def _alias_of(self, golden: str) -> str | None:
        """The alias of a value already seen, or None. Numbers are given lazily, in seen order."""
        alias = self._alias.get(golden)
        if alias is None and golden in self._seen:
            start = self._numbered
            for value, kind in itertools.islice(self._seen.items(), start, None):
                number = self._counters.get(kind, 0) + 1
                self._counters[kind] = number
                self._alias[value] = f"<{kind}:{number}>"
            self._numbered = len(self._seen)
            alias = self._alias.get(golden)
        return alias

    def _live_alias(self, live: str, kind: str) -> str:
        golden = self._live_to_golden.get(live)
        if golden is not None:
            return self.alias(golden, kind)
        return live

    def _shape_kind(self, value: str) -> str | None:
        if self._shapes is None:
            return None
        match = self._shapes.fullmatch(value)
        if match is None or match.lastgroup is None:
            return None
        return match.lastgroup[2:]

    def _pair(self, golden: str, live: str, kind: str) -> str | None:
        """Pair a recorded and a live generated value (rule 3). None, or why they do not pair."""
        if kind in self._loose:
            golden_kind = self._shape_kind(golden)
            if golden_kind is not None and self._shape_kind(live) != golden_kind:
                return f"expected a {kind} value such as {golden!r}"
            if golden not in self._golden_to_live and live not in self._live_to_golden:
                self._golden_to_live[golden] = live
                self._live_to_golden[live] = golden
            self.alias(golden, kind)
            return None
        self.alias(golden, kind)
        if not live:
            return f"expected a generated value (recorded {golden}), got an empty string"
        if live in self._client and live != golden:
            return (
                f"the reply names {live}, a value the client sent, where the recording has {golden}"
            )
        mapped = self._golden_to_live.get(golden)
        if mapped is not None:
            if mapped == live:
                return None
            other = self._live_to_golden.get(live)
            if other is not None:
                return (
                    f"recorded {golden} is live {mapped}, but the reply names {live}, which is"
                    f" {self.alias(other, kind)} (recorded {other})"
                )
            return f"recorded {golden} is live {mapped}, but the reply names {live}"
        other = self._live_to_golden.get(live)
        if other is not None and other != golden:
            return (
                f"live {live} already stands for {self.alias(other, kind)} (recorded {other}),"
                f" but here the recording has {golden}"
            )
        self._golden_to_live[golden] = live
        self._live_to_golden[live] = golden
        if golden != live and self._shape_kind(golden) is None:
            self._literal_danger.update((golden, live))
        return None

    # --- client values (rule 2) ---------------------------------------------------------------

    def _scan(self, request: Request) -> frozenset[str]:
        """Every string a recorded request carries (JSON strings, path segments, query values,
        header values) and every shape inside them. Cached for the last request seen, which
        `prepare` and then `compare` ask about in turn."""
        if self._scanned is not None and self._scanned[0] is request:
            return self._scanned[1]
        values: set[str] = set()
        body_text = ""
        if request.body:
            try:
                body_text = request.body.decode("utf-8")
            except UnicodeDecodeError:
                body_text = ""
            if request.is_json:
                tokens = _JSON_STRING.findall(body_text)
                if "\\" in body_text:
                    # a string that is no valid JSON string counts as the text it holds
                    values.update([_string_value(token) or token[1:-1] for token in tokens])
                else:
                    values.update([token[1:-1] for token in tokens])
                # when every shape holds a "-" and no '"' (the defaults), and every "-" of the
                # body is inside a string, the shapes are in the strings that hold one (each
                # keeps its quotes, so a match sees the same characters around it as in the body)
                if self._dashed:
                    dashed = [token for token in tokens if "-" in token]
                    if sum(token.count("-") for token in dashed) == body_text.count("-"):
                        body_text = "\n".join(dashed)
            else:
                values.add(body_text)
        target = request.target
        if "%" in target or "+" in target:
            path, _, query = target.partition("?")
            parts = [unquote(segment) for segment in path.split("/")]
            if query:
                for item in query.split("&"):
                    parts.extend(unquote(part.replace("+", " ")) for part in item.split("=", 1))
        else:
            parts = target.replace("?", "/").replace("&", "/").replace("=", "/").split("/")
        # AIP-136 custom methods: /tasks/{id}:cancel
        parts.extend([segment.partition(":")[0] for segment in parts if ":" in segment])
        parts.extend([value for name, value in request.headers if name.lower() not in _NOT_SCANNED])
        values.update(parts)
        if self._shapes is not None:
            # one pass over everything; a line break cannot sit inside a shape match, and the
            # default shapes (uuid, RFC 3339 time) hold a "-": nothing to look at without one
            dashed_parts = [part for part in parts if "-" in part] if self._dashed else parts
            if dashed_parts or body_text:
                everything = body_text + "\n" + "\n".join(dashed_parts)
                values.update([match.group() for match in self._shapes.finditer(everything)])
        values.discard("")
        result = frozenset(values)
        self._scanned = (request, result)
        return result

    def unpaired(self, request: Request) -> set[str]:
        """The values of a recorded request that look generated (a shape, or a value seen at a
        generated place of an earlier reply) but have no live counterpart and are not the
        client's own: `prepare` sends them as recorded. The player looks for them in the
        earlier recorded replies to explain the mismatches that follow."""
        candidates = self._scan(request) - self._golden_to_live.keys() - self._client
        return {
            value
            for value in candidates
            if value in self._seen or self._shape_kind(value) is not None
        }

    def _learn_client_values(self, request: Request) -> None:
        """Rule 2: what the recorded request carries, except values learned from replies."""
        found = self._scan(request) - self._golden_to_live.keys()
        if found:
            self._client |= found

    # --- carry-forward ----------------------------------------------------------------------

    def _forward(self, text: str) -> str:
        """A recorded request string with every learned recorded value made live."""
        mapped = self._golden_to_live.get(text)
        if mapped is not None:
            return mapped
        if self._shapes is not None:
            table = self._golden_to_live
            text = self._shapes.sub(lambda m: table.get(m.group(), m.group()), text)
        return text

    def prepare(self, request: Request) -> Request:
        """The recorded request as it must be sent live: learned values and the address made live.

        Values not learned (the client's own) are sent as recorded.
        """
        changes: dict[str, Any] = {}
        learned = bool(self._golden_to_live) and not self._golden_to_live.keys().isdisjoint(
            self._scan(request)
        )
        if learned:
            if request.body:
                try:
                    text = request.body.decode("utf-8")
                except UnicodeDecodeError:
                    text = None
                if text is not None:
                    # JSON: string by string, in the text, so the canonical layout stays as it is
                    if request.is_json:
                        new_text = self._forward_json_text(text)
                    else:
                        new_text = self._forward_shapes_only(text)
                    if new_text != text:
                        changes["body"] = new_text.encode()
            target = self._forward_target(request.target)
            if target != request.target:
                changes["target"] = target
        headers = self._forward_headers(request.headers, learned=learned)
        if headers is not request.headers:
            changes["headers"] = headers
        if not changes:
            return request
        # the body keeps its (canonical) layout: no need to parse and print it again
        prepared = copy.copy(request)
        for name, change in changes.items():
            object.__setattr__(prepared, name, change)
        if "body" in changes:
            prepared.__dict__.pop("json", None)  # the cached parse of the old body
        return prepared

    def _forward_json_text(self, text: str) -> str:
        """JSON text with learned values made live in its strings; layout and order kept."""
        return _map_json_strings(text, self._forward)

    def _forward_shapes_only(self, text: str) -> str:
        if self._shapes is None:
            return text
        table = self._golden_to_live
        return self._shapes.sub(lambda m: table.get(m.group(), m.group()), text)

    def _forward_segment(self, raw: str, *, plus_is_space: bool = False) -> str:
        decoded = unquote(raw.replace("+", " ") if plus_is_space else raw)
        new = self._forward(decoded)
        if new == decoded and ":" in decoded:
            # AIP-136 custom methods: /tasks/{id}:cancel
            head, colon, tail = decoded.partition(":")
            mapped = self._golden_to_live.get(head)
            if mapped is not None:
                new = mapped + colon + tail
        if new == decoded:
            return raw  # keep the recorded encoding byte for byte
        return quote(new, safe="!$&'()*,;=:@-._~" + ("" if plus_is_space else "+"))

    def _forward_target(self, target: str) -> str:
        path, question, query = target.partition("?")
        new_path = "/".join(self._forward_segment(s) for s in path.split("/"))
        if not question:
            return new_path
        items = []
        for item in query.split("&"):
            name, equals, value = item.partition("=")
            if equals:
                items.append(f"{name}={self._forward_segment(value, plus_is_space=True)}")
            else:
                items.append(item)
        return f"{new_path}?{'&'.join(items)}"

    def _forward_headers(self, headers: Headers, *, learned: bool) -> Headers:
        """Headers with the live Host, the live address and (when `learned` values may be in
        them) learned values made live. Without learned values the result depends only on the
        headers, so it is kept per distinct header list (a transcript repeats one or two)."""
        key: tuple[tuple[str, str], ...] | None = None
        if not learned:
            key = tuple(headers)
            known = self._forwarded_headers.get(key)
            if known is not None:
                return headers if known is _SAME_HEADERS else known
        out: list[tuple[str, str]] = []
        changed = False
        cacheable = True
        for name, value in headers:
            new = value
            folded = name.lower()
            if folded == "host":
                if self._live_host is not None:
                    new = self._live_host
            else:
                forward = learned or folded == "content-length"  # _scan skips content-length
                recorded_url, live_url = self._recorded_url, self._live_url
                if recorded_url is not None and live_url is not None and recorded_url in new:
                    new = new.replace(recorded_url, live_url)
                    forward = True
                if forward and self._golden_to_live:
                    new = self._forward(new)
                    cacheable = False  # depends on what is learned by now
            changed = changed or new != value
            out.append((name, new))
        result = Headers(out) if changed else headers
        if key is not None and cacheable:
            self._forwarded_headers[key] = result if changed else _SAME_HEADERS
        return result

    # --- comparison ---------------------------------------------------------------------------

    def compare(self, golden: Exchange, live: Response | LiveReply) -> list[Mismatch]:
        """Normalize and compare the recorded reply with the live one, learn pairs. [] = match.

        `live` is a `Response`, or a `LiveReply` as it arrived (cheaper: see `LiveReply`).
        """
        if len(golden.response.body) + len(live.body) >= _GC_PAUSE_BYTES and gc.isenabled():
            # a large reply parses into many containers, and the collector's full passes over
            # them (they hold no cycles) would cost more than the parse: up to 4x at 10 MiB
            gc.disable()
            try:
                return self._compare(golden, live)
            finally:
                gc.enable()
        return self._compare(golden, live)

    def _compare(self, golden: Exchange, live: Response | LiveReply) -> list[Mismatch]:
        self._learn_client_values(golden.request)
        expected = golden.response
        out: list[Mismatch] = []
        if expected.status != live.status:
            out.append(Mismatch("status", expected.status, live.status))
        self._compare_headers(expected.headers, live.headers, out)
        if isinstance(live, LiveReply):
            if (
                golden.truncated
                and not expected.is_stream
                and not is_event_stream(live.content_type)
            ):
                pass  # a truncated single body: status and headers only (rule 7)
            elif (
                not golden.truncated
                and not expected.is_stream
                and expected.is_json
                and is_json_media_type(live.content_type)
            ):
                if not self._one_line_fast_path(expected, live.body):
                    # the fast path on the pretty texts would say the same: straight to the walk
                    self._compare_bodies(expected, live.response, out, fast=False)
            else:
                self._compare_replies(expected, live.response, golden.truncated, out)
        else:
            self._compare_replies(expected, live, golden.truncated, out)
        self._last_match = (expected, live) if not out else None
        return out

    def _compare_replies(
        self, expected: Response, live: Response, truncated: bool, out: list[Mismatch]
    ) -> None:
        if expected.is_stream or live.is_stream:
            self._compare_streams(expected, live, truncated, out)
        elif not truncated:
            self._compare_bodies(expected, live, out)

    def _one_line_fast_path(self, expected: Response, live_body: bytes) -> bool:
        """The fast path (see the module docstring) on a JSON body as it came over the wire,
        without pretty-printing the live reply. A compact body (as Starlette sends JSON) is
        read as it is, against the recorded value written compactly: no parse of the live
        reply at all (text equal but for generated strings is JSON of the same shape). Any
        other layout: the live reply parsed and both written on one line (`_one_line_text`)."""
        if not expected.body or not live_body:
            return False
        golden_value = _body_value(expected)
        if golden_value is _NOT_JSON or golden_value is _EMPTY:
            return False  # e.g. a line break inside a string: the walk decides
        # (read as it came only with the default shapes: a rules file's own shape might match
        # a backslash or a quote, which would let text that is no JSON through)
        if self._dashed and _looks_compact(live_body):
            try:
                live_text = live_body.decode("utf-8")
            except UnicodeDecodeError:
                live_text = None
            if live_text is not None and self._text_fast_path_text(
                _golden_compact(expected, golden_value), live_text, compact=True
            ):
                return True
        try:
            live_value = json.loads(live_body)
        except (ValueError, RecursionError):
            return False
        return self._text_fast_path_text(_golden_one_line(expected), _one_line_text(live_value))

    def _compare_headers(
        self, expected: Headers, actual: Iterable[tuple[str, str]], out: list[Mismatch]
    ) -> None:
        expected_fields = _fields_by_name(expected)
        actual_fields = _fields_by_name(actual)
        expected_type = expected_fields.get("content-type", [None])[0]
        actual_type = actual_fields.get("content-type", [None])[0]
        if self.rules.compare_content_type_params:
            same = _normal_content_type(expected_type) == _normal_content_type(actual_type)
        else:
            same = media_type(expected_type) == media_type(actual_type)
        if not same:
            out.append(
                Mismatch(
                    "header content-type",
                    ABSENT if expected_type is None else expected_type,
                    ABSENT if actual_type is None else actual_type,
                )
            )
        skip = self._skip_headers
        for name in dict.fromkeys([*expected_fields, *actual_fields]):
            if name in skip:
                continue
            expected_values = expected_fields.get(name)
            actual_values = actual_fields.get(name)
            if not expected_values or not actual_values:
                out.append(
                    Mismatch(
                        f"header {name}",
                        ", ".join(expected_values) if expected_values else ABSENT,
                        ", ".join(actual_values) if actual_values else ABSENT,
                    )
                )
                continue
            normal_expected = ", ".join(expected_values)
            normal_actual = ", ".join(actual_values)
            if normal_expected == normal_actual and not self._golden_to_live:
                continue
            problem = self._compare_text(normal_expected, normal_actual)
            if problem is not None:
                out.append(Mismatch(f"header {name}", problem[0], problem[1], message=problem[2]))

    def _compare_bodies(
        self, expected: Response, actual: Response, out: list[Mismatch], *, fast: bool = True
    ) -> None:
        if (
            fast
            and expected.is_json
            and actual.is_json
            and self._text_fast_path(expected.body, actual.body)
        ):
            return
        expected_value = _body_value(expected)
        actual_value = _body_value(actual)
        if expected_value is _EMPTY and actual_value is _EMPTY:
            return
        if (
            expected_value is not _NOT_JSON
            and expected_value is not _EMPTY
            and actual_value is not _NOT_JSON
            and actual_value is not _EMPTY
        ):
            self._compare_json(expected_value, actual_value, None, out)
            return
        if expected_value is _NOT_JSON and actual_value is _NOT_JSON:
            self._compare_raw(expected.body, actual.body, "body", None, out)
            return
        message = f"expected {_body_kind(expected_value)}, got {_body_kind(actual_value)}"
        if expected_value is _NOT_JSON and expected.is_json:
            last = expected.body.rstrip().rpartition(b"\n")[2]
            message += "; the recorded body says JSON but is not JSON" + (
                " (its last line starts with #: a comment line before the next ### belongs"
                " to the body above it)"
                if last.startswith(b"#")
                else ""
            )
        out.append(
            Mismatch(
                "body",
                _describe_body(expected_value, expected.body),
                _describe_body(actual_value, actual.body),
                message=message,
            )
        )

    def _compare_raw(
        self, expected: bytes, actual: bytes, path: str, frame: int | None, out: list[Mismatch]
    ) -> None:
        try:
            expected_text = expected.decode("utf-8")
            actual_text = actual.decode("utf-8")
        except UnicodeDecodeError:
            if expected != actual:
                out.append(
                    Mismatch(
                        path,
                        f"{len(expected)} bytes",
                        f"{len(actual)} bytes",
                        frame,
                        "bytes differ",
                    )
                )
            return
        problem = self._compare_text(expected_text, actual_text)
        if problem is not None:
            out.append(Mismatch(path, problem[0], problem[1], frame, problem[2]))

    def _compare_streams(
        self, expected: Response, actual: Response, truncated: bool, out: list[Mismatch]
    ) -> None:
        if expected.events is None or actual.events is None:
            out.append(
                Mismatch(
                    "body",
                    "an SSE stream" if expected.events is not None else _short(expected.text),
                    "an SSE stream" if actual.events is not None else _short(actual.text),
                    message=(
                        "expected an SSE stream (text/event-stream), got a single body"
                        if expected.events is not None and not is_event_stream(actual.content_type)
                        else "the live event stream is not well-formed SSE (kept as raw bytes)"
                        if expected.events is not None
                        else "expected a single body, got an SSE stream"
                    ),
                )
            )
            return
        golden_frames = _real_frames(expected.events)
        live_frames = _real_frames(actual.events)
        if truncated and len(live_frames) >= len(golden_frames):
            # the recording stopped early: compare only what it holds
            live_frames = live_frames[: len(golden_frames)]
        if len(golden_frames) == len(live_frames):
            if len(golden_frames) == len(expected.events) == len(actual.events):
                # nothing left out: the bodies are the frames' canonical serialization already
                fast = self._text_fast_path(expected.body, actual.body)
            else:
                fast = self._text_fast_path_frames(golden_frames, live_frames)
            if fast:
                return
            found = len(out)
            for index, (g, a) in enumerate(zip(golden_frames, live_frames, strict=True)):
                self._compare_frame(g, a, index + 1, out)
            if len(out) > found:
                self._learn_from_moved_frames(golden_frames, live_frames)
            return
        pairs = align(
            [self._frame_key(f) for f in golden_frames], [self._frame_key(f) for f in live_frames]
        )
        missing = [i + 1 for i, j in pairs if j is None and i is not None]
        extra = [j + 1 for i, j in pairs if i is None and j is not None]
        notes = []
        if missing:
            notes.append(
                "missing "
                + ", ".join(
                    f"recorded frame {n} ({_frame_summary(golden_frames[n - 1])})" for n in missing
                )
            )
        if extra:
            notes.append(
                "unexpected "
                + ", ".join(f"live frame {n} ({_frame_summary(live_frames[n - 1])})" for n in extra)
            )
        out.append(
            Mismatch(
                "frames",
                len(golden_frames),
                len(live_frames),
                message="; ".join(notes) + (" (the recording is truncated)" if truncated else ""),
            )
        )
        for i, j in pairs:
            if i is not None and j is not None:
                self._compare_frame(golden_frames[i], live_frames[j], j + 1, out)

    def _learn_from_moved_frames(self, golden: list[SseEvent], live: list[SseEvent]) -> None:
        """After frames that came in another order were reported, pair the values of each
        recorded frame with those of the live frame of the same shape (`_frame_key`) that sits
        elsewhere: the artifact's id and the status timestamps are then known (for the
        requests that carry them, and for --update, which keeps the recorded values), not
        new. What this comparison finds is not reported: the frames were reported in order."""
        golden_keys = [self._frame_key(frame) for frame in golden]
        live_keys = [self._frame_key(frame) for frame in live]
        if golden_keys == live_keys:
            return  # nothing moved: compared in place already
        waiting: dict[str, list[int]] = {}
        for j, key in enumerate(live_keys):
            waiting.setdefault(key, []).append(j)
        for i, key in enumerate(golden_keys):
            candidates = waiting.get(key)
            if candidates:
                j = candidates.pop(0)
                if i != j:
                    self._compare_frame(golden[i], live[j], i + 1, [])

    def _frame_key(self, frame: SseEvent) -> str:
        data: Any = None
        if frame.data is not None:
            data = _parse_json_text(frame.data)
            data = (
                self._wildcard(data) if data is not _NOT_JSON else self._wildcard_text(frame.data)
            )
        return json.dumps([frame.event, data], sort_keys=True)

    def _compare_frame(
        self, expected: SseEvent, actual: SseEvent, frame: int, out: list[Mismatch]
    ) -> None:
        if expected.event != actual.event:
            out.append(Mismatch("event", _opt(expected.event), _opt(actual.event), frame))
        if expected.retry != actual.retry:
            out.append(Mismatch("retry", _opt(expected.retry), _opt(actual.retry), frame))
        if expected.id != actual.id:
            if expected.id is None or actual.id is None:
                out.append(Mismatch("id", _opt(expected.id), _opt(actual.id), frame))
            else:
                problem = self._compare_text(expected.id, actual.id)
                if problem is not None:
                    out.append(Mismatch("id", problem[0], problem[1], frame, problem[2]))
        if expected.data is None or actual.data is None:
            if expected.data != actual.data:
                out.append(Mismatch("data", _opt(expected.data), _opt(actual.data), frame))
            return
        expected_value = _parse_json_text(expected.data)
        actual_value = _parse_json_text(actual.data)
        if expected_value is not _NOT_JSON and actual_value is not _NOT_JSON:
            self._compare_json(expected_value, actual_value, frame, out)
        elif expected_value is _NOT_JSON and actual_value is _NOT_JSON:
            self._compare_raw(expected.data.encode(), actual.data.encode(), "data", frame, out)
        else:
            out.append(
                Mismatch(
                    "data",
                    _short(expected.data),
                    _short(actual.data),
                    frame,
                    f"expected {_body_kind(expected_value)}, got {_body_kind(actual_value)}",
                )
            )

    # --- the fast path --------------------------------------------------------------------------

    def _text_fast_path(self, expected: bytes, actual: bytes) -> bool:
        """True when two bodies are the same text but for generated values that pair (rules 1-5).

        One regex pass over each text finds the generated values (a generated member's string,
        a shape); the text between them must be identical and the values must pair under rule 3.
        Pairs are learned only when the whole body passes. False means "walk the trees": the
        walk decides (key order, ignored paths, error messages) and explains.
        """
        try:
            expected_text = expected.decode("utf-8")
            actual_text = actual.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return self._text_fast_path_text(expected_text, actual_text)

    def _text_fast_path_text(self, expected: str, actual: str, *, compact: bool = False) -> bool:
        """`_text_fast_path` on text; `compact` when both are JSON written without spaces."""
        if self._recorded_url is not None and self._live_url is not None:
            # rule 5; NUL cannot appear raw in JSON text (and a text holding one is no JSON:
            # the walk says so)
            if "\0" in expected or "\0" in actual:
                return False
            for recorded_url in self._recorded_urls:
                expected = expected.replace(recorded_url, "\0")
            for live_url in self._live_urls:
                actual = actual.replace(live_url, "\0")
        tokens = self._compact_tokens if compact else self._tokens
        if tokens is None:
            return expected == actual
        danger = self._literal_danger
        if danger:
            # a learned id that is no shape (e.g. "task-1" -> "task-7") must not hide in text the
            # fast path treats as literal (an `id` member): let the walk see it
            if len(danger) > 64:
                return False
            for value in danger:
                quoted = f'"{value}"'
                if quoted in expected or quoted in actual:
                    return False
        expected_parts = tokens.split(expected)
        actual_parts = tokens.split(actual)
        if len(expected_parts) != len(actual_parts):
            return False
        stride = tokens.groups + 1
        # the text between the values (member names included) is equal
        if expected_parts[0::stride] != actual_parts[0::stride]:
            return False
        if len(expected_parts) <= _SMALL * stride:
            return self._pair_few(expected_parts, actual_parts, stride)
        client = self._client
        golden_to_live = self._golden_to_live
        live_to_golden = self._live_to_golden
        learn: list[tuple[list[list[str | None]], str]] = []
        strict_forward: dict[str, str] = {}
        strict_backward: dict[str, str] = {}
        loose_pairs: list[dict[str, str]] = []
        field_pairs: list[dict[str, str]] = []
        for kind, columns, from_field in self._token_kinds:
            golden_columns = [expected_parts[c::stride] for c in columns]
            distinct = set(zip(golden_columns[0], actual_parts[columns[0] :: stride], strict=True))
            for column, golden_column in zip(columns[1:], golden_columns[1:], strict=True):
                distinct.update(zip(golden_column, actual_parts[column::stride], strict=True))
            distinct.discard((None, None))
            if not distinct:
                continue
            # set operations, not a loop per value: these replies can hold thousands of ids
            forward: dict[Any, Any] = dict(distinct)
            backward: dict[Any, Any] = dict(
                zip(map(itemgetter(1), distinct), map(itemgetter(0), distinct), strict=True)
            )
            if None in forward or None in backward:
                return False  # another alternative (kind) matched on one side
            # rule 2: client values and "" are compared exactly
            literal = forward.keys() & client
            if "" in forward:
                literal.add("")
            if literal:
                if any(golden in literal and live != golden for golden, live in distinct):
                    return False
                for golden in literal:
                    del forward[golden]
                    del backward[golden]
            if "" in backward or not client.isdisjoint(backward):
                return False  # an empty or client-sent live value: let the walk explain
            if kind in self._loose:
                # a recorded value of a shape (a timestamp) must meet a live value of it
                if from_field and not (
                    len(forward) > _BULK
                    and self._all_of_shape(forward, kind)
                    and self._all_of_shape(backward, kind)
                ):
                    shape_kind = self._shape_kind
                    for golden, live in distinct:
                        if golden not in literal:
                            golden_kind = shape_kind(golden)
                            if golden_kind is not None and shape_kind(live) != golden_kind:
                                return False
                loose_pairs.append(forward)
            else:
                # rule 3: one to one, within this reply and with what earlier replies taught
                if len(forward) != len(backward) or len(forward) + len(literal) != len(distinct):
                    return False
                if (
                    _disagree(forward, golden_to_live)
                    or _disagree(backward, live_to_golden)
                    or _disagree(forward, strict_forward)
                    or _disagree(backward, strict_backward)
                ):
                    return False
                strict_forward.update(forward)
                strict_backward.update(backward)
                if from_field:
                    field_pairs.append(forward)
            learn.append((golden_columns, kind))
        # the reply matches: learn
        for golden_columns, kind in learn:
            # rule 4: aliases follow first appearance; merge the columns only for new values
            values: set[str | None] = set().union(*golden_columns)
            values -= self._seen.keys()
            values.discard(None)
            values.discard("")
            values -= client
            if not values:
                continue
            # row by row the one value that is there (each row matched one alternative), in
            # order; None (another alternative) and "" (never generated) left out
            rows: Iterable[str | None] = golden_columns[0]
            if len(golden_columns) > 1:
                rows = itertools.chain.from_iterable(zip(*golden_columns, strict=True))
            ordered: dict[str, None] = dict.fromkeys(filter(None, rows))
            for unwanted in ordered.keys() & client:
                del ordered[unwanted]
            # positions of values seen before do not move; new ones go last, in order
            self._seen.update(dict.fromkeys(ordered, kind))
        for forward in field_pairs:
            # learned values that are no shape may hide where the fast path reads literal text
            changed = [g for g in forward.keys() - golden_to_live.keys() if forward[g] != g]
            if changed and not (len(changed) > _BULK and self._all_of_shape(changed, None)):
                for golden in changed:
                    if self._shape_kind(golden) is None:
                        self._literal_danger.update((golden, forward[golden]))
        golden_to_live.update(strict_forward)
        live_to_golden.update(strict_backward)
        for forward in loose_pairs:
            for golden, live in forward.items():
                if golden not in golden_to_live and live not in live_to_golden:
                    golden_to_live[golden] = live
                    live_to_golden[live] = golden
        return True

    def _pair_few(self, expected: list[Any], actual: list[Any], stride: int) -> bool:
        """The fast path's pairing (rules 2 and 3) for a reply with few values: one loop."""
        client = self._client
        golden_to_live = self._golden_to_live
        live_to_golden = self._live_to_golden
        forward: dict[str, str] = {}
        backward: dict[str, str] = {}
        seen: list[tuple[str, str]] = []
        loose_pairs: list[tuple[str, str]] = []
        field_pairs: list[tuple[str, str]] = []
        for base in range(0, len(expected) - 1, stride):
            golden = live = None
            kind = ""
            from_field = False
            for column, column_kind, column_is_field in self._value_columns:
                golden = expected[base + column]
                live = actual[base + column]
                if golden is not None or live is not None:
                    kind, from_field = column_kind, column_is_field
                    break
            if golden is None or live is None:
                return False  # another alternative (kind) matched on one side
            if not golden or golden in client:
                if golden != live:
                    return False  # rule 2: compared exactly
                continue
            if not live or live in client:
                return False  # an empty or client-sent live value: let the walk explain
            seen.append((golden, kind))
            if kind in self._loose:
                if from_field:
                    golden_kind = self._shape_kind(golden)
                    if golden_kind is not None and self._shape_kind(live) != golden_kind:
                        return False
                loose_pairs.append((golden, live))
                continue
            mapped = golden_to_live.get(golden) or forward.get(golden)
            if mapped is not None and mapped != live:
                return False
            back = live_to_golden.get(live) or backward.get(live)
            if back is not None and back != golden:
                return False
            forward[golden] = live
            backward[live] = golden
            if from_field and golden != live and golden not in golden_to_live:
                field_pairs.append((golden, live))
        # the reply matches: learn
        for golden, kind in seen:
            self._seen.setdefault(golden, kind)
        for golden, live in field_pairs:
            if self._shape_kind(golden) is None:
                self._literal_danger.update((golden, live))
        golden_to_live.update(forward)
        live_to_golden.update(backward)
        for golden, live in loose_pairs:
            if golden not in golden_to_live and live not in live_to_golden:
                golden_to_live[golden] = live
                live_to_golden[live] = golden
        return True

    def _all_of_shape(self, values: Iterable[str], kind: str | None) -> bool:
        """Whether every value is wholly of the shape `kind` (any shape for None): one call."""
        pattern = self._line_patterns.get(kind)
        if pattern is None:
            shapes = self.rules.generated_shapes
            choices = [shapes[kind]] if kind is not None else list(shapes.values())
            if not choices or (kind is not None and kind not in shapes):
                return False
            one = "|".join(f"(?:{choice})" for choice in choices)
            try:
                pattern = re.compile(f"(?:{one})(?:\n(?:{one}))*")
            except re.error:  # e.g. a shape with a named group cannot repeat
                pattern = re.compile("(?!)")
            self._line_patterns[kind] = pattern
        return pattern.fullmatch("\n".join(values)) is not None

    def _text_fast_path_frames(self, expected: list[SseEvent], actual: list[SseEvent]) -> bool:
        return self._text_fast_path_text(
            sse.serialize(expected).decode("utf-8"), sse.serialize(actual).decode("utf-8")
        )

    # --- the tree walk (rule 6); deepdiff explains what it finds ---------------------------------

    def _field_kind(self, name: str | int, siblings: dict[str, Any]) -> str | None:
        if not isinstance(name, str):
            return None
        kind = self._fields.get(name)
        if kind is not None:
            return kind
        beside = self._beside.get(name)
        if beside is not None and not beside.isdisjoint(siblings):
            return "id"
        return None

    def _compare_json(
        self, expected: Any, actual: Any, frame: int | None, out: list[Mismatch]
    ) -> None:
        """Rule 6: both values normalized; where they differ, deepdiff says where and how."""
        notes = _Notes()
        golden, live = self._normalize(
            expected,
            actual,
            (),
            (),
            None,
            self._ignored.start(),
            self._unordered.start(),
            self._generated_paths.start(),
            notes,
        )
        if golden is not live:
            out.extend(_explain(golden, live, frame, notes))

    def _normalize(
        self,
        expected: Any,
        actual: Any,
        keys: _Keys,
        place: _Keys,
        kind: str | None,
        ignored: State,
        unordered: State,
        generated: State,
        notes: _Notes,
    ) -> tuple[Any, Any]:
        """The recorded and the live value normalized for comparison (rules 1-6).

        Generated values are shown as their aliases, ignored members are left out, and an
        array of another length (or an unordered one) is laid out item by item, a missing item
        against `ABSENT`. A place that compares equal is one and the same object on both sides:
        `golden is live` is the verdict, and deepdiff skips such places without looking in.
        `keys` is the place in the replies (what reports name), `place` the place in the
        normalized values; they differ below a laid-out array (`_Notes.layouts`).
        """
        if generated and self._generated_paths.matches(generated):
            kind = self.rules.generated_path_kind(keys) or kind
        if isinstance(expected, dict):
            if not isinstance(actual, dict):
                return self._display(expected), self._display_live(actual)
            golden_members: dict[str, Any] = {}
            live_members: dict[str, Any] = {}
            differs = False
            for name, expected_value in expected.items():
                child_ignored = self._ignored.step(ignored, name)
                if child_ignored and self._ignored.matches(child_ignored):
                    continue
                if name not in actual:
                    golden_members[name] = (
                        self._secret_placeholder(name)
                        if name in self._secret_fields
                        else self._display(expected_value)
                    )
                    differs = True
                    continue
                if name in self._secret_fields:  # rule 8: there, not compared
                    golden_members[name] = live_members[name] = expected_value
                    continue
                golden_members[name], live_members[name] = pair = self._normalize(
                    expected_value,
                    actual[name],
                    (*keys, name),
                    (*place, name),
                    self._field_kind(name, expected),
                    child_ignored,
                    self._unordered.step(unordered, name),
                    self._generated_paths.step(generated, name),
                    notes,
                )
                differs = differs or pair[0] is not pair[1]
            for name, actual_value in actual.items():
                if name in expected:
                    continue
                child_ignored = self._ignored.step(ignored, name)
                if child_ignored and self._ignored.matches(child_ignored):
                    continue
                live_members[name] = (
                    self._secret_placeholder(name)
                    if name in self._secret_fields
                    else self._display_live(actual_value)
                )
                differs = True
            return (golden_members, live_members) if differs else (expected, expected)
        if isinstance(expected, list):
            if not isinstance(actual, list):
                return self._display(expected), self._display_live(actual)
            if unordered and self._unordered.matches(unordered):
                return self._normalize_unordered(
                    expected, actual, keys, place, kind, (ignored, unordered, generated), notes
                )
            if len(expected) == len(actual):
                pairs: list[tuple[int | None, int | None]] = list(
                    zip(range(len(expected)), range(len(actual)), strict=True)
                )
            else:
                pairs = align(
                    [json.dumps(self._wildcard(v), sort_keys=True) for v in expected],
                    [json.dumps(self._wildcard(v), sort_keys=True) for v in actual],
                )
                notes.layouts[place] = pairs
            message = f"expected {len(expected)} items, got {len(actual)}"
            golden_items: list[Any] = []
            live_items: list[Any] = []
            differs = len(expected) != len(actual)
            for k, (i, j) in enumerate(pairs):
                if i is not None and j is not None:
                    child_ignored = self._ignored.step(ignored, i)
                    if child_ignored and self._ignored.matches(child_ignored):
                        golden_item = live_item = expected[i]  # not compared: the same object
                    else:
                        golden_item, live_item = self._normalize(
                            expected[i],
                            actual[j],
                            (*keys, i),
                            (*place, k),
                            kind,
                            child_ignored,
                            self._unordered.step(unordered, i),
                            self._generated_paths.step(generated, i),
                            notes,
                        )
                        differs = differs or golden_item is not live_item
                elif i is not None:
                    golden_item, live_item = self._display(expected[i]), ABSENT
                    notes.messages[(*place, k)] = message
                else:
                    assert j is not None
                    golden_item, live_item = ABSENT, self._display_live(actual[j])
                    notes.messages[(*place, k)] = message
                golden_items.append(golden_item)
                live_items.append(live_item)
            return (golden_items, live_items) if differs else (expected, expected)
        if isinstance(expected, str) and isinstance(actual, str):
            if kind is not None and expected and expected not in self._client:
                if expected == actual and self._golden_to_live.get(expected) == actual:
                    return expected, expected
                problem = self._pair(expected, actual, kind)
                if problem is None:
                    return expected, expected
                notes.messages[place] = problem
                return self.alias(expected, kind), self._live_alias(actual, kind)
            text_problem = self._compare_text(expected, actual)
            if text_problem is None:
                return expected, expected
            notes.messages[place] = text_problem[2]
            return text_problem[0], text_problem[1]
        if isinstance(actual, dict | list) or not _same_scalar(expected, actual):
            return self._display(expected), self._display_live(actual)
        return expected, expected

    def _normalize_unordered(
        self,
        expected: list[Any],
        actual: list[Any],
        keys: _Keys,
        place: _Keys,
        kind: str | None,
        states: tuple[State, State, State],
        notes: _Notes,
    ) -> tuple[Any, Any]:
        """Rule 6: an unordered array matches when its items pair up one to one. Laid out as
        the pairs in recorded order, then the recorded items no live item matches, then the
        live items left over."""
        ignored, unordered, generated = states
        by_key: dict[str, list[int]] = {}
        for j in range(len(actual)):
            by_key.setdefault(json.dumps(self._wildcard(actual[j]), sort_keys=True), []).append(j)
        pairs: list[tuple[int, int]] = []
        unmatched: list[int] = []
        for i, item in enumerate(expected):
            candidates = by_key.get(json.dumps(self._wildcard(item), sort_keys=True))
            if candidates:
                pairs.append((i, candidates.pop(0)))
            else:
                unmatched.append(i)
        extra = sorted(j for js in by_key.values() for j in js)
        golden_items: list[Any] = []
        live_items: list[Any] = []
        differs = bool(unmatched or extra)
        for k, (i, j) in enumerate(pairs):
            golden_item, live_item = self._normalize(
                expected[i],
                actual[j],
                (*keys, i),
                (*place, k),
                kind,
                self._ignored.step(ignored, i),
                self._unordered.step(unordered, i),
                self._generated_paths.step(generated, i),
                notes,
            )
            differs = differs or golden_item is not live_item
            golden_items.append(golden_item)
            live_items.append(live_item)
        if not differs:
            return expected, expected
        for i in unmatched:
            notes.messages[(*place, len(golden_items))] = "no live item matches (order ignored)"
            golden_items.append(self._display(expected[i]))
            live_items.append(ABSENT)
        for j in extra:
            notes.messages[(*place, len(golden_items))] = "unexpected live item (order ignored)"
            golden_items.append(ABSENT)
            live_items.append(self._display_live(actual[j]))
        notes.layouts[place] = [
            *pairs,
            *((i, None) for i in unmatched),
            *((None, j) for j in extra),
        ]
        return golden_items, live_items

    # --- strings (rules 1, 2, 5) ----------------------------------------------------------------

    def _compare_text(self, expected: str, actual: str) -> tuple[str, str, str] | None:
        """Compare two strings that may hold generated values. None, or (expected, actual, why)."""
        if self._secret_placeholders and "{{" in expected:
            pattern = self._placeholder_pattern(expected)
            if pattern is not None and pattern.fullmatch(actual):
                return None  # rule 9
        if self._recorded_url is not None and self._live_url is not None:
            for recorded_url in self._recorded_urls:
                if recorded_url in expected:
                    expected = expected.replace(recorded_url, _AGENT)
            for live_url in self._live_urls:
                if live_url in actual:
                    actual = actual.replace(live_url, _AGENT)
        shapes = self._shapes
        if shapes is None:
            return None if expected == actual else (expected, actual, "")
        expected_parts = self._split(expected)
        actual_parts = self._split(actual)
        if expected_parts is None and actual_parts is None:
            return None if expected == actual else (expected, actual, "")
        expected_parts = expected_parts or ([expected], [])
        actual_parts = actual_parts or ([actual], [])
        expected_text, expected_values = expected_parts
        actual_text, actual_values = actual_parts
        same_frame = expected_text == actual_text and [k for _, k in expected_values] == [
            k for _, k in actual_values
        ]
        if same_frame:
            problems = []
            for (g, kind), (a, _) in zip(expected_values, actual_values, strict=True):
                problem = self._pair(g, a, kind)
                if problem is not None:
                    problems.append(problem)
            if not problems:
                return None
            return (
                self._render(expected_text, [self.alias(g, k) for g, k in expected_values]),
                self._render(actual_text, [self._live_alias(a, k) for a, k in actual_values]),
                "; ".join(problems),
            )
        return (
            self._render(expected_text, [self.alias(g, k) for g, k in expected_values]),
            self._render(actual_text, [self._live_alias(a, k) for a, k in actual_values]),
            "",
        )

    def _placeholder_pattern(self, text: str) -> re.Pattern[str] | None:
        """`text` as a regex in which each secret placeholder matches any text (rule 9)."""
        regex: list[str] = []
        last = 0
        for match in PLACEHOLDER.finditer(text):
            if match.group(1) in self._secret_placeholders:
                regex.append(re.escape(text[last : match.start()]))
                regex.append(".+?")
                last = match.end()
        if not regex:
            return None
        regex.append(re.escape(text[last:]))
        return re.compile("".join(regex), re.DOTALL)

    def _split(self, text: str) -> tuple[list[str], list[tuple[str, str]]] | None:
        """Text around the generated (non-client) shapes in `text`, and those values with kinds."""
        assert self._shapes is not None
        pieces: list[str] = []
        values: list[tuple[str, str]] = []
        last = 0
        for match in self._shapes.finditer(text):
            value = match.group()
            if value in self._client or match.lastgroup is None:
                continue
            pieces.append(text[last : match.start()])
            values.append((value, match.lastgroup[2:]))
            last = match.end()
        if not values:
            return None
        pieces.append(text[last:])
        return pieces, values

    @staticmethod
    def _render(pieces: list[str], aliases: list[str]) -> str:
        out = [pieces[0]]
        for alias, piece in zip(aliases, pieces[1:], strict=True):
            out.append(alias)
            out.append(piece)
        return "".join(out)

    # --- normalized forms for display and alignment ---------------------------------------------

    def _display(self, value: Any, kind: str | None = None, live: bool = False) -> Any:
        """A recorded (or live) value with its generated values shown as aliases, for reports."""

        def text(s: str, k: str | None) -> str:
            if k is not None and s and s not in self._client:
                if live:
                    return self._live_alias(s, k)
                return self._alias_of(s) or s
            if self._shapes is None:
                return s
            table = self._live_to_golden if live else None

            def sub(match: re.Match[str]) -> str:
                found = match.group()
                if found in self._client or match.lastgroup is None:
                    return found
                golden = table.get(found) if table is not None else found
                if golden is None:
                    return found
                return self._alias_of(golden) or found

            return self._shapes.sub(sub, s)

        shown = _map_with_kinds(value, kind, self._field_kind, text)
        return self._mask_secrets(shown) if self._secret_fields else shown

    def _mask_secrets(self, value: Any) -> Any:
        """A value with every secret member's value shown as its placeholder (rule 8): a
        report must not print a secret (nor write it into a JUnit file)."""
        if isinstance(value, dict):
            return {
                name: self._secret_placeholder(name)
                if name in self._secret_fields
                else self._mask_secrets(item)
                for name, item in value.items()
            }
        if isinstance(value, list):
            return [self._mask_secrets(item) for item in value]
        return value

    def _secret_placeholder(self, name: str) -> str:
        return "{{" + self.rules.secret_fields[name] + "}}"

    def _display_live(self, value: Any) -> Any:
        return self._display(value, live=True)

    def _wildcard(self, value: Any) -> Any:
        """A value with every generated value replaced by `<kind>` (and every secret member's
        by its placeholder: rule 8): the key for aligning items."""
        if self._secret_fields:
            value = self._mask_secrets(value)
        return _map_with_kinds(value, None, self._field_kind, self._wildcard_leaf)

    def _wildcard_leaf(self, text: str, kind: str | None) -> str:
        if kind is not None and text and text not in self._client:
            return f"<{kind}>"
        return self._wildcard_text(text)

    def _wildcard_text(self, text: str) -> str:
        if self._recorded_url is not None and self._live_url is not None:
            for recorded_url in self._recorded_urls:
                text = text.replace(recorded_url, _AGENT)
            for live_url in self._live_urls:
                text = text.replace(live_url, _AGENT)
        if self._shapes is None:
            return text
        return self._shapes.sub(
            lambda m: m.group() if m.group() in self._client else f"<{(m.lastgroup or 'k_')[2:]}>",
            text,
        )

    # --- bless --------------------------------------------------------------------------------

    def _backward(self, text: str) -> str:
        """A live string with every paired live value put back to its recorded value."""
        table = self._live_to_golden
        golden = table.get(text)
        if golden is not None:
            return golden
        if self._bless_url is not None:
            for live_url in self._live_urls:
                if live_url in text:
                    text = text.replace(live_url, self._bless_url)
        if self._shapes is not None and table:
            text = self._shapes.sub(lambda m: table.get(m.group(), m.group()), text)
        return text

    def _backward_json_text(self, text: str) -> str:
        """JSON text with its strings mapped back; formatting and member order kept."""
        return _map_json_strings(text, self._backward)

    def bless(
        self, golden: Response, live: Response | LiveReply, *, matched: bool | None = None
    ) -> Response:
        """The live reply with its generated values put back to the recorded ones (for --update).

        Call after `compare` for the same exchange: right after it, or (better) once the whole
        transcript is compared, passing `matched` (whether that compare found no mismatch), so
        that values a later exchange pairs are put back too. When the compare found no
        mismatch, the recorded reply is kept as it is: re-blessing an unchanged transcript
        gives the same bytes (also where timestamps shared a clock tick in one run only, and
        where only ignored places changed). Otherwise values paired with a recorded value get
        that value back and new values keep their live value; the live agent address becomes
        the recorded one. Headers: the recorded order is kept; an ignored header keeps its
        recorded value (or is left out when only live has it, e.g. Content-Length and
        Transfer-Encoding, which recordings never hold); others take the live value.
        """
        if matched:
            return golden
        if matched is None and self._last_match is not None:
            matched_golden, matched_live = self._last_match
            if matched_golden is golden and matched_live is live:
                # it matched: every value pairs in place (timestamps too), nothing else counts
                return golden
        if isinstance(live, LiveReply):
            live = live.response
        # the agent's address as this recorded reply spells it (localhost, 127.0.0.1 …)
        self._bless_url = next(
            (url for url in self._recorded_urls if url.encode() in golden.body),
            self._recorded_url,
        )
        headers = self._bless_headers(golden.headers, live.headers)
        if live.events is not None:
            events = tuple(
                dataclasses.replace(
                    event,
                    data=None if event.data is None else self._backward_json_text(event.data),
                    id=None if event.id is None else self._backward(event.id),
                )
                for event in live.events
            )
            return live.with_content(headers, events=events)
        body = live.body
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:
            if live.json is not None:
                new_text = self._backward_json_text(text)
            else:
                new_text = self._backward(text)
            body = new_text.encode()
        return live.with_content(headers, body=body)

    def _bless_headers(self, golden: Headers, live: Headers) -> Headers:
        ignored = self.rules.ignored_headers
        out: list[tuple[str, str]] = []
        done: set[str] = set()
        for name, value in golden:
            folded = name.lower()
            if folded in ignored:
                out.append((name, value))
                continue
            if folded in done:
                continue
            done.add(folded)
            for live_value in live.get_all(name):
                out.append((name, self._backward(live_value)))
        for name, value in live:
            folded = name.lower()
            if folded in ignored or folded in done or golden.get(name) is not None:
                continue
            out.append((name, self._backward(value)))
        return Headers(out)


# --- pure helpers ------------------------------------------------------------------------------


# the default shapes (uuid, RFC 3339 time): every match holds a "-" and no '"'
_DEFAULT_SHAPES: dict[str, str] = {
    "id": (
        "[0-9a-fA-F](?<![0-9A-Za-z].)[0-9a-fA-F]{7}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}"
        "-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![0-9A-Za-z])"
    ),
    "time": (
        "[0-9](?<![0-9].)[0-9]{3}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}"
        "(?:\\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})(?![0-9])"
    ),
}


@dataclasses.dataclass(frozen=True)
class _Compiled:
    """What a ReplayState derives from its rules, computed once per rules value."""

    shapes: re.Pattern[str] | None
    tokens: re.Pattern[str] | None
    compact_tokens: re.Pattern[str] | None
    fields: dict[str, str]
    beside: dict[str, frozenset[str]]
    kinds: list[tuple[str, list[int], bool]]
    """(kind, the split columns of its values, whether one is a generated member's)."""
    value_columns: list[tuple[int, str, bool]]
    """(split column, kind, whether it holds a generated member's value), in group order."""
    skip_headers: frozenset[str]
    dashed: bool
    """Whether the shapes are the defaults, whose every match holds a "-" and no '"' or '\\'."""


@functools.lru_cache(maxsize=16)
def _compile(rules: Rules) -> _Compiled:
    tokens = rules.token_pattern
    value_columns: dict[str, list[int]] = {}
    field_columns: set[int] = set()
    if tokens is not None:
        for name, index in sorted(tokens.groupindex.items(), key=lambda item: item[1]):
            if name.startswith(("f_", "s_")):
                value_columns.setdefault(name[2:], []).append(index)
            if name.startswith("f_"):
                field_columns.add(index)
    return _Compiled(
        shapes=rules.shape_pattern,
        tokens=tokens,
        compact_tokens=rules.compact_token_pattern,
        fields=dict(rules.generated_fields),
        beside={name: frozenset(s) for name, s in rules.generated_fields_beside.items()},
        kinds=[
            (kind, columns, not field_columns.isdisjoint(columns))
            for kind, columns in value_columns.items()
        ],
        value_columns=sorted(
            (column, kind, column in field_columns)
            for kind, columns in value_columns.items()
            for column in columns
        ),
        skip_headers=rules.ignored_headers | frozenset(rules.secret_headers) | {"content-type"},
        dashed=all(
            _DEFAULT_SHAPES.get(kind) == regex for kind, regex in rules.generated_shapes.items()
        ),
    )


@dataclasses.dataclass
class _Notes:
    """What normalizing two values learned that the normalized values cannot say."""

    messages: dict[_Keys, str] = dataclasses.field(default_factory=dict)
    """Place in the normalized values -> why it differs (two aliases' real ids, an item count)."""
    layouts: dict[_Keys, list[tuple[int | None, int | None]]] = dataclasses.field(
        default_factory=dict
    )
    """Place of a laid-out array -> (recorded index, live index) of each normalized item."""

    def keys(self, place: _Keys) -> _Keys:
        """The place in the replies that a place in the normalized values stands for: an item
        of a laid-out array is named by its recorded index, or its live index when only live."""
        keys = list(place)
        for n, key in enumerate(place):
            if isinstance(key, int):
                layout = self.layouts.get(place[:n])
                if layout is not None:
                    i, j = layout[key]
                    index = i if i is not None else j
                    assert index is not None  # a laid-out item is on one side at least
                    keys[n] = index
        return tuple(keys)


def _explain(golden: Any, live: Any, frame: int | None, notes: _Notes) -> list[Mismatch]:
    """The mismatches between two normalized values that differ, in the order of the reply
    (recorded members first, then members only the live reply has), as deepdiff finds them."""
    found: list[tuple[int, Mismatch]] = []
    order = _visit_order(golden, live)
    for place, expected, actual in _differences(golden, live):
        found.append(
            (
                order.get(place, len(order)),
                Mismatch(
                    format_path(notes.keys(place)),
                    expected,
                    actual,
                    frame,
                    notes.messages.get(place, ""),
                ),
            )
        )
    if not found:
        # two aliases that read alike (a live value spelled "<id:1>"): the verdict stands
        found.append((0, Mismatch("$", golden, live, frame, "; ".join(notes.messages.values()))))
    found.sort(key=itemgetter(0))
    return [mismatch for _, mismatch in found]


def _differences(golden: Any, live: Any) -> list[tuple[_Keys, Any, Any]]:
    """(place, expected, actual) for each place where two normalized values differ, from
    deepdiff; ABSENT for a member or item on one side only."""
    from deepdiff import DeepDiff  # on the first mismatch only: deepdiff takes ~0.1 s to import
    from deepdiff.helper import notpresent

    try:
        tree = DeepDiff(
            golden,
            live,
            view="tree",
            # the normalized arrays are laid out item by item already
            zip_ordered_iterables=True,
            # every member's own path, however many differ (not the whole object past a third)
            threshold_to_diff_deeper=0,
            # JSON members named "__x" are members like any other
            ignore_private_variables=False,
            cache_size=0,
            log_frequency_in_sec=0,
        )
    except RecursionError:
        # deepdiff recurses about twice per level: past ~490 levels, the same walk without
        # recursion (what deepdiff reports, with the options above)
        return _differences_without_recursion(golden, live)
    return [
        (
            tuple(level.path(output_format="list")),
            ABSENT if level.t1 is notpresent else level.t1,
            ABSENT if level.t2 is notpresent else level.t2,
        )
        for levels in tree.values()
        for level in levels
    ]


def _differences_without_recursion(golden: Any, live: Any) -> list[tuple[_Keys, Any, Any]]:
    found: list[tuple[_Keys, Any, Any]] = []
    stack: list[tuple[Any, Any, _Keys]] = [(golden, live, ())]
    while stack:
        g, a, place = stack.pop()
        if g is a:
            continue
        if type(g) is dict and type(a) is dict:
            for name in g:
                if name in a:
                    stack.append((g[name], a[name], (*place, name)))
                else:
                    found.append(((*place, name), g[name], ABSENT))
            found.extend(((*place, name), ABSENT, a[name]) for name in a if name not in g)
        elif type(g) is list and type(a) is list:
            for k in range(max(len(g), len(a))):
                item_g = g[k] if k < len(g) else ABSENT
                item_a = a[k] if k < len(a) else ABSENT
                if item_g is ABSENT or item_a is ABSENT:
                    found.append(((*place, k), item_g, item_a))
                else:
                    stack.append((item_g, item_a, (*place, k)))
        elif type(g) is not type(a) or g != a:
            found.append((place, g, a))
    return found


def _visit_order(golden: Any, live: Any) -> dict[_Keys, int]:
    """Place -> rank, for the places where two normalized values differ, in reply order
    (pre-order: a member before the members inside it; recorded members, then live-only)."""
    order: dict[_Keys, int] = {}
    stack: list[tuple[Any, Any, _Keys]] = [(golden, live, ())]
    while stack:
        g, a, place = stack.pop()
        order[place] = len(order)
        if g is a:
            continue
        children: list[tuple[Any, Any, _Keys]] = []
        if isinstance(g, dict) and isinstance(a, dict):
            children.extend(
                (value, a.get(name, ABSENT), (*place, name)) for name, value in g.items()
            )
            children.extend(
                (ABSENT, value, (*place, name)) for name, value in a.items() if name not in g
            )
        elif isinstance(g, list) and isinstance(a, list):
            children.extend(
                (g[k] if k < len(g) else ABSENT, a[k] if k < len(a) else ABSENT, (*place, k))
                for k in range(max(len(g), len(a)))
            )
        stack.extend(reversed(children))
    return order


def _fields_by_name(headers: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Lower-case name -> values, names in first-appearance order."""
    fields: dict[str, list[str]] = {}
    for name, value in headers:
        fields.setdefault(name.lower(), []).append(value)
    return fields


def _map_with_kinds(
    value: Any,
    kind: str | None,
    field_kind: Callable[[str | int, dict[str, Any]], str | None],
    leaf: Callable[[str, str | None], str],
) -> Any:
    if isinstance(value, str):
        return leaf(value, kind)
    if isinstance(value, dict):
        return {
            name: _map_with_kinds(item, field_kind(name, value), field_kind, leaf)
            for name, item in value.items()
        }
    if isinstance(value, list):
        return [_map_with_kinds(item, kind, field_kind, leaf) for item in value]
    return value


def _normal_content_type(value: str | None) -> str:
    if not value:
        return ""
    kind, _, params = value.partition(";")
    normal = [p.strip().lower().replace(" ", "") for p in params.split(";") if p.strip()]
    return ";".join([kind.strip().lower(), *sorted(normal)])


def _opt(value: Any) -> Any:
    return ABSENT if value is None else value


def _short(text: str) -> str:
    return text if len(text) <= 200 else text[:199] + "…"


def _body_kind(value: Any) -> str:
    if value is _EMPTY:
        return "an empty body"
    if value is _NOT_JSON:
        return "a non-JSON body"
    return "a JSON body"


def _describe_body(value: Any, body: bytes) -> Any:
    if value is _EMPTY:
        return ""
    if value is _NOT_JSON:
        return _short(body.decode("utf-8", errors="replace"))
    return value


def _frame_summary(frame: SseEvent) -> str:
    """`statusUpdate TASK_STATE_COMPLETED`, `artifactUpdate`, `event: error` ... for messages."""
    parts = []
    if frame.event is not None:
        parts.append(f"event: {frame.event}")
    if frame.data is not None:
        value = _parse_json_text(frame.data)
        if isinstance(value, dict):
            payload = value.get("result", value)
            if isinstance(payload, dict) and payload:
                name = next(iter(payload))
                parts.append(name)
                inner = payload.get(name)
                if isinstance(inner, dict):
                    status = inner.get("status")
                    if isinstance(status, dict) and isinstance(status.get("state"), str):
                        parts.append(status["state"])
            elif "error" in value:
                parts.append("error")
        else:
            parts.append("data")
    return " ".join(parts) or "frame"
