"""The checks of issue 23 (recorder.checks.vocabulary): each kind passes and fails, with its
reason's text."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from recorder.checks.language import language_available
from recorder.checks.vocabulary import (
    CHECKS,
    Check,
    CheckContext,
    CheckOptionError,
    Outcome,
    run_check,
)

ANSWER = (
    "Reviewed 1 file: 4 comments.\n"
    "src/payments.py:12: [todo] TODO left in added code.\n"
    "src/payments.py:13: [debug-print] debugging statement in Python code: remove it."
)
FRENCH = (
    "J'ai relu 1 fichier : 4 commentaires. Le fichier src/payments.py contient un TODO laissé "
    "dans le code ajouté, et une instruction de débogage qu'il faut retirer avant la fusion."
)
ENGLISH = (
    "I reviewed one file and left four comments. The file src/payments.py has a TODO left in "
    "the added code, and a debugging statement that should be removed before the merge."
)


def check(name: str, options: Any, **extra: Any) -> Check:
    return Check(name, CHECKS[name].parse(options), **extra)


def run(name: str, options: Any, live: Any, recorded: Any = ANSWER, **extra: Any) -> Outcome:
    return run_check(check(name, options, **extra), recorded, live, CheckContext())


CASES = [
    # (name, options, live, passed, reason)
    ("contains", "src/payments.py:12", ANSWER, True, ""),
    ("contains", "src/payments.py:99", ANSWER, False, '"src/payments.py:99" not found'),
    ("contains", ["[todo]", "[debug-print]"], ANSWER, True, ""),
    ("contains_all", ["src/payments.py:12", "[todo]"], ANSWER, True, ""),
    (
        "contains_all",
        ["src/payments.py:12", "[hardcoded-secret]", "[missing-tests]"],
        ANSWER,
        False,
        '"[hardcoded-secret]", "[missing-tests]" not found',
    ),
    ("contains_any", ["reviewed", "Reviewed"], ANSWER, True, ""),
    ("contains_any", ["refused", "denied"], ANSWER, False, 'none of "refused", "denied" found'),
    ("not_contains", ["I'm sorry", "I can't help"], ANSWER, True, ""),
    ("not_contains", "I'm sorry", "I'm sorry, I can't help.", False, '"I\'m sorry" found'),
    ("matches", r"^Reviewed \d+ files?", ANSWER, True, ""),
    (
        "matches",
        r"^Reviewed \d+ files?",
        "Nothing to say",
        False,
        'no match for "^Reviewed \\\\d+ files?"',
    ),
    ("not_matches", "(?i)as an ai", ANSWER, True, ""),
    (
        "not_matches",
        "(?i)as an ai",
        "As an AI model, no.",
        False,
        '"(?i)as an ai" matches "As an AI"',
    ),
    ("length", {"min": 80}, ANSWER, True, ""),
    ("length", {"min": 80}, "Reviewed 1 file.", False, "16 characters, expected at least 80"),
    ("length", {"max": 10}, "Reviewed 1 file.", False, "16 characters, expected at most 10"),
    ("length", {"min": 1, "max": 1}, "x", True, ""),
    ("lines", {"min": 2, "max": 12}, ANSWER, True, ""),
    ("lines", {"min": 2}, "one line", False, "1 line, expected at least 2"),
    ("lines", {"max": 2}, ANSWER, False, "3 lines, expected at most 2"),
    ("json", True, '{"findings": []}', True, ""),
    ("json", True, "Reviewed", False, "not JSON: Expecting value: line 1 column 1 (char 0)"),
    (
        "json",
        {"schema": {"type": "object", "required": ["findings"]}},
        '{"findings": []}',
        True,
        "",
    ),
    (
        "json",
        {"schema": {"type": "object", "required": ["findings"]}},
        '{"found": []}',
        False,
        "does not match the schema: 'findings' is a required property at $",
    ),
    (
        "json",
        {"schema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        {"n": "3"},
        False,
        "does not match the schema: '3' is not of type 'integer' at $.n",
    ),
    ("similar", 0.6, ANSWER.replace("4 comments", "four comments"), True, ""),
    (
        "similar",
        0.6,
        "The weather is nice today.",
        False,
        "< 0.60 (token_set_ratio to the recorded text)",
    ),
    ("similar", {"min": 0.9, "method": "ratio"}, ANSWER, True, ""),
]


@pytest.mark.parametrize(("name", "options", "live", "passed", "reason"), CASES)
def test_check(name: str, options: Any, live: Any, passed: bool, reason: str) -> None:
    outcome = run(name, options, live)
    assert outcome.passed is passed
    if passed:
        return
    assert reason in outcome.reason


@pytest.mark.parametrize(
    "name", ["contains", "contains_any", "not_contains", "matches", "length", "lines", "similar"]
)
def test_a_text_check_on_a_value_that_is_not_text_fails(name: str) -> None:
    options = {"length": {"min": 1}, "lines": {"min": 1}, "similar": 0.5}.get(name, "x")
    assert run(name, options, {"text": "x"}) == Outcome(False, "expected text, got a mapping")
    assert run(name, options, 3) == Outcome(False, "expected text, got a number")


def test_ignore_case() -> None:
    assert not run("contains", "REVIEWED", ANSWER).passed
    assert run("contains", "REVIEWED", ANSWER, ignore_case=True).passed
    assert run("matches", "^reviewed", ANSWER, ignore_case=True).passed
    outcome = run("not_contains", "TODO", ANSWER, ignore_case=True)
    assert outcome == Outcome(False, '"TODO" found')


def test_a_schema_that_refers_elsewhere_fails_without_fetching() -> None:
    outcome = run("json", {"schema": {"$ref": "http://127.0.0.1:9/review.json"}}, "{}")
    assert outcome == Outcome(
        False, "the schema cannot be used: cannot resolve http://127.0.0.1:9/review.json"
    )


def test_json_nested_too_deep_fails_without_a_traceback() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert run("json", True, deep) == Outcome(
        False, "not JSON this recorder can read: nested too deep"
    )


def test_similar_needs_recorded_text() -> None:
    outcome = run("similar", 0.5, "text", recorded=3)
    assert outcome == Outcome(False, "the recorded value is not text (a number)")


def test_similar_reason_says_the_score() -> None:
    outcome = run("similar", 0.6, "The weather is nice today.")
    assert outcome.reason.startswith("0.")
    assert float(outcome.reason.split()[0]) < 0.6


@pytest.mark.parametrize(
    ("name", "options", "problem"),
    [
        ("contains", [], "expected a string or a list of strings, got a list"),
        ("contains", 3, "expected a string or a list of strings, got a number"),
        ("contains", [""], "an empty string is in every text"),
        ("contains_all", ["a", 1], "expected strings, got a number 1"),
        ("matches", "(", "bad regular expression '(': missing ), unterminated subpattern"),
        ("matches", 3, "expected a regular expression, got a number"),
        ("length", {"min": 80, "max": 10}, "min 80 is more than max 10"),
        ("length", {"min": "80"}, "min: expected a whole number, got a string"),
        ("length", {"least": 3}, "unknown option 'least' (options: min, max)"),
        ("length", {}, "give min, max or both"),
        ("lines", 3, "expected {min: N, max: N}, got a number"),
        ("lines", {"min": -1}, "min: expected 0 or more, got -1"),
        ("json", False, "expected true, {schema: ...} or {schema_file: FILE}, got a boolean"),
        ("json", {"schema": {"type": "objet"}}, "the schema is not a valid JSON Schema"),
        ("json", {"scheme": {}}, "unknown option 'scheme' (options: schema, schema_file)"),
        ("similar", 1.5, "similar: expected a number from 0 to 1, got 1.5"),
        ("similar", {"min": 0.5, "method": "cosine"}, "method: expected one of ratio,"),
        ("similar", {"method": "ratio"}, "give min, a number from 0 to 1"),
        ("language", "english", "expected an ISO 639-1 language code such as en or fr"),
        ("judge", "not a name", "expected module:function"),
        ("judge", {"command": ""}, "command: expected a command line"),
        ("judge", {"command": "x", "timeout": 0}, "timeout: expected seconds"),
        ("judge", {"command": "x", "wait": 3}, "unknown option 'wait' (options: command, timeout)"),
    ],
)
def test_bad_options(name: str, options: Any, problem: str) -> None:
    with pytest.raises(CheckOptionError) as caught:
        CHECKS[name].parse(options)
    assert problem in str(caught.value)


@pytest.mark.skipif(not language_available(), reason="py3langid is not installed")
def test_language() -> None:
    assert run("language", "en", ENGLISH).passed
    assert run("language", "fr", FRENCH).passed
    assert run("language", "en", FRENCH) == Outcome(False, "fr, expected en")
    assert run("language", "fr", ENGLISH) == Outcome(False, "en, expected fr")
    assert run("language", "en", "12345 67") == Outcome(
        False, "no language found in the text, expected en"
    )


def test_labels_name_the_check() -> None:
    assert check("contains_all", ["x"]).label == "contains_all"
    assert check("judge", "mypackage.judges:helpful").label == "judge mypackage.judges:helpful"
    assert check("judge", {"command": "python judge.py"}).label == "judge 'python judge.py'"
    assert Check("length", (1, None), source="rules.yaml", line=12).where == "rules.yaml:12"


# --- judges -------------------------------------------------------------------------------------

JUDGES = """
def helpful(recorded, live, context):
    return "payments" in live

