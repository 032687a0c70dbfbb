"""Files that writers in several processes share, taking turns: `locked` holds an exclusive
`flock` on one while a block runs (appends through it with `append_held`, reads with
`read_held`; a rewrite made meanwhile, `recorder.disk.atomic.write_text_atomic`, is seen by the
next holder). The recorder's store writes every existing transcript so
(`recorder.record.store.transcript_store`)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from recorder.disk.atomic import Pieces, write_pieces

__all__ = ["Held", "append_held", "locked", "read_held"]


@dataclass
class Held:
    """A file open and locked by `locked` (`fd` at its end for writes): what `fstat` told
    when the lock was taken."""

    fd: int
    ino: int
    size: int
    mtime_ns: int


@contextlib.contextmanager
def locked(path: Path | str) -> Iterator[Held]:
    """Open the existing file `path` and hold an exclusive `flock` on it while the block
    runs, so that writers of one file in several processes take turns: each append is whole
    between another's, and a rewrite (`write_text_atomic`, a rename over `path`, made while
    the lock is held) is seen by the next holder, which gets the new file, never the one
    renamed away. FileNotFoundError when `path` is gone."""
    for _ in range(100):
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            found = os.fstat(fd)
            try:
                now = os.stat(path)
            except FileNotFoundError:
                now = None
            if now is not None and now.st_ino == found.st_ino and now.st_dev == found.st_dev:
                yield Held(fd, found.st_ino, found.st_size, found.st_mtime_ns)
                return
        finally:
            os.close(fd)  # (the lock goes with it)
        if now is None:
            raise FileNotFoundError(errno.ENOENT, "transcript removed", os.fspath(path))
    raise OSError(errno.EBUSY, "the file is replaced faster than it can be locked", path)


def append_held(held: Held, data: bytes | Pieces, *, fsync: bool = False) -> None:
    """`append_text` through a file `locked` holds (its size then known); `data` may be a
    text's `Pieces` (encoded a slice at a time)."""
    added = 0
    try:
        if isinstance(data, Pieces):
            added = write_pieces(held.fd, data)
        else:
            written = os.write(held.fd, data)  # (all of it, but for a large write or a signal)
            view = memoryview(data)[written:]
            while view:
                view = view[os.write(held.fd, view) :]
            added = len(data)
        if fsync:
            os.fsync(held.fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.ftruncate(held.fd, held.size)
        raise
    held.size += added


def read_held(held: Held, start: int = 0) -> bytes:
    """The bytes of a file `locked` holds, from `start` to its end."""
    parts = []
    offset = start
    while offset < held.size:
        chunk = os.pread(held.fd, held.size - offset, offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)
