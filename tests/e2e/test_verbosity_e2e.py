"""-q and -v of the commands that serve (issue 38): `kit`, `record`, `serve`, started as a
user starts them (a child process), on free loopback ports, stopped with Ctrl-C."""

from __future__ import annotations

import signal
import subprocess

import httpx
import pytest
from helpers import (
    TRANSCRIPTS,
    announced_address,
    cli_process,
    recorder_process,
    start_test_kit,
    wait_until_serving,
)

from recorder.servers import bind_socket

pytestmark = pytest.mark.e2e

LIMIT = 10.0
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}


def _free_port() -> int:
    sock = bind_socket("127.0.0.1", 0)
    try:
        return int(sock.getsockname()[1])
    finally:
        sock.close()


def _stop(process: subprocess.Popen[str]) -> tuple[str, str]:
    """Ctrl-C; the rest of stdout and stderr once it has ended."""
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, err
    return out, err


def test_kit_quiet_says_nothing_and_serves() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    with cli_process("kit", "--listen", url.removeprefix("http://"), "--no-grpc", "-q") as kit:
        wait_until_serving(url)
        card = httpx.get(url + "/.well-known/agent-card.json", headers=HEADERS, timeout=LIMIT)
        assert card.status_code == 200
        assert _stop(kit) == ("", "")


def test_kit_verbose_logs_each_request() -> None:
    with cli_process("kit", "--listen", "127.0.0.1:0", "--no-grpc", "-v") as kit:
        assert kit.stdout is not None
        url = announced_address(kit.stdout.readline())
        httpx.get(url + "/.well-known/agent-card.json", headers=HEADERS, timeout=LIMIT)
        out, _ = _stop(kit)
    assert '"GET /.well-known/agent-card.json HTTP/1.1" 200' in out  # (uvicorn's access log)


def test_kit_grpc_listen_and_its_old_spelling() -> None:
    pytest.importorskip("grpc")
    for spelling in ("--grpc-listen", "--grpc-port"):
        port = _free_port()
        value = f"127.0.0.1:{port}" if spelling == "--grpc-listen" else str(port)
        with cli_process("kit", "--listen", "127.0.0.1:0", spelling, value) as kit:
            assert kit.stdout is not None
            lines = [kit.stdout.readline() for _ in range(6)]
            grpc_row = next(line for line in lines if line.strip().startswith("gRPC"))
            assert announced_address(grpc_row) == f"127.0.0.1:{port}", spelling
            _stop(kit)


def test_record_verbose_says_each_requests_scenario(tmp_path: object) -> None:
    kit = start_test_kit()
    try:
        with recorder_process("--agent", kit.base_url, "-o", str(tmp_path), "-v") as (proxy, url):
            httpx.post(url + "/_recorder/scenario", json={"name": "card"}, timeout=LIMIT)
            httpx.get(url + "/.well-known/agent-card.json", headers=HEADERS, timeout=LIMIT)
            httpx.delete(url + "/_recorder/scenario", timeout=LIMIT)
            httpx.get(url + "/.well-known/agent-card.json", headers=HEADERS, timeout=LIMIT)
            _, err = _stop(proxy)
    finally:
        kit.stop()
    lines = err.splitlines()
    assert "recorder record: scenario card started" in lines
    assert "recorder record: GET /.well-known/agent-card.json: scenario card" in lines
    assert "recorder record: scenario card ended" in lines
    assert (
        "recorder record: GET /.well-known/agent-card.json: scenario none (grouped by id lineage)"
        in lines
    )


def test_serve_quiet_says_nothing_and_serves() -> None:
    address = f"127.0.0.1:{_free_port()}"
    transcript = str(TRANSCRIPTS / "01-agent-card.http")
    with cli_process("serve", transcript, "--listen", address, "-q") as serve:
        wait_until_serving("http://" + address)
        card = httpx.get(
            f"http://{address}/.well-known/agent-card.json", headers=HEADERS, timeout=LIMIT
        )
        assert card.status_code == 200
        assert _stop(serve) == ("", "")
