"""`recorder check`: find `.http` files and report every one that does not parse.

Pure apart from reading files: `check_paths` returns problems as values; the CLI prints them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from recorder.errors import ParseError
from recorder.httpfile import dumps, load

__all__ = ["Problem", "check_paths", "find_files", "find_transcripts", "natural_key"]

_DIGITS = re.compile(r"(\d+)")


@dataclass(frozen=True)
class Problem:
    """One reason a file fails the check: `path:line: message`."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


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


def find_transcripts(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Each file named, and every `*.http` file under each folder named, in name order."""
    return find_files(paths, "*.http")


def check_paths(
    paths: Iterable[str | os.PathLike[str]], *, canonical: bool = False
) -> tuple[int, list[Problem]]:
    """Parse every transcript; return how many files were checked and the problems found."""
    problems: list[Problem] = []
    count = 0
    found: list[Path] = []
    for raw in paths:
        files = list(find_transcripts([raw]))
        if not files:  # a folder without transcripts: a typo must not pass as "all valid"
            problems.append(Problem(os.fspath(raw), None, "no .http files in this folder"))
        found.extend(files)
    for path in found:
        count += 1
        name = str(path)
        if not path.exists():
            problems.append(Problem(name, None, "no such file or folder"))
            continue
        try:
            transcript = load(path)
        except ParseError as exc:
            problems.append(Problem(exc.path or name, exc.line, exc.message))
            continue
        if not transcript.exchanges:
            problems.append(Problem(name, None, "no exchanges: a transcript holds at least one"))
            continue
        if canonical:
            text = path.read_text(encoding="utf-8")
            expected = dumps(transcript)
            if text != expected:
                line = _first_difference(text, expected)
                problems.append(
                    Problem(name, line, "not in canonical form (rewrite it with recorder's writer)")
                )
    return count, problems


def _first_difference(actual: str, expected: str) -> int:
    actual_lines = actual.replace("\r\n", "\n").split("\n")
    expected_lines = expected.split("\n")
    if "\r" in actual:
        return 1
    for number, (a, e) in enumerate(zip(actual_lines, expected_lines, strict=False), start=1):
        if a != e:
            return number
    return min(len(actual_lines), len(expected_lines))
