"""New transcript files' numbers, claimed on disk (`TranscriptStore`'s new files).

`Numbers.claim` makes a new file `NN-slug.http` whole under a number no other writer holds
(`recorder.disk.atomic.create_exclusive`: a number found taken is passed over), so any number of
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

from recorder.disk.atomic import Pieces, create_exclusive, other_writers
from recorder.record.naming import file_name, next_number

__all__ = ["Numbers"]

# numbers found taken in a row before the folder is read again to skip past them
_RESCAN_AFTER = 16
_MAX_CLAIMS = 10_000


class Numbers:
    """The numbers of the new files one store makes in `out`. Thread-safe."""

    def __init__(self, out: Path) -> None:
        self.out = out
        # its absolute path, when it does not hang on the working folder
        self._absolute = os.path.abspath(out) if os.path.isabs(out) else None
        self._lock = threading.Lock()
        self._next: int | None = None
        self._shared = False  # another writer is seen on `out`: check each new number
        self._checked_below = 0  # numbers below, handed out while shared: checked too

    def claim(self, slug: str, text: str | Pieces, path: Path | None, *, fsync: bool) -> Path:
        """Make the new file holding `text`: at `path` when given (a file of the store that a
        user deleted: its name, unless another writer took it since), else under the next
        free number. Returns where it went."""
        data = text.encode("utf-8") if isinstance(text, str) else text
        # (number, name) to try again (the folder was gone); a number of None: `path`'s
        again: tuple[int | None, str] | None = None if path is None else (None, path.name)
        taken = yielded = 0
        for attempt in range(_MAX_CLAIMS):
            folder = self._absolute or os.path.abspath(self.out)
            if again is not None:
                number, name = again
                again = None
            else:
                number, name = self._allocate(slug, rescan=taken >= _RESCAN_AFTER)
            target = f"{folder}/{name}" if folder != "/" else f"/{name}"  # (os.path.join)
            try:
                create_exclusive(target, data, fsync=fsync, folder=folder)
            except FileExistsError:
                taken = 0 if taken >= _RESCAN_AFTER else taken + 1
                continue
            except FileNotFoundError:
                if attempt >= 3:
                    raise
                again = (number, name)
                self.out.mkdir(parents=True, exist_ok=True)  # removed while recording
                continue
            if number is not None and self._number_shared(folder, name, number):
                # another writer claimed this number under another name at the same moment:
                # this file takes another. (Of two such, the second to link always sees the
                # first; the first may see the second and yield too: a number is then left
                # out, never given twice.)
                with contextlib.suppress(OSError):
                    os.unlink(target)
                taken = _RESCAN_AFTER  # the numbers the other writer took: read the folder
                yielded += 1
                # both may have yielded: a random pause, so they do not meet again
                time.sleep(random.uniform(0, 0.001 * min(yielded, 20)))
                continue
            return path if number is None and path is not None else self.out / name
        raise FileExistsError(f"no free number for a transcript in {self.out}")

    def _allocate(self, slug: str, rescan: bool = False) -> tuple[int, str]:
        # The number to claim next, and its file's name. The folder is read once (and again
        # after numbers were found taken in a row: another recorder writes there); after that
        # the numbers are counted in memory (a scan per exchange would make every recording
        # cost more than the one before). The claim itself is on disk (`claim`).
        with self._lock:
            if self._next is None or rescan:
                self.out.mkdir(parents=True, exist_ok=True)
                self._next = max(self._next or 1, next_number(os.listdir(self.out)))
            number, self._next = self._next, self._next + 1
        return number, file_name(number, slug)

    def _number_shared(self, folder: str, name: str, number: int) -> bool:
        """Whether a file of another name has `number` (the number of `name`, just made in
        `folder`; numbers are claimed by name: two recorders may claim one number for two
        names at once)."""
        # alone on the folder (the common case): no listing of it per new file, one `stat`
        # (which also makes this store's hidden folder again if it was removed, so that the
        # other writers keep seeing it). While another writer is seen, every new file is
        # checked against a listing
        others = other_writers(folder)
        if not others and not self._shared and number >= self._checked_below:
            return False
        try:
            names = os.listdir(folder)
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
        prefix = name.partition("-")[0] + "-"
        return any(
            other.startswith(prefix) and other.endswith(".http") and other != name
            for other in names
        )
