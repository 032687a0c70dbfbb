"""The stand-in's cost as its recording grows: `recorder serve` of the goldens x1, x50, x100.

    .venv/bin/python bench/bench_serve_scale.py               # a few minutes
    .venv/bin/python bench/bench_serve_scale.py --smoke       # seconds: x1 and x3, few rounds

Goal (issue 39): serve's p50 for one request within 1.5x of each other for the goldens served
once, fifty and a hundred times over, each answered by matching only the recorded requests
that can match (`recorder.serve.index`), not by scoring every one; start-up time and memory
linear and small up to 10,000 exchanges.

The recording x N is N suites of the goldens, as a regression suite holds many tests: copy k
(k > 0) has " (suite k)" after each text its client sent, so its requests are other requests
(the copies' GetTask, card fetches and the like stay alike: the loop does not send those
alone); and "same xN" is the goldens copied N times unchanged (every copy's request matches
alike: identical files are one branch, `recorder.serve.book` rule 7). One `recorder serve
FOLDER --listen 127.0.0.1:0` process per recording, all at once; one client (httpx,
keep-alive) runs `bench_serve.Loop` (SendMessage, a review SendMessage, GetTask of its task,
fresh uuid ids as an SDK makes them; each reply checked) against each in turn, one iteration
at a time, the order rotating, so drift hits all alike. Printed per recording: the p50 and
p99 of one request, the ratio of each p50 to x1's, the server's CPU time per request
(utime+stime from /proc: the steadiest figure on a shared machine), the start (command to
first served card) and the server's resident memory once started; then, in this process,
the matching's own CPU time per request (`Book.find`) for each size, suites and identical
copies; and the load time and memory at `--big` exchanges. The last line is JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from bench_serve import HEADERS, WAIT, Loop, cpu_seconds, percentile, started  # noqa: E402

from recorder import Transcript, dump, load  # noqa: E402

GOLDENS = ROOT / "transcripts"


def _suffixed(value: Any, suffix: str) -> Any:
    """`value` with `suffix` after every string held by a `text` member."""
    if isinstance(value, dict):
        return {
            key: item + suffix
            if key == "text" and isinstance(item, str)
            else _suffixed(item, suffix)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_suffixed(item, suffix) for item in value]
    return value


def suite(transcript: Transcript, number: int) -> Transcript:
    """Copy `number` of a golden: its client's texts marked as that suite's (0: as it is)."""
    if number == 0:
        return transcript
    exchanges = []
    for exchange in transcript.exchanges:
        request = exchange.request
        try:
            body = json.loads(request.body) if request.is_json else None
        except ValueError:
            body = None  # (a malformed call: as recorded)
        if body is not None:
            body = _suffixed(body, f" (suite {number})")
            request = dataclasses.replace(request, body=json.dumps(body).encode())
        exchanges.append(dataclasses.replace(exchange, request=request))
    return dataclasses.replace(transcript, exchanges=tuple(exchanges))


def goldens() -> list[Transcript]:
    return [load(path) for path in sorted(GOLDENS.glob("*.http"))]


def recording(folder: Path, copies: int, *, identical: bool = False) -> Path:
    """The goldens x `copies` under `folder` (a subfolder per copy), written as files."""
    originals = goldens()
    for number in range(copies):
        into = folder / f"suite-{number:03d}"
        into.mkdir(parents=True)
        for transcript in originals:
            assert transcript.source is not None
            copied = transcript if identical else suite(transcript, number)
            dump(copied, into / Path(transcript.source).name)
    return folder


def resident_mib(pid: int) -> float:
    """A process's resident memory (VmRSS, Linux), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def first_card(url: str, begun: float) -> float:
    reply = httpx.get(
        f"{url}/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}, timeout=WAIT * 10
    )
    reply.raise_for_status()
    return time.perf_counter() - begun


def match_cpu(folder: Path, loop: Loop, iterations: int) -> float:
    """CPU seconds per request of `Book.find` alone, in process, over the loop's requests."""
    from recorder.rules.ruleset import DEFAULT_RULES
    from recorder.serve import load_stand_in
    from recorder.serve.book import Found
    from recorder.serve.match import LiveRequest

    book = load_stand_in([str(folder)], DEFAULT_RULES).book
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


