"""render and export show gRPC calls (issue 26): the request line without a version, the
metadata, the ProtoJSON, the frames, the status and trailers; `--to http` as httpyac's GRPC
requests with their chains; `--to curl` an error that gives the grpcurl call."""

from __future__ import annotations

import pytest

from recorder.bindings import grpc as binding
from recorder.docs.curlscript import export_curl
from recorder.docs.export import ExportError, export_http
from recorder.docs.render import RenderOptions, render_exchange
from recorder.model import Exchange

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
    assert "proto < ./a2a.proto" in text
    assert "@grpc_host = 127.0.0.1:41243" in text
    assert "GRPC {{grpc_host}}/lf.a2a.v1.A2AService/SendMessage\na2a-version: 1.0\n" in text
    assert 'client.global.set("task_id_1", response.body.task.id);' in text
    assert '"id": "{{task_id_1}}"' in text
    assert "\nhost:" not in text and "@host =" not in text


def test_export_curl_of_a_grpc_call_is_an_error_giving_the_grpcurl_call() -> None:
    with pytest.raises(ExportError) as caught:
        export_curl([send()], source="t.http")
    message = str(caught.value)
    assert message.startswith("t.http: exchange 1: GRPC /lf.a2a.v1.A2AService/SendMessage")
    assert (
        "grpcurl -plaintext -proto a2a.proto -H 'a2a-version: 1.0' -d "
        '\'{"message": {"messageId": "m-1", "role": "ROLE_USER"}}\' 127.0.0.1:41243 '
        "lf.a2a.v1.A2AService/SendMessage"
    ) in message
