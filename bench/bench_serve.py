"""The stand-in (`recorder serve`) against the real agent (`recorder kit`), same client loop.

    .venv/bin/python bench/bench_serve.py                 # ~20 s
    .venv/bin/python bench/bench_serve.py --quick         # a few seconds

Starts `recorder kit --port 0` and `recorder serve transcripts/ --listen 127.0.0.1:0`, each a
process of its own on loopback. One client (httpx, keep-alive) then runs the same loop against
each, interleaved in rounds so that drift hits both alike: per iteration, the three requests
of a conversation the goldens hold, made fresh as an SDK user makes them (uuid4 message ids
and JSON-RPC ids): SendMessage (the question: a direct message), SendMessage (a diff: a review
task, blocking), GetTask of that task. Every reply is checked (the task GetTask names is the
one the SendMessage gave). Prints requests/s and the p50 and p99 of one request for each
target, the server process's CPU time per request (utime+stime from /proc: the steadiest
figure on a shared machine; the client's own time weighs on requests/s and p50 alike for both
targets), the ratios stand-in / kit, and the stand-in's start time on the 16 goldens: from the
command to the first served agent card (a cold interpreter), median of `--starts` runs, and
how long loading the transcripts takes in process, and the matching's own cost per request
(`Book.find` in process: the candidates the index finds scored). The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
GOLDENS = ROOT / "transcripts"
RECORDER = Path(sys.executable).with_name("recorder")
WAIT = 30.0  # seconds: the longest any start or request may take
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}


def golden_body(name: str, exchange: int) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from recorder import load

    value: dict[str, Any] = json.loads(load(GOLDENS / name).exchanges[exchange].request.body)
    return value


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (Linux), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def started(*args: str, pattern: str, stream: str) -> Iterator[tuple[str, int]]:
    """A `recorder` command in a process of its own; the URL its first line names."""
    process = subprocess.Popen(
        [str(RECORDER), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        pipe = process.stdout if stream == "stdout" else process.stderr
        assert pipe is not None
        line = pipe.readline()
        found = re.search(pattern, line)
        if found is None:
            raise RuntimeError(f"recorder {args[0]} said {line!r}, not where it listens")
        yield f"http://127.0.0.1:{found.group(1)}", process.pid
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


class Loop:
    """The client loop: three requests per iteration, each timed."""

    def __init__(self) -> None:
        self.question = golden_body("02-message-reply.http", 0)
        self.review = golden_body("06-get-and-list-tasks.http", 0)
        self.get = golden_body("06-get-and-list-tasks.http", 1)

    @staticmethod
    def _fresh(body: dict[str, Any]) -> dict[str, Any]:
        fresh = json.loads(json.dumps(body))
        fresh["id"] = str(uuid.uuid4())
        message = fresh["params"].get("message")
        if message is not None:
            message["messageId"] = str(uuid.uuid4())
        return fresh

    def run(self, client: httpx.Client, url: str, iterations: int) -> list[float]:
        times: list[float] = []
        endpoint = f"{url}/a2a/jsonrpc"

        def call(body: dict[str, Any]) -> dict[str, Any]:
            started = time.perf_counter()
            reply = client.post(endpoint, json=body, headers=HEADERS)
            times.append(time.perf_counter() - started)
            value: dict[str, Any] = reply.json()
            if "result" not in value:
                raise RuntimeError(f"{url} answered {value}")
            return value

        for _ in range(iterations):
            call(self._fresh(self.question))
            task = call(self._fresh(self.review))["result"]["task"]
            get = self._fresh(self.get)
            get["params"]["id"] = task["id"]
            got = call(get)["result"]
            if got["id"] != task["id"]:
                raise RuntimeError(f"{url}: GetTask named {got['id']}, not {task['id']}")
        return times


def start_time() -> float:
    """Seconds from `recorder serve transcripts/` to its first served agent card."""
    begun = time.perf_counter()
    with started(
        "serve", str(GOLDENS), "--listen", "127.0.0.1:0", pattern=r":(\d+) ", stream="stderr"
    ) as (url, _):
        reply = httpx.get(
            f"{url}/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}, timeout=WAIT
        )
        reply.raise_for_status()
        return time.perf_counter() - begun


def load_time() -> float:
    sys.path.insert(0, str(ROOT))
    from recorder.rules.ruleset import DEFAULT_RULES
    from recorder.serve import load_stand_in

    begun = time.perf_counter()
    load_stand_in([str(GOLDENS)], DEFAULT_RULES)
    return time.perf_counter() - begun


def match_time(loop: Loop, iterations: int) -> float:
    """CPU seconds per request of the stand-in's matching alone (`Book.find`: the candidates
    scored, the best chosen, its ids handed out), in process, for the loop's requests (CPU
    time: a shared machine's other processes do not count)."""
    sys.path.insert(0, str(ROOT))
    from recorder.rules.ruleset import DEFAULT_RULES
    from recorder.serve import load_stand_in
    from recorder.serve.book import Found
    from recorder.serve.match import LiveRequest

    book = load_stand_in([str(GOLDENS)], DEFAULT_RULES).book
    headers = [("Host", "127.0.0.1:41242"), *HEADERS.items()]

    def live(body: dict[str, Any]) -> LiveRequest:
        return LiveRequest("POST", "/a2a/jsonrpc", headers, json.dumps(body).encode())

    spent = 0.0
    for _ in range(iterations):
        question, review = live(loop._fresh(loop.question)), live(loop._fresh(loop.review))
        begun = time.process_time()
        book.find(question)
        found = book.find(review)
        spent += time.process_time() - begun
        assert isinstance(found, Found)
        get = loop._fresh(loop.get)
        get["params"]["id"] = found.branch.to_live[found.step.hands_out[0][0]]
        request = live(get)
        begun = time.process_time()
        assert isinstance(book.find(request), Found)
        spent += time.process_time() - begun
    return spent / (3 * iterations)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=150, help="per round and target")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="20 iterations, 2 rounds, 1 start")
    options = parser.parse_args()
    if options.quick:
        options.iterations, options.rounds, options.starts = 20, 2, 1
    loop = Loop()
    samples: dict[str, list[float]] = {"kit": [], "serve": []}
    elapsed: dict[str, float] = {"kit": 0.0, "serve": 0.0}
    cpu_used: dict[str, float] = {"kit": 0.0, "serve": 0.0}
    with (
        started("kit", "--port", "0", pattern=r":(\d+)$", stream="stdout") as kit,
        started(
            "serve", str(GOLDENS), "--listen", "127.0.0.1:0", pattern=r":(\d+) ", stream="stderr"
        ) as serve,
        httpx.Client(timeout=WAIT) as client,
    ):
        targets = {"kit": kit, "serve": serve}
        for url, _ in targets.values():
            loop.run(client, url, 3)  # warm-up: imports, first connections
        for _ in range(options.rounds):
            for name, (url, pid) in targets.items():
                begun, cpu = time.perf_counter(), cpu_seconds(pid)
                samples[name].extend(loop.run(client, url, options.iterations))
                elapsed[name] += time.perf_counter() - begun
                cpu_used[name] += cpu_seconds(pid) - cpu
    results: dict[str, Any] = {"bench": "serve"}
    for name in targets:
        rps = len(samples[name]) / elapsed[name]
        p50, p99 = percentile(samples[name], 0.5), percentile(samples[name], 0.99)
        results[name] = {"requests": len(samples[name]), "rps": round(rps, 1)}
        results[name]["p50_ms"] = round(p50 * 1000, 3)
        results[name]["p99_ms"] = round(p99 * 1000, 3)
        cpu_ms = cpu_used[name] / len(samples[name]) * 1000
        results[name]["server_cpu_ms_per_request"] = round(cpu_ms, 3)
        print(
            f"{name:6} {len(samples[name]):6d} requests  {rps:8.1f} requests/s  "
            f"p50 {p50 * 1000:7.2f} ms  p99 {p99 * 1000:7.2f} ms  "
            f"server CPU {cpu_ms:6.3f} ms/request"
        )
    results["rps_ratio"] = round(results["serve"]["rps"] / results["kit"]["rps"], 2)
    results["p50_ratio"] = round(results["kit"]["p50_ms"] / results["serve"]["p50_ms"], 2)
    results["cpu_ratio"] = round(
        results["kit"]["server_cpu_ms_per_request"] / results["serve"]["server_cpu_ms_per_request"],
        2,
    )
    print(
        f"stand-in vs kit: {results['rps_ratio']:.2f}x the requests/s, "
        f"p50 {results['p50_ratio']:.2f}x lower, server CPU per request "
        f"{results['cpu_ratio']:.2f}x lower (one client: its own time counts in both)"
    )
    starts = [start_time() for _ in range(options.starts)]
    results["start_s_median"] = round(statistics.median(starts), 3)
    results["load_16_goldens_ms"] = round(load_time() * 1000, 2)
    results["match_us_per_request"] = round(match_time(loop, options.iterations) * 1e6, 1)
    print(
        f"recorder serve transcripts/ (16 goldens): first card after "
        f"{results['start_s_median']:.3f} s (median of {len(starts)}); "
        f"loading them in process {results['load_16_goldens_ms']:.2f} ms"
    )
    print(
        f"matching (the candidates scored, the best chosen): "
        f"{results['match_us_per_request']:.1f} us of CPU per request, in process"
    )
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
