"""Ctrl-C of `recorder record`: quick, quiet, no traceback (issue 14)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.e2e


def test_ctrl_c_stops_the_recorder_quickly_and_quietly(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "from recorder.cli import main; main()", "record"]
    command += ["--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:0"]
    command += ["--out", str(tmp_path / "out")]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stderr is not None
            first = process.stderr.readline()
            url = first.split()[4].rstrip(",")
            deadline = time.monotonic() + 10
            while True:  # serving (uvicorn's signal handlers are in place)
                try:
                    httpx.get(url + "/_recorder/status", timeout=1)
                    break
                except httpx.HTTPError:
                    assert time.monotonic() < deadline, "the recorder did not start"
                    time.sleep(0.05)
            started = time.monotonic()
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=10)
            took = time.monotonic() - started
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, err
    assert took < 1.0
    assert out == ""
    assert "Traceback" not in err and "ERROR" not in err, err
    assert err.endswith("recorder record: stopped; 0 exchanges recorded in 0 files\n"), err
