"""A long stream's block kept on disk (`recorder.disk.archive.Archived`) through the store:

- every write of a file that holds one (appended, rewritten for an exchange that came out of
  order, for a head's `@after` that changed, for a secret learned after the stream that is in
  its frames, a new file's first write with secrets, appended to a file another writer
  writes too) writes the bytes the same exchange
  given as one string writes (the store's path before blocks could be archived);
- a text scrubbed a chunk at a time, cut after line breaks, is the text scrubbed whole
  (`scrub_text` changes a text line by line: what the store relies on), for secrets at
  every place of every chunk, short ones (whole values only) and non-ASCII ones;
- an archive's chunks end after line breaks and hold whole characters, a line longer than
  a chunk whole;
- the memory a store needs to write and hold a 20 MiB archived block, and to look for a
  secret sent later in its file on disk, traced by `tracemalloc` (allocations counted, not
  timed): a few chunks, under one chunk held after.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import make_exchange, make_request, make_response
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder import Transcript, dumps, load
from recorder.disk import archive as archive_module
from recorder.disk.archive import Archive, Archived
from recorder.disk.atomic import Pieces
from recorder.format.httpfile import dumps_exchange
from recorder.format.model import Exchange, Headers, Response, SseEvent
from recorder.record.store.filetext import FILE_HEAD, Block
from recorder.record.store.scrubbing import changes, scrub_pieces
from recorder.record.store.transcript_store import CONVERSATION, TranscriptStore
from recorder.secrets.scrub import scrub_text

TOKEN = "tok-secret-123456"  # (in the stream's frames, learned after the stream)
SHORT = "k9"  # (a short secret: scrubbed where it is a whole value)


def stream_exchange(title: str, frames: int, *, secret: str = TOKEN) -> Exchange:
    """A stream whose frames hold non-ASCII text, long lines and `secret` (one at a frame's
    start, one inside, one as a whole JSON value)."""
    events = []
    for n in range(frames):
        text = ("é日" * 40 + "x" * 300) if n % 3 else f"{secret} at the start"
        value = {"n": n, "text": text, "inside": f"Bearer {secret}!", "whole": SHORT}
        events.append(SseEvent(data=json.dumps(value, ensure_ascii=False)))
    response = Response(
        status=200,
        reason="OK",
        headers=Headers([("Content-Type", "text/event-stream")]),
        events=tuple(events),
    )
    return make_exchange(
        title=title,
        request=make_request(body=b'{"method": "SendStreamingMessage"}'),
        response=response,
    )


def archived(archive: Archive, text: str) -> Archived:
    """`text` (a stream's block) kept as `stream_block` keeps it: its frames, up to the end
    of the last one's data line, in `archive`."""
    lines = text.splitlines(keepends=True)
    data = [n for n, line in enumerate(lines) if line.startswith("data: ")]
    first, last = data[0], data[-1] + 1
    return Archived.of(
        archive, "".join(lines[:first]), iter(lines[first:last]), "".join(lines[last:])
    )


def record_all(out: Path, *, archive_blocks: bool) -> Path:
    """Write the same exchanges through a store, each stream as its block: kept on disk
    (`archive_blocks`) or one string."""
    store = TranscriptStore(out, scrub=scrub_text)

    def block(exchange: Exchange) -> Block:
        text = dumps_exchange(exchange)
        kept = archived(store.archive, text) if archive_blocks else text
        return Block(kept, exchange.title, status=200, frames=12)

    stream_file, needed, other = (CONVERSATION, 1), (CONVERSATION, 2), (CONVERSATION, 3)
    first, second, third = (store.begin(into=stream_file, operation="Stream") for _ in range(3))
    # the stream appended after the first exchange, which needs a file not written yet
    store.write(first, make_exchange(title="one"), scenario=None, operation="x", after={needed})
    store.write(third, block(stream_exchange("stream", 12)), scenario=None, operation="x")
    # an exchange out of order: the file rewritten whole
    store.write(second, make_exchange(title="two"), scenario=None, operation="x")
    # the need written: the file's head changes (`@after`), rewritten whole
    store.write(
        store.begin(into=needed, operation="Need"), make_exchange(), scenario=None, operation="x"
    )
    # a secret learned after the stream, in its frames: rewritten whole, scrubbed
    learned = {TOKEN: "TOKEN", SHORT: "SHORT"}
    fourth = store.begin(into=stream_file, operation="x")
    store.write(
        fourth,
        make_exchange(title="four"),
        scenario=None,
        operation="x",
        secrets=learned,
        sent_secrets=learned,
    )
    # another stream with a secret known: appended, scrubbed as it is written
    later = {"later-secret-99": "LATER"}
    fifth = store.begin(into=stream_file, operation="x")
    store.write(
        fifth,
        block(stream_exchange("stream 2", 12, secret="later-secret-99")),
        scenario=None,
        operation="x",
        secrets=later,
    )
    # a new file whose first exchange is a stream with secrets known
    store.write(
        store.begin(into=other, operation="Other"),
        block(stream_exchange("stream 3", 12)),
        scenario=None,
        operation="x",
    )
    store.close()
    return out


def test_a_file_with_an_archived_block_is_written_as_with_its_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archive_module, "CHUNK", 97)  # (chunks cut inside lines and secrets)
    plain = record_all(tmp_path / "plain", archive_blocks=False)
    kept = record_all(tmp_path / "archived", archive_blocks=True)
    names = sorted(path.name for path in plain.glob("*.http"))
    assert names == sorted(path.name for path in kept.glob("*.http"))
    assert len(names) == 3
    for name in names:
        assert (kept / name).read_bytes() == (plain / name).read_bytes(), name
    text = (kept / "01-stream.http").read_text()
    assert TOKEN not in text and "later-secret-99" not in text and "{{TOKEN}}" in text
    assert text.startswith("# recorder-format: 1\n# @after 02-need.http\n")
    titles = [exchange.title for exchange in load(kept / "01-stream.http")]
    assert titles == ["one", "two", "stream", "four", "stream 2"]
    assert TOKEN not in (kept / "03-other.http").read_text()  # (a new file, secrets known)


