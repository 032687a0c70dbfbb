"""Re-recording keeps the previous generated values where nothing else changed (no network)."""

from __future__ import annotations

import dataclasses
import re
import uuid
from pathlib import Path

import pytest
from helpers import TRANSCRIPTS

from recorder import Transcript, dumps, load, loads
from recorder.replay.rerecord import align_client_values, keep_recorded_values
from recorder.rules.ruleset import DEFAULT_RULES

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")
DATE = re.compile(r"^Date: .*$", re.MULTILINE)


def fresh_run(text: str) -> str:
    """The same conversation as a new run gives it: every uuid, time and Date regenerated."""
    # the scenarios' own made-up ids ("00000000-...") are the client's: a new run sends them again
    mapping: dict[str, str] = {}

    def regenerate(match: re.Match[str]) -> str:
        value = match.group()
        if value.startswith("00000000-"):
            return value
        return mapping.setdefault(value, str(uuid.uuid4()))

    text = UUID.sub(regenerate, text)
    text = TIME.sub(lambda m: "2031-01-02T03:04:05.678901Z", text)
    return DATE.sub("Date: Thu, 02 Jan 2031 03:04:05 GMT", text)


@pytest.mark.parametrize("name", sorted(p.name for p in TRANSCRIPTS.glob("*.http")))
def test_an_unchanged_scenario_keeps_its_file_byte_for_byte(name: str) -> None:
    previous = load(TRANSCRIPTS / name)
    fresh = loads(fresh_run(dumps(previous)))
    generated = [u for u in UUID.findall(dumps(previous)) if not u.startswith("00000000-")]
    assert fresh != previous or not generated  # (a file with only the client's ids: the same)
    assert dumps(keep_recorded_values(previous, fresh, DEFAULT_RULES)) == dumps(previous)


def test_a_changed_reply_shows_only_the_change() -> None:
    previous = load(TRANSCRIPTS / "03-review-task.http")
    changed = fresh_run(dumps(previous)).replace('"TASK_STATE_COMPLETED"', '"TASK_STATE_FAILED"')
    kept = dumps(keep_recorded_values(previous, loads(changed), DEFAULT_RULES))
    before = dumps(previous).split("\n")
    after = kept.split("\n")
    assert len(before) == len(after)
    differing = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert differing
    assert all("TASK_STATE_COMPLETED" in a and "TASK_STATE_FAILED" in b for a, b in differing)


def test_a_changed_request_takes_the_fresh_recording_whole() -> None:
    # keeping exchange 1's recorded task id while exchange 2 on names the fresh one would give
    # a file whose GetTask names a task no reply in it made
    previous = load(TRANSCRIPTS / "06-get-and-list-tasks.http")
    fresh = loads(fresh_run(dumps(previous)))
    second = fresh.exchanges[1]
    edited = dataclasses.replace(
        second, request=dataclasses.replace(second.request, target="/a2a/jsonrpc?x=1")
    )
    fresh = Transcript(exchanges=(fresh.exchanges[0], edited, *fresh.exchanges[2:]))
    kept = keep_recorded_values(previous, fresh, DEFAULT_RULES)
    assert kept == fresh


def test_a_scenario_with_an_exchange_more_is_taken_whole() -> None:
    previous = load(TRANSCRIPTS / "06-get-and-list-tasks.http")
    fresh = loads(fresh_run(dumps(previous)))
    longer = dataclasses.replace(fresh, exchanges=(*fresh.exchanges, fresh.exchanges[-1]))
    assert keep_recorded_values(previous, longer, DEFAULT_RULES) == longer


def test_a_value_only_a_later_exchange_pairs_is_kept_in_an_earlier_reply_too() -> None:
    # the previous file's first reply lacks the artifactId the fresh one has; only exchange 2
    # (GetTask) pairs the fresh id with the previous one, and the kept first reply has it back
    full = load(TRANSCRIPTS / "06-get-and-list-tasks.http")
    text = dumps(full)
    line = next(x for x in text.split("\n") if '"artifactId"' in x)
    previous = loads(text.replace(line + "\n", "", 1))
    kept = keep_recorded_values(previous, loads(fresh_run(text)), DEFAULT_RULES)
    assert dumps(kept) == text


def sdk_run(text: str) -> str:
    """A new run by a client that picks its own ids afresh too (an a2a-sdk client's uuid
    JSON-RPC ids and messageIds): every uuid regenerated, the client's included."""
    mapping: dict[str, str] = {}
    text = UUID.sub(lambda match: mapping.setdefault(match.group(), str(uuid.uuid4())), text)
    return fresh_run(text)


@pytest.mark.parametrize("name", sorted(p.name for p in TRANSCRIPTS.glob("*.http")))
def test_ids_the_client_picks_afresh_are_laid_back(name: str) -> None:
    previous = load(TRANSCRIPTS / name)
    fresh = loads(sdk_run(dumps(previous)))
    assert dumps(keep_recorded_values(previous, fresh, DEFAULT_RULES)) == dumps(previous)


