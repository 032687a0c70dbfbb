"""`recorder play --html-report FILE` (and the pytest plugin's `--recorder-html-report`): the
run as one self-contained page, to open from a CI artifact.

The page holds its data as JSON, and that JSON is the JSON report
(`recorder.replay.reports.json_report`, `--json-report`) with one key more on each exchange that got
a reply, `replies`: the recorded and the live reply as lines, normalized as the comparison saw them
(generated values as their aliases in both, secrets as placeholders;
`recorder.replay.reports.verbose.normalized_replies`), and `ops`, difflib's opcodes from the
recorded lines to the live ones. So the page and the JSON report never disagree: one is built from
the other.

What a reader sees (drawn by the page's script from that data, `html_report.js`): the summary;
filters (all, failed, flaky: some trials passed and some did not, errors, passed) and a search;
a small chart of the trials' pass rates, each with its Wilson lower bound and the rate
required; each file's exchanges with their verdict, mismatches (path, frame, expected,
actual; a check's reason), notes, errors and trials; and the two replies side by side, the
lines that differ marked, long equal runs folded. A stream's frames, a push delivery, a gRPC
call, or any other block of a transcript are lines of the same view.

Recorded data is never code here: the JSON is written with every `<`, `>` and `&` escaped (a
recorded `</script>` cannot end the data block), the script puts every value in the page as
text (`textContent`, never markup), and the page's Content-Security-Policy allows its own
inline style and script (by their hashes) and nothing else: no other script, and no request
leaves the page (no CDN, no font, no image).
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from recorder.disk.atomic import write_text_atomic
from recorder.replay.plan import PlanItem
from recorder.replay.reports.json_report import json_error_report, json_report
from recorder.replay.reports.results import PlayResult, Replies

__all__ = [
    "MAX_LINE",
    "MAX_LINES",
    "html_error_page",
    "html_page",
    "replies_value",
    "report_data",
    "write_html_error",
    "write_html_report",
]

MAX_LINES = 5000
"""Lines of a reply the page keeps (the rest is cut, and the page says so)."""
MAX_LINE = 2000
"""Characters of a line the page keeps."""
_CUT = "…"


def report_data(
    result: PlayResult, items: Sequence[PlanItem] = (), extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The page's data: the JSON report of `result` (with the plan's `items` and the `extra`
    members, as `json_report`), each exchange that holds replies with its `replies`
    (`replies_value`)."""
    data = json_report(result, items, extra)
    replies = {
        (transcript.path, exchange.number): exchange.replies
        for transcript in result.transcripts
        for exchange in transcript.exchanges
        if exchange.replies is not None
    }
    for record in data["exchanges"]:
        found = replies.get((record["file"], record["exchange"]))
        if found is not None:
            record["replies"] = replies_value(found)
    return data


def replies_value(replies: Replies) -> dict[str, Any]:
    """Both replies as the page reads them: `recorded` and `live` (lists of lines, each cut at
    MAX_LINE characters, MAX_LINES lines), `cut` (whether anything was), and `ops`: difflib's
    opcodes (`[tag, i1, i2, j1, j2]`) from the recorded lines to the live ones (pure)."""
    recorded, cut_recorded = _kept(replies.recorded)
    live, cut_live = _kept(replies.live)
    matcher = difflib.SequenceMatcher(None, recorded, live, autojunk=False)
    return {
        "recorded": recorded,
        "live": live,
        "cut": cut_recorded or cut_live,
        "ops": [list(op) for op in matcher.get_opcodes()],
    }


def _kept(lines: Sequence[str]) -> tuple[list[str], bool]:
    kept = [line if len(line) <= MAX_LINE else line[:MAX_LINE] + _CUT for line in lines]
    cut = len(lines) > MAX_LINES or any(len(line) > MAX_LINE for line in lines)
    return kept[:MAX_LINES], cut


def _script_json(value: Any) -> str:
    """JSON that is only data inside an HTML `<script>` element: `<`, `>` and `&` (so no
    `</script>` or `<!--` can appear) and the two JavaScript line separators escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char, escape in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escape)
    return text


def _asset(name: str) -> str:
    return resources.files("recorder.replay.reports").joinpath(name).read_text(encoding="utf-8")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def html_page(data: dict[str, Any], *, title: str = "recorder play") -> str:
    """The self-contained page of a report's data (`report_data`, or a JSON error report's
    value): the data as escaped JSON, the style and the script inline, a CSP that allows them
    alone (pure but for reading the two assets from the package)."""
    style, script = _asset("html_report.css"), _asset("html_report.js")
    policy = (
        f"default-src 'none'; style-src {_hash(style)}; script-src {_hash(script)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    shown = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="recorder">\n'
        f"<title>{shown}</title>\n<style>{style}</style>\n</head>\n<body>\n"
        '<main id="report"><noscript>This report is drawn by its script: '
        "open it in a browser with JavaScript on (its data is in the "
        "report-data block of this file).</noscript></main>\n"
        f'<script type="application/json" id="report-data">{_script_json(data)}</script>\n'
        f"<script>{script}</script>\n</body>\n</html>\n"
    )


def html_error_page(message: str) -> str:
    """The page of a run that stopped before any verdict (`json_error_report`'s data)."""
    return html_page(json.loads(json_error_report(message)))


def write_html_report(
    result: PlayResult,
    path: str | Path,
    items: Sequence[PlanItem] = (),
    extra: Mapping[str, Any] | None = None,
) -> None:
    write_text_atomic(Path(path), html_page(report_data(result, items, extra)))


def write_html_error(message: str, path: str | Path) -> None:
    write_text_atomic(Path(path), html_error_page(message))
