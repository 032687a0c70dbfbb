"""`recorder check` on gRPC calls: each message against its type, at its field's line."""

from __future__ import annotations

from pathlib import Path

import pytest

from recorder.checking import check_paths

GOOD = """\
# recorder-format: 1

### SendStreamingMessage
GRPC /lf.a2a.v1.A2AService/SendStreamingMessage
a2a-version: 1.0

{
  "message": {
    "messageId": "m-1",
    "role": "ROLE_USER",
    "parts": [
      {
        "text": "hello"
      }
    ]
  }
}

GRPC 0 OK

data: {"task": {"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_SUBMITTED"}}}

data: {"statusUpdate": {"taskId": "t-1", "status": {"state": "TASK_STATE_COMPLETED"}}}

# @trailers
x-served-by: kit

### GetTask
GRPC /lf.a2a.v1.A2AService/GetTask

{
  "id": "t-9"
}

GRPC 5 NOT_FOUND

{
  "code": 5,
  "message": "Task not found",
  "details": [
    {
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      "reason": "TASK_NOT_FOUND",
      "domain": "a2a-protocol.org"
    }
  ]
}

### DeleteTaskPushNotificationConfig
GRPC /lf.a2a.v1.A2AService/DeleteTaskPushNotificationConfig

{
  "taskId": "t-1",
  "id": "hook-1"
}

GRPC 0 OK

{}
"""

BAD = """\
# recorder-format: 1

### GetTask
GRPC /lf.a2a.v1.A2AService/GetTask

{
  "taskId": "t-1"
}

GRPC 0 OK

{
  "id": "t-1",
  "status": {
    "state": "TASK_STATE_NOPE"
  }
}

### SubscribeToTask
GRPC /lf.a2a.v1.A2AService/SubscribeToTask

{
  "id": "t-1"
}

GRPC 5 NOT_FOUND

data: {"task": {"id": "t-1"}}

data: {"task": {"idd": "t-1"}}

# @trailers
grpc-message: gone
grpc-status-details: {"code": 5, "details": [{"@type": "type.googleapis.com/google.rpc.Nope"}]}

### GetTask
GRPC /lf.a2a.v1.A2AService/GetTask

{}

GRPC 3 INVALID_ARGUMENT

{
  "code": 4
}

### SendMessage
GRPC /lf.a2a.v1.A2AService/SendMessage

{}

GRPC 0 OK

data: {"message": {}}

### SubscribeToTask
GRPC /lf.a2a.v1.A2AService/SubscribeToTask

{}

GRPC 0 OK

{
  "task": {}
}

### nope
GRPC /lf.a2a.v1.A2AService/Nope

{}

GRPC 12 UNIMPLEMENTED

{
  "code": 12
}
"""


def test_real_shaped_grpc_calls_pass(tmp_path: Path) -> None:
    path = tmp_path / "01-grpc.http"
    path.write_text(GOOD)
    assert check_paths([path], canonical=True) == (1, [])


def test_each_mistake_is_named_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "01-grpc.http"
    path.write_text(BAD)
    count, problems = check_paths([path])
    assert count == 1
    assert [(p.line, p.message) for p in problems] == [
        (7, 'the request is not a lf.a2a.v1.GetTaskRequest: no field named "taskId"'),
        (
            15,
            "the reply is not a lf.a2a.v1.Task: status.state: Invalid enum value "
            "TASK_STATE_NOPE for enum type lf.a2a.v1.TaskState",
        ),
        (30, 'the message of frame 2 is not a lf.a2a.v1.StreamResponse: no field named "idd"'),
        (
            34,
            "the trailer grpc-status-details is not a google.rpc.Status: details: Can not find "
            "message descriptor by type_url: type.googleapis.com/google.rpc.Nope",
        ),
        (41, "the status line says 3, its body 4"),
        (54, "SendMessage replies one message, not a stream's frames"),
        (63, "SubscribeToTask replies a stream: its messages as frames"),
        (68, "/lf.a2a.v1.A2AService/Nope: not a method of the A2A service lf.a2a.v1.A2AService"),
    ]
    lines = BAD.split("\n")
    assert lines[6].startswith('  "taskId"')
    assert lines[14].startswith('    "state"')
    assert lines[29].startswith('data: {"task": {"idd"')
    assert lines[33].startswith("grpc-status-details:")
    assert lines[40].startswith("GRPC 3")
    assert lines[53].startswith('data: {"message"')
    assert lines[62] == "{"
    assert lines[67].startswith("GRPC /lf.a2a.v1.A2AService/Nope")


def test_without_the_sdk_a_grpc_call_cannot_be_checked_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    path = tmp_path / "01-grpc.http"
    path.write_text(GOOD)
    import google.protobuf

    # as if not installed: no attribute of the package, and no module to import
    monkeypatch.delattr(google.protobuf, "json_format")
    monkeypatch.setitem(sys.modules, "google.protobuf.json_format", None)
    assert check_paths([path])[0] == 1
    _, problems = check_paths([path])
    assert [(p.line, p.message) for p in problems] == [
        (
            4,
            "cannot check a gRPC call: gRPC needs the grpc extra: pip install 'a2a-recorder[grpc]'",
        )
    ]


UNDECODABLE = """\
# recorder-format: 1

### SendMessage: bytes that are no SendMessageRequest
GRPC /lf.a2a.v1.A2AService/SendMessage
a2a-version: 1.0

# recorder-body: base64
/wBnYXJiYWdlkw==

GRPC {status}

{reply}
"""
FAILED_CALL = '{\n  "code": 13,\n  "message": "Exception deserializing request!"\n}'
ANSWERED = '{\n  "message": {\n    "messageId": "m-1",\n    "role": "ROLE_AGENT"\n  }\n}'


def test_a_request_that_is_no_message_passes_when_the_agent_failed_the_call(
    tmp_path: Path,
) -> None:
    # what the recorder writes for a client's garbage bytes (kept as they came, in base64):
    # the agent's failure is the record of it, as a 400 is for a malformed HTTP body
    path = tmp_path / "garbage.http"
    path.write_text(UNDECODABLE.format(status="13 INTERNAL", reply=FAILED_CALL))
    assert check_paths([path]) == (1, [])


def test_a_request_that_is_no_message_fails_when_the_agent_answered_it(tmp_path: Path) -> None:
    path = tmp_path / "garbage.http"
    path.write_text(UNDECODABLE.format(status="0 OK", reply=ANSWERED))
    count, problems = check_paths([path])
    assert count == 1
    assert [(p.line, p.message.split(":")[0]) for p in problems] == [
        (7, "the request body is not JSON")
    ]
