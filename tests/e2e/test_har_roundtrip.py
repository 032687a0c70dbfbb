"""HAR in and out, for real (issue 38): transcripts -> `recorder export --to har` -> `recorder
import` gives the same transcripts (`recorder check` passes, they replay clean against a fresh
kit), for the shipped goldens (all three bindings) and for unscripted SDK traffic recorded
through the proxy (`@during`); and HAR files of two real producers
(mitmproxy's `mitmdump`, Playwright's `recordHar` in Chromium) import into transcripts that
replay clean. The producers' files made once are committed (`tests/fixtures/har/`); a test
that makes them anew skips, saying why, where its tool is not installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from har_captures import FIXTURES, capture_mitmdump, capture_playwright, missing
from helpers import TRANSCRIPTS, start_test_kit
from traffic import drive

from recorder.checking import check_paths
from recorder.cli import main
from recorder.kit import start_kit
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.replay.reports.results import PlayResult
from recorder.replay.run import play

pytestmark = pytest.mark.e2e

TIMEOUT = 10.0  # seconds per exchange


def run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def through_har(folder: Path, tmp_path: Path) -> Path:
    """`folder` exported to one HAR and imported into a new folder."""
    har = tmp_path / "exported.har"
    run("export", str(folder), "--to", "har", "-o", str(har))
    out = tmp_path / "imported"
    run("import", str(har), "-o", str(out))
    return out


def replayed(folder: Path, token: str | None = None) -> PlayResult:
    """`folder` played against a fresh kit."""
    with start_test_kit() as kit:
        environ = {"A2A_TOKEN": token or kit.token}
        return play([str(folder)], agent=kit.url, timeout=TIMEOUT, environ=environ)


def failures(result: PlayResult) -> list[str]:
    return [
        f"{outcome.path}#{exchange.index}: {exchange.mismatches or exchange.error}"
        for outcome in result.transcripts
        for exchange in outcome.exchanges
        if not exchange.passed
    ]


def same_files(before: Path, after: Path) -> None:
    names = sorted(p.name for p in before.glob("*.http"))
    assert sorted(p.name for p in after.glob("*.http")) == names
    for name in names:
        assert (after / name).read_text() == (before / name).read_text(), name


def test_the_goldens_come_back_byte_for_byte_and_replay(tmp_path: Path) -> None:
    out = through_har(TRANSCRIPTS, tmp_path)
    same_files(TRANSCRIPTS, out)
    count, problems = check_paths([str(out)])
    assert (count, problems) == (22, [])
    result = replayed(out)
    assert failures(result) == []
    assert result.exchange_count == 58


def test_the_har_holds_placeholders_never_secrets(tmp_path: Path) -> None:
    har = tmp_path / "all.har"
    run("export", str(TRANSCRIPTS), "--to", "har", "-o", str(har))
    text = har.read_text()
    with start_kit() as kit:
        assert kit.token not in text
    entries = json.loads(text)["log"]["entries"]
    card = next(
        e
        for e in entries
        if e["_recorder"]["file"] == "10-extended-card.http" and e["_recorder"]["exchange"] == 2
    )
    headers = {h["name"]: h["value"] for h in card["request"]["headers"]}
    assert headers["Authorization"] == "Bearer {{A2A_TOKEN}}"
    assert card["_recorder"]["placeholders"] == ["A2A_TOKEN"]


def test_unscripted_sdk_traffic_comes_back_byte_for_byte_and_replays(tmp_path: Path) -> None:
    # the a2a-sdk client's own run through the recording proxy: random ids, streams read,
    # abandoned and opened at once (@during); push deliveries (@push) are the goldens' 17
    recorded = tmp_path / "recorded"
    with start_kit() as kit:
        # (the conversation's webhook is on loopback: local work, said so)
        proxy = create_proxy_app(kit.url, out=recorded, push_loopback=True)
        with ProxyServer(proxy) as server:
            drive(server.url, token=kit.token)
        token = kit.token
    tags = "".join(path.read_text() for path in recorded.glob("*.http"))
    assert "# @during exchange" in tags
    out = through_har(recorded, tmp_path)
    same_files(recorded, out)
    assert check_paths([str(out)])[1] == []
    assert failures(replayed(out, token)) == []


@pytest.mark.parametrize("name", ["mitmdump.har", "playwright.har"])
def test_a_producers_har_imports_into_transcripts_that_replay(tmp_path: Path, name: str) -> None:
    out = tmp_path / "imported"
    run("import", str(FIXTURES / name), "-o", str(out))
    text = "".join(path.read_text() for path in sorted(out.glob("*.http")))
    assert "kit-demo-token" not in text  # (mitmdump's capture sent it: redacted)
    count, problems = check_paths([str(out)])
    assert problems == [] and count >= 4
    result = replayed(out, "kit-demo-token")
    assert failures(result) == []
    assert result.exchange_count >= 6


@pytest.mark.parametrize(
    ("tool", "capture"),
    [("mitmdump", capture_mitmdump), ("playwright", capture_playwright)],
)
def test_a_fresh_capture_imports_and_replays(tmp_path: Path, tool: str, capture: object) -> None:
    why = missing(tool)
    if why is not None:
        pytest.skip(why)
    assert callable(capture)
    with start_kit() as kit:
        har = capture(kit.base_url, tmp_path / "capture.har")
        token = kit.token
    out = tmp_path / "imported"
    run("import", str(har), "-o", str(out))
    assert check_paths([str(out)])[1] == []
    assert failures(replayed(out, token)) == []
