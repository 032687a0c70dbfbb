"""`recorder play`'s options for people used to Hurl, httpyac and pytest (issue 14): colour,
-v, -q, -x, --report-json, --var, --env-file, and an agent that goes away mid-run. Through
click's CliRunner, exact output and exit codes, against the real kit."""

from __future__ import annotations

import json
import shutil
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from helpers import edit

from recorder.cli import main
from recorder.kit import KitServer, start_kit
from recorder.replay.reports import terminal as report_module
from recorder.replay.reports.results import ExchangeResult, TranscriptResult

pytestmark = pytest.mark.e2e


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, ["play", *args], env=env, catch_exceptions=False)


def _fail_review(goldens_here: Path) -> None:
    edit(
        goldens_here / "02-review.http",
        '"state": "TASK_STATE_COMPLETED"',
        '"state": "TASK_STATE_FAILED"',
    )


REVIEW_FAILED = [
    "transcripts/02-review.http     ✗ exchange 1 (SendMessage: review a diff):",
    '    $.result.task.status.state: expected "TASK_STATE_FAILED", got "TASK_STATE_COMPLETED"',
]
REVIEW_RECAP = [
    "failing exchanges:",
    "  ✗ transcripts/02-review.http#1 (SendMessage: review a diff): "
    '$.result.task.status.state: expected "TASK_STATE_FAILED", got "TASK_STATE_COMPLETED"',
]


# --------------------------------------------------------------------------- colour


