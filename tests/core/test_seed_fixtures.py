"""The guide's examples (shared/seed) rebuilt as transcripts: the lines the guide shows appear,
in order, in the canonical files, and the files carry what the guide says they carry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from seed_text import SEED_MESSAGE_REPLY, SEED_STREAM

from recorder import dumps, load

FIXTURES = Path(__file__).parent.parent / "fixtures" / "format"


def shown_lines(seed: str) -> list[str]:
    """The lines the guide shows ("…" alone elides lines; a line ending in "…" is a prefix)."""
    return [line for line in seed.split("\n") if line != "…"]


def assert_shown_in_order(seed: str, text: str) -> None:
    """Every line the guide shows is in the transcript, in the guide's order."""
    lines = iter(text.split("\n"))
    for want in shown_lines(seed):
        prefix = want[:-1].rstrip(", ") if want.endswith("…") else None
        for line in lines:
            if (prefix is not None and line.startswith(prefix)) or line == want:
                break
        else:
            pytest.fail(f"the guide's line {want!r} is not in the transcript (in order)")


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.http")))
def test_fixture_is_canonical(name: str) -> None:
    path = FIXTURES / name
    assert dumps(load(path)) == path.read_text(encoding="utf-8")


def test_message_reply_shows_the_guides_lines() -> None:
    path = FIXTURES / "02-message-reply.http"
    assert_shown_in_order(SEED_MESSAGE_REPLY, path.read_text(encoding="utf-8"))
    (exchange,) = load(path).exchanges
    assert exchange.request.json["params"]["message"]["parts"] == [
        {"text": "What languages can you review?"}
    ]
    result = exchange.response.json["result"]
    assert list(result) == ["message"]  # answered by a message, no task


def test_stream_keeps_each_frame_on_one_data_line() -> None:
    path = FIXTURES / "04-streaming-review.http"
    assert_shown_in_order(
        SEED_STREAM, path.read_text(encoding="utf-8").replace("; charset=utf-8", "")
    )
    (exchange,) = load(path).exchanges
    events = exchange.response.events
    assert events is not None
    kinds = [next(iter(json.loads(e.data)["result"])) for e in events if e.data]
    assert kinds == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]


def test_errors_exchange_three_is_the_old_method_name() -> None:
    exchanges = load(FIXTURES / "11-errors.http").exchanges
    third = exchanges[2]
    assert third.request.json["method"] == "message/send"
    assert third.response.json["error"]["code"] == -32601
    assert exchanges[1].request.body == b'{"jsonrpc":"2.0","id":2,"method":'
