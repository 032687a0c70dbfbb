"""The A2A 1.0 gRPC messages the recorder ships (`recorder.bindings.grpc_messages`,
`recorder/bindings/a2a_v1.py`): the SDK's descriptor less its google.api annotations, built in
a pool of the recorder's own, so the gRPC binding needs no a2a-sdk and lives beside one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from a2a.types import a2a_pb2
from google.protobuf import descriptor_pb2

from recorder.bindings import grpc as binding
from recorder.bindings.grpc_messages import (
    a2a_file,
    message_class,
    module_text,
    without_annotations,
)

ROOT = Path(__file__).resolve().parents[2]


def sdk_file() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto()
    a2a_pb2.DESCRIPTOR.CopyToProto(file)
    return file


def test_the_shipped_descriptor_is_the_sdks_less_its_annotations() -> None:
    shipped = a2a_file()
    assert shipped == without_annotations(sdk_file()), (
        "recorder/bindings/a2a_v1.py is not the installed a2a-sdk's a2a.proto: write it anew "
        "with `python -m recorder.bindings.grpc_messages > recorder/bindings/a2a_v1.py`"
    )
    # every message, enum and method of the SDK's is there, in the SDK's order
    sdk = sdk_file()
    assert [m.name for m in shipped.message_type] == [m.name for m in sdk.message_type]
    assert [e.name for e in shipped.enum_type] == [e.name for e in sdk.enum_type]
    assert [(m.name, m.server_streaming) for m in shipped.service[0].method] == [
        (m.name, m.server_streaming) for m in sdk.service[0].method
    ]


def test_annotations_and_their_imports_are_left_out_the_rest_kept() -> None:
    sdk = sdk_file()
    assert any(name.startswith("google/api/") for name in sdk.dependency)
    assert any(m.options.ListFields() for m in sdk.service[0].method)  # (HTTP routes)
    shipped = without_annotations(sdk)
    assert list(shipped.dependency) == [
        "google/protobuf/empty.proto",
        "google/protobuf/struct.proto",
        "google/protobuf/timestamp.proto",
    ]
    assert not any(m.HasField("options") for m in shipped.service[0].method)
    # a field's options hold `deprecated` at most (field_behavior and its bytes are gone)
    only_deprecated = descriptor_pb2.FieldOptions(deprecated=True).SerializeToString()
    options = {
        f.options.SerializeToString()
        for m in shipped.message_type
        for f in m.field
        if f.HasField("options")
    }
    assert options == {only_deprecated}
    # a field's own options (deprecated) stay
    deprecated = [
        (m.name, f.name) for m in sdk.message_type for f in m.field if f.options.deprecated
    ]
    assert deprecated == [
        (m.name, f.name) for m in shipped.message_type for f in m.field if f.options.deprecated
    ]
    assert shipped.options.java_package == sdk.options.java_package
    assert not shipped.HasField("source_code_info")


def test_the_messages_speak_the_sdks_wire_and_json_beside_the_sdk() -> None:
    # the SDK's a2a.proto is in protobuf's default pool here: the recorder's are apart
    assert "a2a.proto" in str(a2a_pb2.DESCRIPTOR.name)
    ours = message_class("Task")
    assert ours is not a2a_pb2.Task
    assert ours.DESCRIPTOR.full_name == "lf.a2a.v1.Task"
    sdk = a2a_pb2.Task(id="t-1", context_id="c-1")
    sdk.status.state = a2a_pb2.TASK_STATE_COMPLETED
    sdk.status.timestamp.FromJsonString("2026-01-02T03:04:05Z")
    sdk.metadata.update({"k": ["v", 1, None]})
    back = ours.FromString(sdk.SerializeToString())
    assert binding.to_value(back) == binding.to_value(sdk)
    assert binding.to_value(back)["status"]["timestamp"] == "2026-01-02T03:04:05Z"
    assert back.SerializeToString(deterministic=True) == sdk.SerializeToString(deterministic=True)
    # each method's types are the recorder's
    for name, method in binding.METHODS.items():
        request = binding.message_type(name)
        assert request.DESCRIPTOR.full_name.endswith(method.request.rpartition(".")[2])


def test_the_generated_module_reads_back_as_its_descriptor() -> None:
    file = without_annotations(sdk_file())
    text = module_text(file, "a test")
    space: dict[str, object] = {}
    exec(compile(text, "a2a_v1.py", "exec"), space)
    import base64

    assert (
        descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(str(space["DESCRIPTOR"])))
        == file
    )
    assert all(len(line) <= 100 for line in text.splitlines())
    # the module in the package is exactly what the generator writes (but for its source)
    shipped = (ROOT / "recorder" / "bindings" / "a2a_v1.py").read_text(encoding="utf-8")
    assert shipped.split('"""', 2)[2] == text.split('"""', 2)[2]


def test_the_grpc_binding_works_with_no_a2a_sdk_importable() -> None:
    # a2a made unimportable, as in a venv without the SDK: ProtoJSON, `check`'s message
    # problems, the proto printed for the exports
    code = (
        "import sys; sys.modules['a2a'] = None\n"
        "from recorder.bindings import grpc as g\n"
        "from recorder.bindings.grpc_proto import proto_text\n"
        "m = g.to_message('GetTask', b'{\"id\": \"t-1\"}')\n"
        "print(g.to_json(m).decode())\n"
        "print(g.message_problem('GetTask', b'{\"taskId\": 1}'))\n"
        "print(proto_text().splitlines()[3])\n"
        "print(sorted(n for n in sys.modules if n.startswith('a2a') and sys.modules[n]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        '{"id": "t-1"}',
        "(('taskId',), 'not a lf.a2a.v1.GetTaskRequest: no field named \"taskId\"')",
        "package lf.a2a.v1;",
        "[]",
    ]