@pytest.fixture
def on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The report believes it writes to a terminal (auto mode would colour)."""
    monkeypatch.setattr(report_module, "_isatty", lambda stream: True)


@pytest.mark.parametrize(
    ("args", "env", "coloured"),
    [
        ([], {}, True),  # auto, on a terminal
        ([], {"NO_COLOR": "1"}, False),
        ([], {"NO_COLOR": ""}, True),  # an empty NO_COLOR does not count
        ([], {"TERM": "dumb"}, False),
        (["--no-color"], {}, False),
        (["--color", "never"], {}, False),
        (["--color", "always"], {"NO_COLOR": "1"}, True),
    ],
)
def test_color_auto_honours_no_color_and_term_dumb(
    goldens_here: Path,
    kit: KitServer,
    on_a_terminal: None,
    args: list[str],
    env: dict[str, str],
    coloured: bool,
) -> None:
    _fail_review(goldens_here)
    result = run("transcripts", "--agent", kit.base_url, *args, env={"A2A_TOKEN": kit.token, **env})
    assert result.exit_code == 1, result.output
    assert ("\x1b[" in result.stdout) is coloured
    assert "\x1b" not in result.stderr


def test_color_always_colours_without_a_terminal_and_never_does_not(
    goldens_here: Path, kit: KitServer
) -> None:
    env = {"A2A_TOKEN": kit.token}
    always = run("transcripts", "--agent", kit.base_url, "--color", "always", env=env)
    plain = run("transcripts", "--agent", kit.base_url, env=env)
    assert "\x1b[32m" in always.stdout  # the green marks
    assert "\x1b" not in plain.stdout
    assert (always.exit_code, plain.exit_code) == (0, 0)


def test_a_bad_color_value_is_a_usage_error(goldens_here: Path) -> None:
    result = run("transcripts", "--color", "sometimes")
    assert result.exit_code == 2
    assert "'sometimes' is not one of 'auto', 'always', 'never'" in result.stderr


# --------------------------------------------------------------------------- -q, -x, -v


def test_quiet_prints_the_failures_and_the_summary_only(goldens_here: Path, kit: KitServer) -> None:
    _fail_review(goldens_here)
    result = run("transcripts", "--agent", kit.base_url, "-q", env={"A2A_TOKEN": kit.token})
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        *REVIEW_FAILED,
        *REVIEW_RECAP,
        "6 transcripts, 10 exchanges: 9 passed, 1 failed",
    ]


def test_quiet_with_everything_passing_is_the_summary_line(
    goldens_here: Path, kit: KitServer
) -> None:
    result = run("transcripts", "--agent", kit.base_url, "--quiet", env={"A2A_TOKEN": kit.token})
    assert result.exit_code == 0
    assert result.stdout == "6 transcripts, 10 exchanges: 10 passed, 0 failed\n"


def test_exitfirst_stops_after_the_first_failing_file(goldens_here: Path, kit: KitServer) -> None:
    _fail_review(goldens_here)
    result = run(
        "transcripts",
        "--agent",
        kit.base_url,
        "-x",
        "--report-json",
        "report.json",
        env={"A2A_TOKEN": kit.token},
    )
    assert result.exit_code == 1, result.output
    halted = "not played: the run stopped at the first failing file (-x)"
    assert result.stdout.splitlines() == [
        "transcripts/01-languages.http  ✓ 1 exchange",
        *REVIEW_FAILED,
        # the files not played: one line
        "transcripts/03-streaming.http  ✗ 4 files to transcripts/06-subscribe.http, 7 exchanges"
        f" not played: {halted.removeprefix('not played: ')}",
        *REVIEW_RECAP,
        "6 transcripts, 10 exchanges: 2 passed, 1 failed, 7 not played",
    ]
    verdicts = [r["verdict"] for r in json.loads(Path("report.json").read_text())["exchanges"]]
    assert verdicts == ["passed", "failed", "passed", *["not played"] * 7]


def test_exitfirst_without_a_failure_plays_everything(goldens_here: Path, kit: KitServer) -> None:
    result = run(
        "transcripts", "--agent", kit.base_url, "-x", "-j", "2", env={"A2A_TOKEN": kit.token}
    )
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "6 transcripts, 10 exchanges: 10 passed, 0 failed"


def test_verbose_shows_a_diff_of_the_replies_normalized_with_aliases(
    goldens_here: Path, kit: KitServer
) -> None:
    _fail_review(goldens_here)
    result = run(
        "transcripts/02-review.http", "--agent", kit.base_url, "-v", env={"A2A_TOKEN": kit.token}
    )
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        "transcripts/02-review.http  ✗ exchange 1 (SendMessage: review a diff):",
        '    $.result.task.status.state: expected "TASK_STATE_FAILED", got "TASK_STATE_COMPLETED"',
    ]
    end = lines.index("failing exchanges:")
    diff = lines[2:end]
    assert diff[:2] == [
        "    --- recorded reply (normalized)",
        "    +++ live reply (normalized)",
    ]
    assert diff[2].startswith("    @@ -") and diff[2].endswith(" @@")
    # the ids paired (the same alias on both sides): the one change is the state, with three
    # lines of context either side, not the whole reply
    changed = [line for line in diff[3:] if line[4] in "+-"]
    assert changed == [
        '    -        "state": "TASK_STATE_FAILED",',
        '    +        "state": "TASK_STATE_COMPLETED",',
    ]
    assert len(diff) == 3 + 2 + 6
    assert '           "id": "<id:1>",' in diff
    assert "recorded reply (normalized):" not in result.stdout
    assert lines[-1] == "1 transcript, 2 exchanges: 1 passed, 1 failed"


def test_very_verbose_shows_both_replies_whole(goldens_here: Path, kit: KitServer) -> None:
    _fail_review(goldens_here)
    result = run(
        "transcripts/02-review.http", "--agent", kit.base_url, "-vv", env={"A2A_TOKEN": kit.token}
    )
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    recorded = lines.index("    recorded reply (normalized):")
    live = lines.index("    live reply (normalized):")
    end = lines.index("failing exchanges:")
    assert recorded == 2 and "    request as sent:" not in lines
    assert lines[recorded + 1] == lines[live + 1] == "        HTTP/1.1 200 OK"
    recorded_body, live_body = lines[recorded + 2 : live], lines[live + 2 : end]
    # the same ids, as aliases, on both sides: only the state differs
    assert '              "id": "<id:1>",' in recorded_body
    assert [a for a, b in zip(recorded_body, live_body, strict=True) if a != b] == [
        '                "state": "TASK_STATE_FAILED",'
    ]


def test_vvv_shows_the_request_as_sent_with_secrets_as_placeholders(
    goldens_here: Path, kit: KitServer
) -> None:
    edit(
        goldens_here / "04-cards.http", '"extendedAgentCard": true', '"extendedAgentCard": false', 2
    )
    result = run(
        "transcripts/04-cards.http",
        "--agent",
        kit.base_url,
        "-vvv",
        "--var",
        f"A2A_TOKEN={kit.token}",
    )
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    sent = [n for n, line in enumerate(lines) if line == "    request as sent:"]
    assert len(sent) == 2
    assert "        Authorization: Bearer {{A2A_TOKEN}}" in lines
    assert kit.token not in result.stdout
    assert "    recorded reply (normalized):" in lines


# --------------------------------------------------------------------------- --report-json


def test_report_json_has_one_record_per_exchange_and_a_summary(
    goldens_here: Path, kit: KitServer
) -> None:
    _fail_review(goldens_here)
    result = run(
        "transcripts",
        "--agent",
        kit.base_url,
        "--report-json",
        "report.json",
        env={"A2A_TOKEN": kit.token},
    )
    assert result.exit_code == 1
    report = json.loads(Path("report.json").read_text())
    assert report["format"] == "recorder-play-report/1"
    records = report["exchanges"]
    assert len(records) == 10
    failed = records[1]
    assert {k: failed[k] for k in ("file", "exchange", "title", "verdict", "error")} == {
        "file": "transcripts/02-review.http",
        "exchange": 1,
        "title": "SendMessage: review a diff",
        "verdict": "failed",
        "error": None,
    }
    assert failed["mismatches"] == [
        {
            "path": "$.result.task.status.state",
            "frame": None,
            "expected": "TASK_STATE_FAILED",
            "actual": "TASK_STATE_COMPLETED",
            "message": '$.result.task.status.state: expected "TASK_STATE_FAILED", '
            'got "TASK_STATE_COMPLETED"',
        }
    ]
    assert all(isinstance(r["duration"], float) for r in records)
    assert report["summary"] == {
        "files": 6,
        "exchanges": 10,
        "calls": 0,
        "passed": 9,
        "failed": 1,
        "errors": 0,
        "not_played": 0,
        "skipped": 0,
        "exit_status": 1,
        "line": "6 transcripts, 10 exchanges: 9 passed, 1 failed",
    }


def test_report_json_lists_the_exchanges_k_left_out_as_skipped(
    goldens_here: Path, kit: KitServer
) -> None:
    result = run(
        "transcripts",
        "--agent",
        kit.base_url,
        "-k",
        "gettask",
        "--report-json",
        "report.json",
        env={"A2A_TOKEN": kit.token},
    )
    assert result.exit_code == 0
    report = json.loads(Path("report.json").read_text())
    assert [(r["file"], r["exchange"], r["verdict"]) for r in report["exchanges"]] == [
        ("transcripts/02-review.http", 1, "skipped"),
        ("transcripts/02-review.http", 2, "passed"),
        ("transcripts/05-errors.http", 1, "passed"),
    ]
    assert report["summary"]["skipped"] == 1


def test_report_json_of_a_run_that_stopped_before_any_verdict_says_why(goldens_here: Path) -> None:
    (goldens_here / "07-broken.http").write_text("### broken\nPOST /a2a/jsonrpc HTTP/1.1\n")
    Path("report.json").write_text('{"summary": {"passed": 10}}')  # the last run's
    result = run("transcripts", "--agent", "http://127.0.0.1:9", "--report-json", "report.json")
    assert result.exit_code == 2
    report = json.loads(Path("report.json").read_text())
    assert report["exchanges"] == [] and report["summary"] == {"exit_status": 2}
    assert report["error"].startswith("transcripts/07-broken.http:3: ")


def test_an_unset_credential_is_an_unset_variable_error_in_junit_and_json(
    goldens_here: Path, kit: KitServer
) -> None:
    # no A2A_TOKEN: the extended card's exchange is not sent, the others play
    result = run(
        "transcripts",
        "--agent",
        kit.base_url,
        "--junit-xml",
        "report.xml",
        "--report-json",
        "report.json",
        env={},
    )
    assert result.exit_code == 2, result.output
    errors = [
        (case.get("name"), error.get("type"), error.get("message"))
        for case in ET.parse("report.xml").getroot().iter("testcase")
        for error in case.iter("error")
    ]
    assert len(errors) == 1
    name, kind, message = errors[0]
    assert name == "02 GetExtendedAgentCard: with the bearer token"
    assert kind == "unset-variable"
    assert message is not None and "the variable A2A_TOKEN is not set" in message
    assert "--var A2A_TOKEN=VALUE" in message
    records = json.loads(Path("report.json").read_text())["exchanges"]
    assert [(r["verdict"], r["error_type"]) for r in records if r["verdict"] != "passed"] == [
        ("error", "unset-variable")
    ]


# --------------------------------------------------------------------------- variables


def test_var_wins_over_env_file_which_wins_over_the_environment(
    goldens_here: Path, kit: KitServer
) -> None:
    cards = "transcripts/04-cards.http"
    Path("ci.env").write_text(
        f"# the CI token\nexport A2A_TOKEN='{kit.token}'\n\nOTHER = \"a # b\"  # comment\n"
    )
    wrong = {"A2A_TOKEN": "wrong"}
    from_file = run(cards, "--agent", kit.base_url, "--env-file", "ci.env", env=wrong)
    assert from_file.exit_code == 0, from_file.output
    over_file = run(
        cards, "--agent", kit.base_url, "--env-file", "ci.env", "--var", "A2A_TOKEN=wrong"
    )
    assert over_file.exit_code == 1, over_file.output
    from_var = run(cards, "--agent", kit.base_url, "--var", f"A2A_TOKEN={kit.token}", env=wrong)
    assert from_var.exit_code == 0, from_var.output
    assert from_var.stdout.splitlines() == [
        "transcripts/04-cards.http  ✓ 2 exchanges",
        "1 transcript, 2 exchanges: 2 passed, 0 failed",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("A=1\n\nnot a variable\n", "ci.env:3: expected NAME=VALUE, got 'not a variable'"),
        ("1A=x\n", "ci.env:1: '1A' is not a variable name"),
        ('A="open\n', 'ci.env:1: the value has no closing "'),
        ("A='x' y\n", "ci.env:1: unexpected text after the closing ': 'y'"),
    ],
)
def test_env_file_errors_name_the_file_and_line(
    goldens_here: Path, text: str, message: str
) -> None:
    Path("ci.env").write_text(text)
    result = run("transcripts", "--agent", "http://127.0.0.1:9", "--env-file", "ci.env")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"recorder play: {message}\n"


def test_a_missing_env_file_and_a_bad_var_are_errors(goldens_here: Path) -> None:
    missing = run("transcripts", "--env-file", "nowhere.env")
    assert missing.exit_code == 2
    assert missing.stderr == (
        "recorder play: cannot read the env file nowhere.env: No such file or directory\n"
    )
    bad = run("transcripts", "--var", "NO_EQUALS")
    assert bad.exit_code == 2
    assert "expected NAME=VALUE, got 'NO_EQUALS'" in bad.stderr


def test_env_file_values_unquote_and_unescape() -> None:
    from recorder.replay.envfile import parse_env_file

    text = (
        "# comment\n"
        "PLAIN = value with spaces   # trailing comment\n"
        "export SINGLE='a \\n b'\n"
        'DOUBLE="line\\nnext \\"q\\""\n'
        "EMPTY=\n"
        "HASH=a#b\n"
    )
    assert parse_env_file(text, "x.env") == {
        "PLAIN": "value with spaces",
        "SINGLE": "a \\n b",
        "DOUBLE": 'line\nnext "q"',
        "EMPTY": "",
        "HASH": "a#b",
    }


# --------------------------------------------------------------------------- agent gone


def test_an_agent_killed_mid_run_leaves_complete_reports_and_exit_2(
    goldens_here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the agent is stopped once exchange 1 of 02-review has its verdict: exchange 2 loses its
    # reply (an error), the other files each fail fast on their first exchange (no timeout
    # waited for), the rest of each file is not played, and both reports hold all 10
    agent = start_kit()
    done = report_module.TerminalReport.exchange_done

    def stop_after_the_review(self: Any, item: Any, result: ExchangeResult) -> None:
        done(self, item, result)
        if item.path.endswith("02-review.http") and result.number == 1:
            agent.stop()

    monkeypatch.setattr(report_module.TerminalReport, "exchange_done", stop_after_the_review)
    started = time.monotonic()
    try:
        result = run(
            "transcripts",
            "--agent",
            agent.base_url,
            "--junit-xml",
            "report.xml",
            "--report-json",
            "report.json",
            env={"A2A_TOKEN": agent.token},
        )
    finally:
        agent.stop()
    assert time.monotonic() - started < 10  # not a 30 s timeout per file
    assert result.exit_code == 2, result.output
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    gone = f"cannot reach the agent at {agent.base_url}: connection refused"
    assert lines[0] == "transcripts/01-languages.http  ✓ 1 exchange"
    assert lines[1] == "transcripts/02-review.http     ✗ exchange 2 (GetTask: the review task):"
    assert lines[2].startswith("    error: ")
    lost = lines[2].removeprefix("    error: ")
    # the files the agent was gone for: one line, in the report and in the recap
    later = "4 files to transcripts/06-subscribe.http, 7 exchanges not played"
    assert lines[3:] == [
        f"transcripts/03-streaming.http  ✗ {later}: {gone}",
        "failing exchanges:",
        f"  ✗ transcripts/02-review.http#2 (GetTask: the review task): error: {lost}",
        f"  ✗ transcripts/03-streaming.http#1: {later}: {gone}",
        "6 transcripts, 10 exchanges: 2 passed, 0 failed, 5 errors, 3 not played",
    ]
    root = ET.parse("report.xml").getroot()
    assert [root.get(k) for k in ("tests", "failures", "errors", "skipped")] == [
        "10",
        "0",
        "5",
        "3",
    ]
    assert len(list(root.iter("testcase"))) == 10
    report = json.loads(Path("report.json").read_text())
    assert [r["verdict"] for r in report["exchanges"]] == [
        "passed",
        "passed",
        "error",
        "error",
        "error",
        "not played",
        "error",
        "error",
        "not played",
        "not played",
    ]
    assert report["summary"]["exit_status"] == 2


def test_an_agent_stopped_after_file_k_leaves_one_line_for_the_files_after_it(
    goldens_here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 12 files; the agent is stopped once file 2 is reported (before file 3 starts): file 3
    # loses its first reply (an error, reported as ever), files 4 to 12 fail fast and are one
    # line, in the report and in the recap; the JSON report still holds every exchange
    for number in range(7, 13):
        shutil.copy(
            goldens_here / "01-languages.http", goldens_here / f"{number:02d}-languages.http"
        )
    agent = start_kit()
    done = report_module.TerminalReport.transcript_done

    def stop_after_file_2(self: Any, result: TranscriptResult) -> None:
        done(self, result)
        if result.path.endswith("02-review.http"):
            agent.stop()

    monkeypatch.setattr(report_module.TerminalReport, "transcript_done", stop_after_file_2)
    try:
        result = run(
            "transcripts",
            "--agent",
            agent.base_url,
            "--report-json",
            "report.json",
            env={"A2A_TOKEN": agent.token},
        )
    finally:
        agent.stop()
    assert result.exit_code == 2, result.output
    gone = f"cannot reach the agent at {agent.base_url}: connection refused"
    later = "9 files to transcripts/12-languages.http, 12 exchanges not played"
    assert result.stdout.splitlines() == [
        "transcripts/01-languages.http  ✓ 1 exchange",
        "transcripts/02-review.http     ✓ 2 exchanges",
        "transcripts/03-streaming.http  ✗ exchange 1 "
        "(SendStreamingMessage: review a diff as a stream):",
        f"    error: {gone}",
        f"transcripts/04-cards.http      ✗ {later}: {gone}",
        "failing exchanges:",
        "  ✗ transcripts/03-streaming.http#1 (SendStreamingMessage: review a diff as a stream):"
        f" error: {gone}",
        f"  ✗ transcripts/04-cards.http#1: {later}: {gone}",
        "12 transcripts, 16 exchanges: 3 passed, 0 failed, 10 errors, 3 not played",
    ]
    verdicts = [r["verdict"] for r in json.loads(Path("report.json").read_text())["exchanges"]]
    assert len(verdicts) == 16
    assert verdicts.count("error") == 10 and verdicts.count("not played") == 3


# --------------------------------------------------------------------------- plurals


@pytest.mark.parametrize(
    ("exchanges", "line"),
    [
        ((ExchangeResult(1, "a", 1),), "t.http  ✓ 1 exchange"),
        ((ExchangeResult(1, "a", 1), ExchangeResult(2, "b", 5)), "t.http  ✓ 2 exchanges"),
    ],
)
def test_plurals_in_the_report(exchanges: tuple[ExchangeResult, ...], line: str) -> None:
    from recorder.replay.reports.results import PlayResult
    from recorder.replay.reports.terminal import summary_line, transcript_lines

    result = TranscriptResult("t.http", exchanges)
    assert transcript_lines(result) == [line]
    one_error = TranscriptResult(
        "t.http",
        (
            ExchangeResult(1, "a", 1, error="gone"),
            ExchangeResult(2, "b", 5, error="x", played=False),
        ),
    )
    assert summary_line(PlayResult((one_error,))) == (
        "1 transcript, 2 exchanges: 0 passed, 0 failed, 1 error, 1 not played"
    )


def test_the_watch_probes_once_when_the_agent_is_known_down() -> None:
    import socket

    from helpers import closed_port

    from recorder.replay.watch import AgentWatch

    with closed_port() as port:
        watch = AgentWatch(f"http://127.0.0.1:{port}")
        assert watch.probe() is None  # not known down: no attempt
        watch.lost("gone")
        assert (
            watch.probe()
            == f"cannot reach the agent at http://127.0.0.1:{port}: connection refused"
        )
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        back = AgentWatch(f"http://127.0.0.1:{listener.getsockname()[1]}")
        back.lost("gone")
        assert back.probe() is None  # it accepts again: no longer down
        assert back.down is None


def _play_on_a_pty(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """`recorder play ARGS` in a subprocess whose stdout is a pseudo-terminal (bounded)."""
    import os
    import pty
    import select
    import subprocess
    import sys

    master, slave = pty.openpty()
    command = [sys.executable, "-c", "from recorder.cli import main; main()", "play", *args]
    process = subprocess.Popen(
        command, stdout=slave, stderr=subprocess.PIPE, env={**os.environ, **env}
    )
    os.close(slave)
    output = b""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
            elif process.poll() is not None:
                break
        code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
        if process.stderr is not None:
            process.stderr.close()
    return code, output.decode("utf-8", "replace")


@pytest.mark.parametrize(
    ("env", "coloured"), [({}, True), ({"NO_COLOR": "1"}, False), ({"TERM": "dumb"}, False)]
)
def test_on_a_real_terminal_no_color_and_term_dumb_mean_no_escape_codes(
    goldens_here: Path, kit: KitServer, env: dict[str, str], coloured: bool
) -> None:
    base = {"A2A_TOKEN": kit.token, "NO_COLOR": "", "TERM": "xterm"}
    code, output = _play_on_a_pty(["transcripts", "--agent", kit.base_url], {**base, **env})
    assert code == 0, output
    assert ("\x1b" in output) is coloured
    assert "6 transcripts, 10 exchanges: 10 passed, 0 failed" in output
