"""Checks in the player (issue 23), against the real kit behind a proxy that rewords its answers
(`wordy_agent.WordyAgent`): a worded answer fails by equality and passes with checks, and each
kind of check fails the replay at the place it names, with its reason."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from wordy_agent import IGNORE_SERVED_BY, WordyAgent, reword, texts

from recorder.checks.language import language_available
from recorder.disk.transcripts import load
from recorder.kit import KitServer
from recorder.replay.reports.results import PlayResult
from recorder.replay.run import play
from recorder.rules.ruleset import load_rules

TEXT = "$.result.task.artifacts[0].parts[0].text"
JOINED = "$.result.task.artifacts[0].parts[*].text"  # a checked text: its parts joined
ON_REVIEW = """\
checks:
  - path: "$.result.task.artifacts[*].parts[*].text"
    in: "02-review.http#1"
    assert:
"""


@pytest.fixture(scope="module")
def module_agent(kit: KitServer) -> Iterator[WordyAgent]:
    with WordyAgent(kit) as agent:
        yield agent


@pytest.fixture
def agent(module_agent: WordyAgent) -> Iterator[WordyAgent]:
    module_agent.rewrite = None
    yield module_agent
    module_agent.rewrite = None


def reworded(text: str) -> str:
    """The kit's review said otherwise: the same facts, another wording and order."""
    head, *findings = text.split("\n")
    count = head.removeprefix("Reviewed 1 file: ").rstrip(".")
    return f"I went through one file and have {count} for you.\n" + "\n".join(reversed(findings))


def run(
    folder: Path, agent: WordyAgent, rules_text: str, *names: str, **options: Any
) -> PlayResult:
    rules_file = folder.parent / "rules.yaml"
    rules_file.write_text(IGNORE_SERVED_BY + rules_text)
    paths = [folder / name for name in names] or [folder / "02-review.http"]
    return play(paths, agent=agent.url, rules=load_rules(rules_file), **options)


def lines(result: PlayResult) -> list[str]:
    return [
        f"{Path(t.path).name}#{e.number}: {m}"
        for t in result.transcripts
        for e in t.exchanges
        for m in e.mismatches
    ]


FACTS = """\
      - contains_all: ["src/app.py:2", "[todo]", "[debug-print]", "[missing-tests]"]
      - not_contains: ["I'm sorry", "I can't"]
      - lines: {min: 4, max: 12}
      - similar: 0.5
"""


def test_a_worded_answer_fails_by_equality_and_passes_with_checks(
    goldens: Path, agent: WordyAgent
) -> None:
    agent.rewrite = reword(reworded)
    plain = run(goldens, agent, "", "02-review.http", "03-streaming.http")
    assert not plain.passed
    assert all('expected "Reviewed 1 file' in line for line in lines(plain))
    assert len(lines(plain)) == 3  # the review, the GetTask, the stream's artifact frame
    checked = run(
        goldens,
        agent,
        """\
checks:
  - path: "$..artifacts[*].parts[*].text"
    assert:
"""
        + FACTS
        + """\
  - path: "$.result.artifactUpdate.artifact.parts[*].text"
    in: "03-streaming.http"
    assert:
"""
        + FACTS,
        "02-review.http",
        "03-streaming.http",
    )
    assert lines(checked) == []
    assert checked.passed


def drop_line(word: str) -> Callable[[str], str]:
    return lambda text: "\n".join(line for line in text.split("\n") if word not in line)


ANOTHER_ANSWER = "I review Python, JavaScript, TypeScript, Go and Rust code, in diffs."
JUDGE = """
def names_the_file(recorded, live, context):
    return ("src/app.py" in live, f"exchange {context['exchange']}: no file named")
"""

