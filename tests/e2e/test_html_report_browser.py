"""The HTML report of a failing run, opened as a reader opens a CI artifact: in headless
Chromium (Debian's, driven by Playwright's playwright-core from `make tools`; no browser is
downloaded), from a file, every request but the page's own refused and counted.

The run is real: `recorder play --html-report` in a child process against the bundled kit,
on goldens edited to fail in each kind of exchange (a message reply whose recorded text is
markup, a stream's frame, a push delivery, a gRPC stream's message). The page must show each
failed exchange's differences, run without a console error and make no request; its
screenshot is saved in the test's folder (the path is printed). A second page, of trials
(`report_data` of a made-up run), shows the pass-rate chart and the flaky filter.

Skipped, saying why, where Chromium, Node.js or playwright-core cannot be had.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from recorder.replay.reports.html_report import html_page, report_data
from recorder.replay.reports.results import ExchangeResult, PlayResult, TranscriptResult, Trials

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
GOLDENS = ROOT / "transcripts"
OPENER = ROOT / "tests" / "fixtures" / "browser" / "open_report.mjs"
PLAYWRIGHT = ROOT / ".tools" / "browser" / "node_modules" / "playwright-core"
INJECTION = "</script><img src=x onerror=document.title=1><b>bold</b>"
LIMIT = 120


@pytest.fixture(scope="module")
def browser() -> tuple[str, str]:
    """(node, chromium), or the test skipped naming what is missing."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    node = shutil.which("node")
    if chromium is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium)")
    if node is None:
        pytest.skip("no node on PATH: Playwright's driver runs under Node.js")
    if not (PLAYWRIGHT / "package.json").exists():
        pytest.skip(f"playwright-core is not installed in {PLAYWRIGHT.parent} (make tools)")
    return node, chromium


def open_page(browser: tuple[str, str], page: Path, screenshot: Path, probe: str) -> dict[str, Any]:
    node, chromium = browser
    done = subprocess.run(
        [node, str(OPENER), str(PLAYWRIGHT), chromium, str(page), str(screenshot), probe],
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout)
    print(f"screenshot: {screenshot}")
    assert screenshot.stat().st_size > 10_000
    return seen


