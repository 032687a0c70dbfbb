"""-q and -v on every command (issue 38): what each leaves out and adds, without a server
(the commands that serve are in tests/e2e/test_verbosity_e2e.py)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from helpers import TRANSCRIPTS

from recorder.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _leaves(group: click.Group, ctx: click.Context, path: tuple[str, ...] = ()) -> list[str]:
    """Every command that runs (a group's subcommands, not the group), as `docs check`."""
    names: list[str] = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            names += _leaves(command, ctx, (*path, name))
        else:
            names.append(" ".join((*path, name)))
    return names


COMMANDS = _leaves(main, click.Context(main))


def test_every_command_is_listed() -> None:
    assert {"check", "kit", "record", "play", "serve", "learn", "export", "render"} <= set(COMMANDS)
    assert {"docs check", "docs sync", "rules check"} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_quiet_and_verbose(command: str) -> None:
    result = CliRunner().invoke(main, [*command.split(), "--help"])
    assert result.exit_code == 0, result.output
    assert re.search(r"^\s+-q, --quiet\b", result.output, re.MULTILINE), result.output
    assert re.search(r"^\s+-v, --verbose\b", result.output, re.MULTILINE), result.output


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_check_quiet_and_verbose(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    shutil.copytree(TRANSCRIPTS, folder)
    (folder / "99-export.http").write_text("# exported by recorder\nGET http://x/\n")
    count = len(list(TRANSCRIPTS.glob("*.http")))

    code, out, err = _run("check", str(folder))
    assert (code, out) == (0, f"{count} transcripts OK\n")
    assert "skipping" in err  # the export is noted

    assert _run("check", "-q", str(folder)) == (0, "", "")

    code, out, _ = _run("check", "-v", str(folder))
    assert code == 0
    lines = out.splitlines()
    assert lines[-1] == f"{count} transcripts OK"
    assert lines[:-1] == [f"{path}: OK" for path in sorted(folder.glob("[0-8]*.http"))]

    bad = folder / "01-bad.http"
    bad.write_text("GET\n")
    code, out, err = _run("check", "-q", str(bad))
    assert code == 2 and out == ""
    assert f"recorder check: {bad}:1:" in err  # problems are never quieted
    code, out, _ = _run("check", "-v", str(bad))
    assert code == 2 and out.startswith(f"{bad}: 1 problem")


def test_rules_check_quiet_and_verbose(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("version: 1\nignored_headers: [Date, Server]\n")
    assert _run("rules", "check", str(rules)) == (0, f"{rules}: rules OK\n", "")
    assert _run("rules", "check", "-q", str(rules)) == (0, "", "")
    code, out, _ = _run("rules", "check", "-v", str(rules))
    assert code == 0
    assert out.splitlines() == [
        f"{rules}: version: 1",
        f"{rules}: ignored_headers: 2 entries",
        f"{rules}: rules OK",
    ]
    rules.write_text("version: 1\ngenerated_fields: {taskId: tme}\n")
    code, out, err = _run("rules", "check", "-q", str(rules))
    assert code == 1 and out == ""
    assert "warning" in err  # a warning is what the command is for: -q keeps it


def test_docs_check_and_sync_quiet_and_verbose(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    reference = (TRANSCRIPTS / "02-message-reply.http").as_posix()
    page.write_text(f"# A page\n\n<!-- recorder: {reference}#1 -->\n```http\nold\n```\n")

    code, out, _ = _run("docs", "sync", "-q", str(page))
    assert (code, out) == (0, "")
    assert "old" not in page.read_text()  # synced all the same
    assert _run("docs", "sync", str(page))[:2] == (0, "all blocks up to date\n")
    assert _run("docs", "sync", "-v", str(page))[:2] == (
        0,
        f"{page}: 1 block up to date\nall blocks up to date\n",
    )

    assert _run("docs", "check", "-q", str(page)) == (0, "", "")
    assert _run("docs", "check", "-v", str(page))[:2] == (
        0,
        f"{page}: 1 of 1 block up to date\n1 block up to date\n",
    )
    page.write_text(page.read_text().replace("POST", "PUT"))
    code, out, _ = _run("docs", "check", "-q", str(page))
    assert code == 1 and "is out of date" in out  # the failure is the result: never quieted


def test_render_verbose_names_what_it_rendered() -> None:
    path = str(TRANSCRIPTS / "02-message-reply.http")
    code, out, err = _run("render", f"{path}#1")
    assert code == 0 and err == ""
    code, verbose_out, err = _run("render", "-v", f"{path}#1")
    assert code == 0 and verbose_out == out  # the block is the same; the names go to stderr
    assert re.fullmatch(rf"recorder render: {re.escape(path)} #1  \S.*\n", err), err
    assert _run("render", "-q", f"{path}#1") == (0, out, "")


def test_export_quiet_and_verbose(tmp_path: Path) -> None:
    count = len(list(TRANSCRIPTS.glob("*.http")))
    code, out, err = _run("export", "--to", "curl", str(TRANSCRIPTS), "-o", str(tmp_path / "a"))
    assert (code, out) == (0, "")
    assert err.splitlines()[-1] == f"recorder export: wrote {count} files to {tmp_path / 'a'}"
    code, out, err = _run(
        "export", "--to", "curl", str(TRANSCRIPTS), "-o", str(tmp_path / "b"), "-q"
    )
    assert (code, out, err) == (0, "", "")
    assert len(list((tmp_path / "b").glob("*.sh"))) == count  # written all the same
    code, out, err = _run(
        "export", "--to", "curl", str(TRANSCRIPTS), "-o", str(tmp_path / "c"), "-v"
    )
    assert code == 0
    written = [line for line in err.splitlines() if line.endswith(".sh")]
    assert written == [
        f"recorder export: wrote {tmp_path / 'c' / path.with_suffix('.sh').name}"
        for path in sorted(TRANSCRIPTS.glob("*.http"))
    ]
