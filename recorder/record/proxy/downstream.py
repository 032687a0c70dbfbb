"""The agent's own calls: a reverse proxy per downstream (`recorder record --downstream
NAME=URL@[HOST:]PORT`), each call written into the file of the A2A exchange that made it.

    client ──▶ RecordingProxy ──▶ agent ──▶ listener `model` (this room) ──▶ the model's API
                                       └──▶ listener `tools`             ──▶ an MCP server

A listener is the recording proxy's transport and rooms over again, for its downstream's URL:
the request read as `forwarding` reads one (hop-by-hop, Host and Accept-Encoding dropped), the
reply buffered or relayed (`relay`: an event stream frame by frame as it arrives, never
buffered), the downstream's failures a 502/504 to the agent. What differs is the recording
(`CallRecording`):

- Which exchange: `recorder.record.calls` (lineage, links, the one exchange open, else pending
  and then ambiguous), told of every A2A exchange by `Recording`'s observer (`Downstreams`).
  The call's file is that exchange's; its place there its arrival among the file's requests.
- When: a call is handed to the writer once its exchange is in its file (the writer tells,
  `Writer.on_written`), so a file never shows a call without the exchange its tag names; a
  call whose exchange is not recorded (the agent failed, `--mode once`) is not either.
- As what: the request as the agent sent it to the listener (`Host` the listener's address as
  the agent named it), the reply as the downstream sent it, secrets as placeholders named for
  the downstream (`Authorization: Bearer {{MODEL_TOKEN}}`, `api-key`/`x-api-key`:
  `{{MODEL_API_KEY}}`, a `key` query parameter: `{{MODEL_KEY}}`, besides the rules' own),
  titled `model: POST /v1/chat/completions` (an MCP request's JSON-RPC method after it), and
  tagged `# @call NAME exchange N [frame K]`; the file's head says where NAME went
  (`# @downstream NAME URL`).
- A call that came when no A2A exchange had been seen (an agent's start-up) is relayed, not
  recorded, and counted (`unattributed`); so is one whose exchange was not recorded
  (`dropped`). An ambiguous one is written, tagged so, logged and counted (`ambiguous`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable

import httpx

from recorder.format.jsonbody import NOT_JSON, json_value
from recorder.format.model import Exchange, Headers, Request, header_text
from recorder.format.sse import SseEvent
from recorder.record.calls import Attributor, Placed, call_text, is_session_header
from recorder.record.cards import Origin
from recorder.record.naming import header_case
from recorder.record.proxy.agent_cards import AgentCards
from recorder.record.proxy.building import Builder
from recorder.record.proxy.call import (
    Call,
    Receive,
    Recorded,
    Routing,
    Scope,
    Send,
    answer_own_failure,
)
from recorder.record.proxy.forwarding import Forwarder
from recorder.record.proxy.recording import Recording
from recorder.record.proxy.relay import StreamRelay
from recorder.record.proxy.writer import EndedStream
from recorder.record.store.filetext import CallOf
from recorder.record.store.transcript_store import TranscriptStore
from recorder.record.transport.upstream import UpstreamReply
from recorder.secrets.redact import Redactor, placeholder_name

__all__ = ["CallRecording", "DownstreamApp", "Downstreams", "parse_downstream"]

log = logging.getLogger(__name__)

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
Payload = Exchange | Callable[[], Exchange]


def parse_downstream(text: str) -> tuple[str, str, str, int]:
    """`model=https://api.example/v1@127.0.0.1:41260` -> (name, URL, host, port): mitmproxy's
    reverse-mode spelling, `NAME=URL@[HOST:]PORT` (HOST: 127.0.0.1; PORT 0: any free one).
    Raises ValueError naming what is wrong."""
    name, equals, rest = text.partition("=")
    if not equals or not name:
        raise ValueError(
            "expected NAME=URL@[HOST:]PORT, such as model=https://api.example/v1@41260, "
            f"got {text!r}"
        )
    if not name[0].isalpha() or not set(name) <= _NAME_CHARS:
        raise ValueError(
            f"a downstream's name is a letter, then letters, digits, - or _: got {name!r}"
        )
    url, at, listen = rest.rpartition("@")
    if not at or not url:
        raise ValueError(f"{name}: expected URL@[HOST:]PORT after the '=', got {rest!r}")
    parts = urllib.parse.urlsplit(url)
    if "@" in parts.netloc:
        raise ValueError(
            f"{name}: the URL holds credentials (user:password@): they are not sent; the agent "
            "sends its own Authorization header through the listener"
        )
    if parts.query or parts.fragment:
        raise ValueError(f"{name}: the URL has a query or a fragment: give its base URL only")
    Origin.parse(url)  # (an http(s) URL with a host, else ValueError)
    if listen.isdigit():
        host, port = "127.0.0.1", int(listen)
    else:
        host, colon, port_text = listen.rpartition(":")
        if not colon or not port_text.isdigit() or not host:
            raise ValueError(f"{name}: expected [HOST:]PORT after the '@', got {listen!r}")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        port = int(port_text)
    if not 0 <= port <= 65535:
        raise ValueError(f"{name}: invalid port {port} (ports are 0-65535)")
    return name, url, host, port


def downstream_redactor(base: Redactor, name: str) -> Redactor:
    """The rules' secrets, and a downstream's own API keys named for it (`MODEL_TOKEN` …)."""
    upper = placeholder_name(name)
    headers = {
        **base.headers,
        "authorization": f"{upper}_TOKEN",
        "api-key": f"{upper}_API_KEY",
        "x-api-key": f"{upper}_API_KEY",
        "x-goog-api-key": f"{upper}_API_KEY",
    }
    fields = {**base.fields, "key": f"{upper}_KEY"}
    return Redactor(headers=headers, fields=fields, url_fields=base.url_fields)


class CallBuilder(Builder):
    """A call's exchange: `Host` as the agent sent it to the listener; titled by the
    downstream."""

    def __init__(self, name: str, redactor: Redactor) -> None:
        super().__init__("", redactor)
        self._name = name

    def _request_model(self, call: Call) -> Request:
        redactor = call.redactor
        host = header_text(call.request.client_host) if call.request.client_host else ""
        request_headers = Headers(
            ([("Host", host)] if host else [])
            + [(header_case(n.decode("latin-1")), header_text(v)) for n, v in call.request.headers]
        )
        request_headers = redactor.redact_headers(request_headers)
        return Request(
            method=call.request.method,
            target=redactor.redact_target(call.request.target),
            headers=request_headers,
            body=redactor.redact_body(call.request.body, request_headers.get("Content-Type")),
        )

    def recorded(self, call: Call) -> Recorded:
        request = self._request_model(call)
        title = f"{self._name}: {request.method} {request.path}"
        value = request.json
        if isinstance(value, dict) and isinstance(value.get("method"), str):
            title += f" ({value['method']})"  # a JSON-RPC request: an MCP server's, a peer's
        call.recorded = recorded = Recorded(title, "call", request, dict(call.redactor.seen))
        return recorded


class Downstreams:
    """The calls of every downstream listener of one recording proxy: the A2A exchanges as
    the calls see them (`Recording`'s observer), where each call goes, and when it is handed
    to the writer (see the module docstring). The event loop and the writer thread both call
    it: one lock."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.store: TranscriptStore = recording.store
        self.writer = recording.writer
        self._lock = threading.Lock()
        self._attributor = Attributor()
        self._calls: dict[int, Call] = {}  # a call begun and not yet handed to the writer
        self._parked: dict[int, Payload] = {}  # a pending call's exchange, once it ended
        self._waiting: dict[int, list[tuple[Call, Payload]]] = {}  # by their exchange's ticket
        self.ambiguous = 0
        self.unattributed = 0
        self.dropped = 0
        recording.observer = self
        self.writer.on_written = self._written

    # ---------------------------------------------------------------- the A2A exchanges

    def opened(self, call: Call) -> None:
        with self._lock:
            self._attributor.opened(
                call.routing.ticket, call.routing.file_key, call.routing.client_values
            )

    def learned(self, call: Call, data: bytes) -> None:
        """A reply body or frame of an A2A exchange: the ids it generated name it too."""
        if not data or data.lstrip()[:1] not in (b"{", b"["):
            return
        value = json_value(data, exact_numbers=False)  # (its strings are what it names)
        if value is NOT_JSON:
            return
        generated = [text for text, _ in self.recording.lineage.generated(value)]
        with self._lock:
            self._attributor.learned(call.routing.ticket, generated)

    def framed(self, call: Call, frames: int) -> None:
        with self._lock:
            self._attributor.framed(call.routing.ticket, frames)

    def closed(self, call: Call) -> None:
        with self._lock:
            self._attributor.closed(call.routing.ticket)

    def dropped_exchange(self, call: Call) -> None:
        """An A2A exchange that will not be recorded (an upstream error)."""
        self._written(call, False)

    def _written(self, call: Call, written: bool) -> None:
        """(The writer thread, or the loop) a job is written, or will not be: an A2A
        exchange's calls go to the writer after it, or not at all."""
        if call.routing.call_of is not None or call.routing.push_of is not None:
            return
        with self._lock:
            placed = self._attributor.done(call.routing.ticket, written=written)
            waiting = self._waiting.pop(call.routing.ticket, [])
            for placement in placed:
                self._place(placement)
        for waiter, payload in waiting:
            if written:
                self._deliver(waiter, payload)
            else:
                self._drop(waiter, "its exchange was not recorded")

    # ---------------------------------------------------------------- a call

    def begin(self, call: Call, name: str, url: str) -> None:
        """A call's place: its exchange (by `recorder.record.calls`), its ticket in that
        exchange's file."""
        text, links = self._said(call)
        with self._lock:
            attribution = self._attributor.attribute(text, links)
            if attribution.ticket is None:
                call.routing = Routing(0, None)  # (no file: relayed, not recorded)
                return
            key = attribution.file_key
            ticket = self.store.begin(into=key if isinstance(key, tuple) else None)
            of = CallOf(name, url, attribution.ticket, attribution.frame)
            call.routing = Routing(ticket, key, call_of=of)
            self._calls[ticket] = call
            placed = self._attributor.place(ticket, attribution, links)
            for placement in placed:
                self._place(placement)

    def _said(self, call: Call) -> tuple[str, list[str]]:
        """What the call's request says (for lineage), and its links: its session headers,
        its connection to the listener."""
        headers = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in call.request.headers]
        body = call.request.body
        value = (
            json_value(body, exact_numbers=False)
            if body[:1] in (b"{", b"[") or body.lstrip()[:1] in (b"{", b"[")
            else None
        )
        value = None if value is NOT_JSON else value
        text = call_text(call.request.target, headers, value, body.decode("utf-8", "replace"))
        links = [f"session:{v}" for n, v in headers if is_session_header(n)]
        if call.connection:
            links.append(f"connection:{call.connection}")
        return text, links

    def reply_links(self, call: Call, headers: Headers | list[tuple[bytes, bytes]]) -> None:
        """The session a call's reply handed out: a link of its exchange."""
        pairs = [
            (
                n.decode("latin-1") if isinstance(n, bytes) else n,
                v if isinstance(v, str) else v.decode("latin-1"),
            )
            for n, v in headers
        ]
        links = [f"session:{v}" for n, v in pairs if is_session_header(n.lower())]
        if not links or call.routing.call_of is None:
            return
        with self._lock:
            if self._attributor.is_pending(call.routing.ticket):
                self._attributor.more_links(call.routing.ticket, links)
                return
            placed = self._attributor.link(call.routing.call_of.exchange, links)
            for placement in placed:
                self._place(placement)

    def _place(self, placement: Placed) -> None:
        """(lock held) A pending call's place is known: its file and tag set; handed on if
        it has ended meanwhile."""
        call = self._calls.get(placement.call)
        if call is None:
            return
        routing = call.routing
        if routing.call_of is None:
            return
        if placement.exchange is None:
            payload = self._parked.pop(placement.call, None)
            self._calls.pop(placement.call, None)
            if payload is not None or call.reply.queued:
                self._forget(call, "none of the exchanges open when it came was recorded")
            else:
                # (still in flight: not recorded when it ends)
                call.routing = dataclasses.replace(routing, call_of=None)
            return
        key = self._attributor.file_key(placement.exchange)
        if isinstance(key, tuple) and key != routing.file_key:
            self.store.move(routing.ticket, key)
        else:
            key = routing.file_key
        frame = placement.frames or None
        of = dataclasses.replace(
            routing.call_of, exchange=placement.exchange, frame=frame, ambiguous=placement.ambiguous
        )
        call.routing = dataclasses.replace(routing, file_key=key, call_of=of)
        if placement.ambiguous:
            self.ambiguous += 1
            log.warning(
                "%s: made while several exchanges were open, none of whose values it carries: "
                "recorded with the earliest of them, tagged ambiguous",
                call.shown,
            )
        payload = self._parked.pop(placement.call, None)
        if payload is not None:
            self._route(call, payload)

    def deliver(self, call: Call, payload: Payload) -> None:
        """A call has ended (`payload`: its exchange, or what makes it): to the writer once
        its place is known and its exchange is in its file."""
        if isinstance(payload, Exchange):
            self.reply_links(call, payload.response.headers)
        call.reply.took = time.monotonic() - call.reply.started  # (its reply is with the agent now)
        call.reply.queued = True
        if call.routing.call_of is None:
            self._calls.pop(call.routing.ticket, None)
            if call.routing.ticket:
                self._forget(call, "none of the exchanges open when it came was recorded")
            else:
                with self._lock:
                    self.unattributed += 1
                log.warning("%s: made before any A2A exchange: relayed, not recorded", call.shown)
            return
        with self._lock:
            if self._attributor.is_pending(call.routing.ticket):
                self._parked[call.routing.ticket] = payload
                return
            self._route(call, payload)

    def _route(self, call: Call, payload: Payload) -> None:
        """(lock held) A placed call that has ended: handed over, or waiting for its
        exchange."""
        assert call.routing.call_of is not None
        exchange = call.routing.call_of.exchange
        if self._attributor.is_written(exchange):
            self._calls.pop(call.routing.ticket, None)
            self._hand_over(call, payload)
        elif self._attributor.is_done(exchange):
            self._calls.pop(call.routing.ticket, None)
            self._forget(call, "its exchange was not recorded")
        else:
            self._waiting.setdefault(exchange, []).append((call, payload))

    def _deliver(self, call: Call, payload: Payload) -> None:
        self._calls.pop(call.routing.ticket, None)
        self._hand_over(call, payload)

    def _hand_over(self, call: Call, payload: Payload) -> None:
        self.writer.hand_over(EndedStream(call, payload))

    def _drop(self, call: Call, why: str) -> None:
        self._calls.pop(call.routing.ticket, None)
        self._forget(call, why)

    def _forget(self, call: Call, why: str) -> None:
        self.store.forget(call.routing.ticket)
        self.dropped += 1
        log.warning("%s: not recorded: %s", call.shown, why)

    def let_go(self, call: Call) -> None:
        """A call that will not be recorded (the downstream failed: a 502/504 to the agent)."""
        with self._lock:
            self._calls.pop(call.routing.ticket, None)
            self._parked.pop(call.routing.ticket, None)
        self.store.forget(call.routing.ticket)

    def close(self) -> None:
        """At shutdown, once the writer has drained: the calls still waiting are counted as
        not recorded."""
        with self._lock:
            left = [call for calls in self._waiting.values() for call, _ in calls]
            left += [self._calls[t] for t in self._parked if t in self._calls]
            self._waiting.clear()
            self._parked.clear()
        for call in left:
            self._forget(call, "its exchange was still not recorded when the recorder stopped")

    def status(self) -> dict[str, int]:
        """What `GET /_recorder/status` adds when the agent's calls are recorded."""
        return {
            "calls": self.writer.calls,
            "ambiguous_calls": self.ambiguous,
            "unattributed_calls": self.unattributed,
            "dropped_calls": self.dropped,
        }


