"""Markdown code blocks kept in sync with the transcripts they come from.

A Markdown file marks a fenced code block as rendered from a transcript with an HTML comment on
the line above it (blank lines between are allowed); the comment is invisible on GitHub:

    <!-- recorder: ../transcripts/02-message-reply.http#1 max-lines=12 -->
    ```http
    POST /a2a/jsonrpc HTTP/1.1
    …
    ```

Marker grammar (one line: an HTML block of its own, CommonMark §4.6; one in a code block,
fenced or indented, is an example, not a marker):

    marker    = "<!--" *WS "recorder:" 1*WS reference *(1*WS option) *WS "-->"
    reference = path ["#" exchange]     ; without it, all the exchanges of the file
    exchange  = N                       ; by position: N counts exchanges from 1
              / operation               ; by name: the one exchange of this operation
              / DQUOTE title DQUOTE     ; by name: the one exchange with this whole title
    option    = "headers=" name *("," name)   ; headers kept (render's --headers)
              / "max-lines=" N               ; line budget of each body (render's --max-lines)
              / "width=" N                   ; width of SSE data lines (render's --width)
              / "only=" ("request" / "response")
              / "pick=" path *("," path)     ; JSON paths always shown (render's --pick)
              / "pick=none"                  ; nothing picked: the plain line budget
              / "ids=" ("short" / "full")    ; UUIDs shortened or not (render's --ids)
              / "full"                       ; nothing elided (render's --full)
              / "open-end"                   ; no closing `…` line (render's --open-end)

An exchange named by its operation (`transcripts/04-streaming.http#SendStreamingMessage`: its
JSON-RPC method, or its title up to `: `) or by its whole title, exactly
(`transcripts/06-get-and-list-tasks.http#"GetTask: read the task back with its last message
only"`; spaces allowed, no `"` inside) stays on its exchange when an earlier one is removed;
when the name no longer names exactly one exchange (it is gone, or two are named so), check
and sync fail naming the marker's `file:line` (`recorder.docs.select.named_exchange`). A name
follows a path that ends in `.http`; a position keeps working as it did.

The path is relative to the folder of the Markdown file, the same rule as a Markdown link, so
the reference is also a link a reader or an editor can follow (`README.md` at the top level
names `transcripts/02-message-reply.http`; `docs/example.md` names
`../transcripts/02-message-reply.http`). The block's content is exactly
`recorder render PATH#N OPTIONS`. A marker with no fenced block below it gets one (an `http`
block) on the next sync.

Which lines are markers and which fenced blocks follow them is CommonMark's answer, from
markdown-it-py's parse (the line ranges of its blocks): a marker-like line in a code block is
content; one read otherwise than as a block of its own (inside a paragraph, a block quote, an
HTML block that goes on below it) is reported, not skipped.

`sync` rewrites only the content lines of marked blocks; every other byte of the file (line
endings, the fence lines and their info strings, text around) stays as it was, and a second sync
changes nothing. Pure core: `find_markers`, `apply_blocks`; thin I/O shell: `sync_paths`.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt

from recorder.checking import NO_EXCHANGES, Problem, end_line
from recorder.disk.transcripts import find_files, load
from recorder.docs.render import RenderOptions, render_exchanges
from recorder.docs.select import ExchangeName, named_exchange, parse_exchange_reference
from recorder.errors import ParseError, RecorderError
from recorder.format.model import Exchange, Transcript

__all__ = [
    "Block",
    "FileReport",
    "Marker",
    "SourceError",
    "apply_blocks",
    "block_diff",
    "find_markdown",
    "find_markers",
    "load_exchanges",
    "load_selection",
    "marker_words",
    "parse_marker_options",
    "sync_paths",
    "write_text_file",
]

_MARKER = re.compile(r"^(?P<indent>\s*)<!--\s*recorder:(?P<body>.*?)-->\s*$")
# what a marker was meant to be: caught so that a slip is reported, not skipped silently
_MARKER_ATTEMPT = re.compile(r"^\s*<!--\s*recorder\s*:", re.IGNORECASE)
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_QUOTED_MARKER = re.compile(r"^\s*>[\s>]*<!--\s*recorder\s*:", re.IGNORECASE)
_MARKDOWN = MarkdownIt("commonmark")  # (html on: a marker is an HTML block)
_ONE_LINE = "a recorder marker is one line, in lower case: <!-- recorder: FILE#N [options] -->"
_NEW_FENCE_INFO = "http"


class SourceError(RecorderError):
    """A reference names a transcript or an exchange that does not exist (or does not parse)."""


@dataclass(frozen=True)
class Block:
    """A fenced code block: 0-based indexes of its fence lines, its content without the fences."""

    open_index: int
    close_index: int
    indent: str
    fence: str
    info: str
    content: str  # LF-joined lines, each ending in LF ("" for an empty block)


@dataclass(frozen=True)
class Marker:
    """One `<!-- recorder: … -->` comment and the block below it (None: not written yet)."""

    line: int  # 1-based
    reference: str
    path: str
    index: int | ExchangeName | None  # a number from 1, a name, or None (all of them)
    options: RenderOptions
    block: Block | None
    indent: str = ""  # of a block written below it
    ends_html: bool = False
    """The marker ends an HTML block that began above it (`<details>` …): a block written
    below it needs a blank line first, or CommonMark reads the fence as more HTML."""


# --------------------------------------------------------------------------- pure core


def _split_lines(text: str) -> list[str]:
    """Lines split at LF only; a CR before the LF stays on its line (so CRLF files round-trip)."""
    return text.split("\n")


def _bare(line: str) -> str:
    return line[:-1] if line.endswith("\r") else line


def parse_marker_options(words: Iterable[str]) -> RenderOptions:
    """`["headers=Content-Type,A2A-Version", "max-lines=12"]` -> RenderOptions (ValueError)."""
    settings: dict[str, object] = {}
    for word in words:
        key, equals, value = word.partition("=")
        if key in ("full", "open-end") and (not equals or value in ("true", "yes", "1")):
            settings[key.replace("-", "_")] = True
        elif key == "headers" and equals:
            settings["headers"] = tuple(h for h in value.split(",") if h)
        elif key in ("max-lines", "width") and equals:
            if not value.isascii() or not value.isdigit():
                raise ValueError(f"{key} needs a whole number, got {value!r}")
            settings[key.replace("-", "_")] = int(value)
        elif key == "pick" and equals:
            settings["pick"] = tuple(value.split(","))
        elif key == "ids" and equals:
            if value not in ("short", "full"):
                raise ValueError(f"ids= takes short or full, got {value!r}")
            settings["ids"] = value
        elif key == "only" and equals:
            if value not in ("request", "response"):
                raise ValueError(f"only= takes request or response, got {value!r}")
            settings["only"] = value
        else:
            raise ValueError(
                f"unknown option {word!r} "
                "(expected headers=, max-lines=, width=, only=, pick=, ids=, full, open-end)"
            )
    return RenderOptions(**settings)  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Layout:
    """What CommonMark makes of a Markdown text's lines (0-based): its HTML blocks and fenced
    code blocks (start -> end, exclusive), and the lines that code blocks (fenced or indented)
    hold."""

    html: dict[int, int]
    fences: dict[int, int]
    code: frozenset[int]


def _layout(text: str) -> _Layout:
    # markdown-it also ends a line at a lone CR; the lines here end at LF only, so a lone CR is
    # read as a space (one character for one: the line numbers stay the same)
    source = text.replace("\r\n", "\n").replace("\r", " ")
    html: dict[int, int] = {}
    fences: dict[int, int] = {}
    code: set[int] = set()
    for token in _MARKDOWN.parse(source):
        if token.map is None:
            continue
        start, end = token.map
        if token.type == "html_block":
            html[start] = end
        elif token.type in ("fence", "code_block"):
            code.update(range(start, end))
            if token.type == "fence":
                fences[start] = end
    return _Layout(html, fences, frozenset(code))


def _read_fence(lines: list[str], start: int, end: int) -> Block | None:
    """The fenced block CommonMark found on lines `start` to `end` (exclusive); None when no
    closing fence ends it (it runs to the end of the file or of its list item)."""
    match = _FENCE.match(_bare(lines[start]))
    assert match is not None
    indent, fence, info = match.group("indent"), match.group("fence"), match.group("info")
    closing = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
    close = end - 1
    if close <= start or not closing.match(_bare(lines[close])):
        return None
    content_lines = [_unindent(_bare(line), indent) for line in lines[start + 1 : close]]
    content = "".join(line + "\n" for line in content_lines)
    return Block(start, close, indent, fence, info, content)


def _unindent(line: str, indent: str) -> str:
    return line[len(indent) :] if indent and line.startswith(indent) else line


def find_markers(text: str, source: str = "<markdown>") -> tuple[list[Marker], list[Problem]]:
    """Every marker (outside code blocks, fenced or indented), with its block; and the markers
    that are broken, or that Markdown does not read as markers."""
    lines = _split_lines(text)
    layout = _layout(text)
    markers: list[Marker] = []
    problems: list[Problem] = []
    # each line of an HTML block -> the line it starts on, and the line after its end
    html = {line: (start, end) for start, end in layout.html.items() for line in range(start, end)}
    for index, raw in enumerate(lines):
        if index in layout.code:
            continue  # an example, not a marker
        line = _bare(raw)
        match = _MARKER.match(line)
        block = html.get(index)
        if match and block:
            if not any(_bare(after).strip() for after in lines[index + 1 : block[1]]):
                try:
                    markers.append(_read_marker(lines, index, match, block[0], layout))
                except _MarkerError as exc:
                    problems.append(Problem(source, exc.line + 1, str(exc)))
                continue
            why = _IN_HTML
        elif _MARKER_ATTEMPT.match(line):
            why = _ONE_LINE if block else _IN_TEXT
        elif _QUOTED_MARKER.match(line):
            why = _IN_QUOTE
        else:
            continue
        problems.append(Problem(source, index + 1, why))
    return markers, problems


class _MarkerError(ValueError):
    """What is wrong with a marker, and where (the 0-based line)."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


