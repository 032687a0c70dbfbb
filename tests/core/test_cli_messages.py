"""The messages of issue 14 through CliRunner: exact text and exit codes."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from recorder.cli import main
from recorder.replay.send import agent_base_url

RULES = """\
version: 1
generated_fields:
  startedAt: tme
  params: id
generated_paths:
  $.params.message.messageId: id
  $.result.artifacts[*].name: label
generated_shapes:
  label: 'L-[0-9]+'
"""


def test_rules_check_warns_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(RULES)
    result = CliRunner().invoke(main, ["rules", "check", str(path)])
    client = (
        "can never apply: it names what the client sends (a JSON-RPC request's jsonrpc, method "
        "or params), and a value the client sent is never generated"
    )
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"recorder rules check: warning: {path}:3: generated_fields.startedAt: unknown kind "
        "'tme' (did you mean time?): kinds are base64, duration, hex, hostname, id, integer, "
        "label, number, text, time, token; declare a new one under generated_shapes or "
        "loose_kinds\n"
        f"recorder rules check: warning: {path}:4: generated_fields.params: {client}\n"
        f"recorder rules check: warning: {path}:6: generated_paths.$.params.message.messageId: "
        f"{client}\n"
        f"recorder rules check: {path}: 3 warnings\n"
    )


def test_rules_check_of_good_and_bad_files(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("version: 1\ngenerated_fields:\n  startedAt: time\n")
    result = CliRunner().invoke(main, ["rules", "check", str(good)])
    assert (result.exit_code, result.stdout, result.stderr) == (0, f"{good}: rules OK\n", "")
    bad = tmp_path / "bad.yaml"
    bad.write_text("versoin: 1\n")
    result = CliRunner().invoke(main, ["rules", "check", str(bad)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"recorder rules check: {bad}:1: versoin: unknown key")


def test_an_agent_url_with_an_invalid_port_is_refused_as_such() -> None:
    with pytest.raises(ValueError) as caught:
        agent_base_url("http://127.0.0.1:99999")
    assert str(caught.value) == (
        "invalid port 99999 in 'http://127.0.0.1:99999' (ports are 1-65535)"
    )


def test_agent_base_url_keeps_scheme_host_and_port() -> None:
    assert agent_base_url("http://127.0.0.1:41242/") == "http://127.0.0.1:41242"


def test_record_on_a_busy_port_names_the_address(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        listen = ["--listen", f"127.0.0.1:{port}", "--out", str(tmp_path / "out")]
        result = CliRunner().invoke(main, ["record", "--upstream", "http://127.0.0.1:9", *listen])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"recorder record: cannot listen on 127.0.0.1:{port}: address already in use\n"
    )


def test_record_with_an_invalid_port() -> None:
    result = CliRunner().invoke(
        main, ["record", "--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:99999"]
    )
    assert (result.exit_code, result.stderr) == (
        2,
        "recorder record: invalid port 99999 (ports are 0-65535)\n",
    )


def test_export_to_a_file_prints_nothing_on_stdout(tmp_path: Path) -> None:
    source = Path(__file__).parent.parent / "fixtures" / "format" / "02-message-reply.http"
    out = tmp_path / "out.http"
    result = CliRunner().invoke(main, ["export", str(source), "--to", "http", "-o", str(out)])
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == f"recorder export: wrote {out}\n"


def test_play_warns_of_rules_that_can_never_apply_and_plays_on(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text("version: 1\ngenerated_fields:\n  startedAt: tme\n")
    missing = tmp_path / "none.http"  # the run itself then stops on its input, exit 2
    result = CliRunner().invoke(
        main, ["play", str(missing), "--rules", str(path), "--agent", "http://127.0.0.1:9"]
    )
    assert result.stderr.startswith(
        f"recorder play: warning: {path}:3: generated_fields.startedAt: unknown kind 'tme'"
    )
    assert result.exit_code == 2
