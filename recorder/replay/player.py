"""The player: send each recorded request to an agent and compare each reply with the golden one.

This is the I/O shell around the pure replay core (`recorder.replay.state.ReplayState`, one per
transcript file, decides what to send and what mismatched). It does four things:

1. Plan: find and parse the transcripts (files in name order), select exchanges (`-k`), split
   the files across machines (`--shard K/N`). Broken input stops the run before anything is sent.
2. Send: each exchange's request, after `ReplayState.prepare` (carry-forward of generated
   values) and after filling `{{NAME}}` placeholders from the environment, goes to the agent
   over one keep-alive httpx transport per worker. The recorded Host, Content-Length and
   hop-by-hop headers are not sent (httpx writes Host and Content-Length for the live request);
   the body bytes go as recorded.
3. Read: the live reply is kept as it arrived (`recorder.replay.state.LiveReply`: real status,
   reason, headers and body; an event stream read as it arrives and kept raw). Its model
   `Response` (pretty JSON, SSE parsed losslessly) is built only when needed: for a stream,
   a reply the fast path cannot decide, and `--update`.
4. Compare (and, with `update`, bless): `ReplayState.compare` gives the mismatches;
   `ReplayState.bless` gives the reply to write back into the golden file.

Selection with `-k PATTERN` (case-insensitive substring of "<file> <exchange title>"): a file
none of whose exchanges match is skipped. In a file that has a match, every exchange up to the
last matching one is played in order, because later requests carry forward values from earlier
replies (a GetTask names the task an earlier SendMessage created); only the matching exchanges
are reported and counted, the others are played as setup. Exchanges after the last match are not
played.

A mismatch is a result (`ExchangeResult.mismatches`), and so is an exchange that got no whole
reply (`ExchangeResult.error`: a timeout, a dropped connection): the rest of its file is then
not played (its requests need that reply's ids), and the other files are. Exceptions are for
broken input and broken environments: `TranscriptErrors` (files that do not parse),
`MissingVariableError`, `UpstreamError` (the agent cannot be reached at all).
"""

from __future__ import annotations

import errno
import functools
import importlib.util
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, quote_plus

import httpx

from recorder.checking import find_transcripts
from recorder.errors import NoReplyError, ParseError, RecorderError, UpstreamError
from recorder.httpfile import DURING_TAG, dumps, load, loads, splice, write_text_atomic
from recorder.model import Exchange, Headers, Request, Response, Transcript, is_event_stream
from recorder.redact import PLACEHOLDER, Redactor, is_form, scrub_response, scrub_text
from recorder.replay.diff import Mismatch
from recorder.replay.state import LiveReply, ReplayState
from recorder.rules import DEFAULT_RULES, Rules

__all__ = [
    "DEFAULT_TIMEOUT",
    "AgentHandle",
    "ExchangeResult",
    "FilePlayer",
    "Listener",
    "MissingVariableError",
    "PlanItem",
    "PlayResult",
    "TranscriptErrors",
    "TranscriptResult",
    "agent_base_url",
    "fill_placeholders",
    "load_transcripts",
    "make_transport",
    "missing_variables",
    "parse_shard",
    "plan",
    "play",
    "recorded_base_url",
    "send_raw",
]

DEFAULT_TIMEOUT = 30.0

# RFC 9110 §7.6.1: Connection and the fields it names are hop-by-hop; these are the usual ones
# (RFC 2616 §13.5.1). Content-Length is recomputed for the body actually sent; Host names the
# recorded agent and httpx writes the live one.
_NOT_SENT = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "host",
    }
)
# What the live reply keeps: the same fields the recorder drops at record time are dropped here,
# so a blessed reply looks like a recorded one. httpx has decoded any Content-Encoding.
_NOT_KEPT = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "content-encoding",
    }
)
_BODYLESS_METHODS = frozenset({"GET", "HEAD", "DELETE", "OPTIONS", "TRACE"})


# --------------------------------------------------------------------------- errors


