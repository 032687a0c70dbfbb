"""The A2A 1.0 gRPC messages (`lf.a2a.v1`) the recorder reads and writes, from a descriptor it
ships (`recorder/bindings/a2a_v1.py`): the gRPC binding needs protobuf (and grpcio for its
sockets), not the a2a-sdk, so it works beside whatever a2a-sdk 1.x a user's agent pins.

- The shipped descriptor is the SDK's `a2a.proto` (its FileDescriptorProto, serialized), less
  the google.api annotations (HTTP routes, field behaviour, method signatures: they describe
  the HTTP+JSON mapping and would need googleapis' annotation protos). The messages, fields,
  enums, oneofs and methods are the SDK's, so the wire and the ProtoJSON are the same.
  `python -m recorder.bindings.grpc_messages` writes the module anew from the installed SDK;
  tests/core/test_grpc_messages.py holds it to the SDK's descriptor.
- The message classes are built at run time (`message_factory.GetMessageClass`) in a
  descriptor pool of the recorder's own, not protobuf's default one. Two reasons: an a2a-sdk
  loaded in the same process (the user's agent under the pytest plugin, the bundled kit)
  registers `a2a.proto` in the default pool, and protobuf refuses a second file that defines
  the same symbols; and no protoc-generated code means no gencode/runtime version check, so
  any protobuf from 5.26 to 7 that an agent's SDK brings works (protoc's Python code refuses a
  runtime older than the protoc that wrote it).

The well-known types the file imports (Struct, Timestamp, Empty) are added to the pool from
the runtime's own descriptors; ProtoJSON (`json_format`) knows them by name in any pool.
"""

from __future__ import annotations

import base64
import functools
import sys
import textwrap
from typing import Any

from recorder.errors import RecorderError

__all__ = ["MISSING", "a2a_file", "message_class", "module_text", "without_annotations"]

MISSING = "gRPC needs the grpc extra: pip install 'a2a-recorder[grpc]'"
_ANNOTATIONS = "google/api/"
# the well-known types a2a.proto imports, by file name -> the module that holds them
_WELL_KNOWN = {
    "google/protobuf/empty.proto": "empty_pb2",
    "google/protobuf/struct.proto": "struct_pb2",
    "google/protobuf/timestamp.proto": "timestamp_pb2",
}
_LINE = 92  # base64 characters a line of the generated module


def _descriptor_pb2() -> Any:
    try:
        from google.protobuf import descriptor_pb2
    except ImportError:
        raise RecorderError(MISSING) from None
    return descriptor_pb2


def a2a_file() -> Any:
    """The shipped `a2a.proto` as a FileDescriptorProto (a fresh copy)."""
    from recorder.bindings.a2a_v1 import DESCRIPTOR

    return _descriptor_pb2().FileDescriptorProto.FromString(base64.b64decode(DESCRIPTOR))


@functools.cache
def _pool() -> Any:
    """The recorder's own descriptor pool, `a2a.proto` and the well-known types it imports."""
    try:
        import importlib

        from google.protobuf import descriptor_pool
    except ImportError:
        raise RecorderError(MISSING) from None
    file = a2a_file()
    pool = descriptor_pool.DescriptorPool()
    for name in file.dependency:
        module = importlib.import_module(f"google.protobuf.{_WELL_KNOWN[name]}")
        pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
    pool.AddSerializedFile(file.SerializeToString())
    return pool


@functools.cache
def message_class(name: str) -> Any:
    """The class of message `name` of `lf.a2a.v1` (`SendMessageRequest`, `Task` …);
    KeyError for a name the package does not define."""
    from google.protobuf import message_factory

    package = a2a_file().package
    return message_factory.GetMessageClass(_pool().FindMessageTypeByName(f"{package}.{name}"))


def without_annotations(file: Any) -> Any:
    """A copy of the FileDescriptorProto `file` less its google.api imports and the options
    they define (each extension set on a field's, method's, service's or file's options), and
    less its source info (pure)."""
    stripped = type(file).FromString(file.SerializeToString())
    stripped.ClearField("source_code_info")
    kept = [name for name in stripped.dependency if not name.startswith(_ANNOTATIONS)]
    del stripped.dependency[:]
    stripped.dependency.extend(kept)
    _clear_extensions(stripped.options)

    def clean(message: Any) -> None:
        _clear_extensions(message.options)
        for field in message.field:
            _clear_extensions(field.options)
        for nested in message.nested_type:
            clean(nested)

    for message in stripped.message_type:
        clean(message)
    for service in stripped.service:
        _clear_extensions(service.options)
        for method in service.method:
            _clear_extensions(method.options)
    return _without_empty_options(stripped)


def _clear_extensions(options: Any) -> None:
    for field, _ in options.ListFields():
        if field.is_extension:
            options.ClearExtension(field)
    # (an option of an import not loaded here is kept as unknown fields: dropped too)
    options.DiscardUnknownFields()


def _without_empty_options(file: Any) -> Any:
    """Options messages left empty are cleared (so a field without options has none set)."""

    def clear_if_empty(holder: Any) -> None:
        if holder.HasField("options") and not holder.options.ListFields():
            holder.ClearField("options")

    def walk(message: Any) -> None:
        clear_if_empty(message)
        for field in message.field:
            clear_if_empty(field)
        for nested in message.nested_type:
            walk(nested)

    clear_if_empty(file)
    for message in file.message_type:
        walk(message)
    for service in file.service:
        clear_if_empty(service)
        for method in service.method:
            clear_if_empty(method)
    return file


def module_text(file: Any, source: str) -> str:
    """The text of `recorder/bindings/a2a_v1.py` for the FileDescriptorProto `file` (already
    without annotations), `source` saying where it came from (pure)."""
    encoded = base64.b64encode(file.SerializeToString()).decode("ascii")
    lines = textwrap.wrap(encoded, _LINE)
    body = "\n".join(f'    "{line}"' for line in lines)
    return (
        f'"""The A2A 1.0 service `{file.package}` ({file.name}) as a serialized\n'
        "FileDescriptorProto in base64, google.api annotations left out: what\n"
        "`recorder.bindings.grpc_messages` builds the gRPC messages from.\n\n"
        f"Generated from {source}\n"
        "by `python -m recorder.bindings.grpc_messages`: do not edit.\n"
        '"""\n\n'
        "DESCRIPTOR = (\n"
        f"{body}\n"
        ")\n"
    )


def main() -> None:
    """Write the module anew from the installed a2a-sdk's descriptor (to stdout)."""
    from importlib.metadata import version

    from a2a.types import a2a_pb2

    file = _descriptor_pb2().FileDescriptorProto()
    a2a_pb2.DESCRIPTOR.CopyToProto(file)
    source = f"the a2a-sdk {version('a2a-sdk')}'s {file.name}"
    sys.stdout.write(module_text(without_annotations(file), source))


if __name__ == "__main__":
    main()
