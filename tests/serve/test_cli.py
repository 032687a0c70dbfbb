"""`recorder serve`'s input errors (one line, exit 2, before it listens), and `--pace` on a
stream whose frames carry their times."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from helpers import TRANSCRIPTS

from recorder import Exchange, Headers, Request, Response, SseEvent, Transcript, dump
from recorder.cli import main
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve import load_stand_in
from recorder.serve.server import server_options
from recorder.servers import ServerThread


@pytest.mark.parametrize(
    ("args", "files", "message"),
    [
        (
            ["bad/"],
            {"bad/01-bad.http": "# recorder-format: 1\n\n### x\nGET /a HTTP/1.1\n\nHTTP/1.1 abc\n"},
            "recorder serve: bad/01-bad.http:6: invalid status line",
        ),
        (["missing/"], {}, "recorder serve: missing/: no such file or folder\n"),
        (["empty/"], {"empty/notes.txt": "x"}, "recorder serve: no .http transcripts in empty/\n"),
        (
            [str(TRANSCRIPTS), "--rules", "rules.yaml"],
            {"rules.yaml": "generated_fields: [1\n"},
            "recorder serve: rules.yaml:2: not valid YAML",
        ),
        (
            [str(TRANSCRIPTS), "--listen", "nowhere"],
            {},
            "recorder serve: expected HOST:PORT such as 127.0.0.1:41241, got 'nowhere'\n",
        ),
    ],
    ids=["unparsable", "missing", "empty", "bad-rules", "bad-listen"],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str],
    files: dict[str, str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_text(text)
    result = CliRunner().invoke(main, ["serve", *args])
    assert result.exit_code == 2
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1, result.stderr


def _frame(state: str, at: str) -> SseEvent:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"statusUpdate": {"status": {"state": state, "timestamp": at}}},
    }
    return SseEvent(data=json.dumps(body))


def test_pace_spaces_frames_as_their_timestamps_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import recorder.serve.app

    paced_streams: list[object] = []  # the waits computed, one list per stream served paced
    real_pacing = recorder.serve.app.pacing

    def spy(*args: object, **kwargs: object) -> object:
        waits = real_pacing(*args, **kwargs)
        paced_streams.append(waits)
        return waits

    monkeypatch.setattr(recorder.serve.app, "pacing", spy)
    request = Request(
        "POST",
        "/a2a/jsonrpc",
        Headers([("Host", "localhost:41242"), ("Content-Type", "application/json")]),
        b'{"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": "t"}}',
    )
    events = (
        _frame("TASK_STATE_WORKING", "2026-11-29T19:36:39.000000Z"),
        _frame("TASK_STATE_WORKING", "2026-11-29T19:36:39.400000Z"),
        _frame("TASK_STATE_COMPLETED", "2026-11-29T19:36:39.600000Z"),
    )
    response = Response(200, "OK", Headers([("Content-Type", "text/event-stream")]), events=events)
    dump(Transcript((Exchange(request, response, "SubscribeToTask"),)), tmp_path / "01-s.http")
    timings: dict[bool, list[float]] = {}
    for pace in (False, True):
        stand_in = load_stand_in([str(tmp_path)], DEFAULT_RULES, pace=pace)
        # (the client made before the clock starts: making one loads its TLS context, which
        # takes most of a second on a loaded machine)
        with ServerThread(stand_in, **server_options()) as server, httpx.Client() as client:
            arrivals: list[float] = []
            started = time.monotonic()
            with client.stream(
                "POST", f"{server.url}/a2a/jsonrpc", content=request.body, timeout=10
            ) as reply:
                for line in reply.iter_lines():
                    if line.startswith("data:"):
                        arrivals.append(time.monotonic() - started)
        timings[pace] = arrivals
        # unpaced: no waits at all (a bound on its time would be a race on a busy machine)
        assert len(paced_streams) == (1 if pace else 0)
    assert len(timings[True]) == len(timings[False]) == 3
    paced = timings[True]
    # (lower bounds only: a loaded machine makes the gaps longer, never shorter)
    assert paced[1] - paced[0] >= 0.35 and paced[2] - paced[1] >= 0.15, paced
