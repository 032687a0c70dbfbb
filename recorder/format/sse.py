"""Server-sent events: the event value, a lossless parser, a serializer, an incremental decoder.

The wire rules (HTML Living Standard, "Server-sent events", §9.2.6 "Interpreting an event
stream"):

- Lines end in CRLF, LF or CR. A blank line dispatches the event built so far.
- A line starting with ":" is a comment.
- Otherwise the line is `field:value` (or `field` alone, value ""); one space after the colon
  is dropped. Fields: `event`, `data` (repeated lines join with LF), `id`, `retry` (digits).
  Unknown fields are ignored by browsers.

recorder keeps every frame as a value. `parse_lossless` returns None when the stream holds
something that `serialize` could not write back with the same meaning (an unknown field, a
repeated `event`/`id`/`retry`, a non-numeric `retry`, a byte-order mark, an unfinished last
frame): the caller then keeps the raw bytes instead. The canonical serialization writes each
frame's fields in a fixed order (comments, event, id, retry, data) with LF line endings; field
order inside a frame and line-ending style carry no meaning in SSE.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["SseDecoder", "SseEvent", "SseSyntaxError", "parse_lines", "parse_lossless", "serialize"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BYTE_LINE_BREAK = re.compile(rb"\r\n|\r|\n")


class SseSyntaxError(ValueError):
    """A frame that cannot be kept without loss; `offset` is the 0-based line of the problem."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True)
class SseEvent:
    """One SSE frame. `data` is None when the frame has no data line (e.g. a comment-only ping)."""

    data: str | None = None
    event: str | None = None
    id: str | None = None
    retry: int | None = None
    comments: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "comments", tuple(self.comments))
        for name in ("event", "id"):
            value = getattr(self, name)
            if value is not None and _LINE_BREAK.search(value):
                raise ValueError(f"SSE {name} has a line break")
        if self.id is not None and "\0" in self.id:
            raise ValueError("SSE id has a NUL")
        if self.data is not None and "\r" in self.data:
            raise ValueError("SSE data has a carriage return (only LF can separate data lines)")
        if self.retry is not None and self.retry < 0:
            raise ValueError("SSE retry is negative")
        for comment in self.comments:
            if _LINE_BREAK.search(comment):
                raise ValueError("an SSE comment is one line")
        if (
            self.data is None
            and self.event is None
            and self.id is None
            and self.retry is None
            and not self.comments
        ):
            raise ValueError("an SSE frame needs at least one field or comment")

    def lines(self) -> list[str]:
        """The frame's lines in canonical order, without the blank line that ends it."""
        out = [f": {c}" if c else ":" for c in self.comments]
        if self.event is not None:
            out.append(_field("event", self.event))
        if self.id is not None:
            out.append(_field("id", self.id))
        if self.retry is not None:
            out.append(f"retry: {self.retry}")
        if self.data is not None:
            out.extend(_field("data", line) for line in self.data.split("\n"))
        return out


def _field(name: str, value: str) -> str:
    return f"{name}: {value}" if value else f"{name}:"


def serialize(events: Iterable[SseEvent]) -> bytes:
    """The canonical bytes of a stream: each frame's lines, then a blank line."""
    parts: list[str] = []
    for event in events:
        parts.extend(event.lines())
        parts.append("")
    return ("\n".join(parts) + "\n").encode() if parts else b""


class _FrameBuilder:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.data: list[str] | None = None
        self.event: str | None = None
        self.id: str | None = None
        self.retry: int | None = None
        self.comments: list[str] = []
        self.empty = True

    def add(self, line: str, offset: int) -> None:
        """Add one non-blank line; raise SseSyntaxError when it cannot be kept losslessly."""
        self.empty = False
        if line.startswith(":"):
            self.comments.append(_drop_one_space(line[1:]))
            return
        name, colon, value = line.partition(":")
        value = _drop_one_space(value) if colon else ""
        if name == "data":
            if self.data is None:
                self.data = []
            self.data.append(value)
        elif name in ("event", "id"):
            if getattr(self, name) is not None:
                raise SseSyntaxError(f"the frame has a second {name!r} line", offset)
            if name == "id" and "\0" in value:
                raise SseSyntaxError("an SSE id with a NUL is ignored by clients", offset)
            setattr(self, name, value)
        elif name == "retry":
            if self.retry is not None:
                raise SseSyntaxError("the frame has a second 'retry' line", offset)
            if not value.isascii() or not value.isdigit():
                raise SseSyntaxError(f"retry must be digits, got {value!r}", offset)
            self.retry = int(value)
        else:
            raise SseSyntaxError(
                f"unknown SSE field {name!r}: expected data:, event:, id:, retry: or a ':' comment",
                offset,
            )

    def build(self) -> SseEvent:
        event = SseEvent(
            data=None if self.data is None else "\n".join(self.data),
            event=self.event,
            id=self.id,
            retry=self.retry,
            comments=tuple(self.comments),
        )
        self.reset()
        return event


