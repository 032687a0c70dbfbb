"""Recording: each exchange as the upstream got and sent it, redacted, written to its file.

The request as forwarded (with `Host:` naming the upstream as the proxy addressed it), the
reply without hop-by-hop fields and Content-Length; header names in conventional case; secrets
replaced by `{{PLACEHOLDER}}`s (`recorder.redact`). An event stream is kept as its frames; one
that ended inside a frame is marked truncated and keeps its whole frames.

Which file: a scenario's (its header or the control endpoint), else the file its request's
values lead to by id lineage (`recorder.record.lineage`: a follow-up joins the file of the
exchange whose reply generated the id it carries), else a new file. The values a reply
generates are learned before the client gets the reply (`learn`; a stream's frame by frame,
`learn_frame`), so a follow-up always finds its file.

Concurrency is taken from arrival: a request that arrives while an earlier exchange of its
file is still open (its reply not yet whole: the head not yet come, or the stream still
running) is tagged `@during exchange N frame K`, N the latest such exchange and K the data
frames of N that had arrived by then (comment-only frames, keep-alive pings, do not count;
0 when N's head had not come). An exchange is closed (`close`) before the client gets the
end of its reply, so a client that waits for each reply never gets a tag.

The recorded request is built while the upstream answers (`prepare`), and the file the
reply's recording will fill is taken from those the store's thread opens ahead
(`TranscriptStore.reserve`: file creation is most of a small write's cost, and a busy disk can
stall it for a millisecond); the rest of the recording (model, text, write, rename) is what a
buffered reply waits for. Writes are not fsynced unless `fsync=True` (`recorder record
--fsync`): the rename already makes them atomic for readers and for a crash of the recorder;
fsync adds durability across a power loss.

A transcript that cannot be written is logged as an error and raised as `WriteFailed`: the
forwarding room turns a buffered reply into a 500 naming the reason; the stream relay closes
the client's connection without the final chunk, so the client sees an incomplete reply
rather than a complete one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Hashable
from typing import cast

from recorder.model import Exchange, Headers, Request, Response, SseEvent
from recorder.record.lineage import Lineage
from recorder.record.proxy.call import Call
from recorder.record.store import (
    CONVERSATION,
    FileKey,
    TranscriptStore,
    describe_error,
    exchange_title,
    header_case,
    operation_name,
)
from recorder.record.upstream import UpstreamReply
from recorder.redact import Redactor
from recorder.sse import SseDecoder

log = logging.getLogger(__name__)


class WriteFailed(Exception):
    """A transcript could not be written (the reason is the message)."""


class Recording:
    """Turns calls into exchanges and writes them through the store."""

    def __init__(
        self,
        store: TranscriptStore,
        redactor: Redactor,
        host_header: str,
        lineage: Lineage | None = None,
    ) -> None:
        self.store = store
        self._redactor = redactor  # the secret names; each call gets a fresh copy
        self._host_header = host_header
        self.lineage = lineage if lineage is not None else Lineage()
        self.recorded = 0
        self._conversations = itertools.count(1)
        # file key -> {ticket of an open exchange: its data frames arrived so far}
        self._open: dict[Hashable, dict[int, int]] = {}

    # ---------------------------------------------------------------- a call's life

    def begin(self, call: Call) -> None:
        """On arrival (its scenario chosen): the call's file (its scenario's, else by id
        lineage, else a new one), its place in the file, its redactor, and the open exchange
        of its file it arrived during, if any."""
        request = Request(
            call.method,
            call.target,
            Headers([(n.decode("latin-1"), v.decode("latin-1")) for n, v in call.headers]),
            call.body,
        )
        lineage = self.lineage
        call.client_values = values = lineage.request_values(request)
        store = self.store
        if call.scenario is not None:
            call.ticket = store.begin(call.scenario)
        else:
            home = lineage.home_of(values)
            if home is None:
                home = (CONVERSATION, next(self._conversations))
            call.ticket = store.begin(
                into=cast(FileKey, home), operation=call.operation or operation_name(request)
            )
        call.file_key = key = store.file_key(call.ticket)
        call.redactor = self._redactor.fresh()
        opened = self._open.setdefault(key, {})
        if opened:
            latest = max(opened)
            call.during = (latest, opened[latest])
        opened[call.ticket] = 0

    def frames_arrived(self, call: Call, frames: int) -> None:
        """`frames` data frames of `call`'s stream have arrived (for `@during` tags)."""
        opened = self._open.get(call.file_key)
        if opened is not None and call.ticket in opened:
            opened[call.ticket] = frames

    def close(self, call: Call) -> None:
        """`call`'s reply is whole (or will not be): later requests are not `@during` it."""
        opened = self._open.get(call.file_key)
        if opened is not None:
            opened.pop(call.ticket, None)
            if not opened:
                del self._open[call.file_key]

    def learn(self, call: Call, body: bytes) -> None:
        """The values a reply body generated get `call`'s file as their home."""
        self.lineage.learn_body(body, call.file_key, call.client_values)

    def learn_frame(self, call: Call, event: SseEvent) -> None:
        """The values one stream frame generated get `call`'s file as their home."""
        if event.data:
            self.lineage.learn_body(event.data.encode("utf-8"), call.file_key, call.client_values)

    def finish(self, call: Call) -> None:
        """The proxy is done with `call`: drop what a write that did not come left behind."""
        self.close(call)
        self.store.forget(call.ticket)  # a request that was not written (upstream error)
        call.finished = True
        if call.temporary is not None:  # made for a write that did not come
            self.store.release(call.temporary)
            call.temporary = None

    def prepare(self, call: Call) -> None:
        """Record the request while the upstream works on the reply (scheduled when the
        request is forwarded), so that it adds nothing to the client's wait. A failure here
        is left to `exchange`, which records the request again and reports it."""
        if call.recorded_request is None:
            with contextlib.suppress(Exception):
                self._record_request(call)
        if not call.finished and call.temporary is None:
            # the file the reply's write will fill: opening it is a third of the write's cost
            call.temporary = self.store.reserve()

    # ---------------------------------------------------------------- the exchange

    def exchange(
        self,
        call: Call,
        upstream: UpstreamReply,
        kept: list[tuple[bytes, bytes]],
        *,
        body: bytes,
        decoder: SseDecoder | None = None,
        truncated: bool = False,
    ) -> Exchange:
        redactor = call.redactor
        request = call.recorded_request or self._record_request(call)
        response_headers = Headers(
            [
                (header_case(n.decode("latin-1")), v.decode("latin-1"))
                for n, v in kept
                if n.lower() != b"content-length"
            ]
        )
        response_headers = redactor.redact_headers(response_headers)
        # a stream that ended inside a frame is marked truncated and keeps its whole frames
        # (the player compares those), not one blob that no frame can be compared with
        whole_frames = decoder is not None and decoder.lossless
        ended_whole = decoder is not None and decoder.close()
        cut_in_frame = whole_frames and not ended_whole
        truncated = truncated or cut_in_frame
        if decoder is not None and (ended_whole or (cut_in_frame and decoder.events)):
            response = Response(
                status=upstream.status_code,
                reason=upstream.reason_phrase,
                headers=response_headers,
                events=redactor.redact_events(decoder.events),
            )
        else:
            response = Response(
                status=upstream.status_code,
                reason=upstream.reason_phrase,
                headers=response_headers,
                body=redactor.redact_body(body, response_headers.get("Content-Type")),
            )
        return Exchange(
            request=request,
            response=response,
            title=call.recorded_title,
            truncated=truncated,
        )

    def _request_model(self, call: Call) -> Request:
        """The request as recorded: as forwarded, Host naming the upstream, secrets out."""
        redactor = call.redactor
        request_headers = Headers(
            [("Host", self._host_header)]
            + [(header_case(n.decode("latin-1")), v.decode("latin-1")) for n, v in call.headers]
        )
        request_headers = redactor.redact_headers(request_headers)
        return Request(
            method=call.method,
            target=redactor.redact_target(call.target),
            headers=request_headers,
            body=redactor.redact_body(call.body, request_headers.get("Content-Type")),
        )

    def _record_request(self, call: Call) -> Request:
        """The request as recorded, with its exchange title and operation, kept in `call`."""
        request = self._request_model(call)
        if call.redactor.seen:
            call.sent_secrets = dict(call.redactor.seen)
        call.recorded_title = exchange_title(request, call.description)
        call.recorded_operation = operation_name(request)
        call.recorded_request = request
        return request

    # ---------------------------------------------------------------- the write

    def write(self, call: Call, exchange: Exchange) -> None:
        """Write `exchange` to the file of `call`'s scenario; `WriteFailed` when it cannot."""
        temporary, call.temporary = call.temporary, None  # (the store's from here on)
        try:
            path = self.store.write(
                call.ticket,
                exchange,
                scenario=call.scenario,
                operation=call.operation or call.recorded_operation,
                secrets=call.redactor.seen,
                sent_secrets=call.sent_secrets,
                during=call.during,
                temporary=temporary,
            )
        except Exception as exc:
            reason = describe_error(exc)
            log.error(
                "recorder could not write the transcript of %s to %s: %s",
                call.shown,
                self.store.out,
                reason,
            )
            raise WriteFailed(reason) from exc
        self.recorded += 1
        call.written = True
        if log.isEnabledFor(logging.INFO):
            # after the reply has gone to the client (the loop runs it when this request's
            # task next yields or ends): a log line costs a write to the terminal
            asyncio.get_running_loop().call_soon(
                log.info, "recorded %s -> %s", exchange.title, path
            )

    def write_truncated(
        self,
        call: Call,
        upstream: UpstreamReply,
        kept: list[tuple[bytes, bytes]],
        decoder: SseDecoder | None,
        chunks: list[bytes],
        why: str,
    ) -> None:
        """Record a stream cut short (`why`: by whom), logging rather than raising."""
        body = decoder.raw if decoder is not None else b"".join(chunks)
        try:
            exchange = self.exchange(
                call, upstream, kept, body=body, decoder=decoder, truncated=True
            )
            self.write(call, exchange)
            log.warning("%s during %s: exchange kept as truncated", why, call.shown)
        except Exception:
            log.exception("%s during %s: could not record it", why, call.shown)
