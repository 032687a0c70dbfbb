"""A model as judge, end to end: `recorder play` (the real CLI and player) replays the shipped
recording of docs/llm-agents.md against the real kit with `--vary` (a fixed seed), its rules
asking a model judge and embedding similarity of a scripted OpenAI-compatible server of our
own on loopback (`tests/model_server.py`: it compares the facts of the two answers, as a model
judging meaning would).

- a fresh wording passes; the report and the JSON report say what the model checks cost;
  the same answers again (a fresh kit, the same seed) cost 0 requests, counted at the server;
- a regression injected in front of the kit (`wordy_agent.WordyAgent`: a finding left out)
  fails at the answer's path with the judge's reason;
- a judge that disagrees with itself is reported unstable, not passed;
- no endpoint: a usage error before anything is sent; --no-judge: skipped, said so;
- the key is in no output, report, cache file or log;
- two processes at once share the cache safely.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from model_server import ModelServer, answers_in, facts_judge
from wordy_agent import IGNORE_SERVED_BY, WordyAgent, reword

from recorder.cli import main
from recorder.kit import KitServer, start_kit

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parent.parent.parent
SEED = 37
KEY = "sk-test-e2e-Pw7Ld2Qx9Kz4"
ANSWERS = '"$..parts[*].text"'
RULES = f"""\
checks:
  - path: {ANSWERS}
    in: "01-llm-review.http"
    assert:
      - judge: {{model: scripted-judge, votes: 3}}
      - similar: {{method: embedding, model: scripted-embed, min: 0.3}}
