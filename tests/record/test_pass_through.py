"""A sized reply over `PASS_THROUGH_AT` passes to the client as it arrives, with its
Content-Length, its last chunk held until its ids are learned: the client gets it whole, it
is recorded, and a follow-up by an id it carried joins its file."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request as StarletteRequest
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from recorder import load
from recorder.checking import check_paths
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.forwarding import PASS_THROUGH_AT

UPSTREAM = "http://agent.test:9999"
TASK = str(uuid.uuid4())


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def jsonrpc(request: StarletteRequest) -> Response:
    call = json.loads(await request.body())
    if call["method"] == "GetTask":
        reply = {"jsonrpc": "2.0", "id": call["id"], "result": {"id": call["params"]["id"]}}
        return Response(json.dumps(reply), media_type="application/json")
    text = "lorem ipsum " * (3 * PASS_THROUGH_AT // 12)
    body = json.dumps(
        {"jsonrpc": "2.0", "id": call["id"], "result": {"task": {"id": TASK, "text": text}}}
    ).encode()
    parts = [body[i : i + 16384] for i in range(0, len(body), 16384)]

    async def chunks() -> AsyncIterator[bytes]:
        for part in parts:
            yield part

    return StreamingResponse(
        chunks(), media_type="application/json", headers={"Content-Length": str(len(body))}
    )


@pytest.mark.anyio
async def test_a_large_sized_reply_passes_through_whole_and_its_follow_up_joins_it(
    tmp_path: Path,
) -> None:
    app = Starlette(routes=[Route("/a2a/jsonrpc", jsonrpc, methods=["POST"])])
    proxy = create_proxy_app(UPSTREAM, out=tmp_path, transport=httpx.ASGITransport(app=app))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=proxy), base_url="http://127.0.0.1:41241"
    ) as client:
        first = await client.post(
            "/a2a/jsonrpc", json={"jsonrpc": "2.0", "id": "r1", "method": "SendMessage"}
        )
        follow_up = await client.post(
            "/a2a/jsonrpc",
            json={"jsonrpc": "2.0", "id": "r2", "method": "GetTask", "params": {"id": TASK}},
        )
    assert await proxy.flush(10.0)
    assert first.status_code == 200
    assert len(first.content) > 3 * PASS_THROUGH_AT - 100
    assert first.headers["content-length"] == str(len(first.content))
    assert "transfer-encoding" not in first.headers
    assert first.json()["result"]["task"]["id"] == TASK
    assert follow_up.json()["result"] == {"id": TASK}
    [path] = tmp_path.glob("*.http")  # one file: the follow-up found the task's
    exchanges = load(path).exchanges
    assert [e.title for e in exchanges] == ["SendMessage", "GetTask"]
    assert exchanges[0].response.json == first.json()
    await proxy.aclose()


@pytest.mark.anyio
async def test_a_pass_through_reply_the_upstream_breaks_off_is_cut_short_and_recorded_truncated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    size = 3 * PASS_THROUGH_AT

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        head = (
            f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n"
        )
        writer.write(head.encode() + b"[" + b" " * (size // 2))  # half the body, then gone
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    proxy = create_proxy_app(f"http://127.0.0.1:{port}", out=tmp_path)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=proxy), base_url="http://127.0.0.1:41241"
        ) as client:
            with pytest.raises(RuntimeError, match="broke off the reply"):
                await client.post("/a2a/jsonrpc", json={"jsonrpc": "2.0", "id": 1})
        assert await proxy.flush(10.0)
        assert "the client's reply is cut short" in caplog.text
        # (issue 24: it was neither recorded nor counted)
        [path] = tmp_path.glob("*.http")
        [exchange] = load(path).exchanges
        assert exchange.truncated
        assert exchange.response.body.startswith(b"[")
        assert proxy.status()["recorded"] == 1
        assert check_paths([path]) == (1, [])  # the recorder's own output passes the check
    finally:
        await proxy.aclose()
        server.close()
        await server.wait_closed()
