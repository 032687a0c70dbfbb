"""Benchmark: the cost of the model checks per exchange (a model judge, embedding similarity),
asked of the model and answered from the cache, against the comparison without them.

    .venv/bin/python bench/bench_model_judge.py [--rounds 5] [--smoke]

The shipped goldens (`transcripts/*.http`) are compared with themselves as the player would
(`ReplayState.prepare` + `compare` per exchange, as `bench_checks.py` does), every text part
of the live replies worded anew for each round that must ask (a marker added: new answers),
with a rules file whose checks name `$..parts[*].text` everywhere. The model is the tests'
scripted OpenAI-compatible server on loopback (`tests/model_server.py`), so what is measured
is the recorder's own cost per exchange plus a loopback round trip per request: a real model
adds its latency (0.3-5 s a request, in parallel up to `--judge-jobs`) times the requests
per exchange printed here. Measured:

- `no checks`: the default rules (the fast path decides);
- `judge, asked (1 vote)`, `judge, asked (3 votes)`: a new session and an empty cache each
  round: each answer's votes, and the self-check's for each place, are requests;
- `judge, from the disk cache`: a new session each round over answers a first round asked
  (a re-run of unchanged answers: no request);
- `judge, from memory`: the same session again (a place asked twice in one run);
- `embedding, asked` and `embedding, from the disk cache`: the same for `similar: {method:
  embedding}`.

Each figure is the median of `--rounds` rounds, in microseconds per exchange, with its ratio to
`no checks` and the requests per exchange the server counted. All in one run, so the ratios
hold on a noisy machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the scripted model server

from model_server import ModelServer  # noqa: E402

from recorder.checks.model_rules import bind_model_checks  # noqa: E402
from recorder.checks.model_session import ModelSession  # noqa: E402
from recorder.disk.transcripts import load  # noqa: E402
from recorder.format.model import Response, Transcript  # noqa: E402
from recorder.replay.verdict.live import LiveReply  # noqa: E402
from recorder.replay.verdict.state import ReplayState  # noqa: E402
from recorder.rules.ruleset import DEFAULT_RULES, Rules, load_rules  # noqa: E402

GOLDENS = ROOT / "transcripts"
JUDGE = "judge: {model: bench-judge%s}"
EMBEDDING = "similar: {method: embedding, model: bench-embed, min: 0.1}"

_Files = list[tuple[str, Transcript, list[LiveReply]]]


def worded(value: Any, marker: str) -> Any:
    """`value` with every `text` member's string marked (a new answer)."""
    if isinstance(value, dict):
        return {
            k: (v + marker if k == "text" and isinstance(v, str) else worded(v, marker))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [worded(item, marker) for item in value]
    return value


def wire(response: Response, marker: str) -> LiveReply:
    """The reply as the player reads it off the wire, its JSON body's texts marked (an event
    stream's frames as recorded: their texts are judged against themselves)."""
    body = response.body
    if response.is_json and response.json is not None:
        value = worded(response.json, marker)
        body = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    return LiveReply(
        response.status,
        response.reason,
        response.headers,
        body,
        response.http_version,
        events=response.events if response.is_grpc else None,
        trailers=response.trailers,
    )


def files_worded(marker: str) -> _Files:
    found = []
    for path in sorted(GOLDENS.glob("*.http")):
        transcript = load(path)
        lives = [wire(exchange.response, marker) for exchange in transcript.exchanges]
        found.append((str(path), transcript, lives))
    return found


def one_round(files: _Files, rules: Rules) -> float:
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


def rules_with(folder: Path, item: str) -> Rules:
    path = folder / "rules.yaml"
    path.write_text(f'checks:\n  - path: "$..parts[*].text"\n    assert:\n      - {item}\n')
    return load_rules(str(path))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="one round (the test suite's run)")
    options = parser.parse_args()
    rounds = 1 if options.smoke else options.rounds
    base_files = files_worded("")
    exchanges = sum(len(t.exchanges) for _, t, _ in base_files)
    work = Path(tempfile.mkdtemp(prefix="bench-model-"))
    figures: list[tuple[str, float, float]] = []
    try:
        with ModelServer() as server:
            environ = {"OPENAI_BASE_URL": server.base_url}

            def measured(name: str, item: str, *, fresh: bool, same_session: bool = False) -> None:
                """Median seconds of `rounds` rounds; `fresh`: new answers and an empty cache
                each round (all asked); else the answers a first round asked, from the cache
                (`same_session`: that round's session, its memory)."""
                timings, requests = [], []
                kept = ModelSession(environ)
                if not fresh:
                    folder = work / f"{name}-warm"
                    folder.mkdir()
                    rules = rules_with(folder, item)
                    bound = dataclasses.replace(rules, checks=bind_model_checks(rules.checks, kept))
                    one_round(files_worded(" [warm]"), bound)
                for n in range(rounds):
                    if fresh:
                        folder = work / f"{name}-{n}"
                        folder.mkdir()
                        rules = rules_with(folder, item)
                        files = files_worded(f" [{name} {n}]")
                    else:
                        files = files_worded(" [warm]")
                    session = kept if same_session else ModelSession(environ)
                    bound = dataclasses.replace(
                        rules, checks=bind_model_checks(rules.checks, session)
                    )
                    before = len(server.requests)
                    timings.append(one_round(files, bound))
                    requests.append(len(server.requests) - before)
                    if session is not kept:
                        session.close()
                kept.close()
                figures.append((name, statistics.median(timings), statistics.median(requests)))

            one_round(base_files, DEFAULT_RULES)  # warm up: imports, compiled paths
            timings = [one_round(base_files, DEFAULT_RULES) for _ in range(rounds)]
            figures.append(("no checks", statistics.median(timings), 0))
            measured("judge, asked (1 vote)", JUDGE % "", fresh=True)
            measured("judge, asked (3 votes)", JUDGE % ", votes: 3", fresh=True)
            measured("judge, from the disk cache", JUDGE % "", fresh=False)
            measured("judge, from memory", JUDGE % "", fresh=False, same_session=True)
            measured("embedding, asked", EMBEDDING, fresh=True)
            measured("embedding, from the disk cache", EMBEDDING, fresh=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"exchanges per round   {exchanges} ({len(base_files)} golden files), {rounds} rounds")
    base = figures[0][1] / exchanges * 1e6
    for name, seconds, requests in figures:
        per_exchange = seconds / exchanges * 1e6
        print(
            f"{name:32s} {per_exchange:9.1f} us/exchange  ({per_exchange / base:7.1f}x)"
            f"  {requests / exchanges:5.2f} requests/exchange"
        )
    print('{"bench": "model-judge", "done": true}')
    return 0


if __name__ == "__main__":
    sys.exit(main())
