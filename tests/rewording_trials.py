"""Issue 33's verification against the rewording agent, one seed at a time (shared by
tests/e2e/test_reworded_trials.py and bench/bench_learn_trials.py).

`verify_seed(kit, seed, folder)`:

1. records `converse` (the a2a-sdk client: uuid ids, no recorder header) through the real
   recorder in front of `RewordingAgent(kit, seed)`;
2. `learn`s from the same agent (its default loop: 4 runs and more until stable);
3. plays the recording with the learned rules `trials` times (`recorder play --trials`): the
   failed exchange-trials are false alarms;
4. for each regression of `REGRESSIONS`, plays the file of the answer it breaks once against
   `RewordingAgent(kit, seed, regression)` with the learned rules: caught when a mismatch is
   at that answer's path (a structure regression: anywhere in that exchange).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from rewording_agent import ANSWERS, REGRESSIONS, Answer, RewordingAgent, converse

from recorder import load
from recorder.kit import KitServer
from recorder.learn import learn
from recorder.learn.run import Learned
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.replay.run import play
from recorder.replay.trials import TrialPlan
from recorder.replay.verdict.diff import Mismatch
from recorder.rules.ruleset import Rules, rules_from_text

__all__ = ["PRIMARY", "SeedOutcome", "catch_table", "judge_seed", "record_seed", "verify_seed"]

TIMEOUT = 10.0
PRIMARY = {
    "review": "review",
    "languages": "languages",
    "rules": "rules",
    "ask": "ask",
    "stream": "stream",
}
"""The answer each regression target is judged at (a review regression at the review)."""
_BY_NAME = {answer.name: answer for answer in ANSWERS}


@dataclass
class SeedOutcome:
    """What one seed gave: the learn, the false alarms, each regression's catch."""

    seed: int
    learned: Learned | None
    rules_text: str
    exchange_trials: int = 0
    false_alarms: list[str] = field(default_factory=list)
    """`FILE#N trial K: mismatch` for each failed exchange-trial."""
    caught: dict[str, str | None] = field(default_factory=dict)
    """regression -> the mismatch line at its answer's path, or None (not caught there)."""
    missed_elsewhere: dict[str, list[str]] = field(default_factory=dict)
    """regression -> the mismatches it caused at other places (not its answer's path)."""
    seconds: dict[str, float] = field(default_factory=dict)


def _file(folder: Path, answer: Answer) -> Path:
    for path in sorted(folder.glob("*.http")):
        if answer.needle.encode() in load(path).exchanges[0].request.body:
            return path
    raise AssertionError(f"no transcript sends {answer.needle!r}")


def _pattern(path: str) -> str:
    return re.sub(r"\[\d+\]", "[*]", path)


def _at_answer(mismatch: Mismatch, answer: Answer, structural: bool) -> bool:
    return structural or _pattern(mismatch.path) == answer.path


def record_seed(agent: RewordingAgent, folder: Path) -> Path:
    """`converse` recorded through the recorder in front of `agent`: the folder. (The same
    agent goes on to be learned from: its wordings go on, never starting again.)"""
    recorded = folder / "rec"
    with ProxyServer(create_proxy_app(agent.url, out=recorded)) as server:
        converse(server.url)
    return recorded


def verify_seed(
    kit: KitServer,
    seed: int,
    folder: Path,
    *,
    trials: int = 10,
    regressions: tuple[str, ...] = tuple(REGRESSIONS),
) -> SeedOutcome:
    """Record, learn, play in trials and against each regression (module docstring)."""
    rules_file = folder / "learned.yaml"
    with RewordingAgent(kit, seed) as agent:
        recorded = record_seed(agent, folder)
        started = time.perf_counter()
        learned = learn(
            [recorded],
            agent=agent.url,
            environ={"A2A_TOKEN": kit.token},
            timeout=TIMEOUT,
            output=str(rules_file),
        )
        learn_seconds = time.perf_counter() - started
        outcome = judge_seed(
            kit, agent, recorded, rules_file, learned, trials=trials, regressions=regressions
        )
    outcome.seconds["learn"] = learn_seconds
    return outcome


def judge_seed(
    kit: KitServer,
    agent: RewordingAgent,
    recorded: Path,
    rules_file: Path,
    learned: Learned | None,
    *,
    trials: int = 10,
    regressions: tuple[str, ...] = tuple(REGRESSIONS),
) -> SeedOutcome:
    """Play `recorded` with the rules of `rules_file` in `trials` trials against `agent` (the
    seed's, as learned from), then against each regression (module docstring)."""
    rules_text = rules_file.read_text()
    rules = rules_from_text(rules_text, str(rules_file))
    environ = {"A2A_TOKEN": kit.token}
    outcome = SeedOutcome(agent.seed, learned, rules_text)
    started = time.perf_counter()
    result = play(
        [recorded], agent=agent.url, rules=rules, environ=environ, timeout=TIMEOUT,
        trials=TrialPlan(trials),
    )  # fmt: skip
    outcome.seconds["trials"] = time.perf_counter() - started
    for transcript in result.transcripts:
        name = Path(transcript.path).name
        for exchange in transcript.exchanges:
            assert exchange.trials is not None
            outcome.exchange_trials += exchange.trials.runs
            for failure in exchange.trials.failures:
                lines = [m.describe() for m in failure.mismatches] or [failure.error or "?"]
                outcome.false_alarms.append(
                    f"{name}#{exchange.number} trial {failure.trial}: {lines[0]}"
                )
    started = time.perf_counter()
    for name in regressions:
        _regression(kit, agent.seed, name, recorded, rules, outcome)
    outcome.seconds["regressions"] = time.perf_counter() - started
    return outcome


def _regression(
    kit: KitServer, seed: int, name: str, recorded: Path, rules: Rules, outcome: SeedOutcome
) -> None:
    regression = REGRESSIONS[name]
    answer = _BY_NAME[PRIMARY[regression.target]]
    structural = regression.kind == "structure" and name != "chunk-lost"
    with RewordingAgent(kit, seed, name) as broken:
        result = play(
            [_file(recorded, answer)],
            agent=broken.url,
            rules=rules,
            environ={"A2A_TOKEN": kit.token},
            timeout=TIMEOUT,
        )
    found: str | None = None
    elsewhere: list[str] = []
    for transcript in result.transcripts:
        for exchange in transcript.exchanges:
            for mismatch in exchange.mismatches:
                line = f"#{exchange.number}: {mismatch.describe()}"
                if exchange.number == answer.exchange and _at_answer(mismatch, answer, structural):
                    found = found or line
                else:
                    elsewhere.append(line)
            if exchange.error is not None:
                elsewhere.append(f"#{exchange.number}: error: {exchange.error}")
    outcome.caught[name] = found
    outcome.missed_elsewhere[name] = elsewhere


def catch_table(outcomes: list[SeedOutcome]) -> str:
    """A table: each regression, the seeds it was caught in at its answer's path, and a
    sample mismatch line (or what it caused elsewhere when it was not caught)."""
    rows = ["regression | kind | caught | sample"]
    for name, regression in REGRESSIONS.items():
        caught = [o for o in outcomes if o.caught.get(name)]
        sample = next((o.caught[name] for o in caught), None)
        if sample is None:
            other = next(
                (o.missed_elsewhere[name] for o in outcomes if o.missed_elsewhere.get(name)), []
            )
            sample = f"(not caught; elsewhere: {other[0] if other else 'nothing'})"
        rows.append(f"{name} | {regression.kind} | {len(caught)}/{len(outcomes)} | {sample[:160]}")
    return "\n".join(rows)
