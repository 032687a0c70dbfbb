"""Trials (`recorder play --trials N --pass-rate R`, issue 23; `--confidence C`, `--early-stop`,
issue 33): the rule, the combined verdicts, and the CLI, reports and pytest plugin against the
real kit behind a proxy that breaks one reply in three (a counter, not chance)."""

from __future__ import annotations

import itertools
import json
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from wordy_agent import IGNORE_SERVED_BY, WordyAgent, texts

from recorder.cli import main
from recorder.kit import KitServer
from recorder.replay.reports.results import ExchangeResult, TranscriptResult, TrialFailure, Trials
from recorder.replay.reports.terminal import transcript_lines
from recorder.replay.trials import TrialPlan, combine, needed_passes, play_in_trials
from recorder.replay.verdict.diff import Mismatch

pytest_plugins = ["pytester"]

# --- the rule and the combination (pure) --------------------------------------------------------


@pytest.mark.parametrize(
    ("runs", "rate", "needed"),
    [(5, 0.8, 4), (10, 0.7, 7), (3, 1.0, 3), (3, 0.01, 1), (5, 0.5, 3), (1, 1.0, 1), (4, 0.75, 3)],
)
def test_needed_passes(runs: int, rate: float, needed: int) -> None:
    assert needed_passes(runs, rate) == needed


MISMATCH = Mismatch("$.result.x", "a", "b")


def counts(trials: Trials | None) -> tuple[Any, ...]:
    assert trials is not None
    return trials.runs, trials.passed, trials.needed, trials.failures


def result(number: int, **verdict: Any) -> ExchangeResult:
    return ExchangeResult(number, f"title {number}", number * 10, seconds=0.5, **verdict)


def test_combine_counts_passes_and_keeps_each_failed_trial() -> None:
    trials = [
        [result(1), result(2, mismatches=(MISMATCH,))],
        [result(1, error="no reply within 30 s"), result(2, error="not played", played=False)],
        [result(1), result(2)],
    ]
    first, second = combine(trials, TrialPlan(3, 0.6))
    assert counts(first.trials) == (3, 2, 2, (TrialFailure(2, (), "no reply within 30 s"),))
    assert first.passed and not first.failed
    assert first.error is None and first.mismatches == ()
    assert first.seconds == 1.5
    assert counts(second.trials) == (
        3,
        1,
        2,
        (TrialFailure(1, (MISMATCH,), None), TrialFailure(2, (), "not played")),
    )
    assert second.failed and not second.passed
    assert second.error is None  # below its rate: failed (exit status 1), not an error


def test_combine_a_trial_that_did_not_report_an_exchange_failed_it() -> None:
    (only,) = combine([[result(1)], []], TrialPlan(2), selected=[1])
    assert counts(only.trials) == (2, 1, 2, (TrialFailure(2, (), "not played"),))


def test_an_exchange_no_trial_played_stays_as_it_was() -> None:
    halted = result(1, error="not played: -x", played=False)
    assert combine([[halted], [halted]], TrialPlan(2)) == (halted,)


def test_the_report_lines() -> None:
    trials = [
        [result(1), result(2, mismatches=(MISMATCH,))],
        [result(1, mismatches=(Mismatch("$.y", 1, 2, frame=3),)), result(2, error="timed out")],
        [result(1), result(2)],
    ]
    file = TranscriptResult("t/02.http", combine(trials, TrialPlan(3, 0.6)))
    assert transcript_lines(file) == [
        "t/02.http  ✗ exchange 2 (title 2): 1/3 trials passed (needs 2)",
        '    trial 1: $.result.x: expected "a", got "b"',
        "    trial 2: error: timed out",
        "           ✓ exchange 1 2/3 trials",
    ]
    passing = TranscriptResult("t/02.http", combine(trials[:1] + trials[2:], TrialPlan(2, 0.5)))
    assert transcript_lines(passing) == [
        "t/02.http  ✓ 2 exchanges",
        "           ✓ exchange 2 1/2 trials",
    ]


# --- against the kit ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def module_agent(kit: KitServer) -> Iterator[WordyAgent]:
    with WordyAgent(kit) as agent:
        yield agent


