"""A gRPC call as the HTTP/2 exchange it travels in (`recorder.bindings.grpc_http`): made from
the transcript model and read back to it, for HAR files."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from helpers import TRANSCRIPTS

from recorder.bindings import grpc_http
from recorder.disk.transcripts import load

pytest.importorskip("a2a.types")

CALLS = [
    (path.name, number)
    for path in sorted(TRANSCRIPTS.glob("*-grpc-*.http"))
    for number in range(len(load(path).exchanges))
]


def test_messages_are_length_prefixed() -> None:
    framed = grpc_http.frame([b"ab", b""])
    assert framed == b"\x00\x00\x00\x00\x02ab\x00\x00\x00\x00\x00"
    assert grpc_http.unframe(framed) == [b"ab", b""]


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"\x00\x00\x00", "prefix cut short"),
        (b"\x00\x00\x00\x00\x05ab", "cut short"),
        (b"\x01\x00\x00\x00\x01a", "compressed"),
    ],
)
def test_a_body_that_is_no_message_stream_is_refused(data: bytes, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        grpc_http.unframe(data)


@pytest.mark.parametrize(("name", "number"), CALLS)
def test_every_recorded_call_reads_back_from_its_http2_parts(name: str, number: int) -> None:
    exchange = load(TRANSCRIPTS / name).exchanges[number]
    call = grpc_http.call_to_http(exchange)
    assert call.path == exchange.request.target
    assert ("content-type", "application/grpc") in call.request_headers
    status = dict(call.trailers)["grpc-status"]
    assert status == str(exchange.response.status)
    request, response = grpc_http.call_from_http(
        call.path,
        call.request_headers,
        call.request_body,
        call.response_headers,
        call.response_body,
        call.trailers,
    )
    assert request == exchange.request
    assert response == exchange.response


def test_a_failed_calls_status_and_details_travel_in_the_trailers() -> None:
    exchange = load(TRANSCRIPTS / "22-grpc-errors.http").exchanges[0]
    call = grpc_http.call_to_http(exchange)
    trailers = dict(call.trailers)
    assert trailers["grpc-status"] == "5"
    assert trailers["grpc-message"] == "Task not found"
    assert base64.b64decode(trailers["grpc-status-details-bin"])  # (the Status, with its details)
    assert call.response_body == b""


def test_a_trailers_only_reply_is_read_from_its_headers() -> None:
    exchange = load(TRANSCRIPTS / "22-grpc-errors.http").exchanges[0]
    call = grpc_http.call_to_http(exchange)
    _, response = grpc_http.call_from_http(
        call.path, call.request_headers, call.request_body, call.trailers, b"", ()
    )
    assert response.status == 5
    assert response == exchange.response


def test_a_reply_without_a_status_is_refused_with_the_reason() -> None:
    exchange = load(TRANSCRIPTS / "18-grpc-message-reply.http").exchanges[0]
    call = grpc_http.call_to_http(exchange)
    with pytest.raises(ValueError, match="no grpc-status"):
        grpc_http.call_from_http(
            call.path, call.request_headers, call.request_body, (), call.response_body, ()
        )


def test_the_message_text_is_percent_encoded() -> None:
    exchange = load(TRANSCRIPTS / "22-grpc-errors.http").exchanges[0]
    body = exchange.response.body.replace(b"Task not found", "Tâche 100%".encode())
    from dataclasses import replace

    changed = replace(exchange, response=replace(exchange.response, body=body))
    call = grpc_http.call_to_http(changed)
    assert dict(call.trailers)["grpc-message"] == "T%C3%A2che 100%25"
    _, response = grpc_http.call_from_http(
        call.path, call.request_headers, call.request_body, (), b"", call.trailers
    )
    assert response.json["message"] == "Tâche 100%"


def test_calls_of_other_services_are_refused() -> None:
    with pytest.raises(ValueError, match=r"not a method of lf\.a2a\.v1\.A2AService"):
        grpc_http.call_from_http("/other.Service/Call", (), b"", (), b"", (("grpc-status", "0"),))


def test_the_transcripts_hold_grpc_calls() -> None:
    assert len(CALLS) >= 5, Path(TRANSCRIPTS)
