"""Mismatches: what a replay found different, as values the reports print.

A `Mismatch` names one place and what was expected there:

- `path` is a JSONPath into the reply body (`$.result.task.status.state`), or into the SSE
  frame numbered `frame` (1-based) for a stream; or one of the names `status`, `header <name>`
  (lower case, e.g. `header content-type`), `frames` (the number of SSE frames), `event` (a
  frame's `event:` name), `data` (a frame's non-JSON data) and `body` (a non-JSON body, or a
  JSON body against a non-JSON one).
- `expected` and `actual` are values in their normalized form: a generated value is shown as its
  alias (`"<id:1>"`), a missing member or item as `ABSENT`.
- `message` adds what the path and the values cannot say (the real ids behind two aliases,
  which frame is missing).

This module also holds the pure helpers the comparison uses that know nothing of aliasing:
aligning two sequences of items (SSE frames, array items) so that one dropped item is reported
once instead of shifting every item after it.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from recorder.format.jsonbody import dumps

__all__ = ["ABSENT", "Mismatch", "align", "format_value", "format_values"]


class _Absent:
    """The expected or actual value of a member, item, header or frame that is not there."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __reduce__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()

_MAX_SHOWN = 200


_CONTEXT = 60  # characters shown before the first difference of two long values


def format_value(value: Any) -> str:
    """A value as a report shows it: JSON, shortened past 200 characters; `absent` for ABSENT."""
    return _window(_json_text(value), 0)


def format_values(expected: Any, actual: Any) -> tuple[str, str]:
    """Two values as a report shows them side by side. Long values are cut around their first
    difference (the same window in both), not at the start, where they may be equal."""
    expected_text, actual_text = _json_text(expected), _json_text(actual)
    if max(len(expected_text), len(actual_text)) <= _MAX_SHOWN or ABSENT in (expected, actual):
        return _window(expected_text, 0), _window(actual_text, 0)
    start = max(0, _common_prefix_length(expected_text, actual_text) - _CONTEXT)
    # a value short enough is shown whole; a long one from the same place as the other
    return (
        _window(expected_text, 0 if len(expected_text) <= _MAX_SHOWN else start),
        _window(actual_text, 0 if len(actual_text) <= _MAX_SHOWN else start),
    )


def _common_prefix_length(a: str, b: str) -> int:
    """How many characters `a` and `b` share from the start (a binary search on slices)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _json_text(value: Any) -> str:
    if value is ABSENT:
        return "absent"
    try:
        return dumps(value)  # (a number as its text said: `recorder.format.jsonbody.JsonNumber`)
    except (TypeError, ValueError):
        return repr(value)


_GLIMPSE = 40  # characters of a live value shown after a failed check's reason


def _glimpse(value: Any) -> str:
    """The start of a value, as a failed check's report line shows what it got."""
    text = _json_text(value)
    return text if len(text) <= _GLIMPSE else text[: _GLIMPSE - 1] + "…"


def _window(text: str, start: int) -> str:
    """`text` from `start`, at most 200 characters shown, with "…" where it was cut."""
    if start == 0 and len(text) <= _MAX_SHOWN:
        return text
    head = "…" if start > 0 else ""
    end = start + _MAX_SHOWN - len(head) - 1
    tail = "…" if end < len(text) else ""
    return head + text[start : end if tail else len(text)] + tail


@dataclass(frozen=True)
class Mismatch:
    """One difference between a recorded (expected) and a live (actual) reply."""

    path: str
    expected: Any
    actual: Any
    frame: int | None = None
    """1-based SSE frame number, for a mismatch inside one frame of a stream."""
    message: str = ""
    check: str | None = None
    """The check that failed here (`contains_all`, `judge mod:fn`), `message` its reason; None
    for a difference from the recorded value."""
    call: str = ""
    """The agent's own call this mismatch is in (`call 2 (model)`, `an extra call (model)`:
    `recorder.replay.calls`), put before the path; empty for the exchange's reply. A call's
    mismatch without a path is the call's as a whole: `call 2 (model): not made`."""

    def describe(self) -> str:
        """The one-line report text (without the frame, which the report puts in its heading).

        `$.result.statusUpdate.status.state: expected "TASK_STATE_COMPLETED",
        got "TASK_STATE_FAILED"` (on one line); for a failed check,
        `$.result.task.artifacts[0].parts[0].text: check contains_all failed:
        "src/payments.py:12" not found (got "Reviewed 1 file: 3 comm…")`
        """
        if self.call and not self.path:
            return f"{self.call}: {self.message}"
        if self.check is not None:
            reason = f": {self.message}" if self.message else ""
            text = f"{self.path}: check {self.check} failed{reason} (got {_glimpse(self.actual)})"
        else:
            expected, actual = format_values(self.expected, self.actual)
            text = f"{self.path}: expected {expected}, got {actual}"
            if self.message:
                text += f" ({self.message})"
        return f"{self.call} {text}" if self.call else text

    def __str__(self) -> str:
        if self.frame is not None:
            return f"frame {self.frame}: {self.describe()}"
        return self.describe()


def align(expected: Sequence[str], actual: Sequence[str]) -> list[tuple[int | None, int | None]]:
    """Pair the items of two sequences by their keys: (i, j), (i, None) missing, (None, j) extra.

    Items are paired where the keys agree (a longest-matching-block diff), and the items of a
    changed stretch are paired in order, so one dropped frame shows as one missing frame and a
    frame whose content changed is still compared with its counterpart.
    """
    matcher = difflib.SequenceMatcher(a=list(expected), b=list(actual), autojunk=False)
    pairs: list[tuple[int | None, int | None]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs.extend(zip(range(i1, i2), range(j1, j2), strict=True))
        elif tag == "replace":
            common = min(i2 - i1, j2 - j1)
            pairs.extend(zip(range(i1, i1 + common), range(j1, j1 + common), strict=True))
            pairs.extend((i, None) for i in range(i1 + common, i2))
            pairs.extend((None, j) for j in range(j1 + common, j2))
        elif tag == "delete":
            pairs.extend((i, None) for i in range(i1, i2))
        else:  # insert
            pairs.extend((None, j) for j in range(j1, j2))
    return pairs
