"""One spelling per idea (issues 28 and 38): the agent is --agent, a listening address
--listen HOST:PORT (a gRPC one --grpc-listen), where a command writes -o/--output, a report
--<format>-report, in every command's help; the old spellings still work but are not shown."""

from __future__ import annotations

import re

import click
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
        ("record", {"--agent", "--listen", "--grpc-listen", "--output"}, {"--upstream", "--out"}),
        (
            "play",
            {"--agent", "--junit-report", "--json-report"},
            {"--junit-xml", "--report-json"},
        ),
        ("learn", {"--agent", "--output"}, set()),
        ("export", {"--agent", "--output"}, {"--base-url"}),
        ("kit", {"--listen", "--grpc-listen"}, {"--host", "--port", "--grpc-port"}),
        ("serve", {"--listen", "--grpc-listen", "--output"}, {"--record-new"}),
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


@pytest.mark.parametrize("command", ["record", "serve", "kit"])
def test_a_listening_address_reads_host_port_in_every_help(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--help"])
    assert "--listen HOST:PORT" in result.output
    assert "--grpc-listen HOST:PORT" in result.output
    assert "--listen TEXT" not in result.output


def _params(command: str, args: list[str]) -> dict[str, object]:
    """The parameters `recorder COMMAND ARGS` is called with (parsed, not run)."""
    ctx = click.Context(main)
    found = main.get_command(ctx, command)
    assert found is not None
    return found.make_context(command, args, parent=ctx).params


@pytest.mark.parametrize(
    ("command", "base", "spellings", "value", "param"),
    [
        ("record", ["--agent", "http://x"], ["-o", "--output", "--out"], "d", "out"),
        ("serve", ["t"], ["-o", "--output", "--record-new"], "d", "record_new"),
        ("play", ["t"], ["--junit-report", "--junit-xml"], "r.xml", "junit_path"),
        ("play", ["t"], ["--json-report", "--report-json"], "r.json", "json_path"),
        ("kit", [], ["--grpc-listen", "--grpc-port"], "41250", "grpc_listen"),
    ],
)
def test_each_old_spelling_sets_the_same_parameter(
    command: str, base: list[str], spellings: list[str], value: str, param: str
) -> None:
    for spelling in spellings:
        assert _params(command, [*base, spelling, value])[param] == value, spelling
