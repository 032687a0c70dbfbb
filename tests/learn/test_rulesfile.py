"""The learned rules as a YAML rules file: new (`render`) or merged into one (`merge`), every
line of it kept; and the kit's own goldens, which learn nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import TRANSCRIPTS, start_test_kit
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder.checks.facts import Check
from recorder.checks.language import language_available
from recorder.checks.vocabulary import CHECKS
from recorder.cli import main
from recorder.jsonpath import format_path
from recorder.kit import KitServer
from recorder.learn import learn, rulesfile
from recorder.learn.rulesfile import LearnedRulesError, merge, render
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


# --- what learn writes reads back to what it proposed (issue 33) ------------------------------


def check_proposal(
    checks: list[Check], target: str = "$.result.task.artifacts[*].parts[*].text"
) -> Proposal:
    return Proposal(
        "checks",
        target,
        None,
        "the text differs",
        ("f.http exchange 3",),
        ('"a b"',),
        1,
        "f.http#3",
        tuple(checks),
    )


def read_back(text: str) -> list[tuple[str, Any, bool]]:
    (entry,) = rules_from_text(text, "rules.yaml").checks
    return [(c.name, c.value, c.ignore_case) for c in entry.checks]


def proposed(checks: list[Check]) -> list[tuple[str, Any, bool]]:
    return [(c.name, CHECKS[c.name].parse(c.value), c.ignore_case) for c in checks]


def test_a_check_with_options_is_written_as_yaml_that_reads_back() -> None:
    # `- contains_all: [...], ignore_case: true` was written: not YAML, and learn refused it
    checks = [
        Check("contains_all", ["src/cart.py:2"], "in all 4 runs"),
        Check("contains_all", ["[TODO]", "Severity"], "case aside", ignore_case=True),
    ]
    text = render([check_proposal(checks)], ["learned"])
    assert '- {contains_all: ["[TODO]", "Severity"], ignore_case: true}  # case aside\n' in text
    assert read_back(text) == proposed(checks)
    merged = merge("version: 1\nchecks: []\n", [check_proposal(checks)], ["learned"])
    assert read_back(merged) == proposed(checks)


TEXTS = st.text(min_size=1, max_size=30)
BOUNDS = st.fixed_dictionaries(
    {"max": st.integers(0, 10**6)}, optional={"min": st.integers(0, 10**6)}
).filter(lambda b: b.get("min", 0) <= b["max"])
SHAPES: dict[str, Any] = {
    "contains_all": st.lists(TEXTS, min_size=1, max_size=6),
    "contains": TEXTS,
    "not_contains": st.lists(TEXTS, min_size=1, max_size=3),
    "matches": TEXTS.map(re.escape),
    "not_matches": st.lists(TEXTS, min_size=1, max_size=3).map(
        lambda items: "(?s)(" + "|".join(map(re.escape, items)) + ").*\\1"
    ),
    "length": BOUNDS,
    "lines": BOUNDS,
    "json": st.just(True),
    "similar": st.floats(0, 1, allow_nan=False),
    "language": st.sampled_from(["en", "fr", "de"]),
}
PATHS = st.from_regex(r"(?:[a-z]{1,6}/){0,3}[a-z_]{1,8}\.(?:py|go|ts|md)", fullmatch=True)
FACTS = st.one_of(
    st.builds(lambda p, n: f"{p}:{n}", PATHS, st.integers(1, 9999)),
    PATHS,
    st.from_regex(r"\[[a-z]{2,8}(?:-[a-z]{2,8})?\]", fullmatch=True),
    st.integers(0, 10**6).map(str),
    st.sampled_from(["high", "low", "medium", "critical", "passed", "canceled"]),
    st.sampled_from(["Python", "TODO", "Acme Corp", "JavaScript", "debug_print", "getUser()"]),
    st.text(st.characters(exclude_characters='"', exclude_categories=("Cc", "Cs", "Zl", "Zp")),
            min_size=1, max_size=20).filter(str.strip).map(lambda t: f'"{" ".join(t.split())}"'),
)  # fmt: skip
CLAIM_LISTS = st.lists(st.lists(FACTS, min_size=1, max_size=4), min_size=1, max_size=4)
SHAPES["facts"] = st.lists(FACTS, min_size=1, max_size=8)
SHAPES["claims"] = st.one_of(
    CLAIM_LISTS,
    st.fixed_dictionaries(
        {"each": CLAIM_LISTS},
        optional={"denied": CLAIM_LISTS, "count": st.integers(0, 9), "once": st.just(True)},
    ),
    st.fixed_dictionaries({"count": st.integers(0, 9)}),
)
if not language_available():
    del SHAPES["language"]


@st.composite
def proposed_checks(draw: st.DrawFn) -> Check:
    name = draw(st.sampled_from(sorted(SHAPES)))
    folds = CHECKS[name].folds_case and draw(st.booleans())
    return Check(name, draw(SHAPES[name]), draw(st.text(max_size=40)), ignore_case=folds)


@settings(max_examples=150, deadline=None)
# (a member named with "]" is left out: recorder.jsonpath writes `$[']']`, which it cannot read)
@given(
    st.lists(proposed_checks(), min_size=1, max_size=6),
    st.text(min_size=1, max_size=20).filter(lambda n: "]" not in n),
)
def test_every_check_learn_can_propose_reads_back_the_same(checks: list[Check], name: str) -> None:
    target = "$.result" + format_path((name,))[1:] + "[*].text"
    text = render([check_proposal(checks, target)], ["learned"])
    (entry,) = rules_from_text(text, "rules.yaml").checks
    assert entry.path == target
    assert [(c.name, c.value, c.ignore_case) for c in entry.checks] == proposed(checks)
    assert read_back(merge("version: 1\n", [check_proposal(checks, target)], ["x"])) == proposed(
        checks
    )


def test_rules_learn_cannot_read_back_are_its_own_fault_never_the_users(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # the old way of writing a check with options, put back: learn says it is its own fault
    monkeypatch.setattr(
        rulesfile, "_item", lambda rule: ", ".join(f"{k}: {json.dumps(v)}" for k, v in rule.items())
    )
    checks = [Check("contains_all", ["TODO"], "case aside", ignore_case=True)]
    with pytest.raises(LearnedRulesError) as caught:
        render([check_proposal(checks)], ["learned"])
    message = str(caught.value)
    assert message.startswith(
        "internal error: the rules learn made do not read back as it made them, so nothing was"
        " written (a fault of recorder's own; please report it with this line): "
        "<the rules learn made>:"
    )
    assert "rules.yaml" not in message
