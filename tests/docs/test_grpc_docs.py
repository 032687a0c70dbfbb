"""render and export show gRPC calls (issue 26): the request line without a version, the
metadata, the ProtoJSON, the frames, the status and trailers; `--to http` as httpyac's GRPC
requests with their chains; `--to curl` grpcurl commands with theirs; the a2a.proto both
load, written beside the export."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from recorder import Transcript, dump, load
from recorder.bindings import grpc as binding
from recorder.bindings.grpc_proto import PROTO_FILE, proto_text
from recorder.cli import main
from recorder.docs.curlscript import export_curl
from recorder.docs.export import export_http
from recorder.docs.render import RenderOptions, render_exchange
from recorder.format.model import Exchange

ROOT = Path(__file__).resolve().parents[2]
TASK = {"id": "7f9c1e9a-0000-4000-8000-000000000001", "status": {"state": "TASK_STATE_WORKING"}}
METADATA = [("a2a-version", "1.0"), ("host", "127.0.0.1:41243")]


def call(name: str, message: str, response: object) -> Exchange:
    request = binding.request_of(name, METADATA, message.encode())
    assert isinstance(response, type(binding.response_of(0)))
    return Exchange(request, response, title=name)


def send() -> Exchange:
    reply = binding.response_of(0, reply=('{"task": ' + _json(TASK) + "}").encode())
    return call("SendMessage", '{"message": {"messageId": "m-1", "role": "ROLE_USER"}}', reply)


def get(task_id: str) -> Exchange:
    failed = binding.response_of(5, message="Task not found", trailing=[("x-request-id", "r-9")])
    return call("GetTask", '{"id": "' + task_id + '"}', failed)


def _json(value: object) -> str:
    import json

    return json.dumps(value)


def test_render_shows_the_call_line_the_status_and_the_trailers() -> None:
    text = render_exchange(
        get("no-such-task"), RenderOptions(headers=("a2a-version", "x-request-id"))
    )
    lines = text.splitlines()
    assert lines[:2] == ["GRPC /lf.a2a.v1.A2AService/GetTask", "a2a-version: 1.0"]
    assert "GRPC 5 NOT_FOUND" in lines
    assert '  "message": "Task not found"' in lines
    assert lines[-3:] == ["", "# @trailers", "x-request-id: r-9"]


def test_render_shows_a_streams_messages_as_frames() -> None:
    frames = binding.response_of(0, messages=[('{"task": ' + _json(TASK) + "}").encode()])
    exchange = call("SendStreamingMessage", '{"message": {"messageId": "m-2"}}', frames)
    lines = render_exchange(exchange).splitlines()
    assert "GRPC 0 OK" in lines
    assert any(line.startswith('data: {"task": {"id": "7f9c1e9a') for line in lines)


def test_export_http_writes_httpyac_grpc_requests_that_chain() -> None:
    text = export_http([send(), get(TASK["id"])])
    head = text.split("\n\n", 1)[0].splitlines()
    # the host before the proto: the lines after `proto <` are proto-loader's options
    assert head[-3:] == ["proto < ./a2a.proto", "enums: String", "longs: String"]
    assert head.index("@grpc_host = 127.0.0.1:41243") < head.index("proto < ./a2a.proto")
    assert "GRPC {{grpc_host}}/lf.a2a.v1.A2AService/SendMessage\na2a-version: 1.0\n" in text
    assert 'client.global.set("task_id_1", response.body.task.id);' in text
    assert '"id": "{{task_id_1}}"' in text
    assert "\nhost:" not in text and "@host =" not in text


def test_export_http_sends_to_the_grpc_agent_given_else_says_to_define_grpc_host() -> None:
    unknown = binding.request_of("GetTask", [("a2a-version", "1.0")], b'{"id": "t-1"}')
    exchange = Exchange(unknown, binding.response_of(5, message="Task not found"), title="x")
    assert "@grpc_host = 127.0.0.1:9001\n" in export_http([exchange], grpc_host="127.0.0.1:9001")
    text = export_http([exchange])
    assert "# Define grpc_host (the agent's gRPC host:port).\n" in text
    assert "@grpc_host" not in text


def test_export_curl_of_grpc_calls_is_grpcurl_commands_whose_ids_chain() -> None:
    script = export_curl([send(), get(TASK["id"])], source="t.http")
    assert "# Requires bash, grpcurl and jq." in script
    assert "BASE_URL" not in script.split("out=$(mktemp -d)")[0]  # no HTTP request: no base
    assert "GRPC_HOST=${GRPC_HOST:-127.0.0.1:41243}\n" in script
    assert (
        'grpc_call 1 grpcurl -plaintext -import-path "$PROTO_DIR" -proto a2a.proto '
        "-format-error \\\n  -H 'a2a-version: 1.0' \\\n  -d "
        '\'{"message": {"messageId": "m-1", "role": "ROLE_USER"}}\' \\\n'
        '  "$GRPC_HOST" lf.a2a.v1.A2AService/SendMessage\nshow 1\n'
    ) in script
    assert "task_id_1=$(body 1 | jq -er .task.id)" in script
    assert '-d \'{"id": "\'"$task_id_1"\'"}\'' in script


def test_a_grpc_streams_message_k_is_captured_as_its_kth_json_value() -> None:
    frames = binding.response_of(0, messages=[('{"task": ' + _json(TASK) + "}").encode()])
    stream = call("SendStreamingMessage", '{"message": {"messageId": "m-2"}}', frames)
    script = export_curl([stream, get(TASK["id"])])
    assert (
        "task_id_1=$(cat \"$out/1.grpc\" | jq -ner '[limit(1; inputs)] | .[0] | .task.id')"
        in script
    )


def _grpc_transcript(folder: Path) -> Path:
    path = folder / "18-grpc.http"
    dump(Transcript((send(), get(TASK["id"]))), path)
    return path


def test_an_export_to_a_file_writes_the_proto_beside_it(tmp_path: Path) -> None:
    source = _grpc_transcript(tmp_path)
    out = tmp_path / "out" / "calls.http"
    out.parent.mkdir()
    result = CliRunner().invoke(main, ["export", str(source), "--to", "http", "-o", str(out)])
    assert result.exit_code == 0, result.output
    proto = out.parent / PROTO_FILE
    assert proto.read_text() == proto_text()
    assert result.stdout == ""
    assert f"recorder export: wrote {proto} (the gRPC calls' service definition)" in result.stderr


def test_an_export_to_stdout_says_where_the_proto_goes_and_proto_dir_writes_it(
    tmp_path: Path,
) -> None:
    source = _grpc_transcript(tmp_path)
    result = CliRunner().invoke(main, ["export", str(source), "--to", "curl"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("#!/usr/bin/env bash\n")
    assert result.stderr == (
        "recorder export: the gRPC calls load ./a2a.proto from the export's folder: write it"
        " there with --proto DIR\n"
    )
    assert not (tmp_path / PROTO_FILE).exists()
    where = tmp_path / "protos"
    result = CliRunner().invoke(
        main, ["export", str(source), "--to", "http", "--proto", str(where)]
    )
    assert result.exit_code == 0, result.output
    assert (where / PROTO_FILE).read_text() == proto_text()
    assert result.stdout.startswith("# exported by recorder")


def test_an_a2a_proto_recorder_did_not_write_is_never_overwritten(tmp_path: Path) -> None:
    source = _grpc_transcript(tmp_path)
    mine = tmp_path / "out" / PROTO_FILE
    mine.parent.mkdir()
    mine.write_text('syntax = "proto3";\n// my own\n')
    out = tmp_path / "out" / "calls.sh"
    result = CliRunner().invoke(main, ["export", str(source), "--to", "curl", "-o", str(out)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"recorder export: {mine} is not the a2a.proto recorder writes: the export would"
        " overwrite it (move it, or pass --proto DIR)\n"
    )
    assert mine.read_text() == 'syntax = "proto3";\n// my own\n'
    assert not out.exists()


def test_export_http_writes_well_known_types_as_protobufjs_reads_them() -> None:
    message = '{"message": {"messageId": "m-1", "metadata": {"k": "v"}}}'
    exchange = call("SendMessage", message, binding.response_of(0, reply=b'{"message": {}}'))
    text = export_http([exchange])
    assert '"metadata": {\n      "fields": {\n        "k": {\n          "stringValue": "v"' in text
    plain = call("GetTask", '{"id": "t-1"}', binding.response_of(0, reply=b"{}"))
    assert '{\n  "id": "t-1"\n}\n' in export_http([plain])  # no well-known type: as recorded


def test_a_file_of_http_and_grpc_calls_exports_curl_and_grpcurl_side_by_side() -> None:
    http = load(ROOT / "transcripts" / "02-message-reply.http").exchanges[0]
    script = export_curl([http, send()])
    head = script.split("out=$(mktemp -d)")[0]
    assert "# Requires bash, curl and grpcurl.\n" in head
    assert "BASE_URL=${BASE_URL:-http://localhost:41242}\n" in head
    assert "GRPC_HOST=${GRPC_HOST:-127.0.0.1:41243}\n" in head
    assert "\ncurl -sS -i 'http://localhost:41242" not in script  # sent to "$BASE_URL"
    assert '\ncurl -sS -i "$BASE_URL"/a2a/jsonrpc' in script
    assert "\ngrpc_call 2 grpcurl " in script
    text = export_http([http, send()], grpc_host="127.0.0.1:9001")
    assert "@host = http://localhost:41242\n" in text and "@grpc_host = 127.0.0.1:9001\n" in text
