"""The gRPC binding of A2A 1.0 (`lf.a2a.v1.A2AService`), in one place.

- The method table: each method's request and reply message types, and whether the server
  streams its reply (SendStreamingMessage, SubscribeToTask).
- The status codes (0 OK … 16 UNAUTHENTICATED) and their names.
- ProtoJSON <-> messages (`google.protobuf.json_format`, lowerCamelCase names as the other
  bindings' JSON), and the google.rpc.Status of a failed call (`grpc-status-details-bin` on
  the wire) as JSON, its Any details with their `@type`.
- A call in the transcript model (`recorder.format.model`): `request_of`, `response_of` build one
  from what a client or a server saw; `call_status`, `reply_trailing` read one back.
- The agent card's gRPC interface (`protocolBinding: "GRPC"`, url `host:port`).

Pure: no sockets, and grpcio is never imported. The messages are the recorder's own
(`recorder.bindings.grpc_messages`: the A2A 1.0 descriptor it ships, no a2a-sdk needed);
protobuf and googleapis' google.rpc messages are imported lazily, with a clear error when they
are missing.

How a call is held (the format is in `recorder.format.httpfile`): the request is `GRPC <path>` with
the metadata as headers and the message as ProtoJSON; the reply's status line is the call's
status; a unary reply's message, or a failed call's google.rpc.Status, is its body; a server
stream's messages are its events (each one's data the message's JSON on one line); the
trailing metadata are its trailers, without grpc-status, grpc-message and
grpc-status-details-bin (the status line and the body hold those). A stream that failed after
messages keeps them as events, and its status's message and details go in the trailers as
`grpc-message` (the text) and `grpc-status-details` (the google.rpc.Status as JSON).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

from recorder.bindings.grpc_messages import MISSING, message_class
from recorder.errors import RecorderError
from recorder.format.model import (
    GRPC_METHOD,
    GRPC_VERSION,
    Headers,
    Request,
    Response,
    SseEvent,
)

__all__ = [
    "BINDING",
    "ERROR_STATUS",
    "METHODS",
    "MISSING",
    "SERVICE",
    "STATUS_DETAILS",
    "STATUS_NAMES",
    "Method",
    "call_status",
    "card_interface",
    "is_grpc",
    "is_server_streaming",
    "message_problem",
    "message_type",
    "metadata_headers",
    "metadata_of",
    "method_of",
    "reply_trailing",
    "request_of",
    "response_of",
    "status_code",
    "status_details_bin",
    "status_json",
    "status_name",
    "target_of",
    "to_json",
    "to_message",
    "to_value",
]

SERVICE = "lf.a2a.v1.A2AService"
BINDING = "GRPC"
"""The card's `protocolBinding` of a gRPC interface."""

STATUS_NAMES = (
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
)
"""The gRPC status codes' names, by code (grpc/doc/statuscodes.md)."""

STATUS_DETAILS_BIN = "grpc-status-details-bin"
STATUS_DETAILS = "grpc-status-details"
"""The trailer that holds a failed stream's google.rpc.Status as JSON in a transcript."""
GRPC_MESSAGE = "grpc-message"
# what the call's end says on the wire: the status line and the body hold it in a transcript
_CALL_END = frozenset({"grpc-status", GRPC_MESSAGE, STATUS_DETAILS_BIN})

Metadata: TypeAlias = "Iterable[tuple[str, str | bytes]]"


@dataclass(frozen=True)
class Method:
    """One method of the service: its message types (names in `lf.a2a.v1`, or
    `google.protobuf.Empty`) and whether the server streams the reply."""

    name: str
    request: str
    reply: str
    server_streaming: bool = False


