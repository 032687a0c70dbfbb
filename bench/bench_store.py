"""What recording costs as a scenario grows: one scenario of N exchanges written through the
`TranscriptStore` in order, the write time of the first 100 against the last 100.

    .venv/bin/python bench/bench_store.py              # 5,000 exchanges, ~10 s
    .venv/bin/python bench/bench_store.py --quick      # 1,000 exchanges
    .venv/bin/python bench/bench_store.py --smoke      # 300: does it still run

Each exchange is a JSON-RPC GetTask with a ~1 KB reply, written into a temporary folder as the
proxy's writer thread writes it (the secret scrub on). Goal (issue 13): the last 100 cost at
most 1.5x the first 100 (appended, not rewritten). Prints the medians and the ratio, then one
JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent))

from recorder.model import Exchange, Headers, Request, Response  # noqa: E402
from recorder.record.store import TranscriptStore  # noqa: E402
from recorder.redact import scrub_text  # noqa: E402

JSON = Headers([("Content-Type", "application/json")])


def exchange(n: int) -> Exchange:
    request = json.dumps({"jsonrpc": "2.0", "id": n, "method": "GetTask", "params": {"id": "t-1"}})
    history = [{"role": "agent", "parts": [{"text": f"step {k} of the review"}]} for k in range(8)]
    reply = {"jsonrpc": "2.0", "id": n, "result": {"id": "t-1", "history": history}}
    return Exchange(
        request=Request("POST", "/a2a/jsonrpc", JSON, request.encode()),
        response=Response(200, "OK", JSON, json.dumps(reply).encode()),
        title=f"GetTask {n}",
    )


def run(count: int, fsync: bool) -> tuple[list[float], int]:
    with tempfile.TemporaryDirectory(prefix="bench-store-") as folder:
        store = TranscriptStore(Path(folder), scrub=scrub_text, fsync=fsync)
        store.prepare()
        secrets = {"tok-Rk4Lx9Pq-not-in-the-text": "A2A_TOKEN"}
        times = []
        path = None
        for n in range(count):
            item = exchange(n)
            ticket = store.begin("long scenario")
            start = time.perf_counter()
            path = store.write(
                ticket,
                item,
                scenario="long scenario",
                operation="GetTask",
                secrets=secrets,
            )
            times.append(time.perf_counter() - start)
        assert path is not None
        size = path.stat().st_size
        store.close()
    return times, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=5000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="a few hundred: does it still run")
    parser.add_argument("--fsync", action="store_true")
    args = parser.parse_args()
    count = 300 if args.smoke else 1000 if args.quick else args.exchanges
    times, size = run(count, args.fsync)
    first = statistics.median(times[:100]) * 1e3
    last = statistics.median(times[-100:]) * 1e3
    ratio = last / first
    print(f"{count} exchanges in one scenario, file {size / 1e6:.1f} MB")
    print(f"first 100: median {first:.3f} ms   last 100: median {last:.3f} ms")
    print(f"last/first: {ratio:.2f}x (goal <= 1.5x)")
    result = {"exchanges": count, "first_ms": first, "last_ms": last, "ratio": ratio}
    print(json.dumps({"bench": "store", **{k: round(v, 4) for k, v in result.items()}}))


if __name__ == "__main__":
    main()
