"""Re-recording keeps the previous generated values where nothing else changed (no network)."""

from __future__ import annotations

import dataclasses
import re
import uuid
from pathlib import Path

import pytest

from recorder import Transcript, dumps, load, loads
from recorder.replay.rerecord import keep_recorded_values
from recorder.rules import DEFAULT_RULES

TRANSCRIPTS = Path(__file__).parent.parent.parent / "transcripts"
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
    assert fresh != previous or not UUID.search(dumps(previous))
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
