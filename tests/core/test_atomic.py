"""`recorder.disk.atomic` on a real disk: new files made through an unnamed file (`O_TMPFILE`) or,
where that is refused, a named temporary file; the other writers seen on a folder."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recorder.disk import atomic
from recorder.disk.atomic import (
    SCRATCH,
    Pieces,
    create_exclusive,
    hold_scratch,
    other_writers,
    release_scratch,
    remove_stale_scratch,
)
from recorder.disk.locking import append_held, locked


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _unnamed_files_here(folder: Path) -> bool:
    try:
        os.close(os.open(folder, atomic._TMPFILE | os.O_WRONLY, 0o600))
    except (OSError, ValueError):
        return False
    return bool(atomic._TMPFILE) and os.path.isdir("/proc/self/fd")


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # what the module found out about folders, per test
    monkeypatch.setattr(atomic, "_no_tmpfile", set())
    monkeypatch.setattr(atomic, "_listing_only", set())
    yield


@pytest.fixture(params=["unnamed", "named"])
def new_files(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> str:
    if request.param == "named":
        monkeypatch.setattr(atomic, "_TMPFILE", 0)
    elif not _unnamed_files_here(tmp_path):
        pytest.skip("no O_TMPFILE here")
    return str(request.param)


def _watch_links(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    made: list[tuple[str, dict[str, Any]]] = []
    real_link = os.link

    def watching_link(src: str, dst: str, **kwargs: Any) -> None:
        made.append((src, kwargs))
        real_link(src, dst, **kwargs)

    monkeypatch.setattr(os, "link", watching_link)
    return made


def test_a_new_file_is_linked_from_an_unnamed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not _unnamed_files_here(tmp_path):
        pytest.skip("no O_TMPFILE here")
    made = _watch_links(monkeypatch)
    path = tmp_path / "01-a.http"
    create_exclusive(path, "whole\n")
    assert path.read_text() == "whole\n"
    # linked from a descriptor (/proc/self/fd/N): no named temporary file, no hidden folder
    ((src, kwargs),) = made
    assert src.isdigit() and kwargs["follow_symlinks"] is True
    assert os.listdir(tmp_path) == ["01-a.http"]
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~_umask()
    assert tmp_path.as_posix() not in atomic._no_tmpfile


def test_a_text_in_pieces_is_written_as_its_join_slices_cut_between_code_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_files: str
) -> None:
    monkeypatch.setattr(atomic, "PIECE", 3)  # (slices of 3 characters: é and 日 cut across)
    parts = ("# head\n", "\n", "data: é日本 ü\n" * 5, "")
    text = Pieces(parts)
    path = tmp_path / "01-a.http"
    create_exclusive(path, text)
    assert path.read_bytes() == "".join(parts).encode("utf-8")
    assert text.size == len("".join(parts).encode("utf-8"))
    with locked(path) as held:
        append_held(held, Pieces(("\n", "ü" * 7)))
    assert path.read_text("utf-8") == "".join(parts) + "\n" + "ü" * 7


def test_a_small_text_in_pieces_goes_in_one_system_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_files: str
) -> None:
    # a new transcript is its head and its block: one writev, not a write each (a system
    # call per piece for every exchange recorded)
    calls: list[str] = []
    write, writev = os.write, os.writev

    def counted_write(fd: int, data: Any) -> int:
        calls.append("write")
        return write(fd, data)

    def counted_writev(fd: int, buffers: Any) -> int:
        calls.append("writev")
        return writev(fd, buffers)

    monkeypatch.setattr(os, "write", counted_write)
    monkeypatch.setattr(os, "writev", counted_writev)
    parts = ("# recorder-format: 1\n", "\n", "### SendMessage\nPOST /a2a HTTP/1.1\n")
    path = tmp_path / "01-a.http"
    create_exclusive(path, Pieces(parts))
    assert calls == ["writev"]
    calls.clear()
    with locked(path) as held:
        append_held(held, Pieces(("\n", "### GetTask\n")))
    assert calls == ["writev"]
    assert path.read_text() == "".join(parts) + "\n### GetTask\n"


def test_a_text_of_many_pieces_is_written_whole_in_bounded_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_files: str
) -> None:  # (a file rewritten whole: every exchange's pieces)
    # more pieces than one writev takes, and a piece longer than a batch
    lines = [f"line {i} é\n" for i in range(3 * atomic._MOST_BUFFERS)]
    parts = (*lines, "x" * (atomic.PIECE * 5 // 2), "\n")
    batches: list[int] = []
    writev = os.writev

    def counted_writev(fd: int, buffers: Any) -> int:
        batches.append(len(buffers))
        return writev(fd, buffers)

    monkeypatch.setattr(os, "writev", counted_writev)
    path = tmp_path / "01-a.http"
    create_exclusive(path, Pieces(parts))
    assert path.read_text("utf-8") == "".join(parts)
    with locked(path) as held:
        append_held(held, Pieces(parts))
        assert held.size == 2 * len("".join(parts).encode("utf-8"))
    assert path.read_text("utf-8") == "".join(parts) * 2
    assert max(batches) <= atomic._MOST_BUFFERS


def test_a_taken_name_is_refused_and_kept(tmp_path: Path, new_files: str) -> None:
    path = tmp_path / "01-a.http"
    create_exclusive(path, "first\n")
    with pytest.raises(FileExistsError):
        create_exclusive(path, "second\n")
    assert path.read_text() == "first\n"
    assert [p for p in os.listdir(tmp_path) if p != SCRATCH] == ["01-a.http"]
    assert not (tmp_path / SCRATCH).exists()  # nothing left behind either way


def test_a_gone_folder_is_file_not_found(tmp_path: Path, new_files: str) -> None:
    with pytest.raises(FileNotFoundError):
        create_exclusive(tmp_path / "gone" / "01-a.http", "x")


@pytest.mark.parametrize("refusal", [errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL])
def test_a_file_system_that_refuses_unnamed_files_gets_named_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refusal: int
) -> None:
    tried: list[str] = []
    real_open = os.open

    def refusing_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if atomic._TMPFILE and flags & atomic._TMPFILE == atomic._TMPFILE:
            tried.append(os.fspath(path))
            raise OSError(refusal, os.strerror(refusal))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(atomic, "_TMPFILE", atomic._TMPFILE or 0o20200000)
    monkeypatch.setattr(os, "open", refusing_open)
    made = _watch_links(monkeypatch)
    for n in (1, 2, 3):
        create_exclusive(tmp_path / f"0{n}-a.http", f"file {n}\n")
    assert [p.read_text() for p in sorted(tmp_path.glob("*.http"))] == [
        "file 1\n",
        "file 2\n",
        "file 3\n",
    ]
    assert len(tried) == 1  # found out once for the folder
    # the fallback: a named temporary file in the hidden folder, linked, then removed
    assert [Path(src).parent.parent for src, _ in made] == [tmp_path / SCRATCH] * 3
    assert sorted(os.listdir(tmp_path)) == ["01-a.http", "02-a.http", "03-a.http"]


def test_without_proc_new_files_are_named_temporaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(atomic, "_proc_fd", [-1])  # as if /proc were not mounted
    made = _watch_links(monkeypatch)
    create_exclusive(tmp_path / "01-a.http", "x\n")
    assert (tmp_path / "01-a.http").read_text() == "x\n"
    ((src, _),) = made
    assert Path(src).parent.parent == tmp_path / SCRATCH
    assert os.listdir(tmp_path) == ["01-a.http"]


def test_fsync_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new_files: str) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    create_exclusive(tmp_path / "01-a.http", "x\n")
    assert synced == []
    create_exclusive(tmp_path / "02-a.http", "x\n", fsync=True)
    assert len(synced) == 1


_KILLED_BEFORE_THE_LINK = """
import os, sys
from pathlib import Path
from recorder.disk import atomic
if sys.argv[2] == "named":
    atomic._TMPFILE = 0
