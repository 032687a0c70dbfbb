"""`StandIn`: the ASGI app that plays the agent's side of transcripts.

It reads a request whole, asks the `Book` which recorded exchange answers it, and sends that
reply rendered for the conversation (`Renderer`): a body at once, a stream frame by frame
(with `pace`, spaced as the frames' timestamps say). `@during` is honoured: a reply that the
recording shows still open when a later request of its file arrived (a stream the client
canceled while subscribed) stops at that point until the request comes (at most `during_wait`
seconds), then goes on.

A request that matches nothing gets a JSON-RPC error (code `NO_MATCH`, HTTP 200) when it is a
JSON-RPC call, else a 404 with a JSON body; both name the closest recorded request and what
differs, and the same line goes to the `recorder.serve` logger. `unmatched` counts them.

With `faults` (`recorder.serve.faults`), a request may get an injected fault instead of, or
on top of, its recorded reply: a delay, an A2A error or an HTTP status (the recorded exchange
left unplayed), a stream cut after N frames (the connection closed mid-body), a malformed
frame. `served` counts each recorded exchange played, `misses` keeps the requests that matched
nothing: the closing report (`recorder.serve.report`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import httpx

from recorder.disk.transcripts import find_transcripts, load
from recorder.errors import RecorderError
from recorder.format.model import Transcript, header_bytes, header_text
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import Rules
from recorder.serve.book import Book, Found, NotFound, Tie
from recorder.serve.deliveries import Deliveries
from recorder.serve.fallback import Fallback
from recorder.serve.faults import (
    CUT,
    ERROR,
    MALFORMED,
    MALFORMED_TEXT,
    STATUS,
    Fault,
    FaultPlan,
    error_reply,
    malformed_frame,
    operation_of,
    status_reply,
)
from recorder.serve.match import LiveRequest
from recorder.serve.nomatch import NO_MATCH, error_body, is_rpc, no_match_message
from recorder.serve.replies import Renderer, pacing
from recorder.serve.report import ServeReport, serve_report
from recorder.serve.steps import needed_files, prepare

__all__ = ["NO_MATCH", "StandIn", "load_stand_in", "no_match_message"]

PACE_LIMIT = 5.0  # seconds: the longest wait between two frames with --pace

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

logger = logging.getLogger("recorder.serve")
_INCOMPLETE = "ASGI callable returned without completing response."


class _Cuts(logging.Filter):
    """uvicorn's error line for a reply its app left incomplete, dropped for the replies
    cut on purpose (a `cut_after` fault): each cut is counted before the app returns, and
    uvicorn logs at once after it returns, in the same task."""

    pending = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if self.pending and record.getMessage() == _INCOMPLETE:
            self.pending -= 1
            return False
        return True


_CUTS = _Cuts()


class StandIn:
    """The stand-in agent: an ASGI app over the given transcripts."""

    def __init__(
        self,
        transcripts: list[Transcript],
        rules: Rules,
        *,
        fresh_ids: bool = False,
        pace: bool = False,
        during_wait: float = 10.0,
        fallback: Fallback | None = None,
        faults: FaultPlan | None = None,
    ) -> None:
        self.pairing = PairingRules(rules)
        after = needed_files(transcripts)
        self.steps = prepare(transcripts, self.pairing, after)
        self.book = Book(self.steps, self.pairing, fresh=fresh_ids, after=after)
        self.deliveries = Deliveries(self.steps, self.pairing)
        """The recorded push deliveries, sent to the live client's webhooks."""
        self.pace = pace
        self.during_wait = during_wait
        self.fallback = fallback
        self.faults = faults
        """The faults to inject (`--faults`), and those injected so far."""
        if faults is not None:
            logging.getLogger("uvicorn.error").addFilter(_CUTS)
        self.served: Counter[tuple[int, int]] = Counter()
        """How often each recorded exchange (file, index) was played."""
        self.misses: list[tuple[str, str]] = []
        """The requests that matched nothing (the request, the message; the first 1,000)."""
        self.matched = 0
        self.unmatched = 0
        self.relayed = 0
        """Requests that matched nothing and were answered by the fallback agent."""
        self.holding = 0
        """Replies held for `@during` now."""
        self.problems: list[str] = []
        """The no-match messages so far (the first 100)."""
        self.ties: list[str] = []
        """The tie lines so far (the first 100)."""
        self.transcripts = len(transcripts)
        # (a call the agent made is none of the exchanges a client gets answered)
        self.exchanges = sum(1 for steps in self.steps for step in steps if not step.exchange.call)
        self._pulses: dict[int, asyncio.Event] = {}
        self._logged_ties: set[tuple[int, int, int, int]] = set()
        self._closing: asyncio.Event | None = None
        self.grpc_address: str | None = None
        """Where the gRPC binding is served (`recorder.serve.grpc_server`), once started: the
        cards' GRPC interface names it."""
        self.grpc_fallback: str | None = None
        """Where a gRPC call that matches nothing is relayed (`host:port`: the `--fallback`
        agent's GRPC interface, or the recorder's listener in front of it); None: not."""

    def report(self) -> ServeReport:
        """What it served, left unused and could not match so far (`recorder.serve.report`)."""
        return serve_report(
            self.steps,
            self.served,
            unmatched=self.misses,
            unmatched_count=self.unmatched,
            relayed=self.relayed,
            delivered=self.deliveries.delivered,
            delivery_failures=self.deliveries.failed,
            faults=self.faults.fired if self.faults is not None else (),
        )

    def stop_streams(self) -> None:
        """End every reply held for `@during` now (the server is shutting down). Called on
        the server's event loop."""
        self._closing_event().set()

    async def aclose(self) -> None:
        """Close the fallback's connections (on the serving loop, after the last request), once
        the push deliveries under way are sent."""
        await self.deliveries.aclose()
        if self.fallback is not None:
            await self.fallback.aclose()

    def _closing_event(self) -> asyncio.Event:
        if self._closing is None:
            self._closing = asyncio.Event()
        return self._closing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await self.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        live = await _read(scope, receive)
        host = next((value for name, value in live.headers if name.lower() == "host"), None)
        fault, place = await self.fault_for(live)
        if fault is not None and fault.kind in (ERROR, STATUS):
            await self._fail(live, fault, send)
            return
        found = self.take(live)
        if isinstance(found, NotFound):
            await self._no_match(live, found, send, host)
            return
        if fault is not None and self.faults is not None:
            self.faults.spoiled(place, found.step.where)
        self.deliveries.registered(found, live)
        renderer = Renderer(
            self.pairing, found.step, found.branch, found.rpc_id, host, grpc=self.grpc_address
        )
        spoiled = fault is not None and fault.kind in (CUT, MALFORMED)
        if spoiled and found.step.exchange.response.events is None:
            self.book.release(found)  # (a reply the client cannot read: its retry gets it)
        if not await self._reply(found, renderer, receive, send, fault):
            return  # (cut: the connection closes mid-reply, as a dropped one does)
        self.deliveries.answered(found, live, host)

    async def fault_for(self, live: LiveRequest) -> tuple[Fault | None, int | None]:
        """The fault `live` gets (`--faults`), counted as fired (before its delay: a client
        may leave during it), and its place among those fired (`FaultPlan.spoiled`)."""
        if self.faults is None:
            return None, None
        operation = operation_of(live.method, live.target, live.rpc_method)
        fault = self.faults.choose(operation, described(live))
        if fault is None:
            return None, None
        place = self.faults.note(fault, described(live))
        logger.info("%s: %s", described(live), fault.describe())
        if fault.delay:
            await asyncio.sleep(fault.delay)  # (the fault itself: the reply comes late)
        return fault, place

    async def _fail(self, live: LiveRequest, fault: Fault, send: Send) -> None:
        """An `error` or `status` fault's reply, in the request's binding."""
        if fault.kind == ERROR:
            rpc = is_rpc(live, NotFound(None, []))
            status, body = error_reply(fault, live.rpc_id, rpc)
        else:
            status, body = status_reply(fault)
        headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
        await send({"type": "http.response.start", "status": status, "headers": _raw(headers)})
        await send({"type": "http.response.body", "body": body})

    def take(self, live: LiveRequest) -> Found | NotFound:
        """The recorded exchange that answers `live` (counted, logged, its conversation's
        held replies woken), or what came closest (`missed` counts it). The HTTP bindings'
        and the gRPC binding's (`recorder.serve.grpc_server`) requests alike."""
        found = self.book.find(live)
        if isinstance(found, NotFound):
            return found
        self.matched += 1
        self.served[(found.step.file, found.step.index)] += 1
        if logger.isEnabledFor(logging.INFO):
            logger.info(
                "%s %s%s: %s (%s), conversation %d",
                live.method,
                live.target,
                f" {live.rpc_method}" if live.rpc_method else "",
                found.step.where,
                found.step.title,
                found.conversation.number,
            )
        for tie in self.book.ties:
            self._log_tie(tie)
        self._pulse(found.conversation.number)
        return found

    def missed(self, live: LiveRequest, found: NotFound, message: str | None = None) -> str:
        """A request that matched nothing and is not relayed: counted and logged; the
        message naming the closest recorded request (`message`, when made already)."""
        message = no_match_message(live, found) if message is None else message
        self.unmatched += 1
        logger.warning("%s", message)
        if len(self.problems) < 100:
            self.problems.append(message)
        if len(self.misses) < 1000:
            self.misses.append((described(live), message))
        return message

    async def hold(self, found: Found, frames: int) -> bool:
        """`@during`: hold the reply after `frames` frames until the later requests the
        recording shows came; False when it should end here (see `_wait_for_later`)."""
        return await self._wait_for_later(found, frames, None)

    def _log_tie(self, tie: Tie) -> None:
        """One line per pair of recorded exchanges that tied: a warning when their replies
        differ (the order of the recording chose), else for -v."""
        if tie.conversations is not None:
            # (not once per pair of exchanges: each such request chose between conversations)
            chosen, other = tie.conversations
            line = (
                f"{tie.chosen.where}: conversations {chosen} and {other} both played a file it"
                f" needs (@after) and match the request as well; conversation {chosen} answers"
                " (it played it last)"
            )
            logger.warning("%s", line)
            if len(self.ties) < 100:
                self.ties.append(line)
            return
        key = (tie.chosen.file, tie.chosen.index, tie.other.file, tie.other.index)
        if key in self._logged_ties:
            return
        self._logged_ties.add(key)
        copies = tie.copies
        also = f" (and {copies} identical cop{'y' if copies == 1 else 'ies'})" if copies else ""
        line = (
            f"{tie.chosen.where} and {tie.other.where}{also} match the request as well; "
            f"{tie.chosen.where} answers (first among equals)"
        )
        if tie.same_reply:
            logger.info("%s; their replies are alike", line)
            return
        logger.warning("%s; their replies differ", line)
        if len(self.ties) < 100:
            self.ties.append(line)

    def _pulse(self, conversation: int) -> None:
        """Wake the replies of `conversation` held for `@during`: a request was answered."""
        event = self._pulses.pop(conversation, None)
        if event is not None:
            event.set()

    def _came(self, found: Found, later: int, before: set[int]) -> str | None:
        """Why the hold for exchange `later` of `found`'s transcript is over, or None: the
        request came (it was answered, or one like it was), or it can no longer come (the
        conversation left this transcript)."""
        branch = found.branch
        if later in branch.used:
            return "came"
        if all(other is not branch for other in found.conversation.branches):
            return "gone"
        steps = self.steps[found.step.file]
        key = steps[later].key
        if any(steps[index].key == key for index in branch.used - before):
            return "came"
        return None

    async def _wait_for_later(
        self, found: Found, frames: int, disconnected: asyncio.Future[Any] | None
    ) -> bool:
        """Hold the reply where the recording shows later requests arrived during it; False
        when the reply should end here (the server is shutting down, the client left)."""
        closing = self._closing_event()
        loop = asyncio.get_running_loop()
        for later in found.step.waited.get(frames, ()):
            before = set(found.branch.used)
            deadline = loop.time() + self.during_wait
            while self._came(found, later, before) is None:
                if closing.is_set() or (disconnected is not None and disconnected.done()):
                    return False
                remaining = deadline - loop.time()
                if remaining <= 0:
                    logger.warning(
                        "%s: the request recorded during this reply did not come within %g s; "
                        "the reply goes on",
                        found.step.where,
                        self.during_wait,
                    )
                    break
                number = found.conversation.number
                pulse = self._pulses.setdefault(number, asyncio.Event())
                waits: set[asyncio.Future[Any]] = {
                    asyncio.ensure_future(pulse.wait()),
                    asyncio.ensure_future(closing.wait()),
                }
                self.holding += 1
                try:
                    await asyncio.wait(
                        {*waits, *([disconnected] if disconnected is not None else [])},
                        timeout=remaining,
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                finally:
                    self.holding -= 1
                    for task in waits:
                        task.cancel()
        return True

    async def _reply(
        self,
        found: Found,
        renderer: Renderer,
        receive: Receive,
        send: Send,
        fault: Fault | None = None,
    ) -> bool:
        """Send the reply; False when a fault cut it (the connection is to close)."""
        step = found.step
        disconnected: asyncio.Future[Any] | None = None
        if step.waited:
            # a held reply ends when its client leaves: the awaited request will not come
            disconnected = asyncio.ensure_future(_disconnect(receive))
        try:
            if not await self._wait_for_later(found, 0, disconnected):
                return True
            return await self._send_reply(found, renderer, send, disconnected, fault)
        finally:
            if disconnected is not None:
                disconnected.cancel()

    async def _send_reply(
        self,
        found: Found,
        renderer: Renderer,
        send: Send,
        disconnected: asyncio.Future[Any] | None,
        fault: Fault | None = None,
    ) -> bool:
        step = found.step
        response = step.exchange.response
        headers = renderer.headers()
        kind = fault.kind if fault is not None else None
        frames = fault.frames if fault is not None else 0
        if response.events is None:
            body = renderer.body()
            if kind == MALFORMED:
                body = MALFORMED_TEXT.encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status,
                    "headers": _raw([*headers, ("content-length", str(len(body)))]),
                }
            )
            if kind == CUT:
                half = body[: len(body) // 2]
                await send({"type": "http.response.body", "body": half, "more_body": True})
                return self._cut()
            await send({"type": "http.response.body", "body": body})
            return True
        await send(
            {"type": "http.response.start", "status": response.status, "headers": _raw(headers)}
        )
        waits = pacing(step, self.pairing, limit=PACE_LIMIT) if self.pace else None
        sent = 0
        for number, event in enumerate(response.events):
            if kind == CUT and event.data is not None and sent == frames:
                return self._cut()
            if waits is not None and waits[number] > 0:
                await asyncio.sleep(waits[number])
            frame = renderer.frame(number)
            if kind == MALFORMED and event.data is not None and sent + 1 == frames:
                frame = malformed_frame(frame)
            await send({"type": "http.response.body", "body": frame, "more_body": True})
            if event.data is not None:
                sent += 1
                if not await self._wait_for_later(found, sent, disconnected):
                    break
        if kind == CUT:
            return self._cut()  # (fewer frames than the cut's: cut at the end)
        await send({"type": "http.response.body", "body": b""})
        return True

    def _cut(self) -> bool:
        """A reply cut on purpose: the app returns with the reply not ended, and uvicorn
        closes the connection (its error line for that dropped: `_Cuts`)."""
        _CUTS.pending += 1
        return False

    async def _no_match(
        self, live: LiveRequest, found: NotFound, send: Send, host: str | None
    ) -> None:
        message = no_match_message(live, found)
        if self.fallback is not None:
            try:
                await self.fallback.relay(live, send, host, grpc=self.grpc_address)
            except httpx.HTTPError as error:
                message += f"; the fallback agent {self.fallback.url} failed: {error!r}"
            else:
                self.relayed += 1
                logger.info("%s; relayed to %s", message, self.fallback.url)
                return
        self.missed(live, found, message)
        status, body = error_body(live, found, message)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": _raw(
                    [("content-type", "application/json"), ("content-length", str(len(body)))]
                ),
            }
        )
        await send({"type": "http.response.body", "body": body})


