"""Recording: each exchange as the upstream got and sent it, redacted, written to its file.

The request as forwarded (with `Host:` naming the upstream as the proxy addressed it), the
reply without hop-by-hop fields and Content-Length; header names in conventional case; secrets
replaced by `{{PLACEHOLDER}}`s (`recorder.redact`). An event stream is kept as its frames; one
that ended inside a frame is marked truncated and keeps its whole frames.

Which file: a scenario's (its header or the control endpoint), else the file its request's
values lead to by id lineage (`recorder.record.lineage`: a follow-up joins the file of the
exchange whose reply generated the id it carries), else a new file. The values a reply
generates are learned in the step of the event loop that writes the reply's end (`settle`;
a stream's frame by frame, `learn_frame`, in the step that writes the frame): no request is
read before that, so a follow-up always finds its file, and the client does not wait for it.

Concurrency is taken from arrival: a request that arrives while an earlier exchange of its
file is still open (its reply not yet whole: the head not yet come, or the stream still
running) is tagged `@during exchange N frame K`, N the latest such exchange and K the data
frames of N that had arrived by then (comment-only frames, keep-alive pings, do not count;
0 when N's head had not come). An exchange is closed (`close`, `settle`) in the step that
writes the end of its reply, so a client that waits for each reply never gets a tag.

Recording happens off the reply path (one writer thread per proxy, `_run`, started by the
first exchange): the client gets the agent's reply as soon as it comes and never waits for
its recording; the exchange is then queued for the writer (`submit` for a buffered reply,
which the writer builds, secrets replaced; `write` for a relayed stream's, built when it
ends), which writes it through the store, one exchange at a time in the order they were
queued; the store puts each exchange at its place in its file by ticket (request order). What
must hold before the proxy reads another request stays on the loop and is cheap: its file
and `@during` tag (`begin`), the values it generates and its close (`settle`). Writes
are not fsynced unless `fsync=True` (`recorder record --fsync`): a rewrite's rename already
makes it atomic for readers and for a crash of the recorder (`recorder.record.store`); fsync
adds durability across a power loss.

A transcript that cannot be written never changes what the client gets: it is logged as an
error naming the exchange and the reason, counted (`failed`, `last_error`: the status
endpoint, and the summary and exit status of `recorder record`), and the exchange is not
recorded. `drain` (at shutdown) waits, bounded, for the writes still pending; those still
pending then are counted as not recorded.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import queue
import threading
import time
from collections.abc import Hashable
from typing import Any, cast

from recorder.model import (
    Exchange,
    Headers,
    Request,
    Response,
    SseEvent,
    header_text,
    is_json_media_type,
)
from recorder.record.lineage import Lineage, parse_json
from recorder.record.naming import exchange_title, header_case, operation_name, operation_of
from recorder.record.proxy.call import Call
from recorder.record.proxy.direct import Direct
from recorder.record.store import CONVERSATION, FileKey, TranscriptStore, describe_error
from recorder.record.transport.upstream import UpstreamReply
from recorder.redact import Redactor
from recorder.sse import SseDecoder

log = logging.getLogger(__name__)


def _operation(call: Call, content_type: str | None) -> str:
    """`operation_name` of `call`'s request as recorded, without building its model."""
    value = None
    if call.method == "POST" and call.body and is_json_media_type(content_type):
        value = parse_json(call.body)  # (what `Request.json` holds)
    return operation_of(call.method, call.target.partition("?")[0], value)