class CallRecording(Recording):
    """`Recording` for one downstream's calls: the same writer and store as the A2A
    exchanges', but a call's file, tag and hand-over are `Downstreams`'."""

    def __init__(self, room: Downstreams, name: str, url: str, redactor: Redactor) -> None:
        super().__init__(room.store, redactor, host_header="", lineage=room.recording.lineage)
        self.room = room
        self.name = name
        self.url = url
        self.writer = room.writer
        self.builder = CallBuilder(name, redactor)

    def begin(self, call: Call) -> None:
        call.reply.started = time.monotonic()
        call.redactor = self._redactor.fresh()
        self.room.begin(call, self.name, self.url)

    # (a call has no `@during` tag, and gives the A2A lineage no homes)
    def frames_arrived(self, call: Call, frames: int) -> None:
        return

    def close(self, call: Call) -> None:
        return

    def settle(self, call: Call, body: bytes) -> None:
        return

    def learn_frame(self, call: Call, event: SseEvent) -> None:
        return

    def submit(
        self, call: Call, upstream: UpstreamReply, kept: list[tuple[bytes, bytes]], body: bytes
    ) -> None:
        self.room.reply_links(call, kept)
        self.room.deliver(call, lambda: self.builder.exchange(call, upstream, kept, body=body))

    def write(self, call: Call, exchange: Exchange | Callable[[], Exchange]) -> None:
        self.room.deliver(call, exchange)

    def finish(self, call: Call) -> None:
        if not call.reply.queued and call.routing.ticket:
            self.room.let_go(call)


