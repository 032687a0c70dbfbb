"""`recorder play --downstream NAME@[HOST:]PORT` and `--live-downstreams` (and the pytest
plugin's spellings): a bad one is a usage error, before anything is played."""

from __future__ import annotations

from pathlib import Path

import pytest
from calltexts import HEAD, ask, tool_call
from click.testing import CliRunner

from recorder.cli import main

pytest_plugins = ["pytester"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "01-review.http").write_text(HEAD + ask("a") + "\n" + tool_call("a.py"))
    return tmp_path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--downstream", "tools"], "expected NAME@[HOST:]PORT such as model@41260, got 'tools'"),
        (["--downstream", "tools@1", "--downstream", "tools@2"], "tools is given twice"),
        (
            ["--downstream", "tools@0", "--live-downstreams"],
            "--downstream and --live-downstreams do not go together",
        ),
        (
            ["--downstream", "model@0"],
            "recorder play: --downstream model: no transcript has calls to model (they have "
            "calls to: tools)",
        ),
    ],
)
def test_a_bad_downstream_is_a_usage_error(args: list[str], message: str, folder: Path) -> None:
    result = CliRunner().invoke(main, ["play", str(folder), "--agent", "http://127.0.0.1:9", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_the_plugin_refuses_a_bad_downstream(pytester: pytest.Pytester, folder: Path) -> None:
    result = pytester.runpytest_subprocess(
        str(folder), "--recorder-agent", "http://127.0.0.1:9", "--recorder-downstream", "tools"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--recorder-downstream: expected NAME@[HOST:]PORT" in result.stderr.str()
