"""Benchmark: the cost of checks (issue 23) per exchange, and the comparison without them.

    .venv/bin/python bench/bench_checks.py [--rounds 5] [--smoke]

The shipped goldens (`transcripts/*.http`) are compared with themselves, as a live agent that
answered exactly as recorded would (each reply as compact JSON over the wire: `LiveReply`), one
`ReplayState` per file, `prepare` + `compare` per exchange: what the player pays per reply once
its bytes have arrived. Measured:

- `no checks`: the default rules (the goldens have no checks: the fast path decides);
- `checks elsewhere`: a rules file whose checks name another file: they apply to none of
  these, so this must cost what `no checks` costs (the fast path stays on);
- then checks on every reply's text parts (`$..parts[*].text`, in every file), one set at a
  time: the exchange leaves the fast path for the walk, and each check runs on each text.

Each figure is the median of `--rounds` rounds over all the goldens' exchanges, in microseconds
per exchange, with its ratio to `no checks`. (`language` only when py3langid is installed; its
model loads once, before the timing.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from recorder.checks.language import language_available
from recorder.disk.transcripts import load
from recorder.format.model import Response, Transcript
from recorder.replay.verdict.live import LiveReply
from recorder.replay.verdict.state import ReplayState
from recorder.rules.ruleset import DEFAULT_RULES, Rules, rules_from_text

GOLDENS = Path(__file__).resolve().parent.parent / "transcripts"

CHECK_SETS = {
    "checks elsewhere": (
        '{path: "$..parts[*].text", in: "no-such-file.http", assert: [contains: x]}'
    ),
    "contains_all + not_contains + length": (
        '{path: "$..parts[*].text", assert: [{contains_all: [a, e]}, '
        '{not_contains: ["I\'m sorry"]}, {length: {max: 100000}}]}'
    ),
    "matches + lines": (
        '{path: "$..parts[*].text", assert: [{matches: "\\\\w+"}, {lines: {max: 10000}}]}'
    ),
    "similar 0.5": '{path: "$..parts[*].text", assert: [similar: 0.5]}',
    "json (schema)": (
        '{path: "$..parts[*].text", assert: [{json: {schema: {type: [object, string, array,'
        ' number, boolean, "null"]}}}]}'
    ),
    "judge (python)": '{path: "$..parts[*].text", assert: [judge: "bench_checks:always"]}',
}


def always(recorded: Any, live: Any, context: dict[str, Any]) -> bool:
    """The judge of the `judge (python)` set: passes (the call is what is measured)."""
    return True


def wire(response: Response) -> LiveReply:
    body = response.body
    if response.is_json and response.json is not None:
        body = json.dumps(response.json, ensure_ascii=False, separators=(",", ":")).encode()
    # a gRPC reply as the player reads it: its version, its stream's messages, its trailers
    return LiveReply(
        response.status,
        response.reason,
        response.headers,
        body,
        response.http_version,
        events=response.events if response.is_grpc else None,
        trailers=response.trailers,
    )


def one_round(files: list[tuple[str, Transcript, list[LiveReply]]], rules: Rules) -> float:
    """Seconds for prepare + compare of every exchange of every file."""
    started = time.perf_counter()
    for path, transcript, lives in files:
        state = ReplayState(
            rules, recorded_base=None, live_base="http://localhost:41242", file=path
        )
        for number, (exchange, live) in enumerate(zip(transcript.exchanges, lives, strict=True), 1):
            state.prepare(exchange.request)
            state.compare(exchange, live, number=number)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="one round (the test suite's run)")
    options = parser.parse_args()
    rounds = 1 if options.smoke else options.rounds
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # the judge: bench_checks:always
    files = []
    for path in sorted(GOLDENS.glob("*.http")):
        transcript = load(path)
        lives = [wire(exchange.response) for exchange in transcript.exchanges]
        files.append((str(path), transcript, lives))
    exchanges = sum(len(t.exchanges) for _, t, _ in files)
    sets: dict[str, Rules] = {"no checks": DEFAULT_RULES}
    for name, entry in CHECK_SETS.items():
        sets[name] = rules_from_text(f"checks: [{entry}]\n", "bench-rules.yaml")
    if language_available():
        sets["language en"] = rules_from_text(
            'checks: [{path: "$..parts[*].text", assert: [language: en]}]\n', "bench-rules.yaml"
        )
    for rules in sets.values():
        one_round(files, rules)  # warm up: imports, compiled paths, the language model
    print(f"exchanges per round   {exchanges} ({len(files)} golden files), {rounds} rounds")
    base = 0.0
    for name, rules in sets.items():
        seconds = statistics.median(one_round(files, rules) for _ in range(rounds))
        per_exchange = seconds / exchanges * 1e6
        base = base or per_exchange
        print(f"{name:40s} {per_exchange:8.1f} us/exchange  ({per_exchange / base:5.2f}x)")
    print('{"bench": "checks", "done": true}')
    return 0


if __name__ == "__main__":
    sys.exit(main())