def _read_marker(
    lines: list[str], index: int, match: re.Match[str], opening: int, layout: _Layout
) -> Marker:
    """The marker on line `index` (its HTML block opening on line `opening`) and the fenced
    block below it (_MarkerError)."""
    try:
        words = marker_words(match.group("body"))
        if not words:
            raise _MarkerError("the recorder marker names no transcript", index)
        path, exchange_index = parse_exchange_reference(words[0])
        options = parse_marker_options(words[1:])
    except _MarkerError:
        raise
    except ValueError as exc:
        raise _MarkerError(f"bad recorder marker: {exc}", index) from None
    following = index + 1
    while following < len(lines) and not _bare(lines[following]).strip():
        following += 1
    block = None
    if following in layout.fences:
        block = _read_fence(lines, following, layout.fences[following])
        if block is None:
            raise _MarkerError("the code block below the marker is not closed", following)
    # a block written below it is indented as its HTML block's first line: the marker's own,
    # unless it ends a `<details>` … (where its own indent may be any)
    first = _bare(lines[opening])
    indent = first[: len(first) - len(first.lstrip(" \t"))]
    return Marker(
        index + 1, words[0], path, exchange_index, options, block, indent, opening < index
    )


_IN_HTML = (
    "this recorder marker is inside an HTML block that goes on below it, so no code block can "
    "follow it: end the HTML block with a blank line after the marker"
)
_IN_TEXT = (
    "this recorder marker is read as text of a paragraph, not as an HTML block of its own: "
    "indent it less than 4 spaces (or than its list item's text plus 4)"
)
_IN_QUOTE = "a recorder marker in a block quote is not synced: move it and its block out"


