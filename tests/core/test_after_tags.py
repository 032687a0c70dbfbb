"""`# @after NAME.http`: a file's needs in its head (`Transcript.after`), kept byte for byte,
and `recorder check` failing a tag that names no file of the folder at its line."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from recorder import dumps, loads
from recorder.checking import check_paths
from recorder.cli import main
from recorder.format.httpread import after_lines

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