# ------------------------------------------------------------------ the scrub in chunks

SECRETS = ["tok-secret-123456", "k9", "é-clé-42", 'quo"ted-77', "a b c d e f", "x=1&y"]
FRAGMENTS = [
    *SECRETS,
    '"',
    "=",
    "&",
    "?",
    ": ",
    " ",
    "\\n",
    "\\\\",
    "data: ",
    "Authorization: ",
    "x-token=",
    "é",
    "abc",
    "{",
    "}",
]
line = st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(line, min_size=1, max_size=12),
    secrets=st.lists(st.sampled_from(SECRETS), min_size=1, max_size=4, unique=True),
    chunk=st.integers(min_value=1, max_value=64),
)
def test_a_text_scrubbed_in_chunks_is_the_text_scrubbed_whole(
    lines: list[str], secrets: list[str], chunk: int
) -> None:
    names = {value: f"S{n}" for n, value in enumerate(secrets)}
    head, middle, tail = "Head: v\n", "".join(f"data: {t}\n" for t in lines), "\nTrailer: t\n"
    whole = head + middle + tail
    saved = archive_module.CHUNK
    archive_module.CHUNK = chunk
    try:
        kept = Archived.of(Archive(), head, [middle], tail)
        assert kept.text() == whole
        scrubbed, changed = scrub_pieces(scrub_text, (kept,), names)
        expected = scrub_text(whole, names)
        assert b"".join(Pieces(scrubbed).chunks()).decode() == expected
        assert changed == (expected != whole) == changes(scrub_text, (kept,), names)
        assert Pieces(scrubbed).size == len(expected.encode())
    finally:
        archive_module.CHUNK = saved


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 64, 1 << 18])
def test_an_archives_chunks_end_after_line_breaks_with_whole_characters(chunk: int) -> None:
    text = "é日本\n" + "x" * 200 + "é\n\nlast é"
    saved = archive_module.CHUNK
    archive_module.CHUNK = chunk
    try:
        kept = Archived.of(Archive(), "", [text], "")
        chunks = list(kept.chunks())
    finally:
        archive_module.CHUNK = saved
    assert "".join(chunks) == text
    assert all(piece.endswith("\n") for piece in chunks[:-1])
    assert kept.size == len(text.encode())


