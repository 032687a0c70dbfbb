"""`# @after NAME.http`: a file's needs in its head (`Transcript.after`), kept byte for byte,
and `recorder check` failing a tag that names no file of the folder at its line."""

from __future__ import annotations

import tempfile
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder import dumps, loads
from recorder.checking import check_paths
from recorder.cli import main
from recorder.format.httpread import after_lines
from recorder.replay.needs import needs_of
from recorder.replay.plan import TranscriptErrors, load_transcripts

EXCHANGE = "### ListTasks\nGET /a2a/rest/tasks HTTP/1.1\n\nHTTP/1.1 200 OK\n"
HEAD = "# recorder-format: 1\n# @after 02-send-message.http\n# @after 10-send-message.http\n"


def test_the_tags_are_the_files_needs_in_order_and_round_trip() -> None:
    text = HEAD + "\n" + EXCHANGE
    transcript = loads(text)
    assert transcript.after == ("02-send-message.http", "10-send-message.http")
    assert dumps(transcript) == text
    assert after_lines(text) == [(2, "02-send-message.http"), (3, "10-send-message.http")]


def test_other_comments_are_no_tags() -> None:
    text = "# recorder-format: 1\n# @afterwards, a listing\n# after 02-a.http\n\n" + EXCHANGE
    assert loads(text).after == ()
    assert after_lines(text) == []


def test_check_fails_a_tag_naming_no_file_of_the_folder(tmp_path: Path) -> None:
    (tmp_path / "02-send-message.http").write_text("# recorder-format: 1\n\n" + EXCHANGE)
    listing = tmp_path / "11-list-tasks.http"
    listing.write_text(HEAD + "\n" + EXCHANGE)
    count, problems = check_paths([tmp_path])
    assert count == 2
    assert [str(p) for p in problems] == [
        f"{listing}:3: @after 10-send-message.http: no such transcript in {tmp_path}"
    ]
    outcome = CliRunner().invoke(main, ["check", str(tmp_path)])
    assert outcome.exit_code == 2
    assert f"recorder check: {listing}:3: @after 10-send-message.http: no such" in outcome.output


def test_check_fails_a_file_that_needs_itself(tmp_path: Path) -> None:
    own = tmp_path / "04-list-tasks.http"
    own.write_text("# recorder-format: 1\n# @after 04-list-tasks.http\n\n" + EXCHANGE)
    _, problems = check_paths([own])
    assert [str(p) for p in problems] == [
        f"{own}:2: @after 04-list-tasks.http: a file cannot need itself"
    ]


def test_a_tag_too_long_for_a_file_name_is_a_problem_at_its_line(tmp_path: Path) -> None:
    # (a traceback: Path.is_file raised ENAMETOOLONG for a name over 255 bytes)
    name = "x" * 300 + ".http"
    listing = tmp_path / "01-list-tasks.http"
    listing.write_text(f"# recorder-format: 1\n# @after {name}\n\n" + EXCHANGE)
    _, problems = check_paths([listing])
    assert [str(p) for p in problems] == [
        f"{listing}:2: @after {name}: no such transcript in {tmp_path}"
    ]
    outcome = CliRunner().invoke(main, ["check", str(listing)])
    assert outcome.exit_code == 2, outcome.output
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit)


def write_needing(folder: Path, name: str, *needs: str) -> Path:
    path = folder / name
    tags = "".join(f"# @after {need}\n" for need in needs)
    path.write_text("# recorder-format: 1\n" + tags + "\n" + EXCHANGE)
    return path


def test_check_fails_needs_that_form_a_cycle_where_play_refuses_them(tmp_path: Path) -> None:
    # (check passed a cycle that play refuses before it sends anything)
    write_needing(tmp_path, "01-a.http", "03-c.http")
    write_needing(tmp_path, "02-b.http", "01-a.http")
    write_needing(tmp_path, "03-c.http", "02-b.http")
    _, problems = check_paths([tmp_path / "01-a.http"])
    assert [str(p) for p in problems] == [
        f"{tmp_path / '02-b.http'}:2: @after 01-a.http: the needs form a cycle (01-a.http needs "
        "03-c.http needs 02-b.http needs 01-a.http): a needed file is played before the file "
        "that needs it"
    ]
    outcome = CliRunner().invoke(main, ["check", str(tmp_path)])
    assert outcome.exit_code == 2, outcome.output
    played = CliRunner().invoke(main, ["play", str(tmp_path), "--agent", "http://127.0.0.1:9"])
    assert played.exit_code == 2, played.output
    for problem in check_paths([tmp_path])[1]:
        assert str(problem) in played.output


NAMES = [f"0{n}-f.http" for n in range(1, 6)]


@settings(max_examples=150, deadline=None, database=None)
@given(
    st.lists(
        st.lists(st.sampled_from([*NAMES, "09-missing.http"]), max_size=3),
        min_size=len(NAMES),
        max_size=len(NAMES),
    )
)
def test_check_and_play_agree_on_every_graph_of_needs(needs: list[list[str]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name, named in zip(NAMES, needs, strict=True):
            write_needing(root, name, *named)
        _, problems = check_paths([root])
        checked = {(p.path, p.line) for p in problems}
        try:
            needs_of(load_transcripts([root]))
            refused: set[tuple[str | None, int | None]] = set()
        except TranscriptErrors as raised:
            refused = {(e.path, e.line) for e in raised.errors}
        # check fails where play refuses, at each tag play names (play stops at the first
        # wrong tag of a file's needs; check names each: a file that needs itself, at each
        # such tag, where play calls it a cycle of one)
        assert bool(checked) == bool(refused), (needs, problems)
        assert refused <= checked, (needs, problems)
