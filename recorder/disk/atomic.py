"""Writing files so that readers never see half of one, with temporary files nobody sees.

`write_text_atomic` replaces a file (a temporary file, then a rename over it);
`create_exclusive` makes a new one that no other writer can have made meanwhile (a temporary
file, then a hard link: FileExistsError when the name is taken, so a number claimed on disk
is never claimed twice); `append_text` adds text at the end of a file (cut back to its old
length when the write fails).

Temporary files live in a hidden folder per process and per target folder,
`FOLDER/.recorder-tmp/RANDOM/` (same file system as the files they become, so a rename or
a link moves them), where users do not see them among the transcripts. The process holds an
exclusive `flock` on `RANDOM/lock` while it lives, and removes the folder when it exits; the
folder of a process that was killed is removed by the next one that makes its own folder
there (or calls `remove_stale_scratch`): whoever can take the lock, whatever the process ids
(a recorder that is PID 1 in each of its containers cleans the previous run's files).
A folder removed under a writer (`rm -rf`, another cleaner) is made again on the next write.

On Linux, `create_exclusive` needs no named temporary file at all: the data goes to an
unnamed file of the target folder (`O_TMPFILE`), which is then linked under its name
(`linkat` through `/proc/self/fd`, EEXIST when the name is taken). Nothing is left behind
by a crash (an unnamed file goes with its last descriptor), and it costs a fraction of a
named temporary file, its link and its unlink. Where the file system refuses `O_TMPFILE`
(or `/proc` is missing), found out once per folder, the named temporary file is used.
A writer of many files (`hold_scratch`) keeps its temporary folder all the same: it tells
the other writers on the folder that it is there (`other_writers`).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import itertools
import os
import secrets
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from recorder.disk.archive import Archived

__all__ = [
    "SCRATCH",
    "Pieces",
    "append_text",
    "create_exclusive",
    "hold_scratch",
    "note_file",
    "noted_by_others",
    "other_writers",
    "release_scratch",
    "remove_stale_scratch",
    "write_pieces",
    "write_text_atomic",
]

SCRATCH = ".recorder-tmp"
_LOCK = "lock"
# a folder without its lock file is being made (or was, by a process killed in between):
# left alone this long
_UNLOCKED_GRACE = 60.0

_names = itertools.count()
_guard = threading.Lock()

_TMPFILE: int = getattr(os, "O_TMPFILE", 0)
# errors of an `O_TMPFILE` open or link that mean "not here": the named temporary file instead
_NO_TMPFILE = frozenset(
    {errno.EOPNOTSUPP, errno.ENOTSUP, errno.EISDIR, errno.EINVAL, errno.EXDEV, errno.EPERM}
)
# folders whose file system refused `O_TMPFILE` (or its link): named temporary files there
_no_tmpfile: set[str] = set()
# folders whose `.recorder-tmp` link count does not count its subfolders (btrfs, overlayfs):
# `other_writers` lists them
_listing_only: set[str] = set()
# this process's `/proc/self/fd`, opened once ([] not yet tried; [-1] not there)
_proc_fd: list[int] = []
# folder -> its `.recorder-tmp` (joined once)
_roots: dict[str, str] = {}
# folder -> what `stat` told of its `.recorder-tmp` at the last `other_writers` (or when the
# holder made its folder there): a change means a writer came or went meanwhile
_seen: dict[str, tuple[int, int, int, int]] = {}


@dataclass
class _Scratch:
    users: int = 0  # writes under way and holders (`hold_scratch`)
    holders: int = 0  # `hold_scratch`es: writers of many files (stores)
    path: str | None = None  # made when first needed, again when removed under us
    fd: int = -1  # its lock file, locked
    # the files a holder writes (`note_file`), one a line in its lock file, for other writers
    names: list[str] = field(default_factory=list)
    noted: set[str] = field(default_factory=set)  # (the same, to look up)


# this process's temporary folders, by the absolute path of the folder they write into
_scratch: dict[str, _Scratch] = {}


def _forget_after_fork() -> None:
    # a child makes its own folders (the parent's stay locked by the parent)
    global _guard
    _guard = threading.Lock()
    _scratch.clear()
    _seen.clear()
    if _proc_fd and _proc_fd[0] >= 0:
        with contextlib.suppress(OSError):
            os.close(_proc_fd[0])  # the parent's
    _proc_fd.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def hold_scratch(folder: Path) -> None:
    """Keep this process's temporary folder of `folder` between writes (a writer of many
    files, such as the recorder's store), until `release_scratch`; without it, the folder
    goes after each write."""
    key = os.path.abspath(folder)
    _use(key)
    with _guard:
        _scratch[key].holders += 1
    # made now, so that other writers see this one before its first file (`other_writers`)
    with contextlib.suppress(OSError):
        _scratch_of(key)
        _signature(key)


def other_writers(folder: Path | str) -> bool:
    """Whether a writer besides this process's one holder may be making files in `folder`:
    another temporary folder under `folder/.recorder-tmp` (another process; or one a killed
    process left, until it is cleaned), or a second holder in this process.

    Also True once when `.recorder-tmp` changed since the last call (its times, its link
    count): a writer may have come and gone in between, its files still there. (A change in
    the same clock tick as the one before the last call can go unseen where the file system
    keeps coarse times; Linux 6.13 and later give a changed folder a finer time once its time
    was read.)

    For a holder, its own temporary folder is first made again if it was removed (so that
    the other writers keep seeing this one: call this after each file made). Cheap: the link
    count of `.recorder-tmp` (2 plus its subfolders), one `stat`; a listing of it where the
    file system does not count subfolders so. The holder's own folder is not looked at while
    `.recorder-tmp` is as it was at the last call (its removal would have changed its link
    count and times)."""
    # (a key of `_scratch` is absolute and normal already: it is its own `abspath`)
    key = folder if type(folder) is str and folder in _scratch else os.path.abspath(folder)
    with _guard:
        found = _scratch.get(key)
        holders = found.holders if found is not None else 0
        mine = found.path if found is not None else None
    if holders > 1:
        return True
    before = _seen.get(key)
    if holders == 1:
        if mine is not None and before is not None and key not in _listing_only:
            # `before` was noted while `mine` was there (the last call, or `hold_scratch`)
            try:
                after = _signature(key)
            except OSError:
                pass
            else:
                if after == before and after[3] >= 2:
                    return after[3] - 2 > 1  # (alone: no other subfolder than `mine`)
        mine = _keep_scratch(key, mine)
    root = os.path.join(key, SCRATCH)
    try:
        after = _signature(key)
    except OSError:
        return False
    if before != after:
        return True
    if key not in _listing_only:
        subfolders = after[3] - 2
        if subfolders >= 0:
            return subfolders > (1 if mine is not None else 0)
        _listing_only.add(key)  # (a link count of 1: not counted)
    try:
        names = os.listdir(root)
    except OSError:
        return False
    name = os.path.basename(mine) if mine is not None else None
    return any(other != name for other in names)


def _signature(folder: str) -> tuple[int, int, int, int]:
    """Note what `stat` tells of `folder/.recorder-tmp` (OSError when it is not there)."""
    root = _roots.get(folder)
    if root is None:
        root = _roots[folder] = os.path.join(folder, SCRATCH)
    found = os.stat(root)
    signature = (found.st_ino, found.st_mtime_ns, found.st_ctime_ns, found.st_nlink)
    _seen[folder] = signature
    return signature


def _keep_scratch(folder: str, mine: str | None) -> str | None:
    """The holder's temporary folder of `folder`, made again when it is gone (None when it
    cannot be made: the folder itself is gone)."""
    if mine is not None:
        try:
            os.stat(mine)
            return mine
        except OSError:
            _drop(folder, mine)
    try:
        return _scratch_of(folder)
    except OSError:
        return None


def note_file(folder: Path | str, name: str) -> None:
    """Tell other writers on `folder` that this process's holder writes the file `name`
    there (`noted_by_others`): a line in the lock file of its temporary folder."""
    # (a key of `_scratch` is absolute and normal already: it is its own `abspath`)
    key = folder if type(folder) is str and folder in _scratch else os.path.abspath(folder)
    line = name + "\n"
    with _guard:
        found = _scratch.get(key)
        if found is None or found.holders == 0 or line in found.noted:
            return
        found.noted.add(line)
        found.names.append(line)
        fd = found.fd if found.path is not None else -1
    if fd >= 0:
        with contextlib.suppress(OSError):
            _write_all(fd, line.encode("utf-8"), False)


def noted_by_others(folder: Path | str, name: str) -> bool:
    """Whether a running process's writer noted the file `name` of `folder` as one it
    writes (`note_file`); a killed process's notes do not count."""
    root = os.path.join(os.path.abspath(folder), SCRATCH)
    key = os.path.abspath(folder)
    with _guard:
        found = _scratch.get(key)
        mine = os.path.basename(found.path) if found is not None and found.path else None
    try:
        others = [other for other in os.listdir(root) if other != mine]
    except OSError:
        return False
    line = name + "\n"
    for other in others:
        try:
            fd = os.open(os.path.join(root, other, _LOCK), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                pass  # held: its process runs
            else:
                continue  # no process holds it: a killed one's
            text = os.read(fd, 1 << 24).decode("utf-8", "replace")
        finally:
            os.close(fd)
        if text.startswith(line) or ("\n" + line) in text:
            return True
    return False


def release_scratch(folder: Path) -> None:
    """Let go of a `hold_scratch`: the temporary folder is removed once no write uses it
    (and `.recorder-tmp` when it is left empty)."""
    _unuse(os.path.abspath(folder), holder=True)


def _use(folder: str) -> None:
    with _guard:
        _scratch.setdefault(folder, _Scratch()).users += 1


def _unuse(folder: str, *, holder: bool = False) -> None:
    with _guard:
        found = _scratch.get(folder)
        if found is None:
            return
        found.users -= 1
        if holder:
            found.holders -= 1
        if found.users > 0:
            return
        del _scratch[folder]
    _remove_mine(found)


def _remove_mine(found: _Scratch) -> None:
    if found.path is None:
        return
    shutil.rmtree(found.path, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.close(found.fd)
    with contextlib.suppress(OSError):
        os.rmdir(os.path.dirname(found.path))  # only when empty


def _release_all() -> None:
    with _guard:
        found = list(_scratch.values())
        _scratch.clear()
    for one in found:
        _remove_mine(one)


atexit.register(_release_all)


def _scratch_of(folder: str) -> str:
    """This process's temporary folder beside the files of `folder`, which a `_use` holds
    (made when needed; FileNotFoundError when `folder` itself is gone)."""
    with _guard:
        found = _scratch.setdefault(folder, _Scratch())
        if found.path is not None:
            return found.path
        root = os.path.join(folder, SCRATCH)
        with contextlib.suppress(FileExistsError):
            os.mkdir(root)
        for _ in range(20):
            mine = os.path.join(root, secrets.token_hex(6))
            try:
                os.mkdir(mine, 0o700)
            except FileExistsError:
                continue
            except FileNotFoundError:  # a cleaner removed the empty `root` just now
                with contextlib.suppress(FileExistsError):
                    os.mkdir(root)
                continue
            lock = os.path.join(mine, _LOCK)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            with contextlib.suppress(OSError):
                # a cleaner that took the lock before this process did removed the folder
                if os.stat(lock).st_ino == os.fstat(fd).st_ino:
                    found.path, found.fd = mine, fd
                    if found.names:  # (made again: what the one removed told)
                        _write_all(fd, "".join(found.names).encode("utf-8"), False)
                    break
            os.close(fd)
        else:
            raise FileExistsError(errno.EEXIST, "cannot make a temporary folder", root)
        with contextlib.suppress(OSError):
            if os.stat(root).st_nlink < 3:  # its link count does not count `mine`
                _listing_only.add(folder)
    remove_stale_scratch(Path(folder))  # the folders killed processes left here
    return mine


def _drop(folder: str, mine: str) -> None:
    """Forget `mine`, removed under us: the next write makes a new one."""
    with _guard:
        found = _scratch.get(folder)
        if found is not None and found.path == mine:
            found.path = None
            with contextlib.suppress(OSError):
                os.close(found.fd)


def remove_stale_scratch(folder: Path) -> list[str]:
    """Remove the temporary folders under `folder/.recorder-tmp` whose lock no process holds
    (left by a process that was killed); returns their names. `.recorder-tmp` itself goes
    when it is left empty."""
    root = os.path.join(os.fspath(folder), SCRATCH)
    removed: list[str] = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(root, name)
        try:
            fd = os.open(os.path.join(path, _LOCK), os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            # no lock file: being made right now, or made by a process killed before it
            # locked it (or a stray file): removed once old
            with contextlib.suppress(OSError):
                if time.time() - os.lstat(path).st_mtime > _UNLOCKED_GRACE:
                    _remove(path)
                    removed.append(name)
            continue
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its process runs
            shutil.rmtree(path, ignore_errors=True)
            removed.append(name)
        finally:
            os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(root)
    return removed


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        os.unlink(path)


@contextlib.contextmanager
def _using(folder: str) -> Iterator[None]:
    """A write into `folder` under way: its temporary folder stays meanwhile."""
    _use(folder)
    try:
        yield
    finally:
        _unuse(folder)


def _create_temporary(folder: str, name: str, mode: int | None = None) -> tuple[str, int]:
    """A new file in this process's temporary folder of `folder`, opened for writing; its
    mode `mode`, or 0666 less the umask (what any new file gets)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    for attempt in range(3):
        mine = _scratch_of(folder)
        tmp = os.path.join(mine, f"{name}.{next(_names)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666 if mode is None else 0o600)
        except FileNotFoundError:
            if attempt == 2 or not os.path.isdir(folder):
                raise
            _drop(folder, mine)  # removed under us: make it again
            continue
        if mode is not None:
            os.fchmod(fd, mode)
        return tmp, fd
    raise AssertionError("unreachable")


# characters of a `Pieces` text encoded and written at a time
PIECE = 1 << 20


@dataclass(frozen=True)
class Pieces:
    """A text given as its pieces (joined, they are the text), written encoded a slice of
    `PIECE` characters at a time: a large text (a long gRPC stream's block) is never copied
    whole, joined or encoded, to be written. A piece may be `Archived` (kept on disk: read a
    chunk at a time, `recorder.disk.archive`)."""

    parts: tuple[str | Archived, ...]

    def chunks(self) -> Iterator[bytes]:
        """The text's UTF-8 bytes, a slice at a time (a slice ends between code points)."""
        for part in self.parts:
            for text in part.chunks() if isinstance(part, Archived) else (part,):
                for start in range(0, len(text), PIECE):
                    yield text[start : start + PIECE].encode("utf-8")

    @property
    def size(self) -> int:
        """The length of the text's UTF-8 bytes."""
        return sum(
            p.size if isinstance(p, Archived) else len(p) if p.isascii() else len(p.encode("utf-8"))
            for p in self.parts
        )


# the most buffers one `writev` is handed (Linux takes 1,024: IOV_MAX)
_MOST_BUFFERS = 512


def write_pieces(fd: int, data: Pieces) -> int:
    """Write the text `data` to `fd` whole: its encoded slices a few at a time, in one
    `writev` for every `PIECE` bytes (or `_MOST_BUFFERS` slices) or so: a transcript's head
    and its block in one system call, not one each. Returns the bytes written."""
    batch: list[bytes] = []
    size = total = 0
    for chunk in data.chunks():
        batch.append(chunk)
        size += len(chunk)
        if size >= PIECE or len(batch) >= _MOST_BUFFERS:
            total += _write_batch(fd, batch, size)
            batch, size = [], 0
    if batch:
        total += _write_batch(fd, batch, size)
    return total


def _write_batch(fd: int, batch: list[bytes], size: int) -> int:
    written = os.writev(fd, batch) if len(batch) > 1 else os.write(fd, batch[0])
    if written < size:  # (a large write, or a signal: the rest, as `_write_all` does)
        _write_all(fd, b"".join(batch)[written:], False)
    return size


def _write_all(fd: int, data: bytes | Pieces, fsync: bool) -> None:
    if isinstance(data, Pieces):
        write_pieces(fd, data)
        if fsync:
            os.fsync(fd)
        return
    written = os.write(fd, data)  # (all of it, but for a large write or a signal)
    if written < len(data):
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(fd, view) :]
    if fsync:
        os.fsync(fd)


def _fill(fd: int, data: bytes | Pieces, fsync: bool) -> None:
    try:
        _write_all(fd, data, fsync)
    finally:
        os.close(fd)


def write_text_atomic(
    path: Path,
    text: str | bytes | Pieces,
    *,
    fsync: bool = True,
    keep_mode: bool = True,
) -> None:
    """Write `text` (or UTF-8 bytes, or `Pieces`) to `path` so that readers see the old file
    or the new one, never half: a temporary file (see the module's note), then a rename over
    `path`.

    The rename alone is what readers rely on. `fsync=True` also flushes the data to the disk
    before the rename, so that the new file survives a power loss or a kernel crash (not
    needed against a crash of this process); it costs a disk flush, 0.2 ms to several ms.
    `keep_mode=False` skips looking up the mode of a file at `path` (the caller knows there
    is none): the new file gets 0666 less the umask. A symbolic link at `path` stays one: the
    file it points to is written.
    A temporary file removed before its rename (a user cleaning up) is made again, once.
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    if keep_mode and os.path.islink(path):
        path = Path(os.path.realpath(path))
    folder, name = os.path.split(os.path.abspath(path))
    with _using(folder):
        _replace(path, folder, name, data, fsync, keep_mode)


def _replace(
    path: Path,
    folder: str,
    name: str,
    data: bytes | Pieces,
    fsync: bool,
    keep_mode: bool,
) -> None:
    for attempt in range(2):
        mode: int | None = None
        if keep_mode:
            with contextlib.suppress(OSError):
                mode = os.stat(path).st_mode & 0o7777
        tmp, fd = _create_temporary(folder, name, mode)
        try:
            _fill(fd, data, fsync)
            os.replace(tmp, path)
            return
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if attempt or not os.path.isdir(folder):
                raise  # (else the temporary file was removed under us: once more)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def create_exclusive(
    path: Path | str,
    text: str | bytes | Pieces,
    *,
    fsync: bool = False,
    folder: str | None = None,
) -> None:
    """Make the new file `path` holding `text`, whole from the start (an unnamed file, or a
    temporary file, then a hard link to `path`: see the module's note). FileExistsError,
    writing nothing, when `path` exists: whoever made it (another process) keeps it.
    FileNotFoundError when the folder is gone. `folder`: the absolute folder of `path`, when
    the caller knows it (`path` is then that folder's path joined with its name)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    if folder is None:
        folder = os.path.dirname(os.path.abspath(path))
    if _TMPFILE and folder not in _no_tmpfile and _link_unnamed(path, folder, data, fsync):
        return
    with _using(folder):
        _link(path, folder, os.path.basename(path), data, fsync)


def _proc_fds() -> int:
    """This process's `/proc/self/fd` folder, opened once (-1 when there is none)."""
    if not _proc_fd:
        try:
            fd = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            fd = -1
        with _guard:
            if _proc_fd:  # another thread was first
                if fd >= 0:
                    os.close(fd)
            else:
                _proc_fd.append(fd)
    return _proc_fd[0]


def _link_unnamed(path: Path | str, folder: str, data: bytes | Pieces, fsync: bool) -> bool:
    """`create_exclusive` through an unnamed file of `folder` (`O_TMPFILE`), linked under
    its name. False, having made nothing, when the file system (or the lack of `/proc`)
    refuses it: the caller falls back to a named temporary file (and so does every later
    call for `folder`)."""
    proc = _proc_fds()
    if proc < 0:
        _no_tmpfile.add(folder)
        return False
    try:
        fd = os.open(folder, _TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        if exc.errno in _NO_TMPFILE:
            _no_tmpfile.add(folder)
            return False
        raise  # (FileNotFoundError: the folder is gone)
    try:
        _write_all(fd, data, fsync)
        # linkat(/proc/self/fd, "N", AT_FDCWD, path, AT_SYMLINK_FOLLOW): EEXIST when taken
        os.link(str(fd), path, src_dir_fd=proc, follow_symlinks=True)
    except OSError as exc:
        if exc.errno in _NO_TMPFILE:
            _no_tmpfile.add(folder)
            return False
        raise
    finally:
        os.close(fd)
    return True


def _link(
    path: Path | str,
    folder: str,
    name: str,
    data: bytes | Pieces,
    fsync: bool,
) -> None:
    for attempt in range(2):
        tmp, fd = _create_temporary(folder, name)
        try:
            _fill(fd, data, fsync)
            os.link(tmp, path)
            return
        except FileNotFoundError:
            if attempt or not os.path.isdir(folder):
                raise  # (else the temporary file was removed under us: once more)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def append_text(path: Path, text: str | bytes, *, fsync: bool = False) -> None:
    """Add `text` at the end of the existing file `path` in one write (FileNotFoundError
    when it is gone: nothing is made). A write that fails (a full disk) is cut back, so the
    file stays as it was. Not atomic for readers: one that reads while the write runs may see
    the start of `text` only; and a process killed in the middle of a large write, or a power
    loss without `fsync`, can leave the start of `text` in the file."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        try:
            _write_all(fd, data, fsync)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)