# (call, upstream, kept, body) of a buffered reply, or (call, None, None, exchange) of a stream
_Job = tuple[Call, UpstreamReply | None, list[tuple[bytes, bytes]] | None, Any]


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
        self.recorded = 0  # exchanges written
        self.kept = 0  # exchanges not written: `--mode once` keeps their scenario's file
        self.failed = 0  # exchanges that could not be written (or were pending at shutdown)
        self.last_error: str | None = None
        self._pending = 0  # handed to the writer, not yet written
        self._counts = threading.Lock()
        self._idle = threading.Event()  # set while nothing is pending
        self._idle.set()
        self._closed = False  # shut down: what is still pending is not recorded
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._conversations = itertools.count(1)
        # file key -> {ticket of an open exchange: its data frames arrived so far}
        self._open: dict[Hashable, dict[int, int]] = {}
        self._direct = Direct(host_header, redactor)  # the writer's blocks of common exchanges

    # ---------------------------------------------------------------- a call's life

    def begin(self, call: Call) -> None:
        """On arrival (its scenario chosen): the call's file (its scenario's, else by id
        lineage, else a new one), its place in the file, its redactor, and the open exchange
        of its file it arrived during, if any."""
        # the values of the request as recorded (`Request` of these parts), from its parts
        headers = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in call.headers]
        content_type = None
        for name, value in call.headers:
            if name == b"content-type":
                content_type = value.decode("latin-1")
                break
        lineage = self.lineage
        call.client_values = values = lineage.values_of(
            call.target, headers, call.body, content_type
        )
        store = self.store
        if call.scenario is not None:
            call.ticket = store.begin(call.scenario)
        else:
            home = lineage.home_of(values)
            if home is None:
                home = (CONVERSATION, next(self._conversations))
                operation = call.operation or _operation(call, content_type)
            else:
                operation = ""  # (the file has its name)
            call.ticket = store.begin(into=cast(FileKey, home), operation=operation)
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

    def settle(self, call: Call, body: bytes) -> None:
        """`call`'s reply `body` is whole and its end was just written (or the client went
        away): its values learned, the exchange closed. Called in the same step of the event
        loop as that write (a server writes as `send` asks, and returns without giving the
        loop a turn), so no request can be read in between: a follow-up by an id the reply
        carries finds its file and is not `@during` it, and the client did not wait for
        either (a 1 MiB JSON reply takes ~0.4 ms to learn)."""
        self.lineage.learn_body(body, call.file_key, call.client_values)
        self.close(call)

    def learn_frame(self, call: Call, event: SseEvent) -> None:
        """The values one stream frame generated get `call`'s file as their home."""
        if event.data:
            self.lineage.learn_body(event.data.encode("utf-8"), call.file_key, call.client_values)

    def finish(self, call: Call) -> None:
        """The proxy is done with `call`: let go of a request whose exchange will not be
        recorded (an upstream error)."""
        self.close(call)
        if not call.queued:
            self.store.forget(call.ticket)
        call.finished = True

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
                (header_case(n.decode("latin-1")), header_text(v))
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
            + [(header_case(n.decode("latin-1")), header_text(v)) for n, v in call.headers]
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
        call.recorded_operation = operation = operation_name(request)
        # (without a description the title is the operation: not worked out twice)
        description = call.description
        call.recorded_title = exchange_title(request, description) if description else operation
        call.recorded_request = request
        return request

    # ---------------------------------------------------------------- the writer

    def submit(
        self, call: Call, upstream: UpstreamReply, kept: list[tuple[bytes, bytes]], body: bytes
    ) -> None:
        """Record a buffered reply off the reply path (called once the client has it)."""
        self._hand_over((call, upstream, kept, body))

    def write(self, call: Call, exchange: Exchange) -> None:
        """Record `exchange` (a relayed stream's) off the reply path. Never raises: a write
        that fails is logged and counted."""
        self._hand_over((call, None, None, exchange))

    def _hand_over(self, job: _Job) -> None:
        call = job[0]
        call.queued = True
        with self._counts:
            if self._closed:
                self.failed += 1
                self.last_error = "the exchange ended after the recorder shut down"
                log.error("%s ended after shutdown: not recorded", call.shown)
                return
            self._pending += 1
            self._idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="recorder-writer", daemon=True
                )
                self._thread.start()
        self._jobs.put(job)

    def _run(self) -> None:
        """The writer thread: one exchange at a time, in the order they were handed in."""
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if self._closed:  # counted as not recorded by `drain`
                continue
            self._record(job)

    def _built(
        self,
        call: Call,
        upstream: UpstreamReply,
        kept: list[tuple[bytes, bytes]],
        body: bytes,
    ) -> Exchange | str:
        """A buffered reply's exchange as recorded: its block, made straight from its bytes,
        when it is a common one (`recorder.record.proxy.direct`: the same text), else its
        model (`exchange`)."""
        redactor = call.redactor
        if call.during is None and call.recorded_request is None and not redactor.seen:
            found = self._direct.block(
                method=call.method,
                target=call.target,
                headers=call.headers,
                body=call.body,
                description=call.description,
                redactor=redactor,
                status=upstream.status_code,
                reason=upstream.reason_phrase,
                kept=kept,
                reply=body,
            )
            if found is not None:
                block, call.recorded_operation, call.recorded_title, sent = found
                if sent:
                    call.sent_secrets = sent
                return block
            redactor.seen.clear()  # (what the attempt took out: the model takes it out again)
        return self.exchange(call, upstream, kept, body=body)

    def _record(self, job: _Job) -> None:
        call, upstream, kept, payload = job
        try:
            if upstream is None:
                exchange: Exchange | str = payload
            else:
                assert kept is not None
                exchange = self._built(call, upstream, kept, payload)
            path = self.store.write(
                call.ticket,
                exchange,
                scenario=call.scenario,
                operation=call.operation or call.recorded_operation,
                secrets=call.redactor.seen,
                sent_secrets=call.sent_secrets,
                during=call.during,
            )
        except Exception as exc:
            self.store.forget(call.ticket)
            reason = describe_error(exc)
            log.error(
                "recorder could not write the transcript of %s to %s: %s; the exchange is "
                "not recorded (the client got the agent's reply)",
                call.shown,
                self.store.out,
                reason,
            )
            self._done(error=reason)
            return
        call.written = True
        title = call.recorded_title if isinstance(exchange, str) else exchange.title
        if path is None:  # `--mode once`: its scenario's file is kept
            self._done(error=None, kept=True)
            log.info("not recorded (--mode once keeps its scenario's file): %s", title)
            return
        self._done(error=None)
        log.info("recorded %s -> %s", title, path)

    def _done(self, error: str | None, *, kept: bool = False) -> None:
        with self._counts:
            if self._closed:
                return  # counted as not recorded when the shutdown gave up waiting
            self._pending -= 1
            if kept:
                self.kept += 1
            elif error is None:
                self.recorded += 1
            else:
                self.failed += 1
                self.last_error = error
            if self._pending == 0:
                self._idle.set()

    @property
    def pending(self) -> int:
        """Exchanges handed to the writer and not yet written."""
        return self._pending

    def status(self) -> dict[str, Any]:
        """What `GET /_recorder/status` reports."""
        with self._counts:
            return {
                "recorded": self.recorded,
                "failed": self.failed,
                "kept": self.kept,
                "pending": self._pending,
                "out": str(self.store.out),
                "last_error": self.last_error,
            }

    async def flush(self, timeout: float) -> bool:
        """Wait (at most `timeout` seconds) until every exchange handed over is written or
        failed; True when none is pending."""
        deadline = time.monotonic() + timeout
        while not self._idle.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            await asyncio.sleep(min(0.005, left))
        return True

    async def drain(self, timeout: float) -> None:
        """At shutdown: wait (at most `timeout` seconds) for the pending writes, then stop the
        writer; an exchange still pending then is counted as not recorded."""
        await self.flush(timeout)
        with self._counts:
            self._closed = True
            left, self._pending = self._pending, 0
            if left:
                self.failed += left
                self.last_error = f"still being written {timeout:g} s after shutdown began"
            self._idle.set()
        if left:
            log.error(
                "%d exchanges were still waiting to be written %g s after shutdown began: "
                "not recorded",
                left,
                timeout,
            )
        self._jobs.put(None)

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
        except Exception as exc:
            log.exception("%s during %s: could not record it", why, call.shown)
            with self._counts:
                self.failed += 1
                self.last_error = describe_error(exc)
            return
        self.write(call, exchange)
        log.warning("%s during %s: exchange kept as truncated", why, call.shown)
