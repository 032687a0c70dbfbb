"""Trials: `recorder play --trials N [--pass-rate R] [--confidence C] [--early-stop]`, for agents
whose answers vary run to run.

Each file is played N times against the agent, each trial with a fresh replay state (a new
`FilePlayer`: nothing learned in one trial is carried into the next). A trial in which the
exchange got no reply, or was not played (an earlier exchange of its file got none), is a
failed trial. The plan (`TrialPlan`) says how many passes an exchange needs (`needed`):

- without a confidence, ceil(R * N) (R a fraction, 0 < R <= 1, 1.0 by default: every trial);
- with `--confidence C`, R is judged with a bound: the exchange passes when the lower bound of
  its pass rate, Wilson's at confidence C (one-sided, `recorder.replay.stats`), is at least R; that
  is, when it passed in at least the fewest trials whose bound reaches R. A plan that can
  never do so (10 trials, every one passed, bound 0.79 at 0.95: never 0.9; a rate of 1 never)
  is a usage error (`TrialPlan.problem`), before anything is sent.

With `--early-stop` a file's trials stop as soon as no exchange's verdict can change: each has
passed `needed` times, or failed so often that the trials left cannot bring it there. Every
exchange's `Trials` carries its bound at the plan's confidence (0.95 without one), computed as
if the trials not played had gone against its verdict, so it holds whatever they would have
said. `combine` makes one `ExchangeResult` per exchange out of the trials' (pure); an exchange
below its rate is failed (exit status 1), never an error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from recorder.replay.reports.results import (
    ExchangeResult,
    Replies,
    TranscriptResult,
    TrialFailure,
    Trials,
)
from recorder.replay.stats import fewest_trials, provable, wilson_lower

__all__ = [
    "REPORTED_CONFIDENCE",
    "TrialPlan",
    "TrialPlayer",
    "combine",
    "needed_passes",
    "play_in_trials",
]

REPORTED_CONFIDENCE = 0.95
"""The confidence of the bound reported when the plan gives none."""


class _Plays(Protocol):
    """What `TrialPlayer` needs of a `FilePlayer`."""

    def play_until(self, index: int) -> ExchangeResult: ...


def needed_passes(runs: int, rate: float) -> int:
    """ceil(rate * runs), at least 1: the trials an exchange must pass (5 runs at 0.8: 4)."""
    # (a tolerance: 0.7 * 10 is 7.000000000000001 in floating point, and needs 7, not 8)
    return max(1, math.ceil(rate * runs - 1e-9))


@dataclass(frozen=True)
class TrialPlan:
    """`--trials N`, `--pass-rate R`, `--confidence C`, `--early-stop` (module docstring)."""

    runs: int
    rate: float = 1.0
    confidence: float | None = None
    """None: the count rule, ceil(R * N) passes; else R judged by Wilson's lower bound."""
    early_stop: bool = False

    @property
    def reported_confidence(self) -> float:
        return REPORTED_CONFIDENCE if self.confidence is None else self.confidence

    def problem(self) -> str | None:
        """Why the plan can never prove its rate (a usage error), or None."""
        if self.confidence is None or provable(self.runs, self.rate, self.confidence):
            return None
        best = wilson_lower(self.runs, self.runs, self.confidence)
        fewest = fewest_trials(self.rate, self.confidence)
        need = (
            f"it takes {fewest} trials"
            if fewest is not None
            else "no number of trials can (a rate of 1 is never proven: ask for less than 1)"
        )
        return (
            f"{self.runs} trials can never show a pass rate of {self.rate:g} at confidence "
            f"{self.confidence:g}: {self.runs} of {self.runs} passed give a lower bound of "
            f"{best:.3f}; {need}, or a lower --pass-rate or --confidence"
        )

    @property
    def needed(self) -> int:
        """The passes out of `runs` an exchange needs (module docstring)."""
        if self.confidence is None:
            return needed_passes(self.runs, self.rate)
        for passes in range(1, self.runs + 1):
            if wilson_lower(passes, self.runs, self.confidence) >= self.rate - 1e-12:
                return passes
        return self.runs + 1  # (never: `problem` says so first)

    def decided(self, passed: int, played: int) -> bool:
        """Whether the verdict can no longer change with the trials left."""
        return passed >= self.needed or passed + (self.runs - played) < self.needed

    def trials(self, passed: int, played: int, failures: tuple[TrialFailure, ...]) -> Trials:
        """The `Trials` of an exchange that passed `passed` of the `played` trials."""
        needed = self.needed
        # the trials not played counted against the verdict: the bound holds whatever they said
        counted = passed if passed >= needed else passed + (self.runs - played)
        lower = wilson_lower(counted, self.runs, self.reported_confidence)
        return Trials(
            played,
            passed,
            needed,
            failures,
            planned=self.runs,
            lower=lower,
            confidence=self.reported_confidence,
            judged_by_bound=self.confidence is not None,
            required=self.rate,
        )


