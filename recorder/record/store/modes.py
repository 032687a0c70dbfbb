"""Record modes: what recording a scenario that already has a file does (VCR.py's names).

For a scenario whose name already has a file `NN-slug.http` in the folder when the recorder
starts (the lowest number when several have its name; a file another recorder makes while
this one runs is not one):

- `new`: a new file, numbered after the highest;
- `replace`: that file is written again in place, same number, same name. Its text before
  this run is kept in memory; when the recorder stops (`TranscriptStore.close`), the fresh
  recording is laid over it by a `Keep` function (`recorder.replay.rerecord`, handed in by the
  caller: the record job does not import the player), so that the generated values (ids,
  timestamps, `Date`) are the recorded ones again wherever the agent's behaviour did not
  change, and an unchanged scenario leaves its file byte for byte as it was. Until then the
  file holds the fresh recording as it comes. A scenario that runs again in the same
  recording (after its end) goes on in the same file: its runs are appended, what this
  recording wrote is never replaced;
- `once`: that file is kept as it is, and the scenario's exchanges are forwarded but not
  written.

A scenario without a file is recorded into a new file in every mode, and traffic without a
scenario (conversations grouped by id lineage) is recorded as in `new`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from recorder.disk.atomic import write_text_atomic
from recorder.errors import ParseError
from recorder.format.httpfile import dumps, loads
from recorder.format.model import Transcript

__all__ = ["MODES", "Keep", "existing_file", "existing_files", "keep_in_place"]

# `NN-slug.http`: its number, then its slug
_NAMED = re.compile(r"^(\d+)-(.+)\.http$")

MODES = ("new", "replace", "once")
Keep = Callable[[Transcript, Transcript], Transcript]
"""(previous, fresh) -> the transcript `replace` leaves in the file."""


def existing_files(folder: Path) -> dict[str, Path]:
    """Each slug's file `NN-slug.http` in `folder` (the lowest number when there are several;
    none when the folder cannot be read)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return {}
    lowest: dict[str, tuple[int, str]] = {}
    for name in names:
        match = _NAMED.match(name)
        if match is not None:
            number, slug = int(match.group(1)), match.group(2)
            if slug not in lowest or (number, name) < lowest[slug]:
                lowest[slug] = (number, name)
    return {slug: folder / name for slug, (_, name) in lowest.items()}


def existing_file(folder: Path, slug: str) -> Path | None:
    """The file `NN-slug.http` in `folder` (the lowest number when there are several; None
    when there is none, or the folder cannot be read)."""
    pattern = re.compile(r"^(\d+)-" + re.escape(slug) + r"\.http$")
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    numbered = sorted(
        (int(match.group(1)), name) for name in names if (match := pattern.match(name)) is not None
    )
    return folder / numbered[0][1] if numbered else None


def keep_in_place(path: Path, before: str, keep: Keep | None, *, fsync: bool = False) -> bool:
    """Lay the fresh recording in `path` over its text `before` through `keep`, and write the
    result when it differs. Returns whether the file now differs from `before`. A file that
    does not parse, before or now, is left as recorded; a file that is gone, too (False).
    Raises OSError when the file cannot be written."""
    try:
        now = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return False
    except UnicodeDecodeError:
        return True
    if now == before or keep is None:
        return now != before
    try:
        kept = dumps(keep(loads(before, source=path), loads(now, source=path)))
    except ParseError:
        return True
    if kept != now:
        write_text_atomic(path, kept, fsync=fsync)
    return kept != before
