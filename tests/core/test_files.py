"""Files and sockets: written files get ordinary modes; a bad port leaks no socket."""

from __future__ import annotations

import gc
import os
import stat
import warnings
from pathlib import Path

import pytest

from recorder.disk.atomic import release_scratch, write_text_atomic
from recorder.servers import bind_socket


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_a_new_file_gets_0666_less_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "01-new.http"
    write_text_atomic(path, "x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~current_umask()


def test_a_rewritten_file_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "01-old.http"
    path.write_text("old")
    path.chmod(0o640)
    write_text_atomic(path, "new")
    assert path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    release_scratch(tmp_path)  # (what the process does when it exits)
    assert [p.name for p in tmp_path.iterdir()] == ["01-old.http"]  # no temporary file left


def test_a_symbolic_link_stays_one_and_its_target_is_written(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "06.http"
    target.write_text("old")
    link = tmp_path / "06.http"
    link.symlink_to(Path("real") / "06.http")
    write_text_atomic(link, "new")
    assert link.is_symlink()
    assert target.read_text() == "new"


def test_a_port_out_of_range_leaks_no_socket() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(OverflowError):
            bind_socket("127.0.0.1", 70_000)
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
