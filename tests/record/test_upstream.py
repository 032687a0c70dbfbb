"""The proxy's HTTP/1.1 upstream client (`recorder.record.transport.upstream.Http11Upstream`)
against a raw loopback server that answers each request path with exact bytes: framing, reuse,
errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from recorder.record.transport import upstream as upstream_module
from recorder.record.transport.upstream import Http11Upstream, UpstreamReply
from recorder.servers import ServerThread, bind_socket

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


JSON = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{"a":1}'
REPLIES: dict[bytes, bytes] = {
    b"/json": JSON,
    b"/chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n",
    b"/until-close": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it",
    b"/early-hints": b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n" + JSON,
    b"/garbage": b"this is not HTTP\r\n\r\n",
    b"/short": b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
    b"/hang-up": b"",
    b"/head": b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n",
    b"/twice": JSON + JSON,
    b"/reason": b"HTTP/1.1 418 I'm a teapot\r\nX-A: 1\r\nx-b: 2\r\nContent-Length: 0\r\n\r\n",
}
CLOSE_AFTER = {b"/until-close", b"/short", b"/hang-up", b"/garbage"}


class RawServer:
    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                path = head.split(b" ")[1].split(b"?")[0]
                if path == b"/slow":
                    await asyncio.sleep(5)
                writer.write(REPLIES[path])
                await writer.drain()
                if path in CLOSE_AFTER:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def upstream(read: float = 5.0) -> AsyncIterator[tuple[Http11Upstream, RawServer]]:
    raw = RawServer()
    server = await asyncio.start_server(raw.handle, sock=bind_socket())
    port = server.sockets[0].getsockname()[1]
    client = Http11Upstream(httpx.URL(f"http://127.0.0.1:{port}"), httpx.Timeout(5.0, read=read))
    try:
        yield client, raw
    finally:
        await client.aclose()
        server.close()
        await server.wait_closed()


async def fetch(client: Http11Upstream, path: bytes, method: str = "GET") -> tuple[int, bytes]:
    reply: UpstreamReply = await client.send(method, path, [(b"Accept", b"*/*")], b"")
    try:
        body = b"".join([chunk async for chunk in reply.aiter_raw()])
    finally:
        await reply.aclose()
    return reply.status_code, body


async def test_request_head_and_body_are_sent_as_given_with_host_and_length() -> None:
    async with upstream() as (client, raw):
        reply = await client.send("POST", b"/json?x=1", [(b"Content-Type", b"a/b")], b"hello")
        await reply.aclose()
    port = client._port
    assert raw.requests == [
        f"POST /json?x=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: a/b\r\n"
        "Content-Length: 5\r\n\r\nhello".encode()
    ]


async def test_status_reason_and_headers_come_as_sent() -> None:
    async with upstream() as (client, _):
        reply = await client.send("GET", b"/reason", [], b"")
        await reply.aclose()
    assert (reply.status_code, reply.reason_phrase) == (418, "I'm a teapot")
    assert reply.raw_headers == [(b"X-A", b"1"), (b"x-b", b"2"), (b"Content-Length", b"0")]


async def test_keep_alive_connections_are_reused_across_framings() -> None:
    async with upstream() as (client, raw):
        assert await fetch(client, b"/json") == (200, b'{"a":1}')
        assert await fetch(client, b"/chunked") == (200, b"abcdefg")
        assert await fetch(client, b"/early-hints") == (200, b'{"a":1}')  # 103 skipped
        # a reply to HEAD has no body whatever its Content-Length says; the next reply on the
        # connection is read as a reply, not as that body
        assert await fetch(client, b"/head", "HEAD") == (200, b"")
        assert await fetch(client, b"/json") == (200, b'{"a":1}')
    assert raw.connections == 1


async def test_a_reply_without_length_ends_when_the_upstream_closes() -> None:
    async with upstream() as (client, raw):
        assert await fetch(client, b"/until-close") == (200, b"all of it")
        assert await fetch(client, b"/json") == (200, b'{"a":1}')
    assert raw.connections == 2


@pytest.mark.parametrize(
    ("path", "error", "words"),
    [
        (b"/short", httpx.RemoteProtocolError, "before the end of its reply"),
        (b"/hang-up", httpx.RemoteProtocolError, "without sending a reply"),
        (b"/garbage", httpx.RemoteProtocolError, "invalid HTTP reply"),
    ],
)
async def test_broken_replies_raise_and_the_next_request_gets_a_new_connection(
    path: bytes, error: type[Exception], words: str
) -> None:
    async with upstream() as (client, raw):
        with pytest.raises(error, match=words):
            await fetch(client, path)
        assert await fetch(client, b"/json") == (200, b'{"a":1}')
    assert raw.connections == 2


async def test_a_second_reply_to_one_request_is_not_taken_for_the_next() -> None:
    async with upstream() as (client, raw):
        reply = await client.send("GET", b"/twice", [], b"")
        assert b"".join([chunk async for chunk in reply.aiter_raw()]) == b'{"a":1}'
        await reply.aclose()
        # the extra reply's head did not run into this one's
        assert reply.raw_headers == [
            (b"Content-Type", b"application/json"),
            (b"Content-Length", b"7"),
        ]
        assert await fetch(client, b"/reason") == (418, b"")  # not the extra JSON reply
    assert raw.connections == 2


async def test_a_slow_upstream_times_out_and_its_connection_is_dropped() -> None:
    async with upstream(read=0.2) as (client, raw):
        with pytest.raises(httpx.ReadTimeout):
            await fetch(client, b"/slow")
        assert await fetch(client, b"/json") == (200, b'{"a":1}')
    assert raw.connections == 2


async def test_a_closed_port_is_a_connect_error() -> None:
    sock = bind_socket()
    port = sock.getsockname()[1]
    sock.close()
    client = Http11Upstream(httpx.URL(f"http://127.0.0.1:{port}"), httpx.Timeout(5.0))
    with pytest.raises(httpx.ConnectError):
        await client.send("GET", b"/", [], b"")


async def test_a_line_break_in_a_header_value_is_refused_before_anything_is_sent() -> None:
    async with upstream() as (client, raw):
        for headers, target in (([(b"X-A", b"1\r\nX-B: 2")], b"/json"), ([], b"/json\nX")):
            with pytest.raises(httpx.LocalProtocolError):
                await client.send("GET", target, headers, b"")
    assert raw.requests == []


async def _small_json(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await receive()
    body = b'{"ok":true}'
    headers = [(b"content-type", b"application/json"), (b"content-length", b"11")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def test_requests_timed_onto_the_upstreams_keep_alive_timeout_never_fail() -> None:
    """uvicorn closes a connection idle for `timeout_keep_alive`; requests sent on kept
    connections just as it does (300 of them, in ~2 s) are sent again on a new connection,
    never failed (a spurious 502 through the proxy)."""
    keep_alive = 0.05
    with ServerThread(_small_json, timeout_keep_alive=keep_alive) as server:
        client = Http11Upstream(httpx.URL(server.url), httpx.Timeout(5.0))
        failures: list[str] = []
        statuses: list[int] = []

        async def worker(k: int) -> None:
            for n in range(30):
                # idle times spread around the server's keep-alive timeout
                await asyncio.sleep(keep_alive + ((k * 30 + n) % 3 - 1) / 1000)
                try:
                    reply = await client.send("POST", b"/a2a/jsonrpc", [], b"{}")
                    try:
                        body = b"".join([chunk async for chunk in reply.aiter_raw()])
                    finally:
                        await reply.aclose()
                    statuses.append(reply.status_code)
                    assert body == b'{"ok":true}'
                except httpx.HTTPError as exc:
                    failures.append(repr(exc))

        try:
            async with asyncio.timeout(30):
                await asyncio.gather(*(worker(k) for k in range(10)))
        finally:
            await client.aclose()
    assert failures == [], f"{len(failures)} of 300 failed: {failures[:3]}"
    assert statuses == [200] * 300


async def test_a_connection_idle_past_the_limit_is_not_reused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(upstream_module, "IDLE_LIMIT", 0.05)
    async with upstream() as (client, raw):
        assert await fetch(client, b"/json") == (200, b'{"a":1}')
        assert await fetch(client, b"/json") == (200, b'{"a":1}')
        assert raw.connections == 1
        await asyncio.sleep(0.1)
        assert await fetch(client, b"/json") == (200, b'{"a":1}')
        assert raw.connections == 2


async def test_a_kept_connection_the_upstream_closed_is_replaced_once_not_more() -> None:
    """A reused connection that closes without a reply is sent again once; a new connection
    that does the same is an error."""
    async with upstream() as (client, raw):
        assert await fetch(client, b"/json") == (200, b'{"a":1}')
        with pytest.raises(httpx.RemoteProtocolError):
            await fetch(client, b"/hang-up")
        # the reused connection, then one new connection: two requests, no third
        assert [r.split(b" ")[1] for r in raw.requests] == [b"/json", b"/hang-up", b"/hang-up"]
