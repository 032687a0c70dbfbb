"""The faults file and which request gets which fault (pure: `recorder.serve.faults`), and the
closing report's text and JSON (`recorder.serve.report`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import TRANSCRIPTS

from recorder.disk.transcripts import load
from recorder.errors import RecorderError
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve.faults import (
    CUT,
    DELAY,
    ERROR,
    MALFORMED,
    MALFORMED_TEXT,
    STATUS,
    error_reply,
    faults_from_text,
    grpc_error,
    load_faults,
    malformed_frame,
    operation_of,
    status_reply,
)
from recorder.serve.report import report_json, report_text, serve_report
from recorder.serve.steps import needed_files, prepare


def test_each_kind_is_read_with_its_method_nth_and_probability() -> None:
    read = faults_from_text(
        """\
seed: 3
faults:
  - method: tasks/get         # A2A 0.3's name: GetTask
    nth: [2, 4]
    error: TaskNotFound
  - method: SendMessage
    probability: 0.25
    status: 503
  - grpc_status: unavailable
  - method: SendStreamingMessage
    cut_after: 0
    delay: 0.5
  - malformed_frame: 3
  - delay: 2
""",
        "f.yaml",
    )
    first, second, third, fourth, fifth, sixth = read.faults
    assert (first.kind, first.method, first.nth, first.error) == (
        ERROR,
        "GetTask",
        (2, 4),
        "TaskNotFoundError",
    )
    assert first.line == 3 and read.seed == 3
    assert (second.kind, second.probability, second.status) == (STATUS, 0.25, 503)
    assert (third.kind, third.grpc_status, third.method) == (STATUS, "UNAVAILABLE", None)
    assert (fourth.kind, fourth.frames, fourth.delay) == (CUT, 0, 0.5)
    assert (fifth.kind, fifth.frames) == (MALFORMED, 3)
    assert (sixth.kind, sixth.delay) == (DELAY, 2.0)
    assert fourth.describe() == ("fault 4 (SendStreamingMessage): cut after 0 frames after 0.5 s")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- 1\n", "f.yaml:1: expected a mapping with a `faults` list"),
        ("faults: []\n", "f.yaml:1: faults: expected a list of faults"),
        ("faults:\n  - {}\n", "f.yaml:2: faults[0]: no kind"),
        ("faults:\n  - {error: Nope}\n", "f.yaml:2: faults[0].error: expected an A2A error"),
        ("faults:\n  - {method: Sing, delay: 1}\n", "f.yaml:2: faults[0].method: 'Sing' is no"),
        ("faults:\n  - {status: 503, cut_after: 1}\n", "one kind per fault"),
        ("faults:\n  - {status: 99}\n", "faults[0].status: expected an HTTP status"),
        ("faults:\n  - {grpc_status: SLOW}\n", "faults[0].grpc_status: expected a gRPC status"),
        ("faults:\n  - {grpc_status: OK}\n", "OK is no fault"),
        ("faults:\n\n  - {delay: 1, nth: 0}\n", "f.yaml:3: faults[0].nth: expected a number"),
        ("faults:\n  - {delay: 1, probability: 2}\n", "probability: expected a number from 0"),
        ("faults:\n  - {malformed_frame: 0}\n", "malformed_frame: expected a number of frames"),
        ("faults:\n  - {delay: 1, when: now}\n", "faults[0]: unknown key 'when'"),
        ("seed: x\nfaults:\n  - {delay: 1}\n", "f.yaml:1: seed: expected an integer"),
        ("faults: [\n", "f.yaml:2: not YAML"),
    ],
)
def test_a_bad_file_is_an_error_at_its_line(text: str, message: str) -> None:
    with pytest.raises(RecorderError) as raised:
        faults_from_text(text, "f.yaml")
    assert message in str(raised.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(RecorderError, match=r"nope.yaml: cannot read the faults file"):
        load_faults(str(tmp_path / "nope.yaml"))


def test_nth_counts_the_requests_of_its_method_and_the_first_fault_wins() -> None:
    read = faults_from_text(
        "faults:\n  - {method: GetTask, nth: 2, error: TaskNotFoundError}\n"
        "  - {nth: [1, 4], status: 500}\n",
        "f.yaml",
    )
    chosen = [
        read.choose(operation, "req")
        for operation in ["GetTask", "SendMessage", "GetTask", "GetTask"]
    ]
    numbers = [None if fault is None else fault.number for fault in chosen]
    # request 1 (any: 1st) -> fault 2; GetTask's 2nd -> fault 1; the 4th request -> fault 2
    assert numbers == [2, None, 1, 2]


def test_probability_draws_from_the_seed() -> None:
    text = "seed: 11\nfaults:\n  - {probability: 0.5, delay: 1}\n"
    runs = []
    for _ in range(2):
        read = faults_from_text(text, "f.yaml")
        runs.append([read.choose("GetTask", "r") is not None for _ in range(200)])
    assert runs[0] == runs[1]  # the same seed, the same requests fault
    assert 60 < sum(runs[0]) < 140  # (about half of 200)


@pytest.mark.parametrize(
    ("method", "target", "rpc", "operation"),
    [
        ("POST", "/a2a/jsonrpc", "message/send", "SendMessage"),
        ("POST", "/a2a/rest/message:stream", None, "SendStreamingMessage"),
        ("GET", "/a2a/rest/tasks/t-1?historyLength=1", None, "GetTask"),
        ("GRPC", "/lf.a2a.v1.A2AService/CancelTask", None, "CancelTask"),
        ("GET", "/.well-known/agent-card.json", None, "GetAgentCard"),
        ("GET", "/favicon.ico", None, "GET /favicon.ico"),
    ],
)
def test_the_operation_of_a_live_request_in_each_binding(
    method: str, target: str, rpc: str | None, operation: str
) -> None:
    assert operation_of(method, target, rpc) == operation


def test_an_error_in_each_binding_carries_the_reason_the_sdk_reads() -> None:
    fault = faults_from_text("faults:\n  - {error: TaskNotCancelableError}\n", "f").faults[0]
    status, body = error_reply(fault, 7, is_rpc=True)
    rpc = json.loads(body)
    assert status == 200 and rpc["id"] == 7 and rpc["error"]["code"] == -32002
    assert rpc["error"]["data"][0]["reason"] == "TASK_NOT_CANCELABLE"
    status, body = error_reply(fault, None, is_rpc=False)
    rest = json.loads(body)["error"]
    assert (status, rest["code"], rest["status"]) == (400, 400, "FAILED_PRECONDITION")
    assert rest["details"][0]["reason"] == "TASK_NOT_CANCELABLE"
    name, message, details = grpc_error(fault)
    assert name == "FAILED_PRECONDITION" and "injected fault 1" in message and details


def test_a_status_on_the_other_binding_maps_as_grpc_says() -> None:
    only_http = faults_from_text("faults:\n  - {status: 429}\n", "f").faults[0]
    assert grpc_error(only_http)[0] == "UNAVAILABLE"
    only_grpc = faults_from_text("faults:\n  - {grpc_status: INTERNAL}\n", "f").faults[0]
    assert status_reply(only_grpc)[0] == 503


def test_a_malformed_frame_keeps_its_other_fields() -> None:
    frame = b'event: update\nid: 4\ndata: {"a":\ndata: 1}\n\n'
    assert malformed_frame(frame) == (
        b"event: update\nid: 4\ndata: " + MALFORMED_TEXT.encode() + b"\n\n"
    )
    with pytest.raises(ValueError):
        json.loads(MALFORMED_TEXT)


def test_the_report_says_served_unused_and_unmatched() -> None:
    transcripts = [
        load(TRANSCRIPTS / "02-message-reply.http"),
        load(TRANSCRIPTS / "17-push-notifications.http"),
    ]
    pairing = PairingRules(DEFAULT_RULES)
    steps = prepare(transcripts, pairing, needed_files(transcripts))
    pushes = sum(1 for s in steps[1] if s.exchange.push_config is not None)
    assert pushes  # (deliveries: sent by the stand-in, neither served nor unused)
    read = faults_from_text("faults:\n  - {method: SendMessage, status: 503}\n", "f.yaml")
    read.note(read.faults[0], "POST /a2a/jsonrpc SendMessage")
    report = serve_report(
        steps,
        {(0, 0): 2},
        unmatched=[("POST /a2a/jsonrpc Nope", "no recorded exchange matches it")],
        unmatched_count=1,
        delivered=3,
        faults=read.fired,
    )
    recorded = sum(len(file) for file in steps) - pushes
    assert len(report.served) == 1 and len(report.unused) == recorded - 1
    assert report.requests == 2 + 1 + 1
    text = report_text(report)
    assert text.startswith(
        f"served 1 of {recorded} recorded exchanges (4 requests); {recorded - 1} unused; "
        "1 unmatched; 3 push deliveries sent; 1 fault injected\n"
    )
    assert "unmatched:\n  POST /a2a/jsonrpc Nope: no recorded exchange matches it\n" in text
    assert "faults:\n  POST /a2a/jsonrpc SendMessage: fault 1 (SendMessage): status 503\n" in text
    data = report_json(report)
    assert data["summary"]["served"] == 1 and data["served"][0]["times"] == 2
    assert data["served"][0]["exchange"].endswith("02-message-reply.http:3")
    assert data["faults"][0] == {
        "fault": 1,
        "line": 2,
        "kind": "status",
        "what": "fault 1 (SendMessage): status 503",
        "request": "POST /a2a/jsonrpc SendMessage",
        "exchange": None,
    }