def test_a_secret_that_holds_a_line_break_is_scrubbed_from_the_whole_text() -> None:
    # (not from an archived block's frames, where JSON escapes a line break; a plain text
    # body before them may hold one: the block is then scrubbed whole, as it was)
    secret = "line one\nline two"
    head, middle, tail = f"POST /x\n\n{secret}\n\n", "data: {}\n", "\n"
    kept = Archived.of(Archive(), head, [middle], tail)
    (scrubbed,), changed = scrub_pieces(scrub_text, (kept,), {secret: "S"})
    assert changed and scrubbed == scrub_text(kept.text(), {secret: "S"})
    assert "line one" not in scrubbed


def big_block(archive: Archive, frames: int, size: int, secret: str = "") -> Block:
    """A stream's block whose `frames` frames of `size` bytes each are written to `archive`
    as they are made (never in memory together)."""
    lines = dumps_exchange(stream_exchange("big", 1)).splitlines(keepends=True)
    data = [n for n, line in enumerate(lines) if line.startswith("data: ")]
    before, after = "".join(lines[: data[0]]), "".join(lines[data[-1] + 1 :])

    def made() -> Iterator[str]:
        for n in range(frames):
            text = json.dumps({"n": n, "text": "x" * size, "token": secret})
            yield f"data: {text}\n" + ("\n" if n < frames - 1 else "")

    return Block(Archived.of(archive, before, made(), after), "big", status=200, frames=frames)


@pytest.mark.parametrize("secret_in_it", [False, True], ids=["not in it", "in it"])
def test_a_store_writes_and_holds_a_long_archived_block_in_a_few_chunks(
    tmp_path: Path, secret_in_it: bool
) -> None:
    store = TranscriptStore(tmp_path, scrub=scrub_text)
    one = 256 * 1024
    token = "sent-later-123456"
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        block = big_block(store.archive, 80, one, token if secret_in_it else "")  # (20 MiB)
        path = store.write(store.begin("long"), block, scenario="long", operation="x")
        store.write(store.begin("long"), make_exchange(), scenario="long", operation="x")
        # a secret a client sends for the first time: looked for in the files written
        # before (`rescrub`, read from the disk a chunk at a time)
        store.write(
            store.begin("other"),
            make_exchange(),
            scenario="other",
            operation="x",
            secrets={token: "TOKEN"},
            sent_secrets={token: "TOKEN"},
        )
        now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert path is not None
    size = path.stat().st_size
    assert size > 80 * one
    if not secret_in_it:
        # (the stream joined was twice its size at the write, and held; its file read
        # whole for the scrub three times)
        assert peak - base < 12 * one, f"peak {(peak - base) / size:.2f} times the file"
    assert now - base < one, f"{now - base} bytes held"
    text = path.read_text()
    assert token not in text
    assert ("{{TOKEN}}" in text) is secret_in_it
    assert len(load(path).exchanges) == 2


def record_shared(out: Path, *, archive_blocks: bool) -> Path:
    """A file another writer appends to (`recorder.record.store.sharing`): the stream joins
    it at its end, a secret learned with it scrubbed from the text on disk and from it."""
    out.mkdir()
    path = out / "01-dup.http"
    path.write_text(dumps(Transcript(exchanges=(make_exchange(title="old"),))))
    store = TranscriptStore(out, mode="replace", scrub=scrub_text)
    store.prepare()
    early, late, later = (store.begin("dup") for _ in range(3))
    store.write(late, make_exchange(title="late"), scenario="dup", operation="x")
    theirs = make_exchange(title="theirs", response=make_response(body=TOKEN.encode()))
    with path.open("a") as file:  # (another recorder's exchange)
        file.write("\n" + dumps(Transcript(exchanges=(theirs,)))[len(FILE_HEAD) :])
    text = dumps_exchange(stream_exchange("stream", 12))
    kept = archived(store.archive, text) if archive_blocks else text
    learned = {TOKEN: "TOKEN"}
    block = Block(kept, "stream", status=200, frames=12)
    store.write(early, block, scenario="dup", operation="x", secrets=learned)
    other = {"other-secret-77": "OTHER"}
    store.write(later, make_exchange(title="later"), scenario="dup", operation="x", secrets=other)
    store.close()
    return path


def test_a_shared_file_gets_an_archived_block_as_its_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archive_module, "CHUNK", 97)
    plain = record_shared(tmp_path / "plain", archive_blocks=False)
    kept = record_shared(tmp_path / "archived", archive_blocks=True)
    assert kept.read_bytes() == plain.read_bytes()
    assert [e.title for e in load(kept)] == ["late", "theirs", "stream", "later"]
    assert TOKEN not in kept.read_text()
