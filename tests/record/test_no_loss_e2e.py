"""Nothing recorded is lost (issue 24): the real kit, the real `recorder record` CLI, and a
client on loopback; what the status and the summary say is what is on disk."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx
import pytest
from helpers import DIFF, recorder_process, rpc, user_message

from recorder.httpfile import load
from recorder.kit import KitServer

pytestmark = pytest.mark.e2e

LIMIT = 60.0  # seconds, for every command and wait
# test node ids of one module: 70+ characters in common, the test's name past a 60-character cut
PREFIX = "tests/integration/test_reviews_of_a_long_module_name.py::TestTheReviewer::"
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}


def on_disk(folder: Path) -> int:
    return sum(len(load(path).exchanges) for path in folder.glob("*.http"))


def settled(http: httpx.Client, url: str) -> dict[str, object]:
    """The status once nothing is pending (bounded)."""
    deadline = time.monotonic() + LIMIT
    while True:
        status: dict[str, object] = http.get(url + "/_recorder/status").json()
        if status["pending"] == 0 or time.monotonic() > deadline:
            return status
        time.sleep(0.02)


@pytest.mark.parametrize("mode", ["replace", "new"])
def test_thirty_scenarios_with_a_long_common_prefix_are_all_on_disk(
    kit: KitServer, tmp_path: Path, mode: str
) -> None:
    assert len(PREFIX) >= 70
    out = tmp_path / "out"
    args = ("--upstream", kit.base_url, "--out", str(out), "--mode", mode)
    sent = 0
    with (
        recorder_process(*args, limit=LIMIT) as (process, url),
        httpx.Client(timeout=LIMIT) as http,
    ):
        for n in range(30):
            name = f"{PREFIX}test_case_number_{n}"
            assert http.post(url + "/_recorder/scenario", json={"name": name}).status_code == 200
            for turn in range(3):
                body = rpc(turn, "SendMessage", user_message(f"m-{n}-{turn}", DIFF))
                reply = http.post(url + "/a2a/jsonrpc", content=body, headers=HEADERS)
                assert reply.status_code == 200
                sent += 1
        assert http.delete(url + "/_recorder/scenario").status_code == 200
        status = settled(http, url)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, err
    assert sent == 90
    assert status["recorded"] == sent and status["failed"] == 0
    assert on_disk(out) == sent
    assert len(list(out.glob("*.http"))) == 30
    assert "stopped; 90 exchanges recorded in 30 files" in err
    assert "recorded again in place" not in err
