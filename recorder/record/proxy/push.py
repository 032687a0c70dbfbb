"""Push notifications through the recorder: the deliveries an agent sends to a client's
webhook pass through the proxy and are recorded in the file of the config's task.

- A request that registers a push config (`recorder.bindings.push_configs.config_objects`: a
  SendMessage with `configuration.taskPushNotificationConfig`, a
  CreateTaskPushNotificationConfig, on JSON-RPC and HTTP+JSON) reaches the agent with the
  config's `url` pointed at a receiver of the proxy's own, one path per config
  (`/_recorder/push/<128 random bits>`: no part of the client's URL is in it but its
  credentials, `user:password@`, which the agent then sends
  as it would to the webhook); what is recorded is the request as the client sent it
  (`rewrite`). A gRPC call's (`recorder.record.grpc_proxy`) is pointed at the same receiver,
  on the proxy's HTTP listen address (`listening`, `point`). The receiver's address is the
  proxy's listen address, or the one `receiver` advertises (`recorder record
  --push-receiver-url`: how an agent that refuses loopback webhooks reaches the recorder).
- The recorder never delivers where the agent would not (`recorder.push_urls`): a config
  whose webhook the screen refuses (not http(s); the recorder's own listeners; a loopback
  address without `loopback`; any address that is not public; an IPv4 address spelled other
  than dotted) is not forwarded: the client gets the recorder's own A2A error, InvalidParams
  in the binding's shape (`Invalid push notification URL`, the words of an agent that screens
  with the SDK's validator, then the recorder's reason; ErrorInfo metadata `refusedBy:
  recorder`), which is logged and counted (`GET /_recorder/status`: `push_refused`), never
  written into a transcript as the agent's. A webhook named by a host name is looked up when
  a delivery goes out, every address screened, and the delivery sent to the address screened.
- The agent's echo of a receiver URL in a reply (the Create, Get and List replies) is the
  client's URL again before the client gets the reply and before it is recorded (`restore`);
  the echo tells the config's id and task.
- A receiver ends with its config: when the agent confirms a DeleteTaskPushNotificationConfig
  that names it (`deleted`), or `grace` seconds after a delivery said its task reached a final
  state. A delivery to a receiver that never was, or has ended, is refused (404, 410), logged,
  counted and not recorded.
- Each delivery the receiver gets is forwarded to the client's URL (the agent's headers,
  hop-by-hop ones, Host, Content-Length and Accept-Encoding aside), and the client's answer
  relayed to the agent; one that cannot be reached is a 502 to the agent (504 when it does
  not answer in time), like any upstream failure (`deliver`).
- The delivery is recorded as an exchange of the file of the exchange that registered its
  config, at its place in arrival order, tagged `# @push config N` (N that exchange's place
  in the file, `TranscriptStore.write`'s `push`): its request as the webhook got it (Host
  and target the client's), its reply the webhook's answer, secrets as placeholders (the
  `X-A2A-Notification-Token` header as `{{TOKEN}}`, as the config's `token`; the
  `Authorization` the config's credentials make as `{{CREDENTIALS}}`; a secret-looking path
  segment as `{{PUSH_URL_SECRET}}`, as in the config's `url`). A delivery whose token is not
  the one its config registered (none where one was, one where none was) is forwarded all
  the same (the webhook judges it), and recorded tagged `# @forged` too, its token
  `{{FORGED_TOKEN}}`: written `{{TOKEN}}`, a forgery would read as the agent's.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import httpx

from recorder.bindings import grpc as grpc_binding
from recorder.bindings import jsonrpc, rest
from recorder.bindings.push_configs import FORGED_TAG, FORGED_TOKEN, config_objects, deleted_config
from recorder.format.model import (
    Exchange,
    Headers,
    Request,
    Response,
    header_text,
    is_json_media_type,
)
from recorder.push_urls import WebhookScreen, webhook_target
from recorder.record.naming import header_case
from recorder.record.proxy.call import (
    BodyTimedOut,
    BodyTooLarge,
    Call,
    CallRequest,
    Message,
    Receive,
    Recorded,
    Routing,
    Scope,
    Send,
    describe_http_error,
    read_body,
    send_json,
)
from recorder.record.proxy.receivers import PUSH_PREFIX, Receivers
from recorder.record.proxy.recording import Recording
from recorder.record.store.transcript_store import FileKey
from recorder.secrets.redact import Redactor

__all__ = [
    "PUSH_GRACE",
    "PUSH_PREFIX",
    "PushRoom",
    "Refusal",
    "delivery_title",
    "refusal_message",
]

log = logging.getLogger(__name__)

_NOT_FORWARDED = frozenset(
    {
        b"connection",
        b"proxy-connection",
        b"keep-alive",
        b"te",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"expect",
        b"content-length",
        b"accept-encoding",
    }
)
TOKEN_HEADER = b"x-a2a-notification-token"
# the secret headers of a delivery and their placeholders: the config's token and
# credentials under the names the config's members have (`recorder.secrets.redact`'s defaults)
DELIVERY_SECRET_HEADERS = {"x-a2a-notification-token": "TOKEN", "authorization": "CREDENTIALS"}
DELIVERY_TIMEOUT = httpx.Timeout(30.0, connect=5.0)
PUSH_GRACE = 30.0
"""Seconds a receiver lives on after a delivery said its task reached a final state."""
# what the recorder's refusal of a registration says first: an SDK agent's own words
_INVALID_URL = "Invalid push notification URL"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
# the gRPC methods whose request may register a push config
# (`recorder.bindings.push_configs.config_objects`)
_GRPC_REGISTERING = frozenset(
    {"SendMessage", "SendStreamingMessage", "CreateTaskPushNotificationConfig"}
)


@dataclass(frozen=True)
class Refusal:
    """A registration the recorder refuses: why, and what the error reply needs (the
    JSON-RPC request's id; None: an HTTP+JSON request)."""

    reason: str
    rpc_id: Any = None
    jsonrpc: bool = False


def refusal_message(reason: str) -> str:
    """What a client is told of a push config the recorder refuses (any binding: the gRPC
    listener's INVALID_ARGUMENT says it too): an SDK agent's own words, then the reason."""
    return f"{_INVALID_URL}: the recorder does not deliver there: {reason}"


def delivery_title(body: Any) -> str:
    """`push: status TASK_STATE_WORKING`, `push: artifact review`: what a delivery says."""
    if not isinstance(body, dict) or not body:
        return "push notification"
    kind = next(iter(body))
    event = body[kind] if isinstance(body[kind], dict) else {}
    if kind in ("statusUpdate", "task"):
        status = event.get("status")
        state = status.get("state") if isinstance(status, dict) else None
        word = "status" if kind == "statusUpdate" else "task"
        return f"push: {word} {state}" if isinstance(state, str) else f"push: {word}"
    if kind == "artifactUpdate":
        artifact = event.get("artifact")
        name = artifact.get("name") if isinstance(artifact, dict) else None
        return f"push: artifact {name}" if isinstance(name, str) and name else "push: artifact"
    return f"push: {kind}"


class PushRoom:
    """The receiver of the proxy's push deliveries, and the url rewriting both ways.

    `screen`: where deliveries may go (`loopback` for local work); `receiver`: the origin
    (`https://host[:port]`) the agent is given for the receiver instead of the proxy's
    listen address; `grace`: seconds a receiver lives after its task's final state;
    `clock`: `time.monotonic` (tests give their own)."""

    def __init__(
        self,
        recording: Recording,
        redactor: Redactor,
        *,
        max_body: int,
        client_timeout: float | None,
        timeout: httpx.Timeout = DELIVERY_TIMEOUT,
        screen: WebhookScreen | None = None,
        receiver: str | None = None,
        grace: float = PUSH_GRACE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.recording = recording
        headers = {**redactor.headers, **DELIVERY_SECRET_HEADERS}
        self._redactor = Redactor(
            headers=headers, fields=redactor.fields, url_fields=redactor.url_fields
        )
        # (a forged delivery's token: its own placeholder, never the config's)
        self._forged_redactor = Redactor(
            headers={**headers, "x-a2a-notification-token": FORGED_TOKEN},
            fields=redactor.fields,
            url_fields=redactor.url_fields,
        )
        self._max_body = max_body
        self._client_timeout = client_timeout
        self._timeout = timeout
        self._screen = screen if screen is not None else WebhookScreen()
        self._receiver = _checked_origin(receiver) if receiver else None
        if self._receiver is not None:
            advertised = httpx.URL(self._receiver)
            port = advertised.port or (443 if advertised.scheme == "https" else 80)
            self._screen = self._screen.with_own(advertised.host, port)
        self.receivers = Receivers(grace, clock)
        self._listen: tuple[str, int] | None = None
        self._client: httpx.AsyncClient | None = None
        self.grpc_address: Callable[[], tuple[str, int] | None] | None = None
        """The gRPC listener's address, once it listens (another of the recorder's own)."""
        self.refused = 0
        """Registrations and deliveries refused (`GET /_recorder/status`: `push_refused`)."""

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # ---------------------------------------------------------------- the urls

    def listening(self, host: str, port: int) -> None:
        """The proxy's HTTP listen address: where a receiver URL points for a config
        registered other than over HTTP (a gRPC call: `point`), and one never delivered to."""
        self._listen = (host, port)
        self._screen = self._screen.with_own(host, port)

    def also_own(self, host: str, port: int) -> None:
        """Another listener of the recorder's (a downstream's, `--downstream`): never
        delivered to, as the proxy's own address is not."""
        self._screen = self._screen.with_own(host, port)

    def screen(self, url: str) -> str | None:
        """Why the recorder does not deliver to the webhook `url` (None: it may; a host
        name is screened again, by its addresses, when a delivery goes out). The check of
        every binding's registrations: the gRPC listener's too."""
        return self._current_screen().refusal(url)

    def _current_screen(self) -> WebhookScreen:
        """The screen, the gRPC listener's address among the recorder's own once it listens."""
        grpc = self.grpc_address() if self.grpc_address is not None else None
        return self._screen if grpc is None else self._screen.with_own(*grpc)

    def refusal(self, method: str, target: str, body: Any) -> str | None:
        """Why the recorder refuses a request's push configs (`screen` of each, the first
        refused), None when it registers none or none is refused."""
        for config in config_objects(method, target, body):
            reason = self.screen(str(config["url"]))
            if reason is not None:
                return reason
        return None

    def rewrite(self, call: Call, scope: Scope) -> Refusal | None:
        """When `call` registers push configs: each config's url pointed at a receiver path
        of its own, in the body sent upstream (`Call.upstream_body`); `call.request.body` (what is
        recorded) stays the client's. A config the screen refuses: nothing is pointed, and
        the `Refusal` returned (`refuse` answers it). Called once `call` has its ticket and
        file."""
        if call.request.method != "POST" or b'"url"' not in call.request.body:
            return None
        content_type = next((v for n, v in call.request.headers if n == b"content-type"), b"")
        if not is_json_media_type(content_type.decode("latin-1")):
            return None
        try:
            body = json.loads(call.request.body)
        except (ValueError, RecursionError):
            return None  # the agent says what is wrong with it
        configs = config_objects(call.request.method, call.request.target, body)
        if not configs:
            return None
        host, port = scope.get("server") or ("127.0.0.1", 0)
        if port:
            self._screen = self._screen.with_own(host, port)
        reason = self.refusal(call.request.method, call.request.target, body)
        if reason is not None:
            is_rpc = jsonrpc.is_jsonrpc(body)
            return Refusal(reason, body.get("id") if is_rpc else None, is_rpc)
        origin = self._receiver or _receiver_origin(host, port)
        for config in configs:
            self.receivers.add(
                config, ticket=call.routing.ticket, file_key=call.routing.file_key, origin=origin
            )
        call.upstream_body = json.dumps(body, ensure_ascii=False).encode()
        return None

    async def refuse(self, call: Call, send: Send, refusal: Refusal) -> None:
        """Answer a refused registration with the recorder's own A2A error (InvalidParams in
        the binding's shape), logged and counted; nothing reaches the agent or a
        transcript."""
        self.refused += 1
        log.warning(
            "%s registers a push config the recorder does not deliver to: %s; answered "
            "InvalidParams, not forwarded, not recorded",
            call.shown,
            refusal.reason,
        )
        message = refusal_message(refusal.reason)
        info = {
            "@type": _ERROR_INFO,
            "reason": "INVALID_PARAMS",
            "domain": "a2a-protocol.org",
            "metadata": {"refusedBy": "recorder"},
        }
        if refusal.jsonrpc:
            error = jsonrpc.error_response(refusal.rpc_id, jsonrpc.INVALID_PARAMS, message, [info])
            await send_json(send, 200, error)
        else:
            status = rest.HTTP_STATUS["InvalidParamsError"]
            await send_json(
                send, status, rest.error_envelope(status, "INVALID_ARGUMENT", message, [info])
            )

    def point(self, call: Call, body: Any) -> bool:
        """A call's parsed body (a gRPC call's ProtoJSON) with each push config it registers
        pointed at a receiver path of its own, on the proxy's HTTP listener (`listening`);
        whether there was one to point (False too when the listen address is unknown: the
        config then goes on as the client sent it, and its deliveries around the recorder,
        which is logged). A config the screen refuses (`refusal`, which the caller asks
        first to answer the client) is pointed at a receiver that has ended: the agent never
        gets a webhook the recorder would not deliver to. Called once `call` has its ticket
        and file."""
        configs = config_objects(call.request.method, call.request.target, body)
        if not configs:
            return False
        if self._listen is None:
            log.warning(
                "%s registers a push config, but the recorder's HTTP address is not known: "
                "its deliveries go to the webhook directly, unrecorded",
                call.shown,
            )
            return False
        origin = self._receiver or _receiver_origin(*self._listen)
        reason = self.refusal(call.request.method, call.request.target, body)
        for config in configs:
            self.receivers.add(
                config,
                ticket=call.routing.ticket,
                file_key=call.routing.file_key,
                origin=origin,
                ended=None if reason is None else f"its webhook was refused: {reason}",
            )
        return True

    def holds_receiver(self, data: bytes) -> bool:
        """Whether `data` (a reply's bytes) may hold a receiver URL (`Receivers`)."""
        return self.receivers.holds_receiver(data)

    def restore(self, body: bytes) -> bytes:
        """`body` with every receiver URL the client's URL again (`Receivers.restore`)."""
        return self.receivers.restore(body)

    def deletes(self, call: Call) -> tuple[str, str] | None:
        """(task id, config id) when `call` deletes a push config (then `deleted` is told
        once the agent has confirmed it)."""
        if not self.receivers or call.request.method not in ("POST", "DELETE"):
            return None
        body: Any = None
        if call.request.method == "POST":
            if (
                b"elete" not in call.request.body
            ):  # (DeleteTaskPushNotificationConfig, 0.3's delete)
                return None
            try:
                body = json.loads(call.request.body)
            except (ValueError, RecursionError):
                return None
        return deleted_config(call.request.method, call.request.target, body)

    def grpc_refusal(self, path: str, request: bytes) -> str | None:
        """What a gRPC client is told (the listener's INVALID_ARGUMENT, `refusal_message`)
        when its request message (its bytes) registers a push config whose webhook the
        recorder does not deliver to, the refusal logged and counted; None when it does not.
        The message is parsed, not made JSON (nothing more is read before it is forwarded)."""
        name = grpc_binding.method_of(path)
        if name not in _GRPC_REGISTERING:
            return None
        try:
            message = grpc_binding.message_type(name).FromString(request)
        except Exception:  # (the agent says what is wrong with a message)
            return None
        if name == "CreateTaskPushNotificationConfig":
            url = message.url
        else:
            url = message.configuration.task_push_notification_config.url
        reason = self.screen(url) if url else None
        if reason is None:
            return None
        self.refused += 1
        log.warning(
            "gRPC %s registers a push config the recorder does not deliver to: %s; refused "
            "INVALID_ARGUMENT, not forwarded, not recorded",
            path,
            reason,
        )
        return refusal_message(reason)

    def deleted_by(self, call: Call) -> None:
        """The agent confirmed `call` (any binding; its body JSON: a gRPC call's ProtoJSON):
        when it deletes a push config, its receivers end."""
        if not self.receivers or b"elete" not in call.request.target.encode() + call.request.body:
            return
        try:
            body = json.loads(call.request.body) if call.request.body else None
        except (ValueError, RecursionError):
            return
        ids = deleted_config(call.request.method, call.request.target, body)
        if ids is not None:
            self.deleted(*ids)

    def deleted(self, task_id: str, config_id: str) -> None:
        """The agent deleted the push config `config_id` of task `task_id` (any binding):
        its receivers end."""
        self.receivers.deleted(task_id, config_id)

    def confirming(self, send: Send, call: Call, ids: tuple[str, str]) -> Send:
        """`send`, watching the agent's reply to `call` (which deletes the config `ids`):
        when it says the deletion was done (a 2xx; on JSON-RPC, a `result`), `deleted`."""
        status = 0
        body: list[bytes] = []

        async def watching(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and sum(map(len, body)) < 65536:
                body.append(message.get("body", b""))
                if not message.get("more_body", False) and _confirmed(call, status, body):
                    self.deleted(*ids)
            await send(message)

        return watching

    # ---------------------------------------------------------------- a delivery

    async def deliver(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        """The agent's POST to a receiver path: forwarded to the client's webhook, its
        answer relayed back, the exchange recorded (`# @push config N`; `# @forged` too
        when its token is not its config's). Refused (404, 410), not recorded, when the
        receiver never was or has ended."""
        hook = self.receivers.get(path[len(PUSH_PREFIX) :])
        if hook is None or scope["method"] != "POST":
            await self._refuse_delivery(send, 404, "no such push receiver", path)
            return
        ended = self.receivers.end_state(hook)
        if ended is not None:
            await self._refuse_delivery(send, 410, f"this push receiver has ended: {ended}", path)
            return
        try:
            body = await read_body(receive, self._max_body, self._client_timeout)
        except (BodyTooLarge, BodyTimedOut):
            await send_json(send, 413, {"error": {"code": 413, "message": "delivery refused"}})
            return
        if body is None:
            return  # the agent went away
        headers = _forwarded(scope["headers"])
        forged = _forged(headers, hook.token)
        target = await webhook_target(hook.url, self._current_screen())
        if isinstance(target, str):
            await self._refuse_delivery(send, 403, target, path)
            return
        post_url, extra, extensions = target
        url = httpx.URL(hook.url)
        call = Call(CallRequest("POST", url.raw_path.decode("ascii"), tuple(headers), body))
        call.reply.started = time.monotonic()
        call.redactor = (self._forged_redactor if forged else self._redactor).fresh()
        store = self.recording.store
        ticket = store.begin(into=cast("FileKey | None", hook.file_key))
        call.routing = Routing(ticket, hook.file_key, push_of=hook.ticket)
        try:
            status, reason, reply_headers, reply = await self._forward(
                post_url, headers + extra, body, extensions, hook.url
            )
        except Exception:
            store.forget(call.routing.ticket)
            raise
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    *[(n, v) for n, v in reply_headers if n.lower() not in _NOT_FORWARDED],
                    (b"content-length", str(len(reply)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": reply})
        if not forged:
            self.receivers.delivered(hook, body)
        try:
            netloc = url.netloc.decode("ascii")
            exchange = self._exchange(call, netloc, status, reason, reply_headers, reply, forged)
        except Exception as exc:  # a recording that fails never changes the agent's answer
            store.forget(call.routing.ticket)
            log.error("recorder could not record the push delivery to %s: %s", call.shown, exc)
            self.recording.writer.count_failure(str(exc))
            return
        self.recording.write(call, exchange)

    async def _refuse_delivery(self, send: Send, status: int, why: str, path: str) -> None:
        self.refused += 1
        log.warning("push delivery to %s refused (%d): %s; not recorded", path, status, why)
        await send_json(send, status, {"error": {"code": status, "message": why}})

    async def _forward(
        self,
        url: str,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        extensions: dict[str, Any],
        webhook: str,
    ) -> tuple[int, str, list[tuple[bytes, bytes]], bytes]:
        """The client webhook's answer (status, reason, headers, body), or the proxy's
        502/504 when it cannot be reached."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=self._timeout, trust_env=False, follow_redirects=False
            )
            for name in ("accept", "accept-encoding", "connection", "user-agent"):
                del self._client.headers[name]  # (the agent's own go, and only those)
        shown = self._redactor.fresh().redact_push_url(webhook)
        try:
            request = self._client.build_request(
                "POST", url, headers=headers, content=body, extensions=extensions
            )
            answer = await self._client.send(request)
        except httpx.HTTPError as exc:
            timed_out = isinstance(exc, httpx.TimeoutException)
            status = 504 if timed_out else 502
            words = "did not answer in time" if timed_out else "could not be reached"
            message = f"the webhook {shown} {words}: {describe_http_error(exc)}"
            log.warning("push delivery: %s", message)
            value = {"error": {"code": status, "message": message, "webhook": shown}}
            data = json.dumps(value, ensure_ascii=False).encode()
            reason = "Gateway Timeout" if timed_out else "Bad Gateway"
            return status, reason, [(b"content-type", b"application/json")], data
        # (`content` is decoded: a Content-Encoding no longer says what the body is)
        kept = [(n, v) for n, v in answer.headers.raw if n.lower() != b"content-encoding"]
        return answer.status_code, answer.reason_phrase, kept, answer.content

    def _exchange(
        self,
        call: Call,
        netloc: str,
        status: int,
        reason: str,
        reply_headers: list[tuple[bytes, bytes]],
        reply: bytes,
        forged: bool,
    ) -> Exchange:
        """The delivery as recorded: as the webhook got it, and its answer, redacted."""
        redactor = call.redactor
        request_headers = redactor.redact_headers(
            Headers(
                [("Host", netloc)]
                + [
                    (header_case(n.decode("latin-1")), header_text(v))
                    for n, v in call.request.headers
                ]
            )
        )
        request = Request(
            method="POST",
            target=redactor.redact_push_url(call.request.target),
            headers=request_headers,
            body=redactor.redact_body(call.request.body, request_headers.get("Content-Type")),
        )
        kept = [
            (header_case(n.decode("latin-1")), header_text(v))
            for n, v in reply_headers
            if n.lower() not in _NOT_FORWARDED
        ]
        response_headers = redactor.redact_headers(Headers(kept))
        response = Response(
            status=status,
            reason=reason,
            headers=response_headers,
            body=redactor.redact_body(reply, response_headers.get("Content-Type")),
        )
        title = delivery_title(request.json)
        call.recorded = Recorded(title, "push", request, dict(redactor.seen))
        comments = (FORGED_TAG,) if forged else ()
        return Exchange(request=request, response=response, title=title, comments=comments)


def _confirmed(call: Call, status: int, body: list[bytes]) -> bool:
    """Whether the agent's reply (`status`, `body`) to `call` says it did what was asked: a
    2xx, and on JSON-RPC a `result` (a JSON-RPC error comes with 200 too)."""
    if not 200 <= status < 300:
        return False
    if call.request.method != "POST":
        return True
    try:
        value = json.loads(b"".join(body))
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and "result" in value and "error" not in value


def _forged(headers: list[tuple[bytes, bytes]], token: str | None) -> bool:
    """Whether a delivery's token header is not the token its config registered (none
    where one was, one where none was)."""
    sent = [value for name, value in headers if name == TOKEN_HEADER]
    if token is None:
        return bool(sent)
    return len(sent) != 1 or not hmac.compare_digest(sent[0], token.encode("utf-8"))


def _checked_origin(url: str) -> str:
    """`url` (what the recorder advertises as its receiver's address) as an origin:
    `http(s)://host[:port]`, no path; ValueError when it is not one."""
    try:
        parts = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ValueError(f"the push receiver URL {url!r} is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.host:
        raise ValueError(f"the push receiver URL {url!r} is not an http(s) URL with a host")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.userinfo:
        raise ValueError(
            f"the push receiver URL {url!r} must be an origin (http(s)://host[:port]): the "
            f"recorder's receiver paths ({PUSH_PREFIX}...) are added to it"
        )
    return str(parts.copy_with(path="/")).rstrip("/")


def _receiver_origin(host: str, port: int) -> str:
    """The receiver URLs' origin on the proxy listening on host:port."""
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"  # (listening on every address: the agent reaches loopback)
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def _forwarded(raw: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The agent's delivery headers as forwarded to the webhook (lowercase names)."""
    tokens: set[bytes] = set()
    for name, value in raw:
        if name.lower() == b"connection":
            tokens.update(t.strip().lower() for t in value.split(b","))
    return [
        (name.lower(), value)
        for name, value in raw
        if name.lower() not in _NOT_FORWARDED and name.lower() not in tokens
    ]
