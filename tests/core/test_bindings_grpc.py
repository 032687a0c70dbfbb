"""The gRPC binding module: its table agrees with the SDK's service, messages and statuses
go to JSON and back, and a call's model reads and writes as the format says."""

from __future__ import annotations

import json

import grpc
import pytest
from a2a.types import a2a_pb2
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from recorder import Exchange, Transcript, dumps, loads
from recorder.bindings import grpc as binding


class FakeCallEnd:
    """What grpcio hands a client at a call's end (`code()`, `details()`, the trailers)."""

    def __init__(self, code: grpc.StatusCode, details: str, trailing: tuple) -> None:  # type: ignore[type-arg]
        self._code, self._details, self._trailing = code, details, trailing

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> tuple:  # type: ignore[type-arg]
        return self._trailing


def _not_found_status() -> status_pb2.Status:
    status = status_pb2.Status(code=5, message="Task not found: t-9")
    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.ErrorInfo(reason="TASK_NOT_FOUND", domain="a2a-protocol.org"))
    status.details.append(detail)
    return status


def test_the_method_table_is_the_sdk_service() -> None:
    service = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"]
    assert service.full_name == binding.SERVICE
    seen = {}
    for method in service.methods:
        seen[method.name] = (
            method.input_type.name,
            method.output_type.full_name.removeprefix("lf.a2a.v1."),
            method.server_streaming,
        )
    table = {m.name: (m.request, m.reply, m.server_streaming) for m in binding.METHODS.values()}
    assert table == seen
    assert len(table) == 11
    for name in table:
        assert binding.message_type(name).DESCRIPTOR.name == seen[name][0]
        reply = binding.message_type(name, reply=True).DESCRIPTOR.full_name
        assert reply.removeprefix("lf.a2a.v1.") == seen[name][1]


def test_paths_and_streaming() -> None:
    assert binding.method_of("/lf.a2a.v1.A2AService/SendMessage") == "SendMessage"
    assert binding.method_of("/other.Service/SendMessage") is None
    assert binding.method_of("/lf.a2a.v1.A2AService/Nope") is None
    assert binding.target_of("GetTask") == "/lf.a2a.v1.A2AService/GetTask"
    assert binding.is_server_streaming("SubscribeToTask")
    assert binding.is_server_streaming("/lf.a2a.v1.A2AService/SendStreamingMessage")
    assert not binding.is_server_streaming("SendMessage")


def test_status_names_are_grpcs() -> None:
    for code in grpc.StatusCode:
        number, _ = code.value
        assert binding.status_name(number) == code.name
        assert binding.status_code(str(code)) == number
    with pytest.raises(ValueError):
        binding.status_code("NOPE")


def test_messages_go_to_protojson_and_back() -> None:
    request = a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(message_id="m-1", role=a2a_pb2.ROLE_USER, context_id="c-1")
    )
    text = binding.to_json(request)
    assert b"\n" not in text
    assert json.loads(text) == {
        "message": {"messageId": "m-1", "contextId": "c-1", "role": "ROLE_USER"}
    }
    # the recorder's own message class (`recorder.bindings.grpc_messages`), the SDK's wire
    back = binding.to_message("SendMessage", text)
    assert type(back) is not type(request)
    assert back.DESCRIPTOR.full_name == request.DESCRIPTOR.full_name
    assert back.SerializeToString(deterministic=True) == request.SerializeToString(
        deterministic=True
    )
    with pytest.raises(ValueError, match="no field named"):
        binding.to_message("GetTask", b'{"taskId": "t-1"}')
    empty = binding.to_message("DeleteTaskPushNotificationConfig", b"{}", True)  # (the contract)
    assert empty.DESCRIPTOR.full_name == "google.protobuf.Empty"


