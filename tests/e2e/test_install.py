"""Installed as a user installs it (issue 28): the built wheel, into a fresh virtualenv that
already holds the user's agent on a2a-sdk 1.1.0. The SDK stays 1.1.0 (the core needs none of
it), `recorder record` and `recorder play --wait` work against that agent (an A2A server built
with a2a-sdk 1.1.0, run by that venv's Python), and the `[kit]` extra gives `recorder kit`.

It needs the package index (a2a-sdk 1.1.0, setuptools for the build): skipped, saying why,
only when the index cannot be reached. The wheel is built once per session; the whole check
is one test (one venv), kept on one xdist worker (`xdist_group`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("install")]

ROOT = Path(__file__).resolve().parents[2]
ECHO_AGENT = ROOT / "tests" / "fixtures" / "agents" / "echo_agent.py"
USER_SDK = "1.1.0"
LIMIT = 30.0  # seconds, for each wait on a process
INSTALL_LIMIT = 600.0  # seconds, for each pip run (downloads on a cold cache)


def _pip(python: Path | str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=INSTALL_LIMIT,
        check=False,
    )


@pytest.fixture(scope="session")
def index_reachable(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Skip (with the reason) when the package index cannot give a2a-sdk 1.1.0."""
    where = tmp_path_factory.mktemp("index-probe")
    probe = _pip(sys.executable, "download", "--no-deps", "-d", str(where), f"a2a-sdk=={USER_SDK}")
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"the package index is unreachable (pip download a2a-sdk=={USER_SDK}: {last})")


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory, index_reachable: None) -> Path:
    """The a2a-recorder wheel, built once per session from a copy of the sources (the
    checkout gets no build/ or egg-info)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "recorder", source / "recorder", ignore=shutil.ignore_patterns("__pycache__")
    )
    built = _pip(sys.executable, "wheel", "--no-deps", "-q", "-w", str(work / "dist"), str(source))
    assert built.returncode == 0, built.stderr
    (path,) = (work / "dist").glob("a2a_recorder-*.whl")
    return path


@pytest.fixture
def user_venv(tmp_path: Path, index_reachable: None) -> Path:
    """A fresh venv holding the user's agent stack: a2a-sdk 1.1.0 with its HTTP server."""
    folder = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(folder)
    python = folder / "bin" / "python"
    installed = _pip(python, "install", "-q", f"a2a-sdk[http-server]=={USER_SDK}", "uvicorn")
    assert installed.returncode == 0, installed.stderr
    return folder


