"""Large texts kept on disk instead of in memory: an `Archive` is one append-only anonymous
temporary file (unlinked as it is made, so nothing is left behind, even by a `kill -9`),
written a chunk at a time; an `Archived` text is a small head and tail in memory around a
span of it. The recorder's store keeps a long gRPC stream's block so
(`recorder.record.grpc_record.stream_block`): its frames are written once, here, then read
back a chunk at a time each time the store writes them to a transcript, never joined into
one string (a 100 MiB stream would be held twice, then once for the store's life).

A span is read in chunks cut after a line break (`Archived.chunks`): each chunk but the last
ends with one, and holds whole UTF-8 characters. A line longer than `CHUNK` bytes (one large
message's frame) is one chunk of its own: the memory a read needs is the larger of `CHUNK`
and the longest line.
"""

from __future__ import annotations

import os
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

__all__ = ["CHUNK", "Archive", "Archived", "read_lines"]

# bytes read from an archive at a time (a few of them, or of its longest line, are in memory
# while a span is read and written out)
CHUNK = 1 << 18


class Archive:
    """An append-only anonymous temporary file (made at the first `keep`: one file
    descriptor for the archive's life, closed when the archive is let go, as the spans that
    hold it are). Thread-safe: spans are written one at a time and read with `pread`, which
    moves no shared position."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd = -1
        self._end = 0

    def _open(self) -> int:
        # called with the lock held
        if self._fd < 0:
            with tempfile.TemporaryFile() as file:  # (unlinked, or never named: O_TMPFILE)
                self._fd = os.dup(file.fileno())
            weakref.finalize(self, os.close, self._fd)
        return self._fd

    def keep(self, chunks: Iterable[str]) -> tuple[int, int]:
        """Write `chunks` (a text, in pieces) at the archive's end; returns its span (offset,
        length in bytes). OSError when the file cannot be made or written (a full disk): the
        archive is as it was, its next span written over what this one wrote."""
        with self._lock:
            fd = self._open()
            offset = self._end
            gathered: list[bytes] = []  # (small chunks written together: fewer system calls)
            size = 0
            for chunk in chunks:
                gathered.append(chunk.encode("utf-8"))
                size += len(gathered[-1])
                if size >= CHUNK:
                    offset = _write_at(fd, gathered, offset)
                    gathered, size = [], 0
            offset = _write_at(fd, gathered, offset)
            start, self._end = self._end, offset
            return start, offset - start

    def read(self, offset: int, length: int) -> Iterator[str]:
        """The text of the span (`offset`, `length`), in chunks that end after a line break
        (the last one: where the span ends)."""
        return read_lines(self._fd, offset, length)


def read_lines(fd: int, offset: int, length: int) -> Iterator[str]:
    """The UTF-8 text of `length` bytes of file `fd` from `offset`, read with `pread` in
    chunks of about `CHUNK` bytes, each ending after a line break but the last (a longer
    line: one chunk). UnicodeDecodeError for bytes that are no UTF-8 text."""
    if length <= 0:
        return
    end = offset + length
    carried: list[bytes] = []  # the start of a line longer than the chunks read so far
    while offset < end:
        data = os.pread(fd, min(CHUNK, end - offset), offset)
        if not data:
            raise OSError(f"the file ends before the text read ({offset} of {end} bytes)")
        offset += len(data)
        cut = data.rfind(b"\n") + 1
        if not cut:
            carried.append(data)
            continue
        # (decoded from a view: the bytes read are not copied first)
        head = memoryview(data)[:cut]
        text = str(b"".join((*carried, head)) if carried else head, "utf-8")
        carried = [data[cut:]] if cut < len(data) else []
        del head, data  # (not held while the text is used)
        yield text
    if carried:
        yield b"".join(carried).decode("utf-8")


def _write_at(fd: int, parts: list[bytes], offset: int) -> int:
    """Write `parts` one after another at `offset` of `fd` (not joined); returns the offset
    after them."""
    written = os.pwritev(fd, parts, offset) if parts else 0
    offset += written
    rest = sum(map(len, parts)) - written
    if rest:  # (a short write: a signal, a full disk)
        view = memoryview(b"".join(parts))[-rest:]
        while view:
            offset += (written := os.pwrite(fd, view, offset))
            view = view[written:]
    return offset


@dataclass(frozen=True, slots=True)
class Archived:
    """A text kept mostly on disk: `before`, the span (`offset`, `length`) of `archive`,
    then `after`. A block of a long gRPC stream: its exchange's text around its frames, which
    are in the span. Its span ends with a line break, so every chunk of it
    does (`chunks`)."""

    before: str
    archive: Archive
    offset: int
    length: int
    after: str
    # applied to each chunk as it is read (`through`): None, the text as written
    change: Callable[[str], str] | None = None

    @classmethod
    def of(cls, archive: Archive, before: str, middle: Iterable[str], after: str) -> Archived:
        """`before`, then the text of `middle` written to `archive` (which must end with a
        line break), then `after`. OSError when the archive cannot be written."""
        offset, length = archive.keep(middle)
        return cls(before, archive, offset, length, after)

    def chunks(self) -> Iterator[str]:
        """The text in chunks, each ending after a line break but the last (`Archive.read`):
        `before`, the span's chunks, `after` (each through `change`, when there is one; none
        empty)."""
        change = self.change
        if self.before:
            yield self.before if change is None else change(self.before)
        for chunk in self.archive.read(self.offset, self.length):
            yield chunk if change is None else change(chunk)
        if self.after:
            yield self.after if change is None else change(self.after)

    def through(self, change: Callable[[str], str]) -> Archived:
        """The text with `change` applied to each of its chunks (read as they are written:
        nothing is written to the archive). `change` must change a text line by line, so
        that applied to the chunks it changes the text as it would the whole (a scrub of
        secrets, which hold no line break: `recorder.record.store.scrubbing`)."""
        return replace(self, change=change)

    @property
    def size(self) -> int:
        """The length of the text's UTF-8 bytes (with a `change`: found by reading it)."""
        if self.change is not None:
            return sum(len(chunk.encode("utf-8")) for chunk in self.chunks())
        return len(self.before.encode("utf-8")) + self.length + len(self.after.encode("utf-8"))

    def text(self) -> str:
        """The whole text, in memory (what the store does not do with it: for tests, and
        for rare paths that say so)."""
        return "".join(self.chunks())

    def sketch(self, middle: str) -> str:
        """The text with `middle` in place of the span: what the text's structure is (its
        exchange's lines, one frame) at a small size, for a check that it parses (with a
        `change`: its head and tail changed)."""
        if self.change is not None:
            return self.change(self.before) + middle + self.change(self.after)
        return self.before + middle + self.after
