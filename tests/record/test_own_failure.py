"""`answer_own_failure`: the recorder's own failure while it handles a request (pure asyncio, no
network). Before the reply starts the client gets a 500 naming it; once the reply has started
the failure is raised, so the server closes the connection and the client sees an incomplete
reply, never one the recorder changed."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from recorder.record.proxy.call import Message, Receive, Scope, Send, answer_own_failure

SCOPE: Scope = {"type": "http", "method": "POST", "path": "/a2a/jsonrpc"}


async def _receive() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


def _run(handle: Any) -> list[Message]:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(answer_own_failure(handle, SCOPE, _receive, send, "http://agent.test"))
    return sent


def test_a_failure_before_the_reply_is_answered_500_naming_it() -> None:
    async def handle(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("disk on fire")

    sent = _run(handle)
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 500
    body = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))
    assert body["error"]["message"] == "recorder failed: disk on fire"
    assert body["error"]["upstream"] == "http://agent.test"


def test_a_failure_after_the_reply_started_is_raised_and_nothing_more_is_sent() -> None:
    async def handle(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("mid-stream")

    with pytest.raises(RuntimeError, match="mid-stream"):
        _run(handle)


def test_a_reply_handled_whole_goes_through_as_it_was_sent() -> None:
    async def handle(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 201, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    assert _run(handle) == [
        {"type": "http.response.start", "status": 201, "headers": []},
        {"type": "http.response.body", "body": b"ok"},
    ]


def test_a_cancellation_is_never_answered() -> None:
    async def handle(scope: Scope, receive: Receive, send: Send) -> None:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        _run(handle)
