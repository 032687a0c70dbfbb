"""recorder.docs.sync, `recorder docs sync|check`: Markdown blocks kept in sync with transcripts."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from seed_text import (
    SEED_MESSAGE_REPLY,
    SEED_MESSAGE_REPLY_OPTIONS,
    SEED_STREAM,
    SEED_STREAM_OPTIONS,
    seed_stream_going_on,
)

from recorder import Transcript, dump, load
from recorder.cli import main
from recorder.docs.render import RenderOptions, render_exchange
from recorder.docs.sync import apply_blocks, find_markers, parse_marker_options

SEED = Path(__file__).parent.parent / "fixtures" / "seed"

PAGE = """\
# Worked examples

Intro text that sync must not touch.
<!-- recorder: ../transcripts/02-message-reply.http#1 -->
```http
stale content
```

Between the blocks.

<!-- recorder: ../transcripts/04-streaming-review.http#1 only=response max-lines=12 -->

~~~~ http title="stream"
~~~~

```markdown
<!-- recorder: ../transcripts/this-is-only-an-example.http#9 -->
```
The end, with no final line break.""".replace("touch.", "touch.  \t")  # trailing blanks kept


@pytest.fixture
def project(tmp_path: Path) -> Path:
    transcripts = tmp_path / "transcripts"
    transcripts.mkdir()
    for path in SEED.glob("*.http"):
        shutil.copy(path, transcripts / path.name)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(PAGE, encoding="utf-8")
    return tmp_path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def expected_page() -> str:
    reply = render_exchange(load(SEED / "02-message-reply.http").exchanges[0])
    stream = render_exchange(
        load(SEED / "04-streaming-review.http").exchanges[0],
        RenderOptions(only="response", max_lines=12),
    )
    return PAGE.replace("```http\nstale content\n```", f"```http\n{reply}```").replace(
        '~~~~ http title="stream"\n~~~~', f'~~~~ http title="stream"\n{stream}~~~~'
    )


# --------------------------------------------------------------------------- pure core


def test_markers_inside_code_blocks_are_examples_not_markers() -> None:
    markers, problems = find_markers(PAGE, "page.md")
    assert problems == []
    assert [(m.line, m.path, m.index) for m in markers] == [
        (4, "../transcripts/02-message-reply.http", 1),
        (11, "../transcripts/04-streaming-review.http", 1),
    ]
    assert markers[1].options == RenderOptions(only="response", max_lines=12)
    assert markers[1].block is not None and markers[1].block.open_index == 12  # blank skipped


def test_marker_options_mirror_render_options() -> None:
    options = parse_marker_options(["headers=Content-Type,A2A-Version", "max-lines=3", "full"])
    assert options == RenderOptions(headers=("Content-Type", "A2A-Version"), max_lines=3, full=True)


@pytest.mark.parametrize(
    ("word", "message"),
    [
        ("maxlines=3", "unknown option 'maxlines=3'"),
        ("max-lines=three", "max-lines needs a whole number, got 'three'"),
        ("only=both", "only= takes request or response"),
        ("max-lines=0", "max-lines must be at least 1"),
    ],
)
def test_bad_marker_options_are_named(word: str, message: str) -> None:
    text = f"text\n<!-- recorder: a.http#1 {word} -->\n```\n```\n"
    markers, problems = find_markers(text, "page.md")
    assert markers == []
    assert len(problems) == 1
    assert (problems[0].path, problems[0].line) == ("page.md", 2)
    assert message in problems[0].message


@pytest.mark.parametrize(
    "text",
    [
        "<!-- recorder: ../transcripts/02-message-reply.http#1\n-->\n",
        "<!-- Recorder: ../transcripts/02-message-reply.http#1 -->\n",
        "<!--recorder : x.http -->\n",
    ],
)
def test_a_marker_written_wrong_is_a_problem_not_skipped(text: str) -> None:
    markers, problems = find_markers("intro\n\n" + text + "```http\nold\n```\n", "page.md")
    assert markers == []
    assert [str(p) for p in problems] == [
        "page.md:3: a recorder marker is one line, in lower case: "
        "<!-- recorder: FILE#N [options] -->"
    ]


def test_an_unclosed_block_below_a_marker_is_a_problem_at_its_line() -> None:
    _, problems = find_markers("<!-- recorder: a.http -->\n\n```http\nnever closed\n", "p.md")
    assert [str(p) for p in problems] == ["p.md:3: the code block below the marker is not closed"]


def test_apply_keeps_crlf_line_endings_and_everything_else() -> None:
    text = "a\r\n<!-- recorder: x.http#1 -->\r\n```http\r\nold\r\n```\r\nz"
    markers, _ = find_markers(text)
    assert apply_blocks(text, markers, {2: "new 1\nnew 2\n"}) == (
        "a\r\n<!-- recorder: x.http#1 -->\r\n```http\r\nnew 1\r\nnew 2\r\n```\r\nz"
    )


def test_apply_inserts_a_block_below_a_marker_that_has_none() -> None:
    text = "<!-- recorder: x.http#1 -->\nparagraph\n"
    markers, _ = find_markers(text)
    assert apply_blocks(text, markers, {1: "content\n"}) == (
        "<!-- recorder: x.http#1 -->\n```http\ncontent\n```\nparagraph\n"
    )


def test_apply_lengthens_a_fence_the_content_would_close() -> None:
    text = "<!-- recorder: x.http#1 -->\n```text\n```\n"
    markers, _ = find_markers(text)
    assert apply_blocks(text, markers, {1: "```\n"}) == (
        "<!-- recorder: x.http#1 -->\n````text\n```\n````\n"
    )


def test_apply_keeps_the_indent_of_a_block_in_a_list() -> None:
    text = "1. step\n   <!-- recorder: x.http#1 -->\n   ```http\n   old\n   ```\n"
    markers, _ = find_markers(text)
    assert markers[0].block is not None and markers[0].block.content == "old\n"
    assert apply_blocks(text, markers, {2: "a\n\nb\n"}) == (
        "1. step\n   <!-- recorder: x.http#1 -->\n   ```http\n   a\n\n   b\n   ```\n"
    )


# --------------------------------------------------------------------------- CommonMark


def test_a_marker_in_an_indented_code_block_is_an_example_not_synced() -> None:
    # (the bug: 38 lines were inserted into the example)
    text = (
        "Write a marker like this:\n"
        "\n"
        "    <!-- recorder: ../transcripts/02-message-reply.http#1 -->\n"
        "    ```http\n"
        "    POST …\n"
        "    ```\n"
        "\n"
        "or, with no block below it yet:\n"
        "\n"
        "    <!-- recorder: ../transcripts/04-streaming.http#1 -->\n"
    )
    assert find_markers(text, "page.md") == ([], [])


def test_a_marker_in_a_list_item_is_live_and_one_indented_past_it_is_code() -> None:
    text = (
        "- step one\n"
        "\n"
        "  <!-- recorder: a.http#1 -->\n"
        "  ```http\n"
        "  old\n"
        "  ```\n"
        "\n"
        "- step two, an example:\n"
        "\n"
        "      <!-- recorder: b.http#1 -->\n"
    )
    markers, problems = find_markers(text, "page.md")
    assert problems == []
    assert [(m.line, m.path, m.indent) for m in markers] == [(3, "a.http", "  ")]
    assert markers[0].block is not None and markers[0].block.content == "old\n"


def test_a_marker_in_a_fence_of_tildes_or_a_longer_fence_is_an_example() -> None:
    text = (
        "~~~markdown\n<!-- recorder: a.http -->\n```\n~~~\n\n"
        "````\n```\n<!-- recorder: b.http -->\n```\n````\n"
    )
    assert find_markers(text, "page.md") == ([], [])


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "Some text\n    <!-- recorder: a.http#1 -->\n",
            2,
            "this recorder marker is read as text of a paragraph",
        ),
        ("> <!-- recorder: a.http#1 -->\n> ```http\n> ```\n", 1, "in a block quote"),
        (
            "<div>\n<!-- recorder: a.http#1 -->\n```http\n```\n</div>\n",
            2,
            "inside an HTML block that goes on below it",
        ),
    ],
)
def test_a_marker_markdown_does_not_read_as_one_is_a_problem_not_skipped(
    text: str, line: int, message: str
) -> None:
    markers, problems = find_markers(text, "page.md")
    assert markers == []
    assert [(p.line, message in p.message) for p in problems] == [(line, True)]


def test_a_marker_ending_an_html_block_is_live() -> None:
    text = "<details>\n<summary>The reply</summary>\n<!-- recorder: a.http#1 -->\n\n```http\n```\n"
    markers, problems = find_markers(text, "page.md")
    assert problems == []
    assert [(m.line, m.block is not None and m.block.open_index) for m in markers] == [(3, 4)]


def test_a_block_written_below_a_marker_ending_an_html_block_is_a_block() -> None:
    text = "<details>\n<!-- recorder: a.http#1 -->\n\nThe reply.\n</details>\n"
    markers, _ = find_markers(text, "page.md")
    synced = apply_blocks(text, markers, {2: "content\n"})
    assert synced == (
        "<details>\n<!-- recorder: a.http#1 -->\n\n```http\ncontent\n```\n\nThe reply.\n"
        "</details>\n"
    )
    again, problems = find_markers(synced, "page.md")
    assert problems == []
    assert [m.block is not None and m.block.content for m in again] == ["content\n"]
    assert apply_blocks(synced, again, {2: "content\n"}) == synced


def test_a_lone_carriage_return_does_not_shift_the_lines() -> None:
    text = "a\rb\n<!-- recorder: a.http#1 -->\n```http\nold\n```\n"
    markers, _ = find_markers(text, "page.md")
    assert [(m.line, m.block is not None and m.block.content) for m in markers] == [(2, "old\n")]


def test_sync_leaves_an_indented_example_alone(project: Path) -> None:
    page = project / "docs" / "page.md"
    example = (
        "An example marker:\n\n"
        "    <!-- recorder: ../transcripts/02-message-reply.http#1 -->\n"
        "    ```http\n"
        "    ```\n"
    )
    page.write_text(example, encoding="utf-8")
    assert run("docs", "sync", str(page)) == (0, "all blocks up to date\n", "")
    assert page.read_text(encoding="utf-8") == example
    assert run("docs", "check", str(page)) == (0, "0 blocks up to date\n", "")


# --------------------------------------------------------------------------- the seed


SEED_STREAM_REF = "../transcripts/04-streaming-review.http#SendStreamingMessage"
SEED_PAGE = f"""\
The reply repeats the request's id and holds the response message in result.

