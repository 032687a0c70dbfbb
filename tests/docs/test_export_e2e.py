"""Every golden transcript exported, run by real clients against a fresh kit: bash + curl, and
httpyac when `make test` installed it in `.tools/` (skipped otherwise). Each request must get
the recorded status and outcome: result or JSON-RPC/HTTP error code, and a stream's frame kinds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recorder.cli import main
from recorder.disk.transcripts import load
from recorder.format.model import Response, is_event_stream
from recorder.kit import KitServer, start_kit

ROOT = Path(__file__).resolve().parents[2]
GOLDENS = ROOT / "transcripts"
BASH = shutil.which("bash")
CURL = shutil.which("curl")
JQ = shutil.which("jq")
HTTPYAC = ROOT / ".tools" / "node_modules" / ".bin" / "httpyac"
_MARK = re.compile(r"^### (\d+)\. .*\n", re.MULTILINE)

Outcome = tuple[Any, ...]


def _kind(value: Any) -> str:
    """What a result is: the one member of a wrapper (`task`, `message`, `statusUpdate` …)."""
    if isinstance(value, dict) and len(value) == 1:
        return str(next(iter(value)))
    return type(value).__name__


def _json_outcome(value: Any) -> Outcome:
    if isinstance(value, dict) and isinstance(value.get("error"), dict):
        return ("error", value["error"].get("code"))
    if isinstance(value, dict) and "result" in value and "jsonrpc" in value:
        return ("result", _kind(value["result"]))
    return ("result", _kind(value))


def _frames(text: str) -> list[str]:
    frames = []
    for event in re.split(r"\n\n", text.replace("\r\n", "\n")):
        data = [
            line[5:].removeprefix(" ") for line in event.split("\n") if line.startswith("data:")
        ]
        if data:
            frames.append("\n".join(data))
    return frames


def outcome(status: int, content_type: str | None, body: str) -> Outcome:
    """(status, what the reply says): a result's kind or an error code; a stream's frame kinds."""
    if is_event_stream(content_type):
        return (status, "stream", tuple(_json_outcome(json.loads(f)) for f in _frames(body)))
    try:
        value = json.loads(body) if body.strip() else None
    except ValueError:
        return (status, "text")
    return (status, *_json_outcome(value))


def recorded(response: Response) -> Outcome:
    if response.events is not None:
        frames = [e.data for e in response.events if e.data is not None]
        return (response.status, "stream", tuple(_json_outcome(json.loads(f)) for f in frames))
    return outcome(response.status, response.content_type, response.body.decode())


def curl_replies(output: str) -> dict[int, Outcome]:
    """The script's output -> exchange number -> outcome (replies come under `### N.` lines)."""
    replies: dict[int, Outcome] = {}
    marks = list(_MARK.finditer(output))
    for mark, after in zip(marks, [*marks[1:], None], strict=True):
        chunk = output[mark.end() : after.start() if after else len(output)]
        head, _, body = chunk.replace("\r\n", "\n").partition("\n\n")
        status = int(head.split("\n", 1)[0].split(" ")[1])
        content_type = next(
            (
                line.split(":", 1)[1].strip()
                for line in head.split("\n")
                if line.lower().startswith("content-type:")
            ),
            None,
        )
        replies[int(mark.group(1))] = outcome(status, content_type, body.removesuffix("\n"))
    return replies


@pytest.fixture(scope="module")
def kit() -> Iterator[KitServer]:
    with start_kit() as server:
        yield server


def _export(folder: Path, target: str, base_url: str) -> list[Path]:
    result = CliRunner().invoke(
        main, ["export", str(GOLDENS), "--to", target, "--base-url", base_url, "-o", str(folder)]
    )
    assert result.exit_code == 0, result.output
    suffix = ".sh" if target == "curl" else ".http"
    return sorted(folder.glob("*" + suffix))


def _http_goldens() -> list[Path]:
    """The goldens without a gRPC call."""
    return [p for p in GOLDENS.glob("*.http") if not any(e.request.is_grpc for e in load(p))]


def _compare(path: Path, live: dict[int, Outcome]) -> list[str]:
    transcript = load(GOLDENS / path.with_suffix(".http").name)
    problems = []
    for number, exchange in enumerate(transcript, start=1):
        if exchange.push_config is not None:
            continue  # a push delivery: the agent's, not in the client's script
        expected = recorded(exchange.response)
        got = live.get(number)
        if got != expected:
            problems.append(f"{path.name} exchange {number}: expected {expected}, got {got}")
    return problems