def _drop_one_space(value: str) -> str:
    return value[1:] if value.startswith(" ") else value


def parse_lines(lines: Iterable[str], *, require_final_blank: bool = True) -> list[SseEvent]:
    """Parse a stream already split into lines. Raises SseSyntaxError (with the line offset)."""
    events: list[SseEvent] = []
    frame = _FrameBuilder()
    offset = -1
    for offset, line in enumerate(lines):
        if line == "":
            if not frame.empty:
                events.append(frame.build())
        else:
            frame.add(line, offset)
    if not frame.empty:
        if require_final_blank:
            raise SseSyntaxError("the last frame is not finished by a blank line", offset)
        events.append(frame.build())
    return events


def parse_lossless(body: bytes) -> tuple[SseEvent, ...] | None:
    """The frames of a whole stream body, or None when they cannot be kept without loss."""
    if not body:
        return ()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.startswith("\ufeff"):
        return None
    lines = _LINE_BREAK.split(text)
    # a complete stream ends with a line break, so the split leaves a final "" to drop
    if lines[-1] != "":
        return None
    lines.pop()
    try:
        return tuple(parse_lines(lines))
    except (SseSyntaxError, ValueError):
        return None


class SseDecoder:
    """Incremental: feed bytes as they arrive, get the frames completed so far.

    Used by the recording proxy to see frame boundaries without holding the stream back. It
    keeps every byte it was fed (`raw`), so a stream that turns out not to be lossless SSE can
    still be recorded as raw bytes.
    """

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # the start of an unfinished line, in pieces
        self._chunks: list[bytes] = []
        self._frame = _FrameBuilder()
        self._offset = 0
        self._last_was_cr = False
        self.lossless = True
        self.events: list[SseEvent] = []

    @property
    def raw(self) -> bytes:
        return b"".join(self._chunks)

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Consume a chunk; return the frames it completed. Only the new bytes are searched
        for line breaks (a long line used to be scanned again, byte by byte in Python, with
        every chunk: 400 KB in 1 KB chunks took 28 s)."""
        self._chunks.append(chunk)
        if not self.lossless or not chunk:
            return []
        completed: list[SseEvent] = []
        start = 0
        if self._last_was_cr and chunk[:1] == b"\n":
            start = 1  # the LF of a CRLF whose CR ended the previous line
        for match in _BYTE_LINE_BREAK.finditer(chunk, start):
            piece = chunk[start : match.start()]
            if self._pending:
                piece = b"".join((*self._pending, piece))
                self._pending.clear()
            self._line(piece, completed)
            start = match.end()
        if start < len(chunk):
            self._pending.append(chunk[start:])
        # a CR at the very end may be the first half of a CRLF split between two chunks
        self._last_was_cr = start == len(chunk) and chunk[-1:] == b"\r"
        return completed

    def _line(self, raw_line: bytes, completed: list[SseEvent]) -> None:
        if not self.lossless:
            return
        try:
            line = raw_line.decode("utf-8")
            if self._offset == 0 and line.startswith("\ufeff"):
                raise SseSyntaxError("byte-order mark", 0)
            if line == "":
                if not self._frame.empty:
                    event = self._frame.build()
                    self.events.append(event)
                    completed.append(event)
            else:
                self._frame.add(line, self._offset)
        except (UnicodeDecodeError, SseSyntaxError, ValueError):
            self.lossless = False
        self._offset += 1

    def close(self) -> bool:
        """End of stream: True when every byte was part of a finished, lossless frame."""
        if self._pending or not self._frame.empty:
            self.lossless = False
        return self.lossless

    def __iter__(self) -> Iterator[SseEvent]:
        return iter(self.events)
