"""Files that need others played first: `# @after NAME.http` (`Transcript.after`).

A file whose replies read state other files made (a ListTasks that lists the tasks they
created, recorded on its own because its request carries no id of theirs) names them in its
head; the recorder writes the tags (`recorder.record.lineage`), a person may too. The tag is
the file's, not an exchange's: the needs are played whole before the file's first exchange
(which `-k` plays anyway, as setup), so a tag per exchange would say no more. So that every
file still replays alone, in any order:

1. Planning (`attach_needs`, after `recorder.replay.plan.plan`): each planned file gets its
   needs, transitively, each once, a needed file before the files that need it, from the
   files of the run or read from the folder (a file played alone, by `-k`, or in a shard
   that does not hold its needs). A tag naming no file, or needs that form a cycle, stop the
   run before anything is sent (`TranscriptErrors`, `file:line` of the tag).
2. Playing (`play_needs`, in the worker that plays the file, on its transport): the needed
   files are played whole first, every time the file is played (alone, with `-k`, `--jobs`,
   `--shard`, or after those very files in one run), as preconditions: like `-k`'s earlier
   exchanges they are not reported; a needed exchange that mismatched or got no reply is a
   note on the file's first reported exchange. Playing them in the same worker each time
   makes the file's result the same however it is run: its state is made right before it,
   in order, whatever other workers do meanwhile.
3. Comparing: the file's `ReplayState` starts with the pairs its needed files learned
   (`ReplayState.inherit`), so the tasks a ListTasks lists must be the ones its needs
   created live (recorded id to live id, one to one); a live listing longer than the
   recorded one loses the items that name no value the file or its needs paired (state
   other files of the run, or earlier runs, made) until it is as long
   (`recorder.replay.verdict.listings`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from recorder.disk.transcripts import load
from recorder.errors import ParseError
from recorder.format.httpread import after_lines
from recorder.format.model import Transcript
from recorder.replay.plan import PlanItem, TranscriptErrors
from recorder.replay.reports.results import ExchangeResult
from recorder.replay.verdict.state import ReplayState

__all__ = ["Needed", "attach_needs", "needs_of", "play_needs"]

Needed = tuple[tuple[str, Transcript], ...]
"""(path, transcript) of the files to play first, in play order."""


def _tag_line(path: str, name: str) -> int | None:
    """The line of `path`'s `@after name` tag (for an error), or None."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return next((line for line, found in after_lines(text) if found == name), None)


def needs_of(loaded: Sequence[tuple[str, Transcript]]) -> dict[str, Needed]:
    """The needs of every file of `loaded` (path, transcript) that has `@after` tags, keyed by
    path: transitively, each once, every needed file before those that need it. Files not in
    `loaded` are read from the folder of the file that names them.

    Raises `TranscriptErrors`: a tag naming no file (or one that does not parse), a cycle.
    """
    files: dict[str, tuple[str, Transcript]] = {
        os.path.realpath(path): (path, transcript) for path, transcript in loaded
    }
    errors: list[ParseError] = []

    def get(path: str, named_by: str, name: str) -> tuple[str, Transcript] | None:
        real = os.path.realpath(path)
        if real not in files:
            if not os.path.isfile(path):
                where = os.path.dirname(path) or "."
                message = f"@after {name}: no such transcript in {where}"
                errors.append(ParseError(message, path=named_by, line=_tag_line(named_by, name)))
                return None
            try:
                files[real] = (path, load(path))
            except ParseError as exc:
                errors.append(exc)
                return None
        return files[real]

    def visit(path: str, transcript: Transcript, trail: list[str], order: list[str]) -> bool:
        whole = True
        for name in transcript.after:
            found = get(os.path.join(os.path.dirname(path), name), path, name)
            if found is None:
                whole = False  # (the other tags are checked too: every missing file named)
                continue
            real = os.path.realpath(found[0])
            if real in trail:
                chain = [os.path.basename(files[r][0]) for r in trail[trail.index(real) :]]
                message = (
                    f"@after {name}: the needs form a cycle ({' needs '.join([*chain, name])}):"
                    " a needed file is played before the file that needs it"
                )
                errors.append(ParseError(message, path=path, line=_tag_line(path, name)))
                return False
            if real in order:
                continue
            if not visit(found[0], found[1], [*trail, real], order):
                return False
            order.append(real)
        return whole

    needs: dict[str, Needed] = {}
    for path, transcript in loaded:
        if not transcript.after:
            continue
        order: list[str] = []
        if visit(path, transcript, [os.path.realpath(path)], order):
            needs[path] = tuple(files[real] for real in order)
    if errors:
        raise TranscriptErrors(errors)
    return needs


def attach_needs(
    items: Sequence[PlanItem], loaded: Sequence[tuple[str, Transcript]]
) -> list[PlanItem]:
    """`items` (the plan), each with its needs (`needs_of` over every loaded file)."""
    needs = needs_of(loaded)
    if not needs:
        return list(items)
    return [replace(item, needs=needs[item.path]) if item.path in needs else item for item in items]


class _Player(Protocol):
    """What `play_needs` uses of a `FilePlayer`."""

    state: ReplayState

    def play_until(self, index: int) -> ExchangeResult: ...


def play_needs(
    needs: Needed,
    make_player: Callable[[PlanItem], _Player],
    stopped: Callable[[], bool],
    *,
    into: ReplayState,
) -> tuple[str, ...]:
    """Play each needed file whole, in order (`make_player` gives each its player), and let
    `into` (the needing file's state) inherit the pairs each learned. Returns the notes on
    what did not go as recorded (a mismatch, no reply). `stopped()` true: stop before the
    next exchange (the caller raises `Stopped`)."""
    notes: list[str] = []
    for path, transcript in needs:
        player = make_player(PlanItem(path, transcript, frozenset(), len(transcript.exchanges)))
        for index in range(len(transcript.exchanges)):
            if stopped():
                return tuple(notes)
            result = player.play_until(index)
            if result.passed or not result.played:
                continue
            if result.error is None:
                verdict = "mismatched"
            elif result.error_type == "no-reply":
                verdict = "got no reply"
            else:
                verdict = "was not sent (a variable is not set)"
            notes.append(
                f"{os.path.basename(path)} (@after: played first) exchange {result.number}"
                f" {verdict}: this file reads the state it makes"
            )
        into.inherit(player.state)
    return tuple(notes)
