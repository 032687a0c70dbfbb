"""`recorder import FILE.har`: the exchanges of a HAR file (browser devtools, mitmproxy,
Playwright, Charles, `recorder export --to har`) written as `.http` transcripts, as the
recording proxy would have written that traffic.

1. Read: `recorder.format.har` (a value of the wrong shape is an error at its JSON path, and
   nothing is written). Every entry is made an exchange before any file is written.
2. Which entries: the ones with a reply. An entry whose reply never came (status 0, an
   aborted request), whose body the producer did not keep, a WebSocket or CONNECT, or (with
   `only`) a request to another origin, is left out with a note saying why.
3. Each exchange is the request as sent and the reply as received: the URL's path and query as
   the target, `Host` from the URL when the producer wrote none (HTTP/2's `:authority`), header
   names in conventional case, no pseudo-headers (`:path`), hop-by-hop fields,
   `Content-Length`, `Accept-Encoding` (as the proxy forwards a request) or `Content-Encoding`
   (HAR holds the body decoded); an event stream's body is split into its frames (one that
   ends inside a frame is kept `@truncated` with its whole frames); bytes that are no UTF-8
   text are kept as they are (the file writes them in base64). A gRPC call (an
   `application/grpc` POST to `/lf.a2a.v1.A2AService/<Method>`) becomes a `GRPC` call, its
   protobuf messages as ProtoJSON (`recorder.bindings.grpc_http`; the grpc extra).
4. Secrets are redacted by the recorder's own redactor (`recorder.secrets.redact`, the rules'
   secret names) before anything is written; a literal `{{NAME}}` is escaped. A HAR that
   `recorder export --to har` wrote names the placeholders it holds (`_recorder`): those stay
   placeholders when they are ones the redactor writes (`{{A2A_TOKEN}}`, `{{TOKEN}}` ...).
5. Files, in the order the requests started (`startedDateTime`): `scenario` puts every
   exchange in one file; else an entry's `_recorder` file (the transcript it was exported
   from) or its `Recorder-Scenario` header names its scenario (a scenario wins); else it is
   grouped by id lineage as live traffic is (`recorder.record.lineage`: a request carrying an
   id an earlier reply generated joins that reply's file), a client's run of identical card
   fetches folded into one file, and `# @after` tags where a file reads state other files
   made. Names and numbers are the store's (`NN-slug.http`, numbering after the highest in
   `out`, never over a file that is there), so nothing is written outside `out`.
6. `@during`: the tags an exported HAR carries. A HAR keeps no time per frame, and its times
   are its producer's (a proxy's are the wire's; Playwright's include its own reading of the
   body after the page had it, so a request the page sent after a stream ended seems to
   overlap it), so the times are read only when asked (`during_by_time`): then a request
   that started before an earlier exchange of its file ended is tagged `@during` the latest
   such one, after as many of its frames as had come by then (at least the frame that gave
   it an id it carries, 0 before the reply's head, never during a reply it carries a value
   of that was not a stream's). `@push config N` and `@truncated` from an exported HAR's
   `_recorder` too.
"""

from __future__ import annotations

import datetime
import http
import re
import secrets as random_secrets
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from recorder.bindings import grpc_http
from recorder.errors import HarError, RecorderError
from recorder.format import har
from recorder.format.httpfile import DURING_TAG, dumps_exchange
from recorder.format.jsonbody import NOT_JSON, json_value
from recorder.format.literals import PLACEHOLDER
from recorder.format.model import Exchange, Headers, Request, Response, SseEvent, is_event_stream
from recorder.format.sse import SseDecoder
from recorder.record.lineage import Lineage
from recorder.record.naming import NUMBERED, header_case, operation_name, slugify
from recorder.record.proxy.folding import fold_text
from recorder.record.store.transcript_store import CONVERSATION, FileKey, TranscriptStore
from recorder.rules.ruleset import DEFAULT_RULES, Rules
from recorder.secrets.redact import PUSH_URL_SECRET, Redactor, scrub_text, secret_names

__all__ = ["Imported", "import_har"]

