"""A request body that is not JSON, carrying a value the client makes each run (issue 32): a
conformance suite sends a malformed JSON-RPC call with a fresh uuid in it, and the agent
answers -32700. The stand-in matches such a body as the pairing rules take a JSON string: the
generated shapes in it (a uuid) match any value of their kind, paired one to one; the rest
compares exactly. It answers what was recorded, not 404 "not JSON".

The pure part builds the recording by hand; the end-to-end part records the real kit's answer
through the recorder and sends the stand-in a fresh malformed call with the SDK's own kind of
uuid."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
import pytest
from factories import make_exchange, make_request, make_response

from recorder import Headers, Transcript
from recorder.kit import KitServer
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve import load_stand_in
from recorder.serve.book import Book, Found, NotFound
from recorder.serve.match import LiveRequest
from recorder.serve.replies import Renderer
from recorder.serve.server import server_options
from recorder.serve.steps import prepare
from recorder.servers import ServerThread

RULES = PairingRules(DEFAULT_RULES)
HEADERS = [("Content-Type", "application/json"), ("A2A-Version", "1.0")]
PARSE_ERROR = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
LIMIT = 20.0  # seconds, for every request


def malformed(one: str, other: str | None = None) -> bytes:
    """A SendMessage cut off mid-object, as a conformance suite sends it: its JSON-RPC id and
    its messageId uuids the client made this run."""
    message_id = other or one
    head = f'{{"jsonrpc": "2.0", "id": "{one}", "method": "SendMessage", "params": '
    return (head + f'{{"message": {{"messageId": "{message_id}", "parts": [{{"text": "hi"').encode()


def book(body: bytes) -> Book:
    recorded = make_exchange(
        request=make_request(body=body, headers=Headers(HEADERS)),
        response=make_response(body=json.dumps(PARSE_ERROR).encode()),
        title="SendMessage: malformed",
    )
    transcripts = [Transcript(exchanges=(recorded,), source="01-malformed.http")]
    return Book(prepare(transcripts, RULES), RULES)


def ask(served: Book, body: bytes) -> Found | NotFound:
    return served.find(LiveRequest("POST", "/a2a/jsonrpc", HEADERS, body))


def test_a_malformed_call_with_a_fresh_uuid_gets_the_recorded_answer() -> None:
    served = book(malformed(str(uuid.uuid4()), str(uuid.uuid4())))
    found = ask(served, malformed(str(uuid.uuid4()), str(uuid.uuid4())))
    assert isinstance(found, Found), found
    reply = Renderer(RULES, found.step, found.branch, found.rpc_id, None).body()
    assert json.loads(reply) == PARSE_ERROR


def test_the_rest_of_a_malformed_body_compares_exactly() -> None:
    served = book(malformed(str(uuid.uuid4())))
    other_text = malformed(str(uuid.uuid4())).replace(b'"hi"', b'"ho"')
    missed = ask(served, other_text)
    assert isinstance(missed, NotFound)
    assert missed.differences == ["body: differs from the recorded body (not JSON)"]
    # a uuid where the recording has none is no match either
    assert isinstance(ask(served, malformed("not-a-uuid")), NotFound)


def test_a_uuid_the_recording_repeats_is_one_value_live() -> None:
    # the recorded call used one uuid twice: a live call with two different ones is not it
    served = book(malformed(str(uuid.uuid4())))
    assert isinstance(ask(served, malformed(str(uuid.uuid4()), str(uuid.uuid4()))), NotFound)
    assert isinstance(ask(served, malformed(str(uuid.uuid4()))), Found)


@pytest.mark.e2e
def test_the_stand_in_answers_a_fresh_malformed_call_as_the_kit_did(
    kit: KitServer, tmp_path: Path
) -> None:
    out = tmp_path / "recorded"
    with ProxyServer(create_proxy_app(kit.url, out=out)) as proxy:
        recorded = httpx.post(
            f"{proxy.url}/a2a/jsonrpc",
            content=malformed(str(uuid.uuid4()), str(uuid.uuid4())),
            headers=dict(HEADERS),
            timeout=LIMIT,
        )
    assert recorded.json()["error"]["code"] == -32700
    stand_in = load_stand_in([str(out)], DEFAULT_RULES)
    fresh = malformed(str(uuid.uuid4()), str(uuid.uuid4()))
    live = httpx.post(f"{kit.url}/a2a/jsonrpc", content=fresh, headers=dict(HEADERS), timeout=LIMIT)
    with ServerThread(stand_in, **server_options()) as server:
        served = httpx.post(
            f"{server.url}/a2a/jsonrpc", content=fresh, headers=dict(HEADERS), timeout=LIMIT
        )
    assert stand_in.problems == []
    assert (served.status_code, served.json()) == (live.status_code, live.json())


def test_a_malformed_call_naming_a_handed_out_id_goes_on_in_its_conversation() -> None:
    # a GetTask cut off after the task id an earlier reply handed out: with fresh ids, the id
    # handed out live is the one it must carry, and it names its conversation
    task = str(uuid.uuid4())
    send = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {}}}
    created = {"task": {"id": task, "contextId": str(uuid.uuid4()), "status": {}}}
    cut = f'{{"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {{"id": "{task}"'
    exchanges = (
        make_exchange(
            request=make_request(body=json.dumps(send).encode(), headers=Headers(HEADERS)),
            response=make_response(
                body=json.dumps({"jsonrpc": "2.0", "id": 1, "result": created}).encode()
            ),
        ),
        make_exchange(
            request=make_request(body=cut.encode(), headers=Headers(HEADERS)),
            response=make_response(body=json.dumps(PARSE_ERROR).encode()),
        ),
    )
    transcripts = [Transcript(exchanges=exchanges, source="01-cut.http")]
    served = Book(prepare(transcripts, RULES), RULES, fresh=True)
    first = ask(served, json.dumps(send).encode())
    assert isinstance(first, Found)
    handed = first.branch.to_live[task]
    assert handed != task
    assert isinstance(ask(served, cut.encode()), NotFound)  # the recorded id: not handed out
    found = ask(served, cut.replace(task, handed).encode())
    assert isinstance(found, Found) and found.step.index == 1
    assert found.conversation is first.conversation
