"""The CLI's messages about checks (issue 23): a bad `checks` key, a judge that cannot be
imported, a check that can never apply (CliRunner; nothing is played)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from recorder.cli import main

REPO = Path(__file__).resolve().parent.parent.parent
TRANSCRIPT = str(REPO / "transcripts" / "02-message-reply.http")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return Path("rules.yaml")


def test_play_names_the_line_of_a_bad_check(rules: Path) -> None:
    rules.write_text('checks:\n  - path: "$..text"\n    assert:\n      - lenght: {min: 3}\n')
    outcome = invoke("play", "--rules", str(rules), TRANSCRIPT)
    assert outcome.exit_code == 2
    assert outcome.stdout == ""
    assert outcome.stderr.startswith(
        "recorder play: rules.yaml:4: checks[0].assert[0]: unknown check 'lenght' (did you mean"
        " length?); checks: claims,"
    )


def test_play_stops_before_sending_when_a_judge_cannot_be_imported(rules: Path) -> None:
    rules.write_text(
        'checks:\n  - path: "$..text"\n    assert:\n      - contains: x\n'
        "      - judge: no_such_module_h23.judges:helpful\n"
    )
    # (no --agent: the kit would be started, but the judge is imported first)
    outcome = invoke("play", "--rules", str(rules), TRANSCRIPT)
    assert outcome.exit_code == 2
    assert outcome.stdout == ""
    assert outcome.stderr == (
        "recorder play: rules.yaml:5: judge no_such_module_h23.judges:helpful: cannot import"
        " no_such_module_h23.judges: ModuleNotFoundError: No module named 'no_such_module_h23'\n"
    )


def test_rules_check_warns_of_a_check_on_a_request(rules: Path) -> None:
    rules.write_text(
        'version: 1\nchecks:\n  - path: "$.params.message.parts[*].text"\n'
        "    assert: [contains: x]\n"
    )
    outcome = invoke("rules", "check", str(rules))
    assert outcome.exit_code == 1
    assert outcome.stderr.splitlines() == [
        "recorder rules check: warning: rules.yaml:3: checks: '$.params.message.parts[*].text'"
        " can never apply: it names what only a JSON-RPC request holds (jsonrpc, method,"
        " params), and checks look at replies",
        "recorder rules check: rules.yaml: 1 warning",
    ]


def test_rules_check_accepts_good_checks(rules: Path) -> None:
    rules.write_text(
        'checks:\n  - path: "$.result..parts[*].text"\n    in: "02-*.http#1"\n'
        "    assert:\n      - contains_any: [review, Review]\n      - length: {max: 400}\n"
    )
    outcome = invoke("rules", "check", str(rules))
    assert outcome.exit_code == 0, outcome.output
    assert outcome.stdout == "rules.yaml: rules OK\n"


def test_play_stops_before_sending_when_a_judge_command_does_not_exist(rules: Path) -> None:
    rules.write_text(
        'checks:\n  - path: "$..text"\n    assert:\n      - contains: x\n'
        '      - judge: {command: "no-such-judge-h32 --strict"}\n'
    )
    # (no --agent: the kit would be started, but the judge's program is looked up first)
    outcome = invoke("play", "--rules", str(rules), TRANSCRIPT)
    assert outcome.exit_code == 2
    assert outcome.stdout == ""
    assert outcome.stderr == (
        "recorder play: rules.yaml:5: judge 'no-such-judge-h32 --strict': no-such-judge-h32:"
        " command not found on PATH\n"
    )
