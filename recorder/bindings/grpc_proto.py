"""The A2A service definition as a `.proto` file a gRPC client loads (httpyac, grpcurl).

The a2a-sdk ships only the compiled `a2a_pb2` (its serialized `FileDescriptorProto`), no
`a2a.proto`; a client that takes a proto (httpyac's `proto < ./a2a.proto`, grpcurl's
`-proto`) needs the text. `proto_text` prints it from the SDK's descriptor as the recorder
ships it (`recorder.bindings.grpc_messages`), so it says what the recorder speaks:

- proto3: messages with their nested messages and enums, fields (repeated, `optional` for
  proto3 presence, `map<K, V>` for map entries), real oneofs, enums, the service with its
  server-streaming methods, the file's standard options (`java_package` …) and `deprecated`.
- The google.api annotations (HTTP routes, field behaviour, method signatures) are dropped
  with their imports: they describe the HTTP+JSON mapping, and a client would need
  googleapis' protos to read them. The `google/protobuf/*` imports stay: protoc, grpcurl
  and protobufjs (httpyac's proto-loader) have the well-known types built in.

A message for protobufjs (`loader_object`): protobufjs's `fromObject`, which httpyac's
requests go through, reads ProtoJSON but for the well-known types, whose JSON is their own
(`Struct` as a plain object, `Value` as any JSON value, `Timestamp` as RFC 3339 text): it
drops those silently. `loader_object` writes them in the object form it reads (`{"fields":
{"k": {"stringValue": "v"}}}`, `{"seconds": "…", "nanos": …}`, `{"value": …}`).

Pure: text out; protobuf's descriptors are imported lazily.
"""

from __future__ import annotations

import json
from typing import Any

from recorder.errors import RecorderError

__all__ = ["PROTO_FILE", "PROTO_MARK", "loader_object", "proto_text"]

PROTO_FILE = "a2a.proto"
"""The file name the service definition is written as (what the exports refer to)."""
PROTO_MARK = "// printed by recorder from the a2a-sdk's descriptor"
"""The proto's first line: a file that starts with it is one recorder may write again."""

_DROPPED_IMPORTS = "google/api/"
_INDENT = "  "
# FieldDescriptorProto.Type -> its proto keyword (TYPE_GROUP, 10, has none in proto3)
_SCALARS = {
    1: "double",
    2: "float",
    3: "int64",
    4: "uint64",
    5: "int32",
    6: "fixed64",
    7: "fixed32",
    8: "bool",
    9: "string",
    12: "bytes",
    13: "uint32",
    15: "sfixed32",
    16: "sfixed64",
    17: "sint32",
    18: "sint64",
}
_MESSAGE, _ENUM = 11, 14
_REPEATED = 3
# the file options protoc knows without an import (descriptor.proto's FileOptions), in order
_FILE_OPTIONS = (
    "java_package",
    "java_outer_classname",
    "java_multiple_files",
    "go_package",
    "objc_class_prefix",
    "csharp_namespace",
    "php_namespace",
    "php_metadata_namespace",
    "ruby_package",
)


def _descriptor() -> Any:
    """The `a2a.proto` the recorder ships (the SDK's, `recorder.bindings.grpc_messages`) as a
    FileDescriptorProto."""
    from recorder.bindings.grpc_messages import a2a_file

    return a2a_file()


def proto_text(file: Any = None) -> str:
    """The `.proto` text of `file` (a proto3 FileDescriptorProto; default: the shipped
    `a2a.proto`), google.api annotations dropped."""
    if file is None:
        file = _descriptor()
    if file.syntax != "proto3":
        raise RecorderError(f"{file.name}: only proto3 files are printed, not {file.syntax!r}")
    lines = [PROTO_MARK + f" ({file.name}, package {file.package})", 'syntax = "proto3";', ""]
    lines.append(f"package {file.package};")
    imports = [name for name in file.dependency if not name.startswith(_DROPPED_IMPORTS)]
    if imports:
        lines.append("")
        lines.extend(f'import "{name}";' for name in imports)
    options = [
        f"option {name} = {_literal(getattr(file.options, name))};"
        for name in _FILE_OPTIONS
        if file.options.HasField(name)
    ]
    if options:
        lines.append("")
        lines.extend(options)
    printer = _Printer(file.package)
    for service in file.service:
        lines.append("")
        lines.extend(printer.service(service))
    for message in file.message_type:
        lines.append("")
        lines.extend(printer.message(message, f".{file.package}"))
    for enum in file.enum_type:
        lines.append("")
        lines.extend(printer.enum(enum))
    return "\n".join(lines) + "\n"


