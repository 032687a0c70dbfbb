"""`recorder play --json-report FILE`: the run as JSON, for tools.

    {"format": "recorder-play-report/1",
     "exchanges": [{"file": "transcripts/02-review.http", "exchange": 1, "title": "…",
                    "line": 3, "verdict": "failed", "duration": 0.012,
                    "mismatches": [{"path": "$.result.task.status.state", "frame": null,
                                    "expected": "TASK_STATE_FAILED",
                                    "actual": "TASK_STATE_COMPLETED", "message": "…"}],
                    "error": null, "error_type": null, "notes": []}, …],
     "summary": {"files": 6, "exchanges": 10, "passed": 9, "failed": 1, "errors": 0,
                 "not_played": 0, "skipped": 0, "exit_status": 1, "line": "6 transcripts, …"}}

When the rules have model checks (a model judge, embedding similarity), `"model"` says what
they did and cost (`recorder.checks.model_usage.usage_json`: requests, answers from the
cache, tokens, seconds, skipped, each verdict with its votes and agreement).

With `--trials N`, each exchange also has `"trials": {"runs": n, "planned": N,
"stopped_early": n < N, "passed": k, "needed": m, "rate": k/n, "required_rate": R,
"lower_bound": L, "confidence": C, "judged_by_bound": …, "failures": [{"trial": i,
"mismatches": […], "error": …}]}` (L: Wilson's lower bound of the pass rate at C, 0.95 when
no --confidence was given, the trials not played counted against the verdict; judged by it
with --confidence), and its verdict is the trials' (`passed` when k >= m); a failed check's
mismatch has `"check": "contains_all"`.
An exchange's `calls` counts the calls the agent made to its downstreams while it answered
(stood in for and compared, `summary.calls` their sum); a mismatch in one of them has
`"call": "call 2 (model)"` (`"an extra call (model)"` for a call no recorded one waited for).

A verdict is `passed`, `failed` (mismatches), `error` (no whole reply, the agent gone, an
unset credential variable), `not played` (an earlier exchange of its file got no reply, or -x
stopped the run) or `skipped` (not selected by -k; only when the plan is given). An error's
`error_type` is `no-reply` or `unset-variable` (the JUnit report's error type too). Values are the
normalized ones the terminal shows (a generated value as its alias); a member or item that is
absent on one side has no `expected` or `actual` key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from recorder.disk.atomic import write_text_atomic
from recorder.replay.plan import PlanItem
from recorder.replay.reports.results import ExchangeResult, PlayResult
from recorder.replay.reports.terminal import exit_status, summary_line
from recorder.replay.verdict.diff import ABSENT, Mismatch

__all__ = [
    "json_error_report",
    "json_report",
    "verdict",
    "write_json_error",
    "write_json_report",
]

FORMAT = "recorder-play-report/1"


def verdict(result: ExchangeResult) -> str:
    if not result.played:
        return "not played"
    if result.error is not None:
        return "error"
    return "passed" if result.passed else "failed"  # (with trials: the trials decide)


def _mismatch(mismatch: Mismatch) -> dict[str, Any]:
    record: dict[str, Any] = {"path": mismatch.path, "frame": mismatch.frame}
    if mismatch.expected is not ABSENT:
        record["expected"] = _plain(mismatch.expected)
    if mismatch.actual is not ABSENT:
        record["actual"] = _plain(mismatch.actual)
    if mismatch.check is not None:
        record["check"] = mismatch.check  # (the message is then its reason, in `message`)
    if mismatch.call:
        record["call"] = mismatch.call  # the agent's call it is in (`call 2 (model)`)
    record["message"] = mismatch.describe()
    return record


def _plain(value: Any) -> Any:
    """A value JSON can hold (anything else as its text)."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value


def _exchange(path: str, result: ExchangeResult) -> dict[str, Any]:
    record = _record(path, result)
    if result.trials is not None:
        trials = result.trials
        record["trials"] = {
            "runs": trials.runs,
            "planned": trials.planned or trials.runs,
            "stopped_early": trials.stopped_early,
            "passed": trials.passed,
            "needed": trials.needed,
            "rate": trials.rate,
            "required_rate": trials.required,
            "lower_bound": round(trials.lower, 6),
            "confidence": trials.confidence,
            "judged_by_bound": trials.judged_by_bound,
            "failures": [
                {
                    "trial": f.trial,
                    "mismatches": [_mismatch(m) for m in f.mismatches],
                    "error": f.error,
                }
                for f in trials.failures
            ],
        }
    return record


def _record(path: str, result: ExchangeResult) -> dict[str, Any]:
    return {
        "file": path,
        "exchange": result.number,
        "title": result.title,
        "line": result.line,
        "verdict": verdict(result),
        "duration": round(result.seconds, 6),
        "mismatches": [_mismatch(m) for m in result.mismatches],
        "error": result.error,
        "error_type": result.error_type if result.error is not None and result.played else None,
        "notes": list(result.notes),
        "calls": result.calls,
    }


def json_report(
    result: PlayResult, items: Sequence[PlanItem] = (), extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The report as a JSON value; with the plan's `items`, the exchanges -k left out of a
    planned file are there too, `skipped`; `extra` members go beside the summary (`model`:
    what the model checks did and cost)."""
    planned = {item.path: item for item in items}
    records: list[dict[str, Any]] = []
    skipped = 0
    for transcript in result.transcripts:
        reported = {e.number: e for e in transcript.exchanges}
        item = planned.get(transcript.path)
        numbers = sorted(reported)
        if item is not None:
            numbers = sorted({*numbers, *range(1, len(item.transcript.exchanges) + 1)})
        for number in numbers:
            if number in reported:
                records.append(_exchange(transcript.path, reported[number]))
                continue
            assert item is not None
            golden = item.transcript.exchanges[number - 1]
            if golden.call is not None:
                continue  # a call the agent made: in its exchange's record (`calls`)
            skipped += 1
            records.append(
                {
                    "file": transcript.path,
                    "exchange": number,
                    "title": golden.title,
                    "line": golden.line,
                    "verdict": "skipped",
                    "duration": 0.0,
                    "mismatches": [],
                    "error": None,
                    "error_type": None,
                    "notes": [],
                    "calls": 0,
                }
            )
    summary = {
        "files": len(result.transcripts),
        "exchanges": result.exchange_count,
        "calls": result.call_count,
        "passed": result.passed_count,
        "failed": result.failed_count,
        "errors": result.error_count,
        "not_played": result.not_played_count,
        "skipped": skipped,
        "exit_status": exit_status(result),
        "line": summary_line(result),
    }
    if result.update:
        summary["updated"] = sum(1 for t in result.transcripts if t.updated)
        summary["not_updated"] = result.not_updated_count
    return {"format": FORMAT, "exchanges": records, "summary": summary, **(extra or {})}


def write_json_report(
    result: PlayResult,
    path: str | Path,
    items: Sequence[PlanItem] = (),
    extra: Mapping[str, Any] | None = None,
) -> None:
    text = json.dumps(json_report(result, items, extra), indent=2, ensure_ascii=False) + "\n"
    write_text_atomic(Path(path), text)


def json_error_report(message: str) -> str:
    """The report of a run that stopped before any verdict: no exchange, the error."""
    value = {"format": FORMAT, "exchanges": [], "error": message, "summary": {"exit_status": 2}}
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def write_json_error(message: str, path: str | Path) -> None:
    write_text_atomic(Path(path), json_error_report(message))
