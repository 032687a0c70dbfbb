"""The bindings' tables (`recorder.bindings`) against the a2a-sdk's own: method names, REST
routes, streaming, error codes and statuses, card bindings. Pure: no network; the SDK's
tables are read from the installed SDK (its dispatchers, route factory and protobuf
descriptors), not from a copy."""

from __future__ import annotations

import re

import pytest
from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
from a2a.server.routes import create_rest_routes
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types import a2a_pb2
from a2a.utils import constants, errors
from google.api import annotations_pb2

from recorder.bindings import grpc, jsonrpc, operations, rest

_SERVICE = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"]
_VARIABLE = re.compile(r"\{[^}]*\}")


def _shape(template: str) -> str:
    """A path template with its variables unnamed: `/tasks/{id=*}` -> `/tasks/{}`."""
    return _VARIABLE.sub("{}", template)


def _proto_rule(method_name: str) -> tuple[str, str]:
    """(verb, path) of the proto's `google.api.http` rule for a method."""
    rule = _SERVICE.methods_by_name[method_name].GetOptions().Extensions[annotations_pb2.http]
    verb = rule.WhichOneof("pattern")
    return verb.upper(), getattr(rule, verb)


def test_every_operation_has_its_three_names() -> None:
    assert len(operations.OPERATIONS) == 11
    for name, op in operations.OPERATIONS.items():
        assert op.jsonrpc == name and op.grpc == name  # spec §9, §10: one name
        assert op.rest, name
    routed = {route.operation for route in rest.ROUTES}
    assert routed == set(operations.OPERATIONS) == set(grpc.METHODS) == set(jsonrpc.METHODS)


def test_the_methods_are_the_sdks() -> None:
    assert set(jsonrpc.METHODS) == set(JsonRpcDispatcher.METHOD_TO_MODEL)
    assert set(grpc.METHODS) == {method.name for method in _SERVICE.methods}


def test_a_binding_streams_what_the_proto_streams() -> None:
    streamed = {method.name for method in _SERVICE.methods if method.server_streaming}
    assert streamed == {"SendStreamingMessage", "SubscribeToTask"}
    assert streamed == jsonrpc.STREAMING
    assert {name for name, m in grpc.METHODS.items() if m.server_streaming} == streamed
    assert {route.operation for route in rest.ROUTES if route.streaming} == streamed
    assert all(route.streaming for route in rest.ROUTES if route.operation in streamed)
    assert {name for name, op in operations.OPERATIONS.items() if op.streaming} == streamed


def test_the_legacy_methods_are_the_sdks_compat_layers() -> None:
    sdk = set(JSONRPC03Adapter.METHOD_TO_MODEL)
    # ListTasks is new in 1.0: the SDK's 0.3 layer has no name for it; the stand-in reads
    # a 0.3-style `tasks/list` as it too
    assert set(jsonrpc.LEGACY_METHODS) == sdk | {"tasks/list"}
    assert all(jsonrpc.LEGACY_METHODS[name] in jsonrpc.METHODS for name in sdk)


def test_the_routes_are_the_sdks() -> None:
    served = set()
    for route in create_rest_routes(None):
        for verb in getattr(route, "methods", None) or ():
            if verb != "HEAD":  # (Starlette's, beside every GET)
                served.add((verb, _shape(route.path)))
    assert {(route.verb, _shape(route.template)) for route in rest.ROUTES} == served


def _sdk_route(verb: str, path: str) -> str | None:
    """The template of the SDK's REST route that takes `verb path` (Starlette's matching)."""
    from starlette.routing import Match, Route

    scope = {"type": "http", "method": verb, "path": path, "root_path": ""}
    for route in create_rest_routes(None):
        if isinstance(route, Route) and route.matches(scope)[0] == Match.FULL:
            return str(route.path)
    return None


def test_a_path_goes_where_the_sdk_routes_it() -> None:
    for route in rest.ROUTES:
        path = _VARIABLE.sub("t-1", route.template)
        taken = rest.operation_of(route.verb, path)
        assert taken == route.operation, path
        assert _shape(_sdk_route(route.verb, path) or "") == _shape(route.template), path
    # the one place the recorder is stricter: a task id ends at a custom method's `:`, so
    # GET /tasks/ID:cancel is no GetTask (Starlette's `{id}` takes the `:cancel` too)
    assert _sdk_route("GET", "/tasks/t-1:cancel") == "/tasks/{id}"
    assert rest.operation_of("GET", "/tasks/t-1:cancel") is None


def test_each_operations_route_is_the_protos_http_rule() -> None:
    for name, op in operations.OPERATIONS.items():
        verb, path = _proto_rule(name)
        shapes = {_shape(route) for route in op.rest}
        assert _shape(f"{verb} {path}") in shapes, name


