"""The pytest plugin's options of issue 28: pytest's own -v for the diff of the replies,
--recorder-update, --recorder-var and --recorder-env-file; run with pytester against the real
kit."""

from __future__ import annotations

import shutil
from pathlib import Path

import helpers
import pytest
from helpers import edit

from recorder import loads
from recorder.kit import KitServer, start_kit

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.e2e


@pytest.fixture
def project(
    pytester: pytest.Pytester, golden_dir: Path, kit: KitServer, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    shutil.copytree(golden_dir, pytester.path / "transcripts")
    monkeypatch.setenv("A2A_TOKEN", kit.token)
    return pytester


def _fail_review(project: pytest.Pytester) -> Path:
    path = project.path / "transcripts" / "02-review.http"
    edit(path, '"state": "TASK_STATE_COMPLETED"', '"state": "TASK_STATE_FAILED"')
    return path


def test_pytest_v_shows_the_diff_of_the_replies(project: pytest.Pytester, kit: KitServer) -> None:
    _fail_review(project)
    result = project.runpytest("transcripts/02-review.http", "--recorder-agent", kit.base_url, "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "transcripts/02-review.http  ✗ exchange 1 (SendMessage: review a diff):",
            '    $.result.task.status.state: expected "TASK_STATE_FAILED", '
            'got "TASK_STATE_COMPLETED"',
            "    --- recorded reply (normalized)",
            "    +++ live reply (normalized)",
            "    @@ -*",
            '    -        "state": "TASK_STATE_FAILED",',
            '    +        "state": "TASK_STATE_COMPLETED",',
        ]
    )
    assert "recorded reply (normalized):" not in result.stdout.str()
    whole = project.runpytest("transcripts/02-review.http", "--recorder-agent", kit.base_url, "-vv")
    whole.stdout.fnmatch_lines(["    recorded reply (normalized):", "    live reply (normalized):"])
    plain = project.runpytest("transcripts/02-review.http", "--recorder-agent", kit.base_url)
    assert "normalized" not in plain.stdout.str()


def test_recorder_update_rewrites_the_file_and_lists_it(
    project: pytest.Pytester, kit: KitServer
) -> None:
    path = _fail_review(project)
    result = project.runpytest("transcripts", "--recorder-agent", kit.base_url, "--recorder-update")
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines(
        [
            "*recorder --recorder-update*",
            "transcripts/02-review.http  ✎ updated, exchange 1 (SendMessage: review a diff):",
            '    $.result.task.status.state: expected "TASK_STATE_FAILED", '
            'got "TASK_STATE_COMPLETED"',
            "1 transcript updated",
        ]
    )
    assert '"TASK_STATE_FAILED"' not in path.read_text()
    again = project.runpytest("transcripts", "--recorder-agent", kit.base_url)
    again.assert_outcomes(passed=10)


def test_recorder_update_that_must_leave_a_file_fails_naming_why(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # exchange 1's recorded body is no JSON any more (a comment line before `###` belongs to
    # it): its task id is never paired, and exchange 2 asks an agent that never saw it
    path = project.path / "transcripts" / "02-review.http"
    edit(path, "### GetTask: the review task", "# read it back\n\n### GetTask: the review task")
    before = path.read_bytes()
    with start_kit() as fresh:
        monkeypatch.setenv("A2A_TOKEN", fresh.token)
        result = project.runpytest(
            "transcripts/02-review.http", "--recorder-agent", fresh.base_url, "--recorder-update"
        )
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of transcripts/02-review.http: exchange 2 (GetTask: *) _*",
            "transcripts/02-review.http  ✗ exchange 1 (SendMessage: review a diff):",
            "    not updated: exchange 2 sent a recorded id that no live reply paired; fix the"
            " exchange before it, or record this scenario again",
        ],
        consecutive=False,
    )
    assert "Traceback" not in result.stdout.str()
    assert "recorder --recorder-update" not in result.stdout.str()
    assert path.read_bytes() == before
    assert loads(before.decode()).exchanges[0].title == "SendMessage: review a diff"


def test_recorder_var_and_env_file_fill_placeholders_over_the_environment(
    project: pytest.Pytester, kit: KitServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 04-cards' exchange 2 sends `Authorization: Bearer {{A2A_TOKEN}}`, which the kit checks
    monkeypatch.delenv("A2A_TOKEN")
    args = ["transcripts/04-cards.http", "--recorder-agent", kit.base_url]
    unset = project.runpytest(*args)
    unset.assert_outcomes(passed=1, failed=1)
    unset.stdout.fnmatch_lines(["*the variable A2A_TOKEN is not set*"])
    project.path.joinpath("good.env").write_text(f"A2A_TOKEN={kit.token}\n")
    project.path.joinpath("bad.env").write_text("A2A_TOKEN=wrong\n")
    project.runpytest(*args, f"--recorder-var=A2A_TOKEN={kit.token}").assert_outcomes(passed=2)
    project.runpytest(*args, "--recorder-env-file", "good.env").assert_outcomes(passed=2)
    # later files win, and --recorder-var wins over the files and the environment
    later = project.runpytest(
        *args, "--recorder-env-file", "good.env", "--recorder-env-file", "bad.env"
    )
    later.assert_outcomes(passed=1, failed=1)
    monkeypatch.setenv("A2A_TOKEN", "wrong too")
    var = project.runpytest(
        *args, "--recorder-env-file", "bad.env", f"--recorder-var=A2A_TOKEN={kit.token}"
    )
    var.assert_outcomes(passed=2)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        (
            "--recorder-var",
            "A2A_TOKEN",
            "ERROR: --recorder-var: expected NAME=VALUE, got 'A2A_TOKEN'",
        ),
        (
            "--recorder-env-file",
            "nope.env",
            "ERROR: --recorder-env-file: cannot read the env file nope.env: No such file*",
        ),
        ("--recorder-env-file", "broken.env", "ERROR: --recorder-env-file: broken.env:2: *"),
    ],
)
def test_a_bad_variable_option_is_one_usage_error_before_any_test(
    project: pytest.Pytester, option: str, value: str, message: str
) -> None:
    project.path.joinpath("broken.env").write_text("A=1\nnot a line\n")
    result = project.runpytest("transcripts", option, value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


GRPC_GOLDENS = sorted(helpers.TRANSCRIPTS.glob("*-grpc-*.http"))


def test_recorder_grpc_agent_names_where_the_grpc_calls_go(pytester: pytest.Pytester) -> None:
    folder = pytester.path / "transcripts"
    folder.mkdir()
    for path in GRPC_GOLDENS:
        shutil.copy(path, folder / path.name)
    calls = sum(len(loads(p.read_text())) for p in GRPC_GOLDENS)
    assert calls >= 5
    # a kit whose card lists no GRPC interface: the option is the only way to its gRPC port
    with start_kit(grpc_port=0, grpc_in_card=False) as unlisted:
        assert unlisted.grpc_address is not None
        named = pytester.runpytest(
            "transcripts",
            "--recorder-agent",
            unlisted.base_url,
            "--recorder-grpc-agent",
            unlisted.grpc_address,
        )
        named.assert_outcomes(passed=calls)
        unnamed = pytester.runpytest("transcripts", "--recorder-agent", unlisted.base_url)
        unnamed.assert_outcomes(failed=calls)
        unnamed.stdout.fnmatch_lines(["*no gRPC address for the agent*--grpc-agent*"])
    bad = pytester.runpytest("transcripts", "--recorder-grpc-agent", "no-port-here")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--recorder-grpc-agent: expected HOST:PORT*"])
