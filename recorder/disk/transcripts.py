"""Transcript files on disk: found in number order (`find_transcripts`: every `*.http` file of
the folders named, exports passed over), read and parsed (`load`), written atomically (`dump`).
The format itself, text in and text out, is `recorder.format`."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from recorder.disk.atomic import write_text_atomic
from recorder.errors import ParseError
from recorder.format.httpfile import dumps, loads
from recorder.format.model import Transcript

__all__ = [
    "EXPORT_MARK",
    "dump",
    "find_files",
    "find_transcripts",
    "is_export",
    "load",
    "natural_key",
    "note_skipped",
]

EXPORT_MARK = "# exported by recorder"
"""The first line of every file `recorder export` writes; play and check skip such files."""

_DIGITS = re.compile(r"(\d+)")


def natural_key(path: Path) -> tuple[tuple[tuple[int, str], ...], ...]:
    """Sort key for number order: `9-a` < `10-a` < `100-a`, folder by folder.

    Each name is cut into runs of digits and runs of other text; a run of digits compares as
    its number, so transcripts play in their numbers' order past 99 (`100-get-task.http` after
    `11-errors.http`). Equal numbers spelled differently (`7` and `07`) fall back to the text.
    """
    return tuple(
        tuple(
            (int(piece), piece) if index % 2 else (-1, piece)
            for index, piece in enumerate(_DIGITS.split(part))
        )
        for part in path.parts
    )


def find_files(paths: Iterable[str | os.PathLike[str]], pattern: str) -> Iterator[Path]:
    """Each file named, and every file matching `pattern` under each folder named, in number
    order (`natural_key`: `9-a` before `10-a` before `100-a`)."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from sorted((p for p in path.rglob(pattern) if p.is_file()), key=natural_key)
        else:
            yield path


def is_export(path: Path) -> bool:
    """Whether `path` is an export (`recorder export`): its first line starts with EXPORT_MARK."""
    try:
        with open(path, "rb") as file:
            first = file.readline(len(EXPORT_MARK) + 1)
    except OSError:
        return False
    return first.startswith(EXPORT_MARK.encode())


def note_skipped(path: Path) -> None:
    """The note on stderr that an export is not played or checked."""
    sys.stderr.write(f"recorder: skipping {path}: an export (recorder export), not a transcript\n")


def find_transcripts(
    paths: Iterable[str | os.PathLike[str]],
    on_export: Callable[[Path], None] | None = note_skipped,
) -> Iterator[Path]:
    """Each file named, and every `*.http` file under each folder named, in name order; an
    export (`is_export`) is left out and passed to `on_export` (default: a note on stderr).
    `on_export=None` keeps exports in."""
    for path in find_files(paths, "*.http"):
        if on_export is not None and is_export(path):
            on_export(path)
            continue
        yield path


def load(path: str | os.PathLike[str]) -> Transcript:
    """Read and parse one `.http` file."""
    name = os.fspath(path)
    try:
        data = Path(name).read_bytes()
    except OSError as exc:
        raise ParseError(f"cannot read the file: {exc.strerror or exc}", path=name) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ParseError(
            "the file is not UTF-8 text (binary bodies are written as base64 by recorder)",
            path=name,
            line=line,
        ) from None
    return loads(text, source=name)


def dump(transcript: Transcript, path: str | os.PathLike[str]) -> None:
    """Write a transcript atomically: a temporary file (`recorder.disk.atomic`), then a rename."""
    write_text_atomic(Path(path), dumps(transcript))
