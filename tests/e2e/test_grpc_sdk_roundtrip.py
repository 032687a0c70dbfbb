"""The a2a-sdk client's gRPC session (issue 26's verification), recorded by `recorder record`
as a user runs it, then checked, replayed on fresh kits (5 times; each file alone; four at
once; `--update`), served to the same client, and edited to fail where the edit is."""

from __future__ import annotations

import asyncio
import shutil
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from grpc_sdk_traffic import grpc_calls, seen_summary, serving, session
from helpers import cli_process, edit, recorder_process

from recorder import load
from recorder.checking import check_paths
from recorder.kit import KitServer, start_kit
from recorder.replay.reports.results import PlayResult
from recorder.replay.run import play

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

LIMIT = 30.0  # seconds: a process's start or stop, a session's run


def fresh_kit(grpc: bool = True) -> KitServer:
    """A kit on free ports serving gRPC, listed in its card (the recorded card lists it)."""
    return start_kit(port=0, grpc_port=0)


def run_session(url: str, token: str) -> dict[str, Any]:
    return asyncio.run(asyncio.wait_for(session(url, token), LIMIT))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    """The session through `recorder record` to a kit: (the folder, what the client saw, the
    recorder's stderr)."""
    folder = tmp_path_factory.mktemp("sdk-grpc")
    with (
        start_kit(port=0, grpc_port=0) as kit,
        recorder_process("--upstream", kit.url, "--out", str(folder), "--push-loopback") as (
            process,
            url,
        ),
    ):
        seen = run_session(url, kit.token)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, stderr
    return folder, seen, stderr


@pytest.fixture(scope="module")
def from_the_kit() -> dict[str, Any]:
    """What the same session sees from a fresh kit directly."""
    with fresh_kit() as kit:
        return seen_summary(run_session(kit.url, kit.token))


@pytest.fixture
def goldens(recorded: tuple[Path, dict[str, Any], str], tmp_path: Path) -> Path:
    folder = tmp_path / "transcripts"
    shutil.copytree(recorded[0], folder)
    return folder


def mismatches(result: PlayResult) -> list[tuple[str, int, int | None, str]]:
    return [
        (Path(t.path).name, e.number, m.frame, m.path)
        for t in result.transcripts
        for e in t.exchanges
        for m in e.mismatches
    ]


def problems(result: PlayResult) -> tuple[list[str], list[tuple[str, int, int | None, str]]]:
    errors = [e.error for t in result.transcripts for e in t.exchanges if e.error]
    return errors, mismatches(result)


def test_the_recorder_changes_nothing_the_client_sees_and_records_every_call(
    recorded: tuple[Path, dict[str, Any], str], from_the_kit: dict[str, Any]
) -> None:
    folder, seen, stderr = recorded
    assert seen_summary(seen) == from_the_kit
    assert "gRPC listening on 127.0.0.1:" in stderr
    calls = [m for methods in grpc_calls(folder).values() for m in methods]
    counts = {m: calls.count(m) for m in sorted(set(calls))}
    assert counts == {
        "CancelTask": 1,
        "CreateTaskPushNotificationConfig": 1,
        "DeleteTaskPushNotificationConfig": 1,
        "GetExtendedAgentCard": 1,
        "GetTask": 2,
        "GetTaskPushNotificationConfig": 1,
        "ListTaskPushNotificationConfigs": 1,
        "ListTasks": 1,
        "SendStreamingMessage": 5,
    }
    assert check_paths([folder])[1] == []


def test_it_replays_clean_five_times_each_on_a_fresh_kit_found_through_its_card(
    goldens: Path,
) -> None:
    for run in range(5):
        with fresh_kit() as kit:
            card = httpx.get(f"{kit.url}/.well-known/agent-card.json", timeout=LIMIT).json()
            bindings = [i["protocolBinding"] for i in card["supportedInterfaces"]]
            assert "GRPC" in bindings
            result = play([goldens], agent=kit.url, environ={"A2A_TOKEN": kit.token})
        assert problems(result) == ([], []), run
        assert result.passed


