"""The HTML report's page (`recorder.replay.reports.html_report`,
`recorder.replay.reports.html_pytest`): its data is the JSON report's plus the replies, recorded
data stays data, the page allows its own style and script alone. Pure, but for the CLI's usage
errors (no agent is reached)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

from click.testing import CliRunner

from recorder.cli import main
from recorder.replay.reports.html_pytest import exchange_record, session_data
from recorder.replay.reports.html_report import (
    MAX_LINE,
    MAX_LINES,
    html_error_page,
    html_page,
    replies_value,
    report_data,
)
from recorder.replay.reports.json_report import json_report
from recorder.replay.reports.results import (
    ExchangeResult,
    PlayResult,
    Replies,
    TranscriptResult,
    TrialFailure,
    Trials,
)
from recorder.replay.reports.terminal import summary_line
from recorder.replay.verdict.diff import ABSENT, Mismatch

INJECTION = '</script><img src=x onerror="alert(1)"><!-- & \u2028'


def page_data(page: str) -> object:
    """The JSON the page holds in its data block."""
    match = re.search(
        r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S
    )
    assert match is not None
    return json.loads(match.group(1))


def a_run() -> PlayResult:
    failed = ExchangeResult(
        1,
        "SendMessage: ask",
        3,
        mismatches=(
            Mismatch("$.result.message.parts[0].text", INJECTION, "I can review Python"),
            Mismatch("$.result.task.status.state", "A", "B", frame=4),
            Mismatch("$.result.x", ABSENT, 1),
        ),
        seconds=0.25,
        replies=Replies(
            ("HTTP/1.1 200 OK", "{", f'  "text": "{INJECTION}"', "}"),
            ("HTTP/1.1 200 OK", "{", '  "text": "I can review Python"', "}"),
        ),
    )
    passed = ExchangeResult(
        2, "GetTask", 40, replies=Replies(("HTTP/1.1 200 OK",), ("HTTP/1.1 200 OK",))
    )
    flaky = ExchangeResult(
        1,
        "SendMessage: reworded",
        3,
        trials=Trials(
            10,
            7,
            9,
            (TrialFailure(2, (Mismatch("$.t", "a", "b", check="contains_all"),)),),
            planned=10,
            lower=0.44,
            required=0.9,
        ),
    )
    error = ExchangeResult(1, "Stream", 5, error="no reply within 30 s")
    not_played = ExchangeResult(2, "GetTask", 30, error="not played: …", played=False)
    return PlayResult(
        (
            TranscriptResult("t/02-message.http", (failed, passed)),
            TranscriptResult("t/05-trials.http", (flaky,)),
            TranscriptResult("t/06-stream.http", (error, not_played)),
        )
    )


def test_the_pages_data_is_the_json_report_and_the_replies() -> None:
    result = a_run()
    data = report_data(result)
    expected = json_report(result)
    replies = {
        (r["file"], r["exchange"]): r.pop("replies") for r in data["exchanges"] if "replies" in r
    }
    assert data == expected  # the same records, the same summary
    assert set(replies) == {("t/02-message.http", 1), ("t/02-message.http", 2)}
    shown = replies[("t/02-message.http", 1)]
    assert shown["recorded"][2] == f'  "text": "{INJECTION}"'
    assert shown["ops"] == [["equal", 0, 2, 0, 2], ["replace", 2, 3, 2, 3], ["equal", 3, 4, 3, 4]]
    assert page_data(html_page(report_data(result))) == report_data(result)


def test_recorded_data_never_reaches_the_page_as_markup() -> None:
    page = html_page(report_data(a_run()))
    # the page's own two script elements end; nothing recorded ends one or opens a tag
    assert page.count("</script>") == 2
    assert "<img" not in page and "<!--" not in page and "\u2028" not in page
    assert "\\u003c/script\\u003e\\u003cimg" in page
    # the script puts values in as text only
    script = page.rsplit("<script>", 1)[1]
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script


def test_the_policy_allows_the_pages_own_style_and_script_alone() -> None:
    page = html_page(report_data(a_run()))
    (policy,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    style = re.search(r"<style>(.*?)</style>", page, re.S)
    script = page.rsplit("<script>", 1)[1].split("</script>", 1)[0]
    assert style is not None

    def digest(text: str) -> str:
        return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert policy.startswith("default-src 'none'; ")
    assert f"style-src 'sha256-{digest(style.group(1))}'" in policy
    assert f"script-src 'sha256-{digest(script)}'" in policy
    assert "http" not in policy  # no origin is allowed anything: nothing is fetched


def test_long_replies_are_cut_and_say_so() -> None:
    long = tuple(f"line {n}" for n in range(MAX_LINES + 10))
    value = replies_value(Replies(long, ("x" * (MAX_LINE + 5),)))
    assert len(value["recorded"]) == MAX_LINES
    assert value["live"] == ["x" * MAX_LINE + "…"]
    assert value["cut"] is True
    assert replies_value(Replies(("a",), ("a",)))["cut"] is False


def test_an_error_page_says_why_the_run_stopped() -> None:
    page = html_error_page("t/01.http:3: expected a request line <b>")
    data = page_data(page)
    assert data == {
        "format": "recorder-play-report/1",
        "exchanges": [],
        "error": "t/01.http:3: expected a request line <b>",
        "summary": {"exit_status": 2},
    }
    assert "<b>" not in page


def test_the_pytest_sessions_page_counts_as_play_does() -> None:
    result = a_run()
    records = [
        exchange_record(t.path, e) for t in reversed(result.transcripts) for e in t.exchanges
    ]
    data = session_data(records, 1)
    assert data["summary"]["line"] == summary_line(result)
    assert data["exchanges"] == report_data(result)["exchanges"]  # in file order again
    played = json_report(result)["summary"]
    assert data["summary"] == {**played, "exit_status": 1}  # (the session's: pytest's own)


def test_the_pytest_sessions_page_counts_the_agents_calls_as_play_does() -> None:
    # an exchange whose agent made two calls, stood in for (`# @call` blocks)
    result = PlayResult(
        (TranscriptResult("01-review.http", (ExchangeResult(1, "SendMessage", 3, calls=2),)),)
    )
    records = [exchange_record(t.path, e) for t in result.transcripts for e in t.exchanges]
    data = session_data(records, 0)
    assert data["summary"]["line"] == summary_line(result)  # "... 1 exchange (2 calls): ..."
    assert data["summary"] == {**json_report(result)["summary"], "exit_status": 0}


def test_the_cli_checks_the_report_path_and_writes_a_page_when_the_run_cannot_start(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "01-broken.http"
    broken.write_text("# recorder-format: 1\n\n### x\nNOT A REQUEST LINE\n")
    missing = tmp_path / "no-such-folder" / "r.html"
    result = CliRunner().invoke(main, ["play", str(broken), "--html-report", str(missing)])
    assert result.exit_code == 2
    assert "the folder of" in result.output
    report = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["play", str(broken), "--html-report", str(report)])
    assert result.exit_code == 2
    data = page_data(report.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    assert "01-broken.http" in data["error"]
    assert data["exchanges"] == []
