"""Recording: each exchange as the upstream got and sent it, redacted, written to its file.

The request as forwarded (with `Host:` naming the upstream as the proxy addressed it), the
reply without hop-by-hop fields and Content-Length; header names in conventional case; secrets
replaced by `{{PLACEHOLDER}}`s (`recorder.secrets.redact`). An event stream is kept as its frames;
one that ended inside a frame is marked truncated and keeps its whole frames. (The exchange is
made by `recorder.record.proxy.building`, written by `recorder.record.proxy.writer`; this
room is a call's life: its file, its `@during` tag, the values it generates.)

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

Recording happens off the reply path (one writer thread per proxy, `Writer`, started by the
first exchange): the client gets the agent's reply as soon as it comes and never waits for
its recording; the exchange is then queued for the writer (`submit` for a buffered reply,
which the writer builds, secrets replaced; `write` for a relayed stream's, built when it
ends), which writes it through the store, one exchange at a time in the order they were
queued; the store puts each exchange at its place in its file by ticket (request order). What
must hold before the proxy reads another request stays on the loop and is cheap: its file
and `@during` tag (`begin`), the values it generates and its close (`settle`). Writes
are not fsynced unless `fsync=True` (`recorder record --fsync`): a rewrite's rename already
makes it atomic for readers and for a crash of the recorder
(`recorder.record.store.transcript_store`); fsync adds durability across a power loss.

A transcript that cannot be written never changes what the client gets: it is logged as an
error naming the exchange and the reason, counted (`failed`, `last_error`: the status
endpoint, and the summary and exit status of `recorder record`), and the exchange is not
recorded. `drain` (at shutdown) waits, bounded, for the writes still pending; those still
pending then are counted as not recorded.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Hashable
from typing import Protocol, cast

from recorder.format.jsonbody import json_value
from recorder.format.model import Exchange, SseEvent, is_json_media_type
from recorder.format.sse import SseDecoder
from recorder.record.lineage import Lineage
from recorder.record.naming import operation_of
from recorder.record.proxy.agent_cards import CARD_OPERATIONS
from recorder.record.proxy.building import Builder
from recorder.record.proxy.call import Call, Routing
from recorder.record.proxy.writer import BufferedReply, EndedStream, Writer
from recorder.record.store.transcript_store import (
    CONVERSATION,
    FileKey,
    TranscriptStore,
    describe_error,
)
from recorder.record.transport.upstream import UpstreamReply
from recorder.secrets.redact import Redactor

log = logging.getLogger(__name__)


def _operation(call: Call, content_type: str | None) -> str:
    """`operation_name` of `call`'s request as recorded, without building its model."""
    value = None
    if call.request.method == "POST" and call.request.body and is_json_media_type(content_type):
        value = json_value(call.request.body, exact_numbers=False)  # (its method: a string)
    return operation_of(call.request.method, call.request.target.partition("?")[0], value)


