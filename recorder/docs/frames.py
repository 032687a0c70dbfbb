"""Rule 4 of `recorder.docs.render`: SSE frames, one `data:` line each, cut to a width.

Pure. A frame is shown whole while the line budget allows, then only when it holds a picked
member; a `data:` line keeps the JSON-RPC envelope, the chain that names the frame's kind, what
fits in the width, and every picked member (the task state, the parts, the artifact), with `…`
for the members left out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recorder.docs.select import (
    ELLIPSIS,
    IdShortener,
    JsonPath,
    Step,
    dumps_scalar,
    envelope_first,
    first_leaf_path,
    picked_paths,
)
from recorder.format.jsonbody import loads
from recorder.format.sse import SseEvent

__all__ = ["cut_data_line", "stream_lines"]


def stream_lines(
    events: Sequence[SseEvent],
    *,
    max_lines: int,
    width: int,
    full: bool = False,
    picks: Sequence[JsonPath] = (),
    ids: IdShortener | None = None,
    marks: Mapping[int, Sequence[str]] | None = None,
    open_end: bool = False,
) -> list[str]:
    """The frames as lines, a blank line between frames, `…` for each run of frames left out.

    `marks`: lines to show after the K-th frame (keep-alive pings not counted), never elided,
    and not counted in `max_lines` (rule 7 of render: where a later request was sent); after
    the last frame when the stream has fewer. `open_end`: a run of frames left out at the end
    is not marked (rule 8)."""
    marks = marks or {}
    paragraphs: list[list[str]] = []  # frames, `…` lines and marks, a blank line between
    used = 0  # the lines of the frames shown so far, with the blank lines between them
    over = False  # the budget is spent: only frames with a picked member are shown
    elided = False
    frames = 0
    for event in events:
        raw = [ids.text(line) if ids else line for line in event.lines()]
        frame = [_frame_line(line, width, full, picks) for line in raw]
        needed = len(frame) + (1 if used else 0)
        if not full and used and used + needed > max_lines:
            over = True
        if over and not _has_pick(raw, picks):
            elided = True
        else:
            if elided:
                paragraphs.append([ELLIPSIS])
                elided = False
            paragraphs.append(frame)
            used += needed
        if _is_frame(event):
            frames += 1
            if frames in marks:
                if elided:
                    paragraphs.append([ELLIPSIS])
                    elided = False
                paragraphs.append(list(marks[frames]))
    if elided and not open_end:
        paragraphs.append([ELLIPSIS])
    paragraphs.extend(list(marks[frame]) for frame in sorted(marks) if frame > frames)
    lines: list[str] = []
    for paragraph in paragraphs:
        if lines:
            lines.append("")
        lines.extend(paragraph)
    return lines


def _is_frame(event: SseEvent) -> bool:
    """Whether `@during ... frame K` counts the frame: not one of comments only (a keep-alive
    ping), as the player counts (`recorder.replay.verdict.live.is_frame`)."""
    return not (
        event.data is None and event.event is None and event.id is None and event.retry is None
    )


def _data(line: str) -> str | None:
    return line[len("data:") :].removeprefix(" ") if line.startswith("data:") else None


def _has_pick(raw: list[str], picks: Sequence[JsonPath]) -> bool:
    for line in raw:
        data = _data(line)
        if data is None:
            continue
        try:
            value = loads(data)
        except (ValueError, RecursionError):
            continue
        if picked_paths(envelope_first(value), picks):
            return True
    return False


def _frame_line(line: str, width: int, full: bool, picks: Sequence[JsonPath]) -> str:
    data = _data(line)
    if data is None:
        return line
    return "data: " + cut_data_line(data, width - len("data: "), full, picks)


def cut_data_line(data: str, width: int, full: bool = False, picks: Sequence[JsonPath] = ()) -> str:
    """Rule 4 for one `data:` value: JSON reordered, cut at member boundaries with `…`."""
    try:
        value = loads(data)  # (each number as it was written: `jsonbody.JsonNumber`)
    except (ValueError, RecursionError):
        return data if full or len(data) <= width else _cut_text(data, width)
    value = envelope_first(value)
    pieces = list(_flat_pieces(value, ()))
    whole = "".join(piece.text for piece in pieces)
    if full or len(whole) <= width:
        return whole
    keep_path = first_leaf_path(value)
    marker = ", " + ELLIPSIS
    best: int | None = None  # index of the last piece kept
    floor: int | None = None
    length = 0
    for index, piece in enumerate(pieces):
        length += len(piece.text)
        if not piece.boundary:
            continue
        if floor is None and piece.path == keep_path:
            floor = index
        if floor is not None and (best is None or length + len(marker) <= width):
            best = index
        if length + len(marker) > width and floor is not None:
            break
    if best is None:  # unreachable: every value ends at a boundary
        return whole
    kept = {piece.path for piece in pieces[: best + 1] if piece.boundary}
    kept.update(picked_paths(value, picks))
    above = frozenset(path[:depth] for path in kept for depth in range(len(path)))
    tokens = list(_elided_tokens(value, (), frozenset(kept), above))
    return _join_tokens(tokens)


@dataclass(frozen=True)
class _Piece:
    text: str
    path: tuple[Step, ...]
    boundary: bool = False  # a complete value ends here
    closer: bool = False


def _flat_pieces(value: Any, path: tuple[Step, ...]) -> Iterator[_Piece]:
    """`json.dumps(value)` (", " and ": " separators) in pieces, marking where values end."""
    if isinstance(value, dict) and value:
        yield _Piece("{", path)
        for i, (key, member) in enumerate(value.items()):
            yield _Piece((", " if i else "") + dumps_scalar(key) + ": ", path)
            yield from _flat_pieces(member, (*path, key))
        yield _Piece("}", path, boundary=True, closer=True)
    elif isinstance(value, list) and value:
        yield _Piece("[", path)
        for i, element in enumerate(value):
            if i:
                yield _Piece(", ", path)
            yield from _flat_pieces(element, (*path, i))
        yield _Piece("]", path, boundary=True, closer=True)
    else:
        yield _Piece(dumps_scalar(value), path, boundary=True)


# token kinds: "value" (a complete value), "open", "close", "key", "sep", "gap" (members left out)
_Token = tuple[str, str]


def _flat(value: Any) -> str:
    return "".join(piece.text for piece in _flat_pieces(value, ()))


def _elided_tokens(
    value: Any,
    path: tuple[Step, ...],
    kept: frozenset[tuple[Step, ...]],
    above: frozenset[tuple[Step, ...]],
) -> Iterator[_Token]:
    """`value` with every node outside `kept` (and not above a kept node) written as a gap."""
    if any(path[:depth] in kept for depth in range(len(path) + 1)) or not (
        isinstance(value, (dict, list)) and value
    ):
        yield ("value", _flat(value))
        return
    is_dict = isinstance(value, dict)
    items: list[tuple[Step, Any]] = (
        list(value.items()) if isinstance(value, dict) else list(enumerate(value))
    )
    yield ("open", "{" if is_dict else "[")
    first = True
    gap = False
    for key, member in items:
        child = (*path, key)
        if child not in kept and child not in above:
            gap = True
            continue
        if gap:
            yield ("sep", "" if first else ", ")
            yield ("gap", ELLIPSIS)
            first, gap = False, False
        yield ("sep", "" if first else ", ")
        if is_dict:
            yield ("key", dumps_scalar(key) + ": ")
        yield from _elided_tokens(member, child, kept, above)
        first = False
    if gap:
        yield ("sep", "" if first else ", ")
        yield ("gap", ELLIPSIS)
    yield ("close", "}" if is_dict else "]")


def _join_tokens(tokens: list[_Token]) -> str:
    """The tokens as text; a gap after the last value ends the line with `, …` (brackets off)."""
    last = max((i for i, (kind, _) in enumerate(tokens) if kind == "value"), default=-1)
    while last + 1 < len(tokens) and tokens[last + 1][0] == "close":
        last += 1  # a container ending right after the last value is shown closed
    if any(kind == "gap" for kind, _ in tokens[last + 1 :]):
        return "".join(text for _, text in tokens[: last + 1]) + ", " + ELLIPSIS
    return "".join(text for _, text in tokens)


def _cut_text(text: str, width: int) -> str:
    """Plain text cut at the last space that fits, then ` …` (never inside a word)."""
    limit = max(width - 2, 1)
    space = text.rfind(" ", 0, limit + 1)
    cut = text[:space] if space > 0 else text[:limit]
    return cut.rstrip() + " " + ELLIPSIS