def edit(path: Path, old: str, new: str, after: str = "") -> None:
    """`old` replaced by `new` once, at its first place after the text `after`."""
    text = path.read_text(encoding="utf-8")
    start = text.index(after) if after else 0
    at = text.index(old, start)
    path.write_text(text[:at] + new + text[at + len(old) :], encoding="utf-8")


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(the HTML report, the JSON report, the run's output) of a run that fails in a reply
    body, a stream frame, a push delivery and a gRPC stream message."""
    folder = tmp_path_factory.mktemp("html-run")
    goldens = folder / "transcripts"
    goldens.mkdir()
    for name in (
        "02-message-reply.http",
        "04-streaming.http",
        "17-push-notifications.http",
        "19-grpc-streaming.http",
    ):
        shutil.copy(GOLDENS / name, goldens / name)
    edit(goldens / "02-message-reply.http", '"text": "I can', f'"text": "{INJECTION} I can')
    edit(goldens / "04-streaming.http", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "data: ")
    edit(
        goldens / "17-push-notifications.http",
        '"state": "TASK_STATE_WORKING"',
        '"state": "TASK_STATE_REJECTED"',
        "### push: status TASK_STATE_WORKING",
    )
    edit(goldens / "19-grpc-streaming.http", "4 comments.", "5 comments.", "data: ")
    report, json_path = folder / "report.html", folder / "report.json"
    command = [sys.executable, "-c", "from recorder.cli import main; main()", "play", str(goldens)]
    command += ["--html-report", str(report), "--report-json", str(json_path)]
    env = {**os.environ, "NO_COLOR": "1"}
    played = subprocess.run(
        command, capture_output=True, text=True, timeout=LIMIT * 2, env=env, check=False
    )
    assert played.returncode == 1, played.stdout + played.stderr
    return report, json_path, played.stdout


PROBE = """
const cells = (selector) => [...document.querySelectorAll(selector)].map((e) => e.textContent);
const visible = [...document.querySelectorAll("details.exchange")]
  .filter((d) => d.offsetParent !== null);
return {
  title: document.title,
  images: document.querySelectorAll("img").length,
  bold: document.querySelectorAll("#report b").length,
  summary: document.getElementById("summary-line").textContent,
  pressed: document.querySelector("[aria-pressed=true]").dataset.filter,
  visible: visible.map((d) => [d.dataset.key, d.dataset.verdict, d.open]),
  deleted: cells("td.text.del"),
  inserted: cells("td.text.ins"),
  paths: cells("td.path"),
};
"""


def test_the_failing_runs_page_shows_each_difference_offline(
    browser: tuple[str, str], failing_run: tuple[Path, Path, str], tmp_path: Path
) -> None:
    report, json_path, output = failing_run
    seen = open_page(browser, report, tmp_path / "failing-run.png", PROBE)
    assert seen["console"] == [] and seen["pageErrors"] == []
    assert seen["requests"] == []  # nothing left the page
    probe = seen["probe"]
    # recorded markup is text: no image, no bold element of its own, no script ran
    assert probe["images"] == 0
    assert probe["title"] == "recorder play"
    assert probe["bold"] == 7  # the counts' seven numbers, the page's own <b>s
    assert probe["summary"] == output.strip().splitlines()[-1]
    # the failed filter is on, and shows the four failed exchanges, open
    assert probe["pressed"] == "failed"
    verdicts = json.loads(json_path.read_text())["exchanges"]
    failed = {f"{e['file']}#{e['exchange']}" for e in verdicts if e["verdict"] == "failed"}
    assert {key for key, verdict, is_open in probe["visible"]} == failed
    assert all(verdict == "failed" and is_open for _, verdict, is_open in probe["visible"])
    assert {key.split("#")[0].rsplit("/", 1)[1][:2] for key in failed} == {"02", "04", "17", "19"}
    # each difference, recorded against live, marked in the side-by-side view
    deleted, inserted = "\n".join(probe["deleted"]), "\n".join(probe["inserted"])
    assert f'"text": "{INJECTION} I can review Python' in deleted  # as text
    assert '"state": "TASK_STATE_FAILED"' in deleted
    assert '"state": "TASK_STATE_COMPLETED"' in inserted
    assert '"state": "TASK_STATE_REJECTED"' in deleted  # the push delivery
    assert '"state": "TASK_STATE_WORKING"' in inserted
    assert "5 comments." in deleted and "4 comments." in inserted  # the gRPC stream
    assert "$.result.message.parts[0].text" in probe["paths"]


def test_the_page_and_the_json_report_say_the_same(failing_run: tuple[Path, Path, str]) -> None:
    report, json_path, _ = failing_run
    text = report.read_text(encoding="utf-8")
    block = text.split('<script type="application/json" id="report-data">', 1)[1]
    data = json.loads(block.split("</script>", 1)[0])
    for record in data["exchanges"]:
        assert "replies" in record  # each exchange got a reply here
        del record["replies"]
    stored = json.loads(json_path.read_text())
    for record in (*data["exchanges"], *stored["exchanges"]):
        record.pop("duration")  # (each report rounds the same seconds; kept apart for clarity)
    assert data == stored


TRIALS_PROBE = """
const rows = () => [...document.querySelectorAll("details.exchange")]
  .filter((d) => d.offsetParent !== null).map((d) => d.dataset.key);
const first = rows();
document.querySelector("[data-filter=flaky]").click();
const flaky = rows();
document.querySelector("[data-filter=all]").click();
const all = rows();
const bounds = [...document.querySelectorAll("#trials-chart line.bound")]
  .map((l) => Number(l.getAttribute("x1")));
const rates = [...document.querySelectorAll("#trials-chart rect.rate")]
  .map((r) => Number(r.getAttribute("width")));
return { first, flaky, all, bounds, rates };
"""


def test_trials_show_their_pass_rates_and_the_flaky_filter(
    browser: tuple[str, str], tmp_path: Path
) -> None:
    def trials(passed: int, needed: int, lower: float) -> Trials:
        return Trials(10, passed, needed, planned=10, lower=lower, required=0.8)

    run = PlayResult(
        (
            TranscriptResult(
                "t/01-reworded.http",
                (
                    ExchangeResult(1, "always", 3, trials=trials(10, 8, 0.74)),
                    ExchangeResult(2, "mostly", 20, trials=trials(8, 8, 0.49)),
                    ExchangeResult(3, "rarely", 40, trials=trials(3, 8, 0.1)),
                ),
            ),
        )
    )
    page = tmp_path / "trials.html"
    page.write_text(html_page(report_data(run)), encoding="utf-8")
    seen = open_page(browser, page, tmp_path / "trials.png", TRIALS_PROBE)
    assert seen["console"] == [] and seen["pageErrors"] == [] and seen["requests"] == []
    probe = seen["probe"]
    assert probe["first"] == ["t/01-reworded.http#3"]  # failed first
    assert probe["flaky"] == ["t/01-reworded.http#2", "t/01-reworded.http#3"]
    assert len(probe["all"]) == 3
    assert probe["rates"] == [200.0, 160.0, 60.0]  # of 200: the pass rates
    assert probe["bounds"] == pytest.approx([148.0, 98.0, 20.0])  # Wilson's lower bounds