# what the proxy does not record of a request or a reply (`recorder.record.proxy.forwarding`):
# the hop-by-hop fields (RFC 9110 §7.6.1), the length (recomputed), and its own headers
_HOP_BY_HOP = frozenset(
    {"connection", "proxy-connection", "keep-alive", "te", "transfer-encoding", "upgrade"}
)
_NOT_REQUESTED = _HOP_BY_HOP | {"content-length", "expect", "accept-encoding"}
_NOT_REPLIED = _HOP_BY_HOP | {"content-length", "content-encoding"}
_SCENARIO = "recorder-scenario"
_TITLE = "recorder-title"
_CARD = "GetAgentCard"
_VERSIONS = {"h2": "HTTP/2", "http/2": "HTTP/2", "http/2.0": "HTTP/2", "h3": "HTTP/3"}
_VERSIONS |= {"http/3": "HTTP/3", "http/3.0": "HTTP/3", "http/1.0": "HTTP/1.0"}
_TAGS = ("@during", "@push", "@truncated", "@trailers", "@after")


@dataclass(frozen=True)
class Imported:
    """What an import wrote: the files (in the order first written), the exchanges, and a
    note for each entry left out."""

    files: tuple[Path, ...]
    exchanges: int
    skipped: tuple[str, ...]
    notes: tuple[str, ...] = ()


@dataclass
class _Item:
    """One entry made an exchange (secrets still in), with where it goes and its tags."""

    entry: har.HarEntry
    exchange: Exchange
    scenario: str | None
    page: str | None  # the transcript it was exported from (`_recorder`)
    number: int | None  # its number in that transcript
    during: tuple[int, int] | None = None  # an exported HAR's @during (exchange N, frame K)
    push: int | None = None  # an exported HAR's @push config N
    placeholders: frozenset[str] = frozenset()
    ticket: int = 0
    key: Hashable = None
    values: frozenset[str] = frozenset()
    frames: list[frozenset[str]] = field(default_factory=list)  # each data frame's values
    generated: frozenset[str] = frozenset()  # the values its reply generated


def import_har(
    text: str | bytes,
    *,
    source: str,
    out: Path,
    rules: Rules = DEFAULT_RULES,
    scenario: str | None = None,
    only: str | None = None,
    during_by_time: bool = False,
) -> Imported:
    """Write the exchanges of the HAR `text` (read from `source`) as transcripts in `out`
    (the module docstring). HarError (at its JSON path) when it is no HAR this can import;
    RecorderError for a scenario that makes no file name; OSError when `out` cannot be
    written."""
    if scenario is not None:
        try:
            slugify(scenario)
        except ValueError as exc:
            raise RecorderError(f"--scenario: {exc}") from None
    log = har.loads(text, source=source)
    redactor = Redactor(
        headers=secret_names(rules.secret_headers, fold=True),
        fields=secret_names(rules.secret_fields, fold=False),
        url_fields=rules.secret_url_fields,
    )
    writable = {
        *redactor.headers.values(),
        *redactor.fields.values(),
        *redactor.url_fields.values(),
        PUSH_URL_SECRET,
    }
    skipped: list[str] = []
    items: list[_Item] = []
    for entry in _in_order(log.entries):
        why = _left_out(entry, only)
        if why is not None:
            skipped.append(f"{entry.where}: {entry.request.method} {entry.request.url}: {why}")
            continue
        try:
            item = _item(entry, source, scenario, writable)
        except HarError as exc:
            exc.path = exc.path or source
            raise
        except _Skip as exc:
            skipped.append(f"{entry.where}: {entry.request.method} {entry.request.url}: {exc}")
            continue
        items.append(item)
    return _Writer(out, rules, redactor, log, during_by_time).write(items, skipped)


class _Skip(Exception):
    """An entry that is left out (the message says why), not an error in the HAR."""


def _in_order(entries: Sequence[har.HarEntry]) -> list[har.HarEntry]:
    """The entries in the order their requests started (the file's order where a start is
    not given, or for equal starts)."""
    if any(entry.started is None for entry in entries):
        return list(entries)
    return sorted(entries, key=lambda entry: cast(datetime.datetime, entry.started))


def _left_out(entry: har.HarEntry, only: str | None) -> str | None:
    request, response = entry.request, entry.response
    if response.status == 0:
        return "no reply (status 0: the request failed or was aborted)"
    if request.method.upper() == "CONNECT" or response.status == 101:
        return "a tunnel or a WebSocket, not an HTTP exchange"
    if response.body is None:
        return "the HAR holds no body for its reply (its producer did not keep it)"
    if request.body is None and any(
        name.lower() == "content-length" and value.strip() not in ("", "0")
        for name, value in request.headers
    ):
        return "the HAR holds no body for its request"
    if only is not None and not _same_origin(request.url, only):
        return f"not a request to {only}"
    return None


