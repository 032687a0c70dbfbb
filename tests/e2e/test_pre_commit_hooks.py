"""The pre-commit hooks the repository declares (`.pre-commit-hooks.yaml`), run by pre-commit
itself in a scratch git repository: `pre-commit try-repo <this checkout> <hook> --files …`,
as a user tries a hook repository before pinning it.

The hooks are `language: python`: pre-commit builds each one's environment by pip-installing
this checkout (and its dependencies) from the package index, as it will for a user. So these
tests need the index (pre-commit itself comes from it too): skipped, saying why, when it cannot
be reached.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml
from installs import ci_blocks, pip

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "transcripts" / "02-message-reply.http"
LIMIT = 900  # seconds: the first run builds the hook's environment (pip, from the index)


@pytest.fixture(scope="module")
def pre_commit(tmp_path_factory: pytest.TempPathFactory, index_reachable: None) -> Path:
    """pre-commit, in a venv of its own."""
    folder = tmp_path_factory.mktemp("pre-commit") / "venv"
    venv.EnvBuilder(with_pip=True).create(folder)
    installed = pip(folder / "bin" / "python", "install", "-q", "pre-commit")
    if installed.returncode != 0:
        pytest.skip(f"pre-commit cannot be installed: {installed.stderr.strip()[-300:]}")
    return folder / "bin" / "pre-commit"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """PRE_COMMIT_HOME: the hook environments, built once for the module's tests."""
    return tmp_path_factory.mktemp("pre-commit-home")


def git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, timeout=60)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A user's repository: a transcript and a README with a block made from it."""
    repo = tmp_path / "repo"
    (repo / "transcripts").mkdir(parents=True)
    shutil.copy(GOLDEN, repo / "transcripts" / "01-ask.http")
    readme = repo / "README.md"
    readme.write_text("# My agent\n\n<!-- recorder: transcripts/01-ask.http#1 ids=short -->\n")
    synced = subprocess.run(
        [
            sys.executable,
            "-c",
            "from recorder.cli import main; main()",
            "docs",
            "sync",
            "README.md",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert synced.returncode == 0, synced.stderr
    assert "```http" in readme.read_text()
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "transcripts")
    return repo


def try_hook(pre_commit: Path, home: Path, repo: Path, hook: str, *files: str) -> tuple[int, str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    env.pop("PYTHONPATH", None)  # the hook runs the recorder pre-commit installed
    done = subprocess.run(
        [str(pre_commit), "try-repo", str(ROOT), hook, "--color", "never", "--files", *files],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_the_hooks_are_declared_as_pre_commit_reads_them() -> None:
    hooks = {
        hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    }
    assert set(hooks) == {"recorder-check", "recorder-docs-check"}
    assert hooks["recorder-check"]["entry"] == "recorder check"
    assert hooks["recorder-docs-check"]["entry"] == "recorder docs check"
    assert {hook["language"] for hook in hooks.values()} == {"python"}
    # docs/ci.md's .pre-commit-config.yaml names these hooks
    (documented,) = ci_blocks()["pre-commit"]["repos"]
    assert [hook["id"] for hook in documented["hooks"]] == sorted(hooks)


@pytest.mark.timeout(LIMIT * 2)
def test_recorder_check_passes_a_transcript_and_fails_a_broken_one_naming_its_line(
    pre_commit: Path, home: Path, repo: Path
) -> None:
    status, output = try_hook(pre_commit, home, repo, "recorder-check", "transcripts/01-ask.http")
    assert status == 0, output
    assert "recorder check" in output and "Passed" in output
    broken = repo / "transcripts" / "02-broken.http"
    broken.write_text("# recorder-format: 1\n\n### nothing\nNOT A REQUEST\n")
    git(repo, "add", ".")
    status, output = try_hook(
        pre_commit, home, repo, "recorder-check", "transcripts/01-ask.http", str(broken.name)
    )
    assert status == 0, output  # (a file outside the hook's `files` is not passed to it)
    status, output = try_hook(
        pre_commit, home, repo, "recorder-check", "transcripts/02-broken.http"
    )
    assert status == 1, output
    assert "Failed" in output and "recorder check: transcripts/02-broken.http:4:" in output


@pytest.mark.timeout(LIMIT * 2)
def test_recorder_docs_check_fails_a_block_its_transcript_no_longer_says(
    pre_commit: Path, home: Path, repo: Path
) -> None:
    status, output = try_hook(pre_commit, home, repo, "recorder-docs-check", "README.md")
    assert status == 0, output
    transcript = repo / "transcripts" / "01-ask.http"
    transcript.write_text(transcript.read_text().replace("I can review Python", "I review Go"))
    git(repo, "add", ".")
    status, output = try_hook(pre_commit, home, repo, "recorder-docs-check", "README.md")
    assert status == 1, output
    assert "README.md:3" in output
