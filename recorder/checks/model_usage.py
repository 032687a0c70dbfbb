"""What a run's model checks did and cost, and how the reports say it (pure).

    model judge: 12 verdicts: 10 passed, 1 failed, 1 unstable; votes unanimous in 11 of 12
      (least agreement 2/3: docs/llm/01-llm-review.http#3 $.result.task.artifacts[0]...)
      unstable: docs/llm/01-llm-review.http#4 $.result.artifacts[0]... (rules.yaml:12)
    model calls: 30 requests, 18 answers from the cache, 5,230 tokens (4,900 in, 330 out), 8.1 s

`usage_lines` are the terminal report's lines (above its summary line), `usage_json` the JSON
report's `model` member. A run whose model checks were skipped (`--no-judge`) says so in
both: skipped, never passed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Judgment", "ModelUsage", "usage_json", "usage_lines"]

_SHOWN_PLACES = 3


@dataclass(frozen=True)
class Judgment:
    """One place a model judge judged: where, by which check, and how its votes fell."""

    place: str
    """`FILE#N $.path` (`frame K` for an event stream's frame)."""
    check: str
    """Where the check is written (`rules.yaml:12`)."""
    model: str
    votes: int
    passed_votes: int
    verdict: str
    """`passed`, `failed`, `unstable` (the judge failed the recorded answer against itself)
    or `error` (no verdict: see `reason`)."""
    self_check: tuple[int, int] | None = None
    """(votes, of which passed) of the self-check; None when off."""
    reason: str = ""

    @property
    def agreement(self) -> float:
        """The share of votes that agreed with the majority (1.0: unanimous)."""
        if not self.votes:
            return 0.0
        return max(self.passed_votes, self.votes - self.passed_votes) / self.votes


@dataclass(frozen=True)
class ModelUsage:
    """What a run's model checks did and cost (the reports' figures)."""

    requests: int = 0
    cached: int = 0
    """Answers that cost no request: from the cache on disk, or asked already in this run."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    """Time spent in requests (retries' waits included), summed over the workers."""
    skipped: int = 0
    embeddings: int = 0
    """Embedding comparisons made."""
    judgments: tuple[Judgment, ...] = ()
    cache_problem: str | None = None

    @property
    def used(self) -> bool:
        return bool(self.requests or self.cached or self.skipped or self.judgments)

    def count(self, verdict: str) -> int:
        return sum(1 for j in self.judgments if j.verdict == verdict)


def usage_lines(usage: ModelUsage) -> list[str]:
    """The terminal report's lines on the model checks (none when no check asked a model)."""
    lines: list[str] = []
    if usage.skipped:
        lines.append(f"model checks: {usage.skipped} skipped (--no-judge): not judged, not passed")
    judged = usage.judgments
    if judged:
        counts = [
            f"{usage.count(verdict)} {verdict if verdict != 'error' else 'errors'}"
            for verdict in ("passed", "failed", "unstable", "error")
            if usage.count(verdict) or verdict in ("passed", "failed")
        ]
        line = f"model judge: {_plural(len(judged), 'verdict')}: {', '.join(counts)}"
        voted = [j for j in judged if j.votes > 1]
        if voted:
            unanimous = sum(1 for j in voted if j.agreement == 1.0)
            line += f"; votes unanimous in {unanimous} of {len(voted)}"
            least = min(voted, key=lambda j: j.agreement)
            if least.agreement < 1.0:
                agreed = max(least.passed_votes, least.votes - least.passed_votes)
                line += f" (least {agreed}/{least.votes}: {least.place})"
        lines.append(line)
        unstable = [j for j in judged if j.verdict == "unstable"]
        for judgment in unstable[:_SHOWN_PLACES]:
            lines.append(f"  unstable: {judgment.place} ({judgment.check})")
        if len(unstable) > _SHOWN_PLACES:
            lines.append(f"  … and {len(unstable) - _SHOWN_PLACES} more (all in --json-report)")
    if usage.embeddings:
        lines.append(f"embedding similarity: {_plural(usage.embeddings, 'comparison')}")
    if usage.requests or usage.cached:
        tokens = usage.prompt_tokens + usage.completion_tokens
        lines.append(
            f"model calls: {_plural(usage.requests, 'request')}, "
            f"{_plural(usage.cached, 'answer')} from the cache, "
            f"{tokens:,} tokens ({usage.prompt_tokens:,} in, {usage.completion_tokens:,} out), "
            f"{usage.seconds:.1f} s"
        )
    if usage.cache_problem:
        lines.append(f"  the cache is off: {usage.cache_problem}")
    return lines


def usage_json(usage: ModelUsage) -> dict[str, Any]:
    """The JSON report's `model` member."""
    return {
        "requests": usage.requests,
        "cached": usage.cached,
        "tokens": {
            "prompt": usage.prompt_tokens,
            "completion": usage.completion_tokens,
            "total": usage.prompt_tokens + usage.completion_tokens,
        },
        "seconds": round(usage.seconds, 3),
        "skipped": usage.skipped,
        "embeddings": usage.embeddings,
        "verdicts": {v: usage.count(v) for v in ("passed", "failed", "unstable", "error")},
        "judgments": [
            {
                "place": j.place,
                "check": j.check,
                "model": j.model,
                "votes": j.votes,
                "passed_votes": j.passed_votes,
                "agreement": round(j.agreement, 3),
                "verdict": j.verdict,
                "self_check": None
                if j.self_check is None
                else {"votes": j.self_check[0], "passed": j.self_check[1]},
                "reason": j.reason,
            }
            for j in usage.judgments
        ],
        "cache_problem": usage.cache_problem,
    }


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"
