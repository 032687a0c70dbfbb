"""A noisy agent for the tests of `recorder learn`: the real kit behind a loopback proxy that adds
volatile members to every JSON-RPC result (and a volatile header), as real agents do.

Each JSON reply whose body has a `result` object gets `result.served`:

- `at`: an epoch in microseconds (integer), `took`: a duration text (`"1.234ms"`),
- `host`: a host name from a pool (`worker-7.pool.internal`), `trace`: a random hex token,
- `cursor`: a base64 page cursor holding a time, `shards`: four names in another order,
- `items`: two objects whose `seq` is a random integer and whose `name` is stable,
- `region` and `version`: stable (the neighbours a regression is injected at),
- `ticket`: a random hex id per conversation (contextId), named again by every reply about it.

and the reply gets an `X-Served-By` header that changes. Event streams go through event by
event as they come, each frame's JSON-RPC result made noisy the same way. `rewrite`
(settable) edits each JSON body and frame after the noise is added: a regression injected on
purpose.
"""

from __future__ import annotations

import base64
import itertools
import json
import random
import secrets
import time
from collections.abc import Callable
from typing import Any

import httpx

from recorder.kit import KitServer
from recorder.servers import ServerThread

_ORDERS = list(itertools.permutations(["alpha", "beta", "gamma", "delta"]))
_HOP = {b"host", b"content-length", b"connection", b"transfer-encoding"}


class NoisyAgent:
    """The kit behind a noisy proxy on a free loopback port: `.url`, `.base_url`, `.token`."""

    def __init__(self, kit: KitServer) -> None:
        self.kit = kit
        self.token = kit.token
        self.rewrite: Callable[[dict[str, Any]], None] | None = None
        self._tickets: dict[str, str] = {}
        self._counter = itertools.count(random.randrange(1000) * 24)
        self._server = ServerThread(self._app, interface="asgi3")

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def base_url(self) -> str:
        return self._server.url

    def __enter__(self) -> NoisyAgent:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()

    def noise(self) -> dict[str, Any]:
        n = next(self._counter)
        # another order for each reply (24 orders in turn: two runs of one exchange, a few
        # replies apart, never see the same one)
        shards = list(_ORDERS[n % len(_ORDERS)])
        cursor = json.dumps({"t": time.time_ns(), "n": n}).encode()
        return {
            "at": time.time_ns() // 1000 + n,
            "took": f"{random.randrange(1, 900)}.{random.randrange(100, 999)}ms",
            "host": f"worker-{n}.pool.internal",
            "trace": secrets.token_hex(16),
            "cursor": base64.urlsafe_b64encode(cursor).decode(),
            "shards": shards,
            "items": [
                {"name": "first", "seq": random.randrange(10**9)},
                {"name": "second", "seq": random.randrange(10**9)},
            ],
            "region": "eu-west-1",
            "version": "1.0",
        }

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP]
        target = scope["raw_path"].decode() + (
            "?" + scope["query_string"].decode() if scope["query_string"] else ""
        )
        async with httpx.AsyncClient(timeout=30) as client:
            request = client.build_request(
                scope["method"], self.kit.url + target, headers=headers, content=body
            )
            reply = await client.send(request, stream=True)
            try:
                out = [
                    (k.encode(), v.encode())
                    for k, v in reply.headers.multi_items()
                    if k.encode().lower() not in _HOP and k.lower() != "content-encoding"
                ]
                out.append((b"x-served-by", secrets.token_hex(4).encode()))
                if "json" in reply.headers.get("content-type", ""):
                    data = await reply.aread()
                    data = self._noisy(data)
                    out.append((b"content-length", str(len(data)).encode()))
                    await send(
                        {"type": "http.response.start", "status": reply.status_code, "headers": out}
                    )
                    await send({"type": "http.response.body", "body": data})
                    return
                await send(
                    {"type": "http.response.start", "status": reply.status_code, "headers": out}
                )
                pending = b""
                async for chunk in reply.aiter_raw():
                    # each whole event (up to a blank line) as it comes, its data made noisy
                    pending += chunk.replace(b"\r\n", b"\n")
                    *events, pending = pending.split(b"\n\n")
                    if events:
                        data = b"".join(self._noisy_event(e) + b"\n\n" for e in events)
                        await send({"type": "http.response.body", "body": data, "more_body": True})
                await send({"type": "http.response.body", "body": pending})
            finally:
                await reply.aclose()

    def _noisy_event(self, event: bytes) -> bytes:
        lines = event.split(b"\n")
        data = [line[5:].lstrip() for line in lines if line.startswith(b"data:")]
        if len(data) != 1:
            return event
        noisy = self._noisy(data[0])
        return b"\n".join(
            b"data: " + noisy if line.startswith(b"data:") else line for line in lines
        )

    def _noisy(self, data: bytes) -> bytes:
        try:
            value = json.loads(data)
        except ValueError:
            return data
        if isinstance(value, dict) and isinstance(value.get("result"), dict):
            value["result"]["served"] = self.noise()
            # one ticket per conversation, named again by each reply about it: an id
            context = _first_context_id(value["result"])
            if context is not None:
                ticket = self._tickets.setdefault(context, secrets.token_hex(12))
                value["result"]["served"]["ticket"] = ticket
            if self.rewrite is not None:
                self.rewrite(value)
        return json.dumps(value).encode()


def _first_context_id(value: Any) -> str | None:
    if isinstance(value, dict):
        if isinstance(value.get("contextId"), str):
            return str(value["contextId"])
        items = list(value.values())
    elif isinstance(value, list):
        items = value
    else:
        return None
    for item in items:
        found = _first_context_id(item)
        if found is not None:
            return found
    return None