_MARKER_WORD = re.compile(r'(?:[^\s"]+|"[^"]*")+')


def marker_words(body: str) -> list[str]:
    """A marker's words: split at blanks, except inside a quoted title (ValueError when a
    quote is not closed)."""
    if body.count('"') % 2:
        raise ValueError('a quoted title is not closed (#"title")')
    return _MARKER_WORD.findall(body)


def apply_blocks(text: str, markers: Iterable[Marker], rendered: Mapping[int, str]) -> str:
    """`text` with the block of each marker (by marker line) holding its rendered content."""
    lines = _split_lines(text)
    for marker in sorted(markers, key=lambda m: m.line, reverse=True):
        content = rendered.get(marker.line)
        if content is None:
            continue
        eol = "\r" if lines[marker.line - 1].endswith("\r") else ""
        block = marker.block
        indent = block.indent if block else marker.indent
        body = [indent + line if line else line for line in content.split("\n")[:-1]]
        fence = _fence_for(body, block.fence if block else "```")
        if block is None:
            new = [indent + fence + _NEW_FENCE_INFO, *body, indent + fence]
            if marker.ends_html:
                new.insert(0, "")
            lines[marker.line : marker.line] = [line + eol for line in new]
            continue
        start, end = block.open_index, block.close_index
        if fence != block.fence:  # the content holds a line that would close the old fence
            lines[start] = block.indent + fence + block.info + eol
            lines[end] = block.indent + fence + eol
        lines[start + 1 : end] = [line + eol for line in body]
    return "\n".join(lines)


