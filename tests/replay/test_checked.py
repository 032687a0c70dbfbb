"""Checked places in the comparison (recorder.replay.verdict.checked through ReplayState): pure, on
the shipped goldens compared with edited copies of themselves; no network."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from helpers import TRANSCRIPTS

from recorder.disk.transcripts import load
from recorder.format.model import Exchange, Response
from recorder.replay.verdict.checked import keep_recorded
from recorder.replay.verdict.state import ReplayState
from recorder.rules.ruleset import rules_from_text

REVIEW = str(TRANSCRIPTS / "03-review-task.http")
STREAM = str(TRANSCRIPTS / "04-streaming.http")
TEXT = "$.result.task.artifacts[0].parts[0].text"
JOINED = "$.result.task.artifacts[0].parts[*].text"  # a checked text: its parts joined


def rules(entry: str) -> Any:
    return rules_from_text(f"checks:\n{entry}" if entry else "", "rules.yaml")


def state(path: str, with_rules: Any) -> ReplayState:
    return ReplayState(
        with_rules, recorded_base="http://localhost:41242", live_base="http://localhost:41242",
        file=path,
    )  # fmt: skip


def edited(response: Response, edit: Any) -> Response:
    value = json.loads(response.body)
    edit(value)
    return dataclasses.replace(response, body=json.dumps(value).encode())


def edited_frames(response: Response, edit: Any) -> Response:
    events = []
    for event in response.events or ():
        if event.data is not None and "artifactUpdate" in event.data:
            value = json.loads(event.data)
            edit(value["result"]["artifactUpdate"]["artifact"]["parts"][0])
            event = dataclasses.replace(event, data=json.dumps(value))
        events.append(event)
    return dataclasses.replace(response, events=tuple(events))


def review() -> Exchange:
    return load(REVIEW).exchanges[0]


def set_text(text: str) -> Any:
    def edit(value: dict[str, Any]) -> None:
        value["result"]["task"]["artifacts"][0]["parts"][0]["text"] = text

    return edit


CHECK_REVIEW = """\
  - path: "$.result.task.artifacts[*].parts[*].text"
    in: "03-review-task.http#1"
    assert:
      - contains_all: ["src/payments.py:12", "[todo]"]
"""


def test_a_checked_place_is_decided_by_its_checks() -> None:
    golden = review()
    live = edited(golden.response, set_text("Two findings: src/payments.py:12 [todo], more."))
    assert [m.path for m in state(REVIEW, rules("")).compare(golden, live, number=1)] == [TEXT]
    assert state(REVIEW, rules(CHECK_REVIEW)).compare(golden, live, number=1) == []
    failing = edited(golden.response, set_text("src/payments.py:12 only"))
    (mismatch,) = state(REVIEW, rules(CHECK_REVIEW)).compare(golden, failing, number=1)
    assert (mismatch.path, mismatch.check, mismatch.message) == (
        JOINED,
        "contains_all",
        '"[todo]" not found',
    )
    assert mismatch.actual == "src/payments.py:12 only"


def test_the_rest_of_the_reply_is_still_compared() -> None:
    golden = review()

    def edit(value: dict[str, Any]) -> None:
        set_text("src/payments.py:12 [todo]")(value)
        value["result"]["task"]["status"]["state"] = "TASK_STATE_FAILED"

    mismatches = state(REVIEW, rules(CHECK_REVIEW)).compare(
        golden, edited(golden.response, edit), number=1
    )
    assert [(m.path, m.check) for m in mismatches] == [("$.result.task.status.state", None)]


def test_checks_run_on_an_answer_equal_to_the_recording() -> None:
    # the fast path would pass an equal reply: with checks, the checks decide
    golden = review()
    too_short = CHECK_REVIEW.replace(
        'contains_all: ["src/payments.py:12", "[todo]"]', "length: {max: 10}"
    )
    (mismatch,) = state(REVIEW, rules(too_short)).compare(golden, golden.response, number=1)
    assert mismatch.describe().startswith(f"{JOINED}: check length failed: 371 characters")


def test_scoped_to_another_exchange_or_file_nothing_changes() -> None:
    golden = review()
    live = edited(golden.response, set_text("something else"))
    other_exchange = CHECK_REVIEW.replace("#1", "#2")
    assert [
        m.check for m in state(REVIEW, rules(other_exchange)).compare(golden, live, number=1)
    ] == [None]
    other_file = CHECK_REVIEW.replace("03-review-task.http#1", "04-*.http")
    assert [m.check for m in state(REVIEW, rules(other_file)).compare(golden, live, number=1)] == [
        None
    ]


def test_a_stream_is_checked_in_its_frame() -> None:
    golden = load(STREAM).exchanges[0]

    def drop_todo(part: dict[str, Any]) -> None:
        part["text"] = part["text"].replace("[todo]", "[fixme]")

    live = edited_frames(golden.response, drop_todo)
    entry = """\
  - path: "$.result.artifactUpdate.artifact.parts[*].text"
    assert: [contains: "[todo]"]
"""
    (mismatch,) = state(STREAM, rules(entry)).compare(golden, live, number=1)
    assert (mismatch.frame, mismatch.path, mismatch.check) == (
        3,
        "$.result.artifactUpdate.artifact.parts[*].text",
        "contains",
    )
    assert str(mismatch).startswith("frame 3: $.result.artifactUpdate.artifact.parts[*].text:")


def test_update_keeps_the_recorded_text_where_the_checks_held() -> None:
    golden = review()

    def edit(value: dict[str, Any]) -> None:
        set_text("reworded: src/payments.py:12 [todo]")(value)
        value["result"]["task"]["artifacts"][0]["name"] = "renamed"

    live = edited(golden.response, edit)
    replay = state(REVIEW, rules(CHECK_REVIEW))
    assert [m.path for m in replay.compare(golden, live, number=1)] == [
        "$.result.task.artifacts[0].name"
    ]
    blessed = replay.bless(golden.response, live, matched=False, number=1)
    artifact = blessed.json["result"]["task"]["artifacts"][0]
    recorded = golden.response.json["result"]["task"]["artifacts"][0]
    assert artifact["name"] == "renamed"
    assert artifact["parts"][0]["text"] == recorded["parts"][0]["text"]
    # without the exchange's number, the live text
    plain = replay.bless(golden.response, live, matched=False)
    assert plain.json["result"]["task"]["artifacts"][0]["parts"][0]["text"].startswith("reworded")


def test_keep_recorded_in_a_stream() -> None:
    golden = load(STREAM).exchanges[0]

    def reword(part: dict[str, Any]) -> None:
        part["text"] = "reworded"

    live = edited_frames(golden.response, reword)
    recorded_text = json.loads(golden.response.events[2].data)["result"]["artifactUpdate"][
        "artifact"
    ]["parts"][0]["text"]  # type: ignore[index]
    kept = keep_recorded(
        live, [(3, ("result", "artifactUpdate", "artifact", "parts", 0, "text"), recorded_text)]
    )
    texts = [e.data for e in kept.events or () if e.data and "artifactUpdate" in e.data]
    assert json.loads(texts[0])["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"] == (
        recorded_text
    )
    assert keep_recorded(live, []) is live