def _literal(value: object) -> str:
    """An option's value as proto text: a string in double quotes, a bool as a word."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)  # proto string escapes (\\, \", \n) are JSON's for these
    return str(value)


def _default_json_name(name: str) -> str:
    """protoc's json_name of a field: each underscore dropped, the letter after it upper."""
    out: list[str] = []
    upper = False
    for char in name:
        if char == "_":
            upper = True
            continue
        out.append(char.upper() if upper else char)
        upper = False
    return "".join(out)


class _Printer:
    """Messages, enums and the service of one package as proto text."""

    def __init__(self, package: str) -> None:
        self.package = f".{package}."

    def type_name(self, name: str) -> str:
        """A type reference: relative to the package when it is in it, else full."""
        if name.startswith(self.package):
            return name[len(self.package) :]
        return name.removeprefix(".")

    def service(self, service: Any) -> list[str]:
        lines = [f"service {service.name} {{"]
        for method in service.method:
            request = ("stream " if method.client_streaming else "") + self.type_name(
                method.input_type
            )
            reply = ("stream " if method.server_streaming else "") + self.type_name(
                method.output_type
            )
            lines.append(f"{_INDENT}rpc {method.name}({request}) returns ({reply});")
        lines.append("}")
        return lines

    def enum(self, enum: Any, depth: int = 0) -> list[str]:
        pad = _INDENT * depth
        lines = [f"{pad}enum {enum.name} {{"]
        if enum.options.allow_alias:
            lines.append(f"{pad}{_INDENT}option allow_alias = true;")
        for value in enum.value:
            deprecated = " [deprecated = true]" if value.options.deprecated else ""
            lines.append(f"{pad}{_INDENT}{value.name} = {value.number}{deprecated};")
        lines.append(f"{pad}}}")
        return lines

    def message(self, message: Any, scope: str, depth: int = 0) -> list[str]:
        pad = _INDENT * depth
        inner = pad + _INDENT
        full = f"{scope}.{message.name}"
        maps = {
            f"{full}.{nested.name}": nested
            for nested in message.nested_type
            if nested.options.map_entry
        }
        lines = [f"{pad}message {message.name} {{"]
        if message.options.deprecated:
            lines.append(f"{inner}option deprecated = true;")
        # a oneof of a proto3 `optional` field is synthetic: the field says `optional`
        real = {
            index
            for index, _ in enumerate(message.oneof_decl)
            if not any(
                f.HasField("oneof_index") and f.oneof_index == index and f.proto3_optional
                for f in message.field
            )
        }
        printed: set[int] = set()
        for field in message.field:
            in_oneof = field.HasField("oneof_index") and field.oneof_index in real
            if not in_oneof:
                lines.append(inner + self.field(field, maps))
                continue
            index = field.oneof_index
            if index in printed:
                continue
            printed.add(index)
            lines.append(f"{inner}oneof {message.oneof_decl[index].name} {{")
            for member in message.field:
                if member.HasField("oneof_index") and member.oneof_index == index:
                    lines.append(inner + _INDENT + self.field(member, maps))
            lines.append(f"{inner}}}")
        for nested in message.nested_type:
            if not nested.options.map_entry:
                lines.extend(self.message(nested, full, depth + 1))
        for enum in message.enum_type:
            lines.extend(self.enum(enum, depth + 1))
        for start, end in ((r.start, r.end) for r in message.reserved_range):
            lines.append(
                f"{inner}reserved {start}" + (f" to {end - 1};" if end - 1 > start else ";")
            )
        if message.reserved_name:
            names = ", ".join(json.dumps(name) for name in message.reserved_name)
            lines.append(f"{inner}reserved {names};")
        lines.append(f"{pad}}}")
        return lines

    def field(self, field: Any, maps: dict[str, Any]) -> str:
        """One field's declaration (no indent)."""
        entry = maps.get(field.type_name) if field.type == _MESSAGE else None
        if entry is not None:
            key, value = entry.field[0], entry.field[1]
            kind = f"map<{self.kind(key)}, {self.kind(value)}>"
        else:
            kind = self.kind(field)
            if field.label == _REPEATED:
                kind = f"repeated {kind}"
            elif field.proto3_optional:
                kind = f"optional {kind}"
        options = []
        if field.json_name and field.json_name != _default_json_name(field.name):
            options.append(f"json_name = {json.dumps(field.json_name)}")
        if field.options.deprecated:
            options.append("deprecated = true")
        if field.options.HasField("packed"):
            options.append(f"packed = {_literal(field.options.packed)}")
        suffix = f" [{', '.join(options)}]" if options else ""
        return f"{kind} {field.name} = {field.number}{suffix};"

    def kind(self, field: Any) -> str:
        if field.type in (_MESSAGE, _ENUM):
            return self.type_name(field.type_name)
        if field.type not in _SCALARS:
            raise RecorderError(f"field {field.name}: type {field.type} has no proto3 keyword")
        return _SCALARS[field.type]