def combine(
    trials: Sequence[Sequence[ExchangeResult]],
    plan: TrialPlan,
    selected: Sequence[int] | None = None,
) -> tuple[ExchangeResult, ...]:
    """One result per exchange number (those of `selected`, 1-based, or every one reported)
    out of each trial's results. An exchange no trial played keeps its first result (-x
    stopped the run before its file)."""
    by_trial = [{result.number: result for result in results} for results in trials]
    numbers = (
        list(selected)
        if selected is not None
        else sorted({number for results in by_trial for number in results})
    )
    combined = []
    for number in numbers:
        mine = [(trial, results.get(number)) for trial, results in enumerate(by_trial, 1)]
        first = next((result for _, result in mine if result is not None), None)
        if first is None:
            continue
        if not any(result is not None and result.played for _, result in mine):
            combined.append(first)
            continue
        passed = sum(1 for _, result in mine if result is not None and result.passed)
        failures = tuple(
            TrialFailure(
                trial,
                result.mismatches if result is not None else (),
                (result.error if result is not None else "not played"),
            )
            for trial, result in mine
            if result is None or not result.passed
        )
        notes = tuple(dict.fromkeys(n for _, r in mine if r is not None for n in r.notes))
        combined.append(
            ExchangeResult(
                number=number,
                title=first.title,
                line=first.line,
                seconds=sum(result.seconds for _, result in mine if result is not None),
                notes=notes,
                details=next((r.details for _, r in mine if r is not None and r.details), ()),
                replies=_shown_replies([r for _, r in mine if r is not None]),
                trials=plan.trials(passed, len(trials), failures),
                calls=first.calls,
            )
        )
    return tuple(combined)


def _shown_replies(results: Sequence[ExchangeResult]) -> Replies | None:
    """The replies a report shows for an exchange over trials: a failed trial's, else the
    first trial's."""
    failed = (r.replies for r in results if r.replies is not None and not r.passed)
    return next(failed, next((r.replies for r in results if r.replies is not None), None))


def _all_decided(
    trials: Sequence[Sequence[ExchangeResult]], plan: TrialPlan, numbers: Sequence[int] | None
) -> bool:
    passes: dict[int, int] = {}
    for results in trials:
        for result in results:
            passes[result.number] = passes.get(result.number, 0) + int(result.passed)
    wanted = list(numbers) if numbers is not None else list(passes)
    return all(plan.decided(passes.get(number, 0), len(trials)) for number in wanted)


def play_in_trials(
    play_once: Callable[[], TranscriptResult],
    plan: TrialPlan,
    selected: Sequence[int] | None = None,
) -> TranscriptResult:
    """A file's result over the plan's plays (`play_once` plays it once, afresh)."""
    played: list[TranscriptResult] = []
    for _ in range(plan.runs):
        played.append(play_once())
        if plan.early_stop and _all_decided([t.exchanges for t in played], plan, selected):
            break
    return TranscriptResult(played[0].path, combine([t.exchanges for t in played], plan, selected))


class TrialPlayer:
    """The pytest plugin's player of one file in trials: at the first exchange asked for, the
    file is played whole as the plan says (`make_player` gives a fresh `FilePlayer` per trial);
    `play_until(index)` then gives exchange `index`'s combined result."""

    def __init__(self, make_player: Callable[[], _Plays], count: int, plan: TrialPlan) -> None:
        self._make_player = make_player
        self._count = count
        self._plan = plan
        self._results: dict[int, ExchangeResult] | None = None

    def play_until(self, index: int) -> ExchangeResult:
        if self._results is None:
            numbers = range(1, self._count + 1)
            trials: list[list[ExchangeResult]] = []
            for _ in range(self._plan.runs):
                player = self._make_player()
                trials.append([player.play_until(i) for i in range(self._count)])
                if self._plan.early_stop and _all_decided(trials, self._plan, numbers):
                    break
            combined = combine(trials, self._plan, numbers)
            self._results = {result.number - 1: result for result in combined}
        return self._results[index]

    @property
    def no_reply(self) -> ExchangeResult | None:
        """None: in trials, an exchange without a reply is a failed trial of its own."""
        return None
