"""The bundled kit on an a2a-sdk it is not built for (issue 32): a user's own agent pins an
older 1.x (the official helloworld sample pins 1.1.0), the recorder is installed into its venv,
and `--agent` is left out. Every entry point that would start the kit says so in one line
naming the version found, the range needed and the `[kit]` extra, and exits as a usage error
(2; pytest's own usage error for the plugin), before the kit is imported: not a `TypeError`
traceback from deep inside it, read as "mismatches" by CI.

The installed version is the one `importlib.metadata` reads: a distribution's metadata folder
(`a2a_sdk-1.1.0.dist-info`) first on `sys.path` is what pip leaves in such a venv, without a
network or a second venv (tests/e2e/test_install.py does it with the real SDK 1.1.0)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from recorder.cli import main
from recorder.extras import KIT_SDK, kit_sdk_problem, release

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent.parent
GOLDENS = ROOT / "transcripts"
OLD = "1.1.0"
SAID = (
    f"the bundled kit needs a2a-sdk>=1.3,<2, found a2a-sdk {OLD} (pip install 'a2a-recorder[kit]'"
)


@pytest.fixture
def old_sdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """a2a-sdk 1.1.0 as installed metadata says, found before the real one."""
    site = tmp_path / "site"
    info = site / f"a2a_sdk-{OLD}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: a2a-sdk\nVersion: {OLD}\n")
    monkeypatch.syspath_prepend(str(site))
    assert kit_sdk_problem() is not None  # (the folder is what importlib.metadata reads)


@pytest.mark.parametrize(
    ("version", "fits"),
    [
        ("1.1.0", False),
        ("1.2.9", False),
        ("0.3.24", False),
        ("1.3.0", True),
        ("1.3", True),
        ("1.7.12", True),
        ("2.0.0", False),
        ("not a version", False),
    ],
)
def test_the_installed_version_is_judged_against_the_kits_range(version: str, fits: bool) -> None:
    problem = kit_sdk_problem(version)
    if fits:
        assert problem is None
    else:
        assert problem is not None
        assert f"needs a2a-sdk>=1.3,<2, found a2a-sdk {version} " in problem
        assert "pip install 'a2a-recorder[kit]'" in problem
        assert "\n" not in problem


def test_the_release_numbers_of_a_version() -> None:
    assert release("1.1.0") == (1, 1, 0)
    assert release("1.3.0rc1") == (1, 3, 0)
    assert release("v2") == (2,)
    assert release("dev") is None


def test_the_range_is_the_kit_extras_own() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (sdk,) = [need for need in project["optional-dependencies"]["kit"] if "a2a-sdk" in need]
    name, _, versions = sdk.partition("]")
    assert name == "a2a-sdk[http-server,grpc"
    assert f"a2a-sdk{versions}" == KIT_SDK


@pytest.mark.usefixtures("old_sdk")
@pytest.mark.parametrize(
    ("args", "prefix"),
    [
        (["play", str(GOLDENS)], "recorder play: no --agent given, and "),
        (
            ["learn", str(GOLDENS / "02-message-reply.http"), "-o", "{tmp}/rules.yaml"],
            "recorder learn: no --agent given, and ",
        ),
        (["kit", "--listen", "127.0.0.1:0"], "recorder kit: "),
    ],
    ids=["play", "learn", "kit"],
)
def test_each_command_that_starts_the_kit_says_so_in_one_line(
    args: list[str], prefix: str, tmp_path: Path
) -> None:
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(prefix + SAID), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stdout == ""
    assert not (tmp_path / "rules.yaml").exists()


@pytest.mark.usefixtures("old_sdk")
def test_an_agent_given_needs_no_kit(tmp_path: Path) -> None:
    from helpers import closed_port

    with closed_port() as port:
        result = CliRunner().invoke(
            main,
            ["play", str(GOLDENS / "02-message-reply.http"), "--agent", f"http://127.0.0.1:{port}"],
        )
    assert "bundled kit" not in result.stderr
    assert "cannot reach the agent" in result.stderr


@pytest.mark.usefixtures("old_sdk")
def test_pytest_without_agent_is_one_usage_error_before_any_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.mkdir("transcripts")
    for name in ("01-agent-card.http", "02-message-reply.http"):
        (pytester.path / "transcripts" / name).write_bytes((GOLDENS / name).read_bytes())
    result = pytester.runpytest("transcripts")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [line for line in result.errlines if line]
    assert line.startswith(f"ERROR: no --recorder-agent given, and {SAID}"), line
    assert line.endswith(": give --recorder-agent URL"), line
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


@pytest.mark.usefixtures("old_sdk")
def test_pytest_without_transcripts_never_asks(pytester: pytest.Pytester) -> None:
    # the plugin is loaded in every pytest run of the venv: the user's own tests run as ever
    pytester.makepyfile("def test_own():\n    assert True\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)


@pytest.mark.usefixtures("old_sdk")
def test_pytest_xdist_says_it_once_too(pytester: pytest.Pytester) -> None:
    # its controller collects nothing itself: it is told what a worker collected
    pytester.mkdir("transcripts")
    name = "02-message-reply.http"
    (pytester.path / "transcripts" / name).write_bytes((GOLDENS / name).read_bytes())
    result = pytester.runpytest("-p", "xdist", "-n", "1", "transcripts")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [line for line in result.errlines if line.startswith("ERROR")]
    assert line.startswith(f"ERROR: no --recorder-agent given, and {SAID}"), line
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_the_planner_says_so_in_one_line_before_it_records(tmp_path: Path) -> None:
    # `make record` (python -m recorder.planner) starts the kit too; run as a user runs it
    site = tmp_path / "site"
    info = site / f"a2a_sdk-{OLD}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: a2a-sdk\nVersion: {OLD}\n")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    result = subprocess.run(
        [sys.executable, "-m", "recorder.planner", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr == f"planner: {SAID}; in a venv of its own if your agent pins that SDK)\n"
    assert result.stdout == ""
    assert not out.exists()
