"""A recording that holds the same transcripts many times over (issue 39): one branch stands
for identical files, so a request costs what it costs with one copy, and every answer, id,
tie and closest hint is what one branch per copy gives (pure, no network).

The reference is the same recording with each copy's exchange titles changed: titles are
not matched or replied, but they make the files unequal, so each copy is its own branch as
before identical files were grouped."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers import TRANSCRIPTS

from recorder import Transcript, load
from recorder.disk.transcripts import find_transcripts
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve.book import Book, Found, NotFound
from recorder.serve.match import LiveRequest, Matching
from recorder.serve.steps import prepare

RULES = PairingRules(DEFAULT_RULES)
GOLDENS = len(list(find_transcripts([TRANSCRIPTS])))


def copies(count: int, *, titled: bool = False) -> list[Transcript]:
    """The goldens `count` times over, each copy in its own folder; `titled`: each copy's
    exchange titles its own (files alike in all that is matched and replied, not equal)."""
    originals = [load(path) for path in find_transcripts([TRANSCRIPTS])]
    out = []
    for number in range(count):
        for transcript in originals:
            exchanges = transcript.exchanges
            if titled:
                exchanges = tuple(
                    dataclasses.replace(exchange, title=f"{exchange.title} ({number})")
                    for exchange in exchanges
                )
            source = f"copy-{number}/{Path(transcript.source or '').name}"
            out.append(dataclasses.replace(transcript, exchanges=exchanges, source=source))
    return out


def book(transcripts: list[Transcript]) -> Book:
    """The stand-in's book, its new ids numbered (two books of one run hand out alike)."""
    numbers = itertools.count(1)
    return Book(
        prepare(transcripts, RULES), RULES, new_id=lambda value, _: f"{value}-{next(numbers)}"
    )


def fresh_ids(value: Any, chance: random.Random) -> Any:
    """A body as an SDK client sends it: its own uuid for each messageId and JSON-RPC id
    (from `chance`: two plays of one seed send alike)."""
    if isinstance(value, dict):
        out = {key: fresh_ids(item, chance) for key, item in value.items()}
        for name in ("messageId", "id") if "jsonrpc" in value else ("messageId",):
            if name in value:
                out[name] = str(uuid.UUID(int=chance.getrandbits(128), version=4))
        return out
    if isinstance(value, list):
        return [fresh_ids(item, chance) for item in value]
    return value


def play(served: Book, rounds: int) -> list[Any]:
    """Each golden played `rounds` times in turn, as a client would (fresh ids of its own,
    the ids handed out sent back); what each request got: the exchange that answered, its
    conversation and pairings, the ties noted, or the closest hint. Every golden is played
    with one request changed to match nothing as well."""
    outcomes: list[Any] = []
    chance = random.Random(39)
    golden = [load(path) for path in find_transcripts([TRANSCRIPTS])]
    for _ in range(rounds):
        for transcript in golden:
            handed: dict[str, str] = {}
            for index, exchange in enumerate(transcript.exchanges):
                request = exchange.request
                target, body = request.target, request.body.decode()
                for recorded, given in handed.items():
                    target, body = target.replace(recorded, given), body.replace(recorded, given)
                try:
                    value = json.loads(body) if body else None
                except ValueError:
                    value = None  # (a malformed call: as recorded)
                if value is not None:
                    body = json.dumps(fresh_ids(value, chance))
                if index == len(transcript.exchanges) - 1:
                    # (a member no recording has: the closest hint)
                    unmatched = {**value, "unrecorded": 1} if isinstance(value, dict) else None
                    wrong = json.dumps(unmatched) if unmatched else f"{body}#"
                    outcomes.append(ask(served, request, target, wrong))
                outcomes.append(ask(served, request, target, body))
                last = outcomes[-1]
                if last[0] == "found":
                    handed.update(last[4])
    return outcomes


def ask(served: Book, request: Any, target: str, body: str) -> Any:
    headers = [(name, value) for name, value in request.headers]
    result = served.find(LiveRequest(request.method, target, headers, body.encode()))
    # (a tie with a file: with which golden, once per copy of it)
    ties = Counter(
        (t.chosen.file, t.chosen.index, t.other.file % GOLDENS, t.same_reply)
        for t in served.ties
        for _ in range(1 + t.copies)
    )
    if isinstance(result, NotFound):
        closest = result.closest
        where = None if closest is None else (closest.file, closest.index)
        return ("missed", where, tuple(result.differences), ties)
    assert isinstance(result, Found)
    branch = result.branch
    return (
        "found",
        (result.step.file, result.step.index),
        result.conversation.number,
        sorted(branch.used),
        dict(branch.to_live),
        sorted(branch.echo.items()),
        ties,
    )


def test_identical_copies_answer_as_one_branch_per_copy_would() -> None:
    # three copies, played four times: each copy opens a conversation in turn, then round again
    grouped = book(copies(3))
    alone = book(copies(3, titled=True))
    assert len(set(grouped._first_copy)) == len(grouped.files) // 3  # (grouped: the copies)
    assert len(set(alone._first_copy)) == len(alone.files)  # (not grouped: one branch each)
    got, expected = play(grouped, 4), play(alone, 4)
    assert got == expected
    answered = Counter(outcome[1][0] // GOLDENS for outcome in got if outcome[0] == "found")
    assert len(answered) == 3  # (every copy answered: the requests went round them)
    assert any(outcome[-1] for outcome in got)  # (ties were noted and compared)
    assert any(outcome[0] == "missed" and outcome[1] for outcome in got)  # (closest hints)


def test_a_request_compares_as_many_recorded_requests_with_fifty_copies_as_with_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compared = Counter[int]()
    original = Matching.compare

    def counted(self: Matching, *args: Any) -> list[str]:
        compared[len(served.files)] += 1
        return original(self, *args)

    monkeypatch.setattr(Matching, "compare", counted)
    for count in (1, 50):
        served = book(copies(count))
        play(served, 1)
    assert compared[GOLDENS] > 50  # (the goldens' requests were compared)
    assert compared[GOLDENS * 50] == compared[GOLDENS]


def test_a_tie_with_identical_copies_counts_them_in_one_line() -> None:
    import logging

    from recorder.serve import StandIn

    stand_in = StandIn(copies(4), DEFAULT_RULES)
    request = load(TRANSCRIPTS / "02-message-reply.http").exchanges[0].request
    body = json.dumps(fresh_ids(json.loads(request.body), random.Random())).encode()
    live = LiveRequest(request.method, request.target, list(request.headers), body)
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("recorder.serve")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        assert isinstance(stand_in.take(live), Found)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    lines = [r.getMessage() for r in records if "match the request as well" in r.getMessage()]
    assert any(
        line.startswith("copy-0/02-message-reply.http:")
        and " and copy-1/02-message-reply.http:" in line
        and "(and 2 identical copies) match the request as well" in line
        and line.endswith("their replies are alike")
        for line in lines
    ), lines
