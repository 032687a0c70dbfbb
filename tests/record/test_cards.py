"""Agent-card interface URLs point at the proxy in the copy the client gets."""

from __future__ import annotations

import json

import pytest

from recorder.record.cards import Origin, rewrite_card, rewrite_card_body, rewrite_url

UPSTREAM = Origin.parse("http://localhost:41242")
PROXY = Origin.parse("http://127.0.0.1:41241")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://localhost:41242/a2a/jsonrpc", "http://127.0.0.1:41241/a2a/jsonrpc"),
        ("http://127.0.0.1:41242/a2a/rest", "http://127.0.0.1:41241/a2a/rest"),
        ("http://[::1]:41242/a2a/rest?x=1#f", "http://127.0.0.1:41241/a2a/rest?x=1#f"),
        ("http://LOCALHOST:41242/", "http://127.0.0.1:41241/"),
        ("http://localhost:41243/a2a/jsonrpc", "http://localhost:41243/a2a/jsonrpc"),
        ("https://localhost:41242/a2a/jsonrpc", "https://localhost:41242/a2a/jsonrpc"),
        ("http://example.com:41242/a2a", "http://example.com:41242/a2a"),
        ("not a url", "not a url"),
        ("http://localhost:bad/", "http://localhost:bad/"),
    ],
)
def test_rewrite_url(url: str, expected: str) -> None:
    assert rewrite_url(url, UPSTREAM, PROXY) == expected


def test_upstream_path_prefix_maps_to_the_proxy_root() -> None:
    upstream = Origin.parse("http://agent.internal:80/agent/")
    assert rewrite_url("http://agent.internal/agent/a2a", upstream, PROXY) == (
        "http://127.0.0.1:41241/a2a"
    )
    assert rewrite_url("http://agent.internal/other", upstream, PROXY) == (
        "http://agent.internal/other"
    )


def test_card_keeps_everything_but_interface_urls() -> None:
    card = {
        "name": "code-reviewer",
        "supportedInterfaces": [
            {"url": "http://localhost:41242/a2a/jsonrpc", "protocolBinding": "JSONRPC"},
            {"url": "http://localhost:41242/a2a/rest", "protocolBinding": "HTTP+JSON"},
        ],
        "provider": {"url": "http://localhost:41242/about"},
        "documentationUrl": "http://localhost:41242/docs",
        "url": "http://localhost:41242/a2a/jsonrpc",
    }
    out = rewrite_card(card, UPSTREAM, PROXY)
    assert [i["url"] for i in out["supportedInterfaces"]] == [
        "http://127.0.0.1:41241/a2a/jsonrpc",
        "http://127.0.0.1:41241/a2a/rest",
    ]
    assert out["url"] == "http://127.0.0.1:41241/a2a/jsonrpc"
    assert out["provider"] == card["provider"]
    assert out["documentationUrl"] == card["documentationUrl"]
    assert card["supportedInterfaces"][0]["url"].startswith("http://localhost")  # not mutated


def test_body_of_a_jsonrpc_extended_card_reply() -> None:
    reply = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"supportedInterfaces": [{"url": "http://localhost:41242/a2a/jsonrpc"}]},
    }
    out = rewrite_card_body(json.dumps(reply).encode(), UPSTREAM, PROXY)
    assert out is not None
    value = json.loads(out)
    assert value["id"] == 1
    assert value["result"]["supportedInterfaces"][0]["url"] == "http://127.0.0.1:41241/a2a/jsonrpc"


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[]", b'{"supportedInterfaces": [{"url": "http://elsewhere/a2a"}]}', b"{}"],
)
def test_nothing_to_rewrite(body: bytes) -> None:
    assert rewrite_card_body(body, UPSTREAM, PROXY) is None


def test_origin_rejects_what_is_not_http() -> None:
    with pytest.raises(ValueError, match="http"):
        Origin.parse("ftp://x")
    assert Origin.parse("https://h/").base == "https://h"
    assert Origin.parse("http://[::1]:8/p").base == "http://[::1]:8/p"
