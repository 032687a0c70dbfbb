"""The line `recorder record` prints per recorded exchange (issue 28): status, duration, in
steady columns (pure)."""

from __future__ import annotations

import pytest

from recorder.record.lines import jsonrpc_error_code, outcome, record_line


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "no task"}}', -32001),
        ('{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}', -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "result": {"error": {"code": 5}}}', None),
        (b'{"jsonrpc": "2.0", "id": 1, "result": {"text": "an \\"error\\""}}', None),
        (b'{"error": {"code": true}}', None),
        (b'{"error": "text"}', None),
        (b'["error"]', None),
        (b'not json "error"', None),
        (b"", None),
        (None, None),
    ],
)
def test_the_jsonrpc_error_code_of_a_reply(body: bytes | str | None, code: int | None) -> None:
    assert jsonrpc_error_code(body) == code


def test_the_outcome_says_status_error_code_or_frames() -> None:
    assert outcome(200) == "200"
    assert outcome(307) == "307"
    assert outcome(200, error_code=-32001) == "200 -32001"
    assert outcome(200, frames=14) == "200 14 frames"
    assert outcome(200, frames=1) == "200 1 frame"
    assert outcome(500, frames=0) == "500 0 frames"


def test_lines_keep_their_columns() -> None:
    lines = [
        record_line("200", 0.0031, "GetTask", "out/02-get-task.http"),
        record_line("200 -32001", 0.012, "SendMessage", "out/03-send-message.http"),
        record_line("200 14 frames", 0.85, "SendStreamingMessage", "out/04-review.http"),
        record_line("307", 0.0008, "GET /old", "out/05-get-old.http"),
        record_line("200", 12.3456, "GetTask", "out/06-get-task.http"),
    ]
    assert lines[:4] == [
        "recorded 200               3.1 ms  GetTask -> out/02-get-task.http",
        "recorded 200 -32001         12 ms  SendMessage -> out/03-send-message.http",
        "recorded 200 14 frames     850 ms  SendStreamingMessage -> out/04-review.http",
        "recorded 307               0.8 ms  GET /old -> out/05-get-old.http",
    ]
    # the titles start in one column
    assert len({line.index(" ms  ") for line in lines}) == 1
    assert record_line("200", -1.0, "x", "y") == "recorded 200               0.0 ms  x -> y"
