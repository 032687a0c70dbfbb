"""What recording costs as a scenario grows: one scenario of N exchanges written through the
`TranscriptStore` in order, the write time of the first 100 against the last 100.

    .venv/bin/python bench/bench_store.py              # 5,000 exchanges, ~10 s
    .venv/bin/python bench/bench_store.py --quick      # 1,000 exchanges
    .venv/bin/python bench/bench_store.py --smoke      # 300: does it still run
    .venv/bin/python bench/bench_store.py --new-files  # each exchange a new file (µs each)
    .venv/bin/python bench/bench_store.py --new-files --baseline DIR   # against another tree
    .venv/bin/python bench/bench_store.py --new-files --blocks         # as the writer hands them

`--new-files` is the shared proxy bench's case: every request an unscripted call of its own
conversation, so every exchange claims and writes a new `NN-send-message.http` (keys
`(CONVERSATION, n)`, as `recorder.record.proxy.recording` begins them); it prints the median
and mean µs per exchange. With `--blocks` each exchange is handed to the store as its text
(`dumps_exchange`, made before the clock starts), as the recording writer hands a common
exchange (`recorder.record.proxy.direct`); a tree whose store takes no text falls back to the
exchange. `--baseline DIR` (a folder holding another `recorder` package, e.g.
`git archive main recorder | tar -x -C DIR`) runs the same measure on both trees in turn,
`--rounds` times each (3), in fresh processes, and prints both with their ratio.

Each exchange is a JSON-RPC GetTask with a ~1 KB reply, written into a temporary folder as the
proxy's writer thread writes it (the secret scrub on). Goal (issue 13): the last 100 cost at
most 1.5x the first 100 (appended, not rewritten). Prints the medians and the ratio, then one
JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
# `RECORDER_TREE`: the folder whose `recorder` package is measured (`--baseline`)
sys.path.insert(0, os.environ.get("RECORDER_TREE") or str(HERE.parent.parent))

from recorder.format.httpfile import dumps_exchange  # noqa: E402
from recorder.format.model import Exchange, Headers, Request, Response  # noqa: E402
from recorder.record.store.filetext import Block  # noqa: E402
from recorder.record.store.transcript_store import CONVERSATION, TranscriptStore  # noqa: E402
from recorder.secrets.redact import scrub_text  # noqa: E402

JSON = Headers([("Content-Type", "application/json")])
# `--dir`: where the temporary folders go (e.g. /dev/shm, to leave the disk's noise out)
WHERE = os.environ.get("BENCH_STORE_DIR") or None


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
    with tempfile.TemporaryDirectory(prefix="bench-store-", dir=WHERE) as folder:
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


def send_message(n: int) -> Exchange:
    """The proxy bench's request: an unscripted SendMessage with a small reply."""
    message = {"role": "user", "messageId": f"m-{n}", "parts": [{"text": "hello"}]}
    call = {"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": {"message": message}}
    reply = {"jsonrpc": "2.0", "id": n, "result": {**message, "role": "agent"}}
    return Exchange(
        request=Request("POST", "/", JSON, json.dumps(call).encode()),
        response=Response(200, "OK", JSON, json.dumps(reply).encode()),
        title="SendMessage",
    )


def run_new_files(count: int, fsync: bool) -> tuple[list[float], float]:
    """Write `count` exchanges, each the first of its own conversation's file."""
    # `BENCH_STORE_KEEP`: the files stay (`--baseline` removes them after every run): on ext4
    # without a journal a new inode costs more while many were freed in the last seconds
    # (the kernel skips recently deleted ones), which would tax the next run
    keep = bool(os.environ.get("BENCH_STORE_KEEP"))
    with tempfile.TemporaryDirectory(prefix="bench-store-", dir=WHERE) as scratch:
        folder = tempfile.mkdtemp(prefix="bench-store-", dir=WHERE) if keep else scratch
        store = TranscriptStore(Path(folder), scrub=scrub_text, fsync=fsync)
        store.prepare()
        secrets = {"tok-Rk4Lx9Pq-not-in-the-text": "A2A_TOKEN"}
        exchanges = [send_message(n) for n in range(count)]
        items: list[Exchange | Block] = list(exchanges)
        if os.environ.get("BENCH_STORE_BLOCKS"):
            items = [Block(dumps_exchange(item), item.title) for item in exchanges]
        times = []
        cpu = time.process_time()
        for n, item in enumerate(items):
            ticket = store.begin(into=(CONVERSATION, n), operation="SendMessage")
            start = time.perf_counter()
            store.write(ticket, item, scenario=None, operation="SendMessage", secrets=secrets)
            times.append(time.perf_counter() - start)
        cpu = time.process_time() - cpu
        assert len(os.listdir(folder)) >= count
        store.close()
    return times, cpu / count