def _fence_for(body: list[str], fence: str) -> str:
    """`fence`, or a longer one when a content line would close it (CommonMark §4.5)."""
    char = fence[0]
    longest = 0
    for line in body:
        run = re.match(rf"\s*({re.escape(char)}+)", line)
        if run:
            longest = max(longest, len(run.group(1)))
    return fence if longest < len(fence) else char * (longest + 1)


_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def block_diff(path: str, marker: Marker, rendered: str) -> list[str]:
    """The unified diff of a marked block's content (`-`, as in the file at `path`) and
    `rendered` (`+`), its hunks numbered by the lines of the file."""
    assert marker.block is not None
    first = marker.block.open_index + 2  # the 1-based line of the block's first content line
    lines = difflib.unified_diff(
        marker.block.content.splitlines(),
        rendered.splitlines(),
        fromfile=f"{path}:{first} (the block)",
        tofile=f"{marker.reference} (rendered now)",
        lineterm="",
    )
    return [_renumbered(line, first - 1) for line in lines]


def _renumbered(line: str, offset: int) -> str:
    match = _HUNK.match(line)
    if match is None:
        return line
    old, old_count, new, new_count = match.groups()
    # (an empty side is numbered from the line before it: 0 there stays the line before)
    return (
        f"@@ -{int(old) + offset}{old_count or ''} +{int(new) + offset}{new_count or ''} @@"
        + line[match.end() :]
    )


# --------------------------------------------------------------------------- files


