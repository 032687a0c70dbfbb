"""Transcripts as one HAR 1.2 file (`recorder export --to har`), for the tools that read HAR:
browser devtools, mitmproxy, Charles, Postman, Playwright's `routeFromHAR`.

Pure: transcripts in, text out. Rules:

1. One page per transcript (its id and title the file's name), its exchanges as entries in
   file order, each with its `pageref`.
2. URL: `base_url` + the recorded target, else `http://` + the recorded `Host` header (as
   `recorder export --to curl`). Headers as recorded (`Host` too: the request as it went);
   no `Content-Length` (a transcript keeps none), `bodySize` the body's length.
3. Bodies as the transcript holds them: a JSON body pretty-printed, an event stream as its
   frames (`text/event-stream` content, LF line endings), bytes that are no UTF-8 text in
   base64 (`"encoding": "base64"`, on `postData` too).
4. Placeholders stay placeholders: `Authorization: Bearer {{A2A_TOKEN}}` is what the HAR
   holds, never a secret filled in. Text recorded as a literal `{{NAME}}` (escaped in the
   transcript) is written as it was sent; a JSON body keeps its `\\u007b{` (the same string).
5. A gRPC call is the HTTP/2 POST it travels in (`recorder.bindings.grpc_http`): path
   `/lf.a2a.v1.A2AService/<Method>`, `application/grpc` bodies of length-prefixed protobuf
   messages in base64, the status and trailing metadata in the reply's `_trailers` (HAR has
   no place for trailers). Its host is `grpc_host` (`--grpc-agent`), else the recorded
   one, else the HTTP exchanges' `Host`, else `localhost`. Without the SDK's messages (the
   grpc extra) a call cannot be encoded: `ExportError` names the extra.
6. Times: a transcript keeps no clock. An entry starts at its reply's recorded `Date` when
   it has one and that is not before the entry before it, else 1 ms after that one (the
   first: 1970-01-01); `time` and the timings are 0. The order is the transcripts'.
7. What HAR has no place for goes in `_recorder` objects (HAR 1.2 allows members of one's
   own that start with `_`): an entry's file, number, title, comments (its tags, such as
   `@during exchange N frame K`, among them), `truncated`, `push` (`@push config N`) and
   `placeholders` (the names that are placeholders, not literals); a page's comments (its
   `@after` tags). `recorder import` reads them back, so transcripts -> HAR -> transcripts
   gives the same exchanges in the same files.
"""

from __future__ import annotations

import datetime
import email.utils
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from recorder.bindings import grpc_http
from recorder.docs.export import ExportError, request_url
from recorder.docs.grpcexport import grpc_host_of
from recorder.errors import RecorderError
from recorder.format.har import HarEntry, HarLog, HarPage, HarRequest, HarResponse, dumps
from recorder.format.literals import PLACEHOLDER, as_sent
from recorder.format.model import Exchange, Transcript

__all__ = ["HarFile", "export_har"]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_STEP = datetime.timedelta(milliseconds=1)


@dataclass(frozen=True)
class HarFile:
    """A transcript to export: its name (relative to the folder exported), its content, and
    the numbers (from 1) of the exchanges chosen (empty: all)."""

    name: str
    transcript: Transcript
    numbers: tuple[int, ...] = ()


def export_har(
    files: Sequence[HarFile],
    *,
    base_url: str | None = None,
    grpc_host: str | None = None,
    version: str = "",
) -> str:
    """The HAR text of `files` (rules in the module docstring). ExportError when an exchange
    cannot be written (no Host and no `base_url`; a gRPC call without the SDK's messages)."""
    everything = [e for f in files for e in f.transcript.exchanges]
    host = grpc_host_of(everything, grpc_host) or _http_host(everything) or "localhost"
    pages: list[HarPage] = []
    entries: list[HarEntry] = []
    clock = _EPOCH - _STEP
    for file in files:
        numbers = file.numbers or tuple(range(1, len(file.transcript.exchanges) + 1))
        first: datetime.datetime | None = None
        for number in numbers:
            exchange = file.transcript.exchanges[number - 1]
            clock = _start(exchange, clock)
            first = first or clock
            entries.append(_entry(file.name, number, exchange, clock, base_url, host))
        extra: dict[str, Any] = {"file": file.name}
        if file.transcript.comments:
            extra["comments"] = list(file.transcript.comments)
        pages.append(HarPage(id=file.name, title=file.name, started=first, recorder=extra))
    return dumps(HarLog(tuple(entries), tuple(pages), "recorder", version))


