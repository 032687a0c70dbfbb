"""HAR 1.2, the HTTP Archive that browsers' devtools, mitmproxy, Playwright, Charles and
Postman read and write: its shape, read (`loads`) and written (`dumps`). Pure: text in, values
out.

The shape (http://www.softwareishard.com/blog/har-12-spec/, the W3C draft of it), as far as
an exchange needs it:

    log        = {version, creator {name, version}, pages?, entries}
    page       = {startedDateTime, id, title, pageTimings}
    entry      = {pageref?, startedDateTime, time, request, response, cache, timings}
    request    = {method, url, httpVersion, cookies, headers, queryString, postData?,
                  headersSize, bodySize}
    postData   = {mimeType, text, params?}
    response   = {status, statusText, httpVersion, cookies, headers, content, redirectURL,
                  headersSize, bodySize}
    content    = {size, mimeType, text?, encoding?}              ; encoding "base64" or none
    timings    = {blocked?, dns?, connect?, send, wait, receive, ssl?}   ; ms, -1: not known
    header     = {name, value}

The spec allows members of one's own whose names start with `_`. This module reads and
writes these:

- `postData.encoding` ("base64"): a request body that is no text (what `content.encoding`
  is for a reply; Chromium and others write it too), read also as `_encoding`;
- `response._trailers` ([header]): what a reply's trailers (gRPC's status) held; HAR has no
  place of its own for them;
- `entry._recorder`, `page._recorder` (objects): what a transcript holds that HAR has no
  place for (the exchange's title, its tags; the file's name and comments). They are
  handed over as read; their meaning is the importer's (`recorder.record.har`).

A value of the wrong type, a body that is not what its encoding says, a date that is no
ISO 8601 date: `HarError` naming the JSON path (`$.log.entries[3].request.url`), or the
line and column of a JSON syntax error. Members this module does not use are not checked.
A `content` without `text` is a reply whose body the producer did not keep (`body` None),
unless its `size` says it was empty.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote_plus, urlsplit

from recorder.errors import HarError

__all__ = [
    "HarEntry",
    "HarLog",
    "HarPage",
    "HarRequest",
    "HarResponse",
    "dumps",
    "loads",
    "time_text",
]

VERSION = "1.2"
_BASE64 = "base64"
# the timings that come before a reply's head (HAR 1.2: ssl is part of connect)
_BEFORE_HEAD = ("blocked", "dns", "connect", "send", "wait")


@dataclass(frozen=True)
class HarRequest:
    """A request as the HAR holds it: the URL whole, headers as pairs (HTTP/2's `:path` and
    friends included, as the producer wrote them), the body's bytes (None: no `postData`)."""

    method: str
    url: str
    http_version: str = "HTTP/1.1"
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    mime_type: str = ""


@dataclass(frozen=True)
class HarResponse:
    """A reply as the HAR holds it; `body` None when the producer did not keep it."""

    status: int
    status_text: str = ""
    http_version: str = "HTTP/1.1"
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = b""
    mime_type: str = ""
    trailers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class HarEntry:
    """One exchange. `where` is its JSON path in the file it was read from (for messages);
    `started` its `startedDateTime`; `time` and `timings` in milliseconds, the timings not
    known (-1) left out; `recorder` its `_recorder` object as read."""

    request: HarRequest
    response: HarResponse
    started: datetime.datetime | None = None
    time: float | None = None
    timings: Mapping[str, float] = field(default_factory=dict)
    page: str | None = None
    recorder: Mapping[str, Any] = field(default_factory=dict)
    where: str = "$"

    @property
    def head_at(self) -> datetime.datetime | None:
        """When the reply's head came: `started` and the timings before it (None: unknown)."""
        if self.started is None or "wait" not in self.timings:
            return None
        before = sum(self.timings.get(name, 0.0) for name in _BEFORE_HEAD)
        return self.started + datetime.timedelta(milliseconds=before)

    @property
    def ended_at(self) -> datetime.datetime | None:
        """When the reply had come whole: `started` and `time` (None: unknown)."""
        if self.started is None or self.time is None:
            return None
        return self.started + datetime.timedelta(milliseconds=self.time)


