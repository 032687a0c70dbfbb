"""`recorder play` through click's CliRunner: exact output and exit codes, against the real kit."""

from __future__ import annotations

import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from test_player import closed_port, edit, record_goldens

from recorder.cli import main
from recorder.kit import KitServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def golden_dir(tmp_path_factory: pytest.TempPathFactory, kit: KitServer) -> Path:
    folder = tmp_path_factory.mktemp("cli-goldens")
    record_goldens(kit, folder)
    return folder


@pytest.fixture
def goldens(golden_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the goldens at `transcripts/` under the current directory (short paths)."""
    shutil.copytree(golden_dir, tmp_path / "transcripts")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("A2A_TOKEN", raising=False)
    return Path("transcripts")


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, ["play", *args], env=env, catch_exceptions=False)


PASSING = [
    "transcripts/01-languages.http  ✓ 1 exchange",
    "transcripts/02-review.http     ✓ 2 exchanges",
    "transcripts/03-streaming.http  ✓ 1 exchange",
    "transcripts/04-cards.http      ✓ 2 exchanges",
    "transcripts/05-errors.http     ✓ 1 exchange",
    "transcripts/06-subscribe.http  ✓ 3 exchanges",
]


def test_all_transcripts_pass_against_the_agent(goldens: Path, kit: KitServer) -> None:
    result = run("transcripts", "--agent", kit.base_url, env={"A2A_TOKEN": kit.token})
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        *PASSING,
        "6 transcripts, 10 exchanges: 10 passed, 0 failed",
    ]
    assert result.stderr == ""


def test_without_agent_the_player_starts_the_kit_and_uses_its_token(goldens: Path) -> None:
    # what `make demo` runs: no agent, no A2A_TOKEN in the environment
    result = run("transcripts")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "6 transcripts, 10 exchanges: 10 passed, 0 failed"


def test_a_mismatch_is_reported_with_file_exchange_path_values_and_exit_1(
    goldens: Path, kit: KitServer
) -> None:
    edit(
        goldens / "02-review.http",
        '"state": "TASK_STATE_COMPLETED"',
        '"state": "TASK_STATE_FAILED"',
    )
    result = run("transcripts", "--agent", kit.base_url, env={"A2A_TOKEN": kit.token})
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == [
        PASSING[0],
        "transcripts/02-review.http     ✗ exchange 1 (SendMessage: review a diff):",
        '    $.result.task.status.state: expected "TASK_STATE_FAILED", got "TASK_STATE_COMPLETED"',
        *PASSING[2:],
        "6 transcripts, 10 exchanges: 9 passed, 1 failed",
    ]


def test_a_mismatch_in_an_sse_frame_names_the_frame(goldens: Path, kit: KitServer) -> None:
    edit(
        goldens / "03-streaming.http",
        '"state": "TASK_STATE_WORKING"',
        '"state": "TASK_STATE_FAILED"',
    )
    result = run("transcripts/03-streaming.http", "--agent", kit.base_url)
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == [
        "transcripts/03-streaming.http  ✗ exchange 1 "
        "(SendStreamingMessage: review a diff as a stream), frame 2:",
        '    $.result.statusUpdate.status.state: expected "TASK_STATE_FAILED", '
        'got "TASK_STATE_WORKING"',
        "1 transcript, 1 exchange: 0 passed, 1 failed",
    ]


def test_an_unreachable_agent_is_one_line_and_exit_2(goldens: Path) -> None:
    with closed_port() as port:
        result = run("transcripts", "--agent", f"http://127.0.0.1:{port}", env={"A2A_TOKEN": "x"})
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"recorder: cannot reach the agent at http://127.0.0.1:{port}: connection refused\n"
    )


def test_a_transcript_that_does_not_parse_is_named_with_its_line_and_exit_2(
    goldens: Path, kit: KitServer
) -> None:
    (goldens / "06-broken.http").write_text("### broken\nPOST /a2a/jsonrpc HTTP/1.1\n")
    result = run("transcripts", "--agent", kit.base_url)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        'transcripts/06-broken.http:3: expected a status line such as "HTTP/1.1 200 OK" after '
        "the request body (the request starts at line 2)\n"
    )


def test_a_missing_environment_variable_is_named_with_file_and_line(
    goldens: Path, kit: KitServer
) -> None:
    result = run("transcripts/04-cards.http", "--agent", kit.base_url)
    assert result.exit_code == 2
    line = next(
        n
        for n, text in enumerate((goldens / "04-cards.http").read_text().splitlines(), start=1)
        if text.startswith("### GetExtendedAgentCard")
    )
    assert result.stderr == (
        f"transcripts/04-cards.http:{line}: the environment variable A2A_TOKEN is not set "
        "(the request uses {{A2A_TOKEN}}); set it and run again\n"
    )


def test_k_selects_exchanges_by_file_and_title(goldens: Path, kit: KitServer) -> None:
    result = run("transcripts", "--agent", kit.base_url, "-k", "gettask")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "transcripts/02-review.http  ✓ 1 exchange",
        "transcripts/05-errors.http  ✓ 1 exchange",
        "2 transcripts, 2 exchanges: 2 passed, 0 failed",
    ]


def test_shard_and_jobs_split_the_files(goldens: Path, kit: KitServer) -> None:
    env = {"A2A_TOKEN": kit.token}
    first = run("transcripts", "--agent", kit.base_url, "--shard", "1/2", "--jobs", "2", env=env)
    second = run("transcripts", "--agent", kit.base_url, "--shard", "2/2", env=env)
    assert (first.exit_code, second.exit_code) == (0, 0)
    assert first.stdout.splitlines()[:-1] == [
        "transcripts/01-languages.http  ✓ 1 exchange",
        "transcripts/03-streaming.http  ✓ 1 exchange",
        "transcripts/05-errors.http     ✓ 1 exchange",
    ]
    assert second.stdout.splitlines()[:-1] == [
        "transcripts/02-review.http     ✓ 2 exchanges",
        "transcripts/04-cards.http      ✓ 2 exchanges",
        "transcripts/06-subscribe.http  ✓ 3 exchanges",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shard", "3/2"], "expected 1 <= K <= N in K/N, got '3/2'"),
        (["--agent", "localhost:41242"], "expected an http:// or https:// URL"),
        (["--jobs", "0"], "0 is not in the range x>=1"),
        (["--junit-xml", "no-such-folder/report.xml"], "folder of no-such-folder/report.xml"),
    ],
)
def test_usage_errors_exit_2(goldens: Path, args: list[str], message: str) -> None:
    result = run("transcripts", *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_junit_xml_has_one_testcase_per_exchange(goldens: Path, kit: KitServer) -> None:
    edit(goldens / "05-errors.http", '"code": -32001', '"code": -32002')
    result = run(
        "transcripts",
        "--agent",
        kit.base_url,
        "--junit-xml",
        "report.xml",
        env={"A2A_TOKEN": kit.token},
    )
    assert result.exit_code == 1
    root = ET.parse("report.xml").getroot()
    assert (root.tag, root.get("tests"), root.get("failures")) == ("testsuites", "10", "1")
    cases = [(c.get("classname"), c.get("name")) for c in root.iter("testcase")]
    assert cases[:3] == [
        ("transcripts/01-languages.http", "01 SendMessage: ask which languages the reviewer knows"),
        ("transcripts/02-review.http", "01 SendMessage: review a diff"),
        ("transcripts/02-review.http", "02 GetTask: the review task"),
    ]
    (failed,) = [c for c in root.iter("testcase") if c.find("failure") is not None]
    failure = failed.find("failure")
    assert failure is not None
    assert failed.get("name") == "01 GetTask: a task that does not exist"
    assert failure.text == (
        "transcripts/05-errors.http: exchange 1 (GetTask: a task that does not exist):\n"
        "    $.error.code: expected -32002, got -32001\n"
    )


def test_update_without_a_change_leaves_the_files_byte_identical(
    goldens: Path, kit: KitServer
) -> None:
    before = {p.name: p.read_bytes() for p in goldens.iterdir()}
    result = run("transcripts", "--agent", kit.base_url, "--update", env={"A2A_TOKEN": kit.token})
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == (
        "6 transcripts, 10 exchanges: 10 passed, 0 failed; 0 transcripts updated"
    )
    assert {p.name: p.read_bytes() for p in goldens.iterdir()} == before
    assert not any(name.endswith(".tmp") for name in os.listdir(goldens))
