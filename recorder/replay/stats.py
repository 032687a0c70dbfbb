"""Rates judged from few trials: Wilson's score interval (pure).

A replay over trials sees an agent pass k of n times; `learn` sees k of n held-out runs fail.
Either way the rate itself is unknown, and k/n from a handful of trials says little. Wilson's
score interval (E. B. Wilson, "Probable inference, the law of succession, and statistical
inference", JASA 1927) bounds it at a stated confidence, and stays inside 0..1 and sensible at
k = 0 and k = n, where the normal approximation fails:

    centre = (p + z²/2n) / (1 + z²/n)
    half   = z / (1 + z²/n) · sqrt(p(1-p)/n + z²/4n²)        p = k/n

with z the standard normal quantile of the confidence (one-sided for a bound: 1.645 at 0.95).
`provable` answers the usage question a2a-proof asks before a run: can n trials, all passed,
ever show a pass rate of at least r at this confidence (the lower bound of n of n passed is
n / (n + z²))?
"""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["fewest_trials", "provable", "wilson_interval", "wilson_lower", "z_score"]


def z_score(confidence: float, *, two_sided: bool = False) -> float:
    """The standard normal quantile for `confidence` (0 < confidence < 1): one-sided (a
    bound) by default, 1.645 at 0.95; two-sided (an interval) 1.960 at 0.95."""
    if not 0 < confidence < 1:
        raise ValueError(f"a confidence is between 0 and 1, got {confidence}")
    tail = (1 - confidence) / 2 if two_sided else 1 - confidence
    return NormalDist().inv_cdf(1 - tail)


def _interval(successes: int, trials: int, z: float) -> tuple[float, float]:
    if trials <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= trials:
        raise ValueError(f"{successes} successes in {trials} trials")
    p = successes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson_lower(successes: int, trials: int, confidence: float) -> float:
    """The one-sided lower bound of the rate at `confidence` (0 for no trials)."""
    return _interval(successes, trials, z_score(confidence))[0] if trials else 0.0


def wilson_interval(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    """The two-sided interval of the rate at `confidence` ((0, 1) for no trials)."""
    return _interval(successes, trials, z_score(confidence, two_sided=True))


def provable(trials: int, rate: float, confidence: float) -> bool:
    """Whether `trials` trials, every one passed, give a lower bound of at least `rate`."""
    return wilson_lower(trials, trials, confidence) >= rate - 1e-12


def fewest_trials(rate: float, confidence: float, limit: int = 100_000) -> int | None:
    """The fewest trials that can prove `rate` at `confidence` (all passed), or None when
    even `limit` cannot (a rate of 1 never can)."""
    if rate >= 1:
        return None
    z2 = z_score(confidence) ** 2
    # n / (n + z²) >= rate  <=>  n >= rate·z² / (1 - rate)
    fewest = max(1, math.ceil(rate * z2 / (1 - rate) - 1e-9))
    while fewest <= limit and not provable(fewest, rate, confidence):
        fewest += 1  # (the float rounding of the closed form, a step at most)
    return fewest if fewest <= limit else None
