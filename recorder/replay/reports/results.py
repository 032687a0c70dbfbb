"""What a replay finds: the verdict on each exchange, each file and the whole run, and the
`Listener` a report implements to hear them while the run goes on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from recorder.replay.plan import PlanItem
from recorder.replay.verdict.diff import Mismatch

__all__ = [
    "ExchangeResult",
    "Listener",
    "PlayResult",
    "Replies",
    "TranscriptResult",
    "TrialFailure",
    "Trials",
]


@dataclass(frozen=True)
class TrialFailure:
    """One trial (1-based) in which an exchange did not pass: its mismatches, or its error
    (no reply, not played)."""

    trial: int
    mismatches: tuple[Mismatch, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class Trials:
    """`--trials N`: how an exchange fared over `runs` plays of its file (see
    `recorder.replay.trials`); it passes when at least `needed` trials passed."""

    runs: int
    """The trials played (fewer than `planned` when `--early-stop` stopped them)."""
    passed: int
    needed: int
    failures: tuple[TrialFailure, ...] = ()
    planned: int = 0
    """--trials N (0: as `runs`)."""
    lower: float = 0.0
    """Wilson's lower bound of the pass rate at `confidence`, the trials not played counted
    against the verdict."""
    confidence: float = 0.95
    judged_by_bound: bool = False
    """--confidence was given: `needed` is the fewest passes whose bound reaches the rate."""
    required: float = 1.0
    """--pass-rate R."""

    @property
    def stopped_early(self) -> bool:
        return self.runs < self.planned

    @property
    def rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0

    @property
    def enough(self) -> bool:
        return self.passed >= self.needed


@dataclass(frozen=True)
class Replies:
    """The recorded and the live reply of an exchange as lines, normalized as compared
    (`recorder.replay.reports.verbose.normalized_replies`): what the HTML report shows side by
    side."""

    recorded: tuple[str, ...]
    live: tuple[str, ...]


@dataclass(frozen=True)
class ExchangeResult:
    """The verdict on one exchange: its 1-based number in the file, title and mismatches.

    `error` says why there is no verdict: the exchange got no whole reply, or (`played` false)
    it was not sent because an earlier exchange of its file got none. `notes` explain what
    the mismatches may follow from (a request that had to carry a recorded id as it was).
    """

    number: int
    title: str
    line: int | None
    mismatches: tuple[Mismatch, ...] = ()
    seconds: float = 0.0
    error: str | None = None
    error_type: str = "no-reply"
    """What kind of error `error` is: `no-reply` (the agent gave no whole reply) or
    `unset-variable` (not sent: a credential's variable is not set)."""
    played: bool = True
    notes: tuple[str, ...] = ()
    details: tuple[str, ...] = ()
    """-v: a unified diff of the recorded and the live reply of a mismatch, normalized (-vv:
    both whole; -vvv: the request as sent too), as lines to print under it."""
    agent_down: bool = False
    """Not sent: the agent was known gone and one quick connection attempt failed (the
    terminal report sums up a run of such files in one line, `recorder.replay.reports.recap`)."""
    trials: Trials | None = None
    """`--trials N`: the verdict is the trials' (their mismatches and errors are in it)."""
    replies: Replies | None = None
    """Asked for (`play(replies=True)`, the HTML report) and the exchange got a reply: both
    replies, normalized (with trials: a failed trial's, else the first)."""
    calls: int = 0
    """The calls the agent made to its downstreams while it answered (`# @call` blocks),
    stood in for and compared: their mismatches are among `mismatches` (`Mismatch.call`)."""

    @property
    def passed(self) -> bool:
        if self.trials is not None:
            return self.trials.enough
        return not self.mismatches and self.error is None

    @property
    def failed(self) -> bool:
        """Played and compared, with mismatches (or, with trials, below its pass rate)."""
        if self.trials is not None:
            return not self.trials.enough
        return bool(self.mismatches) and self.error is None


@dataclass(frozen=True)
class TranscriptResult:
    """The verdicts on the selected exchanges of one file; `updated` when --update rewrote it,
    `not_updated` why --update left a file that differs as it was."""

    path: str
    exchanges: tuple[ExchangeResult, ...]
    updated: bool = False
    not_updated: str | None = None

    @property
    def passed(self) -> bool:
        return all(e.passed for e in self.exchanges)

    @property
    def failed(self) -> tuple[ExchangeResult, ...]:
        """The exchanges that did not pass: mismatches, errors, not played."""
        return tuple(e for e in self.exchanges if not e.passed)

    def stops_run(self, *, update: bool) -> bool:
        """-x: a file that makes the run fail: an error, or a mismatch (--update: a file
        left as it was)."""
        if any(e.error is not None for e in self.exchanges):
            return True
        return bool(self.not_updated) if update else not self.passed


@dataclass(frozen=True)
class PlayResult:
    """Every transcript's result, in name order."""

    transcripts: tuple[TranscriptResult, ...]
    update: bool = False
    selected_files: int = 0
    """Files with an exchange to play before sharding: a shard may be empty when it is not."""

    @property
    def exchange_count(self) -> int:
        return sum(len(t.exchanges) for t in self.transcripts)

    @property
    def call_count(self) -> int:
        """The agent's calls stood in for, in the exchanges reported."""
        return sum(e.calls for t in self.transcripts for e in t.exchanges)

    @property
    def failed_count(self) -> int:
        """Exchanges played and compared with mismatches."""
        return sum(1 for t in self.transcripts for e in t.exchanges if e.failed)

    @property
    def error_count(self) -> int:
        """Exchanges that got no whole reply."""
        return sum(1 for t in self.transcripts for e in t.exchanges if e.error and e.played)

    @property
    def not_played_count(self) -> int:
        """Exchanges not sent because an earlier one of their file got no reply."""
        return sum(1 for t in self.transcripts for e in t.exchanges if not e.played)

    @property
    def passed_count(self) -> int:
        return sum(1 for t in self.transcripts for e in t.exchanges if e.passed)

    @property
    def passed(self) -> bool:
        return self.passed_count == self.exchange_count

    @property
    def not_updated_count(self) -> int:
        return sum(1 for t in self.transcripts if t.not_updated)


class Listener(Protocol):
    """What the player tells a report while it runs (called from worker threads)."""

    def started(self, items: Sequence[PlanItem]) -> None: ...

    def exchange_done(self, item: PlanItem, result: ExchangeResult) -> None: ...

    def transcript_done(self, result: TranscriptResult) -> None:
        """Called once per file, in name order (also when files run in parallel)."""