def test_each_file_alone_and_four_at_once(goldens: Path) -> None:
    paths = sorted(goldens.glob("*.http"))
    assert len(paths) >= 4
    for path in paths:
        alone = play([path], start_agent=fresh_kit)
        assert problems(alone) == ([], []), path.name
    together = play([goldens], start_agent=fresh_kit, jobs=4)
    assert problems(together) == ([], [])
    assert len(together.transcripts) == len(paths)


def test_recorder_play_update_changes_no_byte(goldens: Path) -> None:
    before = {p.name: p.read_bytes() for p in goldens.iterdir()}
    with (
        fresh_kit() as kit,
        cli_process(
            "play", str(goldens), "--agent", kit.url, "--var", f"A2A_TOKEN={kit.token}", "--update"
        ) as p,
    ):
        out, err = p.communicate(timeout=LIMIT * 2)
    assert p.returncode == 0, out + err
    assert {p.name: p.read_bytes() for p in goldens.iterdir()} == before


def test_serve_gives_the_same_client_what_the_kit_gave_it(
    goldens: Path, from_the_kit: dict[str, Any]
) -> None:
    with serving(goldens) as (process, url):
        card = httpx.get(f"{url}/.well-known/agent-card.json", timeout=LIMIT).json()
        token = "any-token"  # (the stand-in does not check it)
        from_serve = seen_summary(run_session(url, token))
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=LIMIT)
    assert "GRPC" in [i["protocolBinding"] for i in card["supportedInterfaces"]]
    assert from_serve == from_the_kit
    assert "0 unmatched" in err, err


def _exchange_of(path: Path, method: str, nth: int = 1) -> int:
    """The number (1-based) of the `nth` exchange of `method` in the file at `path`."""
    numbers = [
        n for n, e in enumerate(load(path).exchanges, 1) if e.request.target.endswith("/" + method)
    ]
    return numbers[nth - 1]


def _file_with(folder: Path, methods: list[str]) -> Path:
    for name, found in grpc_calls(folder).items():
        if found[: len(methods)] == methods:
            return folder / name
    raise AssertionError(f"no file starts with {methods}: {grpc_calls(folder)}")


def test_edited_copies_fail_at_the_exact_path(goldens: Path) -> None:
    review = _file_with(goldens, ["SendStreamingMessage", "GetTask"])
    get_task = _exchange_of(review, "GetTask")
    # a task state changed: GetTask's reply says FAILED where the kit says COMPLETED
    text = review.read_text()
    reply = text.index("GRPC 0 OK", text.index("GRPC /lf.a2a.v1.A2AService/GetTask"))
    at = text.index('"state": "TASK_STATE_COMPLETED"', reply)
    review.write_text(text[:at] + '"state": "TASK_STATE_FAILED"' + text[at + 31 :])
    # a stream frame removed: the review stream's last message
    text = review.read_text()
    last = text.rindex("\ndata: ", 0, text.index("### GetTask"))
    review.write_text(text[:last] + text[text.index("\n", last + 1) :])
    # a state changed in a stream's message: the multi-turn answer's WORKING, its frame 1
    turns = _file_with(goldens, ["SendStreamingMessage", "SendStreamingMessage"])
    text = turns.read_text()
    answer = text.index("GRPC 0 OK", text.rindex("GRPC /lf.a2a.v1.A2AService/"))
    at = text.index('"state": "TASK_STATE_WORKING"', answer)
    turns.write_text(text[:at] + '"state": "TASK_STATE_FAILED"' + text[at + 29 :])
    # another status code: the unknown task's NOT_FOUND
    unknown = next(p for p in goldens.glob("*.http") if "GRPC 5 NOT_FOUND" in p.read_text())
    edit(unknown, "GRPC 5 NOT_FOUND", "GRPC 9 FAILED_PRECONDITION")
    not_found = next(n for n, e in enumerate(load(unknown).exchanges, 1) if e.response.status == 9)
    with fresh_kit() as kit:
        result = play([goldens], agent=kit.url)
    found = sorted(mismatches(result))
    assert (
        sorted(
            [
                (review.name, 1, None, "frames"),
                (review.name, get_task, None, "$.status.state"),
                (turns.name, 2, 1, "$.statusUpdate.status.state"),
                (unknown.name, not_found, None, "status"),
            ]
        )
        == found
    ), found
