"""`recorder.bindings.grpc.to_value`: a message's ProtoJSON value made by a walk of its set
fields is what `json_format.MessageToDict` makes, keys in the same order, for every message
type of A2A's service with every field set (each kind: strings, bytes, numbers, enums, maps,
repeated fields, Struct, Timestamp, oneofs), and for what the walk leaves to it (an enum
number its type does not name)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from a2a.types import a2a_pb2
from google.protobuf import json_format

from recorder.bindings import grpc as binding

_DEPTH = 4


def _sample(field: Any, depth: int) -> Any:
    """A value for a scalar field (None: a message field, filled in place)."""
    kind = field.type
    if kind == field.TYPE_STRING:
        return f"{field.name}-é-1"
    if kind == field.TYPE_BYTES:
        return b"\x00\xff raw"
    if kind == field.TYPE_BOOL:
        return True
    if kind in (field.TYPE_INT64, field.TYPE_SINT64, field.TYPE_SFIXED64):
        return -(2**40)
    if kind in (field.TYPE_UINT64, field.TYPE_FIXED64):
        return 2**41
    if kind in (field.TYPE_FLOAT, field.TYPE_DOUBLE):
        return 1.5
    if kind == field.TYPE_ENUM:
        values = field.enum_type.values
        return values[min(1, len(values) - 1)].number
    if kind in (field.TYPE_MESSAGE, field.TYPE_GROUP):
        return None
    return 7  # (the 32-bit integers)


def _fill(message: Any, depth: int = 0) -> Any:
    """`message` with every field set (a oneof's last member wins), `_DEPTH` levels deep."""
    descriptor = message.DESCRIPTOR
    name = descriptor.full_name
    if name == "google.protobuf.Struct":
        message.update({"k": "v", "n": 1.5, "list": [1, "two", None], "nested": {"t": True}})
        return message
    if name == "google.protobuf.Timestamp":
        message.FromSeconds(1_700_000_000)
        return message
    if name == "google.protobuf.Value":
        message.string_value = "value"
        return message
    if depth >= _DEPTH or name.startswith("google.protobuf."):
        return message
    for field in descriptor.fields:
        target = getattr(message, field.name)
        sample = _sample(field, depth)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            value = _sample(value_field, depth)
            if value is None:
                _fill(target["key"], depth + 1)
            else:
                target["key"] = value
        elif field.is_repeated:
            for _ in range(2):
                if sample is None:
                    _fill(target.add(), depth + 1)
                else:
                    target.append(sample)
        elif sample is None:
            _fill(target, depth + 1)
        else:
            setattr(message, field.name, sample)
    return message


def _types() -> list[Any]:
    return [a2a_pb2.__dict__[name] for name in sorted(a2a_pb2.DESCRIPTOR.message_types_by_name)]


@pytest.mark.parametrize("message_type", _types(), ids=lambda t: t.DESCRIPTOR.name)
def test_every_message_types_value_is_message_to_dicts(message_type: Any) -> None:
    message = _fill(message_type())
    expected = json_format.MessageToDict(message, preserving_proto_field_name=False)
    value = binding.to_value(message)
    assert json.dumps(value) == json.dumps(expected)  # (keys in the same order too)


def test_the_walk_covers_the_messages_a_stream_sends() -> None:
    message = _fill(a2a_pb2.StreamResponse())
    assert binding._walked(message, json_format) is not None  # (not left to MessageToDict)


def test_an_enum_number_its_type_does_not_name_is_left_to_message_to_dict() -> None:
    message = a2a_pb2.TaskStatus(state=99)  # type: ignore[arg-type]
    assert binding._walked(message, json_format) is None
    assert binding.to_value(message) == {"state": 99}


def _oneof_members() -> list[tuple[Any, str]]:
    """(message type, field) of each oneof member of A2A's messages (`_fill` sets the last)."""
    return [
        (message_type, field.name)
        for message_type in _types()
        for oneof in message_type.DESCRIPTOR.oneofs
        for field in oneof.fields
    ]


@pytest.mark.parametrize(
    ("message_type", "member"),
    _oneof_members(),
    ids=lambda item: item if isinstance(item, str) else item.DESCRIPTOR.name,
)
def test_each_oneof_members_value_is_message_to_dicts(message_type: Any, member: str) -> None:
    message = message_type()
    field = message.DESCRIPTOR.fields_by_name[member]
    sample = _sample(field, 0)
    if sample is None:
        _fill(getattr(message, member), 1)
    else:
        setattr(message, member, sample)
    expected = json_format.MessageToDict(message, preserving_proto_field_name=False)
    assert json.dumps(binding.to_value(message)) == json.dumps(expected)
