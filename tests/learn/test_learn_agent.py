"""`recorder learn` against a real agent made noisy on purpose (the kit behind
`noisy_agent.NoisyAgent`): play fails before, learn writes the narrowest rules, play passes
after, and regressions at a learned place's neighbour, at a learned value's type and at a
stable place are still caught."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import DIFF, GoldenRecorder, rpc, user_message
from noisy_agent import NoisyAgent

from recorder.cli import main
from recorder.disk.transcripts import dump
from recorder.format.model import Transcript
from recorder.kit import KitServer
from recorder.learn import learn
from recorder.replay.run import play
from recorder.replay.send import make_transport
from recorder.rules.ruleset import load_rules, rules_warnings

EXPECTED_RULES = {
    ("generated_paths", "$.result.served.at", "integer"),
    ("generated_paths", "$.result.served.took", "duration"),
    ("generated_paths", "$.result.served.host", "hostname"),
    ("generated_paths", "$.result.served.trace", "hex"),
    ("generated_paths", "$.result.served.cursor", "base64"),
    ("generated_paths", "$.result.served.items[*].seq", "integer"),
    ("generated_paths", "$.result.served.ticket", "id"),  # named again by later replies
    ("unordered_paths", "$.result.served.shards", None),
    ("ignored_headers", "x-served-by", None),
}


@pytest.fixture(scope="module")
def noisy(kit: KitServer) -> Iterator[NoisyAgent]:
    with NoisyAgent(kit) as agent:
        yield agent


@pytest.fixture(scope="module")
def goldens(noisy: NoisyAgent, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three transcripts recorded through the noisy agent (a stream among them)."""
    folder = tmp_path_factory.mktemp("noisy-goldens")
    with make_transport() as transport:
        rec = GoldenRecorder(noisy, transport)  # type: ignore[arg-type]
        review = rec.exchange(
            "SendMessage: review a diff", rpc(1, "SendMessage", user_message("msg-1", DIFF))
        )
        task_id = review.response.json["result"]["task"]["id"]
        files = {
            "01-review.http": [
                review,
                rec.exchange("GetTask: the review", rpc(2, "GetTask", {"id": task_id})),
            ],
            "02-languages.http": [
                rec.exchange(
                    "SendMessage: languages",
                    rpc(1, "SendMessage", user_message("msg-2", "Which languages?")),
                )
            ],
            "03-stream.http": [
                rec.exchange(
                    "SendStreamingMessage: review as a stream",
                    rpc(1, "SendStreamingMessage", user_message("msg-3", DIFF)),
                    stream=True,
                )
            ],
        }
    for name, exchanges in files.items():
        dump(Transcript(tuple(exchanges)), folder / name)
    return folder


@pytest.fixture
def clean(noisy: NoisyAgent) -> Iterator[NoisyAgent]:
    noisy.rewrite = None
    yield noisy
    noisy.rewrite = None


def _failures(result: Any) -> list[str]:
    return [
        f"{t.path} {e.number}: {m.path}"
        for t in result.transcripts
        for e in t.exchanges
        for m in e.mismatches
    ] + [
        f"{t.path} {e.number}: {e.error}"
        for t in result.transcripts
        for e in t.exchanges
        if e.error
    ]


def test_learn_makes_a_noisy_agent_replay_and_keeps_real_regressions(
    clean: NoisyAgent, goldens: Path, tmp_path: Path
) -> None:
    env = {"A2A_TOKEN": clean.token}
    before = play([goldens], agent=clean.url, environ=env)
    assert not before.passed
    failing = "\n".join(_failures(before))
    assert "$.result.served.trace" in failing and "$.result.served.at" in failing
    stream = next(t for t in before.transcripts if t.path.endswith("03-stream.http"))
    assert {1, 2, 3, 4} <= {m.frame for m in stream.exchanges[0].mismatches}  # noisy frames

    output = tmp_path / "rules.yaml"
    learned = learn([goldens], agent=clean.url, output=str(output), environ=env, runs=2)
    found = {(p.key, p.target, p.kind) for p in learned.proposals.rules}
    assert found == EXPECTED_RULES
    assert learned.regressions == 0
    text = output.read_text()
    assert "01-review.http exchange 1" in text and "# differs between live runs" in text
    assert rules_warnings(output) == []
    rules = load_rules(output)
    assert "date" in rules.ignored_headers  # the defaults stay

    for _ in range(10):
        after = play([goldens], agent=clean.url, rules=rules, environ=env)
        assert after.passed, _failures(after)

    def neighbour(body: dict[str, Any]) -> None:
        body["result"]["served"]["region"] = "us-east-2"

    def learned_type(body: dict[str, Any]) -> None:
        body["result"]["served"]["at"] = str(body["result"]["served"]["at"])

    def item_type(body: dict[str, Any]) -> None:
        body["result"]["served"]["items"][1]["seq"] = "7"

    def wrong_id(body: dict[str, Any]) -> None:
        # a reply about the review that names another conversation's ticket
        if "task" not in body["result"] and "served" in body["result"]:
            body["result"]["served"]["ticket"] = "0123456789abcdef01234567"

    def stable(body: dict[str, Any]) -> None:
        task = body["result"].get("task", body["result"])
        if "status" in task:
            task["status"]["state"] = "TASK_STATE_FAILED"

    for rewrite, path in (
        (neighbour, "$.result.served.region"),
        (learned_type, "$.result.served.at"),
        (item_type, "$.result.served.items[1].seq"),
        (wrong_id, "01-review.http 2: $.result.served.ticket"),
        (stable, ".status.state"),
    ):
        clean.rewrite = rewrite
        caught = play([goldens], agent=clean.url, rules=rules, environ=env)
        assert not caught.passed, rewrite.__name__
        assert any(path in f for f in _failures(caught)), (rewrite.__name__, _failures(caught))


