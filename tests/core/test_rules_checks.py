"""The rules' `checks` key (recorder.checks.entries through recorder.rules.ruleset): loading and
errors."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from recorder.checks.entries import Scope
from recorder.checks.judges import import_judges
from recorder.checks.vocabulary import CheckContext, run_check
from recorder.errors import RulesError
from recorder.rules.ruleset import DEFAULT_RULES, load_rules, rules_from_text

GOOD = """\
version: 1
checks:
  - path: "$.result.task.artifacts[*].parts[*].text"
    in: "03-review-task.http#1"
    comment: the review's text is worded by a model
    assert:
      - contains_all: ["src/payments.py:12", "[todo]"]
      - not_contains: ["I'm sorry"]
        ignore_case: true
      - length: {min: 80, max: 400}
      - similar: {min: 0.6, method: token_sort_ratio}
        comment: close to what was recorded
  - path: "$..text"
    in: ["0?-review-*.http", "14-rest-review-task.http#2"]
    assert:
      - matches: '^Reviewed \\d+ files?'
"""


def test_checks_are_read() -> None:
    rules = rules_from_text(GOOD, "rules.yaml")
    first, second = rules.checks
    assert first.path == "$.result.task.artifacts[*].parts[*].text"
    assert first.scopes == (Scope("03-review-task.http", 1),)
    assert first.line == 3
    assert [c.name for c in first.checks] == ["contains_all", "not_contains", "length", "similar"]
    assert first.checks[0].value == ("src/payments.py:12", "[todo]")
    assert first.checks[1].ignore_case is True
    assert first.checks[2].value == (80, 400)
    assert first.checks[3].value == (0.6, "token_sort_ratio")
    assert first.checks[3].comment == "close to what was recorded"
    assert [c.line for c in first.checks] == [7, 8, 10, 11]
    assert first.checks[2].where == "rules.yaml:10"
    assert second.scopes == (Scope("0?-review-*.http"), Scope("14-rest-review-task.http", 2))


def test_the_defaults_have_none_and_a_files_checks_are_added() -> None:
    assert DEFAULT_RULES.checks == ()
    rules = rules_from_text(GOOD, "rules.yaml")
    assert len(rules.checks) == 2
    assert rules_from_text("version: 1\n", "r.yaml").checks == ()


def test_where_a_check_applies() -> None:
    first, second = rules_from_text(GOOD, "rules.yaml").checks
    assert first.applies("transcripts/03-review-task.http", 1)
    assert not first.applies("transcripts/03-review-task.http", 2)
    assert first.applies("transcripts/03-review-task.http", None)  # some exchange of the file
    assert not first.applies("transcripts/04-streaming.http", 1)
    assert second.applies("x/05-review-more.http", 7)
    assert second.applies("14-rest-review-task.http", 2)
    assert not second.applies("14-rest-review-task.http", 1)
    everywhere = rules_from_text('checks: [{path: "$..text", in: "*", assert: [json: true]}]', "r")
    assert everywhere.checks[0].scopes == ()
    assert everywhere.checks[0].applies("any.http", 3)


def test_a_schema_file_is_read_beside_the_rules_file(tmp_path: Path) -> None:
    (tmp_path / "review.schema.json").write_text(
        json.dumps({"type": "object", "required": ["findings"]})
    )
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(
        'checks: [{path: "$..text", assert: [json: {schema_file: review.schema.json}]}]\n'
    )
    check = load_rules(rules_file).checks[0].checks[0]
    assert check.value.schema == {"type": "object", "required": ["findings"]}
    assert check.value.origin == "review.schema.json"


def test_a_judge_command_runs_in_the_rules_files_folder(tmp_path: Path) -> None:
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(
        'checks: [{path: "$..text", assert: [judge: {command: "python judge.py"}]}]\n'
    )
    judge = load_rules(rules_file).checks[0].checks[0].value
    assert judge.folder == str(tmp_path)
    assert judge.timeout == 30


def error(text: str, tmp_path: Path | None = None) -> str:
    source = "rules.yaml"
    if tmp_path is not None:
        path = tmp_path / source
        path.write_text(textwrap.dedent(text))
        with pytest.raises(RulesError) as caught:
            load_rules(path)
        return str(caught.value).replace(str(tmp_path) + "/", "")
    with pytest.raises(RulesError) as caught:
        rules_from_text(textwrap.dedent(text), source)
    return str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            """\
            checks:
              - path: "$..text"
                assert:
                  - contians: x
            """,
            "rules.yaml:4: checks[0].assert[0]: unknown check 'contians' (did you mean"
            " contains?); checks: claims, contains, contains_all,",
        ),
        (
            """\
            checks:
              - path: "$..text"
                assert:
                  - length: {min: 80}
                  - length: {min: 80, max: 10}
            """,
            "rules.yaml:5: checks[0].assert[1].length: min 80 is more than max 10",
        ),
        (
            """\
            checks:
              - path: "$..text"
                assert:
                  - matches: "(unclosed"
            """,
            "rules.yaml:4: checks[0].assert[0].matches: bad regular expression '(unclosed':",
        ),
        (
            """\
            checks:
              - path: "$..text"
                assert:
                  - json: {schema: {type: objet}}
            """,
            "rules.yaml:4: checks[0].assert[0].json: the schema is not a valid JSON Schema:",
        ),
        (
            """\
            checks:
              - path: "$..text"
                in: "03-review.http#one"
                assert: [contains: x]
            """,
            "rules.yaml:3: checks[0].in: '03-review.http#one': after # comes an exchange number"
            " (1, 2 …), got 'one'",
        ),
        (
            """\
            checks:
              - path: "$..text"
                in: "transcripts/03-review.http"
                assert: [contains: x]
            """,
            "rules.yaml:3: checks[0].in: 'transcripts/03-review.http': name the transcript by its"
            " file name (a glob), not a path",
        ),
        (
            """\
            checks:
              - path: "$..text"
                in: 3
                assert: [contains: x]
            """,
            'rules.yaml:3: checks[0].in: expected "*", "FILE", "FILE#N" or a list of them,'
            " got int 3",
        ),
        (
            """\
            checks:
              - path: "$..[text"
                assert: [contains: x]
            """,
            "rules.yaml:2: checks[0].path: bad path '$..[text':",
        ),
        (
            """\
            checks:
              - path: "$..text"
                assert: []
            """,
            "rules.yaml:3: checks[0].assert: expected a list of one or more checks, got list []",
        ),
        (
            """\
            checks:
              - path: "$..text"
                asserts: [contains: x]
            """,
            "rules.yaml:3: checks[0].asserts: unknown key (known: path, in, assert, comment)",
        ),
        (
            """\
            checks:
              - path: "$..text"
                assert:
                  - contains: x
                    matches: y
            """,
            "rules.yaml:4: checks[0].assert[0]: expected one check name in each item, got"
            " contains, matches",
        ),
        (
            """\
            checks:
              - path: "$..text"
                assert:
                  - length: {min: 3}
                    ignore_case: true
            """,
            "rules.yaml:5: checks[0].assert[0].ignore_case: length does not take ignore_case",
        ),
        (
            """\
            checks:
              - path: "$..text"
                assert:
                  - contains: x
                    ignore_case: "yes"
            """,
            "rules.yaml:5: checks[0].assert[0].ignore_case: expected true or false, got str",
        ),
        (
            """\
            checks:
              path: "$..text"
            """,
            "rules.yaml:1: checks: expected a list of {path, assert} items, got dict",
        ),
        (
            """\
            checks:
              - path: "$..text"
                assert:
                  - similar: 2
            """,
            "rules.yaml:4: checks[0].assert[0].similar: similar: expected a number from 0 to 1,"
            " got 2",
        ),
    ],
)
def test_errors_name_the_line(text: str, message: str) -> None:
    assert error(text).startswith(message)


def test_a_missing_schema_file_is_named(tmp_path: Path) -> None:
    message = error(
        """\
        checks:
          - path: "$..text"
            assert:
              - json: {schema_file: nowhere.json}
        """,
        tmp_path,
    )
    assert message == (
        "rules.yaml:4: checks[0].assert[0].json: schema_file: cannot read nowhere.json:"
        " No such file or directory"
    )


def test_a_schema_file_that_is_not_json(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    message = error(
        """\
        checks:
          - path: "$..text"
            assert:
              - json: {schema_file: bad.json}
        """,
        tmp_path,
    )
    assert message.startswith(
        "rules.yaml:4: checks[0].assert[0].json: schema_file: bad.json is not valid JSON:"
    )


# --- judges made ready before anything is sent (issue 32) ------------------------------------


def judges_of(rules_file: Path) -> list[Any]:
    return [check for entry in load_rules(rules_file).checks for check in entry.checks]


def test_a_python_judge_beside_the_rules_file_imports_without_pythonpath(tmp_path: Path) -> None:
    folder = tmp_path / "rules-folder"
    folder.mkdir()
    (folder / "h32_beside_judges.py").write_text(
        "def names_the_file(recorded, live, context):\n    return 'src/app.py' in live\n"
    )
    rules_file = folder / "rules.yaml"
    rules_file.write_text(
        'checks: [{path: "$..text", assert: [judge: "h32_beside_judges:names_the_file"]}]\n'
    )
    before = list(sys.path)
    try:
        checks = judges_of(rules_file)
        import_judges(checks)  # raised "No module named 'h32_beside_judges'" before
        assert run_check(checks[0], "", "see src/app.py:2", CheckContext()).passed
        assert not run_check(checks[0], "", "see lib/app.py:2", CheckContext()).passed
        # the folder was on the import path for that import only
        assert sys.path == before
    finally:
        sys.modules.pop("h32_beside_judges", None)


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("no-such-judge-h32 --strict", "no-such-judge-h32: command not found on PATH"),
        ("./judge-h32.sh", "./judge-h32.sh: no such file"),
        ("no-such-judge-h32 | tee out", "no-such-judge-h32: command not found"),
    ],
)
def test_a_judge_command_that_does_not_exist_is_an_error_up_front(
    tmp_path: Path, command: str, problem: str
) -> None:
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(
        'version: 1\nchecks:\n  - path: "$..text"\n    assert:\n'
        f"      - judge: {{command: {json.dumps(command)}}}\n"
    )
    with pytest.raises(RulesError) as caught:
        import_judges(judges_of(rules_file))
    assert str(caught.value) == f"{rules_file}:5: judge {command!r}: {problem}"


def test_a_judge_command_that_exists_is_ready(tmp_path: Path) -> None:
    script = tmp_path / "judge.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    (tmp_path / "plain.txt").write_text("")
    rules_file = tmp_path / "rules.yaml"
    commands = [f"{sys.executable} judge.py", "./judge.sh", "cd . && ./judge.sh", "echo ok | cat"]
    items = ", ".join(f"judge: {{command: {json.dumps(c)}}}" for c in commands)
    rules_file.write_text(f'checks: [{{path: "$..text", assert: [{items}]}}]\n')
    import_judges(judges_of(rules_file))  # nothing raised
    rules_file.write_text('checks: [{path: "$..text", assert: [judge: {command: ./plain.txt}]}]\n')
    with pytest.raises(RulesError, match=r"\./plain\.txt: not an executable file"):
        import_judges(judges_of(rules_file))
