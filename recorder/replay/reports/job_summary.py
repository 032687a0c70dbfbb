"""A run's JSON report (`--json-report`) as GitHub's job summary: Markdown that the repository's
composite Action (`action.yml`) appends to `$GITHUB_STEP_SUMMARY`.

    python -m recorder.replay.reports.job_summary REPORT.json [REPORT.html]

The summary line, the counts, and a table of the exchanges that did not pass (at most
`MAX_ROWS`; the rest are in the reports): file and line, title, verdict, and the first
mismatch or the error. Recorded data is never Markdown or HTML here: each value is escaped
(`markdown_text`), so a reply cannot add a link, an image or a tag to the summary.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["MAX_ROWS", "main", "markdown_text", "summary_markdown"]

MAX_ROWS = 50
_MAX_CELL = 160
_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")


def markdown_text(value: object, limit: int = _MAX_CELL) -> str:
    """`value` as inline Markdown text in a table cell: one line, cut at `limit` characters,
    `&`, `<` and `>` as entities, every other Markdown punctuation backslash-escaped (pure)."""
    text = " ".join(str(value).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;")
    return _SPECIAL.sub(r"\\\1", text).replace("\\>", "&gt;")


def _what(record: Mapping[str, Any]) -> str:
    if record.get("error"):
        return str(record["error"])
    mismatches: Sequence[Mapping[str, Any]] = record.get("mismatches") or ()
    trials = record.get("trials")
    if not mismatches and trials:
        failures = trials.get("failures") or ()
        mismatches = next((f["mismatches"] for f in failures if f.get("mismatches")), ())
    if not mismatches:
        return ""
    first = mismatches[0]
    frame = f"frame {first['frame']}: " if first.get("frame") else ""
    more = f" (and {len(mismatches) - 1} more)" if len(mismatches) > 1 else ""
    return f"{frame}{first.get('message', first.get('path', ''))}{more}"


def summary_markdown(report: Mapping[str, Any], html_name: str | None = None) -> str:
    """The job summary of a JSON report's value (pure)."""
    summary: Mapping[str, Any] = report.get("summary") or {}
    lines = ["## recorder play", ""]
    if report.get("error"):
        lines += [f"The run stopped: {markdown_text(report['error'], 1000)}", ""]
    if summary.get("line"):
        status = "✅" if summary.get("exit_status") == 0 else "❌"
        lines += [f"{status} {markdown_text(summary['line'], 1000)}", ""]
    failing = [
        r for r in report.get("exchanges") or () if r.get("verdict") not in ("passed", "skipped")
    ]
    if failing:
        lines += ["| exchange | title | verdict | first difference |", "| --- | --- | --- | --- |"]
        for record in failing[:MAX_ROWS]:
            where = f"{record['file']}:{record['line']}" if record.get("line") else record["file"]
            verdict = str(record["verdict"])
            trials = record.get("trials")
            if trials:
                verdict += f" ({trials['passed']}/{trials['runs']} trials)"
            cells = (where, record.get("title") or "", verdict, _what(record))
            lines.append("| " + " | ".join(markdown_text(cell) for cell in cells) + " |")
        if len(failing) > MAX_ROWS:
            lines += ["", f"… and {len(failing) - MAX_ROWS} more: every one is in the reports."]
        lines.append("")
    if html_name:
        name = markdown_text(Path(html_name).name, 200)
        lines += [
            f"The replies side by side: {name} (the HTML report, in the job's artifacts).",
            "",
        ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not 1 <= len(args) <= 2:
        sys.stderr.write(
            "usage: python -m recorder.replay.reports.job_summary REPORT.json [REPORT.html]\n"
        )
        return 2
    try:
        report = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"recorder: cannot read the JSON report {args[0]}: {exc}\n")
        return 2
    sys.stdout.write(summary_markdown(report, args[1] if len(args) > 1 else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