folder = Path(sys.argv[1])
atomic.hold_scratch(folder)  # a recorder's store
def killed(*args, **kwargs):
    os._exit(9)  # like kill -9 with the data written and not yet linked
os.link = killed
atomic.create_exclusive(folder / "01-a.http", "# recorder-format: 1\\n" * 1000)
"""


def test_a_writer_killed_before_the_link_leaves_nothing_visible(
    tmp_path: Path, new_files: str
) -> None:
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_BEFORE_THE_LINK, str(tmp_path), new_files],
        timeout=30,
        check=False,
    )
    assert killed.returncode == 9
    assert [p for p in os.listdir(tmp_path) if p != SCRATCH] == []  # no half file
    # what it left in its hidden folder goes with the next writer's clean-up
    remove_stale_scratch(tmp_path)
    assert os.listdir(tmp_path) == []


def test_other_writers_are_counted_by_the_link_count(tmp_path: Path) -> None:
    hold_scratch(tmp_path)
    try:
        assert (tmp_path / SCRATCH).is_dir()  # made when held: others see this writer
        assert not other_writers(tmp_path)
        theirs = tmp_path / SCRATCH / "0123456789ab"
        theirs.mkdir()  # another process's folder (or a killed one's)
        assert other_writers(tmp_path)
        assert other_writers(tmp_path)  # (still there)
        theirs.rmdir()
        assert other_writers(tmp_path)  # once: it came and went since the last call
        assert not other_writers(tmp_path)
        # a stray file is no writer
        (tmp_path / SCRATCH / "stray").write_text("")
        other_writers(tmp_path)  # (a change, as above)
        assert not other_writers(tmp_path)
    finally:
        release_scratch(tmp_path)


def test_other_writers_by_listing_where_link_counts_do_not_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_stat = os.stat

    class _Btrfs:  # a folder's link count is 1 there
        def __init__(self, found: os.stat_result) -> None:
            self.found = found

        def __getattr__(self, name: str) -> Any:
            return 1 if name == "st_nlink" else getattr(self.found, name)

    def btrfs_stat(path: Any, *args: Any, **kwargs: Any) -> Any:
        found = real_stat(path, *args, **kwargs)
        return _Btrfs(found) if stat.S_ISDIR(found.st_mode) else found

    monkeypatch.setattr(os, "stat", btrfs_stat)
    hold_scratch(tmp_path)
    try:
        assert str(tmp_path) in atomic._listing_only  # found out when the folder was made
        assert not other_writers(tmp_path)
        (tmp_path / SCRATCH / "0123456789ab").mkdir()
        assert other_writers(tmp_path)
        assert other_writers(tmp_path)  # (not a change: listed)
    finally:
        release_scratch(tmp_path)


def test_a_holders_removed_folder_is_made_again_so_others_still_see_it(tmp_path: Path) -> None:
    hold_scratch(tmp_path)
    try:
        shutil.rmtree(tmp_path / SCRATCH)  # a user cleaning up
        other_writers(tmp_path)  # (True, once: `.recorder-tmp` changed)
        (mine,) = (tmp_path / SCRATCH).iterdir()  # back, with its lock
        assert os.listdir(mine) == ["lock"]
        assert not other_writers(tmp_path)
    finally:
        release_scratch(tmp_path)
    assert os.listdir(tmp_path) == []


def test_a_holders_own_removed_folder_is_made_again(tmp_path: Path) -> None:
    hold_scratch(tmp_path)
    try:
        assert not other_writers(tmp_path)
        (mine,) = (tmp_path / SCRATCH).iterdir()
        shutil.rmtree(mine)  # only this process's folder: `.recorder-tmp` stays
        other_writers(tmp_path)  # (True, once: `.recorder-tmp` changed)
        (again,) = (tmp_path / SCRATCH).iterdir()  # a new one, with its lock
        assert again != mine and os.listdir(again) == ["lock"]
        assert not other_writers(tmp_path)
    finally:
        release_scratch(tmp_path)
    assert os.listdir(tmp_path) == []


def test_an_unchanged_folder_costs_one_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hold_scratch(tmp_path)
    try:
        assert not other_writers(tmp_path)
        looked: list[str] = []
        real_stat = os.stat

        def counted(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
            looked.append(os.fspath(path))
            return real_stat(path, *args, **kwargs)

        monkeypatch.setattr(os, "stat", counted)
        assert not other_writers(tmp_path)
        assert looked == [os.path.join(os.path.abspath(tmp_path), SCRATCH)]
    finally:
        monkeypatch.undo()
        release_scratch(tmp_path)


def test_other_writers_by_any_spelling_of_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    hold_scratch(Path("out"))
    try:
        spellings = [Path("out"), "out", "./out/", str(tmp_path / "out"), tmp_path / "out"]
        assert [other_writers(folder) for folder in spellings] == [False] * 5
        (tmp_path / "out" / SCRATCH / "0123456789ab").mkdir()  # another writer
        assert all(other_writers(folder) for folder in spellings)
    finally:
        release_scratch(Path("out"))


def test_a_second_holder_in_the_process_is_another_writer(tmp_path: Path) -> None:
    hold_scratch(tmp_path)
    hold_scratch(tmp_path)
    try:
        assert other_writers(tmp_path)
    finally:
        release_scratch(tmp_path)
        release_scratch(tmp_path)
    assert os.listdir(tmp_path) == []


def test_a_writer_that_came_and_went_between_two_calls_is_told(tmp_path: Path) -> None:
    # another recorder that ran between two of this one's files (its files are still there)
    hold_scratch(tmp_path)
    try:
        assert not other_writers(tmp_path)
        time.sleep(0.03)  # (a clock tick: coarse file times differ from the last change's)
        theirs = tmp_path / SCRATCH / "0123456789ab"
        theirs.mkdir()
        theirs.rmdir()
        assert other_writers(tmp_path)
        assert not other_writers(tmp_path)
    finally:
        release_scratch(tmp_path)
