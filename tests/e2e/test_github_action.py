"""The composite GitHub Action at the repository's root (`action.yml`), its steps run as a
runner runs them: each `run:` script by `bash --noprofile --norc -eo pipefail`, its `env:`
resolved from the inputs (`${{ inputs.X }}`, the defaults for the rest), with the `GITHUB_*`
files a runner sets (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY), in a scratch workspace, against the
kit agent on loopback. The Action's outputs are read back from GITHUB_OUTPUT as a runner would.

The install step runs for real once (the wheel, into a fresh venv: needs the package index,
skipped when it cannot be reached); the other runs have recorder on PATH (`install: ''`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from installs import ci_blocks, pip

from recorder.kit import KitServer

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"
GOLDENS = ROOT / "transcripts"
EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")
CONDITION = re.compile(r"^inputs\.([\w-]+) != ''$")
LIMIT = 300


@dataclass
class Run:
    status: int
    outputs: dict[str, str]
    summary: str
    log: str


def action() -> dict:  # type: ignore[type-arg]
    value: dict = yaml.safe_load(ACTION.read_text(encoding="utf-8"))  # type: ignore[type-arg]
    return value


def run_action(inputs: dict[str, str], workspace: Path, path: str, *, here: bool = True) -> Run:
    """The Action's steps, in order, as a runner runs a composite action's steps (`here`:
    with this process's PYTHONPATH, so that a checkout's recorder is the one run)."""
    spec = action()
    given = {name: str(item.get("default", "")) for name, item in spec["inputs"].items()}
    for name, item in spec["inputs"].items():
        assert not item.get("required") or name in inputs, f"input {name} is required"
    given.update(inputs)
    output_file, summary_file = workspace / "github-output", workspace / "step-summary"
    output_file.write_text("")
    summary_file.write_text("")
    base = {
        "PATH": path,
        "HOME": str(workspace),
        "GITHUB_OUTPUT": str(output_file),
        "GITHUB_STEP_SUMMARY": str(summary_file),
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_WORKSPACE": str(workspace),
        "RUNNER_TEMP": str(workspace / "runner-temp"),
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "NO_COLOR": "1",
    }
    if here and "PYTHONPATH" in os.environ:  # (this checkout's recorder, where tests run so)
        base["PYTHONPATH"] = os.environ["PYTHONPATH"]

    def resolve(text: str) -> str:
        def value(match: re.Match[str]) -> str:
            scope, _, name = match.group(1).partition(".")
            assert scope == "inputs", match.group(0)
            return given[name]

        return EXPRESSION.sub(value, text)

    status, log, steps = 0, [], {}
    for step in spec["runs"]["steps"]:
        if "if" in step:
            (name,) = CONDITION.fullmatch(step["if"]).groups()  # type: ignore[union-attr]
            if given[name] == "":
                continue
        assert step["shell"] == "bash"
        assert "${{" not in step["run"]  # inputs reach the script as data (env) only
        env = {**base, **{k: resolve(str(v)) for k, v in step.get("env", {}).items()}}
        before = output_file.read_text()
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=LIMIT,
            check=False,
        )
        log.append(f"--- {step['name']}\n{done.stdout}{done.stderr}")
        written = output_file.read_text()[len(before) :]
        steps[step.get("id", "")] = dict(
            line.split("=", 1) for line in written.splitlines() if "=" in line
        )
        if done.returncode != 0:
            status = done.returncode
            break
    outputs = {}
    for name, item in spec["outputs"].items():
        match = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.([\w-]+) \}\}", item["value"])
        assert match is not None, item["value"]
        outputs[name] = steps.get(match.group(1), {}).get(match.group(2), "")
    return Run(status, outputs, summary_file.read_text(), "\n".join(log))


def scratch(tmp_path: Path, *names: str) -> Path:
    """A workspace with the named goldens under transcripts/."""
    workspace = tmp_path / "workspace"
    (workspace / "transcripts").mkdir(parents=True)
    for name in names:
        shutil.copy(GOLDENS / name, workspace / "transcripts" / name)
    return workspace


def here_path() -> str:
    """PATH with this Python's scripts first (its `recorder`)."""
    return f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"


def test_the_action_is_composite_and_names_its_inputs_and_outputs() -> None:
    spec = action()
    assert spec["runs"]["using"] == "composite"
    assert {"transcripts", "agent", "wait", "trials", "reports"} <= set(spec["inputs"])
    assert spec["inputs"]["agent"]["required"] is True
    assert {"junit", "json", "html", "exit-code"} <= set(spec["outputs"])
    for step in spec["runs"]["steps"]:
        # each INPUT_ variable a script reads is set by its step's env
        used = set(re.findall(r"\$\{?(INPUT_\w+)", step["run"]))
        assert used and used <= set(step.get("env", {})), step["name"]