@pytest.fixture
def flaky(module_agent: WordyAgent) -> Iterator[WordyAgent]:
    """The agent, every third JSON reply (counted from this test's start) worded otherwise."""
    replies = itertools.count(1)

    def every_third(value: dict[str, Any]) -> None:
        if next(replies) % 3 == 0:
            for part in texts(value):
                part["text"] = part["text"] + " (said otherwise)"

    module_agent.rewrite = every_third
    yield module_agent
    module_agent.rewrite = None


@pytest.fixture
def project(golden_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(golden_dir, tmp_path / "transcripts")
    (tmp_path / "rules.yaml").write_text(IGNORE_SERVED_BY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def play(agent: WordyAgent, *args: str) -> Result:
    return CliRunner().invoke(
        main,
        ["play", "--agent", agent.url, "--rules", "rules.yaml", *args],
        catch_exceptions=False,
    )


LANGUAGES = "transcripts/01-languages.http"
TEXT = "$.result.message.parts[0].text"


def test_one_failure_in_three_fails_without_a_rate(project: Path, flaky: WordyAgent) -> None:
    outcome = play(flaky, "--trials", "3", LANGUAGES)
    assert outcome.exit_code == 1, outcome.output
    lines = outcome.stdout.splitlines()
    assert lines[0] == (
        "transcripts/01-languages.http  ✗ exchange 1 (SendMessage: ask which languages the"
        " reviewer knows): 2/3 trials passed (needs 3)"
    )
    assert lines[1].startswith(f"    trial 3: {TEXT}: expected ")
    assert lines[1].endswith(' (said otherwise)"')
    assert lines[2] == "failing exchanges:"
    assert lines[3].startswith(
        "  ✗ transcripts/01-languages.http#1 (SendMessage: ask which languages the reviewer"
        f" knows): 2/3 trials passed (needs 3); trial 3: {TEXT}: expected "
    )
    assert lines[4:] == ["1 transcript, 1 exchange: 0 passed, 1 failed"]


def test_one_failure_in_three_passes_at_a_rate(project: Path, flaky: WordyAgent) -> None:
    outcome = play(
        flaky,
        "--trials",
        "3",
        "--pass-rate",
        "0.6",
        LANGUAGES,
        "--report-json",
        "report.json",
        "--junit-xml",
        "report.xml",
    )
    assert outcome.exit_code == 0, outcome.output
    assert outcome.stdout.splitlines() == [
        "transcripts/01-languages.http  ✓ 1 exchange",
        "                               ✓ exchange 1 2/3 trials",
        "1 transcript, 1 exchange: 1 passed, 0 failed",
    ]
    report = json.loads((project / "report.json").read_text())
    (record,) = report["exchanges"]
    assert record["verdict"] == "passed"
    trials = record["trials"]
    assert {k: trials[k] for k in ("runs", "passed", "needed")} == {
        "runs": 3,
        "passed": 2,
        "needed": 2,
    }
    assert trials["rate"] == pytest.approx(2 / 3)
    (failure,) = trials["failures"]
    assert failure["trial"] == 3 and failure["error"] is None
    assert [m["path"] for m in failure["mismatches"]] == [TEXT]
    assert report["summary"]["exchanges"] == 1 and report["summary"]["passed"] == 1
    case = ET.parse(project / "report.xml").getroot().find(".//testcase")
    assert case is not None
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties == {
        "trials": "3",
        "trials_planned": "3",
        "trials_passed": "2",
        "trials_needed": "2",
        "pass_rate": "0.667",
        "required_pass_rate": "0.6",
        # Wilson's one-sided lower bound of 2 in 3 at 0.95, reported though not judged by
        "pass_rate_lower_bound": "0.254",
        "confidence": "0.95",
        "judged_by_bound": "false",
    }
    assert trials["lower_bound"] == pytest.approx(0.2535, abs=1e-4)
    assert trials["confidence"] == 0.95 and trials["judged_by_bound"] is False
    assert case.find("failure") is None


def test_a_failing_rate_in_the_reports(project: Path, flaky: WordyAgent) -> None:
    outcome = play(
        flaky, "--trials", "3", LANGUAGES, "--report-json", "report.json", "--junit-xml", "r.xml"
    )
    assert outcome.exit_code == 1
    (record,) = json.loads((project / "report.json").read_text())["exchanges"]
    assert record["verdict"] == "failed"
    assert record["trials"]["passed"] == 2 and record["trials"]["needed"] == 3
    failure = ET.parse(project / "r.xml").getroot().find(".//testcase/failure")
    assert failure is not None
    message = failure.get("message") or ""
    assert message.startswith(f"2/3 trials passed (needs 3): trial 3: {TEXT}: expected ")


def test_trials_with_jobs(project: Path, module_agent: WordyAgent) -> None:
    outcome = play(
        module_agent,
        "--trials",
        "2",
        "--jobs",
        "2",
        LANGUAGES,
        "transcripts/02-review.http",
        "transcripts/03-streaming.http",
        "--report-json",
        "report.json",
    )
    assert outcome.exit_code == 0, outcome.output
    assert outcome.stdout.splitlines()[-1] == "3 transcripts, 4 exchanges: 4 passed, 0 failed"
    records = json.loads((project / "report.json").read_text())["exchanges"]
    assert [(r["trials"]["runs"], r["trials"]["passed"]) for r in records] == [(2, 2)] * 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pass-rate", "0.5"], "recorder play: --pass-rate needs --trials N"),
        (
            ["--trials", "3", "--update"],
            "recorder play: --trials and --update do not go together: update from one run",
        ),
        (["--trials", "0"], "recorder play: Invalid value for '--trials': 0 is not in the range"),
        (
            ["--trials", "3", "--pass-rate", "0"],
            "recorder play: Invalid value for '--pass-rate': 0.0 is not in the range 0<x<=1.",
        ),
        (
            ["--trials", "3", "--pass-rate", "1.5"],
            "recorder play: Invalid value for '--pass-rate': 1.5 is not in the range 0<x<=1.",
        ),
    ],
)
def test_usage_errors(project: Path, args: list[str], message: str) -> None:
    outcome = CliRunner().invoke(main, ["play", *args, LANGUAGES], catch_exceptions=False)
    assert outcome.exit_code == 2
    assert outcome.stderr.splitlines()[0].startswith(message), outcome.stderr
    assert outcome.stdout == ""


