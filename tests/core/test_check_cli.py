"""`recorder check`, through click's CliRunner: exact output and exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from recorder.cli import main

FIXTURES = Path(__file__).parent.parent / "fixtures" / "format"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["check", *args])
    return result.exit_code, result.stdout, result.stderr


def test_valid_folder_exits_0() -> None:
    code, out, err = run(str(FIXTURES), "--canonical")
    assert (code, out, err) == (0, "3 transcripts OK\n", "")


def test_invalid_files_exit_2_with_path_line_message(tmp_path: Path) -> None:
    good = tmp_path / "01-good.http"
    good.write_text((FIXTURES / "02-message-reply.http").read_text())
    bad = tmp_path / "02-bad.http"
    bad.write_text("### x\nGET / HTTP/1.1\n\n")
    empty = tmp_path / "03-empty.http"
    empty.write_text("# recorder-format: 1\n")
    code, out, err = run(str(tmp_path))
    assert code == 2
    assert out == ""
    assert err == (
        f'{bad}:4: expected a status line such as "HTTP/1.1 200 OK" after the request body '
        "(the request starts at line 2)\n"
        f"{empty}: no exchanges: a transcript holds at least one\n"
        "2 of 3 transcripts have problems\n"
    )


def test_canonical_flags_formatting_only_with_the_option(tmp_path: Path) -> None:
    path = tmp_path / "02-message-reply.http"
    text = (FIXTURES / "02-message-reply.http").read_text()
    path.write_text(text.replace('"id": 1,\n  "method"', '"id":   1,\n  "method"'))
    assert run(str(path))[0] == 0
    code, _, err = run("--canonical", str(path))
    assert code == 2
    assert err.startswith(f"{path}:11: not in canonical form")


def test_a_missing_path_is_reported(tmp_path: Path) -> None:
    code, _, err = run(str(tmp_path / "nope.http"))
    assert code == 2
    assert "nope.http: no such file or folder" in err


def test_check_needs_a_path() -> None:
    code, _, err = run()
    assert code == 2
    assert "Missing argument 'PATHS...'" in err


def test_a_folder_without_transcripts_is_a_problem_not_a_pass(tmp_path: Path) -> None:
    empty = tmp_path / "transcipts"  # a typo, or the files moved away
    empty.mkdir()
    (empty / "notes.txt").write_text("not a transcript\n")
    code, out, err = run(str(FIXTURES), str(empty))
    assert (code, out) == (2, "")
    assert err == f"{empty}: no .http files in this folder\n"


def test_every_command_has_a_whole_one_line_summary_in_the_help() -> None:
    for args in ([], ["docs"]):
        result = CliRunner().invoke(main, [*args, "--help"], terminal_width=80)
        assert result.exit_code == 0
        commands = result.stdout.split("Commands:\n", 1)[1].splitlines()
        assert commands, result.stdout
        for line in commands:
            assert not line.endswith("..."), f"cut short in `recorder {' '.join(args)} --help`"
    names = [
        line.split()[0]
        for line in CliRunner()
        .invoke(main, ["--help"])
        .stdout.split("Commands:\n", 1)[1]
        .splitlines()
    ]
    assert names == ["check", "docs", "export", "kit", "play", "record", "render"]


def test_ctrl_c_that_a_command_does_not_handle_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    # e.g. while the command's module loads: 130 like any interrupted command, not click's 1
    import recorder.cli

    def interrupted(name: str) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(recorder.cli.importlib, "import_module", interrupted)
    result = CliRunner().invoke(main, ["check", "transcripts"])
    assert result.exit_code == 130
    assert result.stderr == "\nrecorder: interrupted\n"
