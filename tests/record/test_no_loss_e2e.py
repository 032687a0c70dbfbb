"""Nothing recorded is lost (issue 24): the real kit, the real `recorder record` CLI, and a
client on loopback; what the status and the summary say is what is on disk."""

from __future__ import annotations

import re
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from factories import make_exchange
from helpers import DIFF, recorder_process, rpc, user_message

from recorder.disk.transcripts import load
from recorder.format.httpfile import dumps
from recorder.format.model import Transcript
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


def test_two_recorders_on_one_scenario_under_load_lose_nothing(
    kit: KitServer, tmp_path: Path
) -> None:
    # two `recorder record`s on one --out, one scenario whose file is there already (the
    # default --mode replace), four clients at once: every reply a client got is on disk once
    out = tmp_path / "out"
    out.mkdir()
    earlier = Transcript(exchanges=(make_exchange(title="from an earlier run"),))
    (out / "01-dup.http").write_text(dumps(earlier))
    args = ("--upstream", kit.base_url, "--out", str(out))
    with (
        recorder_process(*args, limit=LIMIT) as (first, first_url),
        recorder_process(*args, limit=LIMIT) as (second, second_url),
    ):
        errors: list[BaseException] = []
        sent: list[str] = []

        def client(url: str, which: int) -> None:
            headers = {**HEADERS, "Recorder-Scenario": "dup"}
            try:
                with httpx.Client(timeout=LIMIT) as http:
                    for n in range(25):
                        message = f"c{which}-{n}"
                        body = rpc(n, "SendMessage", user_message(message, DIFF))
                        reply = http.post(url + "/a2a/jsonrpc", content=body, headers=headers)
                        assert reply.status_code == 200
                        sent.append(message)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        urls = [first_url, second_url, first_url, second_url]
        threads = [threading.Thread(target=client, args=(url, n)) for n, url in enumerate(urls)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(LIMIT)
        assert not errors
        with httpx.Client(timeout=LIMIT) as http:
            recorded = [settled(http, url)["recorded"] for url in (first_url, second_url)]
        for process in (first, second):
            process.send_signal(signal.SIGINT)
        errs = [process.communicate(timeout=LIMIT)[1] for process in (first, second)]
    assert [process.returncode for process in (first, second)] == [0, 0], errs
    assert len(sent) == 100 and recorded[0] + recorded[1] == 100
    found = Counter(
        exchange.request.json["params"]["message"]["messageId"]
        for path in out.glob("*.http")
        for exchange in load(path).exchanges
        if exchange.request.json is not None
    )
    assert found == Counter(sent)  # each exchange in exactly one file


def test_each_line_says_the_replys_status_and_the_exchanges_duration(
    kit: KitServer, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    args = ("--upstream", kit.base_url, "--out", str(out))
    with (
        recorder_process(*args, limit=LIMIT) as (process, url),
        httpx.Client(timeout=LIMIT) as http,
    ):
        body = rpc(1, "SendMessage", user_message("m-1", DIFF))
        assert http.post(url + "/a2a/jsonrpc", content=body, headers=HEADERS).status_code == 200
        missing = rpc(2, "GetTask", {"id": "no-such-task"})
        reply = http.post(url + "/a2a/jsonrpc", content=missing, headers=HEADERS)
        assert reply.json()["error"]["code"] == -32001
        streaming = rpc(3, "SendStreamingMessage", user_message("m-3", DIFF))
        with http.stream(
            "POST",
            url + "/a2a/jsonrpc",
            content=streaming,
            headers={**HEADERS, "Accept": "text/event-stream"},
        ) as stream:
            frames = sum(1 for line in stream.iter_lines() if line.startswith("data:"))
        assert frames >= 2
        settled(http, url)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, err
    lines = [line for line in err.splitlines() if line.startswith("recorder record: recorded ")]
    assert len(lines) == 3, err
    number = r" +\d+(\.\d)? ms  "
    start = "recorder record: recorded "
    assert re.fullmatch(start + "200 " + number + "SendMessage -> .*", lines[0])
    assert re.fullmatch(start + "200 -32001" + number + "GetTask -> .*", lines[1])
    stream_line = start + f"200 {frames} frames" + number
    assert re.fullmatch(stream_line + "SendStreamingMessage -> .*", lines[2]), lines[2]
    assert len({line.index(" ms  ") for line in lines}) == 1  # one column
