"""Installed as a user installs it (issue 28): the built wheel, into a fresh virtualenv that
already holds the user's agent on a2a-sdk 1.1.0. The SDK stays 1.1.0 (the core needs none of
it), `recorder record` and `recorder play --wait` work against that agent (an A2A server built
with a2a-sdk 1.1.0, run by that venv's Python), and the `[kit]` extra gives `recorder kit`.

Then docs/ci.md's two CI jobs, run as their shells would run them: in a scratch repository laid
out as the page says (requirements.txt, agent.py, transcripts/, the wheel under ci/), with a
fresh venv's bin first on PATH (the runner's Python). The agent (the same a2a-sdk 1.1.0 one) is
started in the background by the job itself; the job's `recorder play --wait` meets it still
starting, and its report is kept.

It needs the package index (a2a-sdk 1.1.0, setuptools for the build): skipped, saying why,
only when the index cannot be reached. The wheel is built once per session, and these tests
are one file, so that pytest-xdist's `--dist loadfile` (make test) keeps them on one worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import venv
from pathlib import Path

import httpx
import pytest
from helpers import announced_address
from installs import (
    ECHO_AGENT,
    LIMIT,
    ROOT,
    USER_SDK,
    USER_STACK,
    Background,
    ci_blocks,
    ci_jobs,
    pip,
    readme_line,
    run_line,
    sdk_version,
)

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(1800)  # pip runs: minutes on a cold download cache
def test_the_wheel_installs_beside_the_users_sdk_and_records_and_plays_its_agent(
    wheel: Path, fresh_venv: Path, tmp_path: Path, processes: list[Background]
) -> None:
    bin_ = fresh_venv / "bin"
    here = wheel.parent.parent  # where the README's `dist/…whl` is
    installed = run_line(readme_line("pip install dist/"), here, bin_)
    assert installed.returncode == 0, installed.stderr
    assert sdk_version(fresh_venv) == USER_SDK  # the user's pin is left alone

    # the user's agent, on a2a-sdk 1.1.0, run by that venv's Python
    agent = Background(str(bin_ / "python"), str(ECHO_AGENT))
    processes.append(agent)
    assert agent.first_line.startswith("listening on http://127.0.0.1:"), agent.first_line
    agent_url = announced_address(agent.first_line)

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
    proxy_url = announced_address(record.first_line)
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
    assert sdk_version(fresh_venv) == USER_SDK

    # without --agent, the bundled kit cannot start on the user's a2a-sdk 1.1.0: one line
    # naming what it needs, a usage error (2), not a traceback read as mismatches (issue 32)
    no_agent = subprocess.run(
        [str(bin_ / "recorder"), "play", str(out)],
        capture_output=True,
        text=True,
        timeout=LIMIT * 2,
        check=False,
    )
    assert no_agent.returncode == 2, no_agent.stdout + no_agent.stderr
    assert no_agent.stderr.startswith(
        "recorder play: no --agent given, and the bundled kit needs a2a-sdk>=1.3,<2, found "
        f"a2a-sdk {USER_SDK} (pip install 'a2a-recorder[kit]'"
    ), no_agent.stderr
    assert no_agent.stderr.count("\n") == 1, no_agent.stderr

    # the README's pipx line: the command in a venv of its own
    assert pip(bin_ / "python", "install", "-q", "--no-compile", "pipx").returncode == 0
    pipx_bin = tmp_path / "pipx-bin"
    piped = run_line(
        readme_line("pipx install"),
        here,
        bin_,
        PIPX_HOME=str(tmp_path / "pipx"),
        PIPX_BIN_DIR=str(pipx_bin),
    )
    assert piped.returncode == 0, piped.stdout + piped.stderr
    checked = subprocess.run(
        [str(pipx_bin / "recorder"), "check", str(recorded)],
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr
    assert sdk_version(fresh_venv) == USER_SDK

    # the README's [kit] line gives the bundled kit (and the SDK it is built on)
    with_kit = run_line(readme_line("pip install 'dist/"), here, bin_)
    assert with_kit.returncode == 0, with_kit.stderr
    assert sdk_version(fresh_venv).startswith("1.")
    kit = Background(str(bin_ / "recorder"), "kit", "--listen", "127.0.0.1:0")
    processes.append(kit)
    assert kit.first_line.startswith("code-reviewer listening on http://127.0.0.1:"), kit.first_line
    kit_url = announced_address(kit.first_line)
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
    extras = project["optional-dependencies"]
    for extra in ("kit", "grpc"):
        needs = " ".join(extras[extra])
        assert "a2a-sdk" in needs and "==" not in needs  # a range, never an exact pin
    [ours] = [need for need in extras["test"] if need.startswith("a2a-recorder[")]
    assert {"kit", "grpc"} <= set(ours.removeprefix("a2a-recorder[").rstrip("]").split(","))


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


# --------------------------------------------------------------------------- docs/ci.md

ECHO_TRANSCRIPT = ROOT / "tests" / "fixtures" / "agents" / "echo.http"


def _report(lines: list[str]) -> str:
    (play,) = [line for line in lines if line.startswith("recorder play ")]
    return play.split("--junit-xml ", 1)[1].split()[0]


def test_both_jobs_keep_the_report_whatever_the_outcome() -> None:
    blocks = ci_blocks()
    jobs = ci_jobs()
    github_report = _report(jobs["github"])
    (upload,) = [
        step
        for job in blocks["github"]["jobs"].values()  # type: ignore[attr-defined]
        for step in job["steps"]
        if str(step.get("uses", "")).startswith("actions/upload-artifact")
    ]
    assert upload["if"] == "always()"
    assert upload["with"]["path"].split() == [github_report, "agent.log"]
    (gitlab,) = [job for job in blocks["gitlab"].values() if isinstance(job, dict)]
    artifacts = gitlab["artifacts"]
    assert artifacts["when"] == "always"
    assert artifacts["reports"]["junit"] == _report(jobs["gitlab"])
    assert artifacts["paths"] == [_report(jobs["gitlab"]), "agent.log"]
    for lines in jobs.values():
        # the background agent writes to a file, not to the job's output
        (start,) = [line for line in lines if line.endswith("&")]
        assert "> agent.log 2>&1 &" in start


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory, index_reachable: None) -> Path:
    """The CI runner's Python: a fresh venv, empty (each job installs what it needs; the
    second job finds it installed)."""
    folder = tmp_path_factory.mktemp("runner") / "venv"
    venv.EnvBuilder(with_pip=True).create(folder)
    return folder


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("job", ["github", "gitlab"])
def test_the_job_runs_green(job: str, wheel: Path, runner: Path, tmp_path: Path) -> None:
    lines = ci_jobs()[job]
    repo = tmp_path / "repo"
    (repo / "transcripts").mkdir(parents=True)
    (repo / "requirements.txt").write_text("\n".join(USER_STACK) + "\n")
    shutil.copy(ECHO_AGENT, repo / "agent.py")
    shutil.copy(ECHO_TRANSCRIPT, repo / "transcripts" / "01-echo.http")
    (wheel_line,) = [line for line in lines if ".whl" in line]
    wheel_path = repo / wheel_line.split()[-1]
    assert wheel_path.name == wheel.name, f"docs/ci.md names {wheel_path.name}, built {wheel.name}"
    wheel_path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(wheel, wheel_path)
    # the page's port 8000 becomes a free one (two jobs may run side by side here)
    from recorder.servers import bind_socket

    with bind_socket("127.0.0.1", 0) as sock:
        port = str(sock.getsockname()[1])
    script = "set -e\n" + "\n".join(line.replace("8000", port) for line in lines) + "\n"
    env = {**os.environ, "PATH": f"{runner / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.pop("VIRTUAL_ENV", None)
    env.pop("A2A_TOKEN", None)
    # output to files, as a CI log: the job's own end is waited for, not its pipes' (the
    # background agent would hold them open)
    with (tmp_path / "out").open("w+") as out_file, (tmp_path / "err").open("w+") as err_file:
        process = subprocess.Popen(
            ["bash", "-c", script],
            cwd=repo,
            env=env,
            stdout=out_file,
            stderr=err_file,
            start_new_session=True,  # the job's background agent is in its group: ended below
        )
        try:
            process.wait(timeout=1200)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=LIMIT)
        out = (tmp_path / "out").read_text()
        err = (tmp_path / "err").read_text()
    assert process.returncode == 0, out + err + (repo / "agent.log").read_text()
    assert out.endswith("1 transcript, 1 exchange: 1 passed, 0 failed\n"), out
    report = (repo / _report(lines)).read_text()
    assert 'tests="1"' in report and 'failures="0"' in report and 'errors="0"' in report
