"""Agent-card fetches folded into one file (issue 28): a client run that fetches the card
three times before its first call makes one card file, not three; the next run's card
fetches (after that call) make their own. The real kit, the real recorder, a client on
loopback; the folded file replays alone."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from helpers import CLI, DIFF, recorder_process, rpc, user_message

from recorder.disk.transcripts import load
from recorder.kit import KitServer
from recorder.record.proxy.folding import fold_text

pytestmark = pytest.mark.e2e

LIMIT = 60.0
CARD = "/.well-known/agent-card.json"
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}


def client_run(url: str, n: int) -> None:
    """As an A2A client run: the card fetched three times, then one message."""
    with httpx.Client(timeout=LIMIT) as http:
        for _ in range(3):
            assert http.get(url + CARD).status_code == 200
        body = rpc(1, "SendMessage", user_message(f"m-{n}", DIFF))
        assert http.post(url + "/a2a/jsonrpc", content=body, headers=HEADERS).status_code == 200


def test_a_client_runs_card_fetches_make_one_file(kit: KitServer, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ("--upstream", kit.base_url, "--out", str(out))
    with recorder_process(*args, limit=LIMIT) as (process, url):
        client_run(url, 1)
        client_run(url, 2)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, err
    names = sorted(path.name for path in out.glob("*.http"))
    assert names == [
        "01-get-agent-card.http",
        "02-send-message.http",
        "03-get-agent-card.http",
        "04-send-message.http",
    ], err
    assert "stopped; 8 exchanges recorded in 4 files" in err
    for name in ("01-get-agent-card.http", "03-get-agent-card.http"):
        exchanges = load(out / name).exchanges
        assert [e.title for e in exchanges] == ["GetAgentCard"] * 3
    # the folded file replays alone
    played = subprocess.run(
        [*CLI, "play", "--agent", kit.base_url, str(out / "01-get-agent-card.http")],
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )
    assert played.returncode == 0, played.stdout + played.stderr


def test_fold_text_leaves_out_the_date_only() -> None:
    one = "GET / HTTP/1.1\nHost: a\n\nHTTP/1.1 200 OK\nDate: Mon, 1 Jan\nServer: x\n\n{}\n"
    two = one.replace("Mon, 1 Jan", "Tue, 2 Jan")
    assert fold_text(one) == fold_text(two) != fold_text(one.replace("{}", "[]"))
    assert "Date:" not in fold_text(one) and "Server: x" in fold_text(one)
