"""The proxy's HTTP edge (issue 24, item 6) through the real recorder on loopback, by raw
sockets: trailers never become header fields (the client's, forwarded and recorded; the
agent's, recorded); a request head and a reply head are bounded (431, 502), their bytes not
held; a malformed chunked body or an unknown Transfer-Encoding is answered 400 at once, not
after the 30 s body timeout; the control prefix is matched on the path as sent."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from helpers import recorder_process
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.servers import ServerThread

pytestmark = pytest.mark.e2e

LIMIT = 10.0  # seconds: every wait of this module
MB = 1024 * 1024


async def echo(request: Request) -> Response:
    body = await request.body()
    return JSONResponse(
        {
            "path": request.url.path,
            "raw_path": request.scope["raw_path"].decode("latin-1"),
            "headers": [[n.decode("latin-1"), v.decode("latin-1")] for n, v in request.headers.raw],
            "body": body.decode("latin-1"),
        }
    )


ECHO = Starlette(routes=[Route("/{path:path}", echo, methods=["GET", "POST"])])


@contextmanager
def recorder_in_front_of(upstream_url: str, out: Path) -> Iterator[ProxyServer]:
    proxy = create_proxy_app(upstream_url, out=out)
    with ProxyServer(proxy) as server:
        yield server


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=LIMIT)
    sock.settimeout(LIMIT)
    return sock


def read_reply(sock: socket.socket) -> bytes:
    """One reply framed by Content-Length (or up to the close), bounded by LIMIT per read."""
    data = b""
    for _ in range(10_000):
        head, found, rest = data.partition(b"\r\n\r\n")
        if found:
            length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
            if length is not None and len(rest) >= int(length.group(1)):
                return data
        try:
            part = sock.recv(65536)
        except ConnectionResetError:
            part = b""
        if not part:
            return data
        data += part
    raise AssertionError("no end of the reply")


def recorded_text(out: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(out.glob("*.http")))


# --------------------------------------------------------------------------- trailers


def test_request_trailers_are_neither_forwarded_nor_recorded(tmp_path: Path) -> None:
    with (
        ServerThread(ECHO) as upstream,
        recorder_in_front_of(upstream.url, tmp_path) as proxy,
        connect(proxy.port) as conn,
    ):
        conn.sendall(
            b"POST /a2a/jsonrpc HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\n"
            b"Transfer-Encoding: chunked\r\nTrailer: Authorization\r\n\r\n"
            b"5\r\nhello\r\n0\r\nAuthorization: Bearer slipped-past-9z\r\n"
            b"X-Trailing: t\r\n\r\n"
        )
        reply = read_reply(conn)
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n"), reply
    seen = reply.partition(b"\r\n\r\n")[2]
    assert b'"body":"hello"' in seen
    assert b"slipped-past-9z" not in seen and b"x-trailing" not in seen.lower()
    text = recorded_text(tmp_path)
    assert "hello" in text
    assert "slipped-past-9z" not in text and "X-Trailing" not in text


class RawUpstream(socketserver.ThreadingTCPServer):
    """Answers every request with `reply` (exact bytes), then closes."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, reply: bytes) -> None:
        self.reply = reply

        class Handler(socketserver.BaseRequestHandler):
            def handle(handler) -> None:  # (`self` is the server's, around it)
                conn: socket.socket = handler.request
                conn.settimeout(LIMIT)
                data = b""
                while b"\r\n\r\n" not in data:
                    part = conn.recv(65536)
                    if not part:
                        return
                    data += part
                length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", data)
                body = data.partition(b"\r\n\r\n")[2]
                while length is not None and len(body) < int(length.group(1)):
                    body += conn.recv(65536)
                with contextlib.suppress(OSError):  # (the proxy hung up on a reply too large)
                    conn.sendall(self.reply)

        super().__init__(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> RawUpstream:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()
        self.server_close()


def test_reply_trailers_are_not_recorded_as_reply_headers(tmp_path: Path) -> None:
    reply = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
        b"Connection: close\r\n\r\n5\r\nworld\r\n0\r\nX-Agent-Trailer: never-sent-4q\r\n\r\n"
    )
    with RawUpstream(reply) as upstream, recorder_in_front_of(upstream.url, tmp_path) as proxy:
        got = httpx.get(f"http://127.0.0.1:{proxy.port}/a2a/rest/tasks", timeout=LIMIT)
    assert got.status_code == 200 and got.text == "world"
    assert "x-agent-trailer" not in got.headers
    text = recorded_text(tmp_path)
    assert "world" in text
    assert "never-sent-4q" not in text and "X-Agent-Trailer" not in text


# --------------------------------------------------------------------------- bounded heads


def rss(pid: int) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmRSS:\s+(\d+) kB", text)
    assert found is not None
    return int(found.group(1)) * 1024