@pytest.mark.e2e
@pytest.mark.skipif(None in (BASH, CURL, JQ), reason="needs bash, curl and jq on PATH")
def test_every_golden_exported_to_curl_runs_with_the_recorded_outcomes(
    kit: KitServer, tmp_path: Path
) -> None:
    scripts = _export(tmp_path, "curl", "http://127.0.0.1:9")  # BASE_URL overrides it
    assert len(scripts) == len(list(GOLDENS.glob("*.http")))
    # the gRPC goldens' scripts call grpcurl (tests/docs/test_grpc_export_e2e.py runs such
    # scripts against a kit's gRPC port): the HTTP goldens' run here
    http_goldens = _http_goldens()
    scripts = [s for s in scripts if s.with_suffix(".http").name in {p.name for p in http_goldens}]
    env = {"PATH": os.environ["PATH"], "BASE_URL": kit.url, "A2A_TOKEN": kit.token}
    env["TOKEN"] = "push-token-1"
    env["PUSH_URL_SECRET"] = "a-webhook-secret-1"
    env["CREDENTIALS"] = "push-credentials-1"

    def run(script: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
        assert BASH is not None
        completed = subprocess.run(
            [BASH, str(script)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        return script, completed

    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(run, scripts))
    problems: list[str] = []
    exchanges = 0
    for script, completed in runs:
        assert completed.returncode == 0, f"{script.name}: {completed.stderr}"
        replies = curl_replies(completed.stdout)
        exchanges += len(replies)
        problems.extend(_compare(script, replies))
    assert problems == []
    sent = [e for p in http_goldens for e in load(p) if e.push_config is None]
    assert exchanges == len(sent) == 45


@pytest.mark.e2e
@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_a_curl_export_stops_on_a_missing_token_before_sending(tmp_path: Path) -> None:
    script = tmp_path / "10.sh"
    result = CliRunner().invoke(
        main, ["export", str(GOLDENS / "10-extended-card.http#2"), "--to", "curl"]
    )
    script.write_text(result.stdout)
    assert BASH is not None
    completed = subprocess.run(
        [BASH, str(script)],
        env={"PATH": os.environ["PATH"], "BASE_URL": "http://127.0.0.1:9"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert completed.returncode != 0
    assert "A2A_TOKEN: set A2A_TOKEN" in completed.stderr
    assert "Failed to connect" not in completed.stderr  # stopped before curl ran


# .http clients send one request at a time: a request recorded @during a stream goes after the
# stream ended (README), so 08-subscribe's cancel comes too late in httpyac, and the stream it
# should have ended runs to the kit's slow-review end. Every other request chains and matches.
SEQUENTIAL_ONLY = {("08-subscribe.http", 2), ("08-subscribe.http", 3)}


@pytest.mark.e2e
@pytest.mark.skipif(not HTTPYAC.exists(), reason="httpyac not installed in .tools/ (make test)")
def test_every_golden_exported_to_http_runs_in_httpyac(tmp_path: Path) -> None:
    def run(path: Path, kit: KitServer) -> dict[int, Outcome]:
        variables = ["--var", f"A2A_TOKEN={kit.token}", "--var", "TOKEN=push-token-1"]
        # (17-push-notifications' webhook: its secret path part and credentials)
        variables += ["--var", "PUSH_URL_SECRET=a-webhook-secret-1", "--var", "CREDENTIALS=c1"]
        completed = subprocess.run(
            [str(HTTPYAC), "send", str(path), "--all", "--json", *variables],
            capture_output=True,
            text=True,
            timeout=90,
            stdin=subprocess.DEVNULL,
            check=False,
            cwd=tmp_path,
        )
        assert completed.returncode == 0, f"{path.name}: {completed.stderr}"
        replies = {}
        # the exported requests are the exchanges the client sent (no push delivery)
        golden = load(GOLDENS / path.with_suffix(".http").name)
        numbers = [n for n, e in enumerate(golden, start=1) if e.push_config is None]
        items = json.loads(completed.stdout)["requests"]
        assert len(items) == len(numbers), path.name
        for number, item in zip(numbers, items, strict=True):
            response = item["response"]
            headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
            body = response.get("body")
            text = body if isinstance(body, str) else json.dumps(body)
            replies[number] = outcome(response["statusCode"], headers.get("content-type"), text)
        return replies

    # a short slow review: the 08-subscribe stream, which no cancel ends here, ends after 2 s
    with start_kit(slow_review_seconds=2.0) as kit:
        files = _export(tmp_path, "http", kit.url)
        # (gRPC calls in httpyac: tests/docs/test_grpc_export_e2e.py)
        names = {p.name for p in _http_goldens()}
        files = [f for f in files if f.name in names]
        with ThreadPoolExecutor(max_workers=4) as pool:
            runs = list(pool.map(lambda path: (path, run(path, kit)), files))
    problems: list[str] = []
    exchanges = 0
    for path, replies in runs:
        exchanges += len(replies)
        problems.extend(_compare(path, replies))
    sent = [e for p in _http_goldens() for e in load(p) if e.push_config is None]
    assert exchanges == len(sent) == 45
    failed = {(p.split(" ")[0], int(p.split(" ")[2].rstrip(":"))) for p in problems}
    assert failed == SEQUENTIAL_ONLY, problems
