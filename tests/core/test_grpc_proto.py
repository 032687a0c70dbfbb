"""The A2A service definition printed from the SDK's descriptor (`recorder.bindings.grpc_proto`),
read back by the parsers the clients use: protoc (grpcio-tools, when installed) must compile it
to the SDK's own descriptor, less the google.api annotations; protobufjs (httpyac's, under
node, when `make tools` installed it) must see the same messages, fields, enums and methods."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from a2a.types import a2a_pb2
from google.protobuf import descriptor_pb2

from recorder.bindings import grpc as binding
from recorder.bindings.grpc_proto import PROTO_FILE, PROTO_MARK, loader_object, proto_text
from recorder.errors import RecorderError

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / ".tools" / "node_modules"
NODE = shutil.which("node")


def sdk_file() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto()
    a2a_pb2.DESCRIPTOR.CopyToProto(file)
    return file


def without_annotations(file: descriptor_pb2.FileDescriptorProto) -> Any:
    """`file` as the printed proto can say it: no google.api options or imports, fields in
    number order, no source info."""
    file = descriptor_pb2.FileDescriptorProto.FromString(file.SerializeToString())
    file.ClearField("source_code_info")
    kept = [name for name in file.dependency if not name.startswith("google/api/")]
    del file.dependency[:]
    file.dependency.extend(kept)

    def clean(message: Any) -> None:
        fields = sorted(message.field, key=lambda f: f.number)
        for field in fields:
            deprecated = field.options.deprecated
            field.ClearField("options")
            if deprecated:
                field.options.deprecated = True
        del message.field[:]
        message.field.extend(fields)
        for nested in message.nested_type:
            clean(nested)

    for message in file.message_type:
        clean(message)
    for service in file.service:
        for method in service.method:
            method.ClearField("options")
    return file


def test_protoc_compiles_the_printed_proto_to_the_sdks_descriptor(tmp_path: Path) -> None:
    protoc = pytest.importorskip("grpc_tools.protoc")
    import grpc_tools

    (tmp_path / "a2a.proto").write_text(proto_text())
    includes = Path(grpc_tools.__file__).parent / "_proto"  # the well-known types
    out = tmp_path / "set.pb"
    arguments = ["protoc", f"-I{tmp_path}", f"-I{includes}", f"--descriptor_set_out={out}"]
    assert protoc.main([*arguments, str(tmp_path / "a2a.proto")]) == 0
    compiled = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file[0]
    expected = without_annotations(sdk_file())
    got = without_annotations(compiled)
    assert got.package == expected.package == "lf.a2a.v1"
    assert list(got.dependency) == list(expected.dependency)
    assert got.options == expected.options
    assert [m.name for m in got.message_type] == [m.name for m in expected.message_type]
    for printed, sdk in zip(got.message_type, expected.message_type, strict=True):
        assert printed == sdk, sdk.name
    assert list(got.enum_type) == list(expected.enum_type)
    assert list(got.service) == list(expected.service)


# what protobufjs (the parser inside httpyac's @grpc/proto-loader) reads from the proto
_WALK = r"""
const protobuf = require("protobufjs");
const root = new protobuf.Root().loadSync(process.argv[1], {keepCase: true});
root.resolveAll();
const out = {messages: {}, enums: {}, methods: {}};
function walk(ns) {
  for (const item of ns.nestedArray) {
    if (item instanceof protobuf.Type) {
      const fields = {};
      for (const f of item.fieldsArray) {
        const oneof = f.partOf && !f.partOf.name.startsWith("_") ? f.partOf.name : null;
        fields[f.name] = [f.id, f.resolvedType ? f.resolvedType.fullName : f.type,
                          f.map ? "map:" + f.keyType : f.repeated ? "repeated" : "", oneof];
      }
      out.messages[item.fullName] = fields;
    } else if (item instanceof protobuf.Enum) {
      out.enums[item.fullName] = item.values;
    } else if (item instanceof protobuf.Service) {
      for (const m of item.methodsArray) {
        out.methods[m.name] = [m.resolvedRequestType.fullName,
                               m.resolvedResponseType.fullName, !!m.responseStream];
      }
    }
    if (item.nestedArray) walk(item);
  }
}
walk(root.lookup("lf.a2a.v1"));
console.log(JSON.stringify(out));
"""

_SCALAR_NAMES = {
    value: name.removeprefix("TYPE_").lower()
    for name, value in descriptor_pb2.FieldDescriptorProto.Type.items()
}


def _sdk_as_protobufjs_sees_it() -> dict[str, Any]:
    out: dict[str, Any] = {"messages": {}, "enums": {}, "methods": {}}

    def walk(message: Any, scope: str) -> None:
        full = f"{scope}.{message.name}"
        if message.options.map_entry:
            return
        entries = {f"{full}.{n.name}": n for n in message.nested_type if n.options.map_entry}
        fields = {}
        for field in message.field:
            entry = entries.get(field.type_name)
            if entry is not None:
                key, value = entry.field
                kind = value.type_name or _SCALAR_NAMES[value.type]
                fields[field.name] = [field.number, kind, f"map:{_SCALAR_NAMES[key.type]}", None]
                continue
            kind = field.type_name or _SCALAR_NAMES[field.type]
            rule = "repeated" if field.label == field.LABEL_REPEATED else ""
            oneof = None
            if field.HasField("oneof_index") and not field.proto3_optional:
                oneof = message.oneof_decl[field.oneof_index].name
            fields[field.name] = [field.number, kind, rule, oneof]
        out["messages"][full] = fields
        for nested in message.nested_type:
            walk(nested, full)
        for enum in message.enum_type:
            out["enums"][f"{full}.{enum.name}"] = {v.name: v.number for v in enum.value}

    file = sdk_file()
    for message in file.message_type:
        walk(message, f".{file.package}")
    for enum in file.enum_type:
        out["enums"][f".{file.package}.{enum.name}"] = {v.name: v.number for v in enum.value}
    for method in file.service[0].method:
        streams = method.server_streaming
        out["methods"][method.name] = [method.input_type, method.output_type, streams]
    return out


@pytest.mark.skipif(
    NODE is None or not (NODE_MODULES / "protobufjs").is_dir(),
    reason="needs node and protobufjs (httpyac's, `make tools`)",
)
def test_protobufjs_reads_the_sdks_messages_fields_enums_and_methods(tmp_path: Path) -> None:
    proto = tmp_path / PROTO_FILE
    proto.write_text(proto_text())
    assert NODE is not None
    completed = subprocess.run(
        [NODE, "-e", _WALK, str(proto)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"NODE_PATH": str(NODE_MODULES), "PATH": "/usr/bin:/bin"},
    )
    assert completed.returncode == 0, completed.stderr
    seen = json.loads(completed.stdout)
    expected = _sdk_as_protobufjs_sees_it()
    assert seen["methods"] == expected["methods"]
    assert seen["enums"] == expected["enums"]
    assert sorted(seen["messages"]) == sorted(expected["messages"])
    for name, fields in expected["messages"].items():
        assert seen["messages"][name] == fields, name


def test_the_printed_proto_drops_the_google_api_annotations_and_keeps_the_well_known_imports() -> (
    None
):
    text = proto_text()
    assert text.startswith(PROTO_MARK)
    assert "google.api" not in text and "google/api" not in text
    assert 'import "google/protobuf/struct.proto";' in text
    assert "  rpc SendStreamingMessage(SendMessageRequest) returns (stream StreamResponse);" in text
    assert "  optional int32 history_length = 3;" in text
    assert "  map<string, SecurityScheme> security_schemes = 8;" in text
    assert "    ImplicitOAuthFlow implicit = 3 [deprecated = true];" in text


def test_a_proto2_file_is_refused_by_name() -> None:
    file = descriptor_pb2.FileDescriptorProto(name="old.proto", syntax="proto2")
    with pytest.raises(RecorderError, match=r"old\.proto: only proto3"):
        proto_text(file)


# proto-loader (what httpyac sends a GRPC request's body through) serializes a request
_ENCODE = r"""
const loader = require("@grpc/proto-loader");
const definition = loader.loadSync(process.argv[1], {enums: String, longs: String});
const service = definition["lf.a2a.v1.A2AService"];
const out = {};
for (const [method, body] of Object.entries(JSON.parse(process.argv[2]))) {
  out[method] = service[method].requestSerialize(body).toString("base64");
}
console.log(JSON.stringify(out));
"""

WELL_KNOWN = {
    "SendMessage": {
        "message": {
            "messageId": "m-1",
            "role": "ROLE_USER",
            "parts": [
                {"text": "hi", "metadata": {"lang": "en", "n": 2}},
                {"data": {"list": [1, "two", None, True], "nested": {"x": {"y": []}}}},
            ],
            "metadata": {"trace": "{{trace_id}}"},
        },
        "metadata": {"empty": {}},
    },
    "ListTasks": {"statusTimestampAfter": "2026-12-01T18:13:06.583833Z", "pageSize": 5},
    "CancelTask": {"id": "{{task_id_1}}", "metadata": {"reason": "done"}},
}


@pytest.mark.skipif(
    NODE is None or not (NODE_MODULES / "@grpc" / "proto-loader").is_dir(),
    reason="needs node and @grpc/proto-loader (httpyac's, `make tools`)",
)
def test_proto_loader_sends_the_well_known_types_of_a_loader_object_whole(
    tmp_path: Path,
) -> None:
    proto = tmp_path / PROTO_FILE
    proto.write_text(proto_text())
    bodies = {
        name: loader_object(binding.message_type(name).DESCRIPTOR, value)
        for name, value in WELL_KNOWN.items()
    }
    assert bodies["SendMessage"]["message"]["metadata"] == {
        "fields": {"trace": {"stringValue": "{{trace_id}}"}}
    }
    assert NODE is not None
    completed = subprocess.run(
        [NODE, "-e", _ENCODE, str(proto), json.dumps(bodies)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"NODE_PATH": str(NODE_MODULES), "PATH": "/usr/bin:/bin"},
    )
    assert completed.returncode == 0, completed.stderr
    for name, data in json.loads(completed.stdout).items():
        sent = binding.message_type(name).FromString(base64.b64decode(data))
        assert sent == binding.to_message(name, json.dumps(WELL_KNOWN[name])), name
    # what protobufjs makes of the ProtoJSON itself: the Struct dropped
    plain = {"SendMessage": {"message": {"messageId": "m-2", "metadata": {"k": "v"}}}}
    dropped = subprocess.run(
        [NODE, "-e", _ENCODE, str(proto), json.dumps(plain)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"NODE_PATH": str(NODE_MODULES), "PATH": "/usr/bin:/bin"},
    )
    data = json.loads(dropped.stdout)["SendMessage"]
    message = binding.message_type("SendMessage").FromString(base64.b64decode(data)).message
    assert message.message_id == "m-2" and not message.metadata.fields