REGRESSIONS = [
    # (name, edit of the review's text, the check, the reason the report gives)
    ("empty answer", lambda t: "", "- length: {min: 40}", "0 characters, expected at least 40"),
    (
        "a refusal",
        lambda t: "I'm sorry, I can't help with that request.",
        '- not_contains: ["I\'m sorry", "I can\'t"]',
        '"I\'m sorry", "I can\'t" found',
    ),
    (
        "a finding left out",
        drop_line("[todo]"),
        '- contains_all: ["[todo]", "[debug-print]"]',
        '"[todo]" not found',
    ),
    (
        "the wrong file named",
        lambda t: t.replace("src/app.py", "src/main.py"),
        '- contains: "src/app.py:2"',
        '"src/app.py:2" not found',
    ),
    (
        "another question's answer",
        lambda t: ANOTHER_ANSWER,
        "- similar: 0.5",
        "(token_set_ratio to the recorded text)",
    ),
    (
        "truncated",
        lambda t: t[:60],
        "- lines: {min: 4}",
        "2 lines, expected at least 4",
    ),
    (
        "an error message as the answer",
        lambda t: "Internal error: review failed (Traceback follows)",
        "- not_matches: '(?i)\\berror\\b|traceback'",
        '"(?i)\\\\berror\\\\b|traceback" matches "error"',
    ),
    (
        "line numbers off by 9",
        lambda t: t.replace("src/app.py:2", "src/app.py:11"),
        "- matches: 'src/app\\.py:2: \\[todo\\]'",
        'no match for "src/app\\\\.py:2: \\\\[todo\\\\]"',
    ),
    (
        "wrong rule tags",
        lambda t: t.replace("[todo]", "[fixme]").replace("[debug-print]", "[print]"),
        '- contains_any: ["[todo]", "[debug-print]"]',
        'none of "[todo]", "[debug-print]" found',
    ),
    (
        "prose where JSON was",
        lambda t: t,
        "- json: true",
        "not JSON: Expecting value: line 1 column 1 (char 0)",
    ),
    (
        "judged by a callable",
        lambda t: t.replace("src/app.py", "lib/app.py"),
        "- judge: h23_play_judges:names_the_file",
        "exchange 1: no file named",
    ),
    (
        "judged by a command",
        lambda t: t.replace("src/app.py", "lib/app.py"),
        f"- judge: {{command: '{sys.executable} judge.py', timeout: 60}}",
        "no src/app.py in exchange 1 of ",  # (and the file's path, as played)
    ),
]


