"""Docs markers that name an exchange by operation or title (issue 28): they stay on their
exchange when an earlier one is removed, and fail, naming `file:line`, when the name no
longer names exactly one."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from recorder import dump, load
from recorder.cli import main
from recorder.docs.render import render_exchange
from recorder.docs.select import ExchangeName, named_exchange, parse_exchange_reference
from recorder.docs.sync import find_markers

SEED = Path(__file__).parent.parent / "fixtures" / "seed"
ERRORS = "../transcripts/11-errors.http"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    for path in SEED.glob("*.http"):
        shutil.copy(path, transcripts / path.name)
    (tmp_path / "docs").mkdir()
    return tmp_path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("reference", "parsed"),
    [
        ("a.http", ("a.http", None)),
        ("a.http#3", ("a.http", 3)),
        ("a.http#SendMessage", ("a.http", ExchangeName("SendMessage"))),
        ("a.http#message/send", ("a.http", ExchangeName("message/send"))),
        ('a.http#"GetTask: read it back"', ("a.http", ExchangeName("GetTask: read it back", True))),
        ('a.http#"has # in it"', ("a.http", ExchangeName("has # in it", True))),
        ("notes#x", ("notes#x", None)),  # a name follows a path ending in .http
        ("a.http#-1", ("a.http#-1", None)),
    ],
)
def test_a_reference_names_an_exchange_by_position_operation_or_title(
    reference: str, parsed: tuple[str, object]
) -> None:
    assert parse_exchange_reference(reference) == parsed


@pytest.mark.parametrize("reference", ['a.http#"open', 'a.http#"two" "quotes"', "a.http#0"])
def test_a_bad_reference_is_a_value_error(reference: str) -> None:
    with pytest.raises(ValueError):
        parse_exchange_reference(reference)


def test_an_operation_is_the_method_or_the_title_up_to_its_colon() -> None:
    exchanges = load(SEED / "11-errors.http").exchanges
    assert named_exchange(exchanges, ExchangeName("GetTask")) == 1
    assert named_exchange(exchanges, ExchangeName("message/send")) == 3
    assert named_exchange(exchanges, ExchangeName("malformed JSON", title=True)) == 4
    with pytest.raises(ValueError) as ambiguous:
        named_exchange(exchanges, ExchangeName("SendMessage"))
    assert str(ambiguous.value) == (
        "2 exchanges are SendMessage (#2, #5): name one by its whole title"
        ' (#"SendMessage without A2A-Version is read as version 0.3") or its number'
    )
    with pytest.raises(ValueError) as gone:
        named_exchange(exchanges, ExchangeName("CancelTask"))
    assert str(gone.value) == (
        "no exchange is CancelTask (its operations: GetTask, SendMessage, message/send)"
    )


def test_a_marker_may_quote_a_title_with_spaces() -> None:
    text = f'<!-- recorder: {ERRORS}#"malformed JSON" only=response -->\n```\n```\n'
    markers, problems = find_markers(text)
    assert problems == []
    assert [(m.index, m.options.only) for m in markers] == [
        (ExchangeName("malformed JSON", title=True), "response")
    ]
    _, broken = find_markers(f'<!-- recorder: {ERRORS}#"malformed JSON -->\n')
    assert [p.message for p in broken] == [
        'bad recorder marker: a quoted title is not closed (#"title")'
    ]


def test_a_named_block_stays_on_its_exchange_when_an_earlier_one_is_removed(
    project: Path,
) -> None:
    page = project / "docs" / "page.md"
    page.write_text(
        f'<!-- recorder: {ERRORS}#"malformed JSON" -->\n```\n```\n\n'
        "<!-- recorder: ../transcripts/04-streaming-review.http#SendStreamingMessage -->\n"
        f"<!-- recorder: {ERRORS}#4 -->\n```\n```\n",
        encoding="utf-8",
    )
    assert run("docs", "sync", str(page))[0] == 0
    source = project / "transcripts" / "11-errors.http"
    malformed = load(source).exchanges[3]
    assert f"```\n{render_exchange(malformed)}```" in page.read_text()
    assert run("docs", "check", str(page))[0] == 0
    # the first exchange removed: the named block still shows "malformed JSON", the one at
    # position 4 now shows another exchange and is stale
    transcript = load(source)
    dump(dataclasses.replace(transcript, exchanges=transcript.exchanges[1:]), source)
    code, out, err = run("docs", "check", str(page))
    assert (code, err) == (1, "")
    lines = page.read_text().splitlines()
    positional = next(n for n, line in enumerate(lines, 1) if line.endswith("#4 -->"))
    headings = [line for line in out.splitlines() if line.startswith(f"{page}:")]
    assert [line.split(": ")[0] for line in headings] == [f"{page}:{positional}"]


def test_a_name_that_is_gone_or_ambiguous_fails_check_naming_the_marker(project: Path) -> None:
    page = project / "docs" / "page.md"
    page.write_text(
        f'<!-- recorder: {ERRORS}#"malformed JSON" -->\n```\n```\n\n'
        f"<!-- recorder: {ERRORS}#SendMessage -->\n```\n```\n",
        encoding="utf-8",
    )
    source = project / "transcripts" / "11-errors.http"
    transcript = load(source)
    retitled = [
        dataclasses.replace(e, title="malformed JSON body") if e.title == "malformed JSON" else e
        for e in transcript.exchanges
    ]
    dump(dataclasses.replace(transcript, exchanges=tuple(retitled)), source)
    code, out, err = run("docs", "check", str(page))
    where = page.parent / ERRORS
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f'recorder docs check: {page}:1: {where}: no exchange is titled "malformed JSON" (its'
        ' titles: #1 "GetTask: a task id the agent never gave", #2 "SendMessage without'
        ' A2A-Version is read as version 0.3", #3 "message/send: the 0.3 method name is unknown'
        ' in 1.0", #4 "malformed JSON body", #5 "SendMessage with parts that is not a list")',
        f"recorder docs check: {page}:5: {where}: 2 exchanges are SendMessage (#2, #5): name one"
        ' by its whole title (#"SendMessage without A2A-Version is read as version 0.3") or its'
        " number",
    ]


# --------------------------------------------------------------------------- render, export


def test_render_takes_a_name_as_markers_do() -> None:
    path = SEED / "11-errors.http"
    by_name = run("render", f"{path}#GetTask")
    by_title = run("render", f'{path}#"malformed JSON"')
    assert by_name == (0, run("render", f"{path}#1")[1], "")
    assert by_title == (0, run("render", f"{path}#4")[1], "")
    assert run("render", f"{path}#message/send", "--list") == (
        0,
        "#3  message/send: the 0.3 method name is unknown in 1.0\n",
        "",
    )


def test_render_of_an_ambiguous_or_unknown_name_lists_the_choices() -> None:
    path = SEED / "11-errors.http"
    assert run("render", f"{path}#SendMessage") == (
        2,
        "",
        f"recorder render: {path}: 2 exchanges are SendMessage (#2, #5): name one by its whole"
        ' title (#"SendMessage without A2A-Version is read as version 0.3") or its number\n',
    )
    assert run("render", f"{path}#CancelTask") == (
        2,
        "",
        f"recorder render: {path}: no exchange is CancelTask (its operations: GetTask,"
        " SendMessage, message/send)\n",
    )
    code, _, err = run("render", f'{path}#"malformed"')
    assert code == 2
    assert err.startswith(f'recorder render: {path}: no exchange is titled "malformed" (its titles')
    assert '#4 "malformed JSON"' in err


def test_export_takes_a_name_and_numbers_the_exchange_as_in_its_file() -> None:
    path = SEED / "11-errors.http"
    code, out, _ = run("export", f"{path}#message/send", "--to", "curl")
    assert code == 0
    assert out == run("export", f"{path}#3", "--to", "curl")[1]
    assert "\necho '### 3. message/send: the 0.3 method name is unknown in 1.0'\n" in out
