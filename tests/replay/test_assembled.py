"""Structure-tolerant places (issue 33): an answer cut otherwise from run to run, one text part
or two, a streamed artifact in one chunk or four, is the same answer. Pure:
`recorder.rules.assembly`, the comparison through ReplayState on the shipped goldens and edited
copies of them, and `recorder.rules.noise.propose` on such replies; no network."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from recorder.disk.transcripts import load
from recorder.errors import RulesError
from recorder.format.model import Exchange, Response
from recorder.format.sse import SseEvent
from recorder.replay.verdict.state import ReplayState
from recorder.rules.assembly import assemble, joined_parts, joined_text
from recorder.rules.noise import Replies, propose
from recorder.rules.ruleset import DEFAULT_RULES, Rules, rules_from_text

GOLDENS = Path(__file__).resolve().parent.parent.parent / "transcripts"
REVIEW = str(GOLDENS / "03-review-task.http")
STREAM = str(GOLDENS / "04-streaming.http")
JOINED = "$.result.task.artifacts[0].parts[*].text"

CHECK_REVIEW = """\
checks:
  - path: "$.result.task.artifacts[*].parts[*].text"
    in: "03-review-task.http#1"
    assert:
      - contains_all: ["src/payments.py:12", "[todo]", "[debug-print]"]
"""
CHECK_STREAM = """\
checks:
  - path: "$.result.task.artifacts[*].parts[*].text"
    in: "04-streaming.http#1"
    assert:
      - contains_all: ["src/payments.py:12", "[todo]", "[debug-print]"]
"""
ASSEMBLED_STREAM = 'assembled: ["04-streaming.http#1"]\n'


def state(path: str, rules: Rules) -> ReplayState:
    return ReplayState(
        rules, recorded_base="http://localhost:41242", live_base="http://localhost:41242",
        file=path,
    )  # fmt: skip


def review() -> Exchange:
    return load(REVIEW).exchanges[0]


def stream() -> Exchange:
    return load(STREAM).exchanges[0]


def in_two_parts(response: Response, edit: Any = None) -> Response:
    """The review's artifact text cut in two text parts at its first line break."""
    value = json.loads(response.body)
    parts = value["result"]["task"]["artifacts"][0]["parts"]
    text = parts[0]["text"] if edit is None else edit(parts[0]["text"])
    first, _, rest = text.partition("\n")
    parts[:] = [{**parts[0], "text": first}, {**parts[0], "text": rest}]
    return dataclasses.replace(response, body=json.dumps(value).encode())


def in_chunks(response: Response, count: int, edit: Any = None) -> Response:
    """The stream with its artifact update cut in `count` chunks (append, lastChunk), as a
    streaming agent sends it."""
    events: list[SseEvent] = []
    for event in response.events or ():
        if event.data is None or "artifactUpdate" not in event.data:
            events.append(event)
            continue
        value = json.loads(event.data)
        part = value["result"]["artifactUpdate"]["artifact"]["parts"][0]
        text = part["text"] if edit is None else edit(part["text"])
        lines = text.split("\n")
        size = -(-len(lines) // count)
        pieces = ["\n".join(lines[n : n + size]) for n in range(0, len(lines), size)]
        for n, piece in enumerate(pieces):
            chunk = copy.deepcopy(value)
            update = chunk["result"]["artifactUpdate"]
            update["artifact"]["parts"] = [{**part, "text": piece}]
            if n:
                update["append"] = True
            if n == len(pieces) - 1 and n:
                update["lastChunk"] = True
            events.append(dataclasses.replace(event, data=json.dumps(chunk)))
    return dataclasses.replace(response, events=tuple(events))


# --- assembly (pure) --------------------------------------------------------------------------


def test_the_text_parts_of_a_message_join_with_a_line_break_other_parts_kept_in_place() -> None:
    parts = [{"data": {"a": 1}}, {"text": "one", "mediaType": "text/plain"}, {"text": "two"}]
    assert joined_text(parts) == "one\ntwo"
    assert joined_text([{"data": 1}]) is None
    value = {"message": {"parts": parts}, "history": [{"parts": [{"text": "x"}]}]}
    assert joined_parts(value) == {
        "message": {"parts": [{"data": {"a": 1}}, {"text": "one\ntwo", "mediaType": "text/plain"}]},
        "history": [{"parts": [{"text": "x"}]}],
    }
    assert value["message"]["parts"] == parts  # a copy: the value is left as it was


def _frames(response: Response) -> list[Any]:
    return [json.loads(e.data) for e in response.events or () if e.data is not None]


def test_a_stream_assembles_as_the_client_assembles_it_whatever_its_chunks() -> None:
    golden = stream().response
    whole = assemble(_frames(golden))
    for count in (2, 3, 4):
        assert assemble(_frames(in_chunks(golden, count))) == whole
    result = whole["result"]
    assert result["states"] == [
        "TASK_STATE_SUBMITTED",
        "TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED",
    ]
    assert result["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    (artifact,) = result["task"]["artifacts"]
    assert artifact["parts"][0]["text"].startswith("Reviewed 1 file: 4 comments.")
    assert whole["jsonrpc"] == "2.0" and whole["id"] == 1


def test_a_chunk_without_append_replaces_its_artifact_and_repeated_states_are_said_once() -> None:
    def chunk(text: str, **flags: bool) -> dict[str, Any]:
        artifact = {"artifactId": "a", "parts": [{"text": text}]}
        return {"artifactUpdate": {"taskId": "t", "artifact": artifact, **flags}}

    working = {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "WORKING"}}}
    frames = [working, working, chunk("x"), chunk("y"), chunk("z", append=True)]
    assert assemble(frames) == {  # (the HTTP+JSON binding's frames: no `result` level)
        "task": {
            "id": "t",
            "contextId": "c",
            "status": {"state": "WORKING"},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "y\nz"}]}],
        },
        "states": ["WORKING"],
    }


