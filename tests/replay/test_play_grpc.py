"""The player replays gRPC calls (issue 26): recorded against the real kit's gRPC binding with
grpcio, replayed against fresh kits found through their cards (or started by the player),
compared message by message, carried forward, `@during` a stream, `--update`."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from grpc_traffic import record_cancel_during_stream, record_review
from helpers import closed_port, edit

from recorder.errors import UpstreamError
from recorder.kit import KitServer, start_kit
from recorder.replay.reports.results import PlayResult
from recorder.replay.run import play
from recorder.replay.verdict.diff import ABSENT

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def start_agent(grpc: bool = False) -> KitServer:
    return start_kit(port=0, grpc_port=0 if grpc else None)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("grpc-goldens")
    with start_kit(grpc_port=0) as kit:
        assert kit.grpc_address is not None
        record_review(kit.grpc_address, folder / "01-review.http")
        record_cancel_during_stream(kit.grpc_address, folder / "02-cancel.http")
    return folder


@pytest.fixture
def goldens(recorded: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "transcripts"
    shutil.copytree(recorded, folder)
    return folder


@pytest.fixture
def kit() -> Iterator[KitServer]:
    with start_kit(grpc_port=0) as server:
        yield server


def mismatches(result: PlayResult) -> list[tuple[str, int, int | None, str, Any, Any]]:
    return [
        (Path(t.path).name, e.number, m.frame, m.path, m.expected, m.actual)
        for t in result.transcripts
        for e in t.exchanges
        for m in e.mismatches
    ]


def errors(result: PlayResult) -> list[str]:
    return [e.error for t in result.transcripts for e in t.exchanges if e.error]


def test_recorded_grpc_calls_replay_clean_on_a_fresh_kit_found_through_its_card(
    goldens: Path, kit: KitServer
) -> None:
    result = play([goldens], agent=kit.url)
    assert errors(result) == []
    assert mismatches(result) == []
    assert [len(t.exchanges) for t in result.transcripts] == [5, 2]
    assert result.passed


def test_each_file_alone_and_four_at_once_on_kits_the_player_starts(goldens: Path) -> None:
    for path in sorted(goldens.iterdir()):
        alone = play([path], start_agent=start_agent)
        assert (errors(alone), mismatches(alone)) == ([], [])
    together = play([goldens], start_agent=start_agent, jobs=4)
    assert (errors(together), mismatches(together)) == ([], [])


def test_update_changes_no_byte_when_nothing_changed(goldens: Path, kit: KitServer) -> None:
    before = {p.name: p.read_bytes() for p in goldens.iterdir()}
    result = play([goldens], agent=kit.url, update=True)
    assert result.passed
    assert {p.name: p.read_bytes() for p in goldens.iterdir()} == before


def test_a_changed_state_fails_at_its_path_and_update_puts_the_live_one_back(
    goldens: Path, recorded: Path, kit: KitServer
) -> None:
    path = goldens / "01-review.http"
    # exchange 2, GetTask: its reply's state (the second COMPLETED of the file)
    text = path.read_text()
    first = text.index('"state": "TASK_STATE_COMPLETED"')
    second = text.index('"state": "TASK_STATE_COMPLETED"', first + 1)
    path.write_text(
        text[:second] + '"state": "TASK_STATE_FAILED"' + text[second + 31 :], encoding="utf-8"
    )
    result = play([path], agent=kit.url)
    assert mismatches(result) == [
        ("01-review.http", 2, None, "$.status.state", "TASK_STATE_FAILED", "TASK_STATE_COMPLETED")
    ]
    updated = play([path], agent=kit.url, update=True)
    assert updated.transcripts[0].updated
    assert path.read_bytes() == (recorded / "01-review.http").read_bytes()


def test_a_missing_frame_and_another_status_code_fail_where_they_are(
    goldens: Path, kit: KitServer
) -> None:
    path = goldens / "01-review.http"
    text = path.read_text()
    # the streamed review's last frame (its COMPLETED status update) left out
    stream = text.index("### SendStreamingMessage")
    last = text.rindex("\ndata: ", stream, text.index("### GetTask", stream))
    end = text.index("\n", last + 1)
    path.write_text(text[:last] + text[end:], encoding="utf-8")
    edit(path, "GRPC 5 NOT_FOUND", "GRPC 9 FAILED_PRECONDITION")
    found = mismatches(play([path], agent=kit.url))
    assert [(n, frame, where) for _, n, frame, where, _, _ in found] == [
        (3, None, "frames"),
        (5, None, "status"),
    ]
    assert found[1][4:] == (9, 5)


def test_a_cancel_during_the_stream_replays_with_the_streamed_task_id(
    goldens: Path, kit: KitServer
) -> None:
    result = play([goldens / "02-cancel.http"], agent=kit.url)
    assert (errors(result), mismatches(result)) == ([], [])


def test_grpc_agent_that_refuses_is_the_agent_cannot_be_reached(
    goldens: Path, kit: KitServer
) -> None:
    with closed_port() as port, pytest.raises(UpstreamError, match=f"127.0.0.1:{port}"):
        play([goldens / "01-review.http"], agent=kit.url, grpc_agent=f"127.0.0.1:{port}")


def test_an_agent_whose_card_lists_no_grpc_interface_says_how_to_name_one(
    goldens: Path,
) -> None:
    with start_kit(grpc_port=None) as http_only, pytest.raises(UpstreamError, match="--grpc-agent"):
        play([goldens / "01-review.http"], agent=http_only.url)


def test_learn_absorbs_the_noise_of_grpc_replies_and_frames(tmp_path: Path) -> None:
    from recorder.learn.run import learn

    with start_kit(grpc_port=0, vary=True, seed=1) as kit:
        assert kit.grpc_address is not None
        path = record_review(kit.grpc_address, tmp_path / "01-review.http")

    def varied(grpc: bool = False) -> KitServer:
        return start_kit(port=0, grpc_port=0 if grpc else None, vary=True)

    learned = learn([path], agent=None, runs=3, start_agent=varied)
    assert learned.errors == []
    # the worded review: in the unary reply, GetTask's task and the stream's artifact frame
    for place in ('in: "01-review.http#1"', 'in: "01-review.http#2"', 'in: "01-review.http#3"'):
        assert place in learned.text
    assert learned.verify.passed


def test_a_trailer_the_agent_no_longer_sends_fails_at_the_trailer(
    goldens: Path, kit: KitServer
) -> None:
    path = goldens / "01-review.http"
    text = path.read_text()
    assert text.endswith("}\n")
    path.write_text(text + "\n# @trailers\nx-review-shard: r-1\n", encoding="utf-8")
    found = mismatches(play([path], agent=kit.url))
    assert found == [("01-review.http", 5, None, "trailer x-review-shard", "r-1", ABSENT)]


def test_recorder_play_starts_a_kit_serving_grpc_and_names_a_bad_grpc_agent(
    goldens: Path,
) -> None:
    from click.testing import CliRunner

    from recorder.cli import main

    played = CliRunner().invoke(main, ["play", str(goldens), "-q"])
    assert played.exit_code == 0, played.output
    bad = CliRunner().invoke(main, ["play", str(goldens), "--grpc-agent", "localhost"])
    assert bad.exit_code == 2
    assert "--grpc-agent" in bad.output and "expected HOST:PORT" in bad.output
