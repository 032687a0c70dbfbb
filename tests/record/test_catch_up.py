"""The writer's backlog is bounded (issue 24 item 8): while more exchanges than `BACKLOG` are
answered and not yet written, a new request waits for the writer (bounded), so that a crash
of the recorder costs about that many. A real store and writer thread; the store's lock,
held by the test, stands for a writer that fell behind."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from factories import make_exchange

from recorder.record.proxy import writer as writer_module
from recorder.record.proxy.call import Call, CallRequest
from recorder.record.proxy.recording import Recording
from recorder.record.proxy.writer import BACKLOG
from recorder.record.store.transcript_store import TranscriptStore
from recorder.secrets.redact import Redactor


def _recording(tmp_path: Path) -> Recording:
    return Recording(TranscriptStore(tmp_path), Redactor(), host_header="agent:1")


def _calls(recording: Recording, count: int) -> list[Call]:
    calls = []
    for n in range(count):
        call = Call(CallRequest(method="GET", target=f"/x/{n}", headers=(), body=b""))
        recording.begin(call)  # (takes the store's lock: before the test holds it)
        calls.append(call)
    return calls


def _hand_over(recording: Recording, calls: list[Call]) -> None:
    for n, call in enumerate(calls):
        recording.write(call, make_exchange(title=f"e{n}"))


def test_a_request_waits_until_the_writer_is_down_to_half_the_backlog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_module, "CATCH_UP", 30.0)  # (a generous bound: not reached)
    recording = _recording(tmp_path)

    async def main() -> tuple[int, bool]:
        calls = _calls(recording, BACKLOG * 2)
        with recording.store._lock:  # the writer is held up
            _hand_over(recording, calls)
            waiting = asyncio.create_task(recording.writer.catch_up())
            await asyncio.sleep(0.05)
            held = not waiting.done()
        await asyncio.wait_for(waiting, 30)
        return recording.writer.pending, held

    pending, held = asyncio.run(main())
    assert held  # it waited while the writer could not write
    assert pending <= BACKLOG // 2
    assert asyncio.run(recording.writer.flush(30))
    assert recording.writer.recorded == BACKLOG * 2


def test_a_stalled_writer_holds_a_request_no_longer_than_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_module, "CATCH_UP", 0.2)
    recording = _recording(tmp_path)

    async def main() -> float:
        calls = _calls(recording, BACKLOG * 2)
        with recording.store._lock:
            _hand_over(recording, calls)
            start = time.monotonic()
            await asyncio.wait_for(recording.writer.catch_up(), 30)
            return time.monotonic() - start

    waited = asyncio.run(main())
    assert 0.15 <= waited < 20
    assert asyncio.run(recording.writer.flush(30))


def test_no_wait_under_the_backlog(tmp_path: Path) -> None:
    recording = _recording(tmp_path)

    async def main() -> None:
        calls = _calls(recording, BACKLOG // 2)
        with recording.store._lock:
            _hand_over(recording, calls)
            await asyncio.wait_for(recording.writer.catch_up(), 1)  # returns at once

    asyncio.run(main())
    assert asyncio.run(recording.writer.flush(30))