def documented_use() -> dict[str, str]:
    """The `with:` of the step that uses the Action in docs/ci.md's example."""
    (step,) = [step for step in ci_blocks()["action"] if "recorder@" in step.get("uses", "")]
    return {name: str(value) for name, value in step["with"].items()}


def test_the_documented_use_names_the_actions_inputs() -> None:
    spec = action()
    given = documented_use()
    assert set(given) <= set(spec["inputs"])
    assert {name for name, item in spec["inputs"].items() if item.get("required")} <= set(given)
    (upload,) = [
        step for step in ci_blocks()["action"] if "upload-artifact" in step.get("uses", "")
    ]
    assert upload["if"] == "always()" and upload["with"]["path"].rstrip("/") == given["reports"]


def test_a_green_run_writes_the_reports_the_outputs_and_the_summary(
    kit: KitServer, tmp_path: Path
) -> None:
    workspace = scratch(tmp_path, "02-message-reply.http", "04-streaming.http")
    # docs/ci.md's use of the Action, its agent the kit (recorder already on PATH)
    inputs = {**documented_use(), "agent": kit.url, "install": "", "python": sys.executable}
    run = run_action(inputs, workspace, here_path())
    assert run.status == 0, run.log
    assert run.outputs["exit-code"] == "0"
    assert run.outputs["junit"] == "recorder-reports/recorder-junit.xml"
    junit = (workspace / run.outputs["junit"]).read_text()
    assert 'tests="2"' in junit and 'failures="0"' in junit
    assert (workspace / run.outputs["html"]).read_text().startswith("<!DOCTYPE html>")
    assert run.summary.startswith(
        "## recorder play\n\n✅ 2 transcripts, 2 exchanges: 2 passed, 0 failed"
    )
    assert "| exchange |" not in run.summary  # nothing failed: no table


def test_a_regression_fails_the_job_and_still_leaves_reports_and_summary(
    kit: KitServer, tmp_path: Path
) -> None:
    workspace = scratch(tmp_path, "02-message-reply.http", "04-streaming.http")
    stream = workspace / "transcripts" / "04-streaming.http"
    text = stream.read_text()
    at = text.rindex("TASK_STATE_COMPLETED")
    stream.write_text(text[:at] + "TASK_STATE_FAILED" + text[at + len("TASK_STATE_COMPLETED") :])
    # inputs are data to the shell: a folder name with a space and a command substitution
    reports = "out dir $(touch pwned)"
    inputs = {
        "agent": kit.url,
        "install": "",
        "python": sys.executable,
        "reports": reports,
        "trials": "2",
        "args": "--pass-rate 1.0 --jobs 2",
    }
    run = run_action(inputs, workspace, here_path())
    assert run.status == 1, run.log
    assert run.outputs["exit-code"] == "1"
    assert run.outputs["junit"] == f"{reports}/recorder-junit.xml"
    assert not (workspace / "pwned").exists()
    junit = (workspace / run.outputs["junit"]).read_text()
    assert 'failures="1"' in junit
    assert (workspace / run.outputs["json"]).exists() and (workspace / run.outputs["html"]).exists()
    assert "❌ 2 transcripts, 2 exchanges: 1 passed, 1 failed" in run.summary
    (row,) = [line for line in run.summary.splitlines() if "04\\-streaming" in line]
    assert "failed \\(0/2 trials\\)" in row
    assert "frame 4: $\\.result\\.statusUpdate\\.status\\.state" in row


@pytest.mark.timeout(1800)  # pip runs: minutes on a cold download cache
def test_the_install_step_installs_recorder_and_the_summary_uses_its_python(
    kit: KitServer, wheel: Path, tmp_path: Path
) -> None:
    runner = tmp_path / "runner-python"
    venv.EnvBuilder(with_pip=True).create(runner)
    workspace = scratch(tmp_path, "02-message-reply.http")
    inputs = {"agent": kit.url, "install": str(wheel), "python": str(runner / "bin" / "python")}
    # the runner's PATH: its Python's scripts first, no recorder anywhere before the install
    path = f"{runner / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"
    run = run_action(inputs, workspace, path, here=False)
    assert run.status == 0, run.log
    assert (runner / "bin" / "recorder").exists()
    assert run.summary.startswith("## recorder play\n\n✅ 1 transcript, 1 exchange: 1 passed")
    assert pip(runner / "bin" / "python", "show", "a2a-recorder").returncode == 0
