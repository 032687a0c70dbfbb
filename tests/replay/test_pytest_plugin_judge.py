"""The pytest plugin and the model checks: a model judge runs in pytest items as in `recorder
play` (bound to the session's own model session), its cost is in the terminal summary, a model
check without an endpoint is a usage error before any test runs, --recorder-no-judge skips
them and says so. Against the real kit with --vary and a scripted model server on loopback."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from model_server import ModelServer

from recorder.kit import KitServer, start_kit

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parent.parent.parent
RULES = """\
checks:
  - path: "$..parts[*].text"
    in: "01-llm-review.http"
    assert:
      - judge: {model: scripted-judge}
"""


@pytest.fixture
def vary_kit() -> Iterator[KitServer]:
    with start_kit(vary=True, seed=5) as kit:
        yield kit


@pytest.fixture
def project(
    pytester: pytest.Pytester, vary_kit: KitServer, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    shutil.copytree(REPO / "docs" / "llm", pytester.path / "llm")
    (pytester.path / "rules.yaml").write_text(RULES)
    monkeypatch.setenv("A2A_TOKEN", vary_kit.token)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return pytester


def args(kit: KitServer, *more: str) -> list[str]:
    return ["llm", "--recorder-agent", kit.url, "--recorder-rules", "rules.yaml", *more]


def test_a_model_judge_runs_in_pytest_items_and_its_cost_is_summed_up(
    project: pytest.Pytester, vary_kit: KitServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ModelServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        result = project.runpytest(*args(vary_kit))
    result.assert_outcomes(passed=4)
    assert server.count() > 0
    result.stdout.fnmatch_lines(
        [
            "*recorder model checks*",
            "model judge: * verdicts: * passed, 0 failed",
            f"model calls: {server.count()} requests, *",
        ]
    )


def test_no_endpoint_is_a_usage_error_before_any_test_runs(
    project: pytest.Pytester, vary_kit: KitServer
) -> None:
    result = project.runpytest(*args(vary_kit))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--recorder-rules: *rules.yaml:5: judge model scripted-judge: no model endpoint*"]
    )


def test_recorder_no_judge_skips_them_and_says_so(
    project: pytest.Pytester, vary_kit: KitServer
) -> None:
    result = project.runpytest(*args(vary_kit, "--recorder-no-judge"))
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["model checks: 5 skipped (--no-judge): not judged, not passed"])
