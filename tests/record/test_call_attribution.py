"""Which A2A exchange an agent's call belongs to (`recorder.record.calls`, pure): lineage,
links, the one exchange open, pending then ambiguous."""

from __future__ import annotations

from pathlib import Path

import pytest

from recorder.record.calls import Attributor, Placed, call_text, markers_of
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.downstream import parse_downstream

ALPHA = "--- a/src/alpha.py\n+++ b/src/alpha.py\n@@ -1 +1,2 @@\n+print('alpha is here today')\n"
BETA = "--- a/lib/beta.py\n+++ b/lib/beta.py\n@@ -1 +1,2 @@\n+print('beta is there tomorrow')\n"


def two_open() -> Attributor:
    calls = Attributor()
    calls.opened(1, ("c", 1), ["2.0", "SendStreamingMessage", ALPHA])
    calls.opened(2, ("c", 2), ["2.0", "SendStreamingMessage", BETA])
    return calls


def prompt(text: str) -> str:
    body = {
        "messages": [{"role": "system", "content": "Review."}, {"role": "user", "content": text}]
    }
    return call_text("/v1/chat/completions", [("Content-Type", "application/json")], body, "")


def test_a_call_carrying_one_exchanges_text_goes_to_it_among_several_open() -> None:
    calls = two_open()
    found = calls.attribute(prompt(BETA), ["connection:a"])
    assert (found.ticket, found.file_key, found.how) == (2, ("c", 2), "lineage")
    # a line of the text is enough (an agent that quotes part of it)
    found = calls.attribute(prompt("look at: +print('alpha is here today')"), [])
    assert (found.ticket, found.how) == (1, "lineage")


def test_values_two_exchanges_share_name_neither() -> None:
    calls = two_open()
    found = calls.attribute(prompt("SendStreamingMessage 2.0"), [])
    assert found.how == "pending"
    assert found.candidates == ((1, 0), (2, 0))


def test_the_ids_a_reply_generated_name_its_exchange() -> None:
    calls = two_open()
    calls.learned(2, ["0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a", "ok"])
    found = calls.attribute(
        call_text("/tasks/0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a", [], None, ""), []
    )
    assert (found.ticket, found.how) == (2, "lineage")


def test_the_one_exchange_open_takes_a_call_that_says_nothing_with_its_frame() -> None:
    calls = two_open()
    calls.closed(1)
    calls.framed(2, 3)
    found = calls.attribute(call_text("/mcp", [], {"method": "initialize"}, ""), [])
    assert (found.ticket, found.frame, found.how) == (2, 3, "alone")


def test_a_pending_call_is_placed_by_a_later_call_of_its_session() -> None:
    calls = two_open()
    calls.framed(2, 2)
    initialize = calls.attribute(call_text("/mcp", [], {"method": "initialize"}, ""), [])
    assert initialize.how == "pending"
    assert calls.place(10, initialize, ["connection:x"]) == []
    calls.more_links(10, ["session:s-beta"])  # handed out in its reply
    notified = calls.attribute("notifications/initialized", ["session:s-beta", "connection:x"])
    assert notified.how == "pending"
    calls.place(11, notified, ["session:s-beta", "connection:x"])
    tool = calls.attribute(prompt(BETA), ["session:s-beta", "connection:x"])
    assert (tool.ticket, tool.how) == (2, "lineage")
    placed = calls.place(12, tool, ["session:s-beta", "connection:x"])
    assert placed == [Placed(10, 2, 2, ambiguous=False), Placed(11, 2, 2, ambiguous=False)]
    # the session's later calls follow it
    later = calls.attribute("tools/list", ["session:s-beta", "connection:y"])
    assert (later.ticket, later.how) == (2, "link")


def test_a_call_nothing_places_stays_with_the_earliest_exchange_written_ambiguous() -> None:
    calls = two_open()
    calls.framed(1, 1)
    found = calls.attribute("tools/list", [])
    calls.place(10, found, [])
    assert calls.done(2, written=True) == []  # exchange 1 may still tell
    assert calls.done(1, written=False) == [Placed(10, 2, 0, ambiguous=True)]


