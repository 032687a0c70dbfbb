"""recorder.docs.export and `recorder export`: curl commands and requests-only .http files.

The shell quoting is checked by running the commands in a real bash with a stand-in `curl` that
records its arguments; the commands themselves are checked end to end by running the real curl
against the kit for every shipped transcript (or the seed fixtures before there are any).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from factories import make_exchange, make_request

from recorder import Exchange, Headers, Response, load
from recorder.bindings.grpc_proto import PROTO_MARK
from recorder.cli import main
from recorder.docs.curlscript import export_curl
from recorder.docs.export import (
    ExportError,
    curl_command,
    exchange_curl_command,
    export_http,
    is_streaming_request,
)

ROOT = Path(__file__).parent.parent.parent
SEED = Path(__file__).parent.parent / "fixtures" / "seed"
BASH = shutil.which("bash")
CURL = shutil.which("curl")


def json_post(body: bytes, **headers: str) -> Any:
    pairs = [("Host", "localhost:41242"), ("Content-Type", "application/json")]
    pairs.extend((name.replace("_", "-"), value) for name, value in headers.items())
    return make_request(headers=Headers(pairs), body=body)


# --------------------------------------------------------------------------- curl, as text


def test_curl_export_of_the_seed_transcript_is_a_bash_script() -> None:
    exchanges = load(SEED / "02-message-reply.http").exchanges
    script = export_curl(exchanges, source="02-message-reply.http")
    command = curl_command(exchanges[0].request, base_variable="BASE_URL")
    assert script.startswith(
        "#!/usr/bin/env bash\n# exported by recorder from 02-message-reply.http\n"
    )
    assert "\nset -euo pipefail\n" in script
    assert "\nBASE_URL=${BASE_URL:-http://localhost:41242}\n" in script
    assert f'\n{command} \\\n  > "$out/1"\nshow 1\n' in script
    assert command.startswith('curl -sS -i "$BASE_URL"/a2a/jsonrpc \\\n')
    assert "jq" not in script.split("set -euo")[0]  # nothing to capture: jq not required


def test_cli_export_to_curl_prints_the_script() -> None:
    path = SEED / "02-message-reply.http"
    result = CliRunner().invoke(main, ["export", str(path), "--to", "curl"])
    assert result.exit_code == 0, result.output
    assert result.stdout == export_curl(load(path).exchanges, source=str(path))


def test_cli_export_of_exchange_n_numbers_it_n(tmp_path: Path) -> None:
    from recorder import Transcript, dump

    source = tmp_path / "errors.http"
    first = load(SEED / "04-streaming-review.http").exchanges[0]
    request = first.request
    separator_body = dataclasses.replace(
        first,
        request=dataclasses.replace(
            request,
            headers=request.headers.replaced("Content-Type", "text/plain"),
            body=b"### not a separator\n",
        ),
    )
    hostless = dataclasses.replace(
        first, request=dataclasses.replace(request, headers=request.headers.without("Host"))
    )
    dump(Transcript((first, first, separator_body, hostless)), source)
    lines = [exchange.line for exchange in load(source)]
    result = CliRunner().invoke(main, ["export", f"{source}#2", "--to", "curl"])
    assert result.exit_code == 0, result.output
    assert "\n# 2. " in result.stdout and "# 1." not in result.stdout
    # an error names the exchange by its number in the file, and its line
    result = CliRunner().invoke(main, ["export", f"{source}#3", "--to", "http"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"recorder export: {source}:{lines[2]}: exchange 3: "), (
        result.stderr
    )
    result = CliRunner().invoke(main, ["export", f"{source}#4", "--to", "curl"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"recorder export: {source}:{lines[3]}: no request has a Host header: pass the agent"
        " (--agent http://127.0.0.1:41242)\n"
    )


def test_http_export_without_any_host_names_the_file(tmp_path: Path) -> None:
    first = load(SEED / "02-message-reply.http").exchanges[0]
    hostless = dataclasses.replace(
        first,
        request=dataclasses.replace(first.request, headers=first.request.headers.without("Host")),
    )
    with pytest.raises(ExportError, match=r"^x\.http:\d+: no request has a Host header"):
        export_http([hostless], source="x.http")


def test_cli_export_to_an_unwritable_place_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "no-such-folder" / "out.http"
    args = ["export", str(SEED / "02-message-reply.http"), "--to", "http", "-o", str(out)]
    result = CliRunner().invoke(main, args)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"recorder export: cannot write {out}: No such file or directory\n"


def test_cli_export_never_overwrites_the_transcript_it_reads(tmp_path: Path) -> None:
    source = tmp_path / "02-message-reply.http"
    shutil.copy(SEED / "02-message-reply.http", source)
    before = source.read_bytes()
    result = CliRunner().invoke(main, ["export", f"{source}#1", "--to", "http", "-o", str(source)])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"recorder export: -o {source} would overwrite the transcript it exports\n"
    )
    assert source.read_bytes() == before


def test_transport_headers_are_left_to_curl() -> None:
    request = make_request(
        headers=Headers(
            [
                ("Host", "localhost:41242"),
                ("User-Agent", "python-httpx/0.28.1"),
                ("Accept-Encoding", "gzip, deflate"),
                ("Connection", "keep-alive"),
                ("A2A-Version", "1.0"),
            ]
        ),
        method="GET",
        target="/a2a/rest/tasks/t-1",
        body=b"",
    )
    assert curl_command(request) == (
        "curl -sS -i http://localhost:41242/a2a/rest/tasks/t-1 \\\n  -H 'A2A-Version: 1.0'"
    )


def test_base_url_replaces_the_recorded_host_and_keeps_a_path_prefix() -> None:
    request = make_request(method="GET", target="/a2a/rest/tasks?pageSize=1", body=b"")
    command = curl_command(request, base_url="http://127.0.0.1:5000/prefix/")
    assert command.startswith(
        "curl -sS -i 'http://127.0.0.1:5000/prefix/a2a/rest/tasks?pageSize=1'"
    )


def test_a_base_url_without_scheme_is_refused() -> None:
    with pytest.raises(ExportError, match="must start with http:// or https://"):
        curl_command(make_request(), base_url="localhost:41242")


def test_without_host_or_base_url_the_error_says_what_to_pass() -> None:
    request = make_request(headers=Headers([("Content-Type", "application/json")]))
    with pytest.raises(ExportError, match=r"has no Host header: pass the agent \(--agent"):
        curl_command(request)


def test_cli_export_without_host_exits_2_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.http"
    path.write_text("### x\nGET /a HTTP/1.1\n\nHTTP/1.1 200 OK\n")
    result = CliRunner().invoke(main, ["export", str(path), "--to", "curl"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"recorder export: {path}:1: no request has a Host header: pass the agent "
        "(--agent http://127.0.0.1:41242)\n"
    )


@pytest.mark.parametrize(
    ("request_", "flags"),
    [
        (make_request(method="DELETE", body=b""), "curl -sS -i -X DELETE "),
        (make_request(method="POST", body=b""), "curl -sS -i -X POST "),
        (make_request(method="GET"), "curl -sS -i -X GET "),  # GET with a body
        (make_request(method="HEAD", body=b""), "curl -sS -i --head "),
        (make_request(target="/a?x={1}", body=b""), "curl -sS -i -g -X POST "),
    ],
)
def test_method_flags_only_where_curl_would_not_infer_them(request_: Any, flags: str) -> None:
    assert curl_command(request_, base_url="http://h").startswith(flags)


def test_empty_header_value_is_sent_empty_not_removed() -> None:
    request = make_request(headers=Headers([("Host", "h"), ("X-Empty", "")]), body=b"")
    assert "-H 'X-Empty;'" in curl_command(request)


def test_a_body_without_content_type_does_not_get_curls_form_type() -> None:
    request = make_request(headers=Headers([("Host", "h")]), body=b"raw")
    assert curl_command(request).endswith("-H 'Content-Type:' \\\n  --data-binary raw")


@pytest.mark.parametrize(
    ("request_", "streaming"),
    [
        (json_post(b'{"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage"}'), True),
        (json_post(b'{"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask"}'), True),
        (json_post(b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}'), False),
        (json_post(b"{}", Accept="text/event-stream"), True),
        (make_request(target="/a2a/rest/message:stream"), True),
        (make_request(target="/a2a/rest/tasks/t-1:subscribe"), True),
    ],
)
def test_streams_are_recognised(request_: Any, streaming: bool) -> None:
    assert is_streaming_request(request_) is streaming
    assert (" -N " in curl_command(request_, base_url="http://h")) is streaming


def test_a_recorded_stream_reply_makes_the_command_unbuffered() -> None:
    stream = Response(
        200, "OK", Headers([("Content-Type", "text/event-stream")]), body=b"data: x\n\n"
    )
    exchange = make_exchange(request=json_post(b'{"method": "Custom"}'), response=stream)
    assert " -N " in exchange_curl_command(exchange)


# --------------------------------------------------------------------------- curl, run by bash


@pytest.fixture
def fake_curl(tmp_path: Path) -> Iterator[Path]:
    """A `curl` on PATH that writes its arguments (NUL-separated) and its stdin to files."""
    if BASH is None:
        pytest.skip("bash is not installed")
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "curl"
    script.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do printf \'%s\\0\' "$a" >> "$FAKE_CURL_ARGS"; done\n'
        'cat > "$FAKE_CURL_STDIN"\n'
    )
    script.chmod(0o755)
    yield tmp_path


def run_with_fake_curl(command: str, where: Path, **env: str) -> tuple[list[str], bytes]:
    args_file, stdin_file = where / "args", where / "stdin"
    environment = {
        "PATH": f"{where / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "FAKE_CURL_ARGS": str(args_file),
        "FAKE_CURL_STDIN": str(stdin_file),
        **env,
    }
    assert BASH is not None
    subprocess.run(
        [BASH, "-c", command], env=environment, check=True, timeout=30, stdin=subprocess.DEVNULL
    )
    return args_file.read_bytes().decode().split("\0")[:-1], stdin_file.read_bytes()


def test_placeholders_become_shell_variables_and_quoting_survives_bash(fake_curl: Path) -> None:
    body = (
        b'{"text": "it\'s $HOME and `id` and \\\\ and {{NOT A NAME}}", "token": "{{PUSH_TOKEN}}"}'
    )
    request = json_post(body, Authorization="Bearer {{A2A_TOKEN}}")
    command = curl_command(request)
    assert "-H 'Authorization: Bearer '\"${A2A_TOKEN:?set A2A_TOKEN}\"" in command
    args, _ = run_with_fake_curl(command, fake_curl, A2A_TOKEN="s3cr3t", PUSH_TOKEN="p-1")
    assert args == [
        "-sS",
        "-i",
        "http://localhost:41242/a2a/jsonrpc",
        "-H",
        "Content-Type: application/json",
        "-H",
        "Authorization: Bearer s3cr3t",
        "--data-binary",
        '{"text":"it\'s $HOME and `id` and \\\\ and {{NOT A NAME}}","token":"p-1"}',
    ]


def test_a_binary_body_is_piped_in_byte_for_byte(fake_curl: Path) -> None:
    body = bytes(range(256))
    request = make_request(
        headers=Headers([("Host", "h"), ("Content-Type", "application/octet-stream")]), body=body
    )
    command = curl_command(request)
    assert command.startswith("printf '%s' ")
    args, stdin = run_with_fake_curl(command, fake_curl)
    assert args[-2:] == ["--data-binary", "@-"]
    assert stdin == body


def test_the_whole_export_is_a_runnable_script(fake_curl: Path) -> None:
    script = export_curl(load(SEED / "11-errors.http").exchanges, source="11-errors.http")
    args, _ = run_with_fake_curl(script, fake_curl)
    assert args.count("curl") == 0 and args.count("-sS") == 5  # five commands ran
    assert '{"jsonrpc":"2.0","id":4,"method":' in args  # the malformed body as recorded


# --------------------------------------------------------------------------- .http


def test_http_export_keeps_placeholders_as_variables_and_names_them() -> None:
    card = make_exchange(
        title="GetExtendedAgentCard",
        request=make_request(
            method="GET",
            target="/a2a/rest/extendedAgentCard",
            headers=Headers(
                [
                    ("Host", "localhost:41242"),
                    ("User-Agent", "python-httpx/0.28.1"),
                    ("A2A-Version", "1.0"),
                    ("Authorization", "Bearer {{A2A_TOKEN}}"),
                ]
            ),
            body=b"",
        ),
    )
    send = make_exchange(title="GetTask", request=json_post(b'{"jsonrpc": "2.0", "id": 2}'))
    assert export_http([card, send], source="transcripts/10-extended-card.http") == (
        "# exported by recorder from transcripts/10-extended-card.http\n"
        "# Dialect: httpyac and JetBrains HTTP Client (`httpyac send FILE --all`):\n"
        "# response handlers keep generated ids in global variables for later ones.\n"
        "# Variables are the export's own (secrets, chained ids); recorded text that\n"
        "# would read as one is escaped (JSON \\u007b, URL %7B, httpyac's \\{\\{ \\}\\}).\n"
        "# Define in your client's environment: A2A_TOKEN\n"
        "@host = http://localhost:41242\n"
        "\n"
        "### 1. GetExtendedAgentCard\n"
        "# @name get_extended_agent_card_1\n"
        "GET {{host}}/a2a/rest/extendedAgentCard HTTP/1.1\n"
        "A2A-Version: 1.0\n"
        "Authorization: Bearer {{A2A_TOKEN}}\n"
        "\n"
        "### 2. GetTask\n"
        "# @name get_task_2\n"
        "POST {{host}}/a2a/jsonrpc HTTP/1.1\n"
        "Content-Type: application/json\n"
        "\n"
        "{\n"
        '  "jsonrpc": "2.0",\n'
        '  "id": 2\n'
        "}\n"
    )  # fmt: skip


def test_http_export_refuses_a_body_line_the_clients_would_misread() -> None:
    request = make_request(headers=Headers([("Host", "h")]), body=b"line\n### not a separator\n")
    with pytest.raises(ExportError, match="exchange 1: a body line starts with '###'"):
        export_http([make_exchange(request=request)])


def test_cli_export_to_http_writes_the_file(tmp_path: Path) -> None:
    out = tmp_path / "requests.http"
    source = SEED / "11-errors.http"
    args = [
        "export",
        str(source),
        "--to",
        "http",
        "--base-url",
        "http://127.0.0.1:9",
        "-o",
        str(out),
    ]
    result = CliRunner().invoke(main, args)
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == f"recorder export: wrote {out}\n"
    assert out.read_text() == export_http(
        load(source).exchanges, base_url="http://127.0.0.1:9", source=str(source)
    )
    assert out.read_text().count("\n### ") == 5


def test_exchange_curl_command_is_what_export_curl_sends() -> None:
    exchanges = load(SEED / "04-streaming-review.http").exchanges
    exchange: Exchange = exchanges[0]
    command = curl_command(exchange.request, stream=True, base_variable="BASE_URL")
    assert command.startswith("curl -sS -i -N ")
    assert command in export_curl(exchanges)
    assert exchange_curl_command(exchange).startswith("curl -sS -i -N http://localhost:41242/")


# --------------------------------------------------------------------------- chains, folders


def test_chains_capture_the_task_id_a_later_request_sends() -> None:
    from recorder.docs.chains import find_chains, templated_request

    exchanges = load(ROOT / "transcripts" / "08-subscribe.http").exchanges
    chains = find_chains(exchanges)
    (capture,) = chains.captures  # the context id is never sent back: not captured
    assert (capture.name, capture.exchange, capture.frame) == ("task_id_1", 0, None)
    assert capture.path == ("result", "task", "id")
    assert chains.uses == ((), (capture,), (capture,))
    assert chains.during == {2: (1, 1)}
    sent = templated_request(exchanges[2].request, chains.uses[2])
    assert sent.json["params"]["id"] == "{{task_id_1}}"
    assert capture.value not in sent.body.decode()


def test_http_export_dialects_refer_to_the_earlier_reply() -> None:
    exchanges = load(ROOT / "transcripts" / "05-input-required.http").exchanges
    jetbrains = export_http(exchanges)
    assert '    client.global.set("task_id_1", response.body.result.task.id);\n' in jetbrains
    assert '"taskId": "{{task_id_1}}"' in jetbrains
    vscode = export_http(exchanges, dialect="vscode")
    assert '"taskId": "{{send_message_1.response.body.$.result.task.id}}"' in vscode
    assert "client.global" not in vscode and "# @name send_message_1\n" in vscode


def test_a_folder_exports_to_a_folder_and_play_and_check_skip_exports(tmp_path: Path) -> None:
    folder = tmp_path / "transcripts"
    folder.mkdir()
    shutil.copy(ROOT / "transcripts" / "02-message-reply.http", folder)
    out = tmp_path / "exported"
    result = CliRunner().invoke(main, ["export", str(folder), "--to", "http", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["02-message-reply.http"]
    result = CliRunner().invoke(main, ["export", str(folder), "--to", "curl"])
    assert result.exit_code == 2 and "pass -o FOLDER" in result.stderr
    # an export dropped among the transcripts: noted and skipped, not a failure
    shutil.copy(out / "02-message-reply.http", folder / "03-exported.http")
    result = CliRunner().invoke(main, ["check", str(folder)])
    assert result.exit_code == 0, result.output
    assert f"skipping {folder / '03-exported.http'}: an export" in result.stderr
    from recorder.replay.plan import load_transcripts

    assert [Path(p).name for p, _ in load_transcripts([folder])] == ["02-message-reply.http"]


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
def test_the_scripts_frame_helpers_read_multi_line_data_and_crlf(tmp_path: Path) -> None:
    from recorder.docs.curlscript import _HELPERS, jq_path

    reply = (
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
        'data: {"a":\r\ndata: 1}\r\n\r\n'
        ": a comment\r\n\r\n"
        'data:{"b": 2}\r\n\r\n'
        'data: {"c": 3}\n'  # the last frame, its blank line not come yet
    )
    script = _HELPERS.replace("out=$(mktemp -d)", f"out={tmp_path}")
    script = script.replace("trap 'rm -rf \"$out\"' EXIT", "")
    script += 'printf \'%s\\n\' "$(frame 1 1)" "$(frame 1 2)" "$(frame 1 3)" "$(frames 1)"\n'
    (tmp_path / "1").write_text(reply)
    assert BASH is not None
    completed = subprocess.run(
        [BASH, "-c", script], capture_output=True, text=True, timeout=30, check=True
    )
    assert completed.stdout == '{"a":\n1}\n{"b": 2}\n{"c": 3}\n2\n'
    assert jq_path(("result", "task", "id")) == ".result.task.id"
    assert jq_path(("a-b", 0, "x")) == '.["a-b"][0].x'


def test_a_folder_exported_to_curl_writes_grpcurl_scripts_and_the_proto_they_load(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "transcripts"
    folder.mkdir()
    shutil.copy(ROOT / "transcripts" / "02-message-reply.http", folder)
    grpc = folder / "18-grpc-get-task.http"
    grpc.write_text(
        "### GetTask: over gRPC\nGRPC /lf.a2a.v1.A2AService/GetTask\na2a-version: 1.0\n\n"
        '{"id": "task-1"}\n\nGRPC 5 NOT_FOUND\n\n{"code": 5, "message": "Task not found"}\n'
    )
    out = tmp_path / "exported"
    result = CliRunner().invoke(main, ["export", str(folder), "--to", "curl", "-o", str(out)])
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in out.iterdir())
    assert names == ["02-message-reply.sh", "18-grpc-get-task.sh", "a2a.proto"]
    assert result.stderr == (
        f"recorder export: wrote {out / 'a2a.proto'} (the gRPC calls' service definition)\n"
        f"recorder export: wrote 2 files to {out}\n"
    )
    script = (out / "18-grpc-get-task.sh").read_text()
    assert 'grpc_call 1 grpcurl -plaintext -import-path "$PROTO_DIR" -proto a2a.proto' in script
    assert "# Requires bash and grpcurl.\n" in script and "curl -sS" not in script
    assert "grpcurl" not in (out / "02-message-reply.sh").read_text()
    assert (out / "a2a.proto").read_text().startswith(PROTO_MARK)
