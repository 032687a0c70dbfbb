"""Secrets learned while recording, scrubbed from transcript text (`TranscriptStore`'s): from
a file's text or an exchange's block before it is written (the text must still parse), and
from a file already written, read from the disk under its lock (`rescrub`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from recorder.disk.atomic import write_text_atomic
from recorder.disk.locking import locked, read_held
from recorder.format.httpfile import dumps_exchange, loads
from recorder.record.store.filetext import FILE_HEAD, Disk, Entry

__all__ = ["Scrub", "rescrub", "scrubbed", "scrubbed_block"]

Scrub = Callable[[str, Mapping[str, str]], str]
"""(text, secrets) -> the text with each secret value replaced by its placeholder."""


def scrubbed(
    scrub: Scrub | None, text: str, secrets: Mapping[str, str], source: Path | None
) -> str:
    """`text` (a whole file) with `secrets` replaced; it must still parse."""
    if not secrets or scrub is None:
        return text
    result = scrub(text, secrets)
    if result != text:
        loads(result, source=source)  # the file must still parse
    return result


def scrubbed_block(
    scrub: Scrub | None, tail: str, entry: Entry, secrets: Mapping[str, str], source: Path
) -> str:
    """`tail` (`entry`'s block as appended) with `secrets` replaced."""
    if not secrets or scrub is None:
        return tail
    result = scrub(tail, secrets)
    if result != tail:
        # scrubbing replaced text inside values: the exchange must still parse (let go
        # only after this; given as its block only when it has no tag)
        exchange = entry.exchange
        plain = entry.block if exchange is None else dumps_exchange(exchange)
        loads(FILE_HEAD + "\n" + scrub(plain, secrets), source=source)
    return result


def rescrub(scrub: Scrub, path: Path, disk: Disk, secrets: Mapping[str, str], fsync: bool) -> None:
    """Scrub newly learned `secrets` from the file `path` already written, from its text on
    disk (under its lock in the process, `disk.lock`, and on disk). A file gone is left."""
    with disk.lock:
        try:
            with locked(path) as held:
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