class TranscriptErrors(RecorderError):
    """One or more transcripts do not parse; `errors` holds each `path:line: message`."""

    def __init__(self, errors: Sequence[ParseError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


class MissingVariableError(RecorderError):
    """A transcript uses `{{NAME}}` and the environment has no NAME."""

    def __init__(self, name: str, *, path: str, line: int | None) -> None:
        self.name = name
        self.path = path
        self.line = line
        where = path if line is None else f"{path}:{line}"
        super().__init__(
            f"{where}: the environment variable {name} is not set "
            f"(the request uses {{{{{name}}}}}); set it and run again"
        )


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class ExchangeResult:
    """The verdict on one exchange: its 1-based number in the file, title and mismatches.

    `error` says why there is no verdict: the exchange got no whole reply, or (`played` false)
    it was not sent because an earlier exchange of its file got none. `notes` explain what
    the mismatches may follow from (a request that had to carry a recorded id as it was).
    """

    number: int
    title: str
    line: int | None
    mismatches: tuple[Mismatch, ...] = ()
    seconds: float = 0.0
    error: str | None = None
    played: bool = True
    notes: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.mismatches and self.error is None

    @property
    def failed(self) -> bool:
        """Played and compared, with mismatches."""
        return bool(self.mismatches) and self.error is None


@dataclass(frozen=True)
class TranscriptResult:
    """The verdicts on the selected exchanges of one file; `updated` when --update rewrote it,
    `not_updated` why --update left a file that differs as it was."""

    path: str
    exchanges: tuple[ExchangeResult, ...]
    updated: bool = False
    not_updated: str | None = None

    @property
    def passed(self) -> bool:
        return all(e.passed for e in self.exchanges)

    @property
    def failed(self) -> tuple[ExchangeResult, ...]:
        """The exchanges that did not pass: mismatches, errors, not played."""
        return tuple(e for e in self.exchanges if not e.passed)


@dataclass(frozen=True)
class PlayResult:
    """Every transcript's result, in name order."""

    transcripts: tuple[TranscriptResult, ...]
    update: bool = False
    selected_files: int = 0
    """Files with an exchange to play before sharding: a shard may be empty when it is not."""

    @property
    def exchange_count(self) -> int:
        return sum(len(t.exchanges) for t in self.transcripts)

    @property
    def failed_count(self) -> int:
        """Exchanges played and compared with mismatches."""
        return sum(1 for t in self.transcripts for e in t.exchanges if e.failed)

    @property
    def error_count(self) -> int:
        """Exchanges that got no whole reply."""
        return sum(1 for t in self.transcripts for e in t.exchanges if e.error and e.played)

    @property
    def not_played_count(self) -> int:
        """Exchanges not sent because an earlier one of their file got no reply."""
        return sum(1 for t in self.transcripts for e in t.exchanges if not e.played)

    @property
    def passed_count(self) -> int:
        return sum(1 for t in self.transcripts for e in t.exchanges if e.passed)

    @property
    def passed(self) -> bool:
        return self.passed_count == self.exchange_count

    @property
    def not_updated_count(self) -> int:
        return sum(1 for t in self.transcripts if t.not_updated)


class Listener(Protocol):
    """What the player tells a report while it runs (called from worker threads)."""

    def started(self, items: Sequence[PlanItem]) -> None: ...

    def exchange_done(self, item: PlanItem, result: ExchangeResult) -> None: ...

    def transcript_done(self, result: TranscriptResult) -> None:
        """Called once per file, in name order (also when files run in parallel)."""


# --------------------------------------------------------------------------- plan


@dataclass(frozen=True)
class PlanItem:
    """One file to play: its transcript, the exchanges reported, and how many to play."""

    path: str
    transcript: Transcript
    selected: frozenset[int]  # 0-based indices of the exchanges reported
    play_count: int  # exchanges 0 .. play_count-1 are played (the later ones are not needed)

    @property
    def selected_count(self) -> int:
        return len(self.selected)


def load_transcripts(paths: Iterable[str | os.PathLike[str]]) -> list[tuple[str, Transcript]]:
    """Every transcript under `paths` (files, or folders searched for *.http), in name order.

    Raises `TranscriptErrors` listing every file that does not parse or holds no exchange.
    """
    loaded: list[tuple[str, Transcript]] = []
    errors: list[ParseError] = []
    seen: set[str] = set()
    for path in find_transcripts(paths):
        name = str(path)
        real = os.path.realpath(path)
        if real in seen:
            continue  # named twice (a file and its folder, `./a.http` and `a.http`): played once
        seen.add(real)
        if not path.exists():
            errors.append(ParseError("no such file or folder", path=name))
            continue
        try:
            transcript = load(path)
        except ParseError as exc:
            errors.append(exc)
            continue
        if not transcript.exchanges:
            errors.append(ParseError("no exchanges: a transcript holds at least one", path=name))
            continue
        loaded.append((name, transcript))
    if errors:
        raise TranscriptErrors(errors)
    return loaded


def parse_shard(text: str) -> tuple[int, int]:
    """`"2/5"` -> (2, 5); raises ValueError unless 1 <= K <= N."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match:
        raise ValueError(f"expected K/N such as 1/4, got {text!r}")
    k, n = int(match.group(1)), int(match.group(2))
    if not 1 <= k <= n:
        raise ValueError(f"expected 1 <= K <= N in K/N, got {text!r}")
    return k, n


def plan(
    transcripts: Sequence[tuple[str, Transcript]],
    *,
    pattern: str | None = None,
    shard: tuple[int, int] | None = None,
) -> list[PlanItem]:
    """Which files to play and which of their exchanges to report (see the module docstring).

    Sharding is by position in the sorted file list: shard K of N takes the files whose
    0-based index i has i % N == K - 1, the same split on every machine.
    """
    items: list[PlanItem] = []
    for index, (path, transcript) in enumerate(transcripts):
        if shard is not None and index % shard[1] != shard[0] - 1:
            continue
        if pattern is None:
            selected = frozenset(range(len(transcript.exchanges)))
        else:
            wanted = pattern.lower()
            selected = frozenset(
                i
                for i, exchange in enumerate(transcript.exchanges)
                if wanted in f"{path} {exchange.title}".lower()
            )
        if selected:
            items.append(PlanItem(path, transcript, selected, max(selected) + 1))
    return items


# --------------------------------------------------------------------------- placeholders


def missing_variables(
    items: Iterable[PlanItem], variables: Mapping[str, str]
) -> MissingVariableError | None:
    """The first `{{NAME}}` used by a request to be played that `variables` lacks, if any."""
    for item in items:
        for exchange in item.transcript.exchanges[: item.play_count]:
            for name in _placeholders(exchange.request):
                if name not in variables:
                    return MissingVariableError(name, path=item.path, line=exchange.line)
    return None


def _placeholders(request: Request) -> list[str]:
    texts = [request.target, *(value for _, value in request.headers)]
    if b"{{" in request.body:
        texts.append(request.body.decode("utf-8", errors="replace"))
    return [m.group(1) for text in texts for m in PLACEHOLDER.finditer(text)]


def fill_placeholders(
    request: Request, variables: Mapping[str, str], *, path: str = "", line: int | None = None
) -> Request:
    """`request` with each `{{NAME}}` in its target, header values and body replaced.

    In the target the value is percent-encoded where a URL needs it; in a JSON body it is
    JSON-escaped (placeholders stand inside strings). A value that cannot go where its
    placeholder stands (a line break in a header) is a `RecorderError` naming path:line.
    """

    def value_of(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in variables:
            raise MissingVariableError(name, path=path, line=line)
        return variables[name]

    def in_target(match: re.Match[str]) -> str:
        return quote(value_of(match), safe="!#$&'()*+,/:;=?@[]~%")

    def in_json(match: re.Match[str]) -> str:
        return json.dumps(value_of(match), ensure_ascii=False)[1:-1]

    def in_form(match: re.Match[str]) -> str:
        return quote_plus(value_of(match))

    target = request.target
    if "{{" in target:
        target = PLACEHOLDER.sub(in_target, target)
    headers = request.headers
    if any("{{" in value for _, value in headers):
        try:
            headers = Headers([(n, PLACEHOLDER.sub(value_of, v)) for n, v in headers])
        except ValueError as exc:
            where = path if line is None else f"{path}:{line}"
            raise RecorderError(f"{where}: a placeholder's value cannot be sent: {exc}") from None
    body = request.body
    if b"{{" in body:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            pass  # binary bodies hold no placeholders
        else:
            if request.is_json:
                fill = in_json
            elif is_form(request.headers.get("Content-Type")):
                fill = in_form  # the recorder took the value out of a form body
            else:
                fill = value_of
            body = PLACEHOLDER.sub(fill, text).encode()
    if target is request.target and headers is request.headers and body is request.body:
        return request
    return replace(request, target=target, headers=headers, body=body)


def fill_reply_placeholders(
    response: Response, variables: Mapping[str, str], names: Iterable[str]
) -> Response:
    """A recorded reply with each `{{NAME}}` of `names` whose variable is set replaced by its
    value, as it is compared: the recorder (and --update) write a secret that an agent echoes
    (a token in a message) as its placeholder. Other `{{...}}` text is the agent's own and
    stays as written, as does a placeholder whose variable is not set."""
    if b"{{" not in response.body and not any("{{" in value for _, value in response.headers):
        return response
    known = {name: variables[name] for name in names if name in variables}
    if not known:
        return response

    def plain(match: re.Match[str]) -> str:
        return known.get(match.group(1), match.group())

    def in_json(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in known:
            return match.group()
        return json.dumps(known[name], ensure_ascii=False)[1:-1]

    def in_header(match: re.Match[str]) -> str:
        # header values are read as Latin-1: a value beyond it comes back as its UTF-8 bytes
        value = known.get(match.group(1))
        if value is None:
            return match.group()
        return value.encode("utf-8", "surrogateescape").decode("latin-1")

    def filled(text: str, *, is_json: bool) -> str:
        return PLACEHOLDER.sub(in_json if is_json else plain, text) if "{{" in text else text

    try:
        headers = Headers(
            [(n, PLACEHOLDER.sub(in_header, v) if "{{" in v else v) for n, v in response.headers]
        )
    except ValueError:  # a value that cannot be a header value (a line break): kept as written
        headers = response.headers
    if response.events is not None:
        events = tuple(
            replace(
                event,
                data=None
                if event.data is None
                else filled(event.data, is_json=_is_json_text(event.data)),
                id=None if event.id is None else filled(event.id, is_json=False),
            )
            for event in response.events
        )
        return response.with_content(headers, events=events)
    try:
        text = response.body.decode("utf-8")
    except UnicodeDecodeError:
        return response.with_content(headers, body=response.body)
    body = filled(text, is_json=response.is_json).encode("utf-8", "surrogateescape")
    return response.with_content(headers, body=body)


def _is_json_text(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def secret_values(variables: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
    """value -> placeholder name, for `scrub_text` (which looks for each spelling of a value):
    the values the environment sets for `names`."""
    return {variables[n]: n for n in names if variables.get(n)}


# --------------------------------------------------------------------------- addresses


def agent_base_url(url: str) -> str:
    """`http://127.0.0.1:8000/` -> `http://127.0.0.1:8000`; raises ValueError on a bad URL.

    A path in the URL (an agent mounted under a prefix) is kept and put before every recorded
    request path.
    """
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"not a URL: {url!r} ({exc})") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(
            f"expected an http:// or https:// URL such as http://127.0.0.1:41242, got {url!r}"
        )
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    port = f":{parsed.port}" if parsed.port is not None else ""
    return f"{parsed.scheme}://{host}{port}{parsed.path.rstrip('/')}"


def recorded_base_url(transcript: Transcript) -> str | None:
    """The address the transcript was recorded against: `http://` + the first Host header."""
    return transcript.recorded_base_url


# --------------------------------------------------------------------------- sending


def make_transport(base_url: str = "http://") -> httpx.HTTPTransport:
    """A keep-alive HTTP/1.1 connection pool to the agent at `base_url` (one per worker).

    The player sends through the transport, not an `httpx.Client`: a replay must send exactly
    the recorded request, so none of what a client adds is wanted (default Accept,
    Accept-Encoding and User-Agent headers, cookies kept from earlier replies, redirects
    followed), and skipping it makes each exchange cheaper. Certificates are loaded (and
    verified) only for an https agent: loading them costs ~20 ms that plain http never needs.
    """
    return httpx.HTTPTransport(retries=0, verify=base_url.startswith("https:"))


def send_raw(
    transport: httpx.BaseTransport,
    base_url: str,
    request: Request,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    max_events: int | None = None,
    on_frames: Callable[[int], None] | None = None,
) -> LiveReply:
    """Send `request` to the agent at `base_url`; return its reply as it arrived (a
    `LiveReply`: its `Response` is built on use).

    An event stream is read as it arrives; with `max_events` (a golden reply recorded
    truncated) reading stops after that many frames; `on_frames(n)` is told how many frames
    have arrived (0 when the reply's head arrives). The whole reply must arrive within
    `timeout` seconds. Raises `UpstreamError` when the agent cannot be reached, and its
    `NoReplyError` when no whole reply arrives (too slow, or the connection dropped).
    """
    target = request.target
    if not target.startswith("/"):
        # absolute-form (RFC 9112 §3.2.2): keep the path and query only
        try:
            url = httpx.URL(target)
        except httpx.InvalidURL as exc:
            raise NoReplyError(f"cannot send {request.method} {target}: {exc}") from None
        if not url.is_absolute_url:
            # asterisk-form (`OPTIONS *`) and the like: httpx sends origin-form only
            raise NoReplyError(
                f"cannot send {request.method} {target}: recorder sends requests for a path"
                " (such as /a2a/jsonrpc) or a full URL"
            )
        target = url.raw_path.decode("ascii")
    # bytes: a header value is octets (RFC 9110 §5.5); the recorder wrote them as Latin-1, and
    # a placeholder's value may hold any character (sent as UTF-8 where Latin-1 cannot hold it)
    headers = [
        (name.encode("latin-1", "replace"), _header_bytes(value))
        for name, value in request.headers
        if name.lower() not in _NOT_SENT
    ]
    body: bytes | None = request.body
    if not body and request.method.upper() in _BODYLESS_METHODS:
        body = None
    deadline = time.monotonic() + timeout
    try:
        url = _url(base_url + target)
    except httpx.InvalidURL as exc:
        raise NoReplyError(f"cannot send {request.method} {target}: {exc}") from None
    try:
        outgoing = httpx.Request(
            request.method,
            url,
            headers=headers,
            content=body,
            extensions={"timeout": _timeouts(timeout)},
        )
        reply = transport.handle_request(outgoing)
        try:
            content_type = reply.headers.get("content-type")
            if on_frames is not None:
                on_frames(0)
            encoding = reply.headers.get("content-encoding")
            if encoding is not None and not _decodable(encoding):
                raise NoReplyError(
                    f"the reply of the agent at {base_url} ({request.method} {target}) has"
                    f" Content-Encoding: {encoding}, which recorder cannot decode"
                )
            if is_event_stream(content_type):
                data = _read_stream(reply, deadline, timeout, max_events, on_frames)
            else:
                data = _read_body(reply, deadline)
        finally:
            reply.close()
    except _StreamDeadline as exc:
        what = "event stream" if exc.args and exc.args[0] == "stream" else "reply"
        raise NoReplyError(
            f"the {what} that the agent at {base_url} sent for {request.method} {target} "
            f"did not end within {timeout:g} s"
        ) from None
    except httpx.ConnectTimeout:
        raise UpstreamError(
            f"cannot reach the agent at {base_url}: it did not accept a connection within"
            f" {timeout:g} s"
        ) from None
    except httpx.TimeoutException:
        raise NoReplyError(
            f"the agent at {base_url} did not answer within {timeout:g} s"
            f" ({request.method} {target})"
        ) from None
    except httpx.ConnectError as exc:
        raise UpstreamError(f"cannot reach the agent at {base_url}: {_reason(exc)}") from None
    except httpx.DecodingError as exc:
        raise NoReplyError(
            f"the reply of the agent at {base_url} ({request.method} {target}) cannot be"
            f" decoded as its Content-Encoding says: {exc}"
        ) from None
    except httpx.RequestError as exc:
        raise NoReplyError(
            f"no whole reply from the agent at {base_url} ({request.method} {target}):"
            f" {_reason(exc)}"
        ) from None
    return LiveReply(
        reply.status_code,
        reply.reason_phrase,
        [
            (name, value.decode("latin-1"))
            for name, value in ((n.decode("latin-1"), v) for n, v in reply.headers.raw)
            if name.lower() not in _NOT_KEPT
        ],
        data,
        reply.http_version if reply.http_version.startswith("HTTP/") else "HTTP/1.1",
    )


def _scrub_mismatch(mismatch: Mismatch, secrets: Mapping[str, str]) -> Mismatch:
    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            return scrub_text(value, secrets)
        if isinstance(value, dict):
            return {name: scrub(item) for name, item in value.items()}
        if isinstance(value, list):
            return [scrub(item) for item in value]
        return value

    return replace(
        mismatch,
        path=scrub_text(mismatch.path, secrets),
        expected=scrub(mismatch.expected),
        actual=scrub(mismatch.actual),
        message=scrub_text(mismatch.message, secrets),
    )


def _secret_placeholders(transcript: Transcript, rules: Rules) -> set[str]:
    names = {*rules.secret_headers.values(), *rules.secret_fields.values()}
    secret_headers, secret_fields = rules.secret_headers.keys(), rules.secret_fields.keys()
    for exchange in transcript.exchanges:
        request = exchange.request
        for name, value in request.headers:
            if name.lower() in secret_headers and "{{" in value:
                names.update(m.group(1) for m in PLACEHOLDER.finditer(value))
        if "{{" in request.target and secret_fields:
            query = request.target.partition("?")[2]
            for item in query.split("&"):
                key, _, value = item.partition("=")
                if key in secret_fields:
                    names.update(m.group(1) for m in PLACEHOLDER.finditer(value))
        if b"{{" in request.body and secret_fields and request.json is not None:
            names.update(_secret_member_placeholders(request.json, secret_fields))
    return names


def _secret_member_placeholders(value: Any, fields: Iterable[str]) -> set[str]:
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, member in item.items():
                if key in fields and isinstance(member, str):
                    found.update(m.group(1) for m in PLACEHOLDER.finditer(member))
                else:
                    stack.append(member)
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _header_bytes(value: str) -> bytes:
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogateescape")


class _StreamDeadline(Exception):
    """An event stream still open when the time for the whole reply ran out."""


@functools.lru_cache(maxsize=16)
def _timeouts(seconds: float) -> dict[str, float | None]:
    """httpx's per-request timeout settings (connect, read, write, pool), made once."""
    return httpx.Timeout(seconds).as_dict()


@functools.lru_cache(maxsize=512)
def _url(text: str) -> httpx.URL:
    """Parsed once per distinct URL (a JSON-RPC transcript sends every request to one URL)."""
    return httpx.URL(text)


def _read_stream(
    reply: httpx.Response,
    deadline: float,
    timeout: float,
    max_events: int | None,
    on_frames: Callable[[int], None] | None,
) -> bytes:
    from recorder.sse import SseDecoder

    counting = max_events is not None or on_frames is not None
    decoder = SseDecoder() if counting else None
    chunks: list[bytes] = []
    frames = 0
    for chunk in reply.iter_bytes():
        chunks.append(chunk)
        if decoder is not None:
            for event in decoder.feed(chunk):
                if event.data is not None or event.event is not None or event.id is not None:
                    frames += 1  # comment-only frames (keep-alive pings) are not counted
            if on_frames is not None:
                on_frames(frames)
            if max_events is not None and len(decoder.events) >= max_events:
                break
        if time.monotonic() > deadline:
            raise _StreamDeadline("stream")
    return b"".join(chunks)


def _read_body(reply: httpx.Response, deadline: float) -> bytes:
    """A whole body, within the time left for the reply: httpx's read timeout bounds each read,
    not the whole (an agent sending a byte every few seconds would never time out)."""
    chunks: list[bytes] = []
    for chunk in reply.iter_bytes():
        chunks.append(chunk)
        if time.monotonic() > deadline:
            raise _StreamDeadline("reply")
    return b"".join(chunks)


def _decodable(encoding: str) -> bool:
    """Whether httpx decodes this Content-Encoding (br and zstd only with their packages)."""
    return all(_DECODABLE.get(part.strip().lower(), False) for part in encoding.split(","))


_DECODABLE = {
    "identity": True,
    "gzip": True,
    "deflate": True,
    "br": importlib.util.find_spec("brotli") is not None
    or importlib.util.find_spec("brotlicffi") is not None,
    "zstd": importlib.util.find_spec("zstandard") is not None,
}


def _reason(exc: BaseException) -> str:
    """A short, human reason: `connection refused`, `timed out` …"""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno is not None:
            if current.errno == errno.ECONNREFUSED:
                return "connection refused"
            if current.errno == errno.ECONNRESET:
                return "connection reset"
            return (current.strerror or str(current)).lower()
        current = current.__cause__ or current.__context__
    text = str(exc)
    if "refused" in text.lower():
        return "connection refused"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"the connection closed before a whole reply ({text})" if text else "closed"
    return text or type(exc).__name__


# --------------------------------------------------------------------------- one file


class _BackgroundExchange:
    """An exchange whose event stream is read in a thread while later exchanges are sent."""

    def __init__(self, start: Callable[[Callable[[int], None]], LiveReply], timeout: float) -> None:
        self.started = time.perf_counter()
        self._timeout = timeout
        self._changed = threading.Condition()
        self._frames = -1  # -1: the reply's head has not arrived
        self._done = False
        self._live: LiveReply | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(start,), name="recorder-play-stream", daemon=True
        )
        self._thread.start()

    def _run(self, start: Callable[[Callable[[int], None]], LiveReply]) -> None:
        try:
            self._live = start(self._on_frames)
        except BaseException as exc:  # handed to the player's thread in `result`
            self._error = exc
        finally:
            with self._changed:
                self._done = True
                self._changed.notify_all()

    def _on_frames(self, count: int) -> None:
        with self._changed:
            self._frames = count
            self._changed.notify_all()

    def wait_for_frames(self, count: int) -> None:
        """Until `count` frames arrived or the stream ended (its reply is compared later)."""
        with self._changed:
            self._changed.wait_for(lambda: self._done or self._frames >= count, self._timeout)

    def result(self) -> LiveReply:
        self._thread.join(self._timeout + 5)
        if self._error is not None:
            raise self._error
        if self._live is None:
            raise NoReplyError(f"the event stream did not end within {self._timeout:g} s")
        return self._live


@dataclass
class FilePlayer:
    """Plays the exchanges of one transcript in order, with its own `ReplayState`.

    `play_until(index)` plays every exchange not yet played up to `index` (0-based) and returns
    the verdict on `index`; the pytest plugin calls it item by item, the CLI file by file.
    `base_url` is where requests go; `live_base` is the address the agent names itself by in
    its replies (the kit's card says `http://localhost:PORT` while it listens on 127.0.0.1),
    by default `base_url`.

    Exchanges run one after another, each reply read to its end before the next request, except
    where the transcript says a request was sent while an earlier event stream was open
    (`# @during exchange N frame K`): stream N is then read in the background, the tagged
    exchanges are sent once its frame K arrived, and N is compared when its stream has ended.
    """

    path: str
    transcript: Transcript
    transport: httpx.BaseTransport
    base_url: str
    rules: Rules = DEFAULT_RULES
    variables: Mapping[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    update: bool = False
    live_base: str | None = None
    state: ReplayState = field(init=False)
    results: dict[int, ExchangeResult] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        # the placeholders that stand for secrets: the rules' ({{A2A_TOKEN}}), and any this
        # file's requests use where a secret goes (a secret header, a secret member's value,
        # a secret query parameter); their values are kept off the terminal and the disk
        self._secret_names = _secret_placeholders(self.transcript, self.rules)
        self.state = ReplayState(
            self.rules,
            recorded_base=recorded_base_url(self.transcript),
            live_base=self.live_base or self.base_url,
            secret_placeholders=self._secret_names,
        )
        self._secrets = secret_values(self.variables, self._secret_names)
        # the placeholders a recorded reply may hold for the values the requests sent
        self._reply_names = self._secret_names | {
            name
            for exchange in self.transcript.exchanges
            for name in _placeholders(exchange.request)
        }
        self._to_bless: dict[int, LiveReply] = {}  # --update: the replies that mismatched
        self._changed_on_disk = False  # --update: the file was edited while it was played
        self._notes: dict[int, tuple[str, ...]] = {}
        self._no_reply: int | None = None  # the first exchange that got no whole reply
        self._next = 0
        self._background: dict[int, _BackgroundExchange] = {}
        self._during: dict[int, int] = {}  # exchange -> the open stream it is sent during
        self._open_until: dict[int, int] = {}  # stream -> frames before the first such send
        for index, exchange in enumerate(self.transcript.exchanges):
            for comment in exchange.comments:
                # `@during exchange N frame K` (httpfile checks it names an earlier stream)
                match = DURING_TAG.match(comment.strip())
                if match is None:
                    continue
                stream, frames = int(match.group(1)) - 1, int(match.group(2))
                if 0 <= stream < index:
                    self._during[index] = stream
                    if stream not in self._open_until:
                        self._open_until[stream] = frames

    def play_until(self, index: int) -> ExchangeResult:
        while index not in self.results:
            self._step()
        return self.results[index]

    def _step(self) -> None:
        exchanges = self.transcript.exchanges
        index = self._next
        if index >= len(exchanges):
            if not self._background:
                raise IndexError(f"{self.path} has {len(exchanges)} exchanges")
            for stream in sorted(self._background):
                self._finish(stream)
            return
        keep_open = self._during.get(index)
        for stream in sorted(self._background):
            if stream != keep_open:
                self._finish(stream)
        golden = exchanges[index]
        self._next += 1
        if self._no_reply is not None:
            # the rest of the file needs the ids of the reply that did not come
            self.results[index] = self._result(
                index,
                error=f"not played: exchange {self._no_reply + 1} got no reply",
                played=False,
            )
            return
        started = time.perf_counter()
        request = self.state.prepare(golden.request)
        self._notes[index] = self._unpaired_notes(index, golden.request)
        request = fill_placeholders(request, self.variables, path=self.path, line=golden.line)
        max_events = None
        if golden.truncated and golden.response.events is not None:
            max_events = len(golden.response.events)
        frames = self._open_until.get(index)
        if frames is not None:

            def start(on_frames: Callable[[int], None]) -> LiveReply:
                return send_raw(
                    self.transport,
                    self.base_url,
                    request,
                    timeout=self.timeout,
                    max_events=max_events,
                    on_frames=on_frames,
                )

            background = _BackgroundExchange(start, self.timeout)
            self._background[index] = background
            background.wait_for_frames(frames)
            return
        try:
            live = send_raw(
                self.transport, self.base_url, request, timeout=self.timeout, max_events=max_events
            )
        except NoReplyError as exc:
            self._failed(index, exc, started)
            return
        self._record(index, live, started)

    def _finish(self, index: int) -> None:
        background = self._background.pop(index)
        try:
            live = background.result()
        except NoReplyError as exc:
            self._failed(index, exc, background.started)
            return
        self._record(index, live, background.started)

    @property
    def changed_on_disk(self) -> bool:
        """--update found the file edited since it was read, and left it as it was."""
        return self._changed_on_disk

    @property
    def no_reply(self) -> ExchangeResult | None:
        """The exchange that got no whole reply (the rest of the file is not played), if any."""
        return None if self._no_reply is None else self.results[self._no_reply]

    def _result(self, index: int, **verdict: Any) -> ExchangeResult:
        golden = self.transcript.exchanges[index]
        return ExchangeResult(
            number=index + 1,
            title=golden.title,
            line=golden.line,
            notes=self._notes.get(index, ()),
            **verdict,
        )

    def _record(self, index: int, live: LiveReply, started: float) -> None:
        golden = self.transcript.exchanges[index]
        expected = fill_reply_placeholders(golden.response, self.variables, self._reply_names)
        if expected is not golden.response:
            golden = replace(golden, response=expected)
        mismatches = tuple(self.state.compare(golden, live))
        if self._secrets and mismatches:
            # a report must not print a secret (nor write it into a JUnit file)
            mismatches = tuple(_scrub_mismatch(m, self._secrets) for m in mismatches)
        if self.update and mismatches:
            # blessed once the whole file is played: a value a later exchange pairs (a task id
            # a GetTask names) is put back in this reply too
            self._to_bless[index] = live
        self.results[index] = self._result(
            index, mismatches=mismatches, seconds=time.perf_counter() - started
        )

    def _failed(self, index: int, error: NoReplyError, started: float) -> None:
        self._no_reply = index if self._no_reply is None else min(self._no_reply, index)
        # the message names the request's target: a secret query parameter is in it
        message = scrub_text(str(error), self._secrets)
        self.results[index] = self._result(
            index, error=message, seconds=time.perf_counter() - started
        )

    def _unpaired_notes(self, index: int, request: Request) -> tuple[str, ...]:
        """Notes on the recorded values of earlier replies that this request carries as
        recorded, because no live reply paired them (the earlier exchange mismatched): the
        agent is asked about something it never made, and the mismatches follow from that."""
        values = self.state.unpaired(request)
        if not values:
            return ()
        notes = []
        for value in sorted(values):
            needle = value.encode()
            for earlier in range(index):
                if needle in self.transcript.exchanges[earlier].response.body:
                    notes.append(
                        f"the request carries {value} as recorded: it comes from the recorded"
                        f" reply of exchange {earlier + 1}, and no live reply paired it"
                    )
                    break
        return tuple(notes)

    def write_update(self, selected: Iterable[int]) -> bool:
        """Write the blessed replies of the `selected` exchanges back to the file (atomically).

        Returns whether the file changed; an unchanged transcript is not rewritten.
        """
        chosen = set(selected)
        if self.not_updated(chosen) is not None:
            return False
        # secrets never reach the disk: a blessed reply is redacted as the recorder redacts
        # (rules.secret_headers, rules.secret_fields), and the values of the secret
        # placeholders ({{A2A_TOKEN}}) are scrubbed wherever such a reply echoes them. Only the
        # rewritten replies: the rest of the file stays as it is.
        redactor = Redactor(headers=self.rules.secret_headers, fields=self.rules.secret_fields)
        blessed: dict[int, Response] = {}
        for index in sorted(chosen & self._to_bless.keys()):
            golden = self.transcript.exchanges[index]
            response = self.state.bless(golden.response, self._to_bless[index], matched=False)
            blessed[index] = redactor.redact_response(response)
        secrets = {**redactor.seen, **self._secrets}
        replaced: dict[int, Exchange] = {}
        for index, response in blessed.items():
            golden = self.transcript.exchanges[index]
            response = scrub_response(response, secrets)
            if response != golden.response:
                replaced[index] = replace(golden, response=response)
        if not replaced:
            return False
        try:
            with open(self.path, encoding="utf-8", newline="") as file:
                original = file.read()
            current = loads(original, source=self.path)
        except (OSError, UnicodeDecodeError, ParseError):
            current = None
        if current is None or (current.exchanges, current.comments) != (
            self.transcript.exchanges,
            self.transcript.comments,
        ):
            # edited while it was played: writing the update would lose the edit
            self._changed_on_disk = True
            return False
        text = splice(original, self.transcript, replaced)
        if text is None:
            exchanges = tuple(replaced.get(i, e) for i, e in enumerate(self.transcript.exchanges))
            text = dumps(replace(self.transcript, exchanges=exchanges))
        write_text_atomic(Path(self.path), text)
        return True

    def not_updated(self, selected: Iterable[int]) -> str | None:
        """Why --update must leave the file as it is, or None: an exchange got no reply, or a
        request had to carry a recorded id that no live reply paired (blessing its reply would
        write the agent's answer about an id it never made into the golden file)."""
        if self._no_reply is not None:
            return f"exchange {self._no_reply + 1} got no reply"
        for index in sorted(set(selected) | self._to_bless.keys()):
            result = self.results.get(index)
            if result is None or not result.played:
                continue
            if result.notes and result.mismatches:
                return (
                    f"exchange {result.number} sent a recorded id that no live reply paired;"
                    " fix the exchange before it, or record this scenario again"
                )
        return None


@dataclass(frozen=True)
class _Settings:
    base_url: str
    live_base: str | None
    rules: Rules
    variables: Mapping[str, str]
    timeout: float
    update: bool
    listener: Listener | None


class _Stopped(Exception):
    """Another worker failed; this one stops before its next exchange."""


def _play_item(
    item: PlanItem, transport: httpx.BaseTransport, settings: _Settings, stop: threading.Event
) -> TranscriptResult:
    player = FilePlayer(
        item.path,
        item.transcript,
        transport,
        settings.base_url,
        rules=settings.rules,
        variables=settings.variables,
        timeout=settings.timeout,
        update=settings.update,
        live_base=settings.live_base,
    )
    reported: list[ExchangeResult] = []
    for index in range(item.play_count):
        if stop.is_set():
            raise _Stopped
        result = player.play_until(index)
        # a setup exchange (played for its ids, not selected) is reported when it got no
        # reply: the exchanges that needed it are "not played", and that must say why
        if index in item.selected or (result.error is not None and result.played):
            reported.append(result)
            if settings.listener is not None:
                settings.listener.exchange_done(item, result)
    updated = False
    not_updated = None
    if settings.update and not all(r.passed for r in reported):
        not_updated = player.not_updated(item.selected)
        updated = not_updated is None and player.write_update(item.selected)
        if not updated and player.changed_on_disk:
            not_updated = "the file changed while it was played (run the update again)"
        elif not updated and not_updated is None:
            not_updated = (
                "the rewritten replies would be the recorded ones: the differences are in what"
                " the file does not keep"
            )
    return TranscriptResult(item.path, tuple(reported), updated=updated, not_updated=not_updated)


# --------------------------------------------------------------------------- the run


class AgentHandle(Protocol):
    """A started agent (the kit): where it listens, what it calls itself, its token."""

    @property
    def url(self) -> str: ...

    @property
    def base_url(self) -> str: ...

    @property
    def token(self) -> str: ...

    def stop(self) -> None: ...


def play(
    paths: Sequence[str | os.PathLike[str]],
    *,
    agent: str | None = None,
    rules: Rules = DEFAULT_RULES,
    update: bool = False,
    pattern: str | None = None,
    jobs: int = 1,
    shard: tuple[int, int] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    environ: Mapping[str, str] | None = None,
    listener: Listener | None = None,
    start_agent: Callable[[], AgentHandle] | None = None,
) -> PlayResult:
    """Replay the transcripts under `paths` against `agent` (default: a freshly started kit).

    Raises `TranscriptErrors`, `MissingVariableError`, `UpstreamError`, or ValueError for a
    bad agent URL; mismatches are in the result.
    """
    loaded = load_transcripts(paths)
    items = plan(loaded, pattern=pattern, shard=shard)
    selected_files = len(items) if shard is None else len(plan(loaded, pattern=pattern))
    variables = dict(os.environ if environ is None else environ)
    live_base: str | None = None
    handle: AgentHandle | None = None
    if agent is not None:
        base_url = agent_base_url(agent)
    elif items:
        handle = (start_agent or _start_kit)()
        base_url = agent_base_url(handle.url)
        live_base = agent_base_url(handle.base_url)
        # the kit we started checks this token: `make demo` needs no setup
        variables.setdefault("A2A_TOKEN", handle.token)
    else:
        base_url = "http://127.0.0.1"  # nothing to play: no agent started for nothing
    try:
        missing = missing_variables(items, variables)
        if missing is not None:
            raise missing
        if listener is not None:
            listener.started(items)
        settings = _Settings(base_url, live_base, rules, variables, timeout, update, listener)
        results = _run(items, settings, jobs=max(1, jobs))
    finally:
        if handle is not None:
            handle.stop()
    return PlayResult(tuple(results), update=update, selected_files=selected_files)


def _start_kit() -> AgentHandle:
    from recorder.kit import start_kit

    handle: AgentHandle = start_kit(host="127.0.0.1", port=0)
    return handle


def _run(items: Sequence[PlanItem], settings: _Settings, *, jobs: int) -> list[TranscriptResult]:
    stop = threading.Event()
    listener = settings.listener
    if jobs == 1 or len(items) <= 1:
        results = []
        with make_transport(settings.base_url) as transport:
            for item in items:
                result = _play_item(item, transport, settings, stop)
                results.append(result)
                if listener is not None:
                    listener.transcript_done(result)
        return results

    # Daemon threads, not a ThreadPoolExecutor: on Ctrl-C the run ends at once, without
    # waiting (up to --timeout) for the replies in flight; an executor's threads are joined
    # at exit. Files are taken in name order and reported in name order as they finish.
    changed = threading.Condition()
    waiting = list(enumerate(items))
    finished: dict[int, TranscriptResult] = {}
    in_order: list[TranscriptResult] = []
    errors: list[BaseException] = []

    def worker() -> None:
        with make_transport(settings.base_url) as transport:
            while not stop.is_set():
                with changed:
                    if not waiting:
                        return
                    position, item = waiting.pop(0)
                try:
                    result = _play_item(item, transport, settings, stop)
                except _Stopped:
                    return
                except BaseException as exc:  # handed to the main thread, which raises it
                    with changed:
                        errors.append(exc)
                        stop.set()
                        changed.notify_all()
                    return
                with changed:
                    finished[position] = result
                    while len(in_order) in finished:
                        ready = finished.pop(len(in_order))
                        in_order.append(ready)
                        if listener is not None:
                            listener.transcript_done(ready)
                    changed.notify_all()

    threads = [
        threading.Thread(target=worker, name=f"recorder-play-{n}", daemon=True)
        for n in range(min(jobs, len(items)))
    ]
    for thread in threads:
        thread.start()
    try:
        with changed:
            while not errors and len(in_order) < len(items):
                changed.wait(0.2)  # with a timeout: Ctrl-C is seen at once
    except BaseException:  # Ctrl-C: the workers start no other exchange; no waiting for them
        stop.set()
        raise
    if errors:
        # the others stop before their next exchange: wait for the ones in flight, so that
        # nothing is reported after the error
        for thread in threads:
            thread.join(settings.timeout + 5)
        raise errors[0]
    return in_order
