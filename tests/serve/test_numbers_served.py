"""The stand-in answers every number as it was recorded (`12345678901234567.89`, `1.50`,
`-0`, `1E5`: what a float would write otherwise), in a reply body and in a stream's frames,
and a client's JSON-RPC id as the client wrote it (`1e2`, past 64 bits) in the error for a
request that matches nothing; replies that hold such numbers are compared for a tie without
a crash."""

from __future__ import annotations

import json

import pytest
from factories import make_exchange, make_request, make_response
from jsonref import tokens

from recorder import Headers, Transcript
from recorder.format.model import SseEvent
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve.book import Book, Found, NotFound
from recorder.serve.match import LiveRequest
from recorder.serve.nomatch import error_body
from recorder.serve.replies import Renderer
from recorder.serve.steps import prepare

RULES = PairingRules(DEFAULT_RULES)
NUMBERS = ["12345678901234567.89", "1.50", "-0", "1E5", "3.141592653589793238462643383279"]
RESULT = '{"n": [' + ", ".join(NUMBERS) + "]}"
HEADERS = [("Content-Type", "application/json"), ("A2A-Version", "1.0")]
GET_TASK = b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t-1"}}'


def numbers_in(text: str | bytes) -> list[str]:
    found = tokens(text.decode() if isinstance(text, bytes) else text)
    return [token for token in found if token in NUMBERS]


def served(*exchanges_per_file: tuple[object, ...]) -> Book:
    transcripts = [
        Transcript(exchanges=exchanges, source=f"0{n}-numbers.http")  # type: ignore[arg-type]
        for n, exchanges in enumerate(exchanges_per_file, start=1)
    ]
    return Book(prepare(transcripts, RULES), RULES)


def answer() -> object:
    body = ('{"jsonrpc": "2.0", "id": 1, "result": ' + RESULT + "}").encode()
    return make_exchange(response=make_response(body=body))


def test_a_reply_body_is_served_with_its_numbers_as_recorded() -> None:
    book = served((answer(),))
    found = book.find(LiveRequest("POST", "/a2a/jsonrpc", HEADERS, GET_TASK))
    assert isinstance(found, Found)
    body = Renderer(RULES, found.step, found.branch, found.rpc_id, None).body()
    assert numbers_in(body) == NUMBERS


def test_a_stream_is_served_with_its_numbers_as_recorded() -> None:
    frame = '{"jsonrpc": "2.0", "id": 1, "result": {"statusUpdate": ' + RESULT + "}}"
    stream = make_response(
        headers=Headers([("Content-Type", "text/event-stream")]),
        body=b"",
        events=(SseEvent(data=frame), SseEvent(data=frame)),
    )
    request = make_request(body=GET_TASK.replace(b"GetTask", b"SubscribeToTask"))
    book = served((make_exchange(request=request, response=stream),))
    found = book.find(LiveRequest("POST", "/a2a/jsonrpc", HEADERS, request.body))
    assert isinstance(found, Found)
    renderer = Renderer(RULES, found.step, found.branch, found.rpc_id, None)
    for number in range(2):
        assert numbers_in(renderer.frame_data(number) or "") == NUMBERS
        assert numbers_in(renderer.frame(number)) == NUMBERS


def test_two_recordings_alike_whose_replies_hold_such_numbers_are_a_harmless_tie() -> None:
    book = served((answer(),), (answer(),))
    found = book.find(LiveRequest("POST", "/a2a/jsonrpc", HEADERS, GET_TASK))
    assert isinstance(found, Found)
    assert [tie.same_reply for tie in book.ties] == [True]


@pytest.mark.parametrize("rpc_id", ["1e2", "123456789012345678901234567890"])
def test_the_no_match_error_carries_the_client_id_as_written(rpc_id: str) -> None:
    book = served((answer(),))
    sent = GET_TASK.replace(b'"id": 1,', f'"id": {rpc_id},'.encode()).replace(b"t-1", b"t-9")
    live = LiveRequest("POST", "/a2a/jsonrpc", HEADERS, sent)
    missed = book.find(live)
    assert isinstance(missed, NotFound)
    status, body = error_body(live, missed, "no recorded exchange matches")
    assert status == 200
    assert body.startswith(b'{"jsonrpc":"2.0","id":' + rpc_id.encode() + b",")
    assert json.loads(body)["error"]["code"] == -32099