def _sdk_version(folder: Path) -> str:
    code = "import importlib.metadata as m; print(m.version('a2a-sdk'))"
    return subprocess.run(
        [str(folder / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=True,
    ).stdout.strip()


class Background:
    """A child process whose first line (stdout or stderr) says where it listens."""

    def __init__(self, *command: str, stream: str = "stdout") -> None:
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        pipe = self.process.stdout if stream == "stdout" else self.process.stderr
        assert pipe is not None
        self.first_line = pipe.readline()

    def interrupt(self) -> tuple[str, str]:
        self.process.send_signal(signal.SIGINT)
        return self.process.communicate(timeout=LIMIT)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate(timeout=LIMIT)


@pytest.fixture
def processes() -> Iterator[list[Background]]:
    started: list[Background] = []
    yield started
    for process in reversed(started):
        process.close()


def test_the_wheel_installs_beside_the_users_sdk_and_records_and_plays_its_agent(
    wheel: Path, user_venv: Path, tmp_path: Path, processes: list[Background]
) -> None:
    bin_ = user_venv / "bin"
    installed = _pip(bin_ / "python", "install", "-q", str(wheel))
    assert installed.returncode == 0, installed.stderr
    assert _sdk_version(user_venv) == USER_SDK  # the user's pin is left alone

    # the user's agent, on a2a-sdk 1.1.0, run by that venv's Python
    agent = Background(str(bin_ / "python"), str(ECHO_AGENT))
    processes.append(agent)
    assert agent.first_line.startswith("listening on http://127.0.0.1:"), agent.first_line
    agent_url = agent.first_line.split()[-1]

    # record: the installed command, in front of that agent
    out = tmp_path / "transcripts"
    record = Background(
        str(bin_ / "recorder"),
        "record",
        "--agent",
        agent_url,
        "--listen",
        "127.0.0.1:0",
        "--out",
        str(out),
        stream="stderr",
    )
    processes.append(record)
    proxy_url = record.first_line.split()[4].rstrip(",")
    assert proxy_url.startswith("http://127.0.0.1:"), record.first_line
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
    }
    headers = {"A2A-Version": "1.0", "Recorder-Scenario": "echo"}
    reply = httpx.post(proxy_url + "/a2a/jsonrpc", json=body, headers=headers, timeout=LIMIT)
    assert reply.json()["result"]["message"]["parts"] == [{"text": "echo: hi"}]
    _, err = record.interrupt()
    assert record.process.returncode == 0, err
    (recorded,) = out.glob("*-echo.http")
    assert '"text": "echo: hi"' in recorded.read_text()

    # play: the installed command, --wait and a JUnit report, as in docs/ci.md
    junit = tmp_path / "report.xml"
    command = [str(bin_ / "recorder"), "play", str(out), "--agent", agent_url]
    played = subprocess.run(
        [*command, "--wait", "30", "--junit-xml", str(junit)],
        capture_output=True,
        text=True,
        timeout=LIMIT * 2,
        check=False,
    )
    assert played.returncode == 0, played.stdout + played.stderr
    assert played.stdout.endswith("1 transcript, 1 exchange: 1 passed, 0 failed\n")
    assert 'failures="0"' in junit.read_text()
    assert _sdk_version(user_venv) == USER_SDK

    # the [kit] extra gives the bundled kit (and the SDK it is built on)
    with_kit = _pip(bin_ / "python", "install", "-q", f"{wheel}[kit]")
    assert with_kit.returncode == 0, with_kit.stderr
    assert _sdk_version(user_venv).startswith("1.")
    kit = Background(str(bin_ / "recorder"), "kit", "--listen", "127.0.0.1:0")
    processes.append(kit)
    assert kit.first_line.startswith("code-reviewer listening on http://127.0.0.1:"), kit.first_line
    kit_url = kit.first_line.split()[-1]
    card = httpx.get(kit_url + "/.well-known/agent-card.json", timeout=LIMIT)
    assert json.loads(card.text)["name"] == "code-reviewer"
    out_text, err_text = kit.interrupt()
    assert kit.process.returncode == 0, err_text
    assert out_text.endswith("code-reviewer stopped.\n")


def test_the_core_metadata_names_no_a2a_sdk_and_no_starlette() -> None:
    """What pip reads: the core requirements (no extra) pin none of the kit's stack."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "a2a-recorder"
    core = " ".join(project["dependencies"]).lower()
    for name in ("a2a-sdk", "starlette", "sse-starlette", "fastapi"):
        assert name not in core
    kit = " ".join(project["optional-dependencies"]["kit"])
    assert "a2a-sdk" in kit and "==" not in kit  # a range, never an exact pin
    assert "a2a-recorder[kit]" in project["optional-dependencies"]["test"]


def test_the_core_imports_none_of_the_kits_server_stack() -> None:
    """`recorder play`, `record`, `serve`, `learn` load without a2a, starlette or sse_starlette:
    a child Python that has them hidden still runs every core command's module."""
    code = (
        "import sys\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('a2a', 'starlette', 'sse_starlette', 'fastapi'):\n"
        "            raise ImportError(f'hidden: {name}')\n"
        "sys.meta_path.insert(0, Hide())\n"
        "import recorder, recorder.cli.play, recorder.cli.record, recorder.cli.serve\n"
        "import recorder.cli.learn, recorder.cli.check, recorder.cli.docs, recorder.cli.rules\n"
        "import recorder.record.proxy, recorder.replay.player, recorder.serve.app\n"
        "import recorder.replay.pytest_plugin, recorder.serve.pytest_fixture\n"
        "import recorder.learn.run, recorder.replay.wait\n"
        "from recorder.cli import main\n"
        "main(['kit'])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=LIMIT, env=env
    )
    # every core module imported; the kit alone says what it needs, in one line
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("recorder kit: the bundled kit cannot start (hidden: a2a")
    assert result.stderr.endswith("it needs pip install 'a2a-recorder[kit]'\n")