def load_figures(folder: Path) -> tuple[float, float]:
    """(seconds to load the stand-in of `folder` in process, MiB of resident memory it added:
    this process's VmRSS before and after, the collector run first)."""
    from recorder.rules.ruleset import DEFAULT_RULES
    from recorder.serve import load_stand_in

    gc.collect()
    before = resident_mib(os.getpid())
    begun = time.perf_counter()
    stand_in = load_stand_in([str(folder)], DEFAULT_RULES)
    seconds = time.perf_counter() - begun
    gc.collect()
    held = resident_mib(os.getpid()) - before
    assert stand_in.exchanges > 0
    return seconds, held


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="1,50,100", help="copies of the goldens, comma-separated"
    )
    parser.add_argument("--iterations", type=int, default=60, help="per round and size")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--big", type=int, default=10_000, help="exchanges for the load figure")
    parser.add_argument("--smoke", action="store_true", help="x1 and x3, 2 rounds of 5")
    options = parser.parse_args()
    if options.smoke:
        options.sizes, options.iterations, options.rounds, options.big = "1,3", 5, 2, 300
    sizes = [int(size) for size in options.sizes.split(",")]
    loop = Loop()
    exchanges_once = sum(len(t.exchanges) for t in goldens())
    results: dict[str, Any] = {"bench": "serve-scale", "exchanges_x1": exchanges_once}
    with tempfile.TemporaryDirectory(prefix="bench-serve-scale-") as scratch:
        work = Path(scratch)
        # (name, copies) -> the recording: the suites, and the goldens copied unchanged (x1
        # is both)
        folders = {(f"x{size}", size): recording(work / f"x{size}", size) for size in sizes}
        identical = {
            size: recording(work / f"same-x{size}", size, identical=True) if size > 1 else None
            for size in sizes
        }
        folders.update(
            ((f"same x{size}", size), folder)
            for size, folder in identical.items()
            if folder is not None
        )
        names = list(folders)
        samples: dict[tuple[str, int], list[float]] = {name: [] for name in names}
        starts: dict[tuple[str, int], float] = {}
        memory: dict[tuple[str, int], float] = {}
        with contextlib.ExitStack() as stack:
            client = stack.enter_context(httpx.Client(timeout=WAIT * 10))
            servers: dict[tuple[str, int], tuple[str, int]] = {}
            for name in names:
                begun = time.perf_counter()
                servers[name] = stack.enter_context(
                    started(
                        "serve",
                        str(folders[name]),
                        "--listen",
                        "127.0.0.1:0",
                        pattern=r":(\d+) ",
                        stream="stderr",
                    )
                )
                starts[name] = first_card(servers[name][0], begun)
                memory[name] = resident_mib(servers[name][1])
            for name in names:
                loop.run(client, servers[name][0], 3)  # warm-up: first connections
            cpu = {name: cpu_seconds(servers[name][1]) for name in names}
            # one iteration against each recording in turn, the order rotating: a burst of
            # load on the machine hits every one alike
            for turn in range(options.rounds * options.iterations):
                shift = turn % len(names)
                for name in names[shift:] + names[:shift]:
                    samples[name].extend(loop.run(client, servers[name][0], 1))
            cpu = {name: cpu_seconds(servers[name][1]) - cpu[name] for name in names}
        base = percentile(samples[names[0]], 0.5)
        base_cpu = cpu[names[0]] / len(samples[names[0]])
        for name in names:
            label, size = name
            p50, p99 = percentile(samples[name], 0.5), percentile(samples[name], 0.99)
            cpu_ms = cpu[name] / len(samples[name]) * 1000
            results[label.replace(" ", "-")] = {
                "exchanges": exchanges_once * size,
                "p50_ms": round(p50 * 1000, 3),
                "p99_ms": round(p99 * 1000, 3),
                "p50_ratio": round(p50 / base, 2),
                "server_cpu_ms_per_request": round(cpu_ms, 3),
                "cpu_ratio": round(cpu_ms / 1000 / base_cpu, 2) if base_cpu else None,
                "start_s": round(starts[name], 2),
                "rss_mib": round(memory[name], 1),
            }
            print(
                f"{label:<9} {exchanges_once * size:6d} exchanges  p50 {p50 * 1000:7.2f} ms "
                f"({p50 / base:4.2f}x {names[0][0]})  p99 {p99 * 1000:7.2f} ms  "
                f"server CPU {cpu_ms:6.3f} ms/request  "
                f"start {starts[name]:6.2f} s  RSS {memory[name]:6.1f} MiB"
            )
        worst = max(results[label.replace(" ", "-")]["p50_ratio"] for label, _ in names)
        results["worst_p50_ratio"] = worst
        print(f"serve p50: at most {worst:.2f}x the {names[0][0]} figure (goal: within 1.5x)")
        # the matching alone, in process: the suites, and the goldens copied unchanged
        for kind, alike in (("suites", False), ("identical", True)):
            figures = {}
            for size in sizes:
                folder = (identical[size] if alike else None) or folders[f"x{size}", size]
                figures[f"x{size}"] = round(match_cpu(folder, loop, options.iterations) * 1e6, 1)
            results[f"match_us_{kind}"] = figures
            shown = ", ".join(f"{name} {us:.0f} us" for name, us in figures.items())
            print(f"Book.find CPU per request, {kind}: {shown}")
        copies = max(1, round(options.big / exchanges_once))
        big = recording(work / f"big-x{copies}", copies)
        seconds, held = load_figures(big)
        results["big"] = {
            "exchanges": exchanges_once * copies,
            "load_s": round(seconds, 2),
            "resident_mib": round(held, 1),
        }
        print(
            f"{exchanges_once * copies} exchanges: loaded in {seconds:.2f} s "
            f"({seconds / (exchanges_once * copies) * 1e6:.0f} us each), "
            f"{held:.1f} MiB more resident ({held * 1024 / (exchanges_once * copies):.1f} KiB each)"
        )
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
