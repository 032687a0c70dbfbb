"""Checked places: where a rules file's `checks` decide instead of equality (issue 23).

`FileChecks` holds the check entries that apply to one transcript file (`recorder.checks.entries`);
`for_exchange` gives those of one exchange (None when no check applies: the comparison then
runs exactly as without checks, fast path and all). `ExchangeChecks.split` takes the recorded
and the live JSON value of a reply (or of one SSE frame) before the walk:

- each concrete place of the recorded value that an entry's path names (not looked into
  further: a checked object is checked whole) is looked up in the live value at the same keys;
  a path ending in `parts[*].text` names the text of a message or artifact: its place is the
  `parts` list, and its value the text parts joined (`recorder.rules.assembly.joined_text`), so
  an answer cut in one part one time and in two the next is checked as the one text it is;
- where the live value is there, the entry's checks run on it (`recorder.checks.run_check`);
  each failed check is a `Mismatch` at the concrete path whose `check` names the check and
  whose `message` is its reason;
- the place is then set to `null` on both sides (copies: the parsed values may be shared), so
  the walk compares everything else as usual and pairs no generated value inside the text (a
  `parts` list keeps its other parts, and its text parts become one whose `text` is null:
  the walk compares the rest of them, never their number);
- where the live value is not there, nothing changes: the walk reports it missing, as today.

`passed` keeps the places (frame, keys) where every check held, for `--update` to leave the
recorded value there (a worded answer is not rewritten on every update).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from recorder.checks.entries import CheckEntry, entries_for_file
from recorder.checks.vocabulary import Check, CheckContext, run_check
from recorder.format.jsonvalue import dumps, loads
from recorder.format.model import Exchange, Response
from recorder.jsonpath import PathMatcher, State, format_path
from recorder.replay.verdict.diff import Mismatch
from recorder.replay.verdict.live import is_frame
from recorder.rules.assembly import joined_text

__all__ = ["ExchangeChecks", "FileChecks", "Passed", "keep_recorded"]

_Keys = tuple[str | int, ...]
Passed = tuple[int | None, _Keys, Any]
"""(frame or None, keys, recorded value) of a checked place where every check held."""
_MISSING = object()
# a path that names each text part of a `parts` list: the list itself, its text joined
_PARTS_TEXT = re.compile(
    r"(?P<parts>.*(?:\.parts|\[(?:'parts'|\"parts\")\]))"
    r"(?:\[\*\]|\.\*)(?:\.text|\[(?:'text'|\"text\")\])"
)


def joined_place(path: str) -> str | None:
    """The path of the `parts` list when `path` names its text parts (`...parts[*].text`),
    whose text is then checked joined; None for any other path."""
    found = _PARTS_TEXT.fullmatch(path)
    return found.group("parts") if found else None


class FileChecks:
    """The check entries of one transcript file (see the module docstring)."""

    def __init__(self, entries: Sequence[CheckEntry], file: str) -> None:
        self.file = file
        self.entries = entries_for_file(entries, file)
        # (compiled once per file: a matcher caches its steps; a joined text's names its list)
        self._matchers = [
            (PathMatcher([joined_place(entry.path) or entry.path]), joined_place(entry.path))
            for entry in self.entries
        ]

    def __bool__(self) -> bool:
        return bool(self.entries)

    def for_exchange(self, golden: Exchange, number: int | None) -> ExchangeChecks | None:
        """The checks of exchange `number` (1-based), or None when none applies."""
        if not self.entries:
            return None
        mine = [
            _Named(entry, matcher, joined is not None)
            for entry, (matcher, joined) in zip(self.entries, self._matchers, strict=True)
            if entry.applies(self.file, number)
        ]
        if not mine:
            return None
        return ExchangeChecks(mine, self.file, number, golden)


@dataclasses.dataclass(frozen=True)
class _Named:
    """An entry that applies to an exchange, its compiled path, and whether it names a
    message's or artifact's text (its `parts` list, the text joined)."""

    entry: CheckEntry
    matcher: PathMatcher
    joined: bool


class ExchangeChecks:
    """The checks that apply to one exchange: `split` a reply's values (module docstring)."""

    def __init__(
        self,
        entries: Sequence[_Named],
        file: str,
        number: int | None,
        golden: Exchange,
    ) -> None:
        self._entries = entries
        self._file = file
        self._number = number
        self._golden = golden
        self._request: Any = _MISSING
        self.passed: list[Passed] = []
        """(frame, keys, recorded value) of each place where every check held."""

    def split(
        self,
        expected: Any,
        actual: Any,
        frame: int | None,
        out: list[Mismatch],
        *,
        run: bool = True,
    ) -> tuple[Any, Any]:
        """Run the checks of the places of `expected`; return both values with those places
        set to null (where the live one has the place), the failures appended to `out`.
        `run=False`: the places only taken out (pairs learned without a verdict)."""
        places = self._places(expected)
        for keys, checks, joined in places:
            live = _get(actual, keys)
            if live is _MISSING:
                continue  # the walk reports it missing
            recorded = _get(expected, keys)
            if joined:
                recorded_text = joined_text(recorded)
                if recorded_text is None:
                    continue  # no text recorded there: nothing to check, compared as it is
                live_text = _live_text(live)
                if live_text is _MISSING:
                    continue  # no text there live: the walk reports it missing
                checked: tuple[Any, Any] = (recorded_text, live_text)
                left, right = _text_out(recorded), _text_out(live)
                path = format_path(keys) + "[*].text"
            else:
                checked = (recorded, live)
                left = right = None
                path = format_path(keys)
            if run:
                failed = False
                for check in checks:
                    outcome = run_check(check, *checked, self._context(path, frame))
                    if not outcome.passed:
                        failed = True
                        out.append(
                            Mismatch(path, *checked, frame, outcome.reason, check=check.label)
                        )
                if not failed:
                    self.passed.append((frame, keys, recorded))
            expected = _with(expected, keys, left)
            actual = _with(actual, keys, right)
        return expected, actual

    def _context(self, path: str, frame: int | None) -> CheckContext:
        if self._request is _MISSING:
            self._request = _request_value(self._golden)
        return CheckContext(
            file=self._file,
            exchange=self._number,
            title=self._golden.title,
            path=path,
            frame=frame,
            request=self._request,
        )

    def _places(self, value: Any) -> list[tuple[_Keys, list[Check], bool]]:
        """Each concrete place of `value` some entry names, with the checks of every entry
        that names it and whether it is a joined text (a `parts` list), in document order;
        below a named place nothing is looked at."""
        found: list[tuple[_Keys, list[Check], bool]] = []
        starts = tuple(named.matcher.start() for named in self._entries)
        stack: list[tuple[Any, _Keys, tuple[State, ...]]] = [(value, (), starts)]
        while stack:
            node, keys, states = stack.pop()
            naming = [
                named
                for named, state in zip(self._entries, states, strict=True)
                if named.matcher.matches(state)
            ]
            if naming and keys:
                checks = [check for named in naming for check in named.entry.checks]
                found.append((keys, checks, any(named.joined for named in naming)))
                continue
            if isinstance(node, dict):
                children: list[tuple[str | int, Any]] = list(node.items())
            elif isinstance(node, list):
                children = list(enumerate(node))
            else:
                continue
            for key, child in reversed(children):
                next_states = tuple(
                    named.matcher.step(state, key)
                    for named, state in zip(self._entries, states, strict=True)
                )
                if any(next_states):
                    stack.append((child, (*keys, key), next_states))
        return found


