"""`recorder play -k EXPRESSION`: which exchanges to play, as pytest's `-k` says which tests.

Grammar (pytest's `_pytest.mark.expression`, plus quoted phrases):

    expression = [expr] END
    expr       = and_expr *("or" and_expr)
    and_expr   = not_expr *("and" not_expr)
    not_expr   = "not" not_expr / "(" expr ")" / phrase / quoted
    phrase     = word *(1*WS word)          ; words side by side: one phrase, spaces kept
    word       = 1*(letter / digit / "_" / ":" / "+" / "-" / "." / "[" / "]" / "\\" / "/")
    quoted     = DQUOTE *(any but DQUOTE) DQUOTE / "'" *(any but "'") "'"

A phrase matches an exchange when it is a case-insensitive substring of `"<file> <title>"`
(`transcripts/07-cancel-task.http CancelTask: cancel it`): `-k GetTask`, `-k "not cancel"`,
`-k "(send or get) and not stream"`. `and`, `or` and `not` are keywords in lower case only,
as in pytest. Where pytest refuses two words side by side, they are one phrase here, as the
text between them is (`-k "GetTask: the review"`, what `-k` matched before it took
expressions; titles have spaces); a phrase that holds a keyword, or any text, goes in quotes
(`-k '"cancel and retry"'`). The empty expression matches everything.

A bad expression is a `SelectionError` naming the expression, the column and what was
expected there. Pure: no files, no I/O. (pytest's own parser is not imported: `_pytest` is
private, and its words could not hold a title's spaces.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["Selection", "SelectionError"]

_WORD = re.compile(r"(?:\w|[:+\-.\[\]\\/])+")
_KEYWORDS = {"and", "or", "not"}

Matcher = Callable[[str], bool]


class SelectionError(ValueError):
    """A `-k` expression that does not parse."""


@dataclass(frozen=True)
class _Token:
    kind: str  # "(", ")", "and", "or", "not", "word", "quoted", "end"
    text: str
    column: int  # 1-based
    end: int = 0  # 0-based, after it


def _tokens(text: str) -> Iterator[_Token]:
    at = 0
    while at < len(text):
        char = text[at]
        if char.isspace():
            at += 1
        elif char in "()":
            yield _Token(char, char, at + 1)
            at += 1
        elif char in "\"'":
            end = text.find(char, at + 1)
            if end < 0:
                raise _error(text, at + 1, f"the quote {char} is not closed")
            yield _Token("quoted", text[at + 1 : end], at + 1, end + 1)
            at = end + 1
        else:
            match = _WORD.match(text, at)
            if match is None:
                raise _error(text, at + 1, f"unexpected character {char!r}")
            word = match.group()
            yield _Token(word if word in _KEYWORDS else "word", word, at + 1, match.end())
            at = match.end()
    yield _Token("end", "", len(text) + 1)


_DESCRIBED = {
    "(": "left parenthesis",
    ")": "right parenthesis",
    "and": "and",
    "or": "or",
    "not": "not",
    "end": "the end",
}


def _error(text: str, column: int, what: str) -> SelectionError:
    return SelectionError(f"bad expression {text!r} at column {column}: {what}")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = list(_tokens(text))
        self.at = 0

    @property
    def current(self) -> _Token:
        return self.tokens[self.at]

    def accept(self, kind: str) -> bool:
        if self.current.kind == kind:
            self.at += 1
            return True
        return False

    def fail(self, expected: str) -> SelectionError:
        token = self.current
        phrase = token.kind in ("word", "quoted")
        got = repr(token.text) if phrase else _DESCRIBED[token.kind]
        hint = ""
        if phrase and self.tokens[self.at - 1].kind == "quoted":
            hint = "; a quoted phrase holds the whole phrase"
        return _error(self.text, token.column, f"expected {expected}; got {got}{hint}")

    def expression(self) -> Matcher:
        if self.accept("end"):
            return lambda subject: True
        matcher = self.expr()
        if not self.accept("end"):
            raise self.fail("and, or or the end")
        return matcher

    def expr(self) -> Matcher:
        parts = [self.and_expr()]
        while self.accept("or"):
            parts.append(self.and_expr())
        if len(parts) == 1:
            return parts[0]
        return lambda subject: any(part(subject) for part in parts)

    def and_expr(self) -> Matcher:
        parts = [self.not_expr()]
        while self.accept("and"):
            parts.append(self.not_expr())
        if len(parts) == 1:
            return parts[0]
        return lambda subject: all(part(subject) for part in parts)

    def not_expr(self) -> Matcher:
        if self.accept("not"):
            inner = self.not_expr()
            return lambda subject: not inner(subject)
        if self.accept("("):
            inner = self.expr()
            if not self.accept(")"):
                raise self.fail("right parenthesis")
            return inner
        first = self.current
        if first.kind == "quoted":
            self.at += 1
            phrase = first.text
        elif first.kind == "word":
            last = first
            while self.accept("word"):
                last = self.tokens[self.at - 1]
            phrase = self.text[first.column - 1 : last.end]
        else:
            raise self.fail("not, left parenthesis or a word")
        wanted = phrase.lower()
        return lambda subject: wanted in subject


@dataclass(frozen=True)
class Selection:
    """A parsed `-k` expression; `matches(file, title)` says whether it selects an exchange."""

    text: str
    _matcher: Matcher

    @classmethod
    def parse(cls, text: str) -> Selection:
        """Raises `SelectionError` naming the expression and where it is wrong."""
        return cls(text, _Parser(text).expression())

    def matches(self, file: str, title: str) -> bool:
        return self._matcher(f"{file} {title}".lower())