METHODS: Mapping[str, Method] = {
    m.name: m
    for m in (
        Method("SendMessage", "SendMessageRequest", "SendMessageResponse"),
        Method("SendStreamingMessage", "SendMessageRequest", "StreamResponse", True),
        Method("GetTask", "GetTaskRequest", "Task"),
        Method("ListTasks", "ListTasksRequest", "ListTasksResponse"),
        Method("CancelTask", "CancelTaskRequest", "Task"),
        Method("SubscribeToTask", "SubscribeToTaskRequest", "StreamResponse", True),
        Method(
            "CreateTaskPushNotificationConfig",
            "TaskPushNotificationConfig",
            "TaskPushNotificationConfig",
        ),
        Method(
            "GetTaskPushNotificationConfig",
            "GetTaskPushNotificationConfigRequest",
            "TaskPushNotificationConfig",
        ),
        Method(
            "ListTaskPushNotificationConfigs",
            "ListTaskPushNotificationConfigsRequest",
            "ListTaskPushNotificationConfigsResponse",
        ),
        Method(
            "DeleteTaskPushNotificationConfig",
            "DeleteTaskPushNotificationConfigRequest",
            "google.protobuf.Empty",
        ),
        Method("GetExtendedAgentCard", "GetExtendedAgentCardRequest", "AgentCard"),
    )
}


# --------------------------------------------------------------------------- the table


def is_grpc(message: Request | Response) -> bool:
    """Whether `message` is a gRPC call (`GRPC /…`) or its reply (`GRPC 0 OK`)."""
    return message.is_grpc


def method_of(target: str) -> str | None:
    """`/lf.a2a.v1.A2AService/SendMessage` -> `SendMessage`; None for another path."""
    service, _, name = target.lstrip("/").partition("/")
    if service != SERVICE or name not in METHODS:
        return None
    return name


def target_of(name: str) -> str:
    """`SendMessage` -> `/lf.a2a.v1.A2AService/SendMessage` (the call's path)."""
    return f"/{SERVICE}/{name}"


def is_server_streaming(name: str) -> bool:
    """Whether the server streams the method's reply (a method name or a call's path)."""
    method = METHODS.get(name) or METHODS.get(method_of(name) or "")
    return method is not None and method.server_streaming


def status_name(code: int) -> str:
    """`5` -> `NOT_FOUND`; `UNKNOWN` for a code gRPC does not define."""
    return STATUS_NAMES[code] if 0 <= code < len(STATUS_NAMES) else "UNKNOWN"


def status_code(name: str) -> int:
    """`NOT_FOUND` (or grpcio's `StatusCode.NOT_FOUND`) -> `5`; ValueError for another."""
    bare = name.rpartition(".")[2].upper()
    if bare not in STATUS_NAMES:
        raise ValueError(f"not a gRPC status code name: {name!r}")
    return STATUS_NAMES.index(bare)


# --------------------------------------------------------------------------- ProtoJSON


def _protobuf() -> tuple[Any, Any]:
    """(json_format, status_pb2), imported on first use."""
    try:
        from google.protobuf import json_format

        # (imported for its messages: ErrorInfo, BadRequest … are Any details a Status holds)
        from google.rpc import error_details_pb2, status_pb2  # noqa: F401
    except ImportError:
        raise RecorderError(MISSING) from None
    return json_format, status_pb2


def message_type(name: str, *, reply: bool = False) -> Any:
    """The message class of method `name`'s request (or, with `reply`, its reply)."""
    method = METHODS.get(name)
    if method is None:
        raise ValueError(f"{SERVICE} has no method {name!r}")
    type_name = method.reply if reply else method.request
    _protobuf()
    if type_name == "google.protobuf.Empty":
        from google.protobuf import empty_pb2

        return empty_pb2.Empty
    return message_class(type_name)


def to_message(name: str, json_bytes: bytes | str, reply: bool = False) -> Any:
    """Method `name`'s request (or reply) message from its ProtoJSON; ValueError naming the
    problem when the JSON is not one."""
    cls = message_type(name, reply=reply)
    return _parse(cls, json_bytes)


_FIELD_CHAIN = re.compile(r"Failed to parse (\S+) field: ")
_NO_FIELD = re.compile(r'has no field named "([^"]*)"')