def _live_text(parts: Any) -> Any:
    """The live text of a `parts` list: its text parts joined; a part's `text` that is no
    string as it is (the checks say so); `_MISSING` when no part has a text, or not a list."""
    if isinstance(parts, list):
        for part in parts:
            if isinstance(part, dict) and "text" in part and not isinstance(part["text"], str):
                return part["text"]
    text = joined_text(parts)
    return _MISSING if text is None else text


def _text_out(parts: Any) -> Any:
    """A `parts` list with its text parts as one whose text is null (what the walk compares
    of it once its joined text is checked); any other value as null."""
    if not isinstance(parts, list):
        return None
    texts = [p for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
    if not texts:
        return parts
    first = parts.index(texts[0])
    others = [p for p in parts if not (isinstance(p, dict) and isinstance(p.get("text"), str))]
    return [*others[:first], {**texts[0], "text": None}, *others[first:]]


def _get(value: Any, keys: _Keys) -> Any:
    for key in keys:
        if isinstance(value, dict) and isinstance(key, str):
            value = value.get(key, _MISSING)
        elif isinstance(value, list) and isinstance(key, int) and 0 <= key < len(value):
            value = value[key]
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def _with(value: Any, keys: _Keys, new: Any) -> Any:
    """`value` with the place `keys` set to `new`: copies along the path, shares the rest."""
    if not keys:
        return new
    key, rest = keys[0], keys[1:]
    if isinstance(value, dict) and isinstance(key, str):
        copy = dict(value)
        copy[key] = _with(value[key], rest, new)
        return copy
    if isinstance(value, list) and isinstance(key, int):
        items = list(value)
        items[key] = _with(value[key], rest, new)
        return items
    return value


def _request_value(golden: Exchange) -> Any:
    body = golden.request.body
    text = body.decode("utf-8", errors="replace")
    try:
        return loads(text) if text.strip() else None
    except ValueError:
        return text


def keep_recorded(blessed: Response, passed: Sequence[Passed]) -> Response:
    """--update: `blessed` (the live reply in recorded terms) with the recorded value put back
    at each checked place where every check held, so a worded answer that passes is not
    rewritten on every update. A place the blessed reply no longer has is left alone."""
    if not passed:
        return blessed
    if blessed.events is not None:
        by_frame: dict[int, list[Passed]] = {}
        for place in passed:
            if place[0] is not None:
                by_frame.setdefault(place[0], []).append(place)
        events = list(blessed.events)
        number = 0
        for n, event in enumerate(events):
            if not is_frame(event):
                continue
            number += 1
            mine = by_frame.get(number)
            if mine and event.data is not None:
                data = _put_back(event.data, mine)
                if data is not None:
                    events[n] = dataclasses.replace(event, data=data)
        return dataclasses.replace(blessed, events=tuple(events))
    text = _put_back(blessed.body.decode("utf-8", errors="replace"), passed)
    return blessed if text is None else dataclasses.replace(blessed, body=text.encode())


def _put_back(text: str, passed: Sequence[Passed]) -> str | None:
    """The JSON `text` with the recorded values put back, or None when nothing changed; every
    other number as `text` wrote it (`jsonvalue.JsonNumber`), a recorded one as recorded."""
    try:
        value = loads(text)
    except ValueError:
        return None
    changed = False
    for _, keys, recorded in passed:
        live = _get(value, keys)
        if live is not _MISSING and live != recorded:
            value = _with(value, keys, recorded)
            changed = True
    return dumps(value) if changed else None