# --- the pytest plugin --------------------------------------------------------------------------


@pytest.fixture
def pyproject(pytester: pytest.Pytester, golden_dir: Path) -> pytest.Pytester:
    shutil.copytree(golden_dir, pytester.path / "transcripts")
    (pytester.path / "rules.yaml").write_text(IGNORE_SERVED_BY)
    return pytester


def test_the_plugins_trials(pyproject: pytest.Pytester, flaky: WordyAgent) -> None:
    common = ["transcripts/01-languages.http", "--recorder-agent", flaky.url]
    common += ["--recorder-rules", "rules.yaml"]
    failing = pyproject.runpytest(*common, "--recorder-trials", "3")
    failing.assert_outcomes(failed=1)
    failing.stdout.fnmatch_lines(
        ["*2/3 trials passed (needs 3)*", "*trial 3: $.result.message.parts?0?.text: expected*"]
    )
    passing = pyproject.runpytest(*common, "--recorder-trials", "3", "--recorder-pass-rate", "0.6")
    passing.assert_outcomes(passed=1)


def test_the_plugins_ini_options(pyproject: pytest.Pytester, flaky: WordyAgent) -> None:
    pyproject.makeini("[pytest]\nrecorder_trials = 3\nrecorder_pass_rate = 0.6\n")
    outcome = pyproject.runpytest(
        "transcripts/01-languages.http",
        "--recorder-agent",
        flaky.url,
        "--recorder-rules",
        "rules.yaml",
    )
    outcome.assert_outcomes(passed=1)
    # the option wins over the ini
    outcome = pyproject.runpytest(
        "transcripts/01-languages.http",
        "--recorder-agent",
        flaky.url,
        "--recorder-rules",
        "rules.yaml",
        "--recorder-pass-rate",
        "1",
    )
    outcome.assert_outcomes(failed=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--recorder-pass-rate", "0.5"], "--recorder-pass-rate needs --recorder-trials N"),
        (["--recorder-trials", "0"], "--recorder-trials: expected 1 to 1000, got 0"),
        (
            ["--recorder-trials", "2", "--recorder-pass-rate", "2"],
            "--recorder-pass-rate: expected 0 < R <= 1, got 2",
        ),
    ],
)
def test_the_plugins_usage_errors(
    pyproject: pytest.Pytester, args: list[str], message: str
) -> None:
    outcome = pyproject.runpytest("transcripts/01-languages.http", *args)
    assert outcome.ret == pytest.ExitCode.USAGE_ERROR
    outcome.stderr.fnmatch_lines([f"*{message}*"])