@dataclass(frozen=True)
class HarPage:
    """A page (here: a transcript file): its id, title, start, and `_recorder` object."""

    id: str
    title: str = ""
    started: datetime.datetime | None = None
    recorder: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class HarLog:
    """A HAR file: who made it, its pages and entries (in the file's order)."""

    entries: tuple[HarEntry, ...] = ()
    pages: tuple[HarPage, ...] = ()
    creator: str = ""
    creator_version: str = ""


# --------------------------------------------------------------------------- reading


class _Reader:
    """Typed reads of the parsed JSON, each failure a `HarError` at its JSON path."""

    def __init__(self, source: str | None) -> None:
        self.source = source

    def fail(self, where: str, message: str) -> HarError:
        return HarError(message, path=self.source, where=where)

    def object(self, value: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, got {_kind(value)}")
        return value

    def member(self, parent: Mapping[str, Any], name: str, where: str) -> Any:
        if name not in parent:
            raise self.fail(where, f'no "{name}" member')
        return parent[name]

    def string(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise self.fail(where, f"expected a string, got {_kind(value)}")
        return value

    def optional_string(self, parent: Mapping[str, Any], name: str, where: str) -> str:
        value = parent.get(name)
        return "" if value is None else self.string(value, f"{where}.{name}")

    def number(self, value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(where, f"expected a number, got {_kind(value)}")
        if value != value or value in (float("inf"), float("-inf")):
            raise self.fail(where, "expected a finite number")
        return float(value)

    def array(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected an array, got {_kind(value)}")
        return value

    def date(self, value: Any, where: str) -> datetime.datetime:
        text = self.string(value, where)
        try:
            found = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise self.fail(where, f"not an ISO 8601 date: {text!r}") from None
        if found.tzinfo is None:
            found = found.replace(tzinfo=datetime.UTC)
        return found

    def pairs(self, value: Any, where: str) -> tuple[tuple[str, str], ...]:
        out = []
        for index, item in enumerate(self.array(value, where)):
            at = f"{where}[{index}]"
            pair = self.object(item, at)
            name = self.string(self.member(pair, "name", at), f"{at}.name")
            text = self.string(self.member(pair, "value", at), f"{at}.value")
            out.append((name, text))
        return tuple(out)

    def body(self, parent: Mapping[str, Any], where: str, *encodings: str) -> bytes | None:
        """`parent.text` as bytes, decoded as its encoding member says; None: no text."""
        text = parent.get("text")
        if text is None:
            return None
        text = self.string(text, f"{where}.text")
        encoding = None
        for name in encodings:
            if parent.get(name) is not None:
                encoding = self.string(parent[name], f"{where}.{name}")
                break
        if not encoding:
            return text.encode("utf-8", "surrogatepass")
        if encoding.lower() != _BASE64:
            raise self.fail(
                f"{where}.encoding", f'unknown encoding {encoding!r}: expected "base64"'
            )
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise self.fail(f"{where}.text", "not base64, as its encoding says") from None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def loads(text: str | bytes, *, source: str | None = None) -> HarLog:
    """The HAR in `text`; `HarError` (naming `source` and where) when it is not one."""
    read = _Reader(source)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"{exc.lineno}:{exc.colno}"
        raise HarError(f"not JSON: {exc.msg}", path=source, where=where) from None
    except (ValueError, RecursionError) as exc:
        raise HarError(f"not JSON: {exc}", path=source, where="$") from None
    top = read.object(raw, "$")
    log = read.object(read.member(top, "log", "$"), "$.log")
    creator_name = creator_version = ""
    creator = log.get("creator")
    if creator is not None:
        creator = read.object(creator, "$.log.creator")
        creator_name = read.optional_string(creator, "name", "$.log.creator")
        creator_version = read.optional_string(creator, "version", "$.log.creator")
    pages = tuple(
        _page(read, item, f"$.log.pages[{index}]")
        for index, item in enumerate(read.array(log.get("pages", []), "$.log.pages"))
    )
    entries = tuple(
        _entry(read, item, f"$.log.entries[{index}]")
        for index, item in enumerate(
            read.array(read.member(log, "entries", "$.log"), "$.log.entries")
        )
    )
    return HarLog(entries, pages, creator_name, creator_version)


def _page(read: _Reader, value: Any, where: str) -> HarPage:
    page = read.object(value, where)
    identifier = read.string(read.member(page, "id", where), f"{where}.id")
    started = page.get("startedDateTime")
    return HarPage(
        id=identifier,
        title=read.optional_string(page, "title", where),
        started=None if started is None else read.date(started, f"{where}.startedDateTime"),
        recorder=_extra(read, page, where),
    )


def _extra(read: _Reader, parent: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    value = parent.get("_recorder")
    return {} if value is None else read.object(value, f"{where}._recorder")


def _entry(read: _Reader, value: Any, where: str) -> HarEntry:
    entry = read.object(value, where)
    started = entry.get("startedDateTime")
    total = entry.get("time")
    timings: dict[str, float] = {}
    raw_timings = entry.get("timings")
    if raw_timings is not None:
        for name, item in read.object(raw_timings, f"{where}.timings").items():
            if name.startswith("_") or item is None:
                continue
            number = read.number(item, f"{where}.timings.{name}")
            if number >= 0:
                timings[name] = number
    page = entry.get("pageref")
    time = None if total is None else read.number(total, f"{where}.time")
    return HarEntry(
        request=_request(read, read.member(entry, "request", where), f"{where}.request"),
        response=_response(read, read.member(entry, "response", where), f"{where}.response"),
        started=None if started is None else read.date(started, f"{where}.startedDateTime"),
        time=time if time is None or time >= 0 else None,
        timings=timings,
        page=None if page is None else read.string(page, f"{where}.pageref"),
        recorder=_extra(read, entry, where),
        where=where,
    )


def _request(read: _Reader, value: Any, where: str) -> HarRequest:
    request = read.object(value, where)
    body = None
    mime_type = ""
    post = request.get("postData")
    if post is not None:
        post = read.object(post, f"{where}.postData")
        mime_type = read.optional_string(post, "mimeType", f"{where}.postData")
        body = read.body(post, f"{where}.postData", "encoding", "_encoding")
        if body is None and post.get("params") is not None:
            body = _form(read, post["params"], f"{where}.postData.params")
    return HarRequest(
        method=read.string(read.member(request, "method", where), f"{where}.method"),
        url=read.string(read.member(request, "url", where), f"{where}.url"),
        http_version=read.optional_string(request, "httpVersion", where),
        headers=read.pairs(request.get("headers", []), f"{where}.headers"),
        body=body,
        mime_type=mime_type,
    )


def _form(read: _Reader, value: Any, where: str) -> bytes:
    """`postData.params` (a form's fields, when the producer gave no text) as the
    urlencoded body they were sent as."""
    fields = []
    for index, item in enumerate(read.array(value, where)):
        at = f"{where}[{index}]"
        param = read.object(item, at)
        name = read.string(read.member(param, "name", at), f"{at}.name")
        text = read.optional_string(param, "value", at)
        fields.append(f"{quote_plus(name)}={quote_plus(text)}")
    return "&".join(fields).encode("ascii")


def _response(read: _Reader, value: Any, where: str) -> HarResponse:
    response = read.object(value, where)
    status = read.number(read.member(response, "status", where), f"{where}.status")
    if status != int(status):
        raise read.fail(f"{where}.status", f"not a status code: {status}")
    content = read.object(read.member(response, "content", where), f"{where}.content")
    body = read.body(content, f"{where}.content", "encoding")
    if body is None:
        size = content.get("size")
        if size is not None and read.number(size, f"{where}.content.size") == 0:
            body = b""
    trailers = response.get("_trailers")
    return HarResponse(
        status=int(status),
        status_text=read.optional_string(response, "statusText", where),
        http_version=read.optional_string(response, "httpVersion", where),
        headers=read.pairs(response.get("headers", []), f"{where}.headers"),
        body=body,
        mime_type=read.optional_string(content, "mimeType", f"{where}.content"),
        trailers=() if trailers is None else read.pairs(trailers, f"{where}._trailers"),
    )


# --------------------------------------------------------------------------- writing


def time_text(moment: datetime.datetime) -> str:
    """`2026-01-02T03:04:05.006Z`: a HAR date (ISO 8601, UTC, milliseconds)."""
    utc = moment.astimezone(datetime.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def dumps(log: HarLog) -> str:
    """The HAR text of `log` (2-space indent, non-ASCII as it is, a final line break)."""
    document = {
        "log": {
            "version": VERSION,
            "creator": {"name": log.creator, "version": log.creator_version},
            "pages": [_page_json(page) for page in log.pages],
            "entries": [_entry_json(entry) for entry in log.entries],
        }
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _page_json(page: HarPage) -> dict[str, Any]:
    value: dict[str, Any] = {
        "startedDateTime": time_text(page.started or _EPOCH),
        "id": page.id,
        "title": page.title,
        "pageTimings": {},
    }
    if page.recorder:
        value["_recorder"] = dict(page.recorder)
    return value


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _pairs(pairs: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in pairs]


def _text(body: bytes) -> tuple[str, bool]:
    """A body as HAR text: its UTF-8 text, else base64 (True)."""
    try:
        return body.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(body).decode("ascii"), True


def _query(url: str) -> list[dict[str, str]]:
    query = urlsplit(url).query
    return [{"name": n, "value": v} for n, v in parse_qsl(query, keep_blank_values=True)]


def _entry_json(entry: HarEntry) -> dict[str, Any]:
    request, response = entry.request, entry.response
    request_json: dict[str, Any] = {
        "method": request.method,
        "url": request.url,
        "httpVersion": request.http_version,
        "cookies": [],
        "headers": _pairs(request.headers),
        "queryString": _query(request.url),
        "headersSize": -1,
        "bodySize": len(request.body or b""),
    }
    if request.body:
        text, binary = _text(request.body)
        post: dict[str, Any] = {"mimeType": request.mime_type, "text": text}
        if binary:
            post["encoding"] = _BASE64
        request_json["postData"] = post
    body = response.body or b""
    content: dict[str, Any] = {"size": len(body), "mimeType": response.mime_type}
    if body:
        text, binary = _text(body)
        content["text"] = text
        if binary:
            content["encoding"] = _BASE64
    location = next((v for n, v in response.headers if n.lower() == "location"), "")
    response_json: dict[str, Any] = {
        "status": response.status,
        "statusText": response.status_text,
        "httpVersion": response.http_version,
        "cookies": [],
        "headers": _pairs(response.headers),
        "content": content,
        "redirectURL": location,
        "headersSize": -1,
        "bodySize": len(body),
    }
    if response.trailers:
        response_json["_trailers"] = _pairs(response.trailers)
    timings = {"send": 0.0, "wait": 0.0, "receive": 0.0, **entry.timings}
    value: dict[str, Any] = {}
    if entry.page is not None:
        value["pageref"] = entry.page
    value.update(
        {
            "startedDateTime": time_text(entry.started or _EPOCH),
            "time": entry.time if entry.time is not None else sum(timings.values()),
            "request": request_json,
            "response": response_json,
            "cache": {},
            "timings": timings,
        }
    )
    if entry.recorder:
        value["_recorder"] = dict(entry.recorder)
    return value