def with_reason(recorded, live, context):
    return (False, f"{context['file']}#{context['exchange']} at {context['path']}: not kind")

def as_mapping(recorded, live, context):
    return {"pass": live == recorded, "reason": "differs from the recording"}

def raises(recorded, live, context):
    raise ValueError("boom")

def odd(recorded, live, context):
    return "yes"
"""


@pytest.fixture
def judges_module(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "h23_judges.py").write_text(JUDGES)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "h23_judges"
    sys.modules.pop("h23_judges", None)


def judge(spec: Any, live: Any, **context: Any) -> Outcome:
    made = Check("judge", CHECKS["judge"].parse(spec), source="rules.yaml", line=7)
    return run_check(made, ANSWER, live, CheckContext(**context))


def test_python_judge(judges_module: str) -> None:
    assert judge(f"{judges_module}:helpful", "src/payments.py").passed
    assert judge(f"{judges_module}:helpful", "nothing") == Outcome(False, "the judge said no")
    outcome = judge(f"{judges_module}:with_reason", "x", file="03.http", exchange=2, path="$.a")
    assert outcome == Outcome(False, "03.http#2 at $.a: not kind")
    assert judge(f"{judges_module}:as_mapping", ANSWER).passed
    assert judge(f"{judges_module}:as_mapping", "x") == Outcome(False, "differs from the recording")


def test_python_judge_errors_name_the_judge(judges_module: str) -> None:
    outcome = judge(f"{judges_module}:raises", "x")
    assert outcome == Outcome(False, "error: the judge raised ValueError: boom (rules.yaml:7)")
    outcome = judge(f"{judges_module}:odd", "x")
    assert not outcome.passed
    assert outcome.reason.startswith(
        f"error: judge {judges_module}:odd (rules.yaml:7) returned str"
    )
    outcome = judge(f"{judges_module}:missing", "x")
    assert outcome == Outcome(
        False,
        f"error: judge {judges_module}:missing: {judges_module} has no function missing"
        " (rules.yaml:7)",
    )
    outcome = judge("no_such_module_h23:f", "x")
    assert not outcome.passed
    assert "cannot import no_such_module_h23: ModuleNotFoundError" in outcome.reason


COMMAND_JUDGE = """
import json, sys
job = json.load(sys.stdin)
if job["live"] == "crash":
    print("broken", file=sys.stderr)
    sys.exit(3)
