"""An OpenAI-compatible model server of our own, on a free loopback port, for the tests of the
model checks: `POST /v1/chat/completions` and `POST /v1/embeddings`, answered by script.

- `judge(body) -> str | dict` writes a chat answer's content (a dict is sent as its JSON);
  `facts_judge`, the default, compares the facts (`path:line`, `[tag]`) of the recorded and
  the live answer in the prompt, as a model judging meaning would: same facts, pass;
- `script`: replies to send first, one per request, in order (a 429 with `Retry-After`, a 503,
  a reply that is not JSON …), before the judge answers;
- `refuse`: optional parameters it answers 400 to when sent (as LM Studio does for
  `response_format: json_object`, OpenAI's reasoning models for `temperature`);
- `key`: the key it wants (`Authorization: Bearer KEY`); a wrong one gets a 401 that echoes
  what it was sent, as a careless server might;
- `hold`: each chat request waits until that many are in flight at once (or `hold_limit`
  seconds): the most in flight (`max_in_flight`) then shows the client's bound exactly;
- `delay`: seconds each chat request takes (a slow server).

Every request is kept (`requests`: path, headers, JSON body) and counted by route.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from recorder.servers import ServerThread

_FACT = re.compile(r"[\w./-]+\.\w+:\d+|\[[\w-]+\]")


def _tag(text: str, name: str) -> str:
    match = re.search(f"<{name}>\n(.*)\n</{name}>", text, re.DOTALL)
    return match.group(1) if match else ""


def answers_in(body: dict[str, Any]) -> tuple[str, str]:
    """(recorded, live) as the judge's prompt holds them."""
    user = body["messages"][-1]["content"]
    return _tag(user, "recorded_answer"), _tag(user, "live_answer")


def facts_judge(body: dict[str, Any]) -> dict[str, Any]:
    """Pass when the live answer states the recorded one's facts and no others."""
    recorded, live = answers_in(body)
    want, got = set(_FACT.findall(recorded)), set(_FACT.findall(live))
    differences = [f"{fact} is missing" for fact in sorted(want - got)]
    differences += [f"{fact} is made up" for fact in sorted(got - want)]
    reason = "the same facts" if not differences else "the facts differ"
    return {"pass": not differences, "reason": reason, "differences": differences}


@dataclass
class Reply:
    """One scripted reply: a status, a JSON body or a raw text, headers."""

    status: int = 200
    body: Any = None
    text: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


def embedding(text: str, dimensions: int = 32) -> list[float]:
    """A bag of words hashed into `dimensions` numbers (deterministic)."""
    vector = [0.0] * dimensions
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dimensions] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class ModelServer:
    """See the module docstring: `with ModelServer() as server: server.base_url`."""

    def __init__(
        self,
        *,
        judge: Callable[[dict[str, Any]], str | dict[str, Any]] = facts_judge,
        script: list[Reply] | None = None,
        refuse: frozenset[str] = frozenset(),
        key: str | None = None,
        hold: int = 0,
        hold_limit: float = 5.0,
        delay: float = 0.0,
    ) -> None:
        self.judge = judge
        self.script = list(script or [])
        self.refuse = refuse
        self.key = key
        self.hold = hold
        self.hold_limit = hold_limit
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._arrivals: asyncio.Condition | None = None
        self._arrived = 0
        self._server = ServerThread(self._app, interface="asgi3")

    @property
    def base_url(self) -> str:
        return self._server.url + "/v1"

    def count(self, route: str = "/v1/chat/completions") -> int:
        return sum(1 for r in self.requests if r["path"] == route)

    def __enter__(self) -> ModelServer:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        data = b""
        while True:
            message = await receive()
            data += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        body = json.loads(data) if data else None
        self.requests.append({"path": scope["path"], "headers": headers, "body": body})
        reply = await self._reply(scope["path"], headers, body)
        text = reply.text if reply.text is not None else json.dumps(reply.body)
        out = [(b"content-type", b"application/json")]
        out += [(k.encode(), v.encode()) for k, v in reply.headers.items()]
        await send({"type": "http.response.start", "status": reply.status, "headers": out})
        await send({"type": "http.response.body", "body": text.encode()})

    async def _reply(self, path: str, headers: dict[str, str], body: Any) -> Reply:
        if self.key is not None and headers.get("authorization") != f"Bearer {self.key}":
            sent = headers.get("authorization", "nothing")
            return Reply(401, {"error": {"message": f"Incorrect API key provided: {sent}"}})
        if self.script:
            return self.script.pop(0)
        for name in sorted(self.refuse):
            if name in body:
                message = f"Unsupported parameter: '{name}' is not supported with this model."
                return Reply(400, {"error": {"message": message, "param": name}})
        if path == "/v1/embeddings":
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = [
                {"object": "embedding", "index": n, "embedding": embedding(text)}
                for n, text in enumerate(inputs)
            ]
            tokens = sum(len(text.split()) for text in inputs)
            return Reply(body={"data": data, "usage": {"prompt_tokens": tokens}})
        if path != "/v1/chat/completions":
            return Reply(404, {"error": {"message": f"no route {path}"}})
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await self._wait()
            answer = self.judge(body)
        finally:
            self.in_flight -= 1
        content = answer if isinstance(answer, str) else json.dumps(answer)
        prompt = sum(len(m["content"].split()) for m in body["messages"])
        return Reply(
            body={
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": len(content.split()),
                    "total_tokens": prompt + len(content.split()),
                },
            }
        )

    async def _wait(self) -> None:
        if self.delay:
            await asyncio.sleep(self.delay)  # (a slow model: what is tested is the client's)
        if not self.hold:
            return
        # released by batches of `hold` arrivals (a count that only grows: no race with the
        # requests that finish meanwhile)
        if self._arrivals is None:
            self._arrivals = asyncio.Condition()
        async with self._arrivals:
            number = self._arrived
            self._arrived += 1
            self._arrivals.notify_all()
            batch_end = (number // self.hold + 1) * self.hold
            with contextlib.suppress(TimeoutError):  # (then released: the test sees why)
                await asyncio.wait_for(
                    self._arrivals.wait_for(lambda: self._arrived >= batch_end), self.hold_limit
                )