# --- the rules' `assembled` key ---------------------------------------------------------------


def test_assembled_names_exchanges_as_checks_scope_them() -> None:
    rules = rules_from_text('assembled: ["04-*.http#1", "07-x.http"]\n', "rules.yaml")
    assert rules.assembles("/a/04-streaming.http", 1)
    assert not rules.assembles("/a/04-streaming.http", 2)
    assert rules.assembles("07-x.http", 9)
    assert not DEFAULT_RULES.assembles("/a/04-streaming.http", 1)
    with pytest.raises(RulesError, match=r'rules.yaml:2: assembled: expected "FILE#N"'):
        rules_from_text('version: 1\nassembled: ["dir/04.http#0"]\n', "rules.yaml")


# --- the comparison ---------------------------------------------------------------------------


def test_a_checked_text_is_its_parts_joined_however_they_are_cut() -> None:
    golden = review()
    rules = rules_from_text(CHECK_REVIEW, "rules.yaml")
    assert state(REVIEW, rules).compare(golden, in_two_parts(golden.response), number=1) == []
    wrong_file = in_two_parts(golden.response, lambda t: t.replace("payments.py", "payment.py"))
    (mismatch,) = state(REVIEW, rules).compare(golden, wrong_file, number=1)
    assert (mismatch.path, mismatch.check) == (JOINED, "contains_all")
    assert mismatch.message == '"src/payments.py:12" not found'


def test_an_assembled_exchange_takes_its_text_parts_joined_without_a_check() -> None:
    golden = review()
    live = in_two_parts(golden.response)
    plain = [m.path for m in state(REVIEW, DEFAULT_RULES).compare(golden, live, number=1)]
    assert plain  # cut otherwise, compared part by part: it differs
    rules = rules_from_text('assembled: ["03-review-task.http#1"]\n', "rules.yaml")
    assert state(REVIEW, rules).compare(golden, live, number=1) == []
    changed = in_two_parts(golden.response, lambda t: t.replace("[todo]", "[fixme]"))
    (mismatch,) = state(REVIEW, rules).compare(golden, changed, number=1)
    assert mismatch.path == "$.result.task.artifacts[0].parts[0].text"


def test_a_stream_cut_in_other_chunks_fails_frame_by_frame_and_passes_assembled() -> None:
    golden = stream()
    live = in_chunks(golden.response, 4)
    (frames, *_) = state(STREAM, rules_from_text(CHECK_STREAM, "r.yaml")).compare(
        golden, live, number=1
    )
    assert (frames.path, frames.expected, frames.actual) == ("frames", 4, 6)
    rules = rules_from_text(ASSEMBLED_STREAM + CHECK_STREAM, "r.yaml")
    assert state(STREAM, rules).compare(golden, live, number=1) == []
    for count in (1, 2, 3):
        reworded = in_chunks(golden.response, count, lambda t: "Findings:\n" + t)
        assert state(STREAM, rules).compare(golden, reworded, number=1) == []


