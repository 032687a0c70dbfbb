"""The recording writer (`Recording`'s): one thread per proxy, started by the first exchange,
that builds each queued exchange (`recorder.record.proxy.building`) and writes it through the
store, one at a time in the order they were queued, off the reply path; and the counts of
what was recorded, kept, and failed (`GET /_recorder/status`, the summary of
`recorder record`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from recorder.bindings.jsonrpc import error_code as jsonrpc_error_code
from recorder.format.model import Exchange
from recorder.record.lines import outcome, record_line
from recorder.record.proxy.agent_cards import CARD_OPERATIONS
from recorder.record.proxy.building import Builder
from recorder.record.proxy.call import Call
from recorder.record.proxy.folding import CardFolds
from recorder.record.store.filetext import Block
from recorder.record.store.transcript_store import TranscriptStore, describe_error
from recorder.record.transport.upstream import UpstreamReply

__all__ = ["BufferedReply", "EndedStream", "Job", "Writer"]

log = logging.getLogger(__name__)

# exchanges answered and not yet written past which a new request waits for the writer
# (`catch_up`): what a crash of the recorder can cost (the window between a reply and its
# write) stays about this, plus the requests in flight
BACKLOG = 16
# seconds a request waits for the writer at most (a stalled disk does not stall the proxy)
CATCH_UP = 0.5


@dataclass(frozen=True, slots=True)
class BufferedReply:
    """A buffered reply, its exchange built on the writer thread (`Builder.built`): the
    upstream's reply, the headers the client got (`kept`) and the body."""

    call: Call
    upstream: UpstreamReply
    kept: list[tuple[bytes, bytes]]
    body: bytes

    def outcome(self, built: Exchange | Block) -> str:
        """The reply's status, for its line (`recorder.record.lines.outcome`)."""
        return outcome(self.upstream.status_code, error_code=jsonrpc_error_code(self.body))


@dataclass(frozen=True, slots=True)
class EndedStream:
    """A relayed reply (an event stream, a large or unsized body), its exchange built when it
    ended; or a function that builds it, called on the writer thread (a gRPC call's: built
    off the event loop, `recorder.record.grpc_proxy`; a stream's as its block, never held as
    a model too)."""

    call: Call
    exchange: Exchange | Callable[[], Exchange | Block]

    def outcome(self, built: Exchange | Block) -> str:
        """The reply's status, for its line (`recorder.record.lines.outcome`)."""
        if isinstance(built, Block):  # (a gRPC stream's, made from its spool)
            return outcome(built.status, frames=built.frames)
        response = built.response
        if response.events is not None:
            return outcome(response.status, frames=len(response.events))
        return outcome(response.status, error_code=jsonrpc_error_code(response.body))


Job = BufferedReply | EndedStream
"""What the writer thread is handed: one exchange to write."""


class Writer:
    """Writes queued exchanges through `store` on its own thread, and counts them."""

    def __init__(self, store: TranscriptStore, builder: Builder) -> None:
        self.store = store
        self._builder = builder
        self.recorded = 0  # exchanges written
        self.calls = 0  # the agent's calls to its downstreams written (`@call`)
        self.kept = 0  # exchanges not written: `--mode once` keeps their scenario's file
        self.failed = 0  # exchanges that could not be written (or were pending at shutdown)
        self.last_error: str | None = None
        self._pending = 0  # handed to the writer, not yet written
        self._counts = threading.Lock()
        self._idle = threading.Event()  # set while nothing is pending
        self._idle.set()
        self._closed = False  # shut down: what is still pending is not recorded
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._cards = CardFolds(store)  # card fetches folded into one file
        # requests wait on this while the writer catches up (`catch_up`), in this loop
        self._caught: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waking = False
        # told, on the writer thread, that a job's exchange is written (True) or will not be
        # (False), before the writer counts it done (`recorder.record.proxy.downstream`)
        self.on_written: Callable[[Call, bool], None] | None = None

    def hand_over(self, job: Job) -> None:
        """Queue `job` for the writer thread (started by the first job)."""
        call = job.call
        reply = call.reply
        if not reply.queued:  # (a call the agent made was timed when it ended, then held)
            reply.took = time.monotonic() - reply.started  # (its reply is with the client now)
        reply.queued = True
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

    def _record(self, job: Job) -> None:
        call = job.call
        try:
            exchange: Exchange | Block
            if isinstance(job, EndedStream):
                exchange = job.exchange() if callable(job.exchange) else job.exchange
            else:
                exchange = self._builder.built(call, job.upstream, job.kept, job.body)
            if call.scenario is None and call.operation in CARD_OPERATIONS:
                self._cards.place(call, exchange)
            recorded = call.recorded
            path = self.store.write(
                call.routing.ticket,
                exchange,
                scenario=call.scenario,
                operation=call.operation or (recorded.operation if recorded else ""),
                secrets=call.redactor.seen,
                sent_secrets=recorded.sent_secrets if recorded else {},
                during=call.routing.during,
                after=call.reply.after,
                push=call.routing.push_of,
                call=call.routing.call_of,
            )
        except Exception as exc:
            self.store.forget(call.routing.ticket)
            if self.on_written is not None:
                self.on_written(call, False)
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
        if self.on_written is not None:
            # (before `_done`: the calls it hands over keep the writer from going idle)
            self.on_written(call, path is not None)
        title = exchange.title
        if path is None:  # `--mode once`: its scenario's file is kept
            self._done(error=None, kept=True)
            log.info("not recorded (--mode once keeps its scenario's file): %s", title)
            return
        self._done(error=None, call=call.routing.call_of is not None)
        if log.isEnabledFor(logging.INFO):
            log.info("%s", record_line(job.outcome(exchange), call.reply.took, title, path))

    def _done(self, error: str | None, *, kept: bool = False, call: bool = False) -> None:
        with self._counts:
            if self._closed:
                return  # counted as not recorded when the shutdown gave up waiting
            self._pending -= 1
            if kept:
                self.kept += 1
            elif error is None and call:
                self.calls += 1
            elif error is None:
                self.recorded += 1
            else:
                self.failed += 1
                self.last_error = error
            if self._pending == 0:
                self._idle.set()
            loop = self._loop
            if (
                self._caught is not None
                and loop is not None
                and not self._waking
                and self._pending <= BACKLOG // 2
            ):
                self._waking = True
                with contextlib.suppress(RuntimeError):  # (the loop closed: none waits)
                    loop.call_soon_threadsafe(self._wake)

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

    async def catch_up(self) -> None:
        """Wait (bounded, `CATCH_UP`) until the writer's backlog is down to half of
        `BACKLOG`: called before a new request is forwarded while the backlog is over it, so
        that a writer falling behind gets the processor, and a crash costs no more than the
        backlog."""
        if self._pending <= BACKLOG // 2:
            return
        caught = self._caught
        if caught is None:
            caught = self._caught = asyncio.Event()
            self._loop = asyncio.get_running_loop()
            if self._pending <= BACKLOG // 2:  # (caught up meanwhile, before it was seen)
                self._wake()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(caught.wait(), CATCH_UP)

    def _wake(self) -> None:
        # in the event loop: the requests waiting for the writer go on
        caught, self._caught = self._caught, None
        self._waking = False
        if caught is not None:
            caught.set()

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

    def count_failure(self, error: str) -> None:
        """An exchange that could not even be handed over (its reason `error`)."""
        with self._counts:
            self.failed += 1
            self.last_error = error
