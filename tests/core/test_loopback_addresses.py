"""An agent's address in any loopback spelling (`recorder.addresses`): one list of the names
and one pattern for the card rewrite, the player's rule 5 and the stand-in (pure)."""

from __future__ import annotations

import pytest

from recorder.addresses import (
    address_in_urls,
    address_key,
    is_loopback,
    loopback_urls_as_one,
    split_netloc,
)
from recorder.record.cards import Origin


@pytest.mark.parametrize(
    ("netloc", "key"),
    [
        ("localhost:5000", "localhost:5000"),
        ("127.0.0.1:5000", "localhost:5000"),
        ("[::1]:5000", "localhost:5000"),
        ("LocalHost:5000", "localhost:5000"),
        ("agent.example:5000", "agent.example:5000"),
        ("127.0.0.2:5000", "127.0.0.2:5000"),  # another address of the machine: another agent
        ("[::1]", "localhost"),
    ],
)
def test_an_address_key_names_the_address_whatever_its_loopback_spelling(
    netloc: str, key: str
) -> None:
    assert address_key(netloc) == key


def test_a_netloc_splits_at_its_port_only() -> None:
    assert split_netloc("localhost:41242") == ("localhost", "41242")
    assert split_netloc("[::1]") == ("[::1]", "")
    assert split_netloc("[::1]:80") == ("[::1]", "80")
    assert split_netloc("host") == ("host", "")


def test_loopback_host_names_and_the_card_rewrite_agree() -> None:
    assert all(map(is_loopback, ["localhost", "127.0.0.1", "::1"]))
    assert not any(map(is_loopback, ["[::1]", "LOCALHOST", "example.com", "0.0.0.0"]))
    origin = Origin.parse("http://localhost:41242")
    assert origin.same_host("127.0.0.1") and origin.same_host("::1")
    assert not origin.same_host("example.com")


def test_loopback_urls_read_as_one_whatever_their_spelling_and_port() -> None:
    text = "//127.0.0.1:41999/a //LOCALHOST/b //[::1]:1/c //localhost:1234567 //example.com:1"
    assert loopback_urls_as_one(text) == (
        "//loopback/a //loopback/b //loopback/c //loopback //example.com:1"
    )


def test_the_agent_in_urls_is_found_in_any_loopback_spelling_of_its_port() -> None:
    pattern = address_in_urls("localhost:41242")
    assert pattern is not None
    text = "http://127.0.0.1:41242/a http://[::1]:41242 //LOCALHOST:41242 //localhost:412420"
    assert pattern.sub("//here:1", text) == (
        "http://here:1/a http://here:1 //here:1 //localhost:412420"
    )
    named = address_in_urls("agent.example")
    assert named is not None
    assert named.sub("//here", "//agent.example/x //agent.example.org") == (
        "//here/x //agent.example.org"
    )
    assert address_in_urls(None) is None and address_in_urls("") is None