"""
BIN = Path(sys.executable).parent


@pytest.fixture
def place(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "docs" / "llm", tmp_path / "llm")
    (tmp_path / "rules.yaml").write_text(RULES + IGNORE_SERVED_BY)
    return tmp_path


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(key=KEY) as made:
        yield made


def environ(server: ModelServer | None, kit: KitServer) -> dict[str, str]:
    env = {"A2A_TOKEN": kit.token, "NO_COLOR": "1", "OPENAI_BASE_URL": "", "OPENAI_API_KEY": ""}
    if server is not None:
        env.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=KEY)
    return env


def play(place: Path, agent: str, env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(
        main,
        ["play", str(place / "llm"), "--agent", agent, "--rules", str(place / "rules.yaml"), *args],
        env=env,
        catch_exceptions=False,
    )


def test_a_fresh_wording_passes_and_a_second_run_pays_nothing(
    place: Path, server: ModelServer
) -> None:
    report = place / "report.json"
    with start_kit(vary=True, seed=SEED) as kit:
        first = play(place, kit.url, environ(server, kit), "--report-json", str(report))
    assert first.exit_code == 0, first.output
    chats, embeds = server.count(), server.count("/v1/embeddings")
    assert chats > 0 and embeds > 0
    lines = first.stdout.splitlines()
    assert lines[-1] == "1 transcript, 4 exchanges: 4 passed, 0 failed"
    judge_line = next(line for line in lines if line.startswith("model judge: "))
    assert re.fullmatch(
        r"model judge: (\d+) verdicts: \1 passed, 0 failed; votes unanimous in \1 of \1", judge_line
    )
    cost = next(line for line in lines if line.startswith("model calls: "))
    assert cost.startswith(f"model calls: {chats + embeds} requests, ")
    model = json.loads(report.read_text())["model"]
    assert model["requests"] == chats + embeds
    assert model["tokens"]["prompt"] > 0 and model["verdicts"]["passed"] >= 3
    places = {j["place"].rpartition("#")[2] for j in model["judgments"]}
    assert {p.split()[0] for p in places} == {"2", "3", "4"}  # each answer judged
    assert all(j["self_check"] == {"votes": 3, "passed": 3} for j in model["judgments"])
    # the same wordings again (a fresh kit, the same seed): every answer from the cache
    with start_kit(vary=True, seed=SEED) as kit:
        second = play(place, kit.url, environ(server, kit), "--report-json", str(report), "-j", "2")
    assert second.exit_code == 0, second.output
    assert (server.count(), server.count("/v1/embeddings")) == (chats, embeds)
    again = json.loads(report.read_text())["model"]
    assert again["requests"] == 0 and again["cached"] > 0
    assert "model calls: 0 requests, " in second.stdout


def test_a_finding_left_out_fails_at_the_answers_path_with_the_judges_reason(
    place: Path, server: ModelServer
) -> None:
    def without_todo(text: str) -> str:
        return "\n".join(line for line in text.split("\n") if "todo" not in line.lower())

    with start_kit(vary=True, seed=SEED) as kit, WordyAgent(kit) as agent:
        agent.rewrite = reword(without_todo, only="")
        result = play(place, agent.url, environ(server, kit))
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert re.search(
        # (the text of the artifact: its text parts joined)
        r"\$\.result\.task\.artifacts\[0\]\.parts\[\*\]\.text: check judge model scripted-judge "
        r"failed: the judge says no \(0/3 votes pass\): the facts differ; differences: "
        r"\[todo\] is missing",
        out,
    ), out
    assert "✗ exchange 3 (SendMessage)" in out and "✗ exchange 4 (GetTask)" in out


def test_a_judge_that_disagrees_with_itself_is_unstable_not_passed(place: Path) -> None:
    def unsteady(body: dict[str, Any]) -> dict[str, Any]:
        recorded, live = answers_in(body)
        if recorded == live and "[todo]" in recorded and body["seed"] == 1:
            return {"pass": False, "reason": "these differ in tone", "differences": []}
        return facts_judge(body)

    report = place / "report.json"
    with ModelServer(judge=unsteady) as server, start_kit(vary=True, seed=SEED) as kit:
        result = play(place, kit.url, environ(server, kit), "--report-json", str(report))
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert "unstable judge: it failed the recorded answer against itself in 1 of 3 votes" in out
    assert re.search(r"^model judge: \d+ verdicts: \d+ passed, 0 failed, \d+ unstable", out, re.M)
    assert re.search(r"^  unstable: .*01-llm-review\.http#3 \$\.result\.task", out, re.M)
    model = json.loads(report.read_text())["model"]
    assert model["verdicts"]["unstable"] >= 1
    exchanges = json.loads(report.read_text())["exchanges"]
    assert exchanges[2]["verdict"] == "failed"
    assert exchanges[2]["mismatches"][0]["check"] == "judge model scripted-judge"


def test_no_endpoint_is_a_usage_error_before_anything_is_sent(place: Path) -> None:
    with start_kit(vary=True, seed=SEED) as kit, WordyAgent(kit) as agent:
        seen: list[Any] = []
        agent.rewrite = seen.append
        result = play(place, agent.url, environ(None, kit))
        assert result.exit_code == 2, result.output
        assert seen == []  # (nothing sent to the agent)
        assert result.stdout == ""
        assert result.stderr.startswith(
            f"recorder play: {place / 'rules.yaml'}:5: judge model scripted-judge: no model "
            "endpoint: set OPENAI_BASE_URL"
        )
        assert len(result.stderr.splitlines()) == 1  # (each problem once, at its first check)
        skipped = play(place, kit.url, environ(None, kit), "--no-judge")
    assert skipped.exit_code == 0, skipped.output
    lines = skipped.stdout.splitlines()
    # 5 answers (exchange 3's task has two), a judge and a similarity at each
    assert lines[-2] == "model checks: 10 skipped (--no-judge): not judged, not passed"
    assert lines[-1] == "1 transcript, 4 exchanges: 4 passed, 0 failed"


def test_the_key_is_in_no_output_report_or_cache(place: Path, server: ModelServer) -> None:
    outputs = []
    with start_kit(vary=True, seed=SEED) as kit:
        for options in ((), ("-v",)):
            result = play(
                place,
                kit.url,
                environ(server, kit),
                "--report-json",
                str(place / "r.json"),
                "--junit-xml",
                str(place / "r.xml"),
                *options,
            )
            outputs.append(result.output)
        with ModelServer(key="another-key") as refusing:  # (a 401 echoing the key sent)
            env = {**environ(refusing, kit), "OPENAI_API_KEY": KEY}
            failed = play(place, kit.url, env, "--report-json", str(place / "r401.json"))
    assert failed.exit_code == 1 and "Bearer ***" in failed.stdout
    outputs.append(failed.output)
    assert all(KEY not in output for output in outputs)
    written = [p for p in place.rglob("*") if p.is_file()]
    assert any(".recorder-cache" in p.parts for p in written)
    for path in written:
        assert KEY.encode() not in path.read_bytes(), path


def test_two_processes_share_the_cache(place: Path) -> None:
    # two processes at once, each against a kit of the same seed: they ask the same things
    # at the same time, and write each answer to the same cache
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "NO_COLOR": "1",
        "OPENAI_API_KEY": "",
    }

    def command(kit: KitServer) -> list[str]:
        rules = str(place / "rules.yaml")
        return ["recorder", "play", str(place / "llm"), "--agent", kit.url, "--rules", rules]

    with (
        ModelServer() as server,
        start_kit(vary=True, seed=SEED) as one,
        start_kit(vary=True, seed=SEED) as other,
    ):
        env.update(A2A_TOKEN=one.token, OPENAI_BASE_URL=server.base_url)
        both = [
            subprocess.Popen(command(kit), env=env, stdout=subprocess.PIPE, text=True)
            for kit in (one, other)
        ]
        outs = [process.communicate(timeout=120)[0] for process in both]
    assert [p.returncode for p in both] == [0, 0], outs
    entries = list((place / ".recorder-cache").rglob("*.json"))
    assert entries and all(isinstance(json.loads(e.read_text()), dict) for e in entries)
    assert not list(place.rglob(".recorder-tmp"))  # (no temporary file left)
    # a third run of the same wordings: every answer from the cache
    with ModelServer() as server, start_kit(vary=True, seed=SEED) as kit:
        env.update(A2A_TOKEN=kit.token, OPENAI_BASE_URL=server.base_url)
        third = subprocess.run(command(kit), env=env, capture_output=True, text=True, timeout=120)
    assert third.returncode == 0, third.stdout + third.stderr
    assert server.requests == []
    assert "model calls: 0 requests" in third.stdout
