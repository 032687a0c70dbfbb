"""One spelling per idea (issue 28): the agent is --agent and a listening address is --listen
in every command's help; the old spellings still work but are not shown."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from recorder.cli import main


def _options(command: str) -> set[str]:
    result = CliRunner().invoke(main, [command, "--help"])
    assert result.exit_code == 0, result.output
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", result.output))


@pytest.mark.parametrize(
    ("command", "shown", "hidden"),
    [
        ("record", {"--agent", "--listen"}, {"--upstream"}),
        ("play", {"--agent"}, set()),
        ("learn", {"--agent"}, set()),
        ("export", {"--agent"}, {"--base-url"}),
        ("kit", {"--listen"}, {"--host", "--port"}),
        ("serve", {"--listen"}, set()),
    ],
)
def test_help_names_one_spelling(command: str, shown: set[str], hidden: set[str]) -> None:
    options = _options(command)
    assert shown <= options
    assert not hidden & options


def test_a_missing_agent_is_named_by_its_one_spelling() -> None:
    result = CliRunner().invoke(main, ["record"])
    assert result.exit_code == 2
    assert "Missing option '--agent'." in result.stderr
    assert "--upstream" not in result.stderr


def test_the_old_spellings_still_set_the_same_option() -> None:
    # --upstream: the same validation as --agent (a bad URL is named, exit 2)
    for spelling in ("--agent", "--upstream"):
        result = CliRunner().invoke(main, ["record", spelling, "ftp://x", "--out", "x"])
        assert result.exit_code == 2, result.output
        assert "ftp://x" in result.stderr
