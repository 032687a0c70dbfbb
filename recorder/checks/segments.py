"""A text cut into the segments that hold one statement each (pure).

A model states one finding per list item, per table row, per sentence, per line of a terse
answer; facts that sit in one segment belong together (`recorder.checks.claims`). The cut:

- a markdown table (a header row, a `---` row, then rows) gives one segment per row, its
  cells rewritten by their column's header so that a row reads as a sentence would: a number
  under `Line` becomes `line N`, a bare word under `Rule`/`Check`/`Id` becomes `[word]` (a
  rule id); the header row itself is no segment;
- a list item (`- `, `* `, `• `, `+ `, `1. `, `1) `) is one segment, its marker out, with the
  indented lines that continue it (and a line that goes on with a sentence it cut, below);
- any other line (a heading's `#`s and a quote's `>` out; with the next lines when it does
  not end a sentence and they start in lower case: a sentence cut by a line break, as text
  parts joined with one are) is cut into sentences: after `.`,
  `!` or `?` and a space (not after `e.g.`, `i.e.`, `etc.`, `vs.`), a `.` inside a token
  (`src/cart.py`) never cuts. (A `;` cuts a terse answer's findings apart, and a prose
  sentence's halves not: `recorder.checks.claims` decides, by their facts.)

Each segment keeps its offset in the text. Empty segments are dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Segment", "segments"]


@dataclass(frozen=True)
class Segment:
    """One statement: its text (markup out, table cells rewritten), where it starts in the
    whole text, and what cut it: `item`, `row` or `sentence`."""

    text: str
    start: int
    kind: str


_ITEM = re.compile(r"^(\s*)(?:[-*•+]|\d{1,3}[.)])\s+(?=\S)")
_RULE_ROW = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+|>\s*)+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|incl)\.|\b[A-Z]\.)$", re.I)
_LINE_HEADER = re.compile(r"^(?:line|lines|ln|line\s*(?:no\.?|number|#))$", re.I)
_RULE_HEADER = re.compile(r"^(?:rule|rule\s*id|check|id|code|tag)$", re.I)
_BARE_WORD = re.compile(r"^[A-Za-z][\w.-]*$")
_CONTINUED = re.compile(r"[^.!?\s]\s*$")
# (lower case, and not a path or a place: `src/cart.py:2 …` on a line of its own is a
# statement of its own)
_CONTINUES = re.compile(r"^[a-z]+(?![\w-]*[/.:#]\w)\b")


def segments(text: str) -> list[Segment]:
    """The segments of `text`, in order (see the module docstring)."""
    out: list[Segment] = []
    lines = _lines(text)
    index = 0
    while index < len(lines):
        start, line = lines[index]
        if _is_row(line) and index + 1 < len(lines) and _RULE_ROW.match(lines[index + 1][1]):
            header = _cells(line)
            index += 2
            while index < len(lines) and _is_row(lines[index][1]):
                row_start, row = lines[index]
                cells = _cells(row)
                written = " | ".join(
                    _cell(cell, header[n] if n < len(header) else "")
                    for n, cell in enumerate(cells)
                )
                _add(out, written, row_start, "row")
                index += 1
            continue
        item = _ITEM.match(line)
        if item is not None:
            indent = len(item.group(1))
            body = line[item.end() :]
            index += 1
            # an item's own indented lines continue it (not another item, not a blank line)
            while index < len(lines):
                more = lines[index][1]
                if not more.strip() or _ITEM.match(more) or _is_row(more):
                    break
                cut = _CONTINUED.search(body) and _CONTINUES.match(more)
                if len(more) - len(more.lstrip()) <= indent and not cut:
                    break
                body += " " + more.strip()
                index += 1
            _add(out, body, start + item.end(), "item")
            continue
        heading = _HEADING.match(line)
        offset = heading.end() if heading else 0
        index += 1
        # a line cut inside a sentence (text parts joined, a soft wrap) goes on in the next:
        # it does not end a sentence and the next starts in lower case
        while (
            not heading
            and index < len(lines)
            and _CONTINUED.search(line)
            and _CONTINUES.match(lines[index][1])
            and lines[index][0] == start + len(line) + 1
        ):
            line += " " + lines[index][1]
            index += 1
        for sentence_start, sentence in _sentences(line[offset:]):
            _add(out, sentence, start + offset + sentence_start, "sentence")
    return out


def _lines(text: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    position = 0
    for line in text.splitlines(keepends=True):
        found.append((position, line.rstrip("\r\n")))
        position += len(line)
    return found


def _is_row(line: str) -> bool:
    stripped = line.strip()
    return stripped.count("|") >= 2 or (stripped.startswith("|") and stripped.count("|") >= 1)


def _cells(line: str) -> list[str]:
    stripped = line.strip()
    if stripped.startswith("|"):
        stripped = stripped[1:]
    if stripped.endswith("|"):
        stripped = stripped[:-1]
    return [cell.strip() for cell in stripped.split("|")]


def _cell(cell: str, header: str) -> str:
    """A cell as a sentence would say it: `line 2` under a Line column, `[todo]` under Rule."""
    name = re.sub(r"[*_`]", "", header).strip()
    bare = cell.strip("`*_ ")
    if _LINE_HEADER.match(name) and bare.isdigit():
        return f"line {bare}"
    if _RULE_HEADER.match(name) and _BARE_WORD.match(bare):
        return f"[{bare}]"
    return cell


def _sentences(line: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    start = 0
    for cut in _SENTENCE_END.finditer(line):
        before = line[start : cut.start()]
        if _ABBREVIATION.search(before):
            continue
        found.append((start, before))
        start = cut.end()
    found.append((start, line[start:]))
    return found


def _add(out: list[Segment], text: str, start: int, kind: str) -> None:
    stripped = text.strip()
    if stripped:
        out.append(Segment(stripped, start + (len(text) - len(text.lstrip())), kind))
