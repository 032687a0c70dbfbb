"""The terminal report at scale (issue 28): the closing recap of the exchanges that did not
pass, one line for a run of files the agent was gone for, and the progress line on stderr only
on a terminal. Pure: results in, text out (the run against a killed agent is in
test_play_options.py)."""

from __future__ import annotations

import io

import pytest

from recorder.format.model import Exchange, Request, Response, Transcript
from recorder.replay.plan import PlanItem
from recorder.replay.reports.recap import agent_gone, recap_entries
from recorder.replay.reports.results import ExchangeResult, PlayResult, TranscriptResult
from recorder.replay.reports.terminal import TerminalReport, progress_wanted, recap_lines
from recorder.replay.verdict.diff import Mismatch

GONE = "cannot reach the agent at http://127.0.0.1:9: connection refused"


def _passed(path: str) -> TranscriptResult:
    return TranscriptResult(path, (ExchangeResult(1, "SendMessage", 3),))


def _mismatched(path: str, mismatches: int = 1) -> TranscriptResult:
    found = tuple(Mismatch(f"$.result.n{n}", n, n + 1) for n in range(mismatches))
    return TranscriptResult(
        path, (ExchangeResult(1, "SendMessage", 3), ExchangeResult(2, "GetTask", 9, found))
    )


def _gone(path: str, exchanges: int = 2) -> TranscriptResult:
    first = ExchangeResult(1, "SendMessage", 3, error=GONE, agent_down=True)
    rest = tuple(
        ExchangeResult(n, "GetTask", 9, error="not played: exchange 1 got no reply", played=False)
        for n in range(2, exchanges + 1)
    )
    return TranscriptResult(path, (first, *rest))


def _report() -> tuple[TerminalReport, io.StringIO]:
    stream = io.StringIO()
    report = TerminalReport(stream, progress=False)
    return report, stream


def test_the_recap_names_each_failing_exchange_above_the_summary() -> None:
    results = (_passed("t/01.http"), _mismatched("t/02.http", 3), _passed("t/03.http"))
    report, stream = _report()
    for result in results:
        report.transcript_done(result)
    report.summary(PlayResult(results))
    assert stream.getvalue().splitlines()[-3:] == [
        "failing exchanges:",
        "  ✗ t/02.http#2 (GetTask): $.result.n0: expected 0, got 1 (and 2 more)",
        "3 transcripts, 4 exchanges: 3 passed, 1 failed",
    ]


def test_no_recap_when_everything_passed() -> None:
    assert recap_lines(PlayResult((_passed("a.http"),))) == []


def test_the_recap_is_bounded() -> None:
    results = tuple(_mismatched(f"t/{n:03d}.http") for n in range(60))
    lines = recap_lines(PlayResult(results), limit=50)
    assert len(lines) == 52
    assert lines[1] == "  ✗ t/000.http#2 (GetTask): $.result.n0: expected 0, got 1"
    assert lines[-1] == "  … and 10 more (all are in --junit-report, --json-report)"


def test_an_error_is_in_the_recap_and_not_played_exchanges_are_not() -> None:
    lost = TranscriptResult(
        "t/01.http",
        (
            ExchangeResult(1, "SendMessage", 3, error="the agent closed the connection"),
            ExchangeResult(2, "GetTask", 9, error="not played", played=False),
        ),
    )
    assert recap_entries(PlayResult((lost,))) == [
        "t/01.http#1 (SendMessage): error: the agent closed the connection"
    ]


def test_files_the_agent_was_gone_for_are_one_line_in_the_report_and_the_recap() -> None:
    gone = [_gone(f"t/{n:04d}.http") for n in range(2, 3002)]
    results = (_mismatched("t/0001.http"), *gone)
    report, stream = _report()
    for result in results:
        report.transcript_done(result)
    report.summary(PlayResult(results))
    lines = stream.getvalue().splitlines()
    assert lines == [
        "t/0001.http  ✗ exchange 2 (GetTask):",
        "    $.result.n0: expected 0, got 1",
        f"t/0002.http  ✗ 3000 files to t/3001.http, 6000 exchanges not played: {GONE}",
        "failing exchanges:",
        "  ✗ t/0001.http#2 (GetTask): $.result.n0: expected 0, got 1",
        f"  ✗ t/0002.http#1: 3000 files to t/3001.http, 6000 exchanges not played: {GONE}",
        "3001 transcripts, 6002 exchanges: 1 passed, 1 failed, 3000 errors, 3000 not played",
    ]