def message_problem(
    name: str, body: bytes | str, *, reply: bool = False
) -> tuple[tuple[str, ...], str] | None:
    """None when `body` is ProtoJSON of method `name`'s request (reply) message; else (the
    JSON names leading to the mistake, outermost first: where to look; what is wrong).
    `name` "google.rpc.Status" checks a failed call's status."""
    status = name == "google.rpc.Status"
    cls = _protobuf()[1].Status if status else message_type(name, reply=reply)
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        value = json.loads(text)
    except ValueError:
        return (), "not JSON"
    type_name = cls.DESCRIPTOR.full_name
    if not isinstance(value, dict):
        return (), f"not a {type_name}: a message is a JSON object"
    try:
        _parse(cls, text)
    except ValueError as exc:
        found = str(exc).split("\n", 1)[0]
        chain = _FIELD_CHAIN.findall(found)
        where = ".".join(chain)
        missing = _NO_FIELD.search(found)
        if missing:
            chain.append(missing.group(1))
            reason = f'no field named "{missing.group(1)}"'
        else:
            reason = _FIELD_CHAIN.sub("", found.removeprefix(f"not a {type_name}: "))
            reason = re.sub(r" at \S+$", "", reason.rstrip(".")).rstrip(".")
        return tuple(chain), f"not a {type_name}: " + (f"{where}: {reason}" if where else reason)
    return None


def _parse(cls: Any, json_bytes: bytes | str) -> Any:
    json_format, _ = _protobuf()
    text = json_bytes.decode() if isinstance(json_bytes, bytes) else json_bytes
    try:
        return json_format.Parse(text, cls())
    except json_format.ParseError as exc:
        raise ValueError(f"not a {cls.DESCRIPTOR.full_name}: {exc}") from None


def to_json(message: Any) -> bytes:
    """A message's ProtoJSON on one line (lowerCamelCase names; the spacing of `json.dumps`,
    as the other bindings' stream frames)."""
    return json.dumps(to_value(message), ensure_ascii=False).encode()


def to_value(message: Any) -> dict[str, Any]:
    """A message's ProtoJSON as the parsed JSON value `to_json` writes: what
    `json_format.MessageToDict` makes, made by a walk of the message's set fields for the
    kinds of field A2A's messages have (about four times faster: the gRPC listener learns
    each reply message's ids from it on the event loop), by `MessageToDict` for any other."""
    json_format, _ = _protobuf()
    value = _walked(message, json_format)
    if value is None:
        value = json_format.MessageToDict(message, preserving_proto_field_name=False)
    return cast(dict[str, Any], value)


# (FieldDescriptor's cpp_type numbers: int32, uint32, bool, enum, string, message; the
# 64-bit integers, double and float are left to `MessageToDict`: A2A's messages have none)
_INT32, _UINT32, _BOOL, _ENUM, _STRING, _MESSAGE = 1, 3, 7, 8, 9, 10
_PLAIN = frozenset({_INT32, _UINT32, _BOOL})
_TYPE_BYTES = 12


class _Unwalked(Exception):
    """A field `_walked` leaves to `MessageToDict` (a map, a float, a 64-bit integer, an
    extension, an enum value unnamed or with options)."""


def _walked(message: Any, json_format: Any) -> Any:
    """`MessageToDict`'s value of `message` (None: it holds a field left to it)."""
    try:
        return _walk(message, json_format)
    except _Unwalked:
        return None


def _walk(message: Any, json_format: Any) -> Any:
    if message.DESCRIPTOR.full_name.startswith("google.protobuf."):  # (Struct, Timestamp …)
        return json_format.MessageToDict(message, preserving_proto_field_name=False)
    value: dict[str, Any] = {}
    for field, item in message.ListFields():
        name, repeated = _FIELDS.get(field) or _field_of(field)
        if repeated:
            value[name] = [_field_value(field, one, json_format) for one in item]
        else:
            value[name] = _field_value(field, item, json_format)
    return value


# what `_walk` reads of each field it met, once: (its JSON name, whether it repeats)
_FIELDS: dict[Any, tuple[str, bool]] = {}


