"""One request while the proxy handles it (`Call`), and the ASGI plumbing its rooms share:
reading a request body, the proxy's own JSON replies (errors name the upstream), and the
words for an upstream's failure."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Hashable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from recorder.format.model import Request
from recorder.record.store.filetext import CallOf
from recorder.secrets.redact import Redactor

log = logging.getLogger("recorder.record.proxy")  # (the proxy's log, as its package's)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class CallRequest:
    """The request as the proxy took it from the client: what it forwards and records. Made
    once by the room that reads it (the forwarding room, the push receiver, a downstream
    listener, the gRPC listener); a room that forwards other headers (a card asked whole) or
    learns the body later (a gRPC message) puts a new one in its `Call`, never edits it."""

    method: str
    target: str
    headers: tuple[tuple[bytes, bytes], ...]  # as forwarded (lowercase names)
    body: bytes
    # the proxy's own request headers (not forwarded): Recorder-Scenario, Recorder-Title, Host
    scenario_header: bytes | None = None
    title_header: bytes | None = None
    client_host: bytes | None = None
    if_none_match: bytes | None = None


@dataclass(frozen=True, slots=True)
class Routing:
    """Where a call's exchange goes, decided once when it arrives: by `Recording.begin` for
    a client's request (its scenario's file, else by id lineage, else a new one), by the push
    receiver for a delivery (its config's file), by `Downstreams` for the agent's own call
    (the exchange it is attributed to, and its file; a new `Routing` when that changes)."""

    ticket: int  # its place in the store (request order); 0: no file (relayed, not recorded)
    # the file it goes to (`TranscriptStore.file_key`)
    file_key: Hashable | None
    # the values its request carries (the client's own: what its reply echoes has no home
    # of its own, `record.lineage`)
    client_values: frozenset[str] = frozenset()
    # (ticket, frames): arrived while that exchange of the same file was open, after that many
    # of its data frames had arrived
    during: tuple[int, int] | None = None
    # the ticket of the card fetch without a scenario begun right before this request, when
    # the request before it without a scenario was one (0: not; `recorder.record.proxy.folding`)
    follows_card: int = 0
    # a push delivery: the ticket of the exchange that registered its config (`@push config`)
    push_of: int | None = None
    # a call the agent made to a downstream: where it goes (`@call NAME exchange N`), once
    # known (None: not yet, or not recorded; `recorder.record.proxy.downstream`)
    call_of: CallOf | None = None


@dataclass(frozen=True, slots=True)
class Recorded:
    """A call's request as recorded and what goes with it, made once by whoever builds its
    exchange (`recorder.record.proxy.building`, the push receiver, a downstream's builder,
    the gRPC record)."""

    title: str  # the exchange's title
    operation: str  # its operation (the file name of a first exchange)
    # the request model (None: the exchange was written straight from its bytes,
    # `recorder.record.proxy.direct`)
    request: Request | None = None
    sent_secrets: Mapping[str, str] = field(default_factory=dict)  # those in the request


@dataclass(slots=True)
class ReplyBook:
    """The bookkeeping of a call's reply while the proxy relays it (the one mutable part of a
    `Call` the recording writes as the reply goes on)."""

    # when its request was begun (`time.monotonic`), and the seconds until its reply was
    # handed on (the recording writer's line)
    started: float = 0.0
    took: float = 0.0
    queued: bool = False  # handed to the recording writer (`Recording.submit` / `write`)
    # the files whose state its file's replies read so far (`Lineage.needs`: `# @after`)
    after: frozenset[Hashable] = frozenset()
    # a buffered reply's body as orjson read it while its values were learned (`settle`),
    # read by the writer rather than parsed again (None: not read so)
    parsed: Any = None


@dataclass
class Call:
    """What the proxy knows about one request while it handles it: the request as taken
    (`request`) and where its exchange goes (`routing`); the scenario room names its scenario
    and description, the card room its operation, the recording room its redactor."""

    request: CallRequest
    scenario: str | None = None
    description: str | None = None
    routing: Routing = field(init=False)  # (set when it arrives: `Routing`)
    redactor: Redactor = field(init=False)
    operation: str = ""
    client_base: str = ""
    # the request as recorded, with its title and operation, made while the upstream answers
    recorded: Recorded | None = None
    reply: ReplyBook = field(default_factory=ReplyBook)
    # the body sent upstream when it is not `body` (a push config's url pointed at the
    # proxy's receiver, `recorder.record.proxy.push`); `body` is what is recorded
    upstream_body: bytes | None = None
    # the agent's connection (`host:port`), for a call it made to a downstream
    connection: str = ""

    @property
    def shown(self) -> str:
        """`METHOD target` for logs and error messages, secret query values replaced."""
        request = self.request
        return f"{request.method} {self.redactor.redact_target(request.target)}"


class BodyTooLarge(Exception):
    """A request body longer than the proxy holds."""


class BodyTimedOut(Exception):
    """A request body that did not come whole in the time the proxy waits for it."""


async def read_body(receive: Receive, limit: int, timeout: float | None = None) -> bytes | None:
    """The whole request body, or None when the client disconnects first. Raises
    `BodyTooLarge` as soon as more than `limit` bytes came, and `BodyTimedOut` when it has not
    come whole within `timeout` seconds (None: no bound)."""
    parts: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                part = message.get("body", b"")
                size += len(part)
                if size > limit:
                    raise BodyTooLarge
                parts.append(part)
                if not message.get("more_body", False):
                    return b"".join(parts) if len(parts) != 1 else parts[0]
    except TimeoutError:
        raise BodyTimedOut from None


_ERROR_STATUS = {
    400: "INVALID_ARGUMENT",
    405: "METHOD_NOT_ALLOWED",
    408: "REQUEST_TIMEOUT",
    413: "CONTENT_TOO_LARGE",
    500: "INTERNAL",
    502: "BAD_GATEWAY",
    504: "GATEWAY_TIMEOUT",
}


async def send_error(
    send: Send, status: int, message: str, upstream: str, *, close: bool = False
) -> None:
    """The proxy's own error reply: a JSON body naming the upstream; `close`: the connection
    closes after it (the client's request was not read to its end)."""
    error = {
        "code": status,
        "status": _ERROR_STATUS[status],
        "message": message,
        "upstream": upstream,
    }
    await send_json(send, status, {"error": error}, close=close)


async def send_json(send: Send, status: int, value: Any, *, close: bool = False) -> None:
    body = json.dumps(value, ensure_ascii=False).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def describe_http_error(exc: BaseException) -> str:
    """An upstream failure in words, for logs and the 502/504 reply."""
    kind = type(exc).__name__
    text = str(exc)
    if isinstance(exc, httpx.ConnectError):
        return f"connection refused or failed ({text or kind})"
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        return f"the connection was reset or broken ({text or kind})"
    return f"{kind}: {text}" if text else kind


async def answer_own_failure(
    handle: Callable[[Scope, Receive, Send], Awaitable[None]],
    scope: Scope,
    receive: Receive,
    send: Send,
    upstream: str,
) -> None:
    """`handle` the request; a failure of the recorder's own is logged and answered 500 if
    no reply has started yet, else raised (the server closes the connection: the client
    sees an incomplete reply, never one the recorder changed)."""
    started = False

    async def tracking_send(message: Message) -> None:
        nonlocal started
        if message["type"] == "http.response.start":
            started = True
        await send(message)

    try:
        await handle(scope, receive, tracking_send)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if started:
            raise
        log.exception("recorder: cannot handle %s %s", scope.get("method"), scope.get("path"))
        await send_error(send, 500, f"recorder failed: {exc}", upstream)
