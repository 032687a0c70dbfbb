"""The kit's ASGI app: the a2a-sdk request handler and route factories, plus two small parts.

- `ExtendedCardGuard` (ASGI middleware): GetExtendedAgentCard, on both bindings, needs
  `Authorization: Bearer <token>`. Without it, or with a wrong token, the answer is HTTP 401
  with `WWW-Authenticate: Bearer realm="code-reviewer"` (RFC 6750 §3; `error="invalid_token"`
  when a wrong token was sent) and a body in the binding's error shape: a JSON-RPC error
  (code -32000, outside the A2A range -32001..-32099, since A2A defines no authentication
  error code) on `/a2a/jsonrpc`, a google.rpc.Status with status UNAUTHENTICATED on
  `/a2a/rest`. The SDK has no authentication hook of its own; the guard looks only at that
  one operation and leaves everything else to the SDK. It does not set a user, so task
  ownership (which the SDK scopes by user) is the same with and without a token.
- `BackgroundPushSender`: the SDK sends push notifications inline, before the event reaches
  the reply, so a slow webhook would delay the reply. This sender hands each notification to
  a background task (kept in order per task) and returns at once; the SDK's
  `BasePushNotificationSender` does the delivery with a short-timeout httpx client and logs
  failures without raising.
- `loopback_push_url`: the kit is a local reference agent, so it delivers to loopback
  webhooks only (127.0.0.0/8, ::1, `localhost`); a config naming any other address is kept
  (the A2A calls answer as usual) but its deliveries are refused and logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import httpx
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    PushNotificationEvent,
    PushNotificationSender,
)
from starlette.applications import Starlette
from starlette.middleware import Middleware

from recorder.kit.card import (
    AGENT_NAME,
    JSONRPC_PATH,
    REST_PATH,
    build_extended_card,
    build_public_card,
    grpc_interface,
)
from recorder.kit.executor import SLOW_REVIEW_SECONDS, CodeReviewerExecutor
from recorder.kit.grpc_server import start_grpc
from recorder.kit.model import ModelWording
from recorder.kit.wording import Wording

__all__ = [
    "DEFAULT_TOKEN",
    "BackgroundPushSender",
    "ExtendedCardGuard",
    "create_app",
    "loopback_push_url",
    "quiet_sdk_log_noise",
]

DEFAULT_TOKEN = "kit-demo-token"
PUSH_TIMEOUT_SECONDS = 2.0

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

logger = logging.getLogger(__name__)


class ExtendedCardGuard:
    """ASGI middleware: bearer-token check for GetExtendedAgentCard (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        jsonrpc_path: str = JSONRPC_PATH,
        rest_path: str = REST_PATH,
    ) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()
        self._jsonrpc_path = jsonrpc_path
        self._rest_card_suffix = f"{rest_path}/extendedAgentCard"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        # HEAD too: Starlette answers HEAD on every GET route (a 200 would tell the card is
        # there without the token)
        if method in ("GET", "HEAD") and path.endswith(self._rest_card_suffix):
            problem = self._problem(scope)
            if problem is not None:
                await _send_json(send, 401, _rest_error_body(problem), self._challenge(scope))
                return
        elif method == "POST" and path == self._jsonrpc_path:
            messages = await _read_request(receive)
            body = b"".join(m.get("body", b"") for m in messages)
            request_id = _extended_card_call_id(body)
            if request_id is not _NOT_A_CARD_CALL:
                problem = self._problem(scope)
                if problem is not None:
                    await _send_json(
                        send, 401, _jsonrpc_error_body(request_id, problem), self._challenge(scope)
                    )
                    return
            receive = _replay(messages, receive)
        await self.app(scope, receive, send)

    def _authorization(self, scope: Scope) -> bytes | None:
        for name, value in scope["headers"]:
            if name.lower() == b"authorization":
                return bytes(value)
        return None

    def _problem(self, scope: Scope) -> str | None:
        """None when the request carries the right bearer token, else what is wrong."""
        value = self._authorization(scope)
        if value is None:
            return (
                "GetExtendedAgentCard needs authentication: "
                "send the header 'Authorization: Bearer <token>'"
            )
        scheme, _, credentials = value.partition(b" ")
        given = b"Bearer " + credentials.strip() if scheme.lower() == b"bearer" else value
        if hmac.compare_digest(given, self._expected):
            return None
        return "GetExtendedAgentCard: the bearer token is not valid"

    def _challenge(self, scope: Scope) -> str:
        challenge = f'Bearer realm="{AGENT_NAME}"'
        if self._authorization(scope) is not None:
            challenge += ', error="invalid_token"'
        return challenge


