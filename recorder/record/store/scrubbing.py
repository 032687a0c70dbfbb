"""Secrets learned while recording, scrubbed from transcript text (`TranscriptStore`'s): from
a file's text or an exchange's block before it is written (the text must still parse), and
from a file already written, read from the disk under its lock (`rescrub`).

A file's text is given in pieces (`OpenFile.pieces`), and a long stream's block among them
may be kept on disk (`Archived`): it is scrubbed a chunk at a time as it is written, never
joined (`scrub_pieces`). That is the text scrubbed whole because a scrub changes a text line
by line (see `Scrub`), and each chunk ends after a line break.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from recorder.disk.archive import Archived, read_lines
from recorder.disk.atomic import Pieces, write_text_atomic
from recorder.disk.locking import Held, locked, read_held
from recorder.format.httpfile import dumps_exchange, loads
from recorder.record.store.filetext import FILE_HEAD, Disk, Entry, Text

__all__ = [
    "Scrub",
    "by_line",
    "changes",
    "rescrub",
    "scrub_pieces",
    "scrubbed",
    "scrubbed_block",
    "unchanged_on_disk",
]

Scrub = Callable[[str, Mapping[str, str]], str]
"""(text, secrets) -> the text with each secret value replaced by its placeholder.

The store relies on it changing a text line by line, to scrub an archived block a chunk at a
time (chunks cut after line breaks): `recorder.secrets.scrub.scrub_text` does, as its
patterns match within a line (`(?m)`, their classes hold no line break) and no secret
spans a line break in an archived block (a stream's frames: one JSON text a line, in which
JSON escapes a line break; the header lines around them cannot hold one).
`tests/record/test_store_archived.py` checks it on texts cut at every line."""

# what stands for an archived block's frames when its text is checked to parse (`sketch`)
SKETCH_FRAMES = "data: {}\n"


def _runs(pieces: Iterable[Text]) -> list[Text]:
    """`pieces` with the strings between archived pieces joined: each run is scrubbed as one
    text, as the whole file was before blocks could be archived."""
    runs: list[Text] = []
    strings: list[str] = []
    for piece in pieces:
        if isinstance(piece, Archived):
            if strings:
                runs.append("".join(strings))
                strings = []
            runs.append(piece)
        else:
            strings.append(piece)
    if strings:
        runs.append("".join(strings))
    return runs


def scrub_pieces(
    scrub: Scrub, pieces: Iterable[Text], secrets: Mapping[str, str]
) -> tuple[tuple[Text, ...], bool]:
    """`pieces` with `secrets` replaced, and whether that changed them. An archived piece is
    read a chunk at a time; one that changes is given as a view that scrubs each chunk as it
    is read again to be written (never in memory whole, nothing added to the archive)."""
    out: list[Text] = []
    changed = False
    by_lines = by_line(secrets)
    for run in _runs(pieces):
        if isinstance(run, Archived) and not by_lines:
            run = run.text()  # (a secret that holds a line break: scrubbed whole, as it was)
        if isinstance(run, Archived):
            if any(scrub(chunk, secrets) != chunk for chunk in run.chunks()):
                run = run.through(functools.partial(_scrub_chunk, scrub, dict(secrets)))
                changed = True
        else:
            result = scrub(run, secrets)
            changed = changed or result != run
            run = result
        out.append(run)
    return tuple(out), changed


def unchanged_on_disk(scrub: Scrub, held: Held, secrets: Mapping[str, str]) -> bool:
    """Whether scrubbing the file `held` with `secrets` leaves it as it is, read a chunk at a
    time (`by_line`: False when it cannot be told so, the file is then read whole)."""
    if not by_line(secrets):
        return False
    return all(scrub(chunk, secrets) == chunk for chunk in read_lines(held.fd, 0, held.size))


def by_line(secrets: Mapping[str, str]) -> bool:
    """Whether `secrets` can be scrubbed from a text a chunk at a time (chunks cut after
    line breaks): none holds a line break (none does in an archived block, `Scrub`; one found
    in other text, a plain text body, is scrubbed from the whole text, as it was)."""
    return not any("\n" in value for value in secrets)


def _scrub_chunk(scrub: Scrub, secrets: Mapping[str, str], chunk: str) -> str:
    return scrub(chunk, secrets)


def changes(scrub: Scrub, pieces: Iterable[Text], secrets: Mapping[str, str]) -> bool:
    """Whether scrubbing `pieces` with `secrets` changes them (an archived piece read a chunk
    at a time, up to the first change)."""
    return scrub_pieces(scrub, pieces, secrets)[1]


def sketch(pieces: Iterable[Text]) -> str:
    """The text of `pieces` with each archived piece's frames as one small frame
    (`SKETCH_FRAMES`): what is checked to parse after a scrub."""
    return "".join(
        piece.sketch(SKETCH_FRAMES) if isinstance(piece, Archived) else piece for piece in pieces
    )


def scrubbed(
    scrub: Scrub | None, pieces: tuple[Text, ...], secrets: Mapping[str, str], source: Path | None
) -> Pieces:
    """`pieces` (a whole file) with `secrets` replaced; it must still parse (its archived
    blocks as sketched)."""
    if not secrets or scrub is None:
        return Pieces(pieces)
    result, changed = scrub_pieces(scrub, pieces, secrets)
    if changed:
        loads(sketch(result), source=source)  # the file must still parse
    return Pieces(result)


def scrubbed_block(
    scrub: Scrub | None,
    tail: tuple[Text, ...],
    entry: Entry,
    secrets: Mapping[str, str],
    source: Path,
) -> Pieces:
    """`tail` (`entry`'s block as appended, in pieces) with `secrets` replaced."""
    if not secrets or scrub is None:
        return Pieces(tail)
    result, changed = scrub_pieces(scrub, tail, secrets)
    if changed:
        # scrubbing replaced text inside values: the exchange must still parse (let go
        # only after this; given as its block only when it has no tag)
        exchange = entry.exchange
        plain = entry.block if exchange is None else dumps_exchange(exchange)
        loads(FILE_HEAD + "\n" + sketch(scrub_pieces(scrub, (plain,), secrets)[0]), source=source)
    return Pieces(result)


def rescrub(scrub: Scrub, path: Path, disk: Disk, secrets: Mapping[str, str], fsync: bool) -> None:
    """Scrub newly learned `secrets` from the file `path` already written, from its text on
    disk (under its lock in the process, `disk.lock`, and on disk). A file gone is left.
    The file is read a chunk at a time to look for them, and whole only when they are in
    it (to be checked that it still parses: rare, a secret first sent after it was written
    in a reply, and a long file then costs its size a few times for a moment)."""
    with disk.lock:
        try:
            with locked(path) as held:
                if unchanged_on_disk(scrub, held, secrets):
                    return  # (read a chunk at a time: a long file is not in memory whole)
                text = read_held(held).decode("utf-8")  # as written: no newline changes
                result = scrub(text, secrets)
                if result == text:
                    return
                loads(result, source=path)
                data = result.encode("utf-8")
                write_text_atomic(path, data, fsync=fsync)
                if disk.size == held.size:  # (as left: else another wrote it too)
                    disk.size, disk.ino = len(data), 0
        except FileNotFoundError:
            return  # deleted by a user: made again whole on its next write