def client_ids(ids: list[str]) -> Transcript:
    """GetTask requests whose JSON-RPC ids are `ids` (uuids the client chose)."""
    return loads(
        "# recorder-format: 1\n"
        + "".join(
            "\n### GetTask\nPOST /a2a/jsonrpc HTTP/1.1\nHost: localhost:41242\n"
            "Content-Type: application/json\n\n"
            f'{{"jsonrpc": "2.0", "id": "{value}", "method": "GetTask"}}\n\n'
            "HTTP/1.1 200 OK\nContent-Type: application/json\n\n"
            f'{{"jsonrpc": "2.0", "id": "{value}", "result": {{}}}}\n'
            for value in ids
        )
    )


def test_client_ids_are_laid_back_where_they_pair_one_to_one() -> None:
    a, b, c, d = (str(uuid.uuid4()) for _ in range(4))
    previous = client_ids([a, b])
    assert align_client_values(previous, client_ids([c, d]), DEFAULT_RULES) == previous
    # one previous id, two fresh ones (or two previous ids, one fresh): not one-to-one
    fresh = client_ids([c, d])
    assert align_client_values(client_ids([a, a]), fresh, DEFAULT_RULES) == fresh
    fresh = client_ids([c, c])
    assert align_client_values(client_ids([a, b]), fresh, DEFAULT_RULES) == fresh


def test_client_values_other_than_ids_are_not_laid_back() -> None:
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    previous, fresh = client_ids([a]), client_ids([b])
    other = dumps(fresh).replace('"method": "GetTask"', '"method": "ListTasks"', 1)
    assert align_client_values(previous, loads(other), DEFAULT_RULES) == loads(other)
    # a time is loose, not an id: a request that differs in one is not the same request
    timed = dumps(previous).replace(a, "2031-01-02T03:04:05Z", 1)
    retimed = dumps(previous).replace(a, "2032-01-02T03:04:05Z", 1)
    assert align_client_values(loads(timed), loads(retimed), DEFAULT_RULES) == loads(retimed)


def test_a_new_client_user_agent_is_one_changed_line_and_keeps_the_ids() -> None:
    # a client library upgraded between two recordings (httpx 0.28 -> 0.29): the same calls
    previous = load(Path(__file__).parent.parent.parent / "docs/examples/01-ask-and-review.http")
    agent = re.search(r"^User-Agent: (.*)$", dumps(previous), re.MULTILINE)
    assert agent is not None
    upgraded = fresh_run(dumps(previous)).replace(agent.group(1), "python-httpx/9.9.9")
    kept = dumps(keep_recorded_values(previous, loads(upgraded), DEFAULT_RULES))
    before, after = dumps(previous).split("\n"), kept.split("\n")
    assert len(before) == len(after)
    differing = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    agents = sum(1 for line in before if line.startswith("User-Agent:"))
    assert agents >= 1
    assert differing == [(agent.group(0), "User-Agent: python-httpx/9.9.9")] * agents


def test_a_header_added_and_one_removed_change_only_their_lines() -> None:
    previous = load(TRANSCRIPTS / "06-get-and-list-tasks.http")
    fresh = loads(fresh_run(dumps(previous)))
    first = fresh.exchanges[0]
    headers = [(n, v) for n, v in first.request.headers if n.lower() != "a2a-version"]
    edited = dataclasses.replace(
        first,
        request=dataclasses.replace(first.request, headers=[*headers, ("X-Trace", "on")]),
    )
    fresh = Transcript(exchanges=(edited, *fresh.exchanges[1:]))
    kept = keep_recorded_values(previous, fresh, DEFAULT_RULES)
    request = previous.exchanges[0].request
    expected = [(n, v) for n, v in request.headers if n.lower() != "a2a-version"]
    assert len(expected) == len(request.headers) - 1
    assert kept.exchanges[0].request == dataclasses.replace(
        request, headers=[*expected, ("X-Trace", "on")]
    )
    assert kept.exchanges[0].response == previous.exchanges[0].response
    assert kept.exchanges[1:] == previous.exchanges[1:]  # the later ones kept whole


@pytest.mark.parametrize(
    ("before", "after"), [("12345678901234567.89", "12345678901234567.88"), ("-0", "0")]
)
def test_a_request_whose_number_changed_is_another_request(before: str, after: str) -> None:
    # one float holds both numbers: read as floats, the requests were alike but for their
    # uuids, and the fresh ids were laid back over a scenario that had changed
    a, c = str(uuid.uuid4()), str(uuid.uuid4())

    def call(value: str, amount: str) -> Transcript:
        return loads(
            "# recorder-format: 1\n\n### SendMessage\nPOST /a2a/jsonrpc HTTP/1.1\n"
            "Host: localhost:41242\nContent-Type: application/json\n\n"
            f'{{"jsonrpc": "2.0", "id": "{value}", "method": "SendMessage", '
            f'"params": {{"amount": {amount}}}}}\n\n'
            "HTTP/1.1 200 OK\nContent-Type: application/json\n\n"
            f'{{"jsonrpc": "2.0", "id": "{value}", "result": {{}}}}\n'
        )

    fresh = call(c, after)
    assert align_client_values(call(a, before), fresh, DEFAULT_RULES) == fresh
    assert align_client_values(call(a, before), call(c, before), DEFAULT_RULES) == call(a, before)