def _http_host(exchanges: Sequence[Exchange]) -> str | None:
    for exchange in exchanges:
        if not exchange.request.is_grpc:
            host = exchange.request.headers.get("Host")
            if host:
                return host
    return None


def _start(exchange: Exchange, previous: datetime.datetime) -> datetime.datetime:
    """Rule 6: the reply's Date, when it is not before the entry before; else 1 ms later."""
    date = exchange.response.headers.get("Date")
    if date:
        try:
            found = email.utils.parsedate_to_datetime(date)
        except (TypeError, ValueError, IndexError):
            found = None
        if found is not None and found.tzinfo is not None and found > previous:
            return found
    return previous + _STEP


def _placeholders(exchange: Exchange) -> list[str]:
    """The placeholder names in the exchange's text as the transcript holds it (a JSON
    literal is escaped there: `\\u007b{`, no match)."""
    request, response = exchange.request, exchange.response
    texts = [request.target, *(v for _, v in request.headers), *(v for _, v in response.headers)]
    texts += [v for _, v in response.trailers]
    for body in (request.body, response.body):
        texts.append(body.decode("utf-8", "replace"))
    names = (match.group(1) for text in texts for match in PLACEHOLDER.finditer(text))
    return sorted(set(names))


def _entry(
    file: str,
    number: int,
    exchange: Exchange,
    started: datetime.datetime,
    base_url: str | None,
    grpc_host: str,
) -> HarEntry:
    extra: dict[str, Any] = {"file": file, "exchange": number, "title": exchange.title}
    if exchange.comments:
        extra["comments"] = list(exchange.comments)
    if exchange.truncated:
        extra["truncated"] = True
    if exchange.push_config is not None:
        extra["push"] = exchange.push_config
    names = _placeholders(exchange)
    if names:
        extra["placeholders"] = names
    sent = as_sent(exchange)
    if sent.request.is_grpc:
        request, response = _grpc(sent, grpc_host)
    else:
        request, response = _http(sent, base_url)
    return HarEntry(request, response, started=started, page=file, recorder=extra)


def _http(exchange: Exchange, base_url: str | None) -> tuple[HarRequest, HarResponse]:
    request, response = exchange.request, exchange.response
    har_request = HarRequest(
        method=request.method,
        url=request_url(request, base_url),
        http_version=request.http_version,
        headers=tuple(request.headers),
        body=request.body or None,
        mime_type=request.headers.get("Content-Type") or "",
    )
    har_response = HarResponse(
        status=response.status,
        status_text=response.reason,
        http_version=response.http_version,
        headers=tuple(response.headers),
        body=response.body,
        mime_type=response.headers.get("Content-Type") or "",
    )
    return har_request, har_response


def _grpc(exchange: Exchange, host: str) -> tuple[HarRequest, HarResponse]:
    try:
        call = grpc_http.call_to_http(exchange)
    except (RecorderError, ValueError) as exc:
        raise ExportError(f"{exchange.request.target}: {exc}") from None
    request = HarRequest(
        method="POST",
        url=f"http://{host}{call.path}",
        http_version="HTTP/2",
        headers=call.request_headers,
        body=call.request_body,
        mime_type=grpc_http.CONTENT_TYPE,
    )
    response = HarResponse(
        status=200,
        status_text="OK",
        http_version="HTTP/2",
        headers=call.response_headers,
        body=call.response_body,
        mime_type=grpc_http.CONTENT_TYPE,
        trailers=call.trailers,
    )
    return request, response