def find_markdown(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Each file named, and every `*.md` file under each folder named, in name order."""
    return find_files(paths, "*.md")


def load_exchanges(
    path: str | os.PathLike[str],
    index: int | ExchangeName | None,
    cache: dict[Path, Transcript] | None = None,
) -> tuple[Exchange, ...]:
    """Exchange `index` (from 1, or the one a name names) of the transcript at `path`, or all
    of them (SourceError)."""
    exchanges, numbers = load_selection(path, index, cache)
    return tuple(exchanges[number - 1] for number in numbers)


def load_selection(
    path: str | os.PathLike[str],
    index: int | ExchangeName | None,
    cache: dict[Path, Transcript] | None = None,
) -> tuple[tuple[Exchange, ...], tuple[int, ...]]:
    """Every exchange of the transcript at `path`, and the numbers (from 1) of the ones
    `index` names: the one at that position or of that name, or all (SourceError)."""
    key = Path(path)
    transcript = cache.get(key) if cache is not None else None
    if transcript is None:
        if not key.is_file():
            raise SourceError(_not_a_transcript(os.fspath(path)))
        try:
            transcript = load(key)
        except ParseError as exc:
            raise SourceError(str(exc)) from None
        if cache is not None:
            cache[key] = transcript
    exchanges = transcript.exchanges
    count = len(exchanges)
    if count == 0:
        try:
            at = f":{end_line(key.read_bytes())}"  # (where check says it too)
        except OSError:
            at = ""
        raise SourceError(f"{os.fspath(path)}{at}: {NO_EXCHANGES}")
    if index is None:
        return exchanges, tuple(range(1, count + 1))
    if isinstance(index, ExchangeName):
        try:
            index = named_exchange(exchanges, index)
        except ValueError as exc:
            raise SourceError(f"{os.fspath(path)}: {exc}") from None
    if index > count:
        has = f"{count} exchange" + ("" if count == 1 else "s")
        raise SourceError(f"{os.fspath(path)} has {has}: there is no #{index}")
    return exchanges, (index,)


def _not_a_transcript(name: str) -> str:
    """Why `name` cannot be read as a transcript, with the likely slip named."""
    if os.path.isdir(name):
        return f"{name}: is a folder; name one transcript file (FILE or FILE#N)"
    before = name.rpartition("#")[0]
    if before and os.path.isfile(before):
        return (
            f"{name}: no such transcript; after '#' comes an exchange number or name, "
            f"e.g. {before}#1 or {before}#SendMessage"
        )
    return f"{name}: no such transcript"


@dataclass
class FileReport:
    """What sync or check found in one Markdown file."""

    path: str
    markers: int = 0
    outdated: list[Marker] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    written: bool = False
    rendered: dict[int, str] = field(default_factory=dict)
    """What each outdated block (by its marker's line) holds once synced."""

    def diff(self, marker: Marker) -> list[str]:
        """An outdated block as a unified diff: what the file holds (`-`) against what its
        transcript renders now (`+`), hunks numbered by the file's lines; [] for a marker
        with no block below it."""
        block = marker.block
        if block is None:
            return []
        return block_diff(self.path, marker, self.rendered[marker.line])


def sync_paths(paths: Iterable[str | os.PathLike[str]], *, write: bool) -> list[FileReport]:
    """Render every marked block; with `write`, rewrite the files whose blocks changed.

    A file with a broken marker still gets its good blocks synced; the broken ones are left as
    they are and reported.
    """
    cache: dict[Path, Transcript] = {}
    reports: list[FileReport] = []
    for raw in paths:
        files = list(find_markdown([raw]))
        if not files:  # a folder without Markdown: a typo must not pass as "up to date"
            name = os.fspath(raw)
            reports.append(
                FileReport(name, problems=[Problem(name, None, "no .md files in this folder")])
            )
        reports.extend(_sync_file(path, write=write, cache=cache) for path in files)
    return reports


def _sync_file(path: Path, *, write: bool, cache: dict[Path, Transcript]) -> FileReport:
    name = os.fspath(path)
    report = FileReport(name)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        report.problems.append(Problem(name, None, f"cannot read: {exc.strerror or exc}"))
        return report
    except UnicodeDecodeError:
        report.problems.append(Problem(name, None, "not UTF-8 text"))
        return report
    markers, problems = find_markers(text, name)
    report.markers = len(markers) + len(problems)
    report.problems.extend(problems)
    rendered = report.rendered
    for marker in markers:
        source = path.parent / marker.path
        try:
            exchanges, numbers = load_selection(source, marker.index, cache)
        except SourceError as exc:
            report.problems.append(Problem(name, marker.line, str(exc)))
            continue
        content = render_exchanges(exchanges, marker.options, numbers=numbers)
        if marker.block is None or marker.block.content != content:
            report.outdated.append(marker)
            rendered[marker.line] = content
    if write and rendered:
        try:
            write_text_file(path, apply_blocks(text, report.outdated, rendered))
        except OSError as exc:
            report.problems.append(Problem(name, None, f"cannot write: {exc.strerror or exc}"))
        else:
            report.written = True
    report.problems.sort(key=lambda p: p.line or 0)
    return report


def write_text_file(path: Path, text: str) -> None:
    """Atomic write (temp file + rename) keeping an existing file's permission bits (else 0644).

    `text` is written as it is: no newline translation, so CRLF files stay CRLF.
    """
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
