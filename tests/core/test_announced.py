"""The one reading of where a started server listens (`helpers.announced_address`), held to
the lines the servers print (a server that changed its line fails here, not in five tests)."""

from __future__ import annotations

import pytest
from helpers import announced_address


@pytest.mark.parametrize(
    ("line", "address"),
    [
        (
            "recorder record: listening on http://127.0.0.1:41000, forwarding to"
            " http://localhost:41242\n",
            "http://127.0.0.1:41000",
        ),
        ("recorder record: gRPC listening on 127.0.0.1:41001, forwarding to x", "127.0.0.1:41001"),
        ("code-reviewer listening on http://127.0.0.1:41242\n", "http://127.0.0.1:41242"),
        ("code-reviewer listening on http://[::1]:41242\n", "http://[::1]:41242"),
        ("  gRPC        127.0.0.1:41243\n", "127.0.0.1:41243"),
        (
            "recorder serve: serving 12 exchanges of 5 transcripts on http://127.0.0.1:5000"
            " (Ctrl-C stops)\n",
            "http://127.0.0.1:5000",
        ),
        ("recorder serve: serving the gRPC binding on 127.0.0.1:5001\n", "127.0.0.1:5001"),
    ],
)
def test_a_started_server_says_where_it_listens(line: str, address: str) -> None:
    assert announced_address(line) == address


def test_a_line_without_an_address_is_a_clear_failure() -> None:
    with pytest.raises(AssertionError, match="no address in"):
        announced_address("recorder record: writing transcripts to out/ (Ctrl-C stops)\n")