def test_the_plugin_names_a_judge_that_cannot_be_imported(pyproject: pytest.Pytester) -> None:
    (pyproject.path / "judged.yaml").write_text(
        'checks:\n  - path: "$..text"\n    assert:\n      - judge: no_such_module_h23p:f\n'
    )
    outcome = pyproject.runpytest(
        "transcripts/01-languages.http", "--recorder-rules", "judged.yaml"
    )
    assert outcome.ret == pytest.ExitCode.USAGE_ERROR
    outcome.stderr.fnmatch_lines(
        ["*--recorder-rules: judged.yaml:4: judge no_such_module_h23p:f: cannot import*"]
    )


# --- a bound, and stopping early (issue 33) -----------------------------------------------------


def test_wilsons_interval_and_bound() -> None:
    from recorder.replay.stats import fewest_trials, provable, wilson_interval, wilson_lower

    low, high = wilson_interval(8, 10, 0.95)  # the textbook case: 0.490 .. 0.943
    assert (round(low, 3), round(high, 3)) == (0.49, 0.943)
    assert wilson_lower(10, 10, 0.95) == pytest.approx(10 / (10 + 1.6449**2), abs=1e-4)
    assert wilson_lower(0, 5, 0.95) == 0.0 and wilson_interval(0, 0, 0.95) == (0.0, 1.0)
    assert not provable(10, 0.9, 0.95) and provable(25, 0.9, 0.95) and not provable(24, 0.9, 0.95)
    assert fewest_trials(0.9, 0.95) == 25 and fewest_trials(1.0, 0.95) is None


def test_with_a_confidence_the_passes_needed_are_the_fewest_whose_bound_reaches_the_rate() -> None:
    plan = TrialPlan(20, 0.5, 0.9)
    assert plan.needed == 13  # 13 of 20: bound 0.507 at 0.9; 12 of 20: 0.457
    trials = [[result(1)] if n % 3 else [result(1, mismatches=(MISMATCH,))] for n in range(1, 21)]
    (passing,) = combine(trials, plan)
    assert passing.passed and passing.trials is not None
    assert (passing.trials.passed, passing.trials.lower) == (14, pytest.approx(0.5577, abs=1e-4))
    (failing,) = combine(trials, TrialPlan(20, 0.6, 0.9))
    assert failing.failed and failing.trials is not None
    assert failing.trials.judged_by_bound and failing.trials.required == 0.6
    assert transcript_lines(TranscriptResult("t/01.http", (failing,)))[0] == (
        "t/01.http  ✗ exchange 1 (title 1): 14/20 trials passed (needs 15: a lower bound of 0.6"
        " at 90% confidence; here 0.558)"
    )


def test_early_stop_ends_a_files_trials_once_no_verdict_can_change() -> None:
    outcomes = iter([True, True, False, True, True, True, True, True, True, True])
    played = 0

    def play_once() -> TranscriptResult:
        nonlocal played
        played += 1
        ok = next(outcomes)
        return TranscriptResult("t/01.http", (result(1) if ok else result(1, error="x"), result(2)))

    every = play_in_trials(play_once, TrialPlan(10, early_stop=True))
    # exchange 1 failed at trial 3 (can no longer pass every trial); exchange 2 cannot be
    # known to pass every trial until the tenth: all ten are played
    assert played == 10 and [e.passed for e in every.exchanges] == [False, True]
    played, outcomes = 0, iter([True, True, False, True, True, True, True, True, True, True])
    half = play_in_trials(play_once, TrialPlan(10, 0.5, early_stop=True))
    assert played == 6  # by the sixth trial each has its 5 passes of 10 (exchange 1: 5 of 6)
    first, second = half.exchanges
    assert first.trials is not None and second.trials is not None
    assert (first.trials.runs, first.trials.planned, first.trials.stopped_early) == (6, 10, True)
    assert second.trials.passed == 6 and second.passed
    # the bound counts the four trials not played against the verdict: 6 of 10 at 0.95
    assert second.trials.lower == pytest.approx(0.3516, abs=1e-4)
    assert transcript_lines(half)[1] == "           ✓ exchange 1 5/6 trials"


