"""Trials: `recorder play --trials N [--pass-rate R]`, for agents whose answers vary run to run.

Each file is played N times against the agent, each trial with a fresh replay state (a new
`FilePlayer`: nothing learned in one trial is carried into the next). An exchange passes when
it passed in at least ceil(R * N) trials (`needed_passes`; R is a fraction, 0 < R <= 1, 1.0 by
default: every trial). A trial in which the exchange got no reply, or was not played (an earlier
exchange of its file got none), is a failed trial. `combine` makes one `ExchangeResult` per
exchange out of the trials' (pure); its `trials` holds the count and each failed trial's
mismatches or error, and decides the verdict: an exchange below its rate is failed (exit status
1), never an error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

from recorder.replay.results import ExchangeResult, TranscriptResult, TrialFailure, Trials

__all__ = ["TrialPlayer", "combine", "needed_passes", "play_in_trials"]


class _Plays(Protocol):
    """What `TrialPlayer` needs of a `FilePlayer`."""

    def play_until(self, index: int) -> ExchangeResult: ...


def needed_passes(runs: int, rate: float) -> int:
    """ceil(rate * runs), at least 1: the trials an exchange must pass (5 runs at 0.8: 4)."""
    # (a tolerance: 0.7 * 10 is 7.000000000000001 in floating point, and needs 7, not 8)
    return max(1, math.ceil(rate * runs - 1e-9))


def combine(
    trials: Sequence[Sequence[ExchangeResult]], rate: float, selected: Sequence[int] | None = None
) -> tuple[ExchangeResult, ...]:
    """One result per exchange number (those of `selected`, 1-based, or every one reported)
    out of each trial's results. An exchange no trial played keeps its first result (-x
    stopped the run before its file)."""
    runs = len(trials)
    by_trial = [{result.number: result for result in results} for results in trials]
    numbers = (
        list(selected)
        if selected is not None
        else sorted({number for results in by_trial for number in results})
    )
    needed = needed_passes(runs, rate)
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
                trials=Trials(runs, passed, needed, failures),
                calls=first.calls,
            )
        )
    return tuple(combined)


def play_in_trials(
    play_once: Callable[[], TranscriptResult],
    runs: int,
    rate: float,
    selected: Sequence[int] | None = None,
) -> TranscriptResult:
    """A file's result over `runs` plays (`play_once` plays it once, afresh)."""
    played = [play_once() for _ in range(runs)]
    return TranscriptResult(played[0].path, combine([t.exchanges for t in played], rate, selected))


class TrialPlayer:
    """The pytest plugin's player of one file in trials: at the first exchange asked for, the
    file is played whole `runs` times (`make_player` gives a fresh `FilePlayer` per trial);
    `play_until(index)` then gives exchange `index`'s combined result."""

    def __init__(
        self, make_player: Callable[[], _Plays], count: int, runs: int, rate: float
    ) -> None:
        self._make_player = make_player
        self._count = count
        self._runs = runs
        self._rate = rate
        self._results: dict[int, ExchangeResult] | None = None

    def play_until(self, index: int) -> ExchangeResult:
        if self._results is None:
            trials = []
            for _ in range(self._runs):
                player = self._make_player()
                trials.append([player.play_until(i) for i in range(self._count)])
            combined = combine(trials, self._rate, range(1, self._count + 1))
            self._results = {result.number - 1: result for result in combined}
        return self._results[index]

    @property
    def no_reply(self) -> ExchangeResult | None:
        """None: in trials, an exchange without a reply is a failed trial of its own."""
        return None
