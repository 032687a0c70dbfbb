"""Where the recorder delivers push notifications (issue 34, item 2; pure): at least what the
a2a-sdk's recommended validator refuses, the recorder's own listeners, IPv4 addresses in any
spelling but the dotted one, and loopback only for local work."""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import pytest
from a2a.utils.push_url_validator import validate_push_notification_url
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder.push_urls import WebhookScreen, ipv4_spelled

OWN = frozenset({("127.0.0.1", 41241), ("127.0.0.1", 41244)})
STRICT = WebhookScreen(own=OWN)
LOCAL = WebhookScreen(loopback=True, own=OWN)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        # what the issue found delivered through the recorder (the kit refuses them)
        ("http://0.0.0.0:9/hook", "unspecified"),
        ("http://127.1:9/hook", "spells the IPv4 address 127.0.0.1"),
        ("http://2130706433:9/hook", "spells the IPv4 address 127.0.0.1"),
        ("http://0x7f.0.0.1:9/hook", "spells the IPv4 address 127.0.0.1"),
        ("http://0177.0.0.1:9/hook", "spells the IPv4 address 127.0.0.1"),
        ("http://[::ffff:127.0.0.1]:9/hook", "spells the IPv4 address 127.0.0.1"),
        ("file:///etc/passwd", "not an http(s) URL"),
        ("gopher://127.0.0.1:9/", "not an http(s) URL"),
        ("ftp://hooks.example/x", "not an http(s) URL"),
        ("//hooks.example/x", "not an http(s) URL"),
        ("http://:9/hook", "no host"),
        ("http://hooks.example:99999/", "not a URL"),
        # the recorder's own listeners: a delivery there re-entered the proxy
        ("http://127.0.0.1:41241/a2a/jsonrpc", "the recorder's own address"),
        ("http://localhost:41241/a2a/jsonrpc", "the recorder's own address"),
        ("http://[::1]:41244/", "the recorder's own address"),
        # not public, as the SDK judges it, loopback allowed or not
        ("http://10.0.0.5/hook", "not a public address"),
        ("http://192.168.1.10/hook", "not a public address"),
        ("http://100.64.0.1/hook", "not a public address"),
        ("http://169.254.169.254/latest/meta-data", "not a public address"),
        ("http://224.0.0.1/", "not a public address"),
        ("http://[fe80::1%25eth0]/", "not a public address"),
        ("http://[fc00::1]/", "not a public address"),
    ],
)
def test_refused_with_or_without_loopback(url: str, why: str) -> None:
    for screen in (STRICT, LOCAL):
        reason = screen.refusal(url)
        assert reason is not None and why in reason, (url, reason)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hook",
        "http://127.0.0.1:41242/hook",  # (another port of this machine: the agent's, say)
        "http://[::1]:9/hook",
        "http://localhost:9/hook",
        "http://user:pass@127.0.0.1:9/hook",
    ],
)
def test_loopback_only_for_local_work(url: str) -> None:
    reason = STRICT.refusal(url)
    assert reason is not None and "--push-loopback" in reason
    assert LOCAL.refusal(url) is None


@pytest.mark.parametrize(
    "url", ["https://hooks.example.com/in", "http://8.8.8.8/x", "https://[2606:4700::1111]/x"]
)
def test_public_webhooks_and_names_pass(url: str) -> None:
    # (a name is screened again by its addresses when a delivery goes out)
    assert STRICT.refusal(url) is None


def test_at_least_what_the_sdks_validator_refuses() -> None:
    # every literal the validator refuses (it resolves names; literals need no lookup)
    urls = [
        "http://0.0.0.0:9/",
        "http://127.0.0.1:9/",
        "http://[::1]:9/",
        "http://10.0.0.5/",
        "http://100.64.0.1/",
        "http://169.254.169.254/",
        "http://[::ffff:10.0.0.1]/",
        "file:///etc/passwd",
        "http://224.0.0.1/",
        "http://240.0.0.1/",
    ]
    for url in urls:
        assert asyncio.run(validate_push_notification_url(url)) is False, url
        assert STRICT.refusal(url) is not None, url


def test_the_sdks_validator_refuses_the_recorders_loopback_receiver() -> None:
    # why an agent that screens with it cannot be recorded without --push-receiver-url
    receiver = "http://127.0.0.1:41241/_recorder/push/abc"
    assert asyncio.run(validate_push_notification_url(receiver)) is False


def test_resolved_addresses_are_screened_alike() -> None:
    assert STRICT.address_refusal("10.1.2.3", 443) is not None
    assert STRICT.address_refusal("127.0.0.1", 9) is not None
    assert LOCAL.address_refusal("127.0.0.1", 9) is None
    assert LOCAL.address_refusal("127.0.0.1", 41241) is not None  # own
    assert LOCAL.address_refusal("::ffff:127.0.0.1", 9) is None  # (as the SDK judges it)
    assert STRICT.address_refusal("93.184.215.14", 443) is None


def test_a_listener_on_every_address_is_own_on_loopback_too() -> None:
    screen = WebhookScreen(loopback=True).with_own("0.0.0.0", 8080)
    assert "own address" in (screen.refusal("http://127.0.0.1:8080/a2a/jsonrpc") or "")
    assert screen.refusal("http://127.0.0.1:8081/hook") is None
    named = WebhookScreen().with_own("Recorder.Example.com", 443)
    assert "own address" in (named.refusal("https://recorder.example.com/a2a/jsonrpc") or "")


@settings(max_examples=400, deadline=None, database=None)
@given(
    st.lists(
        st.one_of(
            st.integers(0, 2**32).map(str),
            st.integers(0, 2**32).map(hex),
            st.integers(0, 2**32).map(lambda n: "0" + oct(n)[2:]),
            st.sampled_from(["", "0", "00", "08", "0x", "1e3", "256"]),
        ),
        min_size=1,
        max_size=5,
    ).map(".".join)
)
def test_numeric_spellings_are_read_as_inet_aton_reads_them(host: str) -> None:
    # inet_aton parses text only (no lookup): what a connect to this host would reach
    try:
        expected: ipaddress.IPv4Address | None = ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        expected = None
    assert ipv4_spelled(host) == expected, host