class ExchangeObserver(Protocol):
    """What the downstream listeners need to know of each exchange (`recorder.record.proxy.
    downstream.Downstreams`): begun, its reply's values and frames, closed, not recorded."""

    def opened(self, call: Call) -> None: ...
    def learned(self, call: Call, data: bytes) -> None: ...
    def framed(self, call: Call, frames: int) -> None: ...
    def closed(self, call: Call) -> None: ...
    def dropped_exchange(self, call: Call) -> None: ...


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
        self.lineage = lineage if lineage is not None else Lineage()
        self.builder = Builder(host_header, redactor)
        self.writer = Writer(store, self.builder)
        self._conversations = itertools.count(1)
        # file key -> {ticket of an open exchange: its data frames arrived so far}
        self._open: dict[Hashable, dict[int, int]] = {}
        self._last_card = 0  # the last request without a scenario, when it fetched a card
        # told of each exchange when the agent's own calls are recorded (None: they are not)
        self.observer: ExchangeObserver | None = None

    # ---------------------------------------------------------------- a call's life

    def begin(self, call: Call) -> None:
        """On arrival (its scenario chosen): the call's file (its scenario's, else by id
        lineage, else a new one), its place in the file, its redactor, and the open exchange
        of its file it arrived during, if any."""
        call.reply.started = time.monotonic()
        # the values of the request as recorded (`Request` of these parts), from its parts
        headers = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in call.request.headers]
        content_type = None
        for name, value in call.request.headers:
            if name == b"content-type":
                content_type = value.decode("latin-1")
                break
        lineage = self.lineage
        values = lineage.values_of(call.request.target, headers, call.request.body, content_type)
        store = self.store
        follows_card = 0
        if call.scenario is not None:
            ticket = store.begin(call.scenario)
        else:
            home = lineage.home_of(values)
            if home is None:
                home = (CONVERSATION, next(self._conversations))
                operation = call.operation or _operation(call, content_type)
            else:
                operation = ""  # (the file has its name)
            ticket = store.begin(into=cast(FileKey, home), operation=operation)
            # (the card fetches of a client run, one after another: one file, `folding`)
            follows_card = self._last_card
            self._last_card = ticket if call.operation in CARD_OPERATIONS else 0
        key = store.file_key(ticket)
        lineage.note_request(values, key)
        call.redactor = self._redactor.fresh()
        opened = self._open.setdefault(key, {})
        during = None
        if opened:
            latest = max(opened)
            during = (latest, opened[latest])
        opened[ticket] = 0
        call.routing = Routing(ticket, key, values, during, follows_card)
        if self.observer is not None:
            self.observer.opened(call)

    def frames_arrived(self, call: Call, frames: int) -> None:
        """`frames` data frames of `call`'s stream have arrived (for `@during` tags)."""
        opened = self._open.get(call.routing.file_key)
        if opened is not None and call.routing.ticket in opened:
            opened[call.routing.ticket] = frames
        if self.observer is not None:
            self.observer.framed(call, frames)

    def close(self, call: Call) -> None:
        """`call`'s reply is whole (or will not be): later requests are not `@during` it."""
        opened = self._open.get(call.routing.file_key)
        if opened is not None:
            opened.pop(call.routing.ticket, None)
            if not opened:
                del self._open[call.routing.file_key]
        if self.observer is not None:
            self.observer.closed(call)

    def settle(self, call: Call, body: bytes) -> None:
        """`call`'s reply `body` is whole and its end was just written (or the client went
        away): its values learned, the exchange closed. Called in the same step of the event
        loop as that write (a server writes as `send` asks, and returns without giving the
        loop a turn), so no request can be read in between: a follow-up by an id the reply
        carries finds its file and is not `@during` it, and the client did not wait for
        either (a 1 MiB JSON reply takes ~0.4 ms to learn)."""
        call.reply.parsed = self.lineage.learn_body(
            body, call.routing.file_key, call.routing.client_values
        )
        call.reply.after = self.lineage.needs(call.routing.file_key)
        if self.observer is not None:
            self.observer.learned(call, body)
        self.close(call)

    def learn_frame(self, call: Call, event: SseEvent) -> None:
        """The values one stream frame generated get `call`'s file as their home."""
        if event.data:
            data = event.data.encode("utf-8")
            self.lineage.learn_body(data, call.routing.file_key, call.routing.client_values)
            call.reply.after = self.lineage.needs(call.routing.file_key)
            if self.observer is not None:
                self.observer.learned(call, data)

    def finish(self, call: Call) -> None:
        """The proxy is done with `call`: let go of a request whose exchange will not be
        recorded (an upstream error)."""
        self.close(call)
        if not call.reply.queued:
            self.store.forget(call.routing.ticket)
            if self.observer is not None:
                self.observer.dropped_exchange(call)

    # ---------------------------------------------------------------- the writer

    def submit(
        self, call: Call, upstream: UpstreamReply, kept: list[tuple[bytes, bytes]], body: bytes
    ) -> None:
        """Record a buffered reply off the reply path (called once the client has it)."""
        self.writer.hand_over(BufferedReply(call, upstream, kept, body))

    def write(self, call: Call, exchange: Exchange | Callable[[], Exchange]) -> None:
        """Record `exchange` (a relayed stream's; or a function that makes it, called on the
        writer thread) off the reply path. Never raises: a write that fails (or an exchange
        that cannot be made) is logged and counted."""
        self.writer.hand_over(EndedStream(call, exchange))

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
            exchange = self.builder.exchange(
                call, upstream, kept, body=body, decoder=decoder, truncated=True
            )
        except Exception as exc:
            log.exception("%s during %s: could not record it", why, call.shown)
            self.writer.count_failure(describe_error(exc))
            return
        self.write(call, exchange)
        log.warning("%s during %s: exchange kept as truncated", why, call.shown)
