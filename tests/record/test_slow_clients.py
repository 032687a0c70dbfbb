"""Slow clients on loopback (issue 13, item 8): a request whose head or body stalls is dropped
after `client_timeout` (408 where a reply can still be sent), a silent or idle connection
after the keep-alive bound, and the proxy keeps serving everyone else meanwhile."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.servers import ServerThread

pytestmark = pytest.mark.e2e

CLIENT_TIMEOUT = 0.5
KEEP_ALIVE = 0.5


async def echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The upstream: 200 with a small JSON body."""
    if scope["type"] != "http":
        return
    body = b'{"ok": true}'
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


@contextmanager
def proxy_server(out: Path) -> Iterator[ProxyServer]:
    with ServerThread(echo) as upstream:
        proxy = create_proxy_app(upstream.url, out=out, client_timeout=CLIENT_TIMEOUT)
        with ProxyServer(proxy, keep_alive=KEEP_ALIVE) as server:
            yield server


def connect(server: ProxyServer) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.settimeout(5)  # every read below is bounded
    return sock


def read_until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the proxy sends until it closes the connection, and when it closed."""
    data = b""
    while True:
        try:
            part = sock.recv(65536)
        except ConnectionResetError:
            part = b""
        if not part:
            return data, time.monotonic()
        data += part


def served(server: ProxyServer) -> int:
    return httpx.post(server.url + "/a2a", content=b"{}", timeout=5).status_code


def test_a_stalled_body_gets_408_and_the_proxy_keeps_serving(tmp_path: Path) -> None:
    with proxy_server(tmp_path) as server, connect(server) as stalled:
        head = b'POST /a2a HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"part'
        stalled.sendall(head)
        started = time.monotonic()
        assert served(server) == 200  # while the body is stalled
        reply, closed = read_until_closed(stalled)
        assert CLIENT_TIMEOUT * 0.8 <= closed - started < CLIENT_TIMEOUT + 3
        head_text, _, body = reply.partition(b"\r\n\r\n")
        assert head_text.startswith(b"HTTP/1.1 408"), reply
        assert b"connection: close" in head_text.lower()
        error = json.loads(body)["error"]
        assert error["status"] == "REQUEST_TIMEOUT"
        assert "--client-timeout" in error["message"]
        assert served(server) == 200
    # only the two served requests were recorded, not the stalled one
    assert len(list(tmp_path.glob("*.http"))) == 2


def test_a_stalled_head_gets_408_and_its_connection_closed(tmp_path: Path) -> None:
    with proxy_server(tmp_path) as server, connect(server) as stalled:
        stalled.sendall(b"POST /a2a HTTP/1.1\r\nHost: x\r\nContent-Le")
        started = time.monotonic()
        assert served(server) == 200
        reply, closed = read_until_closed(stalled)
        assert CLIENT_TIMEOUT * 0.8 <= closed - started < CLIENT_TIMEOUT + 3
        assert reply.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), reply


def test_a_silent_connection_is_closed_after_the_keep_alive_bound(tmp_path: Path) -> None:
    with proxy_server(tmp_path) as server, connect(server) as silent:
        started = time.monotonic()
        reply, closed = read_until_closed(silent)
        assert reply == b""
        assert KEEP_ALIVE * 0.8 <= closed - started < KEEP_ALIVE + 3


def test_an_idle_keep_alive_connection_is_closed_after_the_bound(tmp_path: Path) -> None:
    with proxy_server(tmp_path) as server, connect(server) as idle:
        idle.sendall(b"POST /a2a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        first = idle.recv(65536)
        assert first.startswith(b"HTTP/1.1 200"), first
        started = time.monotonic()
        rest, closed = read_until_closed(idle)
        assert rest == b"" or b"HTTP/1.1 200" not in rest
        assert closed - started < KEEP_ALIVE + 3


def test_the_cli_offers_the_client_bounds() -> None:
    from click.testing import CliRunner

    from recorder.cli import main

    result = CliRunner().invoke(main, ["record", "--help"])
    assert "--client-timeout" in result.output
    assert "--keep-alive" in result.output
