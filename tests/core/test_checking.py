"""Finding transcripts: files play in their numbers' order, past 99 too."""

from __future__ import annotations

from pathlib import Path

from recorder.disk.transcripts import find_transcripts, natural_key


def test_numbers_sort_as_numbers_not_as_text(tmp_path: Path) -> None:
    for name in ("100-get-task.http", "11-errors.http", "02-message-reply.http", "9-card.http"):
        (tmp_path / name).write_text("")
    found = [path.name for path in find_transcripts([tmp_path])]
    assert found == ["02-message-reply.http", "9-card.http", "11-errors.http", "100-get-task.http"]


def test_folders_sort_by_number_too(tmp_path: Path) -> None:
    for folder in ("10-later", "2-earlier"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "1-a.http").write_text("")
    found = [path.parent.name for path in find_transcripts([tmp_path])]
    assert found == ["2-earlier", "10-later"]


def test_the_same_number_spelled_two_ways_still_has_one_order() -> None:
    names = [Path("7-b.http"), Path("07-a.http"), Path("a.http"), Path("10.http")]
    assert sorted(names, key=natural_key) == sorted(reversed(names), key=natural_key)
    assert [p.name for p in sorted(names, key=natural_key)] == [
        "07-a.http",
        "7-b.http",
        "10.http",
        "a.http",
    ]
