"""What every check is made of: `Check` (a name and its options as read, where it was read),
`CheckContext` (where it runs), `Outcome` (pass or fail, and why), `CheckType` (an entry of the
registry: how to read the options, how to run). Both the registry (`recorder.checks.vocabulary`)
and the checks it holds (`recorder.checks.judges`, …) import these, so none imports the other
back. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = [
    "TEXT_OPTIONS",
    "Check",
    "CheckContext",
    "CheckOptionError",
    "CheckType",
    "Outcome",
    "Runner",
]

TEXT_OPTIONS = frozenset(("ignore_case", "comment"))
"""Options any check item may carry beside its name (ignore_case only where it means something)."""


class CheckOptionError(ValueError):
    """A check's options are not valid; the message says why (the rules loader adds where)."""


class Outcome(NamedTuple):
    """What one check found: whether it held, and why not (or a note on why it did)."""

    passed: bool
    reason: str = ""


@dataclass(frozen=True)
class Check:
    """One check of a rules file: its name, its options as read (`CheckType.parse`), where."""

    name: str
    value: Any = field(hash=False)
    ignore_case: bool = False
    comment: str | None = None
    source: str | None = None
    """The rules file it was read from (None: made in code)."""
    line: int | None = None

    @property
    def label(self) -> str:
        """How reports name it: `contains_all`, `judge mypackage.judges:helpful`."""
        if self.name == "judge":
            spec = self.value
            return f"judge {spec.name}" if hasattr(spec, "name") else "judge"
        return self.name

    @property
    def where(self) -> str:
        """`rules.yaml:12` (or the file alone, or "the rules")."""
        if self.source is None:
            return "the rules"
        return f"{self.source}:{self.line}" if self.line else self.source


@dataclass(frozen=True)
class CheckContext:
    """What a check may want to know of where it runs (judges get it as a dict)."""

    file: str = ""
    exchange: int | None = None
    title: str = ""
    path: str = "$"
    frame: int | None = None
    request: Any = None
    """The recorded request body: its JSON value, or its text."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "exchange": self.exchange,
            "title": self.title,
            "path": self.path,
            "frame": self.frame,
            "request": self.request,
        }


Runner = Callable[[Check, Any, Any, CheckContext], Outcome]
"""(check, recorded value, live value, context) -> outcome."""


@dataclass(frozen=True)
class CheckType:
    """One entry of the registry: how to read its options, how to run it."""

    name: str
    parse: Callable[[Any], Any]
    """The options as written -> the value `run` uses; CheckOptionError when not valid."""
    run: Runner
    folds_case: bool = False
    """Whether `ignore_case` means something for it."""
    summary: str = ""