def _same_origin(url: str, only: str) -> bool:
    parts, wanted = urlsplit(url), urlsplit(only if "://" in only else f"http://{only}")
    if (parts.hostname, parts.port) != (wanted.hostname, wanted.port):
        return False
    return parts.path.startswith(wanted.path.rstrip("/") + "/") or not wanted.path.strip("/")


# --------------------------------------------------------------------------- an entry


def _item(entry: har.HarEntry, source: str, scenario: str | None, writable: set[str]) -> _Item:
    """The exchange of `entry` and its place; HarError at the entry's path for a part the
    model refuses, `_Skip` for one that is left out."""
    extra = entry.recorder
    names = frozenset(_strings(extra.get("placeholders"), entry, "placeholders")) & writable
    nonce = random_secrets.token_hex(8)
    try:
        entry = _sentinels(entry, names, nonce)
        exchange = _exchange(entry)
    except ValueError as exc:
        raise HarError(str(exc), path=source, where=entry.where) from None
    page = _string(extra.get("file"), entry, "file")
    number = _number(extra.get("exchange"), entry, "exchange")
    title = _string(extra.get("title"), entry, "title")
    comments, during = _comments(extra.get("comments"), entry, source)
    headers = exchange.request.headers
    chosen = scenario
    if chosen is None and page is not None:
        chosen = _scenario_of(page)
    if chosen is None and headers.get(_SCENARIO):
        chosen = (headers.get(_SCENARIO) or "").strip() or None
    if chosen is not None:
        try:
            slugify(chosen)
        except ValueError:
            chosen = None  # (a scenario that makes no file name: grouped by lineage)
    description = headers.get(_TITLE)
    request = replace(exchange.request, headers=headers.without(_SCENARIO, _TITLE))
    if not title:
        title = operation_name(request)
        if description and description.strip():
            title = f"{title}: {' '.join(description.split())}"
    try:
        exchange = replace(
            exchange,
            request=request,
            title=title,
            comments=comments,
            truncated=exchange.truncated or extra.get("truncated") is True,
        )
    except ValueError as exc:
        raise HarError(str(exc), path=source, where=f"{entry.where}._recorder") from None
    push = _number(extra.get("push"), entry, "push")
    return _Item(entry, exchange, chosen, page, number, during, push, _restorer(names, nonce))


def _restorer(names: frozenset[str], nonce: str) -> frozenset[str]:
    return frozenset(f"{name}\0{nonce}" for name in names)


