"""Push notifications through the recorder: the deliveries an agent sends to a client's
webhook pass through the proxy and are recorded in the file of the config's task.

- A request that registers a push config (`recorder.bindings.push_configs.config_objects`: a
  SendMessage with `configuration.taskPushNotificationConfig`, a CreateTaskPushNotificationConfig,
  on JSON-RPC and HTTP+JSON) reaches the agent with the config's `url` pointed at a receiver of
  the proxy's own, one path per config (`/_recorder/push/<random id>`: no part of the
  client's URL is in it); what is recorded is the request as the client sent it (`rewrite`).
  A gRPC call's (`recorder.record.grpc_proxy`) is pointed at the same receiver, on the
  proxy's HTTP listen address (`listening`, `point`).
- The agent's echo of a receiver URL in a reply (the Create, Get and List replies) is the
  client's URL again before the client gets the reply and before it is recorded (`restore`).
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
  segment as `{{PUSH_URL_SECRET}}`, as in the config's `url`).
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, cast

import httpx

from recorder.bindings.push_configs import config_objects
from recorder.format.model import (
    Exchange,
    Headers,
    Request,
    Response,
    header_text,
    is_json_media_type,
)
from recorder.record.naming import header_case
from recorder.record.proxy.call import (
    BodyTimedOut,
    BodyTooLarge,
    Call,
    Receive,
    Scope,
    Send,
    describe_http_error,
    read_body,
    send_json,
)
from recorder.record.proxy.recording import Recording
from recorder.record.store.transcript_store import FileKey
from recorder.secrets.redact import Redactor

__all__ = ["PUSH_PREFIX", "PushRoom", "delivery_title"]

log = logging.getLogger(__name__)

PUSH_PREFIX = "/_recorder/push/"
PUSH_PREFIX_BYTES = PUSH_PREFIX.encode()
# a receiver URL in a reply: the proxy's own address, the prefix, the id
_RECEIVER_URL = re.compile(rb"https?://[^\s\"'/]+" + re.escape(PUSH_PREFIX.encode()) + rb"([\w-]+)")
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
# the secret headers of a delivery and their placeholders: the config's token and
# credentials under the names the config's members have (`recorder.secrets.redact`'s defaults)
DELIVERY_SECRET_HEADERS = {"x-a2a-notification-token": "TOKEN", "authorization": "CREDENTIALS"}
DELIVERY_TIMEOUT = httpx.Timeout(30.0, connect=5.0)


@dataclass(frozen=True)
class Hook:
    """One registered push config: the client's URL, and the exchange that registered it
    (its ticket and file)."""

    url: str
    ticket: int
    file_key: Hashable | None


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
    """The receiver of the proxy's push deliveries, and the url rewriting both ways."""

    def __init__(
        self,
        recording: Recording,
        redactor: Redactor,
        *,
        max_body: int,
        client_timeout: float | None,
        timeout: httpx.Timeout = DELIVERY_TIMEOUT,
    ) -> None:
        self.recording = recording
        self._redactor = Redactor(
            headers={**redactor.headers, **DELIVERY_SECRET_HEADERS},
            fields=redactor.fields,
            url_fields=redactor.url_fields,
        )
        self._max_body = max_body
        self._client_timeout = client_timeout
        self._timeout = timeout
        self._hooks: dict[str, Hook] = {}
        self._listen: tuple[str, int] | None = None
        self._client: httpx.AsyncClient | None = None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # ---------------------------------------------------------------- the urls

    def listening(self, host: str, port: int) -> None:
        """The proxy's HTTP listen address: where a receiver URL points for a config
        registered other than over HTTP (a gRPC call: `point`)."""
        self._listen = (host, port)

    def rewrite(self, call: Call, scope: Scope) -> None:
        """When `call` registers push configs: each config's url pointed at a receiver path
        of its own, in the body sent upstream (`Call.upstream_body`); `call.body` (what is
        recorded) stays the client's. Called once `call` has its ticket and file."""
        if call.method != "POST" or b'"url"' not in call.body:
            return
        content_type = next((v for n, v in call.headers if n == b"content-type"), b"")
        if not is_json_media_type(content_type.decode("latin-1")):
            return
        try:
            body = json.loads(call.body)
        except (ValueError, RecursionError):
            return  # the agent says what is wrong with it
        configs = config_objects(call.method, call.target, body)
        if not configs:
            return
        host, port = scope.get("server") or ("127.0.0.1", 0)
        self._point(configs, call, _receiver_base(host, port))
        call.upstream_body = json.dumps(body, ensure_ascii=False).encode()

    def point(self, call: Call, body: Any) -> bool:
        """A call's parsed body (a gRPC call's ProtoJSON) with each push config it registers
        pointed at a receiver path of its own, on the proxy's HTTP listener (`listening`);
        whether there was one to point (False too when the listen address is unknown: the
        config then goes on as the client sent it, and its deliveries around the recorder,
        which is logged). Called once `call` has its ticket and file."""
        configs = config_objects(call.method, call.target, body)
        if not configs:
            return False
        if self._listen is None:
            log.warning(
                "%s registers a push config, but the recorder's HTTP address is not known: "
                "its deliveries go to the webhook directly, unrecorded",
                call.shown,
            )
            return False
        self._point(configs, call, _receiver_base(*self._listen))
        return True

    def _point(self, configs: list[dict[str, Any]], call: Call, base: str) -> None:
        for config in configs:
            hook_id = secrets.token_urlsafe(16)
            self._hooks[hook_id] = Hook(config["url"], call.ticket, call.file_key)
            config["url"] = base + hook_id

    def holds_receiver(self, data: bytes) -> bool:
        """Whether `data` (a reply's bytes, any encoding that keeps strings as UTF-8) may hold
        a receiver URL of this proxy's (cheap: no parsing; `restore` makes it the client's)."""
        return bool(self._hooks) and PUSH_PREFIX_BYTES in data

    def restore(self, body: bytes) -> bytes:
        """`body` with every receiver URL of this proxy's the client's URL again."""
        if not self.holds_receiver(body):
            return body

        def client_url(match: re.Match[bytes]) -> bytes:
            hook = self._hooks.get(match.group(1).decode("ascii"))
            if hook is None:
                return match.group(0)
            return json.dumps(hook.url, ensure_ascii=False)[1:-1].encode()

        return _RECEIVER_URL.sub(client_url, body)

    # ---------------------------------------------------------------- a delivery

    async def deliver(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        """The agent's POST to a receiver path: forwarded to the client's webhook, its
        answer relayed back, the exchange recorded (`# @push config N`)."""
        hook = self._hooks.get(path[len(PUSH_PREFIX) :])
        if hook is None or scope["method"] != "POST":
            await send_json(send, 404, {"error": {"code": 404, "message": "no such push hook"}})
            return
        try:
            body = await read_body(receive, self._max_body, self._client_timeout)
        except (BodyTooLarge, BodyTimedOut):
            await send_json(send, 413, {"error": {"code": 413, "message": "delivery refused"}})
            return
        if body is None:
            return  # the agent went away
        headers = _forwarded(scope["headers"])
        url = httpx.URL(hook.url)
        target = url.raw_path.decode("ascii")
        call = Call(method="POST", target=target, headers=headers, body=body)
        call.started = time.monotonic()
        call.redactor = self._redactor.fresh()
        store = self.recording.store
        call.ticket = store.begin(into=cast("FileKey | None", hook.file_key))
        call.file_key = hook.file_key
        call.push_of = hook.ticket
        netloc = url.netloc.decode("ascii")
        try:
            status, reason, reply_headers, reply = await self._forward(hook.url, headers, body)
        except Exception:
            store.forget(call.ticket)
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
        try:
            exchange = self._exchange(call, netloc, status, reason, reply_headers, reply)
        except Exception as exc:  # a recording that fails never changes the agent's answer
            store.forget(call.ticket)
            log.error("recorder could not record the push delivery to %s: %s", call.shown, exc)
            self.recording.writer.count_failure(str(exc))
            return
        self.recording.write(call, exchange)

    async def _forward(
        self, url: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> tuple[int, str, list[tuple[bytes, bytes]], bytes]:
        """The client webhook's answer (status, reason, headers, body), or the proxy's
        502/504 when it cannot be reached."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=self._timeout, trust_env=False, follow_redirects=False
            )
            for name in ("accept", "accept-encoding", "connection", "user-agent"):
                del self._client.headers[name]  # (the agent's own go, and only those)
        shown = self._redactor.fresh().redact_push_url(url)
        try:
            answer = await self._client.post(url, headers=headers, content=body)
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
    ) -> Exchange:
        """The delivery as recorded: as the webhook got it, and its answer, redacted."""
        redactor = call.redactor
        request_headers = redactor.redact_headers(
            Headers(
                [("Host", netloc)]
                + [(header_case(n.decode("latin-1")), header_text(v)) for n, v in call.headers]
            )
        )
        request = Request(
            method="POST",
            target=redactor.redact_push_url(call.target),
            headers=request_headers,
            body=redactor.redact_body(call.body, request_headers.get("Content-Type")),
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
        call.sent_secrets = dict(redactor.seen)
        call.recorded_title = title = delivery_title(request.json)
        call.recorded_operation = "push"
        return Exchange(request=request, response=response, title=title)


def _receiver_base(host: str, port: int) -> str:
    """The receiver URLs' base on the proxy listening on host:port."""
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"  # (listening on every address: the agent reaches loopback)
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{PUSH_PREFIX}"


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