class DownstreamApp:
    """The ASGI app of one downstream listener (served by the proxy's own HTTP/1.1 server)."""

    def __init__(
        self,
        room: Downstreams,
        name: str,
        url: str,
        *,
        redactor: Redactor,
        timeout: httpx.Timeout,
        buffer_limit: int,
        max_body: int,
        client_timeout: float,
        stream_grace: float,
    ) -> None:
        origin = Origin.parse(url)
        self.name = name
        self.url = origin.base
        self.recording = CallRecording(room, name, origin.base, downstream_redactor(redactor, name))
        self.relay = StreamRelay(self.recording, origin.base, grace=stream_grace)
        self.forwarder = Forwarder(
            origin,
            httpx.URL(origin.base),
            timeout=timeout,
            pool="per-connection",
            transport=None,
            buffer_limit=buffer_limit,
            max_body=max_body,
            client_timeout=client_timeout,
            recording=self.recording,
            relay=self.relay,
            cards=AgentCards(origin),
        )
        self.client_timeout = client_timeout

    async def aclose(self) -> None:
        await self.forwarder.aclose()

    def stop_streams(self) -> None:
        self.relay.stop_all()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await answer_own_failure(self._handle, scope, receive, send, self.url)

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        call = await self.forwarder.take(scope, receive, send)
        if call is None:
            return
        client = scope.get("client")
        if client:
            call.connection = f"{client[0]}:{client[1]}"
        self.recording.begin(call)
        try:
            await self.forwarder.forward(call, receive, send)
        finally:
            self.recording.finish(call)