def test_learn_cli_reports_a_stable_place_as_a_likely_regression(
    clean: NoisyAgent, goldens: Path, tmp_path: Path
) -> None:
    def neighbour(body: dict[str, Any]) -> None:
        body["result"]["served"]["version"] = "2.0"

    clean.rewrite = neighbour
    output = tmp_path / "rules.yaml"
    result = CliRunner().invoke(
        main,
        ["learn", str(goldens), "--agent", clean.url, "-o", str(output)],
        env={"A2A_TOKEN": clean.token},
    )
    assert result.exit_code == 1, result.output
    assert "likely regression: " in result.stdout
    assert '$.result.served.version: expected "1.0", got "2.0"' in result.stdout
    assert "version" not in output.read_text().replace("version: 1", "")  # not learned
    # the rules are in the file: stdout has the likely regressions and the summary, not a
    # line per rule (issue 38)
    assert [
        line
        for line in result.stdout.splitlines()
        if not line.startswith(("likely regression: ", "recorder learn: "))
    ] == []
    assert result.stdout.endswith(
        "recorder learn: 9 rules learned from 4 live runs of 4 exchanges in 3 files, written to"
        f" {output}; 4 likely regressions\n"
    )
    # -v lists them, a line each (what was learned, and why)
    verbose = CliRunner().invoke(
        main,
        ["learn", str(goldens), "--agent", clean.url, "-o", str(output), "-v"],
        env={"A2A_TOKEN": clean.token},
    )
    listed = [line for line in verbose.stdout.splitlines() if line.startswith("  ")]
    assert len([line for line in listed if "  # " in line]) == 9, verbose.stdout


def test_update_refuses_to_bless_noise_and_names_the_rule_to_add(
    clean: NoisyAgent, goldens: Path, tmp_path: Path
) -> None:
    env = {"A2A_TOKEN": clean.token}
    shutil.copytree(goldens, tmp_path / "g")
    path = tmp_path / "g" / "02-languages.http"
    recorded = path.read_bytes()
    result = play([path], agent=clean.url, update=True, environ=env)
    (transcript,) = result.transcripts
    assert not transcript.updated
    assert transcript.not_updated == (
        "exchange 1 differs between two live runs at $.result.served.at (8 more such places):"
        ' noise, not a change; add `generated_paths: {"$.result.served.at": integer}` to the'
        " rules, or run `recorder learn`"
    )
    assert path.read_bytes() == recorded

    # with the rules learned, a real change is blessed, and the noise is not written
    learn([path], agent=clean.url, output=str(tmp_path / "rules.yaml"), environ=env)
    rules = load_rules(tmp_path / "rules.yaml")

    def neighbour(body: dict[str, Any]) -> None:
        body["result"]["served"]["region"] = "us-east-2"

    clean.rewrite = neighbour
    result = play([path], agent=clean.url, rules=rules, update=True, environ=env)
    assert result.transcripts[0].updated, result.transcripts[0].not_updated
    assert '"region": "us-east-2"' in path.read_text()
    for _ in range(3):
        assert play([path], agent=clean.url, rules=rules, environ=env).passed


def test_learn_merges_into_the_rules_file_it_is_given(
    clean: NoisyAgent, goldens: Path, tmp_path: Path
) -> None:
    path = tmp_path / "rules.yaml"
    mine = "# my rules\nversion: 1\nignored_paths: ['$..totalSize']  # state-dependent\n"
    path.write_text(mine)
    result = CliRunner().invoke(
        main,
        ["learn", str(goldens), "--agent", clean.url, "--rules", str(path), "--runs", "3"],
        env={"A2A_TOKEN": clean.token},
    )
    assert result.exit_code == 0, result.output
    assert "9 rules learned from 3 live runs" in result.stdout
    text = path.read_text()
    assert text.startswith(mine)  # every line kept; the learned keys appended
    rules = load_rules(path)
    assert "$..totalSize" in rules.ignored_paths
    assert {(k, p) for k, p, _ in EXPECTED_RULES if k == "generated_paths"} <= {
        ("generated_paths", p) for p in rules.generated_paths
    }
    assert rules_warnings(path) == []
    assert play([goldens], agent=clean.url, rules=rules, environ={"A2A_TOKEN": clean.token}).passed