def test_an_assembled_stream_that_lost_a_fact_fails_at_the_assembled_text() -> None:
    golden = stream()
    rules = rules_from_text(ASSEMBLED_STREAM + CHECK_STREAM, "r.yaml")
    lost = in_chunks(golden.response, 3, lambda t: t.replace("[debug-print]", "[style]"))
    (mismatch,) = state(STREAM, rules).compare(golden, lost, number=1)
    assert (mismatch.path, mismatch.frame, mismatch.check) == (JOINED, None, "contains_all")
    assert mismatch.message == '"[debug-print]" not found'


def test_an_assembled_stream_still_compares_its_states() -> None:
    golden = stream()
    rules = rules_from_text(ASSEMBLED_STREAM + CHECK_STREAM, "r.yaml")
    failed = dataclasses.replace(
        golden.response,
        events=tuple(
            dataclasses.replace(e, data=e.data.replace("TASK_STATE_COMPLETED", "TASK_STATE_FAILED"))
            if e.data
            else e
            for e in in_chunks(golden.response, 2).events or ()
        ),
    )
    paths = {m.path for m in state(STREAM, rules).compare(golden, failed, number=1)}
    assert paths == {"$.result.task.status.state", "$.result.states[2]"}


# --- learning the structure -------------------------------------------------------------------


def test_learn_proposes_assembled_where_the_number_of_text_parts_varies() -> None:
    golden = review()
    recorded = golden.response
    reworded = in_two_parts(recorded, lambda t: "Sure.\n" + t.replace("Reviewed", "Looked at"))
    lives = (recorded, reworded, in_two_parts(recorded), recorded)
    found = propose([Replies(f"{REVIEW} exchange 1", recorded, lives, REVIEW, 1)], DEFAULT_RULES)
    assert [(p.key, p.target) for p in found.rules] == [
        ("assembled", "03-review-task.http#1"),
        ("checks", "$.result.task.artifacts[*].parts[*].text"),
    ]
    assert "the number of text parts differs between runs (1, 1, 2, 2, 1)" in found.rules[0].reason
    assert not any(p.key == "ignored_paths" for p in found.rules)


def test_learn_proposes_assembled_for_a_stream_whose_chunks_vary_and_checks_its_text() -> None:
    golden = stream()
    recorded = golden.response
    lives = tuple(
        in_chunks(recorded, count, lambda t, n=count: f"Opener {n}.\n" + t)
        for count in (1, 3, 2, 4)
    )
    found = propose([Replies(f"{STREAM} exchange 1", recorded, lives, STREAM, 1)], DEFAULT_RULES)
    assert [(p.key, p.target, p.scope) for p in found.rules] == [
        ("assembled", "04-streaming.http#1", ""),
        ("checks", "$.result.task.artifacts[*].parts[*].text", "04-streaming.http#1"),
    ]
    assert "(4, 4, 6, 5, 6 frames)" in found.rules[0].reason
    assert found.notes == []


def test_a_stream_cut_the_same_way_every_run_is_learned_frame_by_frame() -> None:
    golden = stream()
    recorded = golden.response
    lives = tuple(in_chunks(recorded, 2, lambda t, n=n: f"Opener {n}.\n" + t) for n in range(4))
    found = propose(
        [Replies(f"{STREAM} exchange 1", in_chunks(recorded, 2), lives, STREAM, 1)], DEFAULT_RULES
    )
    assert [(p.key, p.target) for p in found.rules] == [
        ("checks", "$.result.artifactUpdate.artifact.parts[*].text")
    ]


def test_an_assembled_proposal_is_written_and_reads_back() -> None:
    from recorder.learn.rulesfile import render
    from recorder.rules.noise import Proposal

    why = "the number of text parts differs between runs (1, 2): compared as assembled"
    proposal = Proposal("assembled", "02-ask.http#1", None, why, ("f exchange 1",), (), 1)
    text = render([proposal], ["learned"])
    assert "assembled:\n  add:\n" in text and '    - "02-ask.http#1"\n' in text
    assert rules_from_text(text, "learned.yaml").assembles("02-ask.http", 1)