def test_a_failed_unary_call_has_its_status_as_the_body() -> None:
    status = _not_found_status()
    end = FakeCallEnd(
        grpc.StatusCode.NOT_FOUND,
        status.message,
        (("x-request-id", "r-1"), ("grpc-status-details-bin", status.SerializeToString())),
    )
    value = json.loads(binding.status_json(end))
    assert value["code"] == 5
    assert value["details"][0]["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    response = binding.response_of(
        5, message=status.message, initial=[("content-type", "application/grpc")],
        trailing=end.trailing_metadata(),
    )  # fmt: skip
    assert (response.status, response.reason, response.events) == (5, "NOT_FOUND", None)
    assert response.json == value
    assert list(response.trailers) == [("x-request-id", "r-1")]
    assert binding.call_status(response) == value
    trailing = dict(binding.reply_trailing(response))
    again = status_pb2.Status.FromString(trailing["grpc-status-details-bin"])  # type: ignore[arg-type]
    assert again == status


def test_a_stream_that_failed_after_messages_keeps_them_and_its_status_in_the_trailers() -> None:
    status = _not_found_status()
    task = a2a_pb2.StreamResponse(task=a2a_pb2.Task(id="t-1", context_id="c-1"))
    response = binding.response_of(
        5,
        message=status.message,
        trailing=(("grpc-status-details-bin", status.SerializeToString()),),
        messages=[task, binding.to_json(task)],
    )
    assert response.events is not None
    assert [json.loads(e.data or "") for e in response.events] == [
        {"task": {"id": "t-1", "contextId": "c-1"}}
    ] * 2
    assert response.trailers.get("grpc-message") == status.message
    assert binding.call_status(response)["details"][0]["reason"] == "TASK_NOT_FOUND"
    request = binding.request_of("SubscribeToTask", [("a2a-version", "1.0")], b'{"id": "t-1"}')
    transcript = Transcript((Exchange(request, response, "SubscribeToTask"),))
    text = dumps(transcript)
    assert "GRPC /lf.a2a.v1.A2AService/SubscribeToTask\n" in text
    assert "\nGRPC 5 NOT_FOUND\n" in text
    assert "\n# @trailers\ngrpc-message: Task not found: t-9\ngrpc-status-details: {" in text
    assert loads(text) == transcript
    assert dumps(loads(text)) == text


def test_an_ok_stream_of_no_message_and_binary_metadata() -> None:
    response = binding.response_of(0, messages=[], trailing=[("trace-bin", b"\x00\xff")])
    assert response.events == ()
    assert response.trailers.get("trace-bin") == "AP8="
    assert binding.reply_trailing(response) == [("trace-bin", b"\x00\xff")]
    assert binding.call_status(response) == {"code": 0}


def test_the_card_interface() -> None:
    assert binding.card_interface("127.0.0.1", 50051) == {
        "url": "127.0.0.1:50051",
        "protocolBinding": "GRPC",
        "protocolVersion": "1.0",
    }


def test_the_model_holds_a_grpc_call_only_in_its_shape() -> None:
    from recorder import Headers, Request, Response

    with pytest.raises(ValueError, match="expected 0 to 16"):
        Response(17, http_version="GRPC")
    with pytest.raises(ValueError, match="only a gRPC reply has trailers"):
        Response(200, trailers=Headers([("x-a", "1")]))
    with pytest.raises(ValueError, match="without an HTTP version is a gRPC call"):
        Request("POST", "/a2a/jsonrpc", http_version="")
    grpc_request = Request(
        "GRPC", "/lf.a2a.v1.A2AService/GetTask", body=b'{"id":"t"}', http_version=""
    )
    assert grpc_request.is_grpc and grpc_request.is_json
    assert grpc_request.body == b'{\n  "id": "t"\n}'  # pretty, whatever the content type
    with pytest.raises(ValueError, match="different bindings"):
        Exchange(grpc_request, Response(200))
    stream = Response(0, "OK", http_version="GRPC")
    assert stream.events == () and not stream.is_json  # no message, no body: a stream
    unary = Response(0, "OK", body=b"{}", http_version="GRPC")
    assert unary.events is None and unary.is_json and unary.json == {}
    kept = unary.with_content(Headers(), body=b'{"id": "t"}')
    assert kept.trailers == unary.trailers and kept.http_version == "GRPC"
