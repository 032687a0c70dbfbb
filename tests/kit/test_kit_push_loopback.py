"""The kit delivers push notifications to loopback webhooks only."""

from __future__ import annotations

import asyncio
import logging
import time

import httpx
import pytest

from recorder.kit import KitServer
from recorder.kit.app import is_loopback_url, loopback_push_url


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://127.5.6.7/hook",
        "https://localhost/hook",
        "http://LOCALHOST:9/x",
        "http://[::1]:9/hook",
        "http://hooks.localhost:9/hook",
    ],
)
def test_loopback_webhooks_are_accepted(url: str) -> None:
    assert is_loopback_url(url)
    assert asyncio.run(loopback_push_url(url)) is True


@pytest.mark.parametrize(
    "url",
    [
        "http://192.0.2.1/hook",
        "https://example.com/hook",
        "http://10.0.0.1:8080/hook",
        "http://[2001:db8::1]/hook",
        "http://127.0.0.1.example.com/hook",
        "ftp://127.0.0.1/hook",
        "not a url",
        "",
    ],
)
def test_any_other_address_is_refused_and_logged(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert not is_loopback_url(url)
    with caplog.at_level(logging.WARNING, logger="recorder.kit.app"):
        assert asyncio.run(loopback_push_url(url)) is False
    assert "the kit delivers to loopback webhooks only" in caplog.text


DIFF = "--- a/x.py\n+++ b/x.py\n@@ -1 +1,2 @@\n x = 1\n+y = 2\n"  # (a task: updates to push)


def test_the_kit_refuses_to_deliver_to_another_address(
    kit: KitServer, caplog: pytest.LogCaptureFixture
) -> None:
    params = {
        "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": DIFF}]},
        "configuration": {"taskPushNotificationConfig": {"url": "http://192.0.2.1:9/hook"}},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    with caplog.at_level(logging.WARNING, logger="recorder.kit.app"):
        reply = httpx.post(
            f"{kit.url}/a2a/jsonrpc", json=body, headers={"A2A-Version": "1.0"}, timeout=10
        )
        assert reply.status_code == 200
        deadline = time.monotonic() + 10
        while "refused: the kit delivers to loopback" not in caplog.text:  # (bounded poll)
            assert time.monotonic() < deadline, "no refusal logged"
            time.sleep(0.01)
    assert "push notification to http://192.0.2.1:9/hook refused" in caplog.text
