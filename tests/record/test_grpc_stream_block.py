"""A gRPC stream's record at its end (`recorder.record.grpc_record.stream_exchange`): its
block is made from the spool a message at a time, never as a model beside its text.

- the block is the text the model of the same stream renders (`dumps_exchange`), whatever
  the stream's end: OK, failed after messages (its status in the trailers), cut, with
  metadata (secret metadata redacted), non-ASCII messages;
- a stream spooled to a file gives its block kept on disk (`Archived`), whose text is the
  same; one that stayed in memory, or whose archive cannot be written (a full disk), one
  string;
- the memory the end of a long stream costs, traced by `tracemalloc` (allocations counted,
  not timed), in a new file and appended to one: a few of its messages, however long it
  is, at its peak and held after (the model's path held its events, their SSE text, their
  decoded copy and the joined block at once, then the file's text and its bytes beside the
  block: five times the stream; the joined block was then twice at its peak and held once
  by the store for its life: its frames are now written to the store's archive as they are
  read from the spool, and from there to the file, a chunk at a time).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import tracemalloc
from collections.abc import Iterable
from pathlib import Path

import pytest

from recorder import load
from recorder.disk.archive import Archive, Archived
from recorder.format.httpfile import dumps_exchange
from recorder.format.model import GRPC_METHOD, Exchange
from recorder.record.grpc_record import CallRecord, MessageSpool, Records, stream_exchange
from recorder.record.proxy.call import Call, CallRequest
from recorder.record.proxy.recording import Recording
from recorder.record.store.filetext import Block
from recorder.record.store.transcript_store import TranscriptStore
from recorder.secrets.redact import Redactor

TARGET = "/lf.a2a.v1.A2AService/SendStreamingMessage"


def message(index: int, text: str) -> bytes:
    """One stream message's JSON as the worker spools it."""
    update = {
        "taskId": "t-1",
        "contextId": "c-1",
        "status": {
            "state": "TASK_STATE_WORKING",
            "message": {"messageId": f"m-{index}", "role": "ROLE_AGENT", "parts": [{"text": text}]},
        },
    }
    return json.dumps({"statusUpdate": update}, ensure_ascii=False).encode()


def recorded(
    recording: Recording,
    lines: list[bytes],
    *,
    during: bool = False,
    scenario: str | None = None,
    spool_at: int | None = None,
) -> CallRecord:
    call = Call(CallRequest(GRPC_METHOD, TARGET, (), b'{"message": {}}'))
    call.scenario = scenario
    recording.begin(call)
    if during:  # (a stream tagged `@during` another: recorded from its model)
        call.routing = dataclasses.replace(call.routing, during=(0, 1))
    record = CallRecord(
        call, "SendStreamingMessage", [], call.redactor.fresh(), archive=recording.store.archive
    )
    if spool_at is not None:
        record.spool = MessageSpool(spool_at)
    for line in lines:
        record.spool.add(line)
    return record


ENDS = {
    "ok": (0, "", [("x-served-by", "kit")], [("x-trailer", "t")], False),
    "failed after messages": (13, "the agent broke", [], [("x-why", "w")], False),
    "cut by the client": (1, "cancelled by the client", [], [], True),
    "secret metadata": (0, "", [("authorization", "Bearer s3cr3t")], [], False),
}


@pytest.mark.parametrize("spooled", [False, True], ids=["in memory", "spooled"])
@pytest.mark.parametrize("end", sorted(ENDS))
def test_a_streams_block_is_the_text_its_model_renders(
    tmp_path: Path, end: str, spooled: bool
) -> None:
    code, details, initial, trailing, truncated = ENDS[end]
    recording = Recording(TranscriptStore(tmp_path), Redactor(), host_header="agent:1")
    lines = [message(n, text) for n, text in enumerate(["a", "é ü 日本", "x" * 3000, ""])]
    build = functools.partial(stream_exchange, truncated=truncated)
    spool_at = 0 if spooled else None
    block = build(recorded(recording, lines, spool_at=spool_at), code, details, initial, trailing)
    model = build(recorded(recording, lines, during=True), code, details, initial, trailing)
    assert isinstance(block, Block) and isinstance(model, Exchange)
    # (a spooled stream's block is kept on disk, around its frames)
    assert isinstance(block.text, Archived if spooled else str)
    text = block.text.text() if isinstance(block.text, Archived) else block.text
    assert text == dumps_exchange(model)
    assert block.title == model.title
    assert (block.status, block.frames) == (code, len(lines))
    assert "s3cr3t" not in text


@pytest.mark.parametrize("earlier", [0, 1], ids=["new file", "appended"])
def test_the_end_of_a_long_stream_costs_a_few_messages_not_the_stream(
    tmp_path: Path, earlier: int
) -> None:
    recording = Recording(TranscriptStore(tmp_path), Redactor(), host_header="agent:1")

    async def end(record: CallRecord, *, traced: bool) -> tuple[int, int]:
        records = Records(recording)
        if traced:
            tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            records.end(record, functools.partial(stream_exchange, record, 0, "", [], []))
            assert await recording.writer.flush(60)
            now, peak = tracemalloc.get_traced_memory()
            return peak - base, now - base
        finally:
            tracemalloc.stop()

    for _ in range(earlier):  # (a short stream first: the long one is appended to its file)
        asyncio.run(end(recorded(recording, [message(0, "short")], scenario="s"), traced=False))
    one = 256 * 1024
    lines = [message(n, "x" * one) for n in range(80)]
    size = sum(len(line) for line in lines)  # (20 MiB)
    record = recorded(recording, lines, scenario="s")  # (spooled to a temporary file)
    del lines
    peak, held = asyncio.run(end(record, traced=True))
    assert recording.writer.status()["recorded"] == earlier + 1
    # (a few chunks of the archive, `CHUNK`, and of messages: ~6 messages; the stream
    # joined was twice the stream, 160)
    assert peak < 12 * one, f"peak {peak / size:.2f} times the stream"
    assert held < one, f"{held} bytes held after the stream's record"
    (path,) = tmp_path.glob("*.http")
    exchanges = load(path).exchanges
    assert len(exchanges) == earlier + 1
    events = exchanges[-1].response.events
    assert events is not None and len(events) == 80


def test_a_stream_whose_archive_cannot_be_written_is_recorded_as_one_string(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = Recording(TranscriptStore(tmp_path), Redactor(), host_header="agent:1")
    lines = [message(n, text) for n, text in enumerate(["a", "é ü 日本", "x" * 3000])]
    written: list[str] = []

    def full(archive: Archive, chunks: Iterable[str]) -> tuple[int, int]:
        for chunk in chunks:  # (some of it written, then the disk is full)
            written.append(chunk)
            raise OSError(28, "No space left on device")
        raise AssertionError("no frames")

    monkeypatch.setattr(Archive, "keep", full)
    block = stream_exchange(recorded(recording, lines, spool_at=0), 0, "", [], [])
    model = stream_exchange(recorded(recording, lines, during=True), 0, "", [], [])
    assert written and isinstance(block, Block) and isinstance(model, Exchange)
    assert block.text == dumps_exchange(model)