def _field_of(field: Any) -> tuple[str, bool]:
    if field.is_extension or (
        field.message_type is not None and field.message_type.GetOptions().map_entry
    ):
        raise _Unwalked
    found = _FIELDS[field] = (field.json_name, field.is_repeated)
    return found


def _field_value(field: Any, item: Any, json_format: Any) -> Any:
    kind = field.cpp_type
    if kind == _STRING:
        return base64.b64encode(item).decode() if field.type == _TYPE_BYTES else item
    if kind == _MESSAGE:
        return _walk(item, json_format)
    if kind in _PLAIN:
        return item
    if kind == _ENUM:
        if field.enum_type.full_name == "google.protobuf.NullValue":
            return None
        named = field.enum_type.values_by_number.get(item)
        if named is not None and not named.has_options:  # (an option may rename it in JSON)
            return named.name
    raise _Unwalked  # (a float, a 64-bit integer, an enum number its type does not name)


# --------------------------------------------------------------------------- status


def status_json(rpc_error: Any) -> bytes:
    """The JSON of a failed call's google.rpc.Status: from `grpc-status-details-bin` in its
    trailing metadata when there is one, else its code and message. `rpc_error` is what
    grpcio raises or a finished call (`code()`, `details()`, `trailing_metadata()`)."""
    code = rpc_error.code()
    number = code if isinstance(code, int) else status_code(str(code))
    trailing = rpc_error.trailing_metadata() or ()
    return json.dumps(_status_value(number, rpc_error.details() or "", trailing)).encode()


def _status_value(code: int, message: str, trailing: Metadata) -> dict[str, Any]:
    for key, data in trailing:
        if key == STATUS_DETAILS_BIN:
            raw = data if isinstance(data, bytes) else _unbase64(data)
            json_format, status_pb2 = _protobuf()
            status = status_pb2.Status()
            status.ParseFromString(raw)
            found: dict[str, Any] = json_format.MessageToDict(status)
            return found
    value: dict[str, Any] = {"code": code}
    if message:
        value["message"] = message
    return value


def status_details_bin(status: Mapping[str, Any] | bytes) -> bytes:
    """The wire's `grpc-status-details-bin` of a google.rpc.Status given as JSON."""
    status_pb2 = _protobuf()[1]
    text = status if isinstance(status, bytes) else json.dumps(dict(status))
    parsed = _parse(status_pb2.Status, text)
    data: bytes = parsed.SerializeToString()
    return data


def _unbase64(value: str) -> bytes:
    try:
        return base64.b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        return value.encode()


# --------------------------------------------------------------------------- the model


def metadata_headers(metadata: Metadata) -> Headers:
    """A call's metadata as headers: names lower case, `-bin` values (bytes) in base64."""
    pairs = []
    for key, value in metadata:
        if isinstance(value, bytes):
            value = base64.b64encode(value).decode("ascii")
        pairs.append((key.lower(), value))
    return Headers(pairs)


def metadata_of(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str | bytes]]:
    """Headers as a call's metadata again: `-bin` values decoded from base64 to bytes."""
    out: list[tuple[str, str | bytes]] = []
    for key, value in headers:
        name = key.lower()
        out.append((name, _unbase64(value) if name.endswith("-bin") else value))
    return out


def _json_of(message: Any) -> bytes:
    return message if isinstance(message, bytes) else to_json(message)


def request_of(method: str, metadata: Metadata, message: Any) -> Request:
    """A call's `Request`: `method` a name or a path, `message` a protobuf message or its
    JSON."""
    target = method if method.startswith("/") else target_of(method)
    return Request(
        method=GRPC_METHOD,
        target=target,
        headers=metadata_headers(metadata),
        body=_json_of(message),
        http_version="",
    )


