"""Files that need others (`# @after`): the plan's needs (`recorder.replay.needs`) and another
file's items left out of a listing (`recorder.replay.verdict.listings`). Pure but for reading
files."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from factories import make_exchange, make_response

from recorder import Transcript, dumps
from recorder.replay.needs import attach_needs, needs_of
from recorder.replay.plan import TranscriptErrors, load_transcripts, plan
from recorder.replay.verdict.listings import Others
from recorder.replay.verdict.live import LiveReply
from recorder.rules.pairing import AliasMap, PairingRules
from recorder.rules.ruleset import DEFAULT_RULES


def write(folder: Path, name: str, *after: str) -> Path:
    head = tuple(f"@after {needed}" for needed in after)
    path = folder / name
    path.write_text(dumps(Transcript((make_exchange(),), comments=head)))
    return path


def names(needed: Any) -> list[str]:
    return [Path(path).name for path, _ in needed]


def test_needs_come_first_each_once_and_are_read_from_the_folder(tmp_path: Path) -> None:
    write(tmp_path, "01-a.http")
    write(tmp_path, "02-b.http", "01-a.http")
    write(tmp_path, "03-c.http", "01-a.http")
    listing = write(tmp_path, "04-d.http", "03-c.http", "02-b.http")
    loaded = load_transcripts([listing])  # played alone: the others are not loaded
    needs = needs_of(loaded)
    assert names(needs[str(listing)]) == ["01-a.http", "03-c.http", "02-b.http"]
    [item] = attach_needs(plan(loaded), loaded)
    assert names(item.needs) == ["01-a.http", "03-c.http", "02-b.http"]


def test_a_shard_without_the_needs_still_plays_them(tmp_path: Path) -> None:
    write(tmp_path, "01-a.http")
    write(tmp_path, "02-b.http", "01-a.http")
    loaded = load_transcripts([tmp_path])
    items = attach_needs(plan(loaded, shard=(2, 2)), loaded)
    assert [(Path(i.path).name, names(i.needs)) for i in items] == [("02-b.http", ["01-a.http"])]
    # -k selecting only the needed file: it plays as itself, needing nothing
    items = attach_needs(plan(loaded, pattern="01-a"), loaded)
    assert [(Path(i.path).name, i.needs) for i in items] == [("01-a.http", ())]


def test_a_missing_need_names_the_tag_line(tmp_path: Path) -> None:
    listing = write(tmp_path, "04-d.http", "02-b.http")
    with pytest.raises(TranscriptErrors) as raised:
        needs_of(load_transcripts([listing]))
    assert str(raised.value) == f"{listing}:2: @after 02-b.http: no such transcript in {tmp_path}"


def test_a_cycle_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "01-a.http", "03-c.http")
    write(tmp_path, "02-b.http", "01-a.http")
    write(tmp_path, "03-c.http", "02-b.http")
    with pytest.raises(TranscriptErrors) as raised:
        needs_of(load_transcripts([tmp_path]))
    message = str(raised.value).splitlines()[0]
    # at the tag that closes the cycle
    assert message.startswith(f"{tmp_path / '02-b.http'}:2: @after 01-a.http: the needs form")
    assert "(01-a.http needs 03-c.http needs 02-b.http needs 01-a.http)" in message


# --------------------------------------------------------------------------- a listing


def listing(*tasks: tuple[str, str], total: int | None = None) -> bytes:
    items = [
        {"id": task, "contextId": context, "status": {"state": "X"}} for task, context in tasks
    ]
    result: dict[str, Any] = {"tasks": items, "nextPageToken": ""}
    result["totalSize"] = len(items) if total is None else total
    return json.dumps({"jsonrpc": "2.0", "id": 3, "result": result}).encode()


def ids(n: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(n)]


def test_another_files_items_are_left_out_and_the_count_lowered() -> None:
    pairing = PairingRules(DEFAULT_RULES)
    aliases = AliasMap(pairing)
    recorded_task, recorded_context, live_task, live_context, other, other_context = ids(6)
    # what the needed file's state paired
    aliases.pair(recorded_task, live_task, "id")
    aliases.pair(recorded_context, live_context, "id")
    recorded = make_response(body=listing((recorded_task, recorded_context)))
    live = LiveReply(200, "OK", [("Content-Type", "application/json")], b"")
    live.body = listing((other, other_context), (live_task, live_context))
    kept = Others(pairing, aliases).leave_out(recorded, live)
    result = json.loads(kept.body)["result"]
    assert [task["id"] for task in result["tasks"]] == [live_task]
    assert result["totalSize"] == 1


def test_a_listing_of_the_files_own_items_is_left_as_it_came() -> None:
    pairing = PairingRules(DEFAULT_RULES)
    aliases = AliasMap(pairing)
    task, context = ids(2)
    aliases.pair(task, task, "id")
    recorded = make_response(body=listing((task, context)))
    live = make_response(body=listing((task, context), (task, context)))
    assert Others(pairing, aliases).leave_out(recorded, live) is live  # (one too many: it fails)
    # an item that names no generated value is nobody's state: kept
    plain = make_response(body=b'{"result": {"tasks": [{"state": "X"}], "totalSize": 1}}')
    assert Others(pairing, aliases).leave_out(recorded, plain) is plain


def test_only_listings_longer_than_recorded_lose_unknown_items() -> None:
    pairing = PairingRules(DEFAULT_RULES)
    aliases = AliasMap(pairing)
    task, context, new_artifact, other, other_context = ids(5)
    aliases.pair(task, task, "id")
    # a task's artifacts and history that grew are a change, never another file's state
    recorded = make_response(body=json.dumps({"result": {"id": task, "artifacts": []}}).encode())
    grown = {"result": {"id": task, "artifacts": [{"artifactId": new_artifact, "parts": []}]}}
    live = make_response(body=json.dumps(grown).encode())
    assert Others(pairing, aliases).leave_out(recorded, live) is live
    # a listing as long as the recording keeps an unknown item: it fails where it differs
    recorded = make_response(body=listing((task, context)))
    same_length = make_response(body=listing((other, other_context)))
    assert Others(pairing, aliases).leave_out(recorded, same_length) is same_length
    # a needed task missing, another file's in its place and one more: one is left out
    longer = make_response(body=listing((other, other_context), (new_artifact, other_context)))
    kept = json.loads(Others(pairing, aliases).leave_out(recorded, longer).body)["result"]
    assert [t["id"] for t in kept["tasks"]] == [other] and kept["totalSize"] == 1
