"""gRPC traffic not designed for the recorder (issue 26): several a2a-sdk clients at once, a
client that abandons a stream, a client whose deadline expires mid-stream. Through `recorder
record` each client gets what the kit gives it directly, every call is recorded, the folder
checks, and what was recorded replays clean on a fresh kit."""

from __future__ import annotations

import asyncio
import shutil
import signal
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from grpc_sdk_traffic import (
    abandoned_review,
    come_back,
    expired_review,
    grpc_calls,
    seen_summary,
    serving,
    session,
)
from helpers import edit, recorder_process

from recorder import load
from recorder.checking import check_paths
from recorder.kit import KitServer, start_kit
from recorder.replay.reports.results import PlayResult
from recorder.replay.run import play

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

LIMIT = 60.0  # seconds: all of a test's clients together
CLIENTS = 4
DEADLINE = 8.0  # seconds: the expiring clients' deadline (the slow review runs 30 s)
# seconds the player waits for a reply: the unary call whose client left before the slow
# review's reply is replayed as recorded when no reply has come by then
PLAYER_TIMEOUT = 10.0


def fresh_kit(grpc: bool = True) -> KitServer:
    return start_kit(port=0, grpc_port=0)


def problems(result: PlayResult) -> tuple[list[str], list[tuple[str, int, int | None, str]]]:
    errors = [e.error for t in result.transcripts for e in t.exchanges if e.error]
    found = [
        (Path(t.path).name, e.number, m.frame, m.path)
        for t in result.transcripts
        for e in t.exchanges
        for m in e.mismatches
    ]
    return errors, found


def method_counts(folder: Path) -> dict[str, int]:
    calls = [m for methods in grpc_calls(folder).values() for m in methods]
    return {m: calls.count(m) for m in sorted(set(calls))}


async def clients_at_once(url: str, token: str) -> list[dict[str, Any]]:
    together = asyncio.gather(*(session(url, token, listing=False) for _ in range(CLIENTS)))
    return list(await asyncio.wait_for(together, LIMIT))


@pytest.fixture(scope="module")
def alone() -> dict[str, Any]:
    """What one client's session sees from a kit, alone on it."""
    with fresh_kit() as kit:
        seen = asyncio.run(asyncio.wait_for(session(kit.url, kit.token, listing=False), LIMIT))
    return seen_summary(seen)


def test_clients_at_once_each_get_what_one_gets_alone_and_every_call_is_recorded(
    alone: dict[str, Any], tmp_path: Path
) -> None:
    folder = tmp_path / "recorded"
    with (
        fresh_kit() as kit,
        recorder_process("--upstream", kit.url, "--out", str(folder), "--push-loopback") as (
            process,
            url,
        ),
    ):
        seen = asyncio.run(clients_at_once(url, kit.token))
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, stderr
    for client in seen:
        assert seen_summary(client) == alone
    assert method_counts(folder) == {
        "CancelTask": CLIENTS,
        "CreateTaskPushNotificationConfig": CLIENTS,
        "DeleteTaskPushNotificationConfig": CLIENTS,
        "GetExtendedAgentCard": CLIENTS,
        "GetTask": 2 * CLIENTS,
        "GetTaskPushNotificationConfig": CLIENTS,
        "ListTaskPushNotificationConfigs": CLIENTS,
        "SendStreamingMessage": 5 * CLIENTS,
    }
    # grouped by id lineage as one client's session is, however the calls interleaved
    one_session = [
        ["GetExtendedAgentCard"],
        ["GetTask"],  # the unknown task's
        ["SendStreamingMessage"],  # the question
        ["SendStreamingMessage", "CancelTask"],
        [
            "SendStreamingMessage",
            "GetTask",
            "CreateTaskPushNotificationConfig",
            "GetTaskPushNotificationConfig",
            "ListTaskPushNotificationConfigs",
            "DeleteTaskPushNotificationConfig",
        ],
        ["SendStreamingMessage", "SendStreamingMessage"],
    ]
    assert sorted(grpc_calls(folder).values()) == sorted(one_session * CLIENTS)
    assert check_paths([folder])[1] == []
    with fresh_kit() as replayed_on:
        result = play([folder], agent=replayed_on.url, environ={"A2A_TOKEN": kit.token})
    assert problems(result) == ([], [])
    together = play([folder], start_agent=fresh_kit, jobs=4)
    assert problems(together) == ([], [])
    # and served, the same clients at once get the same again
    with serving(folder) as (served, served_url):
        again = asyncio.run(clients_at_once(served_url, "any-token"))
        served.send_signal(signal.SIGINT)
        _, err = served.communicate(timeout=LIMIT)
    for client in again:
        assert seen_summary(client) == alone
    assert "0 unmatched" in err, err


