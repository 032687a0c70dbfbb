"""A small A2A agent whose behaviour the client chooses (a loopback stub, real HTTP).

- `SendMessage`: the user message's `messageId` prefix chooses the answer, as agents under
  conformance test do: `text-…` a message with a text part, `file-…` a task with a file
  artifact, `data-…` a task with a data artifact, `bare-…` a message with no parts,
  `both-…` a task with a text and a data artifact. Anything else: a message "what?".
- `GetTask`: the task it made, or TASK_NOT_FOUND.
- The agent card: A2A 1.0's (`supportedInterfaces`) to a request with `A2A-Version: 1.0`,
  A2A 0.3's (`url`, `protocolVersion` on the card) to one without.

Ids are uuid4s, fresh per reply; every address is the one the client reached.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson

__all__ = ["ChooserAgent"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def _card(base: str, modern: bool) -> dict[str, Any]:
    card: dict[str, Any] = {
        "name": "chooser",
        "description": "answers by the messageId's prefix",
        "version": "1.0.0",
        "capabilities": {"streaming": False},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "choose", "name": "Choose", "description": "d", "tags": ["t"]}],
    }
    if modern:
        card["supportedInterfaces"] = [
            {"url": f"{base}/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ]
    else:
        card.update(url=f"{base}/a2a/jsonrpc", preferredTransport="JSONRPC", protocolVersion="0.3")
    return card


class ChooserAgent:
    """The ASGI app."""

    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}

    def _answer(self, message: dict[str, Any]) -> dict[str, Any]:
        prefix = str(message.get("messageId", "")).partition("-")[0]
        context = message.get("contextId") or str(uuid.uuid4())
        if prefix == "text":
            return {"message": self._message(context, [{"text": "a text answer"}])}
        if prefix == "bare":
            return {"message": self._message(context, [])}
        artifacts = {
            "file": [[{"url": "https://example.com/r.txt", "mediaType": "text/plain"}]],
            "data": [[{"data": {"score": 7}}]],
            "both": [[{"text": "summary"}], [{"data": {"score": 9}}]],
        }.get(prefix)
        if artifacts is None:
            return {"message": self._message(context, [{"text": "what?"}])}
        task = {
            "id": str(uuid.uuid4()),
            "contextId": context,
            "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [
                {"artifactId": str(uuid.uuid4()), "name": prefix, "parts": parts}
                for parts in artifacts
            ],
        }
        self.tasks[task["id"]] = task
        return {"task": task}

    @staticmethod
    def _message(context: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "messageId": str(uuid.uuid4()),
            "contextId": context,
            "role": "ROLE_AGENT",
            "parts": parts,
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
        base = f"http://{headers.get('host', 'localhost')}"
        if scope["method"] == "GET" and scope["path"].endswith("/agent-card.json"):
            reply: Any = _card(base, headers.get("a2a-version") == "1.0")
        else:
            request = orjson.loads(body)
            params = request.get("params", {})
            if request.get("method") == "SendMessage":
                reply = {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "result": self._answer(params["message"]),
                }
            elif request.get("method") == "GetTask" and params.get("id") in self.tasks:
                reply = {"jsonrpc": "2.0", "id": request["id"], "result": self.tasks[params["id"]]}
            else:
                error = {"code": -32001, "message": "Task not found"}
                reply = {"jsonrpc": "2.0", "id": request.get("id"), "error": error}
        data = orjson.dumps(reply)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(data)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": data})
