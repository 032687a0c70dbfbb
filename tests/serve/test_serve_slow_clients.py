"""The stand-in's slow clients (issue 34, item 9): a connection that stays silent before its
first request, or whose request head never ends (slowloris), is closed as the recording
proxy closes it: uvicorn alone closed an idle connection only after a reply, so both were held
open for good. Raw sockets, on loopback, against `recorder serve`'s own uvicorn options."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx
import pytest

from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve import load_stand_in
from recorder.serve.server import server_options
from recorder.servers import ServerThread

pytestmark = pytest.mark.e2e

GOLDENS = Path(__file__).parent.parent.parent / "transcripts"
KEEP_ALIVE = 5.0  # seconds: the recording proxy's `--keep-alive`, serve's bound too
WAIT = KEEP_ALIVE + 10.0  # seconds a read below may block: well past the bound it waits for


def read_until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """What the server sends until it closes the connection, and how long that took
    (socket.timeout when it is still open after WAIT seconds)."""
    data, started = b"", time.monotonic()
    sock.settimeout(WAIT)
    while chunk := sock.recv(65536):
        data += chunk
    return data, time.monotonic() - started


def test_serve_closes_a_connection_silent_before_its_first_request() -> None:
    stand_in = load_stand_in([str(GOLDENS)], DEFAULT_RULES)
    with ServerThread(stand_in, **server_options()) as server:
        with socket.create_connection((server.host, server.port), timeout=5) as idle:
            data, waited = read_until_closed(idle)
        assert data == b""
        assert KEEP_ALIVE - 0.5 <= waited < KEEP_ALIVE + 5
        # and everyone else is served meanwhile, and after
        card = httpx.get(f"{server.url}/.well-known/agent-card.json", timeout=5)
        assert card.status_code == 200


def test_serve_answers_a_request_head_that_never_ends_408_and_closes() -> None:
    from recorder.servers import HEAD_TIMEOUT, bounded_options

    # serve's options with a shorter head bound (its default, HEAD_TIMEOUT, is the proxy's)
    assert HEAD_TIMEOUT == 30.0 and server_options()["timeout_keep_alive"] == KEEP_ALIVE
    stand_in = load_stand_in([str(GOLDENS)], DEFAULT_RULES)
    options = {**server_options(), **bounded_options(head=1.0)}
    with ServerThread(stand_in, **options) as server:
        with socket.create_connection((server.host, server.port), timeout=5) as slow:
            started = time.monotonic()
            slow.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n")
            time.sleep(0.5)  # (the slow client's pace, not a wait for the server)
            slow.sendall(b"X-Slow: y\r\n")  # a header line: the bound is from the first byte
            data, _ = read_until_closed(slow)
            waited = time.monotonic() - started
        assert data.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), data
        # (asyncio may fire a timer up to its clock resolution early: 0.9998 s was seen)
        assert 0.95 <= waited < 1.0 + 5
        card = httpx.get(f"{server.url}/.well-known/agent-card.json", timeout=5)
        assert card.status_code == 200