def response_of(
    code: int,
    *,
    message: str = "",
    initial: Metadata = (),
    trailing: Metadata = (),
    reply: Any = None,
    messages: Iterable[Any] | None = None,
) -> Response:
    """A call's `Response` from what its client saw: the status code and message, the initial
    and trailing metadata, and the unary `reply` or a server stream's `messages` (protobuf
    messages or their JSON). A failed call without messages has its google.rpc.Status as the
    body; a stream that failed after messages keeps them, its status in the trailers."""
    trailing = list(trailing)
    trailers = metadata_headers((k, v) for k, v in trailing if k.lower() not in _CALL_END)
    events = None
    if messages is not None:
        events = tuple(SseEvent(data=_json_of(m).decode()) for m in messages)
    body = b""
    if code != 0:
        status = _status_value(code, message, trailing)
        if events:
            if status.get("message"):
                trailers = Headers([*trailers, (GRPC_MESSAGE, str(status["message"]))])
            if status.get("details"):
                compact = json.dumps(status, ensure_ascii=False)
                trailers = Headers([*trailers, (STATUS_DETAILS, compact)])
        else:
            events, body = None, json.dumps(status, ensure_ascii=False).encode()
    elif events is None and reply is not None:
        body = _json_of(reply)
    return Response(
        status=code,
        reason=status_name(code),
        headers=metadata_headers(initial),
        body=body,
        events=events,
        http_version=GRPC_VERSION,
        trailers=trailers,
    )


def call_status(response: Response) -> dict[str, Any]:
    """The google.rpc.Status a recorded reply ended with, as JSON: `{"code": 0}` for OK;
    `code`, `message`, `details` for a failure (from its body, or a stream's trailers)."""
    if response.status == 0:
        return {"code": 0}
    if response.events is None:
        value = response.json
        if isinstance(value, dict):
            return {**value, "code": response.status}
        return {"code": response.status}
    status: dict[str, Any] = {"code": response.status}
    text = response.trailers.get(STATUS_DETAILS)
    if text:
        try:
            found = json.loads(text)
        except ValueError:
            found = None
        if isinstance(found, dict):
            status.update(found, code=response.status)
    message = response.trailers.get(GRPC_MESSAGE)
    if message:
        status["message"] = message
    return status


def reply_trailing(response: Response) -> list[tuple[str, str | bytes]]:
    """The trailing metadata to send for a recorded reply: its trailers as metadata, the
    transcript's own status entries dropped, and `grpc-status-details-bin` when its status has
    details (what the SDK's client reads the A2A error from). The status code and message
    are the caller's to set (`response.status`, `call_status(response)["message"]`)."""
    kept = [(k, v) for k, v in response.trailers if k.lower() not in (STATUS_DETAILS, GRPC_MESSAGE)]
    trailing = metadata_of(kept)
    status = call_status(response)
    if response.status != 0 and status.get("details"):
        trailing.append((STATUS_DETAILS_BIN, status_details_bin(status)))
    return trailing


def card_interface(host: str, port: int, *, version: str = "1.0") -> dict[str, str]:
    """The agent card's gRPC interface (camelCase JSON, as a card is written): the url is
    `host:port`, as the SDK's gRPC client transport dials it."""
    return {"url": f"{host}:{port}", "protocolBinding": BINDING, "protocolVersion": version}


# --------------------------------------------------------------------------- A2A errors

ERROR_STATUS: Mapping[str, str] = {
    "TaskNotFoundError": "NOT_FOUND",
    "TaskNotCancelableError": "FAILED_PRECONDITION",
    "PushNotificationNotSupportedError": "FAILED_PRECONDITION",
    "UnsupportedOperationError": "FAILED_PRECONDITION",
    "ContentTypeNotSupportedError": "INVALID_ARGUMENT",
    "InvalidAgentResponseError": "INTERNAL",
    "ExtendedAgentCardNotConfiguredError": "FAILED_PRECONDITION",
    "ExtensionSupportRequiredError": "FAILED_PRECONDITION",
    "VersionNotSupportedError": "FAILED_PRECONDITION",
    "InvalidParamsError": "INVALID_ARGUMENT",
    "InvalidRequestError": "INVALID_ARGUMENT",
    "MethodNotFoundError": "NOT_FOUND",
    "InternalError": "INTERNAL",
}
"""The status a call ends with for each A2A error (spec §10; by the SDK's name for it);
the HTTP+JSON binding's error `status` is the same name."""