@pytest.fixture(scope="module")
def abandoned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The abandoning clients through `recorder record`, and from the kit directly."""
    folder = tmp_path_factory.mktemp("abandoned")

    async def clients(url: str) -> dict[str, Any]:
        closed = await asyncio.wait_for(abandoned_review(url, read=2), LIMIT)
        expired = await asyncio.wait_for(expired_review(url, deadline=DEADLINE), LIMIT)
        waited = expired_review(url, deadline=DEADLINE, streaming=False)
        return {
            "closed": closed,
            "expired": expired,
            "waited": await asyncio.wait_for(waited, LIMIT),
        }

    with fresh_kit() as kit:
        direct = asyncio.run(clients(kit.url))
    with (
        fresh_kit() as kit,
        recorder_process("--upstream", kit.url, "--out", str(folder), "--push-loopback") as (
            process,
            url,
        ),
    ):
        through = asyncio.run(clients(url))
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, stderr
    return {"direct": direct, "through": through, "folder": folder, "stderr": stderr}


def _seen(clients: dict[str, Any]) -> dict[str, Any]:
    read, error = clients["expired"]
    unread, unary_error = clients["waited"]
    seen = seen_summary({"closed": clients["closed"], "expired": read, "waited": unread})
    return seen | {"error": error, "unary error": unary_error}


def test_abandoning_clients_get_what_they_get_from_the_kit(abandoned: dict[str, Any]) -> None:
    direct = _seen(abandoned["direct"])
    assert _seen(abandoned["through"]) == direct
    assert len(direct["closed"]) == 2
    assert direct["error"] == direct["unary error"] == "A2AClientTimeoutError"
    assert direct["waited"] == []


def test_abandoned_streams_are_recorded_as_the_client_read_them(
    abandoned: dict[str, Any],
) -> None:
    folder = abandoned["folder"]
    assert method_counts(folder) == {"SendMessage": 1, "SendStreamingMessage": 2}
    assert check_paths([folder])[1] == []
    calls = [
        e
        for path in sorted(folder.glob("*.http"))
        for e in load(path).exchanges
        if e.request.is_grpc
    ]
    closed, expired, waited = calls
    assert closed.response.events is not None and expired.response.events is not None
    assert len(closed.response.events) == 2
    assert len(expired.response.events) == len(abandoned["through"]["expired"][0])
    # marked as a cut stream is, with the status of the client's leaving
    assert (closed.truncated, closed.response.status, closed.response.reason) == (
        True,
        1,
        "CANCELLED",
    )
    assert closed.response.trailers.get("grpc-message") == "cancelled by the client"
    assert (expired.truncated, expired.response.status, expired.response.reason) == (
        True,
        4,
        "DEADLINE_EXCEEDED",
    )
    assert expired.response.trailers.get("grpc-message") == "the client's deadline expired"
    # the unary call the client stopped waiting for: no reply, the status of its leaving
    assert (waited.truncated, waited.response.status, waited.response.json) == (
        True,
        4,
        {"code": 4, "message": "the client's deadline expired"},
    )


def test_abandoned_streams_replay_as_recorded_on_a_fresh_kit(abandoned: dict[str, Any]) -> None:
    with fresh_kit() as kit:
        result = play([abandoned["folder"]], agent=kit.url, timeout=PLAYER_TIMEOUT)
    assert problems(result) == ([], [])


def test_update_of_an_abandoned_stream_keeps_how_its_client_left(
    abandoned: dict[str, Any], tmp_path: Path
) -> None:
    folder = tmp_path / "abandoned"
    shutil.copytree(abandoned["folder"], folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    path = next(p for p in folder.glob("*.http") if "GRPC 1 CANCELLED" in p.read_text())
    edit(path, "TASK_STATE_WORKING", "TASK_STATE_FAILED")
    with fresh_kit() as kit:
        failed = play([path], agent=kit.url, timeout=PLAYER_TIMEOUT)
        assert problems(failed)[1] == [(path.name, 1, 2, "$.statusUpdate.status.state")]
        updated = play([folder], agent=kit.url, update=True, timeout=PLAYER_TIMEOUT)
    assert [Path(t.path).name for t in updated.transcripts if t.updated] == [path.name]
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_serve_gives_the_abandoning_clients_what_the_kit_gave_them(
    abandoned: dict[str, Any],
) -> None:
    async def clients(url: str) -> dict[str, Any]:
        closed = await asyncio.wait_for(abandoned_review(url, read=2), LIMIT)
        expired = await asyncio.wait_for(expired_review(url, deadline=DEADLINE), LIMIT)
        waited = expired_review(url, deadline=DEADLINE, streaming=False)
        return {
            "closed": closed,
            "expired": expired,
            "waited": await asyncio.wait_for(waited, LIMIT),
        }

    with serving(abandoned["folder"]) as (process, url):
        served = asyncio.run(clients(url))
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=LIMIT)
    assert _seen(served) == _seen(abandoned["direct"])
    assert "0 unmatched" in err, err


def test_a_client_that_comes_back_to_its_abandoned_task_is_recorded_and_replayed(
    tmp_path: Path,
) -> None:
    with fresh_kit() as kit:
        direct = seen_summary(asyncio.run(asyncio.wait_for(come_back(kit.url), LIMIT)))
    folder = tmp_path / "recorded"
    with (
        fresh_kit() as kit,
        recorder_process("--upstream", kit.url, "--out", str(folder), "--push-loopback") as (
            process,
            url,
        ),
    ):
        through = seen_summary(asyncio.run(asyncio.wait_for(come_back(url), LIMIT)))
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=LIMIT)
    assert through == direct
    assert direct["canceled"][0] == direct["followed"][-1][1]  # (CANCELED, the last it followed)
    # its follow-ups by the task id joined the abandoned stream's file
    assert list(grpc_calls(folder).values()) == [
        ["SendStreamingMessage", "GetTask", "SubscribeToTask", "CancelTask"]
    ]
    assert check_paths([folder])[1] == []
    for _ in range(2):
        with fresh_kit() as kit:
            assert problems(play([folder], agent=kit.url)) == ([], [])
    with serving(folder) as (served, served_url):
        again = seen_summary(asyncio.run(asyncio.wait_for(come_back(served_url), LIMIT)))
        served.send_signal(signal.SIGINT)
        _, err = served.communicate(timeout=LIMIT)
    assert again == direct
    assert "0 unmatched" in err, err


def test_bytes_that_are_no_message_are_recorded_as_sent_checked_and_replayed(
    tmp_path: Path,
) -> None:
    garbage = b"\xff\x00not a protobuf message\x93"
    folder = tmp_path / "recorded"
    metadata = [("a2a-version", "1.0")]

    def send(address: str) -> tuple[Any, str]:
        with grpc.insecure_channel(address) as channel, pytest.raises(grpc.RpcError) as caught:
            channel.unary_unary("/lf.a2a.v1.A2AService/SendMessage")(
                garbage, metadata=metadata, timeout=LIMIT
            )
        return caught.value.code(), caught.value.details() or ""

    with (
        fresh_kit() as kit,
        recorder_process("--upstream", kit.url, "--out", str(folder), "--push-loopback") as (
            process,
            url,
        ),
    ):
        assert kit.grpc_address is not None
        card = httpx.get(
            f"{url}/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}, timeout=LIMIT
        ).json()
        listed = card["supportedInterfaces"]
        [address] = [i["url"] for i in listed if i["protocolBinding"] == "GRPC"]
        through = send(address)
        direct = send(kit.grpc_address)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, stderr
    assert through == direct  # the recorder changed nothing of what the client got
    assert through[0] != grpc.StatusCode.OK
    [recorded] = [e for p in sorted(folder.glob("*.http")) for e in load(p) if e.request.is_grpc]
    assert recorded.request.body == garbage  # as the client sent it (base64 in the file)
    assert check_paths([folder])[1] == []
    with fresh_kit() as replayed_on:
        result = play([folder], agent=replayed_on.url)
    assert problems(result) == ([], [])