<!-- recorder: ../transcripts/02-message-reply.http#1 {SEED_MESSAGE_REPLY_OPTIONS} -->
```http
```

Streams as SSE frames

<!-- recorder: {SEED_STREAM_REF} {SEED_STREAM_OPTIONS} -->
```http
```
"""


def test_docs_markers_reproduce_the_seed_guides_blocks_byte_for_byte(project: Path) -> None:
    # the stream as a review's goes on: four frames, of which the guide shows two
    stream = project / "transcripts" / "04-streaming-review.http"
    dump(Transcript((seed_stream_going_on(load(stream).exchanges[0]),)), stream)
    page = project / "docs" / "seed.md"
    page.write_text(SEED_PAGE, encoding="utf-8")
    assert run("docs", "sync", str(page))[0] == 0
    assert page.read_text(encoding="utf-8") == SEED_PAGE.replace(
        "-->\n```http\n```\n\nStreams", f"-->\n```http\n{SEED_MESSAGE_REPLY}```\n\nStreams"
    ).replace("-->\n```http\n```\n", f"-->\n```http\n{SEED_STREAM}```\n")
    assert run("docs", "check", str(page)) == (0, "2 blocks up to date\n", "")


# --------------------------------------------------------------------------- sync and check


def test_sync_rewrites_the_blocks_and_nothing_else(project: Path) -> None:
    page = project / "docs" / "page.md"
    code, out, err = run("docs", "sync", str(page))
    assert (code, out, err) == (0, f"{page}: 2 blocks updated\n", "")
    assert page.read_text(encoding="utf-8") == expected_page()


def test_second_sync_changes_nothing(project: Path) -> None:
    page = project / "docs" / "page.md"
    run("docs", "sync", str(page))
    before = page.read_bytes()
    mtime = page.stat().st_mtime_ns
    code, out, _ = run("docs", "sync", str(page))
    assert (code, out) == (0, "all blocks up to date\n")
    assert page.read_bytes() == before
    assert page.stat().st_mtime_ns == mtime  # not even rewritten with the same bytes


def test_check_passes_after_sync(project: Path) -> None:
    docs = project / "docs"
    run("docs", "sync", str(docs))
    assert run("docs", "check", str(docs)) == (0, "2 blocks up to date\n", "")


def test_check_names_the_line_of_a_block_a_changed_transcript_made_stale(project: Path) -> None:
    page = project / "docs" / "page.md"
    run("docs", "sync", str(page))
    transcript = project / "transcripts" / "02-message-reply.http"
    text = transcript.read_text(encoding="utf-8")
    transcript.write_text(text.replace("ROLE_AGENT", "ROLE_USER"), encoding="utf-8")
    before = page.read_bytes()
    code, out, err = run("docs", "check", str(page))
    assert code == 1
    # the stale line, found in the file independently of the diff
    role = page.read_text().splitlines().index('      "role": "ROLE_AGENT",') + 1
    lines = out.splitlines()
    assert lines[:4] == [
        f"{page}:4: the block from ../transcripts/02-message-reply.http#1 is out of date "
        f"(run: recorder docs sync {page})",
        f"--- {page}:6 (the block)",  # its first content line
        "+++ ../transcripts/02-message-reply.http#1 (rendered now)",
        f"@@ -{role - 3},7 +{role - 3},7 @@",  # numbered by the file's lines
    ]
    assert lines[7:9] == ['-      "role": "ROLE_AGENT",', '+      "role": "ROLE_USER",']
    assert len(lines) == 12 and all(line.startswith(" ") for line in lines[4:7] + lines[9:])
    assert err == ""
    assert page.read_bytes() == before  # check never writes


def test_check_diffs_a_block_whose_first_line_was_removed(project: Path) -> None:
    page = project / "docs" / "page.md"
    run("docs", "sync", str(page))
    text = page.read_text()
    page.write_text(text.replace("```http\nPOST /a2a/jsonrpc HTTP/1.1\n", "```http\n", 1))
    code, out, _ = run("docs", "check", str(page))
    assert code == 1
    assert out.splitlines()[1:8] == [
        f"--- {page}:6 (the block)",
        "+++ ../transcripts/02-message-reply.http#1 (rendered now)",
        "@@ -6,3 +6,4 @@",  # the file's lines 6-8, which sync makes 6-9
        "+POST /a2a/jsonrpc HTTP/1.1",
        " Content-Type: application/json",
        " …",
        " {",
    ]


def test_check_fails_before_the_first_sync_naming_every_block(project: Path) -> None:
    page = project / "docs" / "page.md"
    code, out, _ = run("docs", "check", str(project / "docs"))
    assert code == 1
    headings = [line for line in out.splitlines() if line.startswith(f"{page}:")]
    assert [line.split(": ")[0] for line in headings] == [f"{page}:4", f"{page}:11"]


def test_a_missing_transcript_exits_2_naming_the_marker(project: Path) -> None:
    page = project / "docs" / "page.md"
    page.write_text("x\n\n<!-- recorder: ../transcripts/99-nope.http#1 -->\n```\n```\n")
    code, out, err = run("docs", "check", str(page))
    assert code == 2
    assert out == ""
    assert err == (
        f"recorder docs check: {page}:3: {page.parent / '../transcripts/99-nope.http'}: "
        "no such transcript\n"
    )


def test_a_missing_exchange_exits_2_naming_the_marker(project: Path) -> None:
    page = project / "docs" / "page.md"
    page.write_text("<!-- recorder: ../transcripts/11-errors.http#6 -->\n```\n```\n")
    code, _, err = run("docs", "check", str(page))
    assert code == 2
    assert err == (
        f"recorder docs check: {page}:1: {page.parent / '../transcripts/11-errors.http'} "
        "has 5 exchanges: there is no #6\n"
    )


def test_sync_with_a_broken_marker_still_syncs_the_others_and_exits_2(project: Path) -> None:
    page = project / "docs" / "page.md"
    page.write_text(PAGE + "\n<!-- recorder: ../transcripts/02-message-reply.http#2 -->\n")
    code, out, err = run("docs", "sync", str(page))
    assert code == 2
    assert out == f"{page}: 2 blocks updated\n"
    assert err.startswith(f"recorder docs sync: {page}:20: ")
    assert run("docs", "check", str(page))[0] == 2  # still broken, but the good blocks are synced
    assert page.read_text().startswith(expected_page())


def test_a_transcript_that_does_not_parse_exits_2_with_its_own_line(project: Path) -> None:
    (project / "transcripts" / "bad.http").write_text("### x\nGET / HTTP/1.1\n")
    page = project / "docs" / "page.md"
    page.write_text("<!-- recorder: ../transcripts/bad.http -->\n")
    code, _, err = run("docs", "check", str(page))
    assert code == 2
    bad = page.parent / "../transcripts/bad.http"
    assert err.startswith(f"recorder docs check: {page}:1: {bad}:")


def test_sync_keeps_the_file_mode(project: Path) -> None:
    page = project / "docs" / "page.md"
    page.chmod(0o664)
    run("docs", "sync", str(page))
    assert stat.S_IMODE(page.stat().st_mode) == 0o664


def test_a_folder_without_markdown_is_a_problem_not_a_pass(project: Path) -> None:
    empty = project / "doc"  # a typo for docs/
    empty.mkdir()
    code, out, err = run("docs", "check", str(empty))
    assert (code, out) == (2, "")
    assert err == f"recorder docs check: {empty}: no .md files in this folder\n"


def test_sync_that_cannot_write_says_so_and_exits_2(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = project / "docs" / "page.md"

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("recorder.docs.sync.tempfile.mkstemp", refuse)
    code, out, err = run("docs", "sync", str(page))
    assert (code, out, err) == (
        2,
        "",
        f"recorder docs sync: {page}: cannot write: Permission denied\n",
    )
    assert page.read_text() == PAGE


def test_folders_are_searched_for_markdown(project: Path) -> None:
    nested = project / "docs" / "more"
    nested.mkdir()
    (nested / "other.md").write_text("<!-- recorder: ../../transcripts/11-errors.http#3 -->\n")
    code, out, _ = run("docs", "sync", str(project / "docs"))
    assert code == 0
    assert out.splitlines() == [
        f"{nested / 'other.md'}: 1 block updated",
        f"{project / 'docs' / 'page.md'}: 2 blocks updated",
    ]


# --------------------------------------------------------------------------- properties

LINE_KINDS = st.sampled_from(
    [
        "text",
        "",
        "   indented text",
        "```",
        "```python",
        "~~~~",
        "````",
        "<!-- recorder: a.http#1 -->",
        "  <!-- recorder: b.http max-lines=3 -->",
        "<!-- an ordinary comment -->",
        "<!-- recorder: c.http bogus=1 -->",
        "    <!-- recorder: a.http#1 -->",  # indented code, or a paragraph's text
        "<details>",  # an HTML block, to a blank line
        "- item",
    ]
)
CONTENTS = st.sampled_from(
    ["a\n", "", "```\n", "x\n\ny\n", "~~~~~\n", "<!-- recorder: d.http -->\n"]
)


@settings(max_examples=600, deadline=None)
@given(
    st.lists(LINE_KINDS, max_size=25),
    st.dictionaries(st.sampled_from(["a.http", "b.http"]), CONTENTS, min_size=2),
    st.booleans(),
    st.booleans(),
)
def test_applying_twice_changes_nothing_and_keeps_other_lines(
    lines: list[str], contents: dict[str, str], crlf: bool, final_break: bool
) -> None:
    eol = "\r\n" if crlf else "\n"
    text = eol.join(lines) + (eol if final_break else "")
    markers, problems = find_markers(text)
    synced = apply_blocks(text, markers, {m.line: contents[m.path] for m in markers})
    again, problems_again = find_markers(synced)
    assert [m.reference for m in again] == [m.reference for m in markers]
    assert [p.message for p in problems_again] == [p.message for p in problems]
    for marker in again:
        assert marker.block is not None
        assert marker.block.content == contents[marker.path]
    # a second sync finds every block up to date, so it writes nothing
    assert apply_blocks(synced, again, {m.line: contents[m.path] for m in again}) == synced
    # the lines outside the marked blocks are the lines that were there, in order (and the
    # blank line a block written below a marker ending an HTML block needs)
    inside = {
        index
        for marker in again
        if marker.block is not None
        for index in range(marker.block.open_index, marker.block.close_index + 1)
    }
    inside.update(
        new.block.open_index - 1
        for old, new in zip(markers, again, strict=True)
        if old.block is None and old.ends_html and new.block is not None
    )
    outside = [line for i, line in enumerate(synced.split("\n")) if i not in inside]
    original_inside = {
        index
        for marker in markers
        if marker.block is not None
        for index in range(marker.block.open_index, marker.block.close_index + 1)
    }
    original_outside = [line for i, line in enumerate(text.split("\n")) if i not in original_inside]
    assert outside == original_outside
