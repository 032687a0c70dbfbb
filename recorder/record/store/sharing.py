"""A transcript file that writers in several processes write (`Disk.shared`): how one store
joins it and keeps the places of its exchanges there. Such a file is only appended to, each
append under the file's lock on disk (`recorder.disk.locking`), never rewritten from one store's
memory, so every exchange of every writer stays in it exactly once.
"""

from __future__ import annotations

from recorder.disk.locking import Held, read_held
from recorder.errors import ParseError
from recorder.format.httpfile import loads
from recorder.record.store.filetext import FILE_HEAD, Entry, OpenFile

__all__ = ["as_left", "count_exchanges", "join", "refresh"]


def as_left(record: OpenFile, held: Held) -> bool:
    """Whether the file `held` is as `record`'s store last left it (no other writer wrote
    it since). An inode not known yet is learned here when the size is as left."""
    disk = record.disk
    if held.size != disk.size:
        return False
    if disk.ino == 0:
        disk.ino = held.ino
    return held.ino == disk.ino


def count_exchanges(data: bytes) -> int | None:
    """How many exchanges `data` (blocks of a file, or a whole file) holds; None when it does
    not parse (a writer killed inside an append)."""
    text = data.decode("utf-8", "replace")
    if not text.startswith(FILE_HEAD):
        text = FILE_HEAD + text
    try:
        return len(loads(text).exchanges)
    except ParseError:
        return None


def join(record: OpenFile, entry: Entry, held: Held) -> None:
    """Another writer wrote `record`'s file since this store last did: from now on it is
    shared. Its exchanges on disk (all but `entry`, in order) keep the places they took."""
    disk = record.disk
    on_disk = [one for one in record.entries if one is not entry][: record.written]
    for place, one in enumerate(on_disk, start=1):
        one.at = place
    before = len(on_disk) if disk.size is not None else 0
    disk.shared = True
    if disk.size is not None and held.ino == disk.ino and held.size >= disk.size:
        added = count_exchanges(read_held(held, disk.size))
        disk.count = None if added is None else before + added
    else:
        disk.count = count_exchanges(read_held(held))
    disk.size, disk.ino = held.size, held.ino


def refresh(record: OpenFile, held: Held) -> None:
    """Count what other writers added to the shared file since this store's last write."""
    disk = record.disk
    if as_left(record, held):
        return
    if disk.size is not None and held.ino == disk.ino and held.size > disk.size:
        added = count_exchanges(read_held(held, disk.size))
        disk.count = None if disk.count is None or added is None else disk.count + added
    else:  # rewritten (another's keep pass, a scrub): counted again whole
        disk.count = count_exchanges(read_held(held))
    disk.size, disk.ino = held.size, held.ino