def new_files(count: int, fsync: bool) -> dict[str, float]:
    times, cpu = run_new_files(count, fsync)
    return {
        "exchanges": count,
        "median_us": statistics.median(times) * 1e6,
        "mean_us": statistics.fmean(times) * 1e6,
        "cpu_us": cpu * 1e6,  # process CPU time per exchange, less sensitive to other loads
    }


def compare(baseline: str, count: int, fsync: bool, rounds: int) -> None:
    """This tree and `baseline` in turn, `rounds` times each, each run in a fresh process;
    the files of all runs are removed at the end."""
    trees = {"this": str(HERE.parent.parent), "baseline": baseline}
    found: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="bench-store-", dir=WHERE) as kept:
        for _ in range(rounds):
            for name, tree in trees.items():
                command = [sys.executable, str(HERE), "--new-files", "--exchanges", str(count)]
                command += ["--fsync"] if fsync else []
                env = {
                    **os.environ,
                    "RECORDER_TREE": tree,
                    "BENCH_STORE_DIR": kept,
                    "BENCH_STORE_KEEP": "1",
                }
                out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
                found[name].append(json.loads(out.stdout.splitlines()[-1]))
    best = {name: min(run["median_us"] for run in runs) for name, runs in found.items()}
    cpu = {name: min(run["cpu_us"] for run in runs) for name, runs in found.items()}
    for name, runs in found.items():
        shown = "  ".join(f"{r['median_us']:.1f} (cpu {r['cpu_us']:.1f})" for r in runs)
        print(f"{name:>8}: median µs per new-file exchange (cpu µs): {shown}")
    ratio = best["this"] / best["baseline"]
    cpu_ratio = cpu["this"] / cpu["baseline"]
    print(f"this/baseline (best medians): {ratio:.2f}x   (best cpu): {cpu_ratio:.2f}x")
    result = {
        "this_us": best["this"],
        "baseline_us": best["baseline"],
        "ratio": ratio,
        "this_cpu_us": cpu["this"],
        "baseline_cpu_us": cpu["baseline"],
        "cpu_ratio": cpu_ratio,
    }
    print(json.dumps({"bench": "store-new-files", **{k: round(v, 3) for k, v in result.items()}}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=5000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="a few hundred: does it still run")
    parser.add_argument("--fsync", action="store_true")
    parser.add_argument("--new-files", action="store_true", help="each exchange a new file")
    parser.add_argument("--blocks", action="store_true", help="exchanges handed as their text")
    parser.add_argument("--baseline", metavar="DIR", help="compare with DIR's recorder")
    parser.add_argument("--dir", help="make the temporary folders in DIR (e.g. /dev/shm)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each tree (--baseline)")
    args = parser.parse_args()
    if args.blocks:
        os.environ["BENCH_STORE_BLOCKS"] = "1"
    if args.dir:
        global WHERE
        WHERE = os.environ["BENCH_STORE_DIR"] = args.dir
    count = 300 if args.smoke else 1000 if args.quick else args.exchanges
    if args.baseline:
        compare(args.baseline, count, args.fsync, args.rounds)
        return
    if args.new_files:
        result = new_files(count, args.fsync)
        median, used = result["median_us"], result["cpu_us"]
        print(f"{count} exchanges, each a new file: median {median:.1f} µs, cpu {used:.1f} µs")
        rounded = {k: round(v, 3) for k, v in result.items()}
        print(json.dumps({"bench": "store-new-files", **rounded}))
        return
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
