"""`pytest --recorder-html-report FILE`: the pytest plugin's HTML report, the page `recorder
play --html-report` writes (`recorder.replay.reports.html_report`), of the exchanges the session
ran.

Each exchange item puts its record (the JSON report's, with its replies) in its
`user_properties` under `RECORD`; the controller hears every item's report (pytest-xdist
carries the properties from its workers) and writes the page at the session's end, the records
in file and exchange order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from recorder.disk.atomic import write_text_atomic
from recorder.replay.reports.html_report import html_page, report_data
from recorder.replay.reports.json_report import FORMAT
from recorder.replay.reports.results import ExchangeResult, PlayResult, TranscriptResult
from recorder.replay.reports.terminal import plural

__all__ = ["RECORD", "HtmlReportCollector", "exchange_record", "session_data"]

RECORD = "recorder-exchange"
"""The `user_properties` name of an item's record."""


def exchange_record(path: str, result: ExchangeResult) -> dict[str, Any]:
    """The record of one exchange, as `recorder play`'s reports hold it (its replies too)."""
    data = report_data(PlayResult((TranscriptResult(path, (result,)),)))
    record: dict[str, Any] = data["exchanges"][0]
    return record


def session_data(records: Iterable[Mapping[str, Any]], exit_status: int) -> dict[str, Any]:
    """The page's data of a session's records: the JSON report's shape, the summary counted
    from the verdicts as `recorder play` counts them (pure)."""
    ordered = sorted(records, key=lambda r: (str(r["file"]), int(r["exchange"])))
    verdicts = Counter(str(r["verdict"]) for r in ordered)
    files = len({r["file"] for r in ordered})
    calls = sum(int(r.get("calls", 0)) for r in ordered)  # the agent's own, stood in for
    stood_in = f" ({plural(calls, 'call')})" if calls else ""
    line = (
        f"{plural(files, 'transcript')}, {plural(len(ordered), 'exchange')}{stood_in}: "
        f"{verdicts['passed']} passed, {verdicts['failed']} failed"
    )
    if verdicts["error"]:
        line += f", {plural(verdicts['error'], 'error')}"
    if verdicts["not played"]:
        line += f", {verdicts['not played']} not played"
    summary = {
        "files": files,
        "exchanges": len(ordered),
        "calls": calls,
        "passed": verdicts["passed"],
        "failed": verdicts["failed"],
        "errors": verdicts["error"],
        "not_played": verdicts["not played"],
        "skipped": verdicts["skipped"],
        "exit_status": exit_status,
        "line": line,
    }
    return {"format": FORMAT, "exchanges": [dict(r) for r in ordered], "summary": summary}


class HtmlReportCollector:
    """A pytest plugin object: hears the items' records, writes the page at the end (on the
    controller only, under pytest-xdist)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.records: list[Mapping[str, Any]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == RECORD and isinstance(value, Mapping):
                self.records.append(value)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if hasattr(session.config, "workerinput"):
            return  # a pytest-xdist worker: its reports go to the controller
        page = html_page(session_data(self.records, int(exitstatus)), title="recorder (pytest)")
        write_text_atomic(Path(self.path), page)