async def _disconnect(receive: Receive) -> None:
    """Returns when the client has gone (the request's body was read before)."""
    for _ in range(1000):  # bounded: a server sends no more than a few messages after the body
        if (await receive())["type"] == "http.disconnect":
            return


async def _read(scope: Scope, receive: Receive) -> LiveRequest:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    target = scope.get("raw_path") or scope["path"].encode()
    if isinstance(target, bytes):
        target = target.decode("latin-1")
    query = scope.get("query_string", b"")
    if query:
        target += "?" + query.decode("latin-1")
    headers = [(name.decode("latin-1"), header_text(value)) for name, value in scope["headers"]]
    return LiveRequest(scope["method"], target, headers, b"".join(chunks))


def described(live: LiveRequest) -> str:
    """`POST /a2a/jsonrpc GetTask`: a live request in the report's words."""
    what = f"{live.method} {live.target}"
    return f"{what} {live.rpc_method}" if live.rpc_method else what


def _raw(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(name.lower().encode("latin-1"), header_bytes(value)) for name, value in headers]


def load_stand_in(paths: list[str], rules: Rules, **options: Any) -> StandIn:
    """A `StandIn` over every transcript under `paths` (files and folders). Raises
    RecorderError (a file that does not parse, or none at all)."""
    for raw in paths:
        if not Path(raw).exists():
            raise RecorderError(f"{raw}: no such file or folder")
    found: list[Path] = list(find_transcripts(paths))
    if not found:
        raise RecorderError(f"no .http transcripts in {', '.join(paths)}")
    transcripts = [load(path) for path in found]
    return StandIn(transcripts, rules, **options)