def test_a_single_file_the_agent_was_gone_for_is_reported_as_any_other() -> None:
    results = (_gone("t/01.http"), _passed("t/02.http"))
    report, stream = _report()
    for result in results:
        report.transcript_done(result)
    assert stream.getvalue().splitlines() == [
        "t/01.http  ✗ exchange 1 (SendMessage):",
        f"    error: {GONE}",
        "           ✗ exchange 2: not played: exchange 1 got no reply",
        "t/02.http  ✓ 1 exchange",
    ]


def test_the_agent_back_ends_the_line_of_files_it_was_gone_for() -> None:
    results = (_gone("t/01.http"), _gone("t/02.http", 1), _passed("t/03.http"), _gone("t/04.http"))
    report, stream = _report()
    for result in results:
        report.transcript_done(result)
    report.summary(PlayResult(results))
    lines = stream.getvalue().splitlines()
    assert lines[:2] == [
        f"t/01.http  ✗ 2 files to t/02.http, 3 exchanges not played: {GONE}",
        "t/03.http  ✓ 1 exchange",
    ]
    assert lines[2] == "t/04.http  ✗ exchange 1 (SendMessage):"


def test_the_files_exitfirst_left_are_one_line_and_not_in_the_recap() -> None:
    halted = "not played: the run stopped at the first failing file (-x)"

    def left(path: str) -> TranscriptResult:
        return TranscriptResult(
            path, tuple(ExchangeResult(n, "x", n, error=halted, played=False) for n in (1, 2))
        )

    results = (_mismatched("t/01.http"), _gone("t/02.http"), left("t/03.http"), left("t/04.http"))
    report, stream = _report()
    for result in results:
        report.transcript_done(result)
    report.summary(PlayResult(results))
    assert stream.getvalue().splitlines() == [
        "t/01.http  ✗ exchange 2 (GetTask):",
        "    $.result.n0: expected 0, got 1",
        "t/02.http  ✗ exchange 1 (SendMessage):",  # another reason: not in the same line
        f"    error: {GONE}",
        "           ✗ exchange 2: not played: exchange 1 got no reply",
        "t/03.http  ✗ 2 files to t/04.http, 4 exchanges not played: the run stopped at the first"
        " failing file (-x)",
        "failing exchanges:",
        "  ✗ t/01.http#2 (GetTask): $.result.n0: expected 0, got 1",
        f"  ✗ t/02.http#1 (SendMessage): error: {GONE}",
        "4 transcripts, 8 exchanges: 1 passed, 1 failed, 1 error, 5 not played",
    ]


def test_a_file_whose_first_exchange_was_sent_is_not_a_gone_file() -> None:
    lost = TranscriptResult(
        "t/01.http",
        (
            ExchangeResult(1, "SendMessage", 3),
            ExchangeResult(2, "GetTask", 9, error=GONE, agent_down=True),
        ),
    )
    assert agent_gone(lost) is None
    assert agent_gone(_gone("t/02.http")) == GONE


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _item() -> PlanItem:
    exchange = Exchange(Request("POST", "/a2a/jsonrpc"), Response(200), title="SendMessage")
    return PlanItem("t/01.http", Transcript((exchange,)), frozenset({0}), 1)


@pytest.mark.parametrize(
    ("env", "drawn"),
    [({}, True), ({"NO_COLOR": "1"}, True), ({"TERM": "dumb"}, False), ({"CI": "true"}, False)],
)
def test_the_progress_line_is_on_stderr_on_a_terminal_only(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], drawn: bool
) -> None:
    for name in ("CI", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    stdout, stderr = io.StringIO(), _Terminal()
    report = TerminalReport(stdout, progress_after=0, progress_stream=stderr, quiet=True)
    item = _item()
    report.started([item])
    report.exchange_done(item, ExchangeResult(1, "SendMessage", 3))
    report.transcript_done(_mismatched("t/01.http"))
    assert "[" not in stdout.getvalue()  # never among the results
    progress = "[1/1] t/01.http"
    assert stderr.getvalue() == (progress + "\r" + " " * len(progress) + "\r" if drawn else "")


def test_no_progress_line_when_stderr_is_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert progress_wanted(_Terminal())
    assert not progress_wanted(io.StringIO())
