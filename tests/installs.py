"""Installing the recorder as a user does: its wheel built once, fresh virtualenvs, the
processes started from them, and docs/ci.md's jobs as shell lines (tests/e2e/test_install.py,
tests/docs/test_readme_commands.py)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
ECHO_AGENT = ROOT / "tests" / "fixtures" / "agents" / "echo_agent.py"
USER_SDK = "1.1.0"  # the a2a-sdk the user's own agent pins
USER_STACK = (f"a2a-sdk[http-server]=={USER_SDK}", "uvicorn")
LIMIT = 30.0  # seconds, for each wait on a process
INSTALL_LIMIT = 600.0  # seconds, for each pip run (downloads on a cold cache)
CI_PAGE = ROOT / "docs" / "ci.md"
README = ROOT / "README.md"
_YAML = re.compile(r"^```yaml\n(.*?)^```$", re.M | re.S)
_SH = re.compile(r"^```sh\n(.*?)^```$", re.M | re.S)


# the page's sections that hold a YAML block, and the name each block is known by here
CI_SECTIONS = {
    "GitHub Actions": "github",
    "GitLab CI": "gitlab",
    "The recorder's GitHub Action": "action",
    "pre-commit": "pre-commit",
}


def ci_blocks() -> dict[str, Any]:
    """The page's YAML blocks, parsed, by their section (CI_SECTIONS): `github` and `gitlab`
    (the two jobs), `action` (steps that use the repository's Action), `pre-commit` (a
    `.pre-commit-config.yaml` naming its hooks)."""
    blocks: dict[str, Any] = {}
    for section in CI_PAGE.read_text(encoding="utf-8").split("\n## ")[1:]:
        heading, _, body = section.partition("\n")
        found = _YAML.findall(body)
        if heading.strip() in CI_SECTIONS and found:
            (text,) = found
            blocks[CI_SECTIONS[heading.strip()]] = yaml.safe_load(text)
    return blocks


def ci_jobs() -> dict[str, list[str]]:
    """The page's jobs (`github`, `gitlab`), each as the shell lines it runs, in order."""
    blocks = ci_blocks()
    github: list[str] = []
    for job in blocks["github"]["jobs"].values():
        for step in job["steps"]:
            github.extend(line for line in step.get("run", "").splitlines() if line.strip())
    gitlab: list[str] = []
    for job in blocks["gitlab"].values():
        if isinstance(job, dict) and "script" in job:
            gitlab.extend(job["script"])
    return {"github": github, "gitlab": gitlab}


def pip(python: Path | str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m pip ARGS`, its output kept."""
    return subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=INSTALL_LIMIT,
        check=False,
    )


def index_problem(folder: Path) -> str | None:
    """Why the package index cannot give a2a-sdk 1.1.0, or None when it can."""
    probe = pip(sys.executable, "download", "--no-deps", "-d", str(folder), f"a2a-sdk=={USER_SDK}")
    if probe.returncode == 0:
        return None
    last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
    return f"the package index is unreachable (pip download a2a-sdk=={USER_SDK}: {last})"


def readme_install_lines() -> list[str]:
    """The README's install blocks (under "Using it from your own project": from the package
    index, and the wheel from a checkout): their commands, comments dropped, in order."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Using it from your own project", 1)[1].split("\n## ", 1)[0]
    lines = [
        re.sub(r"\s+#\s.*$", "", line).strip()
        for block in _SH.findall(section)
        for line in block.splitlines()
    ]
    return [line for line in lines if line.startswith(("pip ", "pipx ", "uv "))]


def readme_line(start: str) -> str:
    """The one README install line that starts with `start` (`pip wheel`, `pipx install dist/`
    …)."""
    (line,) = [line for line in readme_install_lines() if line.startswith(start)]
    return line


def run_line(line: str, cwd: Path, bin_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """A documented shell line, run by bash in `cwd` with `bin_dir` first on PATH (so `pip`,
    `pipx` and `recorder` are that venv's)."""
    environ = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **env}
    environ.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        ["bash", "-c", line],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=INSTALL_LIMIT,
        check=False,
    )


def build_wheel(work: Path) -> Path:
    """The a2a-recorder wheel, built as the README says (`pip wheel … .`) in a copy of the
    sources (the checkout gets no build/ or egg-info). Returns its path under `work/dist/`."""
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, work / name)
    shutil.copytree(
        ROOT / "recorder", work / "recorder", ignore=shutil.ignore_patterns("__pycache__")
    )
    built = run_line(readme_line("pip wheel") + " -q", work, Path(sys.executable).parent)
    assert built.returncode == 0, built.stderr
    (path,) = (work / "dist").glob("a2a_recorder-*.whl")
    return path


def user_venv(folder: Path) -> Path:
    """A fresh venv holding the user's agent stack (a2a-sdk 1.1.0 with its HTTP server)."""
    venv.EnvBuilder(with_pip=True).create(folder)
    installed = pip(folder / "bin" / "python", "install", "-q", "--no-compile", *USER_STACK)
    assert installed.returncode == 0, installed.stderr
    return folder


def sdk_version(folder: Path) -> str:
    """The a2a-sdk version installed in the venv at `folder`."""
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
        """Ctrl-C, then its remaining output."""
        self.process.send_signal(signal.SIGINT)
        return self.process.communicate(timeout=LIMIT)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate(timeout=LIMIT)
