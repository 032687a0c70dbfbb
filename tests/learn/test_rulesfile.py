"""The learned rules as a YAML rules file: new (`render`) or merged into one (`merge`), every
line of it kept; and the kit's own goldens, which learn nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import TRANSCRIPTS, start_test_kit

from recorder.cli import main
from recorder.kit import KitServer
from recorder.learn import learn
from recorder.learn.rulesfile import merge, render
from recorder.rules.noise import Proposal
from recorder.rules.ruleset import DEFAULT_RULES, rules_from_text, rules_warnings

PROPOSALS = [
    Proposal(
        "generated_paths", "$.result.at", "integer", "why at", ("f exchange 1",), ("1", "2"), 1
    ),
    Proposal("unordered_paths", "$.result.tags", None, "why tags", ("f exchange 2",)),
    Proposal("ignored_paths", "$.result['odd name']", None, "why odd", ("f exchange 2",)),
    Proposal("ignored_headers", "x-served-by", None, "why header", ("f exchange 3",), ("a",)),
]


def learned_in(text: str) -> None:
    rules = rules_from_text(text, "rules.yaml")
    assert rules.generated_paths["$.result.at"] == "integer"
    assert "$.result.tags" in rules.unordered_paths
    assert "$.result['odd name']" in rules.ignored_paths
    assert "x-served-by" in rules.ignored_headers


def test_render_writes_commented_rules_that_keep_the_defaults(tmp_path: Path) -> None:
    text = render(PROPOSALS, ["learned by a test"], scrub=lambda s: s.replace("2", "{{X}}"))
    assert text.startswith("# learned by a test\nversion: 1\n")
    assert "  # why at (1 exchange)\n  #   in: f exchange 1\n  #   seen: 1, {{X}}\n" in text
    learned_in(text)
    rules = rules_from_text(text, "rules.yaml")
    assert DEFAULT_RULES.ignored_headers < rules.ignored_headers
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    assert rules_warnings(path) == []


@pytest.mark.parametrize(
    "original",
    [
        "",
        "# only a comment\n",
        "version: 1\nignored_paths: []\ngenerated_paths: {}\n",
        "version: 1\nignored_paths:\n  - $.a\n# mine\ngenerated_paths:\n  $.b: id\n"
        "unordered_paths:\n  add: [$.c]\nignored_headers: {add: [x-a], remove: [date]}",
        "ignored_paths:\n  add:\n    - $.a\n  remove: []\nunordered_paths:\n  remove:\n    - $.z\n",
        "generated_paths:\n    $.b: id   # four spaces\nunordered_paths:\n    - $.c\n",
    ],
)
def test_merge_keeps_every_line_and_adds_the_learned_rules(original: str) -> None:
    merged = merge(original, PROPOSALS, ["learned"])
    learned_in(merged)
    for line in original.splitlines():
        if "[]" not in line and "{}" not in line and "[$.c]" not in line and "{add" not in line:
            assert line in merged.splitlines(), line
    before = rules_from_text(original, "before.yaml")
    after = rules_from_text(merged, "after.yaml")
    assert set(before.generated_paths.items()) <= set(after.generated_paths.items())
    assert set(before.ignored_paths) <= set(after.ignored_paths)
    assert set(before.unordered_paths) <= set(after.unordered_paths)
    assert before.ignored_headers <= after.ignored_headers


def test_the_kits_goldens_learn_nothing() -> None:
    learned = learn([TRANSCRIPTS], agent=None, start_agent=_kit, runs=2)
    assert learned.proposals.rules == []
    assert learned.regressions == 0
    assert learned.exchanges > 30


def _kit(*, grpc: bool = False) -> KitServer:
    return start_test_kit(grpc=grpc)


def test_learn_cli_without_output_prints_the_rules_and_reports_on_stderr(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["learn", str(TRANSCRIPTS / "01-agent-card.http")])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# recorder learn: 0 rules for the noise of http://127.0.0.1:")
    assert result.stderr.endswith(
        "recorder learn: 0 rules learned from 4 live runs of 1 exchange in 1 file;"
        " 0 likely regressions\n"
    )


def test_learn_cli_usage_errors_exit_2(tmp_path: Path) -> None:
    missing = CliRunner().invoke(main, ["learn", str(tmp_path / "none.http")])
    assert missing.exit_code == 2
    once = CliRunner().invoke(main, ["learn", str(TRANSCRIPTS), "--runs", "1"])
    assert once.exit_code == 2 and "--runs" in once.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("versoin: 1\n")
    rules = CliRunner().invoke(main, ["learn", str(TRANSCRIPTS), "--rules", str(bad)])
    assert rules.exit_code == 2
    assert rules.stderr.startswith(f"recorder learn: {bad}:1: versoin: unknown key")

    for output in (str(tmp_path / "no" / "rules.yaml"), str(TRANSCRIPTS / "01-agent-card.http")):
        refused = CliRunner().invoke(main, ["learn", str(TRANSCRIPTS), "-o", output])
        assert refused.exit_code == 2 and "-o" in refused.stderr, refused.stderr
