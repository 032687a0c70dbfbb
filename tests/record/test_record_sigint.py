"""Ctrl-C of `recorder record`: quick, quiet, no traceback (issue 14); `-q` (issue 13)."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import recorder_process

from recorder.servers import ServerThread

pytestmark = [pytest.mark.e2e, pytest.mark.serial]  # Ctrl-C timed to a second: run alone


def test_ctrl_c_stops_the_recorder_quickly_and_quietly(tmp_path: Path) -> None:
    args = ("--upstream", "http://127.0.0.1:9", "--out", str(tmp_path / "out"))
    with recorder_process(*args) as (process, _):
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
        took = time.monotonic() - started
    assert process.returncode == 0, err
    assert took < 1.0
    assert out == ""
    assert "Traceback" not in err and "ERROR" not in err, err
    assert err.endswith("recorder record: stopped; 0 exchanges recorded in 0 files\n"), err


async def _json_agent(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    while (await receive()).get("more_body"):
        pass
    body = b'{"jsonrpc":"2.0","id":1,"result":{"ok":true}}'
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@pytest.mark.parametrize("quiet", [False, True])
def test_quiet_leaves_out_the_line_per_exchange_not_the_summary(
    tmp_path: Path, quiet: bool
) -> None:
    with ServerThread(_json_agent) as agent:
        args = ("--upstream", agent.url, "--out", str(tmp_path / "out")) + (
            ("-q",) if quiet else ()
        )
        with recorder_process(*args) as (process, url):
            for n in range(2):
                reply = httpx.post(url + "/a2a/jsonrpc", json={"id": n}, timeout=5)
                assert reply.json()["result"] == {"ok": True}
            for _ in range(200):  # both written (the status endpoint says so)
                if httpx.get(url + "/_recorder/status", timeout=1).json()["recorded"] == 2:
                    break
                time.sleep(0.02)
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=10)
    assert process.returncode == 0, err
    lines = [line for line in err.splitlines() if line.startswith("recorder record: recorded ")]
    assert len(lines) == (0 if quiet else 2), err
    assert err.endswith("recorder record: stopped; 2 exchanges recorded in 2 files\n"), err
