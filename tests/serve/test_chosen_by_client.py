"""An agent whose answer a client field chooses (`chooser_agent.py`: the messageId's prefix),
recorded through the real recorder and served: each request gets its own recorded answer,
whether the client sends the recorded ids again or new ones of the same pattern, in any
order. And a card recorded in both versions is served by the request's `A2A-Version`.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import new_text_message
from a2a.types import Role, SendMessageRequest, StreamResponse
from chooser_agent import ChooserAgent

from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve import load_stand_in
from recorder.serve.server import server_options
from recorder.servers import ServerThread

pytestmark = pytest.mark.e2e

LIMIT = 10.0
PREFIXES = ("text", "file", "data", "bare", "both")


def _seen(event: StreamResponse) -> tuple[Any, ...]:
    if event.HasField("message"):
        return ("message", [str(part.WhichOneof("content")) for part in event.message.parts])
    artifacts = event.task.artifacts
    return ("task", [(a.name, [str(p.WhichOneof("content")) for p in a.parts]) for a in artifacts])


async def _send_all(url: str, message_ids: list[str]) -> dict[str, Any]:
    """SendMessage once per id, with the a2a-sdk client; what each got, by its prefix."""
    seen: dict[str, Any] = {}
    async with httpx.AsyncClient(timeout=LIMIT, headers={"A2A-Version": "1.0"}) as http:
        card = await asyncio.wait_for(A2ACardResolver(http, url).get_agent_card(), LIMIT)
        config = ClientConfig(
            httpx_client=http, streaming=False, supported_protocol_bindings=["JSONRPC"]
        )
        client = ClientFactory(config).create(card)
        for message_id in message_ids:
            message = new_text_message("go", role=Role.ROLE_USER)
            message.message_id = message_id
            events = [e async for e in client.send_message(SendMessageRequest(message=message))]
            seen[message_id.partition("-")[0]] = [_seen(event) for event in events]
        await client.close()
    return seen


def _ids() -> list[str]:
    return [f"{prefix}-{uuid.uuid4().hex[:8]}" for prefix in PREFIXES]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], dict[str, Any]]:
    out = tmp_path_factory.mktemp("chooser") / "rec"
    ids = _ids()
    with (
        ServerThread(ChooserAgent()) as agent,
        ProxyServer(create_proxy_app(agent.url, out=out)) as proxy,
    ):
        seen = asyncio.run(_send_all(proxy.url, ids))
        # the card without the version header (A2A 0.3's), then with it (1.0's)
        cards = [httpx.get(f"{proxy.url}/.well-known/agent-card.json", timeout=LIMIT)]
        cards.append(
            httpx.get(
                f"{proxy.url}/.well-known/agent-card.json",
                headers={"A2A-Version": "1.0"},
                timeout=LIMIT,
            )
        )
    assert [card.status_code for card in cards] == [200, 200]
    return out, ids, seen


@pytest.mark.parametrize("ids", ["recorded", "new"])
def test_each_request_gets_the_answer_its_field_chose(
    recorded: tuple[Path, list[str], dict[str, Any]], ids: str
) -> None:
    folder, recorded_ids, seen = recorded
    sent = recorded_ids if ids == "recorded" else _ids()
    stand_in = load_stand_in([str(folder)], DEFAULT_RULES)
    with ServerThread(stand_in, **server_options()) as server:
        got = asyncio.run(_send_all(server.url, list(reversed(sent))))
    assert stand_in.problems == [] and stand_in.ties == []
    assert got == seen
    assert len({str(v) for v in got.values()}) == 5  # five different answers


def test_the_card_is_chosen_by_the_requests_a2a_version(
    recorded: tuple[Path, list[str], dict[str, Any]],
) -> None:
    stand_in = load_stand_in([str(recorded[0])], DEFAULT_RULES)
    with ServerThread(stand_in, **server_options()) as server:
        card_url = f"{server.url}/.well-known/agent-card.json"
        modern = httpx.get(card_url, headers={"A2A-Version": "1.0"}, timeout=LIMIT).json()
        legacy = httpx.get(card_url, timeout=LIMIT).json()
    assert modern["supportedInterfaces"][0]["url"] == f"{server.url}/a2a/jsonrpc"
    assert "url" not in modern
    assert legacy["protocolVersion"] == "0.3" and legacy["url"] == f"{server.url}/a2a/jsonrpc"
    assert stand_in.problems == []