# --------------------------------------------------------------------------- protobufjs

_WRAPPERS = frozenset(
    f"google.protobuf.{name}Value"
    for name in ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")
)


def loader_object(message: Any, value: Any) -> Any:
    """The ProtoJSON `value` of a message of type `message` (a protobuf Descriptor) with its
    well-known-type fields in protobufjs's object form; what it does not know (an unknown
    member, a `{{placeholder}}` where a timestamp goes) is left as it is."""
    full = message.full_name
    if full == "google.protobuf.Struct":
        return _struct(value) if isinstance(value, dict) else value
    if full == "google.protobuf.Value":
        return _value(value)
    if full == "google.protobuf.ListValue":
        return {"values": [_value(v) for v in value]} if isinstance(value, list) else value
    if full in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        return _seconds(full, value)
    if full in _WRAPPERS:
        return {"value": value}
    if not isinstance(value, dict):
        return value
    fields = {**message.fields_by_name, **message.fields_by_camelcase_name}
    out: dict[str, Any] = {}
    for key, item in value.items():
        field = fields.get(key)
        kind = None if field is None else field.message_type
        if field is None or kind is None:
            out[key] = item
        elif kind.GetOptions().map_entry:
            entry = kind.fields_by_name["value"].message_type
            out[key] = (
                {k: loader_object(entry, v) for k, v in item.items()}
                if entry is not None and isinstance(item, dict)
                else item
            )
        elif field.is_repeated and isinstance(item, list):
            out[key] = [loader_object(kind, v) for v in item]
        else:
            out[key] = loader_object(kind, item)
    return out


def _struct(value: dict[str, Any]) -> dict[str, Any]:
    return {"fields": {key: _value(item) for key, item in value.items()}}


def _value(value: Any) -> Any:
    """A google.protobuf.Value: which of its kinds the JSON value is."""
    if value is None:
        return {"nullValue": "NULL_VALUE"}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, (int, float)):
        return {"numberValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, list):
        return {"listValue": {"values": [_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"structValue": _struct(value)}
    return value


def _seconds(full: str, value: Any) -> Any:
    """A Timestamp's or a Duration's text as seconds (text: an int64) and nanos."""
    if not isinstance(value, str):
        return value
    from google.protobuf import duration_pb2, timestamp_pb2

    parsed = timestamp_pb2.Timestamp() if full.endswith("Timestamp") else duration_pb2.Duration()
    try:
        parsed.FromJsonString(value)
    except ValueError:
        return value
    return {"seconds": str(parsed.seconds), "nanos": parsed.nanos}