def _string(value: Any, entry: har.HarEntry, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise HarError("expected a string", where=f"{entry.where}._recorder.{name}")
    return value


def _number(value: Any, entry: har.HarEntry, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise HarError("expected a number from 1", where=f"{entry.where}._recorder.{name}")
    return value


def _strings(value: Any, entry: har.HarEntry, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise HarError("expected an array of strings", where=f"{entry.where}._recorder.{name}")
    return list(value)


def _comments(
    value: Any, entry: har.HarEntry, source: str
) -> tuple[tuple[str, ...], tuple[int, int] | None]:
    """An exported exchange's comments: its `@during` tag read out, the other tags the
    model holds elsewhere dropped (`@push`, `@truncated`: `_recorder` says them), any other
    comment (a tag of a newer recorder too) kept as it is."""
    kept: list[str] = []
    during = None
    for index, comment in enumerate(_strings(value, entry, "comments")):
        where = f"{entry.where}._recorder.comments[{index}]"
        if "\n" in comment or "\r" in comment:
            raise HarError("a comment is one line", path=source, where=where)
        word = comment.strip().split(maxsplit=1)[:1]
        match = DURING_TAG.match(comment.strip())
        if match is not None:
            during = (int(match.group(1)), int(match.group(2)))
        elif word and word[0] in _TAGS:
            continue
        else:
            kept.append(comment)
    return tuple(kept), during


def _scenario_of(page: str) -> str | None:
    """`02-message-reply.http` -> `message-reply`: the scenario of an exported file."""
    name = page.replace("\\", "/").rsplit("/", 1)[-1]
    match = NUMBERED.match(name)
    if match is not None:
        name = name[len(match.group(1)) + 1 :]
    return name.removesuffix(".http") or None


# placeholders of an exported HAR, kept through the redactor (which escapes every literal
# `{{NAME}}`): each is a token no HAR can hold (a fresh random part per entry) while it is
# redacted, and a placeholder again after
def _sentinel(name: str, nonce: str) -> str:
    return f"!recorder{nonce}!{name}!"


_SENTINEL = re.compile(r"!recorder([0-9a-f]{16})!([A-Za-z_][A-Za-z0-9_]*)!")


def _sentinels(entry: har.HarEntry, names: frozenset[str], nonce: str) -> har.HarEntry:
    if not names:
        return entry

    def swap(text: str) -> str:
        def one(match: re.Match[str]) -> str:
            return _sentinel(match.group(1), nonce) if match.group(1) in names else match.group()

        return PLACEHOLDER.sub(one, text) if "{{" in text else text

    def swap_body(body: bytes | None) -> bytes | None:
        if body is None or b"{{" not in body:
            return body
        try:
            return swap(body.decode("utf-8")).encode("utf-8")
        except UnicodeDecodeError:
            return body

    request, response = entry.request, entry.response
    request = replace(
        request,
        url=swap(request.url),
        headers=tuple((n, swap(v)) for n, v in request.headers),
        body=swap_body(request.body),
    )
    response = replace(
        response,
        headers=tuple((n, swap(v)) for n, v in response.headers),
        body=swap_body(response.body),
        trailers=tuple((n, swap(v)) for n, v in response.trailers),
    )
    return replace(entry, request=request, response=response)


def _restore(exchange: Exchange, kept: frozenset[str]) -> Exchange:
    """`exchange` with the sentinels of the placeholders `kept` (`_restorer`) placeholders
    again."""
    if not kept:
        return exchange

    def back(text: str) -> str:
        def one(match: re.Match[str]) -> str:
            name, nonce = match.group(2), match.group(1)
            return "{{" + name + "}}" if f"{name}\0{nonce}" in kept else match.group()

        return _SENTINEL.sub(one, text) if "!recorder" in text else text

    return _map_text(exchange, back)


def _map_text(exchange: Exchange, change: Callable[[str], str]) -> Exchange:
    """`exchange` with `change` applied to its target, header values, text bodies, frames
    and trailers."""

    def body(data: bytes) -> bytes:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        return change(text).encode("utf-8")

    def headers(pairs: Headers) -> Headers:
        return Headers([(n, change(v)) for n, v in pairs])

    request, response = exchange.request, exchange.response
    request = replace(
        request,
        target=change(request.target),
        headers=headers(request.headers),
        body=body(request.body),
    )
    events = None
    if response.events is not None:
        events = tuple(
            replace(
                event,
                data=None if event.data is None else change(event.data),
                id=None if event.id is None else change(event.id),
            )
            for event in response.events
        )
    response = Response(
        status=response.status,
        reason=response.reason,
        headers=headers(response.headers),
        body=b"" if events is not None else body(response.body),
        events=events,
        http_version=response.http_version,
        trailers=headers(response.trailers),
    )
    return replace(exchange, request=request, response=response)


def _exchange(entry: har.HarEntry) -> Exchange:
    """The entry as the transcript model (secrets still in); ValueError for a part the model
    refuses; `_Skip` for a gRPC call that cannot be read."""
    request, response = entry.request, entry.response
    content_type = _header(request.headers, "content-type") or request.mime_type
    if grpc_http.is_grpc_content(content_type) and request.method.upper() == "POST":
        return _grpc_exchange(entry)
    url = urlsplit(request.url)
    target = (url.path or "/") + (f"?{url.query}" if url.query else "")
    if not url.scheme:  # (a producer that wrote the target alone)
        target = request.url
    headers = _kept(request.headers, _NOT_REQUESTED)
    if headers.get("Host") is None and url.netloc:
        headers = Headers([("Host", url.netloc), *headers])
    recorded = Request(
        method=request.method,
        target=target,
        headers=headers,
        body=request.body or b"",
        http_version=_version(request.http_version),
    )
    reply_headers = _kept(response.headers, _NOT_REPLIED)
    body = response.body or b""
    events, truncated = None, False
    if is_event_stream(reply_headers.get("Content-Type")):
        events, truncated = _frames(body)
    reason = response.status_text
    if not reason:
        try:
            reason = http.HTTPStatus(response.status).phrase
        except ValueError:
            reason = ""
    reply = Response(
        status=response.status,
        reason=reason,
        headers=reply_headers,
        body=body if events is None else b"",
        events=events,
        http_version=_version(response.http_version),
    )
    return Exchange(request=recorded, response=reply, truncated=truncated)


def _frames(body: bytes) -> tuple[tuple[SseEvent, ...] | None, bool]:
    """A stream's frames and whether it ended inside one (kept truncated, its whole frames
    kept, as the proxy does); (None, False) when the body is no lossless SSE."""
    decoder = SseDecoder()
    decoder.feed(body)
    if not decoder.lossless:
        return None, False
    whole = decoder.close()
    if whole:
        return None, False  # (the model splits a whole stream itself)
    return (tuple(decoder.events), True) if decoder.events else (None, False)


def _grpc_exchange(entry: har.HarEntry) -> Exchange:
    request, response = entry.request, entry.response
    path = urlsplit(request.url).path
    try:
        sent, answered = grpc_http.call_from_http(
            path,
            request.headers,
            request.body or b"",
            response.headers,
            response.body or b"",
            response.trailers,
        )
    except RecorderError as exc:
        raise _Skip(f"a gRPC call: {exc}") from None
    except ValueError as exc:
        raise _Skip(f"a gRPC call that cannot be read: {exc}") from None
    return Exchange(request=sent, response=answered)


def _header(pairs: Sequence[tuple[str, str]], name: str) -> str | None:
    return next((value for key, value in pairs if key.lower() == name), None)


def _kept(pairs: Sequence[tuple[str, str]], dropped: frozenset[str]) -> Headers:
    """Headers as the proxy records them: no pseudo-headers, none of `dropped`, none that
    `Connection` names; names in conventional case."""
    named = {
        token.strip().lower()
        for key, value in pairs
        if key.lower() == "connection"
        for token in value.split(",")
    }
    return Headers(
        [
            (header_case(key), value)
            for key, value in pairs
            if not key.startswith(":") and key.lower() not in dropped and key.lower() not in named
        ]
    )


def _version(text: str) -> str:
    """A HAR's httpVersion as a request or status line's: `h2` -> `HTTP/2`."""
    folded = text.strip().lower()
    if folded in _VERSIONS:
        return _VERSIONS[folded]
    return "HTTP/1.1"


# --------------------------------------------------------------------------- the files


class _Writer:
    """Puts the items in their files through the recorder's store, as the proxy does."""

    def __init__(
        self, out: Path, rules: Rules, redactor: Redactor, log: har.HarLog, by_time: bool
    ) -> None:
        self.by_time = by_time
        self.store = TranscriptStore(out, scrub=scrub_text, mode="new")
        self.lineage = Lineage(rules)
        self.redactor = redactor
        self.pages = {page.id: page for page in log.pages}
        self.conversations = 0
        self.tickets: dict[tuple[str, int], int] = {}  # (page, number) -> ticket
        self.page_keys: dict[str, Hashable] = {}  # page -> its file's key
        self.page_of_slug: dict[str, str] = {}  # a scenario's slug -> the page it has now
        self.open: dict[Hashable, list[_Item]] = {}  # file key -> its exchanges so far
        self.last_card: tuple[str, FileKey] | None = None
        self.notes: list[str] = []

    def write(self, items: list[_Item], skipped: list[str]) -> Imported:
        store = self.store
        store.prepare()
        written = 0
        try:
            for item in items:
                if self._write(item):
                    written += 1
                else:
                    skipped.append(
                        f"{item.entry.where}: {item.exchange.title}: a push delivery whose "
                        "registering exchange is not in its file"
                    )
        finally:
            store.close()
        return Imported(tuple(store.written), written, tuple(skipped), tuple(self.notes))

    def _begin(self, item: _Item) -> None:
        store, lineage = self.store, self.lineage
        request = item.exchange.request
        item.values = lineage.request_values(request)
        folding = False
        if item.scenario is not None:
            slug = slugify(item.scenario)
            if item.page is not None:
                before = self.page_of_slug.get(slug)
                if before is not None and before != item.page:
                    store.end(item.scenario)  # (another file of the same name: its own)
                self.page_of_slug[slug] = item.page
            item.ticket = store.begin(item.scenario)
        else:
            home = lineage.home_of(item.values)
            operation = ""
            if home is None:
                self.conversations += 1
                home = (CONVERSATION, self.conversations)
                operation = operation_name(request)
                folding = operation == _CARD
            item.ticket = store.begin(into=cast(FileKey, home), operation=operation)
        text = fold_text(dumps_exchange(item.exchange)) if folding else None
        if text is not None and self.last_card is not None and self.last_card[0] == text:
            store.fold(item.ticket, self.last_card[1])
        item.key = key = store.file_key(item.ticket)
        if text is not None and key is not None:
            self.last_card = (text, key)
        elif item.scenario is None and operation_name(request) != _CARD:
            self.last_card = None
        lineage.note_request(item.values, key)
        if item.page is not None:
            if item.page not in self.page_keys:
                self._note_page(item.page)
            self.page_keys.setdefault(item.page, key)
            if item.number is not None:
                self.tickets[(item.page, item.number)] = item.ticket

    def _learn(self, item: _Item) -> None:
        """The values `item`'s reply generated get its file as their home (a stream's frame
        by frame: each data frame's values kept for later `@during` tags)."""
        response = item.exchange.response
        lineage = self.lineage
        if response.events is None:
            if self.by_time:
                item.generated = frozenset(t for t, _ in _generated(lineage, response.body))
            lineage.learn_body(response.body, item.key, item.values)
            return
        for event in response.events:
            if event.data is None:
                continue  # (a comment-only frame: no frame a `@during` tag counts)
            item.frames.append(frozenset(text for text, _ in _generated(lineage, event.data)))
            lineage.learn_body(event.data.encode("utf-8"), item.key, item.values)

    def _write(self, item: _Item) -> bool:
        self._begin(item)
        during = self._during(item)
        push = None
        if item.push is not None:
            push = self.tickets.get((item.page or "", item.push))
            if push is None or push not in self._tickets_of(item.key):
                self.store.forget(item.ticket)
                return False
        self._learn(item)
        exchange, secrets, sent = self._redacted(item)
        after = set(self.lineage.needs(item.key))
        after |= self._page_needs(item)
        self.store.write(
            item.ticket,
            exchange,
            scenario=item.scenario,
            operation=operation_name(exchange.request),
            secrets=secrets,
            sent_secrets=sent,
            during=during,
            after=after,
            push=push,
        )
        self.open.setdefault(item.key, []).append(item)
        return True

    def _note_page(self, name: str) -> None:
        """A note for the comments of an exported file's head that are not written again
        (the store writes a head's `@after` tags only)."""
        page = self.pages.get(name)
        if page is None:
            return
        dropped = [c for c in _page_comments(page) if not c.strip().startswith("@after ")]
        if dropped:
            self.notes.append(
                f"{name}: {plural_comments(len(dropped))} of its head not kept: "
                + "; ".join(dropped)
            )

    def _tickets_of(self, key: Hashable) -> set[int]:
        return {other.ticket for other in self.open.get(key, [])}

    def _page_needs(self, item: _Item) -> set[Hashable]:
        """The files an exported file's `# @after` tags name, among those imported."""
        if item.page is None:
            return set()
        page = self.pages.get(item.page)
        if page is None:
            return set()
        found: set[Hashable] = set()
        for comment in _page_comments(page):
            match = re.match(r"^@after (\S+\.http)$", comment.strip())
            if match is None:
                continue
            needed = self._page_named(item.page, match.group(1))
            if needed is not None and needed in self.page_keys:
                found.add(self.page_keys[needed])
        return found

    def _page_named(self, page: str, name: str) -> str | None:
        """The page of the file an `@after` tag of `page` names (a file of its folder)."""
        folder = page.rsplit("/", 1)[0] + "/" if "/" in page else ""
        wanted = folder + name
        return wanted if wanted in self.pages or wanted in self.page_keys else None

    def _during(self, item: _Item) -> tuple[int, int] | None:
        """(the ticket of the exchange `item` arrived during, its frames by then), or None."""
        earlier = self.open.get(item.key, [])
        if item.during is not None and item.page is not None:
            number, frames = item.during
            ticket = self.tickets.get((item.page, number))
            if ticket is not None and ticket in {other.ticket for other in earlier}:
                return ticket, frames
            return None
        started = item.entry.started
        if not self.by_time or started is None or item.page is not None:
            return None
        still_open = [
            other
            for other in earlier
            if (ended := other.entry.ended_at) is not None
            and ended > started
            and (other.frames or not (item.values & other.generated))
        ]
        if not still_open:
            return None
        latest = max(still_open, key=lambda other: other.ticket)
        return latest.ticket, _frames_by(latest, item, started)

    def _redacted(self, item: _Item) -> tuple[Exchange, dict[str, str], dict[str, str]]:
        """The exchange with its secrets out (`Redactor`), the secrets seen, and those the
        client sent (scrubbed from the files written before too)."""
        redactor = self.redactor.fresh()
        exchange = item.exchange
        request = exchange.request
        content_type = (
            "application/json" if request.is_grpc else request.headers.get("Content-Type")
        )
        headers = _redact_headers(redactor, request.headers)
        request = replace(
            request,
            target=request.target if request.is_grpc else redactor.redact_target(request.target),
            headers=headers,
            body=redactor.redact_body(request.body, content_type),
        )
        sent = dict(redactor.seen)
        response = exchange.response
        reply_headers = _redact_headers(redactor, response.headers)
        if response.events is not None:
            events = redactor.redact_events(response.events)
            response = response.with_content(reply_headers, events=events)
        else:
            kind = "application/json" if response.is_grpc else reply_headers.get("Content-Type")
            body = redactor.redact_body(response.body, kind)
            response = response.with_content(reply_headers, body=body)
        if response.trailers:
            response = replace(response, trailers=_redact_headers(redactor, response.trailers))
        exchange = _restore(
            replace(exchange, request=request, response=response), item.placeholders
        )
        return exchange, dict(redactor.seen), sent


def _redact_headers(redactor: Redactor, headers: Headers) -> Headers:
    """`Redactor.redact_headers`, but a secret header an exported HAR holds as a placeholder
    already (`Authorization: Bearer {{CREDENTIALS}}`, a push delivery's) keeps its
    placeholder where the redactor would write one of another name in the same shape."""
    redacted = redactor.redact_headers(headers)
    if redacted is headers or not any("!recorder" in value for _, value in headers):
        return redacted
    kept = []
    for (name, value), (_, written) in zip(headers, redacted, strict=True):
        restored = _SENTINEL.sub(lambda m: "{{" + m.group(2) + "}}", value)
        if _shape(restored) == _shape(written):
            written = value  # (its sentinel is made a placeholder again by `_restore`)
        kept.append((name, written))
    return Headers(kept)


def _shape(text: str) -> str:
    """`text` with every placeholder's name left out."""
    return PLACEHOLDER.sub("{{}}", text)


def plural_comments(count: int) -> str:
    return "1 comment" if count == 1 else f"{count} comments"


def _page_comments(page: har.HarPage) -> list[str]:
    value = page.recorder.get("comments")
    if not isinstance(value, list):
        return []
    return [comment for comment in value if isinstance(comment, str)]


def _generated(lineage: Lineage, data: str | bytes | None) -> list[tuple[str, str]]:
    """The generated values of JSON text (a body, a frame's data; none for text that is no
    JSON)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if not raw or raw.lstrip()[:1] not in (b"{", b"["):
        return []
    value = json_value(raw, exact_numbers=False)
    return [] if value is NOT_JSON else lineage.generated(value)


def _frames_by(earlier: _Item, item: _Item, started: datetime.datetime) -> int:
    """How many data frames of `earlier`'s stream had come when `item`'s request started:
    0 before its reply's head; at least up to the frame that first carried a value the
    request carries; else in proportion to the time its frames took."""
    frames = earlier.frames
    if not frames:
        return 0
    head = earlier.entry.head_at
    if head is not None and started < head:
        return 0
    needed = 0
    for number, values in enumerate(frames, start=1):
        if values & item.values:
            needed = number
            break
    ended = earlier.entry.ended_at
    share = 0
    if head is not None and ended is not None and ended > head:
        share = int(len(frames) * (started - head) / (ended - head))
    return min(len(frames), max(needed, share))