_NOT_A_CARD_CALL: Any = object()


def _extended_card_call_id(body: bytes) -> Any:
    """The JSON-RPC id if the body is a GetExtendedAgentCard call, else _NOT_A_CARD_CALL.

    Bodies that are not a JSON object go on to the SDK, which reports them properly.
    """
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return _NOT_A_CARD_CALL
    if not isinstance(payload, dict) or payload.get("method") != "GetExtendedAgentCard":
        return _NOT_A_CARD_CALL
    request_id = payload.get("id")
    return request_id if isinstance(request_id, str | int) else None


async def _read_request(receive: Receive) -> list[Message]:
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            return messages


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()  # e.g. http.disconnect, which streaming responses watch for

    return replayed


def _rest_error_body(message: str) -> dict[str, Any]:
    # google.rpc.Status, the error shape of the HTTP+JSON binding (A2A §11.6)
    return {"error": {"code": 401, "status": "UNAUTHENTICATED", "message": message}}


def _jsonrpc_error_body(request_id: Any, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": message}}


async def _send_json(send: Send, status: int, body: dict[str, Any], challenge: str) -> None:
    data = json.dumps(body, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                (b"www-authenticate", challenge.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


class BackgroundPushSender(PushNotificationSender):
    """Delivers push notifications in background tasks, in order per task, never blocking."""

    def __init__(self, sender: PushNotificationSender) -> None:
        self._sender = sender
        self._last: dict[str, asyncio.Task[None]] = {}
        self._pending: set[asyncio.Task[None]] = set()

    async def send_notification(self, task_id: str, event: PushNotificationEvent) -> None:
        previous = self._last.get(task_id)
        delivery = asyncio.create_task(self._deliver(previous, task_id, event))
        self._last[task_id] = delivery
        self._pending.add(delivery)
        delivery.add_done_callback(lambda done: self._forget(task_id, done))

    async def _deliver(
        self, previous: asyncio.Task[None] | None, task_id: str, event: PushNotificationEvent
    ) -> None:
        if previous is not None:
            # asyncio.wait: whatever became of `previous`, this delivery goes on after it;
            # only a cancellation of this delivery itself (at shutdown) stops it.
            await asyncio.wait([previous])
        try:
            await self._sender.send_notification(task_id, event)
        except Exception:  # best effort, like the SDK's own sender
            logger.exception("push notification for task %s failed", task_id)

    def _forget(self, task_id: str, done: asyncio.Task[None]) -> None:
        self._pending.discard(done)
        if self._last.get(task_id) is done:
            del self._last[task_id]

    async def aclose(self) -> None:
        """Cancel the deliveries still in flight (at shutdown: a dead webhook must not hold it)."""
        pending = list(self._pending)
        for delivery in pending:
            delivery.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


def is_loopback_url(url: str) -> bool:
    """Whether `url` is an http(s) URL whose host is a loopback address or `localhost` (no
    name is looked up: any other name is refused)."""
    try:
        parts = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return False
    host = parts.host.strip("[]").lower()
    if parts.scheme not in ("http", "https") or not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def loopback_push_url(url: str) -> bool:
    """The kit's push URL check (the SDK's `push_url_validator`): loopback webhooks only,
    any other refused and logged."""
    if is_loopback_url(url):
        return True
    logger.warning(
        "push notification to %s refused: the kit delivers to loopback webhooks only "
        "(127.0.0.1, ::1, localhost)",
        url,
    )
    return False


class _DropKnownNoise(logging.Filter):
    """Drops log records that say nothing about the kit's health (pitfall R13 and kin)."""

    def __init__(self, prefix: str, contains: str = "") -> None:
        super().__init__()
        self.prefix, self.contains = prefix, contains

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (message.startswith(self.prefix) and self.contains in message)


# logger name -> filter. Each one names a single known message.
_NOISE_FILTERS: dict[str, logging.Filter] = {
    # opentelemetry-api (pulled in by the SDK, tracing not configured) logs this with a
    # traceback when the SDK's span context exits in another asyncio context after an SSE
    # stream; replies are unaffected.
    "opentelemetry.context": _DropKnownNoise("Failed to detach context"),
    # When a message names a terminal task, the SDK builds an ActiveTask, fails to start it
    # (-32004, as it should) and leaves its two idle queue-dispatch tasks to the garbage
    # collector, which asyncio reports as "Task was destroyed but it is pending!".
    "asyncio": _DropKnownNoise(
        "Task was destroyed but it is pending!", "EventQueueSource._dispatch_loop"
    ),
    # A client's malformed params (-32602) are logged with the parser's traceback.
    "a2a.server.routes.jsonrpc_dispatcher": _DropKnownNoise("Failed to parse request params"),
}


def quiet_sdk_log_noise() -> None:
    """Install the targeted filters of `_NOISE_FILTERS` (idempotent)."""
    for name, noise_filter in _NOISE_FILTERS.items():
        target = logging.getLogger(name)
        if noise_filter not in target.filters:
            target.addFilter(noise_filter)


def create_app(
    base_url: str,
    *,
    token: str = DEFAULT_TOKEN,
    slow_review_seconds: float = SLOW_REVIEW_SECONDS,
    push_timeout: float = PUSH_TIMEOUT_SECONDS,
    wording: Wording | None = None,
    model: ModelWording | None = None,
    grpc_port: int | None = None,
    grpc_host: str = "127.0.0.1",
    on_start: Callable[[str | None], None] | None = None,
    grpc_in_card: bool = True,
) -> Starlette:
    """The code-reviewer agent as a Starlette app, for an agent reachable at `base_url`.

    `base_url` is the public address written into the agent card (e.g.
    `http://localhost:41242`); `token` guards GetExtendedAgentCard; `wording` (`kit --vary`)
    words its answers anew on each reply; `model` (`kit --model`) words its review through a
    model (`recorder.kit.model`). With a `grpc_port` (0: a free one), the app's
    startup also serves the gRPC binding on grpc_host:grpc_port, on the same request handler,
    and adds its `GRPC` interface to both cards before the first request;
    `app.state.grpc_address` is then `127.0.0.1:PORT` (else None). `on_start` is called at
    the end of the startup with that address. `grpc_in_card=False` serves gRPC without
    listing it (the player's kit for transcripts recorded against the HTTP-only card).
    """
    if not token:
        raise ValueError("the kit needs a non-empty token for GetExtendedAgentCard")
    quiet_sdk_log_noise()
    public_card = build_public_card(base_url)
    extended_card = build_extended_card(base_url)
    push_store = InMemoryPushNotificationConfigStore()
    # No keep-alive: a webhook connection never outlives its delivery. No proxy from the
    # environment either: a loopback webhook is reached directly.
    push_client = httpx.AsyncClient(
        timeout=push_timeout,
        limits=httpx.Limits(max_keepalive_connections=0),
        trust_env=False,
    )
    push_sender = BackgroundPushSender(
        BasePushNotificationSender(push_client, push_store, push_url_validator=loopback_push_url)
    )
    handler = DefaultRequestHandler(
        agent_executor=CodeReviewerExecutor(
            slow_review_seconds=slow_review_seconds, wording=wording, model=model
        ),
        task_store=InMemoryTaskStore(),
        agent_card=public_card,
        push_config_store=push_store,
        push_sender=push_sender,
        extended_agent_card=extended_card,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        grpc_kit = None
        if grpc_port is not None:
            grpc_kit = await start_grpc(handler, grpc_host, grpc_port, token=token)
            # (the cards are served from these objects: changed before the first request)
            for card in (public_card, extended_card) if grpc_in_card else ():
                card.supported_interfaces.append(grpc_interface(grpc_kit.address))
        app.state.grpc_address = grpc_kit.address if grpc_kit else None
        if on_start is not None:
            on_start(app.state.grpc_address)
        try:
            yield
        finally:
            if grpc_kit is not None:
                await grpc_kit.stop()
            await handler.aclose()
            await push_sender.aclose()
            await push_client.aclose()

    routes = [
        *create_agent_card_routes(public_card),
        *create_jsonrpc_routes(handler, rpc_url=JSONRPC_PATH),
        *create_rest_routes(handler, path_prefix=REST_PATH),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(ExtendedCardGuard, token=token)],
        lifespan=lifespan,
    )
    app.state.grpc_address = None
    return app
