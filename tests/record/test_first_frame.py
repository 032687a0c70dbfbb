"""A stream's first frame that came with the head reaches the client in the same pass of the
event loop as the head (with `server.JoiningTransport`: in one send), not a pass later, and is
still learned and recorded like every frame."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from recorder.httpfile import load
from recorder.record.proxy import create_proxy_app
from recorder.servers import bind_socket

pytestmark = pytest.mark.anyio

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
FIRST = b'data: {"jsonrpc":"2.0","id":1,"result":{"taskId":"t-1","state":"working"}}\n\n'
LAST = b'data: {"jsonrpc":"2.0","id":1,"result":{"taskId":"t-1","state":"completed"}}\n\n'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def test_the_first_frame_goes_in_the_pass_of_the_head(tmp_path: Path) -> None:
    release = asyncio.Event()

    async def agent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        await reader.readexactly(length)
        writer.write(HEAD + chunk(FIRST))  # the head and the first frame in one write
        await writer.drain()
        await release.wait()
        writer.write(chunk(LAST) + b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(agent, sock=bind_socket())
    port = server.sockets[0].getsockname()[1]
    proxy = create_proxy_app(f"http://127.0.0.1:{port}", out=tmp_path)
    loop = asyncio.get_running_loop()
    passed: list[bool] = []  # set by a callback scheduled when the head is sent
    messages: list[dict[str, Any]] = []
    body = b'{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{}}'
    requests = [{"type": "http.request", "body": body, "more_body": False}]
    disconnected = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if requests:
            return requests.pop()
        await disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            loop.call_soon(passed.append, True)
        elif message.get("body") and not any(m.get("body") for m in messages[1:]):
            assert passed == [], "the first frame waited for a later pass of the loop"
            release.set()
        messages.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/a2a/jsonrpc",
        "raw_path": b"/a2a/jsonrpc",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:41241"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "http_version": "1.1",
        "scheme": "http",
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 41241),
    }
    try:
        await asyncio.wait_for(proxy(scope, receive, send), 10)
        assert await proxy.flush(10.0)
    finally:
        disconnected.set()
        await proxy.aclose()
        server.close()
        await server.wait_closed()
    sent = b"".join(m.get("body", b"") for m in messages)
    assert sent == FIRST + LAST
    [path] = tmp_path.glob("*.http")
    [exchange] = load(path)
    assert exchange.response.events is not None
    assert [event.data for event in exchange.response.events] == [
        FIRST[6:-2].decode(),
        LAST[6:-2].decode(),
    ]
