"""How long `recorder kit` takes from the command to its first answer (issue 3: under 2 s).

    .venv/bin/python bench/bench_kit_start.py [--runs 5]

Each run starts `recorder kit --listen 127.0.0.1:0` as a new process (a cold interpreter: the
a2a-sdk, uvicorn and starlette imports included), reads the port from its first line, and asks
for the agent card until it answers; then stops the kit with Ctrl-C (SIGINT). Prints each run
and the median; exits 1 when the median is 2 s (`--limit`) or more. Loopback only; every wait
is bounded.
"""

from __future__ import annotations

import argparse
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

LIMIT = 2.0  # seconds, the bound
WAIT = 30.0  # seconds: the longest any one run may take before it counts as a failure
RECORDER = Path(sys.executable).with_name("recorder")


def one_start() -> float:
    """Seconds from the command to the first served agent card."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(RECORDER), "kit", "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first_line = process.stdout.readline()
        match = re.search(r":(\d+)$", first_line.strip())
        if match is None:
            raise RuntimeError(f"recorder kit said {first_line!r}, not where it listens")
        card_url = f"http://127.0.0.1:{match.group(1)}/.well-known/agent-card.json"
        # The socket listens before the line is printed, so the request waits for the server.
        reply = httpx.get(card_url, timeout=WAIT)
        reply.raise_for_status()
        return time.perf_counter() - started
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--limit", type=float, default=LIMIT, help="the median to stay under (exit 1 past it)"
    )
    args = parser.parse_args()
    times = []
    for run in range(1, args.runs + 1):
        seconds = one_start()
        times.append(seconds)
        print(f"run {run}: first agent card after {seconds:.2f} s")
    median = statistics.median(times)
    verdict = "under" if median < args.limit else "NOT under"
    print(
        f"recorder kit start: median {median:.2f} s, {args.runs} runs ({verdict} {args.limit:g} s)"
    )
    return 0 if median < args.limit else 1


if __name__ == "__main__":
    raise SystemExit(main())
