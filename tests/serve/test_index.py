"""The stand-in's index of the recorded requests (issue 39): a live request scores only the
steps filed with what it shares, and never misses one that matches.

Every request of the goldens (all three bindings), sent as recorded and as other clients send
it (fresh JSON-RPC ids and messageIds, A2A 0.3's spelling, ProtoJSON defaults written out), is
checked against every step by the matching itself: each step that matches is among the
index's candidates. And a recording that holds many suites gives a request the candidates of
its own suite only, however many there are."""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from recorder import Transcript, load
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve.book import Book, Branch
from recorder.serve.index import StepIndex
from recorder.serve.match import LiveRequest, Matching
from recorder.serve.spelling import METHODS
from recorder.serve.steps import Step, prepare

RULES = PairingRules(DEFAULT_RULES)
GOLDENS = sorted((Path(__file__).parent.parent.parent / "transcripts").glob("*.http"))
_LEGACY = {modern: legacy for legacy, modern in METHODS.items()}


def goldens() -> list[Transcript]:
    return [load(path) for path in GOLDENS]


def fresh_ids(value: Any) -> Any:
    """A body as a client that makes its own ids sends it: a uuid for each JSON-RPC id and
    messageId."""
    if isinstance(value, dict):
        out = {key: fresh_ids(item) for key, item in value.items()}
        if "messageId" in value:
            out["messageId"] = str(uuid.uuid4())
        if "jsonrpc" in value and "id" in value:
            out["id"] = str(uuid.uuid4())
        return out
    if isinstance(value, list):
        return [fresh_ids(item) for item in value]
    return value


def spelled_0_3(value: Any) -> Any:
    """A JSON-RPC call in A2A 0.3's spelling (what `recorder.serve.spelling` reads back)."""
    if not isinstance(value, dict) or value.get("method") not in _LEGACY:
        return value
    out = dict(value, method=_LEGACY[value["method"]])
    params = value.get("params")
    message = params.get("message") if isinstance(params, dict) else None
    if isinstance(message, dict):
        roles = {"ROLE_USER": "user", "ROLE_AGENT": "agent"}
        parts = [
            {"kind": "text", **part} if isinstance(part, dict) and "text" in part else part
            for part in message.get("parts", [])
        ]
        legacy = dict(message, kind="message", parts=parts)
        if message.get("role") in roles:
            legacy["role"] = roles[message["role"]]
        out["params"] = dict(params, message=legacy)
    return out


def with_defaults(value: Any) -> Any:
    """A body with ProtoJSON defaults written out (an SDK that sends `"metadata": {}`)."""
    if isinstance(value, dict):
        out = {key: with_defaults(item) for key, item in value.items()}
        if "parts" in value or "messageId" in value:
            out.setdefault("metadata", {})
            out.setdefault("extensions", [])
        return out
    if isinstance(value, list):
        return [with_defaults(item) for item in value]
    return value


def variants(request: Any) -> list[LiveRequest]:
    """The recorded request as sent, and as other clients send it."""
    bodies = [request.body]
    try:
        value = json.loads(request.body) if request.body else None
    except ValueError:
        value = None
    if value is not None:
        for change in (fresh_ids, spelled_0_3, with_defaults):
            bodies.append(json.dumps(change(value)).encode())
    headers = [(name, value) for name, value in request.headers]
    return [LiveRequest(request.method, request.target, headers, body) for body in bodies]


def _matches(book: Book, step: Step, live: LiveRequest) -> bool:
    """Whether the matching itself takes `step` for `live` in a new conversation."""
    return not isinstance(book._try(Branch(step.file), step, live), Matching)


def recorded_0_3(transcript: Transcript) -> Transcript:
    """A golden as a 0.3 client would have recorded it (its requests in 0.3's spelling)."""
    exchanges = []
    for exchange in transcript.exchanges:
        request = exchange.request
        try:
            body = json.loads(request.body) if request.body else None
        except ValueError:
            body = None
        if body is not None:
            request = dataclasses.replace(request, body=json.dumps(spelled_0_3(body)).encode())
        exchanges.append(dataclasses.replace(exchange, request=request))
    source = f"0.3/{Path(transcript.source or '').name}"
    return dataclasses.replace(transcript, exchanges=tuple(exchanges), source=source)


def test_every_step_a_request_matches_is_among_its_candidates() -> None:
    # the goldens, and the goldens as 0.3 clients recorded them: each spelling is sent to both
    files = prepare([*goldens(), *map(recorded_0_3, goldens())], RULES)
    book = Book(files, RULES)
    starters = [step for steps in files for step in steps if not step.needs]
    index = StepIndex(starters, RULES)
    tried = matched = offered = 0
    for steps in files:
        for step in steps:
            for live in variants(step.exchange.request):
                takes = [other for other in starters if _matches(book, other, live)]
                candidates = index.candidates(live)
                missing = [other.where for other in takes if other not in candidates]
                assert not missing, (step.where, live.body[:120], missing)
                tried += 1
                matched += len(takes)
                offered += len(candidates)
    assert matched >= tried // 2  # (the variants do match: the check is not empty)
    # and the index is a filter: far fewer candidates than starters per request
    assert offered < tried * len(starters) / 10


def suites(copies: int) -> list[Transcript]:
    """The goldens `copies` times, copy k's client texts marked as its own."""

    def marked(value: Any, number: int) -> Any:
        if isinstance(value, dict):
            return {
                key: f"{item} ({number})" if key == "text" else marked(item, number)
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [marked(item, number) for item in value]
        return value

    out = []
    for number in range(copies):
        for transcript in goldens():
            exchanges = []
            for exchange in transcript.exchanges:
                request = exchange.request
                try:
                    body = json.loads(request.body) if request.body else None
                except ValueError:
                    body = None
                if body is not None and number:
                    body = marked(body, number)
                    request = dataclasses.replace(request, body=json.dumps(body).encode())
                exchanges.append(dataclasses.replace(exchange, request=request))
            source = f"suite-{number}/{Path(transcript.source or '').name}"
            out.append(dataclasses.replace(transcript, exchanges=tuple(exchanges), source=source))
    return out


@pytest.mark.parametrize("name", ["02-message-reply.http", "13-rest-message-reply.http"])
def test_a_request_of_one_suite_gets_that_suites_candidates_however_many_are_served(
    name: str,
) -> None:
    request = load(GOLDENS[0].parent / name).exchanges[0].request
    live = variants(request)[1]  # (fresh ids)
    counts = []
    for copies in (1, 5, 20):
        files = prepare(suites(copies), RULES)
        index = StepIndex([s for steps in files for s in steps if not s.needs], RULES)
        found = index.candidates(live)
        assert all(step.path.startswith("suite-0/") for step in found), [s.where for s in found]
        counts.append(len(found))
    assert counts[0] >= 1 and max(counts) == counts[0]  # (more suites: no more candidates)