if job["live"] == "json":
    print(json.dumps({"pass": True, "reason": "fine"}))
    sys.exit(1)
ok = "payments" in job["live"]
print(f"exchange {job['exchange']} of {job['file']}: {'ok' if ok else 'no payments'}")
sys.exit(0 if ok else 1)
"""


def test_command_judge(tmp_path: Any) -> None:
    (tmp_path / "judge.py").write_text(COMMAND_JUDGE)
    spec = {"command": f"{sys.executable} judge.py", "timeout": 60}
    made = Check("judge", CHECKS["judge"].parse(spec), source="rules.yaml", line=3)
    made = Check(
        "judge",
        type(made.value)(made.value.command, 60, str(tmp_path)),
        source="rules.yaml",
        line=3,
    )
    context = CheckContext(file="03.http", exchange=1)
    assert run_check(made, ANSWER, "payments", context) == Outcome(
        True, "exchange 1 of 03.http: ok"
    )
    assert run_check(made, ANSWER, "x", context) == Outcome(
        False, "exchange 1 of 03.http: no payments"
    )
    # a JSON answer decides, whatever the exit status
    assert run_check(made, ANSWER, "json", context) == Outcome(True, "fine")
    assert run_check(made, ANSWER, "crash", context) == Outcome(
        False, "error: exited with status 3: broken (rules.yaml:3)"
    )


def test_command_judge_timeout_and_missing(tmp_path: Any) -> None:
    (tmp_path / "slow.py").write_text("import time\ntime.sleep(30)\n")
    slow = CHECKS["judge"].parse({"command": f"{sys.executable} slow.py", "timeout": 0.5})
    made = Check("judge", type(slow)(slow.command, 0.5, str(tmp_path)), source="r.yaml", line=2)
    assert run_check(made, "", "x", CheckContext()) == Outcome(
        False, "error: no answer within 0.5 s (r.yaml:2)"
    )
    missing = Check("judge", CHECKS["judge"].parse({"command": "no-such-judge-h23 x"}), line=2)
    outcome = run_check(missing, "", "x", CheckContext())
    assert outcome.reason.startswith("error: cannot run no-such-judge-h23 x: ")


def test_a_command_uses_a_shell_only_when_it_needs_one() -> None:
    def shell(command: str) -> bool:
        return bool(CHECKS["judge"].parse({"command": command}).uses_shell)

    assert not shell("python judge.py --strict")
    assert not shell("python 'my judge.py'")
    assert shell("python judge.py | tee out")
    assert shell("python judge.py && echo ok")
    assert shell("python judge.py > out")
    assert shell("python $JUDGE")
