"""The job summary the GitHub Action writes (`recorder.replay.reports.job_summary`): the JSON report
as Markdown, recorded data escaped (pure)."""

from __future__ import annotations

import json
from pathlib import Path

from recorder.replay.reports.job_summary import MAX_ROWS, main, markdown_text, summary_markdown
from recorder.replay.reports.json_report import json_report
from recorder.replay.reports.results import ExchangeResult, PlayResult, TranscriptResult
from recorder.replay.verdict.diff import Mismatch

HOSTILE = "![x](http://evil.example/t.png) [click](javascript:1) <img src=x> | `code` **b** &amp;"


def test_recorded_text_cannot_make_markdown_or_html() -> None:
    text = markdown_text(HOSTILE)
    # every punctuation mark that could open Markdown comes escaped, `<` as an entity
    for made in ("![", "](", "`", "**", "|"):
        assert made not in text.replace("\\" + made[0], "").replace("\\" + made[-1], ""), made
    assert "<" not in text and "&amp;amp;" in text
    assert "\\|" in text and "\\[" in text and "\\(" in text
    assert markdown_text("a\nb\tc") == "a b c"
    assert markdown_text("x" * 500) == "x" * 159 + "…"


def test_the_summary_lists_what_did_not_pass() -> None:
    run = PlayResult(
        (
            TranscriptResult(
                "t/02-message.http",
                (
                    ExchangeResult(1, "ask", 3, mismatches=(Mismatch("$.text", HOSTILE, "ok"),)),
                    ExchangeResult(2, "get", 30),
                ),
            ),
            TranscriptResult("t/03-x.http", (ExchangeResult(1, "gone", 5, error="no reply"),)),
        )
    )
    text = summary_markdown(json_report(run), "out/recorder-report.html")
    lines = text.splitlines()
    assert lines[:3] == [
        "## recorder play",
        "",
        "❌ 2 transcripts, 3 exchanges: 1 passed, 1 failed, 1 error",
    ]
    rows = [line for line in lines if line.startswith("| t/")]
    assert len(rows) == 2
    assert rows[0].startswith("| t/02\\-message\\.http:3 | ask | failed | $\\.text: expected ")
    assert "<img" not in text and "](" not in text
    assert rows[1] == "| t/03\\-x\\.http:5 | gone | error | no reply |"
    assert lines[-1] == (
        "The replies side by side: recorder\\-report\\.html "
        "(the HTML report, in the job's artifacts)."
    )


def test_a_long_list_is_cut_and_says_where_the_rest_is(tmp_path: Path) -> None:
    many = tuple(
        ExchangeResult(n, "x", n, mismatches=(Mismatch("$.a", 1, 2),)) for n in range(1, 61)
    )
    report = tmp_path / "r.json"
    report.write_text(json.dumps(json_report(PlayResult((TranscriptResult("t/a.http", many),)))))
    assert main([str(report)]) == 0
    assert main([str(tmp_path / "missing.json")]) == 2
    text = summary_markdown(json.loads(report.read_text()))
    assert sum(1 for line in text.splitlines() if line.startswith("| t/")) == MAX_ROWS
    assert "… and 10 more: every one is in the reports." in text