def test_a_10_mb_request_head_is_answered_431_and_not_held(tmp_path: Path) -> None:
    args = ("--upstream", "http://127.0.0.1:9", "--out", str(tmp_path / "out"))
    with recorder_process(*args) as (process, url):
        port = int(url.rsplit(":", 1)[1])
        before = rss(process.pid)
        with connect(port) as conn:
            sent = 0
            try:
                conn.sendall(b"GET /a2a/rest/tasks HTTP/1.1\r\nHost: h\r\nX-Big: ")
                for _ in range(10 * 16):  # 10 MB of one header line, 64 KiB at a time
                    conn.sendall(b"a" * 65536)
                    sent += 65536
            except (BrokenPipeError, ConnectionResetError):
                pass  # the recorder answered and closed: the rest is not read
            reply = read_reply(conn)
        grown = rss(process.pid) - before
    assert reply.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"), reply[:200]
    assert grown < 8 * MB, grown  # (the head is not kept: before, it held all 10 MB and more)


def test_a_10_mb_reply_head_is_a_502_and_not_recorded(tmp_path: Path) -> None:
    reply = b"HTTP/1.1 200 OK\r\nX-Big: " + b"b" * (10 * MB) + b"\r\nContent-Length: 2\r\n\r\nok"
    with RawUpstream(reply) as upstream, recorder_in_front_of(upstream.url, tmp_path) as proxy:
        got = httpx.get(f"http://127.0.0.1:{proxy.port}/a2a/rest/tasks", timeout=LIMIT)
    assert got.status_code == 502, got.text
    assert "reply head is larger than" in got.text
    assert "bbbbbbbb" not in recorded_text(tmp_path)


# --------------------------------------------------------------------------- framing


@pytest.mark.parametrize(
    "request_bytes",
    [
        # a chunk size that is no number
        b"POST /a2a/jsonrpc HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        # a chunk longer than its size says
        b"POST /a2a/jsonrpc HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\nabcdef\r\n",
        # a transfer coding the proxy cannot read
        b"POST /a2a/jsonrpc HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\nabc",
    ],
    ids=["bad-size", "overlong-chunk", "unknown-coding"],
)
def test_malformed_framing_is_answered_400_at_once(tmp_path: Path, request_bytes: bytes) -> None:
    # the recorder's body timeout is 30 s: the 400 must come long before it
    args = ("--upstream", "http://127.0.0.1:9", "--out", str(tmp_path / "out"))
    with recorder_process(*args) as (_, url):
        port = int(url.rsplit(":", 1)[1])
        with connect(port) as conn:
            started = time.monotonic()
            conn.sendall(request_bytes)
            reply = read_reply(conn)
            took = time.monotonic() - started
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n"), reply
    assert took < LIMIT, took


# --------------------------------------------------------------------------- control prefix


def test_the_control_prefix_is_matched_on_the_path_as_sent(tmp_path: Path) -> None:
    with ServerThread(ECHO) as upstream, recorder_in_front_of(upstream.url, tmp_path) as proxy:
        base = f"http://127.0.0.1:{proxy.port}"
        with connect(proxy.port) as conn:
            conn.sendall(b"GET /%5Frecorder/status HTTP/1.1\r\nHost: h\r\n\r\n")
            forwarded = read_reply(conn)
        own = httpx.get(f"{base}/_recorder/status", timeout=LIMIT)
    assert forwarded.startswith(b"HTTP/1.1 200 OK\r\n"), forwarded
    assert b'"raw_path":"/%5Frecorder/status"' in forwarded  # the agent's answer
    assert "recorded" in own.json()  # the recorder's own


# --------------------------------------------------------------------------- header bytes


def test_header_bytes_are_recorded_as_forwarded(tmp_path: Path) -> None:
    utf8 = "caf\u00e9 \u2713".encode()
    with (
        ServerThread(ECHO) as upstream,
        recorder_in_front_of(upstream.url, tmp_path) as proxy,
        connect(proxy.port) as conn,
    ):
        conn.sendall(
            b"GET /a2a/rest/tasks HTTP/1.1\r\nHost: h\r\nX-Name: " + utf8 + b"\r\n"
            b"X-Latin: caf\xe9\r\n\r\n"
        )
        reply = read_reply(conn)
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n"), reply
    # forwarded as sent (the echo shows the bytes it got, read as Latin-1)
    got = dict(json.loads(reply.partition(b"\r\n\r\n")[2])["headers"])
    assert got["x-name"].encode("latin-1") == utf8
    assert got["x-latin"].encode("latin-1") == b"caf\xe9"
    data = b"".join(p.read_bytes() for p in tmp_path.glob("*.http"))
    assert b"\nX-Name: " + utf8 + b"\n" in data  # the same bytes (not "cafÃ© â\x9c\x93")
    # obs-text that is no UTF-8 is read as Latin-1: its meaning kept, as the file's UTF-8
    assert "\nX-Latin: caf\u00e9\n".encode() in data


@pytest.mark.parametrize("raw", [b"plain", "caf\u00e9 \u2713".encode(), b"caf\xe9", b"\xff\xfe"])
def test_the_player_sends_a_recorded_header_value_as_its_bytes(raw: bytes) -> None:
    from recorder.format.model import header_bytes, header_text

    if raw == b"caf\xe9" or raw == b"\xff\xfe":
        assert header_text(raw) == raw.decode("latin-1")  # (no UTF-8: its Latin-1 meaning)
    else:
        assert header_bytes(header_text(raw)) == raw
