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
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import orjson

from recorder.checking import find_transcripts
from recorder.errors import RecorderError
from recorder.httpfile import load
from recorder.model import Transcript, header_bytes, header_text
from recorder.pairing import PairingRules
from recorder.rules import Rules
from recorder.serve.book import Book, Found, NotFound
from recorder.serve.match import NOT_JSON, LiveRequest
from recorder.serve.render import Renderer, pacing
from recorder.serve.steps import prepare

__all__ = ["NO_MATCH", "StandIn", "load_stand_in", "no_match_message"]

NO_MATCH = -32099
"""The JSON-RPC error code of a request no recorded request matches (server error range)."""
PACE_LIMIT = 5.0  # seconds: the longest wait between two frames with --pace

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

logger = logging.getLogger("recorder.serve")


def no_match_message(live: LiveRequest, found: NotFound) -> str:
    """`no recorded exchange matches POST /a2a/jsonrpc GetTask; closest: FILE:LINE (title):
    $.params.id: ...`."""
    what = f"{live.method} {live.target}"
    if live.rpc_method:
        what += f" {live.rpc_method}"
    message = f"no recorded exchange matches {what}"
    if found.closest is not None:
        step = found.closest
        message += f"; closest: {step.where} ({step.title or step.exchange.request.method})"
    if found.differences:
        message += ": " + "; ".join(found.differences[:5])
        if len(found.differences) > 5:
            message += f"; and {len(found.differences) - 5} more"
    return message


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
    ) -> None:
        self.pairing = PairingRules(rules)
        self.steps = prepare(transcripts, self.pairing)
        self.book = Book(self.steps, self.pairing, fresh=fresh_ids)
        self.pace = pace
        self.during_wait = during_wait
        self.matched = 0
        self.unmatched = 0
        self.problems: list[str] = []
        """The no-match messages so far (the first 100)."""
        self.transcripts = len(transcripts)
        self.exchanges = sum(len(steps) for steps in self.steps)
        self._arrived: dict[tuple[int, int, int], asyncio.Event] = {}
        self._closing: asyncio.Event | None = None

    def stop_streams(self) -> None:
        """End every reply held for `@during` now (the server is shutting down). Called on
        the server's event loop."""
        self._closing_event().set()

    def _closing_event(self) -> asyncio.Event:
        if self._closing is None:
            self._closing = asyncio.Event()
        return self._closing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        live = await _read(scope, receive)
        found = self.book.find(live)
        if isinstance(found, NotFound):
            await self._no_match(live, found, send)
            return
        self.matched += 1
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
        key = (found.conversation.number, found.step.file, found.step.index)
        self._arrival(key).set()
        host = next((value for name, value in live.headers if name.lower() == "host"), None)
        renderer = Renderer(self.pairing, found.step, found.branch, found.rpc_id, host)
        await self._reply(found, renderer, send)

    def _arrival(self, key: tuple[int, int, int]) -> asyncio.Event:
        event = self._arrived.get(key)
        if event is None:
            event = self._arrived[key] = asyncio.Event()
        return event

    async def _wait_for_later(self, found: Found, frames: int) -> bool:
        """Hold the reply where the recording shows later requests arrived during it; False
        when the server is shutting down (the reply ends there)."""
        closing = self._closing_event()
        for later in found.step.waited.get(frames, ()):
            if closing.is_set():
                return False
            key = (found.conversation.number, found.step.file, later)
            arrived = asyncio.ensure_future(self._arrival(key).wait())
            stopped = asyncio.ensure_future(closing.wait())
            done, pending = await asyncio.wait(
                {arrived, stopped}, timeout=self.during_wait, return_when=asyncio.FIRST_COMPLETED
            )
            for task in pending:
                task.cancel()
            if stopped in done:
                return False
            if not done:
                logger.warning(
                    "%s: the request recorded during this reply did not come within %g s; "
                    "the reply goes on",
                    found.step.where,
                    self.during_wait,
                )
        return True

    async def _reply(self, found: Found, renderer: Renderer, send: Send) -> None:
        step = found.step
        response = step.exchange.response
        if not await self._wait_for_later(found, 0):
            return
        headers = renderer.headers()
        if response.events is None:
            body = renderer.body()
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status,
                    "headers": _raw([*headers, ("content-length", str(len(body)))]),
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await send(
            {"type": "http.response.start", "status": response.status, "headers": _raw(headers)}
        )
        waits = pacing(step, self.pairing, limit=PACE_LIMIT) if self.pace else None
        sent = 0
        for number, event in enumerate(response.events):
            if waits is not None and waits[number] > 0:
                await asyncio.sleep(waits[number])
            await send(
                {"type": "http.response.body", "body": renderer.frame(number), "more_body": True}
            )
            if event.data is not None:
                sent += 1
                if not await self._wait_for_later(found, sent):
                    break
        await send({"type": "http.response.body", "body": b""})

    async def _no_match(self, live: LiveRequest, found: NotFound, send: Send) -> None:
        self.unmatched += 1
        message = no_match_message(live, found)
        logger.warning("%s", message)
        if len(self.problems) < 100:
            self.problems.append(message)
        detail: dict[str, Any] = {"differences": found.differences}
        if found.closest is not None:
            detail["closest"] = {"exchange": found.closest.where, "title": found.closest.title}
        rpc = isinstance(live.json, dict) and "jsonrpc" in live.json
        if not rpc and live.json is NOT_JSON and found.closest is not None:
            rpc = isinstance(found.closest.json, dict) and "jsonrpc" in found.closest.json
        if rpc:
            status = 200
            body = orjson.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": live.rpc_id,
                    "error": {"code": NO_MATCH, "message": message, "data": detail},
                }
            )
        else:
            status = 404
            body = orjson.dumps({"error": message, **detail})
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
