"""A reply's generated values are learned, and its exchange closed, in the step of the event
loop that writes the reply's end (a stream's frame: the frame) to the client: the client does
not wait for the learning, yet no request can be read before it (a follow-up by an id the
reply carries finds its file). Checked at the ASGI level: the moment the proxy writes, a
callback is queued on the loop; it runs at the loop's next turn, the earliest a follow-up
could be read, and looks the reply's id up."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from recorder.record.proxy import RecordingProxy, create_proxy_app

pytestmark = pytest.mark.anyio

GENERATED = "3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def agent(request: Request) -> Response:
    """A reply holding a generated context id: small, large (passed through), or a stream."""
    call = json.loads(await request.body())
    result = {"contextId": GENERATED, "text": "x" * call["params"].get("pad", 0)}
    reply = json.dumps({"jsonrpc": "2.0", "id": call["id"], "result": result}).encode()
    if call["method"] == "SendStreamingMessage":

        async def frames() -> AsyncIterator[bytes]:
            yield b"data: " + reply + b"\n\n"

        return StreamingResponse(frames(), media_type="text/event-stream")
    return Response(reply, media_type="application/json")


def proxy_for(out: Path) -> RecordingProxy:
    transport = httpx.ASGITransport(app=Starlette(routes=[Route("/rpc", agent, methods=["POST"])]))
    return create_proxy_app("http://agent.test", out=out, transport=transport)


async def homes_seen_at_the_next_turn(proxy: RecordingProxy, method: str, pad: int) -> list[bool]:
    """Whether the reply's id had a home at the loop turn after each write of the proxy
    that carried it."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"pad": pad}})
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "POST",
        "path": "/rpc",
        "raw_path": b"/rpc",
        "query_string": b"",
        "headers": [(b"host", b"proxy.test"), (b"content-type", b"application/json")],
    }
    sent_body = False
    seen: list[bool] = []
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body.encode(), "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    def look() -> None:
        seen.append(proxy.recording.lineage.home_of([GENERATED]) is not None)

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and GENERATED.encode() in message["body"]:
            loop.call_soon(look)  # runs once the proxy's task gives the loop a turn

    await proxy(scope, receive, send)
    done.set()
    await proxy.aclose()
    return seen


@pytest.mark.parametrize(
    ("method", "pad"),
    [
        ("SendMessage", 10),  # a small reply, held whole and sent at once
        ("SendMessage", 200_000),  # a large one, passed through (its last part held)
        ("SendStreamingMessage", 10),  # a stream: the frame with the id
    ],
    ids=["buffered", "passed-through", "stream-frame"],
)
async def test_the_id_has_its_home_before_the_loop_turns_after_the_write(
    tmp_path: Path, method: str, pad: int
) -> None:
    seen = await homes_seen_at_the_next_turn(proxy_for(tmp_path / "out"), method, pad)
    assert seen, "the id reached the client"
    assert seen[-1], "the reply's id had no home yet at the loop's next turn"
