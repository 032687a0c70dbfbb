"""Push-notification traffic for the tests: a webhook of our own, a transcript of a push config
and its deliveries written from a real kit run, and a proxy in front of the kit that spoils
the deliveries (drops, changes, repeats one) on their way to the webhook."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import new_text_message
from a2a.types import Role, SendMessageRequest, Task, TaskPushNotificationConfig

from recorder.disk.transcripts import dump
from recorder.format.model import Exchange, Headers, Request, Response, Transcript

LIMIT = 10.0
TOKEN = "hook-token-5b1e"
DIFF = "--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1,2 @@\n+print(1)\n"


class Webhook:
    """A loopback webhook: keeps each POST (path, headers, body) and answers 200."""

    def __init__(self) -> None:
        self.got: list[tuple[str, dict[str, str], bytes]] = []
        self._cond = threading.Condition()
        hook = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with hook._cond:
                    hook.got.append((self.path, dict(self.headers.items()), body))
                    hook._cond.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def wait(self, count: int, limit: float = LIMIT) -> list[tuple[str, dict[str, str], bytes]]:
        deadline = time.monotonic() + limit
        with self._cond:
            while len(self.got) < count and (left := deadline - time.monotonic()) > 0:
                self._cond.wait(left)
            return list(self.got)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def push_request(text: str, url: str, token: str) -> SendMessageRequest:
    """A SendMessage of `text` with a push config for `url` and `token`, as SDK users build it."""
    request = SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER))
    request.configuration.task_push_notification_config.CopyFrom(
        TaskPushNotificationConfig(url=url, token=token)
    )
    return request


async def _sdk_send(base_url: str, request: SendMessageRequest) -> tuple[Task, list[Any]]:
    """Send `request` with the a2a-sdk client (JSON-RPC, not streaming); the task, and the
    JSON-RPC POSTs as they went (request, response)."""
    seen: list[Any] = []

    async def keep(response: httpx.Response) -> None:
        if response.request.url.path.endswith("/a2a/jsonrpc"):
            await response.aread()
            seen.append((response.request, response))

    http = httpx.AsyncClient(timeout=LIMIT, event_hooks={"response": [keep]})
    http.headers.setdefault("A2A-Version", "1.0")
    try:
        card = await A2ACardResolver(http, base_url).get_agent_card()
        config = ClientConfig(
            httpx_client=http, streaming=False, supported_protocol_bindings=["JSONRPC"]
        )
        client = ClientFactory(config).create(card)
        events = [event async for event in client.send_message(request)]
        await client.close()
    finally:
        await http.aclose()
    tasks = [event.task for event in events if event.HasField("task")]
    assert tasks, events
    return tasks[0], seen


def sdk_send(base_url: str, request: SendMessageRequest) -> tuple[Task, list[Any]]:
    return asyncio.run(asyncio.wait_for(_sdk_send(base_url, request), LIMIT))


def write_push_transcript(kit_url: str, path: Path) -> Path:
    """Send a diff with a push config to the kit with the a2a-sdk client and write what passed:
    the SendMessage, the four deliveries tagged `@push config 1` (by hand, in the agreed
    format: the token redacted, the webhook's path kept)."""
    hook = Webhook()
    try:
        _, seen = sdk_send(kit_url, push_request(DIFF, hook.url, TOKEN))
        got = hook.wait(4)
    finally:
        hook.close()
    assert len(got) == 4 and len(seen) == 1, (got, seen)
    sent, reply = seen[0]
    json_type = [("Content-Type", "application/json")]
    exchanges = [
        Exchange(
            Request(
                "POST",
                "/a2a/jsonrpc",
                Headers([("Host", "localhost:41242"), ("A2A-Version", "1.0"), *json_type]),
                sent.content.replace(TOKEN.encode(), b"{{TOKEN}}"),
            ),
            Response(200, "OK", Headers(json_type), reply.content),
            title="SendMessage: a review with a webhook",
        )
    ]
    for number, (hook_path, headers, delivery) in enumerate(got, 1):
        assert headers["X-A2A-Notification-Token"] == TOKEN
        exchanges.append(
            Exchange(
                Request(
                    "POST",
                    hook_path,
                    Headers([*json_type, ("X-A2A-Notification-Token", "{{TOKEN}}")]),
                    delivery,
                ),
                Response(200, "OK"),
                title=f"delivery {number}",
                push_config=1,
            )
        )
    dump(Transcript(tuple(exchanges)), path)
    return path


Spoil = Callable[[int, dict[str, Any]], list[dict[str, Any]]]


@contextmanager
def spoiling_proxy(kit_url: str, spoil: Spoil) -> Iterator[str]:
    """A proxy in front of the kit: a push config's url is pointed at the proxy, whose
    webhook forwards each delivery (numbered from 1) as `spoil` says (the bodies it returns,
    in order: none drops it, two repeat it) to the url the client gave. Yields its URL."""
    lock = threading.Lock()
    count = [0]

    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.startswith("/relay/"):
                target = bytes.fromhex(self.path.removeprefix("/relay/")).decode()
                with lock:
                    count[0] += 1
                    number = count[0]
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in ("host", "content-length")
                }
                for out in spoil(number, json.loads(body)):
                    httpx.post(target, json=out, headers=headers, timeout=LIMIT)
                self._answer(200, b"", "application/json")
                return
            value = json.loads(body)
            config = (value.get("params") or {}).get("configuration", {})
            push = config.get("taskPushNotificationConfig")
            if push is not None:
                push["url"] = f"{url}/relay/{push['url'].encode().hex()}"
            reply = httpx.post(
                f"{kit_url}{self.path}",
                json=value,
                headers={k: v for k, v in self.headers.items() if k.lower().startswith("a2a")},
                timeout=LIMIT,
            )
            self._answer(reply.status_code, reply.content, reply.headers["content-type"])

        def _answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()
