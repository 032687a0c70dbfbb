"""Scenario control: which transcript file a request's exchange goes to, and its description.

The header `Recorder-Scenario: <name>` (or, for clients that cannot add headers,
`POST /_recorder/scenario {"name": ...}` until `DELETE /_recorder/scenario`) names the file
a request goes to (`TranscriptStore` numbers it `NN-slug.http`); a request without a scenario
gets a file of its own. `Recorder-Title: <text>` adds a description to the exchange's title.
An empty `Recorder-Scenario` header means no scenario, whatever the control endpoint set; a
name that makes no file name is answered 400 and not forwarded. Neither header is forwarded.

`GET /_recorder/status` tells how the recording goes: `{"recorded": N, "failed": M,
"kept": J, "pending": K, "out": "...", "last_error": "..." or null}` (`failed`: exchanges that
could not be written; their clients got the agent's replies all the same; `kept`: exchanges
not written because `--mode once` keeps their scenario's file, `recorder.record.store.modes`).
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any

from recorder.format.model import header_text
from recorder.record.naming import slugify
from recorder.record.proxy.call import (
    BodyTooLarge,
    Call,
    Receive,
    Scope,
    Send,
    read_body,
    send_error,
    send_json,
)
from recorder.record.store.transcript_store import TranscriptStore

log = logging.getLogger(__name__)

CONTROL_PATH = "/_recorder/scenario"
STATUS_PATH = "/_recorder/status"
SCENARIO_HEADER = b"recorder-scenario"
TITLE_HEADER = b"recorder-title"
_MAX_CONTROL_BODY = 64 * 1024


class Scenarios:
    """The current scenario (set by the control endpoint) and each request's choice."""

    def __init__(self, store: TranscriptStore, upstream_url: str) -> None:
        self.store = store
        self.upstream_url = upstream_url
        self.current: str | None = None  # set by the control endpoint

    def choose(self, call: Call) -> None:
        """Set `call.scenario` (its header, else the current one) and `call.description`.
        Raises ValueError (the message says why) for a name that makes no file name."""
        if call.request.scenario_header is None:
            scenario = self.current
        else:
            scenario = header_text(call.request.scenario_header).strip() or None
        if call.request.title_header is not None:
            call.description = header_text(call.request.title_header).strip() or None
        if scenario is not None:
            slugify(scenario)
        call.scenario = scenario

    async def control(self, scope: Scope, receive: Receive, send: Send) -> None:
        """`POST {"name": ...}` starts a scenario, `DELETE` ends it, `GET` tells the current one."""
        try:
            body = await read_body(receive, _MAX_CONTROL_BODY)
        except BodyTooLarge:
            await self._error(send, 413, "a scenario request is a small JSON body")
            return
        if body is None:
            return
        method = scope["method"]
        if method == "GET":
            await send_json(send, 200, {"scenario": self.current})
            return
        if method == "DELETE":
            ended = self.current
            name = _json_name(body) or ended
            if name is not None:
                with contextlib.suppress(ValueError):
                    self.store.end(name)
            if name == self.current:
                self.current = None
            log.debug("scenario %s ended", name)
            await send_json(send, 200, {"ended": name})
            return
        if method != "POST":
            await self._error(send, 405, "use GET, POST or DELETE")
            return
        name = _json_name(body)
        if name is None:
            await self._error(send, 400, 'expected a JSON body such as {"name": "message-reply"}')
            return
        try:
            slug = slugify(name)
        except ValueError as exc:
            await self._error(send, 400, str(exc))
            return
        if self.current is not None and self.current != name:
            with contextlib.suppress(ValueError):
                self.store.end(self.current)
        self.current = name
        log.debug("scenario %s started", name)
        await send_json(send, 200, {"scenario": name, "slug": slug})

    async def status(
        self, scope: Scope, receive: Receive, send: Send, report: dict[str, Any]
    ) -> None:
        """`GET /_recorder/status`: `report` (`Writer.status`) as JSON."""
        try:
            body = await read_body(receive, _MAX_CONTROL_BODY)
        except BodyTooLarge:
            await self._error(send, 413, "the status takes no body")
            return
        if body is None:
            return
        if scope["method"] not in ("GET", "HEAD"):
            await self._error(send, 405, "use GET")
            return
        await send_json(send, 200, report)

    async def _error(self, send: Send, status: int, message: str) -> None:
        await send_error(send, status, message, self.upstream_url)


def _json_name(body: bytes) -> str | None:
    try:
        value = json.loads(body) if body else None
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return str(value["name"])
    return None
