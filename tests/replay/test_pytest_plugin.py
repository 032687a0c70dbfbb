"""The pytest plugin (`recorder.replay.pytest_plugin`), run with pytester against the real kit."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from helpers import closed_port, edit, stream_that_never_ends

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


def test_each_exchange_is_a_passing_test(project: pytest.Pytester, kit: KitServer) -> None:
    result = project.runpytest("transcripts", "--recorder-agent", kit.base_url, "-v")
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines(
        [
            "transcripts/02-review.http::01 SendMessage: review a diff PASSED*",
            "transcripts/02-review.http::02 GetTask: the review task PASSED*",
        ]
    )


def test_an_export_among_the_transcripts_is_not_collected(
    project: pytest.Pytester, kit: KitServer
) -> None:
    from click.testing import CliRunner

    from recorder.cli import main

    folder = project.path / "transcripts"
    result = CliRunner().invoke(
        main,
        ["export", str(folder / "02-review.http"), "--to", "http", "-o", str(folder / "99-x.http")],
    )
    assert result.exit_code == 0, result.output
    # the folders of `recorder_transcripts` are collected whole (no format marker needed)
    project.makeini("[pytest]\nrecorder_transcripts = transcripts\n")
    result = project.runpytest("--recorder-agent", kit.base_url)
    result.assert_outcomes(passed=10)


def test_a_mismatch_fails_its_item_with_the_players_report(
    project: pytest.Pytester, kit: KitServer
) -> None:
    edit(
        project.path / "transcripts" / "02-review.http",
        '"state": "TASK_STATE_COMPLETED"',
        '"state": "TASK_STATE_FAILED"',
    )
    result = project.runpytest("transcripts", "--recorder-agent", kit.base_url)
    result.assert_outcomes(passed=9, failed=1)
    result.stdout.fnmatch_lines(
        [
            "transcripts/02-review.http  ✗ exchange 1 (SendMessage: review a diff):",
            '    $.result.task.status.state: expected "TASK_STATE_FAILED", '
            'got "TASK_STATE_COMPLETED"',
        ]
    )


def test_k_selects_items_and_their_setup_still_runs(
    project: pytest.Pytester, kit: KitServer
) -> None:
    result = project.runpytest("transcripts", "--recorder-agent", kit.base_url, "-k", "GetTask")
    # 02-review's GetTask needs the task its (deselected) SendMessage creates: played as setup
    result.assert_outcomes(passed=2, deselected=8)


def test_without_agent_the_session_starts_the_kit(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("A2A_TOKEN")
    result = project.runpytest("transcripts/04-cards.http")
    result.assert_outcomes(passed=2)


def test_nothing_is_collected_unless_asked(project: pytest.Pytester) -> None:
    project.makepyfile(test_plain="def test_one():\n    assert True\n")
    # no arguments: pytest searches the current folder, the plugin leaves .http files alone
    result = project.runpytest()
    result.assert_outcomes(passed=1)


def test_other_tools_http_files_are_left_alone(project: pytest.Pytester) -> None:
    (project.path / "requests").mkdir()
    (project.path / "requests" / "api.http").write_text("GET https://example.invalid/\n")
    project.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = project.runpytest("requests", "test_plain.py")
    result.assert_outcomes(passed=1)


def test_the_ini_option_names_the_only_folders_searched(
    project: pytest.Pytester, kit: KitServer
) -> None:
    shutil.copytree(project.path / "transcripts", project.path / "fixtures")
    project.makeini("[pytest]\nrecorder_transcripts = transcripts\n")
    result = project.runpytest(
        "transcripts", "fixtures", "--recorder-agent", kit.base_url, "--co", "-q"
    )
    assert "10 tests collected" in result.stdout.str()
    assert "fixtures/" not in result.stdout.str()


def test_a_broken_transcript_is_a_collection_error_with_file_and_line(
    project: pytest.Pytester, kit: KitServer
) -> None:
    (project.path / "transcripts" / "06-broken.http").write_text(
        "# recorder-format: 1\n\n### broken\nPOST /a2a/jsonrpc HTTP/1.1\n"
    )
    result = project.runpytest("transcripts", "--recorder-agent", kit.base_url)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*06-broken.http:5: expected a status line*"])


def test_xdist_loadfile_keeps_each_file_on_one_worker_in_order(
    project: pytest.Pytester, kit: KitServer
) -> None:
    result = project.runpytest(
        "transcripts", "--recorder-agent", kit.base_url, "-n", "2", "--dist", "loadfile"
    )
    result.assert_outcomes(passed=10)


def test_an_unreachable_agent_fails_items_with_one_clear_line(project: pytest.Pytester) -> None:
    with closed_port() as port:
        result = project.runpytest(
            "transcripts/01-languages.http", "--recorder-agent", f"http://127.0.0.1:{port}"
        )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"recorder: cannot reach the agent at http://127.0.0.1:{port}: connection refused"]
    )
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        (
            "--recorder-agent",
            "localhost:41242",
            "ERROR: --recorder-agent: expected an http:// or https:// URL such as "
            "http://127.0.0.1:41242, got 'localhost:41242'",
        ),
        (
            "--recorder-timeout",
            "inf",
            "ERROR: --recorder-timeout: expected seconds above 0 and at most 86400, got inf",
        ),
        (
            "--recorder-timeout",
            "-1",
            "ERROR: --recorder-timeout: expected seconds above 0 and at most 86400, got -1",
        ),
        (
            "--recorder-rules",
            "nope.yaml",
            "ERROR: --recorder-rules: nope.yaml: cannot read the rules file: No such file*",
        ),
    ],
)
def test_a_bad_option_is_one_usage_error_before_any_test(
    project: pytest.Pytester, option: str, value: str, message: str
) -> None:
    result = project.runpytest("transcripts", option, value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_an_exchange_without_reply_fails_and_the_rest_of_its_file_is_skipped(
    project: pytest.Pytester, kit: KitServer
) -> None:
    # the slow review's stream never ends without the CancelTask: exchange 2 gets no whole
    # reply in 1 s, and the exchange after it (which would need its ids) is skipped
    path = project.path / "transcripts" / "06-subscribe.http"
    stream_that_never_ends(path)
    result = project.runpytest(
        str(path), "--recorder-agent", kit.base_url, "--recorder-timeout", "1", "-rs"
    )
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "transcripts/06-subscribe.http  ✗ exchange 2 (*):",
            "    error: the * did not * within 1 s*",
            "SKIPPED * not played: exchange 2 got no reply",
        ]
    )
    assert "Traceback" not in result.stdout.str()


class StopAfter:
    """A pytest plugin that stops the agent once the named item has run."""

    def __init__(self, agent: KitServer, item: str) -> None:
        self.agent = agent
        self.item = item

    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        if item.nodeid.endswith(self.item):
            self.agent.stop()


def test_an_agent_killed_mid_session_fails_fast_and_skips_the_rest_of_each_file(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = start_kit()
    try:
        monkeypatch.setenv("A2A_TOKEN", agent.token)
        started = time.monotonic()
        result = project.runpytest(
            "transcripts",
            "--recorder-agent",
            agent.base_url,
            "-rs",
            plugins=[StopAfter(agent, "02-review.http::01 SendMessage: review a diff")],
        )
        elapsed = time.monotonic() - started
    finally:
        agent.stop()
    assert elapsed < 10  # not a timeout per exchange
    # 01 and 02#1 pass; 02#2 loses its reply; 03, 04, 05, 06 fail their first exchange and
    # skip the rest of their file (04: 1, 06: 2)
    result.assert_outcomes(passed=2, failed=5, skipped=3)
    gone = f"    error: cannot reach the agent at {agent.base_url}: connection refused"
    result.stdout.fnmatch_lines(
        [
            "transcripts/03-streaming.http  ✗ exchange 1 (*):",
            gone,
            "SKIPPED * not played: exchange 1 got no reply",
        ],
        consecutive=False,
    )
    assert "Traceback" not in result.stdout.str()


def test_ini_options_set_the_agent_rules_and_timeout(
    project: pytest.Pytester, kit: KitServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the golden state is wrong, and the rules file next to the ini ignores it: the rules are
    # read relative to the ini file, also when pytest is started from a subfolder
    edit(
        project.path / "transcripts" / "02-review.http",
        '"state": "TASK_STATE_COMPLETED"',
        '"state": "TASK_STATE_FAILED"',
    )
    (project.path / "rules.yaml").write_text('ignored_paths: ["$.result.task.status.state"]\n')
    project.makeini(
        "[pytest]\n"
        f"recorder_agent = {kit.base_url}\n"
        "recorder_rules = rules.yaml\n"
        "recorder_timeout = 5\n"
    )
    sub = project.mkdir("sub")
    monkeypatch.chdir(sub)
    result = project.runpytest("../transcripts", "--strict-config")
    result.assert_outcomes(passed=10)
    monkeypatch.chdir(project.path)
    (project.path / "rules.yaml").write_text("")
    result = project.runpytest("transcripts", "--strict-config")
    result.assert_outcomes(passed=9, failed=1)
    # the ini's agent and timeout are the ones used
    with closed_port() as port:
        project.makeini(f"[pytest]\nrecorder_agent = http://127.0.0.1:{port}\n")
        result = project.runpytest("transcripts/01-languages.http")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*cannot reach the agent at http://127.0.0.1:{port}*"])
    project.makeini("[pytest]\nrecorder_timeout = 0\n")
    result = project.runpytest("transcripts")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --recorder-timeout: expected seconds above 0*, got 0"])


def test_a_setup_exchange_without_reply_fails_the_selected_item(
    project: pytest.Pytester, kit: KitServer
) -> None:
    # -k selects exchanges 3 and 4; exchange 2 (setup, not selected) gets no reply: the first
    # selected item fails with that error instead of being skipped in silence
    path = project.path / "transcripts" / "06-subscribe.http"
    stream_that_never_ends(path, after=2, title="again")
    result = project.runpytest(
        str(path), "--recorder-agent", kit.base_url, "--recorder-timeout", "1", "-k", "again"
    )
    # the first selected item fails with the error; the next one is skipped, not failed again
    result.assert_outcomes(failed=1, skipped=1, deselected=2)
    result.stdout.fnmatch_lines(
        [
            "transcripts/06-subscribe.http  ✗ exchange 2 (*):",
            "    error: the * within 1 s*",
        ]
    )
