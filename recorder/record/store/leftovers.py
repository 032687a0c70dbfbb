"""What killed recorders left in a transcript folder, found and removed
(`TranscriptStore.prepare`)."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from recorder.disk.atomic import remove_stale_scratch

__all__ = ["remove_stale_temporaries"]

# `.NAME.PID.N.tmp`: a temporary file that recorders before `recorder.disk.atomic` made in the
# folder
_TEMPORARY = re.compile(r"^\..+\.(\d+)\.\d+\.tmp$")


def remove_stale_temporaries(folder: Path) -> list[str]:
    """Remove what killed processes left in `folder`: their temporary folders under
    `.recorder-tmp` (whose lock no process holds, `recorder.disk.atomic.remove_stale_scratch`),
    and the `.NAME.PID.N.tmp` files of recorders before it, unless their process runs
    (this process's id counts as gone: it makes no such file; a recorder that is PID 1 in
    every container finds its previous run's files under its own id). Returns their names."""
    removed = remove_stale_scratch(folder)
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            match = _TEMPORARY.match(entry.name)
            if match is None or _running(int(match.group(1))):
                continue
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(entry.name)
    return removed


def _running(pid: int) -> bool:
    """Whether another process `pid` runs (True, to keep its files, when that cannot be
    told)."""
    if pid == os.getpid():
        return False
    if not 0 < pid < 2**31:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. EPERM: it exists, under another user
        return True
    return True
