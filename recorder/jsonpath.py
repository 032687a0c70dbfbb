"""A small JSONPath-like matcher for rules: which places in a JSON document a rule applies to.

Grammar (a subset of RFC 9535 JSONPath, enough to name places, not to query):

    path      = "$" *step
    step      = "." name / ".*" / ".." name / "..*" / "[" index "]" / "[*]" / "[" quoted "]"
    name      = 1*(ALPHA / DIGIT / "_" / "-" / "@")
    index     = 1*DIGIT
    quoted    = "'" *char "'" / '"' *char '"'

`..` is descendant-or-self: `$..timestamp` names every member called `timestamp` at any depth.
`*` matches any member name or any array index.

A concrete place is a tuple of keys (`str` for object members, `int` for array items). Matching
runs as a small automaton whose state is carried down a tree walk (`PathMatcher.step`), so a walk
pays nothing below places that no pattern can reach.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["ANY", "JsonPathError", "PathMatcher", "format_path", "parse_path"]


class _Any:
    def __repr__(self) -> str:
        return "*"


ANY = _Any()
"""The `*` selector."""

Selector = str | int | _Any


@dataclass(frozen=True)
class Step:
    selector: Selector
    descendant: bool = False


class JsonPathError(ValueError):
    """A path that does not follow the grammar above."""


_NAME = re.compile(r"[A-Za-z0-9_@\-]+")


def parse_path(text: str) -> tuple[Step, ...]:
    """`"$.result.tasks[*].history"` -> steps. Raises JsonPathError with the offending column."""
    if not text.startswith("$"):
        raise JsonPathError(f"a path starts with '$', got {text!r}")
    steps: list[Step] = []
    i, n = 1, len(text)
    while i < n:
        descendant = False
        if text.startswith("..", i):
            descendant = True
            i += 2
            if i < n and text[i] == "[":
                pass  # `..[*]`
            elif i < n and text[i] == "*":
                steps.append(Step(ANY, True))
                i += 1
                continue
            else:
                match = _NAME.match(text, i)
                if not match:
                    raise JsonPathError(f"expected a member name after '..' at column {i + 1}")
                steps.append(Step(match.group(), True))
                i = match.end()
                continue
        if text[i] == ".":
            i += 1
            if i < n and text[i] == "*":
                steps.append(Step(ANY, descendant))
                i += 1
                continue
            match = _NAME.match(text, i)
            if not match:
                raise JsonPathError(f"expected a member name after '.' at column {i + 1}")
            steps.append(Step(match.group(), descendant))
            i = match.end()
        elif text[i] == "[":
            close = text.find("]", i)
            if close < 0:
                raise JsonPathError(f"unclosed '[' at column {i + 1}")
            inner = text[i + 1 : close].strip()
            selector: Selector
            if inner == "*":
                selector = ANY
            elif inner.isascii() and inner.isdigit():
                if len(inner) > 18:  # (int() refuses 4,300 digits; no array is that long)
                    raise JsonPathError(f"index [{inner[:12]}…] too large at column {i + 1}")
                selector = int(inner)
            elif len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
                selector = inner[1:-1]
            else:
                raise JsonPathError(
                    f"expected [*], [N] or ['name'] at column {i + 1}, got [{inner}]"
                )
            steps.append(Step(selector, descendant))
            i = close + 1
        else:
            raise JsonPathError(f"unexpected {text[i]!r} at column {i + 1}")
    return tuple(steps)


def _selector_matches(selector: Selector, key: str | int) -> bool:
    if selector is ANY:
        return True
    return selector == key and type(selector) is type(key)


_IDENTIFIER = re.compile(r"^[A-Za-z_@][A-Za-z0-9_@\-]*$")


def format_path(keys: Iterable[str | int]) -> str:
    """`("result", "tasks", 0, "id")` -> `"$.result.tasks[0].id"`."""
    out = ["$"]
    for key in keys:
        if isinstance(key, int):
            out.append(f"[{key}]")
        elif _IDENTIFIER.match(key):
            out.append(f".{key}")
        else:
            out.append("['" + key.replace("'", "\\'") + "']")
    return "".join(out)


State = frozenset[tuple[int, int]]
"""Active (pattern index, position) pairs."""

_EMPTY: State = frozenset()


class PathMatcher:
    """A set of paths compiled together; walk with `start`, `step`, `matches`."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(patterns)
        self._steps = tuple(parse_path(p) for p in self.patterns)
        self._cache: dict[tuple[State, str | int], State] = {}
        self._accepting: dict[State, bool] = {}

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def start(self) -> State:
        return frozenset((index, 0) for index in range(len(self._steps))) if self._steps else _EMPTY

    def step(self, state: State, key: str | int) -> State:
        """The state after descending into `key`."""
        if not state:
            return _EMPTY
        cache_key = (state, key)
        cached = self._cache.get(cache_key)
        if cached is not None:
            return cached
        out: set[tuple[int, int]] = set()
        for index, position in state:
            steps = self._steps[index]
            if position >= len(steps):
                continue
            current = steps[position]
            if current.descendant:
                out.add((index, position))  # `..` may skip this level
            if _selector_matches(current.selector, key):
                out.add((index, position + 1))
        result = frozenset(out)
        if len(self._cache) < 100_000:
            self._cache[cache_key] = result
        return result

    def matches(self, state: State) -> bool:
        """True when some pattern ends exactly at this place."""
        if not state:
            return False
        cached = self._accepting.get(state)
        if cached is None:
            cached = any(position == len(self._steps[index]) for index, position in state)
            self._accepting[state] = cached
        return cached

    def match(self, keys: Iterable[str | int]) -> bool:
        """Whether the concrete place `keys` is named by one of the patterns."""
        state = self.start()
        for key in keys:
            state = self.step(state, key)
        return self.matches(state)