@pytest.mark.parametrize(
    ("edit", "check", "reason"),
    [pytest.param(e, c, r, id=name) for name, e, c, r in REGRESSIONS],
)
def test_each_check_fails_the_replay_at_its_place(
    goldens: Path,
    agent: WordyAgent,
    edit: Callable[[str], str],
    check: str,
    reason: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (goldens.parent / "h23_play_judges.py").write_text(JUDGE)
    (goldens.parent / "judge.py").write_text(
        "import json, sys\njob = json.load(sys.stdin)\n"
        "ok = 'src/app.py' in job['live']\n"
        "print(f\"no src/app.py in exchange {job['exchange']} of {job['file']}\")\n"
        "sys.exit(0 if ok else 1)\n"
    )
    # (no syspath_prepend: a judge module beside the rules file imports as it is, issue 32)
    agent.rewrite = reword(edit)
    result = run(goldens, agent, ON_REVIEW + "      " + check + "\n")
    sys.modules.pop("h23_play_judges", None)
    name = check.removeprefix("- ").partition(":")[0]
    label = "judge h23_play_judges:names_the_file" if "h23_play" in check else name
    if "command" in check:
        label = f"judge {sys.executable + ' judge.py'!r}"
    found = lines(result)
    # the review's exchange fails at its text, by its check; the GetTask (no check) by equality
    # where the text changed
    assert found[0].startswith(f"02-review.http#1: {JOINED}: check {label} failed: "), found
    assert reason in found[0]
    assert [line for line in found if line.startswith("02-review.http#1")] == found[:1]


@pytest.mark.skipif(not language_available(), reason="py3langid is not installed")
def test_language(goldens: Path, agent: WordyAgent) -> None:
    agent.rewrite = reword(
        lambda t: (
            "J'ai relu un fichier et j'ai trois commentaires : un TODO laissé dans le code"
            " ajouté, une instruction de débogage à retirer, et aucun test n'a changé."
        )
    )
    result = run(goldens, agent, ON_REVIEW + "      - language: en\n")
    assert lines(result)[0] == (
        f"02-review.http#1: {JOINED}: check language failed: fr, expected en"
        " (got \"J'ai relu un fichier et j'ai trois com…)"
    )
    agent.rewrite = reword(reworded)
    assert lines(run(goldens, agent, ON_REVIEW + "      - language: en\n"))[0].startswith(
        "02-review.http#2: "  # the review passes; its GetTask (no check) does not
    )


def test_a_stream_is_checked_frame_by_frame(goldens: Path, agent: WordyAgent) -> None:
    golden = load(goldens / "03-streaming.http").exchanges[0]
    events = [e for e in golden.response.events or () if e.data]
    artifact_frame = next(n for n, e in enumerate(events, 1) if "artifactUpdate" in e.data)
    agent.rewrite = reword(drop_line("[todo]"))
    result = run(
        goldens,
        agent,
        """\
checks:
  - path: "$..parts[*].text"
    in: "03-*.http"
    assert:
      - contains_any: ["[todo]", "diff --git"]
""",
        "03-streaming.http",
    )
    assert lines(result) == [
        f"03-streaming.http#1: frame {artifact_frame}: $.result.artifactUpdate.artifact.parts[*]"
        '.text: check contains_any failed: none of "[todo]", "diff --git" found'
        ' (got "Reviewed 1 file: 3 comments.\\nsrc/app.…)'
    ]


def test_a_check_applies_only_where_in_says(goldens: Path, agent: WordyAgent) -> None:
    agent.rewrite = reword(reworded)
    result = run(
        goldens,
        agent,
        """\
checks:
  - path: "$..artifacts[*].parts[*].text"
    in: "02-review.http#2"
    assert: [contains: "[todo]"]
""",
    )
    found = lines(result)
    assert len(found) == 1
    assert found[0].startswith(f'02-review.http#1: {TEXT}: expected "Reviewed 1 file')


def test_a_checked_place_must_still_be_there(goldens: Path, agent: WordyAgent) -> None:
    def drop_text(value: dict[str, Any]) -> None:
        for part in texts(value):
            if part["text"].startswith("Reviewed"):
                del part["text"]

    agent.rewrite = drop_text
    result = run(goldens, agent, ON_REVIEW + "      - contains: '[todo]'\n")
    found = lines(result)
    assert found[0].startswith(f'02-review.http#1: {TEXT}: expected "Reviewed 1 file')
    assert found[0].endswith(", got absent")


def test_a_live_value_that_is_not_text(goldens: Path, agent: WordyAgent) -> None:
    def to_number(value: dict[str, Any]) -> None:
        for part in texts(value):
            if part["text"].startswith("Reviewed"):
                part["text"] = 3

    agent.rewrite = to_number
    result = run(goldens, agent, ON_REVIEW + "      - contains: '[todo]'\n")
    assert lines(result)[0] == (
        f"02-review.http#1: {JOINED}: check contains failed: expected text, got a number (got 3)"
    )


def test_update_keeps_a_worded_answer_that_passes(goldens: Path, agent: WordyAgent) -> None:
    path = goldens / "02-review.http"
    recorded = load(path).exchanges[0].response.json["result"]["task"]["artifacts"][0]

    def reword_and_rename(value: dict[str, Any]) -> None:
        reword(reworded)(value)
        for artifact in value.get("result", {}).get("task", {}).get("artifacts", []):
            artifact["name"] = "code-review"

    agent.rewrite = reword_and_rename
    result = run(goldens, agent, ON_REVIEW + FACTS, update=True)
    assert [t.updated for t in result.transcripts] == [True], result.transcripts
    artifact = load(path).exchanges[0].response.json["result"]["task"]["artifacts"][0]
    assert artifact["name"] == "code-review"  # the change is written
    assert artifact["parts"][0]["text"] == recorded["parts"][0]["text"]  # the wording is not
    # the GetTask has no check: its text is the live one now
    task = load(path).exchanges[1].response.json["result"]
    assert task["artifacts"][0]["parts"][0]["text"].startswith("I went through one file")


def test_without_checks_for_the_file_nothing_changes(goldens: Path, agent: WordyAgent) -> None:
    result = run(goldens, agent, ON_REVIEW + "      - contains: '[todo]'\n", "01-languages.http")
    assert result.passed