def test_a_failed_exchange_stopped_early_says_of_how_many(project: Path, flaky: WordyAgent) -> None:
    outcome = play(flaky, "--trials", "10", "--early-stop", LANGUAGES, "--report-json", "r.json")
    assert outcome.exit_code == 1
    assert outcome.stdout.splitlines()[0].endswith(
        "2/3 trials passed of 10 (stopped early; needs 10)"
    )
    (record,) = json.loads((project / "r.json").read_text())["exchanges"]
    assert {k: record["trials"][k] for k in ("runs", "planned", "stopped_early")} == {
        "runs": 3,
        "planned": 10,
        "stopped_early": True,
    }


def test_a_rate_judged_by_its_bound_in_the_reports(project: Path, flaky: WordyAgent) -> None:
    args = ["--trials", "12", "--pass-rate", "0.4", "--confidence", "0.9", LANGUAGES]
    outcome = play(flaky, *args, "--report-json", "r.json", "--junit-xml", "r.xml")
    assert outcome.exit_code == 0, outcome.output
    # 8 of 12 passed: bound 0.482 at 0.9 (one-sided), over 0.4
    assert outcome.stdout.splitlines()[1].endswith("✓ exchange 1 8/12 trials (lower bound 0.482)")
    (record,) = json.loads((project / "r.json").read_text())["exchanges"]
    trials = record["trials"]
    assert (trials["judged_by_bound"], trials["confidence"], trials["needed"]) == (True, 0.9, 7)
    assert trials["lower_bound"] == pytest.approx(0.4818, abs=1e-4)
    case = ET.parse(project / "r.xml").getroot().find(".//testcase")
    assert case is not None
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["pass_rate_lower_bound"] == "0.482"
    assert properties["judged_by_bound"] == "true"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--trials", "10", "--pass-rate", "0.9", "--confidence", "0.95"],
            "recorder play: 10 trials can never show a pass rate of 0.9 at confidence 0.95: 10"
            " of 10 passed give a lower bound of 0.787; it takes 25 trials, or a lower"
            " --pass-rate or --confidence",
        ),
        (
            ["--trials", "50", "--confidence", "0.95"],
            "recorder play: 50 trials can never show a pass rate of 1 at confidence 0.95: 50 of"
            " 50 passed give a lower bound of 0.949; no number of trials can (a rate of 1 is"
            " never proven: ask for less than 1), or a lower --pass-rate or --confidence",
        ),
        (["--confidence", "0.9"], "recorder play: --confidence needs --trials N"),
        (["--early-stop"], "recorder play: --early-stop needs --trials N"),
        (
            ["--trials", "3", "--confidence", "1"],
            "recorder play: Invalid value for '--confidence': 1.0 is not in the range 0<x<1.",
        ),
    ],
)
def test_a_trial_count_that_can_never_prove_the_rate_is_a_usage_error(
    project: Path, args: list[str], message: str
) -> None:
    outcome = CliRunner().invoke(main, ["play", *args, LANGUAGES], catch_exceptions=False)
    assert outcome.exit_code == 2
    assert outcome.stderr.splitlines()[0] == message, outcome.stderr


def test_the_plugins_bound_and_early_stop(pyproject: pytest.Pytester, flaky: WordyAgent) -> None:
    common = ["transcripts/01-languages.http", "--recorder-agent", flaky.url]
    common += ["--recorder-rules", "rules.yaml", "--recorder-trials"]
    early = pyproject.runpytest(*common, "10", "--recorder-early-stop")
    early.assert_outcomes(failed=1)
    early.stdout.fnmatch_lines(["*2/3 trials passed of 10 (stopped early; needs 10)*"])
    bound = pyproject.runpytest(
        *common, "12", "--recorder-pass-rate", "0.4", "--recorder-confidence", "0.9"
    )
    bound.assert_outcomes(passed=1)
    never = pyproject.runpytest(
        *common, "10", "--recorder-pass-rate", "0.9", "--recorder-confidence", "0.95"
    )
    assert never.ret == pytest.ExitCode.USAGE_ERROR
    never.stderr.fnmatch_lines(["*--recorder-trials: 10 trials can never show a pass rate of 0.9*"])
