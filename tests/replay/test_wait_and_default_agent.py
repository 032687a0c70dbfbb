"""`--wait SECONDS` (play, learn, pytest's `--recorder-wait`): an agent that comes up after the
player started is waited for, one that never does is a clear error; and without an agent the
bundled kit is never a silent target: starting it is said on stderr, once (issue 28)."""

from __future__ import annotations

import re
import shutil
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import closed_port

from recorder.cli import main
from recorder.kit import create_app
from recorder.kit.serve import public_base_url
from recorder.servers import ServerThread, bind_socket

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.e2e

LIMIT = 30.0  # seconds, for every wait


class LateAgent:
    """The kit, started only once a client has tried to reach it: the port listens from the
    start, but its first connection is closed unanswered (the poll has begun then), and only
    after that does the kit serve on the same socket. No sleep decides the order."""

    def __init__(self) -> None:
        self.sock = bind_socket("127.0.0.1", 0)
        self.port = int(self.sock.getsockname()[1])
        self.url = public_base_url("127.0.0.1", self.port)
        self.turned_away = threading.Event()
        self.server: ServerThread | None = None
        self.failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.sock.settimeout(LIMIT)
            first, _ = self.sock.accept()  # the poll's first attempt
            first.close()  # unanswered: the agent is "still starting"
            self.turned_away.set()
            self.sock.settimeout(None)
            app = create_app(self.url, token="late-token")
            self.server = ServerThread(app, sock=self.sock, lifespan="on").start()
        except BaseException as exc:  # seen by the test, not lost in the thread
            self.failed = exc

    def __enter__(self) -> LateAgent:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.join(LIMIT)
        if self.server is not None:
            self.server.stop()
        else:
            self.sock.close()
        assert self.failed is None, self.failed


def cli(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def test_play_waits_for_an_agent_that_comes_up_late(goldens_here: Path) -> None:
    with LateAgent() as agent:
        result = cli(
            "play",
            str(goldens_here / "01-languages.http"),
            "--agent",
            agent.url,
            "--wait",
            str(LIMIT),
        )
        assert agent.turned_away.is_set()  # it was down when the player first looked
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("1 transcript, 1 exchange: 1 passed, 0 failed\n")
    assert result.stderr == ""


def test_without_wait_the_late_agent_fails_the_run(goldens_here: Path) -> None:
    # what --wait is for: the exchange met the agent still starting (its connection closed)
    with LateAgent() as agent:
        result = cli("play", str(goldens_here / "01-languages.http"), "--agent", agent.url)
    assert result.exit_code == 2
    assert f"error: no whole reply from the agent at {agent.url}" in result.stdout


def test_an_agent_that_never_answers_is_one_clear_error_within_the_wait(goldens_here: Path) -> None:
    with closed_port() as port:
        started = time.monotonic()
        result = cli(
            "play",
            str(goldens_here),
            "--agent",
            f"http://127.0.0.1:{port}",
            "--wait",
            "0.5",
            "--junit-xml",
            "report.xml",
        )
        took = time.monotonic() - started
    assert result.exit_code == 2
    assert re.fullmatch(
        rf"recorder play: the agent at http://127\.0\.0\.1:{port} did not answer within 0\.5 s "
        r"\(GET /\.well-known/agent-card\.json: connection refused, \d+ attempts\)\n",
        result.stderr,
    ), result.stderr
    assert result.stdout == ""
    assert took < 10  # bounded by the wait (0.5 s), with room for a loaded machine
    assert "did not answer within 0.5 s" in Path("report.xml").read_text()


def test_learn_waits_too(goldens_here: Path) -> None:
    with LateAgent() as agent:
        result = cli(
            "learn", str(goldens_here / "01-languages.http"), "--agent", agent.url, "--wait", "30"
        )
        assert agent.turned_away.is_set()
    assert result.exit_code == 0, result.output
    assert "0 likely regressions" in result.stderr


def test_play_without_agent_says_once_that_it_plays_against_the_kit(goldens_here: Path) -> None:
    result = cli("play", str(goldens_here))
    assert result.exit_code == 0, result.output
    assert re.fullmatch(
        r"recorder play: no --agent given: playing against the bundled kit at "
        r"http://127\.0\.0\.1:\d+\n",
        result.stderr,
    ), result.stderr


def test_learn_without_agent_says_so_too(goldens_here: Path) -> None:
    result = cli("learn", str(goldens_here / "01-languages.http"))
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert re.fullmatch(
        r"recorder learn: no --agent given: learning from the bundled kit at "
        r"http://127\.0\.0\.1:\d+",
        lines[0],
    ), result.stderr
    assert sum("bundled kit" in line for line in lines) == 1


def test_nothing_to_play_starts_no_kit_and_says_nothing_of_it(tmp_path: Path) -> None:
    result = cli("play", str(tmp_path))
    assert result.exit_code == 2
    assert "bundled kit" not in result.stderr


# --------------------------------------------------------------------------- pytest


@pytest.fixture
def project(pytester: pytest.Pytester, golden_dir: Path) -> pytest.Pytester:
    shutil.copytree(golden_dir, pytester.path / "transcripts")
    return pytester


def test_pytest_without_agent_says_once_on_stderr_that_it_plays_against_the_kit(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("A2A_TOKEN", raising=False)
    result = project.runpytest("transcripts/04-cards.http", "transcripts/01-languages.http")
    result.assert_outcomes(passed=3)
    said = [line for line in result.errlines if "bundled kit" in line]
    assert len(said) == 1, result.errlines
    assert re.fullmatch(
        r"recorder: no --recorder-agent given: playing against the bundled kit at "
        r"http://127\.0\.0\.1:\d+",
        said[0],
    )


def test_pytest_recorder_wait_waits_for_a_late_agent(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2A_TOKEN", "late-token")
    with LateAgent() as agent:
        result = project.runpytest(
            "transcripts/01-languages.http",
            "--recorder-agent",
            agent.url,
            "--recorder-wait",
            str(LIMIT),
        )
        assert agent.turned_away.is_set()
    result.assert_outcomes(passed=1)
    assert not [line for line in result.errlines if "bundled kit" in line]


def test_pytest_recorder_wait_gives_up_once_with_a_clear_line(project: pytest.Pytester) -> None:
    with closed_port() as port:
        result = project.runpytest(
            "transcripts/02-review.http",
            "--recorder-agent",
            f"http://127.0.0.1:{port}",
            "--recorder-wait",
            "0.3",
        )
    result.assert_outcomes(failed=2)
    # the wait is not repeated per item: both fail with the one error (each item's failure
    # says it once; pytest's short summary, whole lines under CI, is left out here)
    lines = [
        line
        for line in result.outlines
        if "did not answer within 0.3 s" in line and not line.startswith("FAILED")
    ]
    assert len(lines) == 2, result.outlines
    assert lines[0].startswith(f"recorder: the agent at http://127.0.0.1:{port} did not answer")


def test_pytest_a_bad_wait_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("transcripts", "--recorder-wait", "-1")
    result.stderr.fnmatch_lines(["ERROR: --recorder-wait: expected 0 to 3600 seconds, got -1"])
