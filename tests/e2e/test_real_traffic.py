"""Unscripted traffic (`tests/traffic.py`: the a2a-sdk client as SDK users drive an agent, no
`Recorder-Scenario` header, random ids) recorded through the real proxy in front of the real
kit, then checked and replayed as DESIGN.md, "Recordings of unscripted traffic", promises:
every recording replays against a fresh kit, five times in a row, file by file, in parallel,
and `--update` against the same kit changes no byte.

One recording per binding (a module fixture); each replay gets the kits it needs. What makes
it replay: grouping by id lineage at record time (`recorder.record.lineage`), `@during` taken
from arrival, the grace time on abandoned streams, and the player's handling of open streams.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from traffic import BINDINGS, drive

from recorder import load
from recorder.checking import check_paths
from recorder.cli import main
from recorder.disk.transcripts import find_transcripts
from recorder.kit import KitServer, start_kit
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.replay.reports.results import PlayResult
from recorder.replay.run import play

pytestmark = pytest.mark.e2e

REPLAY_TIMEOUT = 5.0  # seconds per exchange: a hang fails fast
REPLAY_SECONDS = 4.0  # a whole replay of the folder, kit already started
ROUNDS = 5


@dataclass(frozen=True)
class Recording:
    binding: str
    folder: Path
    seen: dict[str, Any]
    token: str


@pytest.fixture(scope="module", params=BINDINGS, ids=["jsonrpc", "rest"])
def recording(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    binding: str = request.param
    folder = tmp_path_factory.mktemp(f"traffic-{'rest' if binding == 'HTTP+JSON' else 'jsonrpc'}")
    out = folder / "rec"
    with start_kit() as kit:
        # (the conversation's webhook is on loopback: local work, said so)
        proxy = create_proxy_app(kit.url, out=out, push_loopback=True)
        with ProxyServer(proxy) as server:
            seen = drive(server.url, token=kit.token, binding=binding)
        token = kit.token
    # the proxy is stopped: every exchange is written
    return Recording(binding, out, seen, token)


def replay(paths: list[Path], kit: KitServer, **options: Any) -> tuple[PlayResult, float]:
    started = time.perf_counter()
    result = play(
        [str(p) for p in paths],
        agent=kit.url,
        timeout=REPLAY_TIMEOUT,
        environ={"A2A_TOKEN": kit.token},
        **options,
    )
    return result, time.perf_counter() - started


def summary(result: PlayResult) -> str:
    """The failed exchanges, one line each: what a failing assertion shows."""
    lines = [
        f"{result.exchange_count} exchanges in {len(result.transcripts)} files: "
        f"{result.passed_count} passed, {result.failed_count} mismatched, "
        f"{result.error_count} errors, {result.not_played_count} not played"
    ]
    for transcript in result.transcripts:
        for exchange in transcript.failed:
            first = exchange.mismatches[0] if exchange.mismatches else None
            lines.append(
                f"  {Path(transcript.path).name} #{exchange.number} {exchange.title}: "
                f"{exchange.error or first}"
            )
    return "\n".join(lines)


@pytest.fixture
def fresh_kits() -> Iterator[list[KitServer]]:
    """Kits started by the test; all stopped at its end."""
    kits: list[KitServer] = []
    try:
        yield kits
    finally:
        for kit in kits:
            kit.stop()


def fresh_kit(kits: list[KitServer]) -> KitServer:
    kit = start_kit()
    kits.append(kit)
    return kit


# --------------------------------------------------------------------------- the client


def test_the_client_saw_what_the_kit_means(recording: Recording) -> None:
    seen = recording.seen
    assert seen["card_name"] == "code-reviewer"
    assert seen["question"] == ["message"]
    assert "Python" in seen["question_text"]
    assert seen["review_state"] == "TASK_STATE_COMPLETED"
    assert len(seen["review_text"]) == 1 and "[todo]" in seen["review_text"][0]
    assert seen["get_task"] == (True, "TASK_STATE_COMPLETED")
    assert seen["listed"] == [True]
    assert seen["cancel_completed"] == "TaskNotCancelableError"
    assert seen["input_required"] == "TASK_STATE_INPUT_REQUIRED"
    assert seen["answered"] == (True, "TASK_STATE_COMPLETED")
    assert seen["push_created"] == (True, True)
    assert seen["push_get"] is True
    assert seen["push_list"] == [True]
    assert seen["push_after_delete"] == 0
    assert seen["extended_card"] == ("code-reviewer", True)
    assert seen["errors"]["unknown_task"] == "TaskNotFoundError"
    if recording.binding == "JSONRPC":
        assert seen["errors"]["unknown_method"] == -32601
        assert seen["errors"]["not_json"] == -32700
    else:
        assert seen["errors"]["unknown_route"] == 404
        assert seen["errors"]["not_json"] == 400
    assert seen["stream"] == ["task", "status_update", "artifact_update", "status_update"]
    assert seen["stream_last_state"] == "TASK_STATE_COMPLETED"
    assert seen["abandoned_first"] == "task"
    assert seen["abandoned_canceled"] == (True, "TASK_STATE_CANCELED")
    assert seen["subscribed_canceled"] == (True, "TASK_STATE_CANCELED")
    for subscriber in seen["subscribers"]:
        assert "error" not in subscriber, subscriber
        assert subscriber["kinds"][0] == "task"
        assert subscriber["last_state"] == "TASK_STATE_CANCELED"
    assert seen["webhook_calls"] == 0  # the review was finished when the webhook came


def test_every_call_was_recorded(recording: Recording) -> None:
    files = list(find_transcripts([recording.folder]))
    text = "".join(f.read_text() for f in files)
    # the client sent no scenario header, and the SDK chose the ids
    assert "Recorder-Scenario" not in text
    # 1 card, 2 question+review, GetTask, ListTasks, CancelTask, 2 multi-turn, 5 push,
    # extended card, 3 errors, 2 streams, CancelTask, 1 start, CancelTask, 2 subscriptions
    exchanges = text.count("\n### ") + text.startswith("### ")
    assert exchanges == 24, [f.name for f in files]


def test_follow_ups_are_grouped_with_the_exchange_that_made_their_ids(
    recording: Recording,
) -> None:
    files = {path.name: load(path) for path in find_transcripts([recording.folder])}
    # the stream the client read to its final event, and the slow one it abandoned and then
    # canceled within the grace time, both ended: neither is cut
    assert not [name for name, t in files.items() if any(e.truncated for e in t)]
    [subscribed] = [t for t in files.values() if sum("SubscribeToTask" in e.title for e in t) == 2]
    titles = [e.title.split(":")[0] for e in subscribed]
    assert titles[0] == "SendMessage" and titles[-1] == "CancelTask", titles
    # the second subscription and the cancel arrived while the first stream was open
    tags = [c for e in subscribed for c in e.comments if c.startswith("@during")]
    assert len(tags) == 2, tags


def test_the_recording_passes_check(recording: Recording) -> None:
    count, problems = check_paths([recording.folder])
    assert problems == []
    assert count >= 1
    outcome = CliRunner().invoke(main, ["check", str(recording.folder)])
    assert outcome.exit_code == 0, outcome.output


# --------------------------------------------------------------------------- replays


def test_replays_against_fresh_kits_five_times_in_a_row(
    recording: Recording, fresh_kits: list[KitServer]
) -> None:
    for round_ in range(1, ROUNDS + 1):  # the first failing round ends the test
        result, seconds = replay([recording.folder], fresh_kit(fresh_kits))
        assert result.passed, f"round {round_}: {summary(result)}"
        notes = [e.notes for t in result.transcripts for e in t.exchanges if e.notes]
        assert notes == [], f"round {round_}: {notes}"
        assert seconds < REPLAY_SECONDS, f"round {round_} took {seconds:.2f} s"


def test_every_file_replays_alone(recording: Recording, fresh_kits: list[KitServer]) -> None:
    failures = []
    for path in find_transcripts([recording.folder]):
        result, seconds = replay([path], fresh_kit(fresh_kits))
        if not result.passed or seconds >= REPLAY_SECONDS:
            failures.append(f"{path.name} ({seconds:.2f} s): {summary(result)}")
    assert not failures, "\n".join(failures)


def test_the_folder_replays_with_four_jobs(
    recording: Recording, fresh_kits: list[KitServer]
) -> None:
    result, seconds = replay([recording.folder], fresh_kit(fresh_kits), jobs=4)
    assert result.passed, summary(result)
    assert seconds < REPLAY_SECONDS


def test_update_against_the_same_kit_changes_no_byte(
    recording: Recording, tmp_path: Path, fresh_kits: list[KitServer]
) -> None:
    folder = tmp_path / "rec"
    shutil.copytree(recording.folder, folder)
    before = {p.name: p.read_bytes() for p in find_transcripts([folder])}
    result, _ = replay([folder], fresh_kit(fresh_kits), update=True)
    after = {p.name: p.read_bytes() for p in find_transcripts([folder])}
    changed = sorted(name for name in before if after.get(name) != before[name])
    assert after.keys() == before.keys()
    assert changed == [], f"{changed}\n{summary(result)}"
