"""Rule 5: the agent's addresses in any spelling pair one to one (no network).

A card lists its JSON-RPC interface as a URL and its gRPC interface as a bare `host:port`; a
replay on other ports must pass, a card that lists a wrong address must not, and ordinary text
such as `app.py:12` is no address.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

import pytest

from recorder.format.model import Exchange, Request, Response
from recorder.replay.verdict import fastpath
from recorder.replay.verdict.state import LiveReply, ReplayState
from recorder.replay.verdict.strings import Addresses, address_key
from recorder.rules.ruleset import DEFAULT_RULES

RECORDED = "http://localhost:41242"
LIVE = "http://127.0.0.1:5555"
JSON = [("Content-Type", "application/json")]
CARD_REQUEST = Request("GET", "/.well-known/agent-card.json", [("Host", "localhost:41242")])


def state() -> ReplayState:
    return ReplayState(DEFAULT_RULES, recorded_base=RECORDED, live_base=LIVE)


def reply(value: Any, *, compact: bool = False) -> Response:
    body = json.dumps(value, separators=(",", ":") if compact else None).encode()
    return Response(200, "OK", JSON, body)


def card(jsonrpc: str, grpc: str, note: str = "see app.py:12") -> dict[str, Any]:
    return {
        "name": "reviewer",
        "supportedInterfaces": [
            {"url": jsonrpc, "protocolBinding": "JSONRPC"},
            {"url": grpc, "protocolBinding": "GRPC"},
        ],
        "description": f"errors name {grpc} when it is down; {note}",
    }


RECORDED_CARD = card("http://localhost:41242/a2a/jsonrpc", "127.0.0.1:18702")
LIVE_CARD = card("http://127.0.0.1:5555/a2a/jsonrpc", "127.0.0.1:6001")


@pytest.mark.parametrize("wire", [False, True], ids=["response", "wire"])
@pytest.mark.parametrize("small", [fastpath._SMALL, 0], ids=["few", "many"])
def test_a_card_on_other_ports_matches(
    wire: bool, small: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fastpath, "_SMALL", small)
    s = state()
    golden = Exchange(CARD_REQUEST, reply(RECORDED_CARD))
    live: Response | LiveReply = reply(LIVE_CARD)
    if wire:
        live = LiveReply(200, "OK", JSON, json.dumps(LIVE_CARD, separators=(",", ":")).encode())
    assert s.compare(golden, live) == []
    # again, now that the pairs are known (the fast path)
    assert s.compare(golden, reply(LIVE_CARD, compact=True)) == []


def test_a_card_listing_one_live_port_twice_is_a_mismatch() -> None:
    s = state()
    golden = Exchange(CARD_REQUEST, reply(RECORDED_CARD))
    twice = card("http://127.0.0.1:5555/a2a/jsonrpc", "127.0.0.1:5555")
    found = s.compare(golden, reply(twice))
    assert [m.path for m in found] == ["$.supportedInterfaces[1].url", "$.description"]
    first = found[0]
    assert (first.expected, first.actual) == ("<address:1>", "<agent>")
    assert "127.0.0.1:5555" in first.message and "127.0.0.1:18702" in first.message
    assert "<agent>" in first.message


def test_the_gRPC_port_pairs_for_the_whole_file() -> None:
    s = state()
    assert s.compare(Exchange(CARD_REQUEST, reply(RECORDED_CARD)), reply(LIVE_CARD)) == []
    request = Request("GET", "/status", [("Host", "localhost:41242")])
    golden = Exchange(request, reply({"error": "cannot reach 127.0.0.1:18702"}))
    assert s.compare(golden, reply({"error": "cannot reach 127.0.0.1:6001"})) == []
    [mismatch] = s.compare(golden, reply({"error": "cannot reach 127.0.0.1:6002"}))
    assert mismatch.path == "$.error"
    assert mismatch.expected == "cannot reach <address:1>"
    assert mismatch.actual == "cannot reach 127.0.0.1:6002"
    assert mismatch.message == (
        "recorded 127.0.0.1:18702 is live 127.0.0.1:6001, but the reply names 127.0.0.1:6002"
    )


def test_a_live_address_where_the_recording_has_text_is_a_mismatch() -> None:
    s = state()
    golden = Exchange(CARD_REQUEST, reply(card(f"{RECORDED}/a2a/jsonrpc", "disabled")))
    found = s.compare(golden, reply(card(f"{LIVE}/a2a/jsonrpc", "127.0.0.1:6001")))
    assert [m.path for m in found] == ["$.supportedInterfaces[1].url", "$.description"]


def test_a_changed_line_number_is_text_not_an_address() -> None:
    s = state()
    golden = Exchange(CARD_REQUEST, reply(RECORDED_CARD))
    live = card("http://127.0.0.1:5555/a2a/jsonrpc", "127.0.0.1:6001", note="see app.py:13")
    [mismatch] = s.compare(golden, reply(live))
    assert mismatch.path == "$.description"
    assert mismatch.expected == "errors name <address:1> when it is down; see app.py:12"
    assert mismatch.actual == "errors name <address:1> when it is down; see app.py:13"
    assert mismatch.message == ""


@pytest.mark.parametrize(
    "text",
    ["app.py:12", "line:42", "my-localhost:80", "x.127.0.0.1:80", "1127.0.0.1:80", "localhost"],
)
def test_ordinary_text_is_no_address(text: str) -> None:
    assert Addresses(RECORDED, LIVE).spans(text) == []


def test_addresses_in_every_spelling() -> None:
    addresses = Addresses(RECORDED, LIVE)
    text = "http://localhost:41242/x, 127.0.0.1:18702, [::1]:9, http://localhost/y, 127.9.0.1:1"
    assert [found for _, _, found in addresses.spans(text)] == [
        "localhost:41242",
        "127.0.0.1:18702",
        "[::1]:9",
        "localhost",
        "127.9.0.1:1",
    ]
    # the loopback names of one port are one address; 127.9.0.1 is another host
    assert address_key("127.0.0.1:5") == address_key("[::1]:5") == address_key("LocalHost:5")
    assert address_key("127.9.0.1:5") != address_key("127.0.0.1:5")
    # a remote agent's own host counts too
    remote = Addresses("http://agent.example:8080", LIVE)
    assert [found for _, _, found in remote.spans("at agent.example:9090 now")] == [
        "agent.example:9090"
    ]


def test_a_request_carries_the_live_addresses_forward() -> None:
    s = state()
    assert s.compare(Exchange(CARD_REQUEST, reply(RECORDED_CARD)), reply(LIVE_CARD)) == []
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "CreateTaskPushNotificationConfig",
        "params": {
            "url": "http://localhost:41242/hooks",
            "grpc": "127.0.0.1:18702",
            "mine": "http://localhost:41299/webhook",
            "text": "see app.py:12",
        },
    }
    request = Request(
        "POST",
        "/a2a/jsonrpc?next=http%3A%2F%2F127.0.0.1%3A18702%2Fx",
        [
            ("Host", "localhost:41242"),
            *JSON,
            ("X-Forwarded-Host", "localhost:41242"),
            ("X-Backend", "grpc://127.0.0.1:18702"),
        ],
        json.dumps(body).encode(),
    )
    sent = s.prepare(request)
    assert sent.json["params"] == {
        "url": "http://127.0.0.1:5555/hooks",
        "grpc": "127.0.0.1:6001",
        "mine": "http://localhost:41299/webhook",  # paired with nothing: the client's own
        "text": "see app.py:12",
    }
    assert unquote(sent.target) == "/a2a/jsonrpc?next=http://127.0.0.1:6001/x"
    assert sent.headers.get("Host") == "127.0.0.1:5555"
    assert sent.headers.get("X-Forwarded-Host") == "127.0.0.1:5555"
    assert sent.headers.get("X-Backend") == "grpc://127.0.0.1:6001"
    # the client's own address, echoed: compared exactly
    echo = Exchange(request, reply({"url": "http://localhost:41299/webhook"}))
    assert s.compare(echo, reply({"url": "http://localhost:41299/webhook"})) == []
    [mismatch] = s.compare(echo, reply({"url": "http://localhost:41300/webhook"}))
    assert mismatch.path == "$.url"


def test_bless_keeps_the_recorded_spelling_of_every_address() -> None:
    s = state()
    golden = reply(RECORDED_CARD)
    assert s.compare(Exchange(CARD_REQUEST, golden), reply(LIVE_CARD)) == []
    renamed = reply({**LIVE_CARD, "name": "renamed"})
    assert [m.path for m in s.compare(Exchange(CARD_REQUEST, golden), renamed)] == ["$.name"]
    blessed = s.bless(golden, renamed, matched=False).json
    assert blessed == {**RECORDED_CARD, "name": "renamed"}
    # the live agent calling itself localhost: the recorded spelling comes back all the same
    spelled = reply({**card("http://localhost:5555/a2a/jsonrpc", "[::1]:6001"), "name": "x"})
    assert [m.path for m in s.compare(Exchange(CARD_REQUEST, golden), spelled)] == ["$.name"]
    assert s.bless(golden, spelled, matched=False).json == {**RECORDED_CARD, "name": "x"}
