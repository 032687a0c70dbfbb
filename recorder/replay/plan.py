"""Planning a replay: find and parse the transcripts, select exchanges (`-k`), split the files
across machines (`--shard K/N`). Broken input stops the run before anything is sent.

Files are played in the order `load_transcripts` finds them: the paths as given, each folder's
`*.http` files sorted by path (`recorder.disk.transcripts.find_files`); a shard is taken by
position in that order, so every machine makes the same split.

Selection with `-k EXPRESSION` (pytest's: words joined by `and`, `or`, `not` and parentheses,
each a case-insensitive substring of "<file> <exchange title>", `recorder.replay.keywords`): a
file none of whose exchanges match is skipped. In a file that has a match, every exchange up to the
last matching one is played in order, because later requests carry forward values from earlier
replies (a GetTask names the task an earlier SendMessage created); only the matching exchanges
are reported and counted, the others are played as setup. Exchanges after the last match are not
played.

A file that needs others (`# @after NAME.http`) gets them as `PlanItem.needs`
(`recorder.replay.needs.attach_needs`, after `plan`): played first, whichever way the file is
selected or sharded, and not reported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from recorder.checking import NO_EXCHANGES, end_line
from recorder.disk.transcripts import find_transcripts, load
from recorder.errors import ParseError, RecorderError
from recorder.format.model import Transcript
from recorder.replay.keywords import Selection

__all__ = ["PlanItem", "TranscriptErrors", "load_transcripts", "parse_shard", "plan"]


class TranscriptErrors(RecorderError):
    """One or more transcripts do not parse; `errors` holds each `path:line: message`."""

    def __init__(self, errors: Sequence[ParseError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


@dataclass(frozen=True)
class PlanItem:
    """One file to play: its transcript, the exchanges reported, and how many to play."""

    path: str
    transcript: Transcript
    selected: frozenset[int]  # 0-based indices of the exchanges reported
    play_count: int  # exchanges 0 .. play_count-1 are played (the later ones are not needed)
    needs: tuple[tuple[str, Transcript], ...] = ()
    """The files its `# @after` tags need, played whole first (`recorder.replay.needs`)."""

    @property
    def selected_count(self) -> int:
        return len(self.selected)


def load_transcripts(paths: Iterable[str | os.PathLike[str]]) -> list[tuple[str, Transcript]]:
    """Every transcript under `paths` (files, or folders searched for *.http), in name order.

    Raises `TranscriptErrors` listing every file that does not parse or holds no exchange.
    """
    loaded: list[tuple[str, Transcript]] = []
    errors: list[ParseError] = []
    seen: set[str] = set()
    for path in find_transcripts(paths):
        name = str(path)
        real = os.path.realpath(path)
        if real in seen:
            continue  # named twice (a file and its folder, `./a.http` and `a.http`): played once
        seen.add(real)
        if not path.exists():
            errors.append(ParseError("no such file or folder", path=name))
            continue
        try:
            transcript = load(path)
        except ParseError as exc:
            errors.append(exc)
            continue
        if not transcript.exchanges:
            try:
                line: int | None = end_line(path.read_bytes())  # (where check says it too)
            except OSError:
                line = None
            errors.append(ParseError(NO_EXCHANGES, path=name, line=line))
            continue
        loaded.append((name, transcript))
    if errors:
        raise TranscriptErrors(errors)
    return loaded


def parse_shard(text: str) -> tuple[int, int]:
    """`"2/5"` -> (2, 5); raises ValueError unless 1 <= K <= N."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match:
        raise ValueError(f"expected K/N such as 1/4, got {text!r}")
    k, n = int(match.group(1)), int(match.group(2))
    if not 1 <= k <= n:
        raise ValueError(f"expected 1 <= K <= N in K/N, got {text!r}")
    return k, n


def plan(
    transcripts: Sequence[tuple[str, Transcript]],
    *,
    pattern: str | None = None,
    shard: tuple[int, int] | None = None,
) -> list[PlanItem]:
    """Which files to play and which of their exchanges to report (see the module docstring).

    Sharding is by position in the sorted file list: shard K of N takes the files whose
    0-based index i has i % N == K - 1, the same split on every machine. A `pattern` that does
    not parse raises `SelectionError` (a ValueError).
    """
    items: list[PlanItem] = []
    selection = None if pattern is None else Selection.parse(pattern)
    for index, (path, transcript) in enumerate(transcripts):
        if shard is not None and index % shard[1] != shard[0] - 1:
            continue
        # (a call the agent made, `# @call`, is no exchange of the client's: not reported)
        if selection is None:
            selected = frozenset(
                i for i, exchange in enumerate(transcript.exchanges) if exchange.call is None
            )
        else:
            selected = frozenset(
                i
                for i, exchange in enumerate(transcript.exchanges)
                if exchange.call is None and selection.matches(path, exchange.title)
            )
        if selected:
            items.append(PlanItem(path, transcript, selected, max(selected) + 1))
    return items
