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
        f'recorder check: {bad}:4: expected a status line such as "HTTP/1.1 200 OK" after '
        "the request body "
        "(the request starts at line 2)\n"
        f"recorder check: {empty}:2: no exchanges: a transcript holds at least one\n"
        "recorder check: 2 of 3 transcripts have problems\n"
    )


def test_canonical_flags_formatting_only_with_the_option(tmp_path: Path) -> None:
    path = tmp_path / "02-message-reply.http"
    text = (FIXTURES / "02-message-reply.http").read_text()
    path.write_text(text.replace('"id": 1,\n  "method"', '"id":   1,\n  "method"'))
    assert run(str(path))[0] == 0
    code, _, err = run("--canonical", str(path))
    assert code == 2
    assert err.startswith(f"recorder check: {path}:11: not in canonical form")


def test_a_missing_path_is_reported(tmp_path: Path) -> None:
    code, _, err = run(str(tmp_path / "nope.http"))
    assert code == 2
    assert "nope.http: no such file or folder" in err


def test_check_needs_a_path() -> None:
    code, _, err = run()
    assert code == 2
    assert err == (
        "recorder check: Missing argument 'PATHS...'.\n"
        "Usage: recorder check [OPTIONS] PATHS...\n"
        "Try 'recorder check --help' for help.\n"
    )


def test_a_folder_without_transcripts_is_a_problem_not_a_pass(tmp_path: Path) -> None:
    empty = tmp_path / "transcipts"  # a typo, or the files moved away
    empty.mkdir()
    (empty / "notes.txt").write_text("not a transcript\n")
    code, out, err = run(str(FIXTURES), str(empty))
    assert (code, out) == (2, "")
    assert err == f"recorder check: {empty}: no .http files in this folder\n"


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
    assert names == [
        "check",
        "docs",
        "export",
        "import",
        "kit",
        "learn",
        "play",
        "record",
        "render",
        "rules",
        "serve",
    ]


def test_ctrl_c_that_a_command_does_not_handle_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    # e.g. while the command's module loads: 130 like any interrupted command, not click's 1
    import recorder.cli

    def interrupted(name: str) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(recorder.cli.importlib, "import_module", interrupted)
    result = CliRunner().invoke(main, ["check", "transcripts"])
    assert result.exit_code == 130
    assert result.stderr == "\nrecorder: interrupted\n"


def test_a_status_line_typo_is_reported_at_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "typo.http"
    path.write_text(
        "### x\nPOST /a2a/jsonrpc HTTP/1.1\nContent-Type: application/json\n\n{}\n\n"
        "HTTP/1.1 2OO OK\nContent-Type: application/json\n\n{}\n"
    )
    assert run(str(path)) == (
        2,
        "",
        f'recorder check: {path}:7: invalid status line "HTTP/1.1 2OO OK": expected the HTTP '
        'version, a 3-digit status code and a reason, such as "HTTP/1.1 200 OK"\n'
        "recorder check: 1 of 1 transcript has problems\n",
    )


def test_json_bodies_and_stream_data_must_be_json_at_the_line_of_the_mistake(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bad-json.http"
    path.write_text(
        "### x\nPOST /a2a/jsonrpc HTTP/1.1\nContent-Type: application/json\n\n"
        '{\n  "a": 1,\n  "b": oops\n}\n\n'
        "HTTP/1.1 200 OK\nContent-Type: text/event-stream\n\n"
        'data: {"ok": true}\n\ndata: {"ok": tru}\n\ndata: not json, not checked\n\n'
        "### y\nGET /a HTTP/1.1\n\nHTTP/1.1 200 OK\nContent-Type: application/json\n\n"
        '{"n": NaN}\n'
    )
    assert run(str(path)) == (
        2,
        "",
        f"recorder check: {path}:7: the request body is not JSON: Expecting value (column 8)\n"
        f"recorder check: {path}:15: the data of event-stream frame 2 is not JSON: "
        "Expecting value (column 8)\n"
        f"recorder check: {path}:25: the reply body is not JSON: NaN is not JSON (JSON has no "
        "NaN or Infinity)\n"
        "recorder check: 1 of 1 transcript has problems\n",
    )


def test_a_malformed_request_the_agent_rejected_as_such_is_a_recording(tmp_path: Path) -> None:
    path = tmp_path / "parse-error.http"
    path.write_text(
        "### x\nPOST /a2a/jsonrpc HTTP/1.1\nContent-Type: application/json\n\n"
        '{"jsonrpc": "2.0",\n\nHTTP/1.1 200 OK\nContent-Type: application/json\n\n'
        '{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "x"}}\n'
    )
    assert run(str(path)) == (0, "1 transcript OK\n", "")


def test_usage_errors_are_in_the_recorder_style() -> None:
    result = CliRunner().invoke(main, ["check", "--zzz", "x"])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "recorder check: No such option '--zzz'.\n"
        "Usage: recorder check [OPTIONS] PATHS...\n"
        "Try 'recorder check --help' for help.\n"
    )
    result = CliRunner().invoke(main, ["frob"])
    assert (result.exit_code, result.stderr) == (
        2,
        "recorder: No such command 'frob'.\n"
        "Usage: recorder [OPTIONS] COMMAND [ARGS]...\n"
        "Try 'recorder --help' for help.\n",
    )
