"""New transcript files' numbers, claimed on disk (`TranscriptStore`'s new files).

`Numbers.claim` makes a new file `NN-slug.http` whole under a number no other writer holds
(`recorder.atomic.create_exclusive`: a number found taken is passed over), so any number of
recorders on one folder, or a user deleting files, never make one file overwrite another. The
folder is read once for its highest number (and again after numbers were found taken in a
row: another recorder writes there); after that the numbers are counted in memory. The
folder is made again when it disappears.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from pathlib import Path

from recorder.atomic import create_exclusive, other_writers
from recorder.record.naming import NUMBERED, file_name, next_number

__all__ = ["Numbers"]

# numbers found taken in a row before the folder is read again to skip past them
_RESCAN_AFTER = 16
_MAX_CLAIMS = 10_000


class Numbers:
    """The numbers of the new files one store makes in `out`. Thread-safe."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self._lock = threading.Lock()
        self._next: int | None = None
        self._shared = False  # another writer is seen on `out`: check each new number
        self._checked_below = 0  # numbers below, handed out while shared: checked too

    def claim(self, slug: str, text: str, path: Path | None, *, fsync: bool) -> Path:
        """Make the new file holding `text`: at `path` when given (a file of the store that a
        user deleted: its name, unless another writer took it since), else under the next
        free number. Returns where it went."""
        wanted = path
        taken = yielded = 0
        for attempt in range(_MAX_CLAIMS):
            candidate = path or self._allocate(slug, rescan=taken >= _RESCAN_AFTER)
            try:
                create_exclusive(candidate, text, fsync=fsync)
            except FileExistsError:
                path = None
                taken = 0 if taken >= _RESCAN_AFTER else taken + 1
                continue
            except FileNotFoundError:
                if attempt >= 3:
                    raise
                path = candidate
                self.out.mkdir(parents=True, exist_ok=True)  # removed while recording
                continue
            if candidate != wanted and self._number_shared(candidate):
                # another writer claimed this number under another name at the same moment:
                # this file takes another. (Of two such, the second to link always sees the
                # first; the first may see the second and yield too: a number is then left
                # out, never given twice.)
                with contextlib.suppress(OSError):
                    os.unlink(candidate)
                path = None
                taken = _RESCAN_AFTER  # the numbers the other writer took: read the folder
                yielded += 1
                # both may have yielded: a random pause, so they do not meet again
                time.sleep(random.uniform(0, 0.001 * min(yielded, 20)))
                continue
            return candidate
        raise FileExistsError(f"no free number for a transcript in {self.out}")

    def _allocate(self, slug: str, rescan: bool = False) -> Path:
        # The number to claim next. The folder is read once (and again after numbers were
        # found taken in a row: another recorder writes there); after that the numbers are
        # counted in memory (a scan per exchange would make every recording cost more than
        # the one before). The claim itself is on disk (`claim`).
        with self._lock:
            if self._next is None or rescan:
                self.out.mkdir(parents=True, exist_ok=True)
                self._next = max(self._next or 1, next_number(os.listdir(self.out)))
            number, self._next = self._next, self._next + 1
        return self.out / file_name(number, slug)

    def _number_shared(self, path: Path) -> bool:
        """Whether a file of another name has the number of `path` (numbers are claimed by
        name: two recorders may claim one number for two names at once)."""
        match = NUMBERED.match(path.name)
        if match is None:
            return False
        # alone on the folder (the common case): no listing of it per new file, one `stat`
        # (which also makes this store's hidden folder again if it was removed, so that the
        # other writers keep seeing it). While another writer is seen, every new file is
        # checked against a listing
        others = other_writers(self.out)
        if not others and not self._shared and int(match.group(1)) >= self._checked_below:
            return False
        try:
            names = os.listdir(self.out)
        except OSError:
            return False
        with self._lock:
            if others:
                self._shared = True
            elif self._shared:
                # the other writers are gone, and each linked its files before its hidden
                # folder went: all are in `names`. Numbers go on past theirs, and the folder
                # is no longer listed per new file (it would cost more with every file);
                # the numbers handed out before this are still checked
                self._next = max(self._next or 1, next_number(names))
                self._checked_below = self._next
                self._shared = False  # (last: the check above reads these without the lock)
        prefix = match.group(1) + "-"
        return any(
            name.startswith(prefix) and name.endswith(".http") and name != path.name
            for name in names
        )