@pytest.mark.parametrize(
    ("verb", "path", "operation"),
    [
        ("POST", "/a2a/rest/message:send", "SendMessage"),
        ("POST", "/message:stream", "SendStreamingMessage"),
        ("GET", "/a2a/rest/tasks/t-1", "GetTask"),
        ("GET", "/a2a/rest/tasks", "ListTasks"),
        ("POST", "/tenant-a/a2a/rest/tasks/t-1:cancel", "CancelTask"),
        ("GET", "/tasks/t-1:subscribe", "SubscribeToTask"),
        ("POST", "/tasks/t-1:subscribe", "SubscribeToTask"),
        ("POST", "/tasks/t-1/pushNotificationConfigs", "CreateTaskPushNotificationConfig"),
        ("GET", "/tasks/t-1/pushNotificationConfigs", "ListTaskPushNotificationConfigs"),
        ("GET", "/tasks/t-1/pushNotificationConfigs/c-1", "GetTaskPushNotificationConfig"),
        ("DELETE", "/tasks/t-1/pushNotificationConfigs/c-1", "DeleteTaskPushNotificationConfig"),
        ("GET", "/a2a/rest/extendedAgentCard", "GetExtendedAgentCard"),
        # a custom method is not a task id: GET /tasks/ID:cancel is no GetTask
        ("GET", "/tasks/t-1:cancel", None),
        ("GET", "/message:send", None),
        ("PUT", "/tasks/t-1", None),
    ],
)
def test_a_request_is_routed_to_its_operation(verb: str, path: str, operation: str) -> None:
    assert rest.operation_of(verb, path) == operation


def test_the_error_codes_are_the_sdks() -> None:
    sdk = {cls.__name__: code for cls, code in errors.JSON_RPC_ERROR_CODE_MAP.items()}
    assert dict(jsonrpc.ERROR_CODES) == sdk
    assert jsonrpc.PARSE_ERROR == constants.JSONRPC_PARSE_ERROR_CODE


def test_the_error_statuses_and_reasons_are_the_sdks() -> None:
    sdk = {cls.__name__: mapping for cls, mapping in errors.A2A_ERROR_MAPPING.items()}
    assert dict(rest.HTTP_STATUS) == {name: m.http_code for name, m in sdk.items()}
    assert dict(grpc.ERROR_STATUS) == {name: m.grpc_status for name, m in sdk.items()}
    for name, error in operations.ERRORS.items():
        if name in sdk:
            assert (error.reason, error.http, error.grpc) == (
                sdk[name].reason,
                sdk[name].http_code,
                sdk[name].grpc_status,
            )
        else:  # the parse error: JSON-RPC's alone
            assert name == "JSONParseError"
            assert (error.reason, error.http, error.grpc) == (None, None, None)
    assert all(status in grpc.STATUS_NAMES for status in grpc.ERROR_STATUS.values())


def test_the_grpc_statuses_are_the_sdk_grpc_handlers() -> None:
    pytest.importorskip("grpc")
    from a2a.server.request_handlers import grpc_handler

    sdk = {cls.__name__: code.name for cls, code in grpc_handler._ERROR_CODE_MAP.items()}
    assert dict(grpc.ERROR_STATUS) == sdk


def test_the_card_bindings_are_the_sdks() -> None:
    protocol = constants.TransportProtocol
    assert (
        protocol.JSONRPC.value,
        protocol.HTTP_JSON.value,
        protocol.GRPC.value,
    ) == (jsonrpc.BINDING, rest.BINDING, grpc.BINDING)
    assert rest.MEDIA_TYPE == constants.A2A_JSON_MEDIA_TYPE
    assert operations.AGENT_CARD_PATH == constants.AGENT_CARD_WELL_KNOWN_PATH
    assert jsonrpc.card_interface("http://h:1/a2a/jsonrpc")["protocolBinding"] == "JSONRPC"
    assert rest.card_interface("http://h:1/a2a/rest")["protocolBinding"] == "HTTP+JSON"


def test_the_tables_print_one_row_each() -> None:
    lines = operations.operations_table().splitlines()
    assert len(lines) == 1 + 12  # the head, eleven operations, SubscribeToTask's GET
    assert lines[1].split() == ["SendMessage", "POST", "/message:send", "no", "=", "="]
    rows = operations.errors_table().splitlines()
    assert rows[1].split() == ["TaskNotFoundError", "TASK_NOT_FOUND", "-32001", "404", "NOT_FOUND"]
    assert len(rows) == 1 + len(jsonrpc.ERROR_CODES)


@pytest.mark.parametrize(
    ("body", "is_rpc", "method"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}}, True, "GetTask"),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, True, None),
        ({"message": {}}, False, None),
        ([{"jsonrpc": "2.0"}], False, None),
    ],
)
def test_the_envelope(body: object, is_rpc: bool, method: str | None) -> None:
    assert jsonrpc.is_jsonrpc(body) is is_rpc
    assert (jsonrpc.method_of(body) if is_rpc else None) == method


def test_the_error_bodies() -> None:
    assert jsonrpc.error_response(7, -32001, "Task not found") == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32001, "message": "Task not found"},
    }
    assert rest.error_envelope(404, "NOT_FOUND", "gone", []) == {
        "error": {"code": 404, "status": "NOT_FOUND", "message": "gone", "details": []}
    }
