"""Benchmark: `recorder learn`'s time, and what checks cost `recorder play` per exchange (issue 33).

    .venv/bin/python bench/bench_learn_trials.py [--seed 1] [--rounds 5] [--smoke]

The agent is the rewording agent of the tests (`tests/rewording_agent.py`: the kit behind a
proxy that words every answer anew, as a model would), the recording an unscripted client's
conversation with it through the recorder (`converse`: 8 exchanges in 6 files). Measured in one
run, so that the ratios hold on a noisy machine:

- `play, exact`: one `recorder play` of the recording with the default rules (it fails where
  the wording changed: the cost of comparing, not the verdict, is measured), per exchange;
- `play, learned checks`: the same with the rules `learn` wrote (facts, claims, bands, the
  assembled places), per exchange, and its ratio to `play, exact`;
- `compare, exact` and `compare, learned checks`: the comparison alone (no network), the
  recording against a second recording of the same conversation (`ReplayState.compare` per
  exchange, as the player does once a reply has arrived), per exchange, and their ratio; and
  `compare, identical`: the recording against itself with the default rules (the fast path
  of an agent that answers as recorded), the floor the checks are also put beside;
- `learn`: its wall time, the live runs it played (it plays more while the proposal is not
  stable) and its ratio to as many exact plays of the recording: what proposing and the
  held-out validation add to the live runs.

Figures are medians of `--rounds` rounds (learn: one run), in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from rewording_agent import RewordingAgent, converse

from recorder.disk.transcripts import load
from recorder.kit import start_kit
from recorder.learn import learn
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.replay.run import play
from recorder.replay.verdict.live import LiveReply
from recorder.replay.verdict.state import ReplayState
from recorder.rules.ruleset import DEFAULT_RULES, Rules, rules_from_text


def _record(agent: RewordingAgent, folder: Path) -> Path:
    with ProxyServer(create_proxy_app(agent.url, out=folder)) as server:
        converse(server.url)
    return folder


def _compare_round(recorded: Path, other: Path, rules: Rules) -> float:
    """Seconds to compare every exchange of `recorded` with its twin in `other`."""
    pairs = []
    for path in sorted(recorded.glob("*.http")):
        twin = other / path.name
        pairs.append((str(path), load(path), load(twin)))
    started = time.perf_counter()
    for path, transcript, twin in pairs:
        state = ReplayState(rules, recorded_base=None, live_base="http://127.0.0.1", file=path)
        for number, (exchange, live) in enumerate(
            zip(transcript.exchanges, twin.exchanges, strict=True), 1
        ):
            reply = live.response
            state.prepare(exchange.request)
            state.compare(
                exchange,
                LiveReply(
                    reply.status, reply.reason, reply.headers, reply.body, events=reply.events
                ),
                number=number,
            )
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--smoke", action="store_true", help="one round, learn from 2 runs (the suite's run)"
    )
    options = parser.parse_args()
    rounds = 1 if options.smoke else options.rounds
    with tempfile.TemporaryDirectory() as tmp, start_kit(grpc_port=None) as kit:
        folder = Path(tmp)
        environ = {"A2A_TOKEN": kit.token}
        with RewordingAgent(kit, options.seed) as agent:
            recorded = _record(agent, folder / "rec")
            twin = _record(agent, folder / "twin")
            exchanges = sum(len(load(p).exchanges) for p in recorded.glob("*.http"))

            def play_round(rules: Rules) -> float:
                started = time.perf_counter()
                play([recorded], agent=agent.url, rules=rules, environ=environ)
                return time.perf_counter() - started

            play_round(DEFAULT_RULES)  # warm up: imports, connections
            started = time.perf_counter()
            learned = learn(
                [recorded],
                agent=agent.url,
                environ=environ,
                output=str(folder / "rules.yaml"),
                runs=2 if options.smoke else 4,
                max_runs=2 if options.smoke else None,
            )
            learn_seconds = time.perf_counter() - started
            rules = rules_from_text((folder / "rules.yaml").read_text(), "rules.yaml")
            _compare_round(recorded, twin, rules)  # warm up: the language model, the stop words
            figures = {}
            for name, measure in (
                ("play, exact", lambda: play_round(DEFAULT_RULES)),
                ("play, learned checks", lambda: play_round(rules)),
                ("compare, exact", lambda: _compare_round(recorded, twin, DEFAULT_RULES)),
                ("compare, learned checks", lambda: _compare_round(recorded, twin, rules)),
                ("compare, identical", lambda: _compare_round(recorded, recorded, DEFAULT_RULES)),
            ):
                figures[name] = statistics.median(measure() for _ in range(rounds)) / exchanges
    print(f"exchanges per play    {exchanges} (seed {options.seed}), {rounds} rounds")
    for name in figures:
        base = figures["play, exact" if name.startswith("play") else "compare, exact"]
        print(f"{name:28s} {figures[name] * 1e3:9.2f} ms/exchange  ({figures[name] / base:5.2f}x)")
    plays = learned.runs * figures["play, exact"] * exchanges
    print(
        f"{'learn':28s} {learn_seconds:9.2f} s, {learned.runs} live runs"
        f"  ({learn_seconds / plays:5.2f}x as many exact plays)"
    )
    result = {
        "bench": "learn-trials",
        "play_checks_ratio": round(figures["play, learned checks"] / figures["play, exact"], 2),
        "compare_checks_ratio": round(
            figures["compare, learned checks"] / figures["compare, exact"], 2
        ),
        "compare_checks_vs_identical": round(
            figures["compare, learned checks"] / figures["compare, identical"], 2
        ),
        "learn_seconds": round(learn_seconds, 2),
        "learn_runs": learned.runs,
        "learn_plays_ratio": round(learn_seconds / plays, 2),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