def test_a_call_whose_exchanges_were_not_recorded_has_none() -> None:
    calls = two_open()
    calls.place(10, calls.attribute("tools/list", []), [])
    calls.done(1, written=False)
    assert calls.done(2, written=False) == [Placed(10, None, 0, ambiguous=True)]


def test_a_call_before_any_exchange_belongs_to_none() -> None:
    found = Attributor().attribute(prompt(ALPHA), [])
    assert (found.ticket, found.how) == (None, "none")


def test_markers_are_texts_and_ids_not_method_names() -> None:
    found = markers_of(["2.0", "SendMessage", "ROLE_USER", "application/json", ALPHA, "hi there"])
    assert "SendMessage" not in found and "application/json" not in found
    assert "hi there" not in found  # (too short to name a conversation)
    assert ALPHA.strip() in found and "+print('alpha is here today')" in found
    assert markers_of(["6f93a34d-a986-43f6-b2d2-05834d94dcd9"]) == {
        "6f93a34d-a986-43f6-b2d2-05834d94dcd9"
    }


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        (
            "model=https://api.example/v1@41260",
            ("model", "https://api.example/v1", "127.0.0.1", 41260),
        ),
        (
            "tools=http://127.0.0.1:8931/mcp@0.0.0.0:0",
            ("tools", "http://127.0.0.1:8931/mcp", "0.0.0.0", 0),
        ),
        ("peer-1=http://h@[::1]:9", ("peer-1", "http://h", "::1", 9)),
    ],
)
def test_a_downstream_is_spelled_name_url_at_host_port(
    spec: str, parsed: tuple[str, str, str, int]
) -> None:
    assert parse_downstream(spec) == parsed


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("https://api.example/v1@41260", "expected NAME=URL@[HOST:]PORT"),
        ("1model=https://api.example@1", "a downstream's name is a letter"),
        ("model=https://api.example", "expected URL@[HOST:]PORT"),
        ("model=https://u:sk-1@api.example@1", "the URL holds credentials"),
        ("model=https://api.example/v1?key=k@1", "has a query"),
        ("model=ftp://api.example@1", "expected an http:// or https:// URL"),
        ("model=https://api.example@host:x", "expected [HOST:]PORT"),
        ("model=https://api.example@70000", "invalid port 70000"),
    ],
)
def test_a_downstream_spelled_otherwise_says_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("?", r"\?")) as got:
        parse_downstream(spec)
    assert "sk-1" not in str(got.value)


def test_a_call_after_every_exchange_ended_stays_with_the_latest_at_once() -> None:
    calls = two_open()
    for ticket in (1, 2):
        calls.closed(ticket)
        calls.done(ticket, written=True)
    found = calls.attribute("tools/list", [])
    assert (found.how, found.candidates) == ("pending", ((2, 0),))
    assert calls.place(10, found, []) == [Placed(10, 2, 0, ambiguous=True)]


def test_a_downstreams_listener_is_the_recorders_own_no_webhook_is_delivered_there(
    tmp_path: Path,
) -> None:
    # a push config's webhook at the listener of the agent's calls would have the recorder
    # deliver into its own listener (recorded as a call of the agent's): refused as its own
    # address is (fails on the old code: the downstream's address was not among its own)
    proxy = create_proxy_app("http://127.0.0.1:9", out=tmp_path, push_loopback=True)
    listener = proxy.add_downstream("model", "http://127.0.0.1:8", port=0)
    try:
        port = listener.sock.getsockname()[1]
        refusal = proxy.push.screen(f"http://127.0.0.1:{port}/hook")
        assert refusal is not None and "own address" in refusal, refusal
        assert proxy.push.screen(f"http://127.0.0.1:{port + 1 if port < 65535 else 1}/h") is None
    finally:
        listener.sock.close()
