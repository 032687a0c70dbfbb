"""Re-recording a user's scenario with `recorder record` (issue 15): the real kit, the real
recorder CLI, and the a2a-sdk client of docs/ask_and_review.py (a fresh uuid for every
JSON-RPC id and messageId), which sends no scenario header: `--scenario` names it."""

from __future__ import annotations

import difflib
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import REPO, TRANSCRIPTS, recorder_process

from recorder.disk.transcripts import load
from recorder.kit import KitServer, start_kit

pytestmark = pytest.mark.e2e

CLIENT = REPO / "docs" / "ask_and_review.py"
NAME = "03-ask-and-review.http"
LIMIT = 30.0  # seconds, for every command and wait


@pytest.fixture
def kit() -> Iterator[KitServer]:
    with start_kit(port=0) as server:
        yield server


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """A folder that already holds two transcripts: the scenario's file is number 3."""
    folder = tmp_path / "examples"
    folder.mkdir()
    for name in ("01-agent-card.http", "02-message-reply.http"):
        shutil.copyfile(TRANSCRIPTS / name, folder / name)
    return folder


def record(
    kit: KitServer,
    out: Path,
    *options: str,
    scenario: str = "ask-and-review",
    stop: signal.Signals = signal.SIGINT,
) -> str:
    """`recorder record --scenario ask-and-review OPTIONS` while the client runs once through
    it, then Ctrl-C (or `stop`); returns its stderr (exit status 0 checked)."""
    args = ("--upstream", kit.base_url, "--out", str(out), "--scenario", scenario, *options)
    with recorder_process(*args, limit=LIMIT) as (process, url):
        client = subprocess.run(
            [sys.executable, str(CLIENT), url],
            capture_output=True,
            text=True,
            timeout=LIMIT,
            check=False,
        )
        assert client.returncode == 0, client.stderr
        assert "Reviewed 1 file" in client.stdout
        process.send_signal(stop)
        _, err = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, err
    return err


def names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def test_re_recording_a_scenario_keeps_its_file_name_and_bytes(kit: KitServer, out: Path) -> None:
    record(kit, out)
    assert names(out) == ["01-agent-card.http", "02-message-reply.http", NAME]
    first = (out / NAME).read_bytes()
    operations = [exchange.title for exchange in load(out / NAME)]
    assert operations == ["GetAgentCard", "SendMessage", "SendMessage", "GetTask"]
    for stop in (signal.SIGINT, signal.SIGTERM):  # twice: the default mode is replace
        err = record(kit, out, stop=stop)
        assert f"{out / NAME} recorded again in place (unchanged)" in err
        assert "stopped; 4 exchanges recorded in 1 file" in err
        assert names(out) == ["01-agent-card.http", "02-message-reply.http", NAME]
        assert (out / NAME).read_bytes() == first  # git diff: empty


def test_a_changed_reply_is_the_only_change(kit: KitServer, out: Path) -> None:
    record(kit, out)
    path = out / NAME
    recorded = path.read_text(encoding="utf-8")
    # the agent used to answer otherwise: the previous file says so in the review's text
    # (the SendMessage reply and the GetTask reply)
    old_line = '"text": "Reviewed 1 file: 3 comments.'
    assert recorded.count(old_line) == 2
    before = recorded.replace(old_line, '"text": "Reviewed 1 file: 2 comments.')
    path.write_text(before, encoding="utf-8")
    err = record(kit, out, "--mode", "replace")
    assert f"{path} recorded again in place (changed)" in err
    after = path.read_text(encoding="utf-8")
    changed = [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert len(changed) == 4, changed
    assert [line[0] for line in changed] == ["-", "+", "-", "+"], changed
    assert all('"text": "Reviewed 1 file: 2 comments.' in line for line in changed[::2])
    assert all('"text": "Reviewed 1 file: 3 comments.' in line for line in changed[1::2])
    assert after == recorded  # the ids, times and Date headers are the recorded ones


def test_once_keeps_the_file_and_new_adds_one(kit: KitServer, out: Path) -> None:
    record(kit, out)
    first = (out / NAME).read_bytes()
    err = record(kit, out, "--mode", "once")
    assert "4 exchanges not recorded: --mode once kept their files" in err
    assert names(out) == ["01-agent-card.http", "02-message-reply.http", NAME]
    assert (out / NAME).read_bytes() == first
    # a scenario with no file yet is recorded under once too
    record(kit, out, "--mode", "once", scenario="second-take")
    err = record(kit, out, "--mode", "new")
    assert "recorded again in place" not in err
    assert names(out) == [
        "01-agent-card.http",
        "02-message-reply.http",
        NAME,
        "04-second-take.http",
        "05-ask-and-review.http",
    ]
    assert (out / NAME).read_bytes() == first
