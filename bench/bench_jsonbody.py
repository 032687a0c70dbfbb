"""What recording a JSON body costs: `canonical_json_body` (the canonical text of a body, every
scalar as it came) on bodies as agents send them, in MB/s.

    .venv/bin/python bench/bench_jsonbody.py                          # this tree
    .venv/bin/python bench/bench_jsonbody.py --baseline /tmp/jsonbody.py --rounds 7

`--baseline FILE` loads another tree's `recorder/format/jsonbody.py` (it imports only the standard
library and orjson: `git show main:recorder/format/jsonbody.py > /tmp/jsonbody.py`) into the same
process, and the two are timed in alternation, round after round, so that the machine's load
hits both alike; prints each case's best MB/s per tree and their ratio. The bodies (a fixed
seed): ~2 KB JSON-RPC replies with a diff's text (escaped line breaks), compact as Starlette
writes them; compact with numbers that have a fraction; `json.dumps`'s default (ASCII-escaped
`\\u00e9`); with a member named twice; and already canonical (a transcript read back).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from recorder.format import jsonbody


def load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("baseline_jsonbody", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reply(rng: random.Random, n: int) -> dict[str, object]:
    text = "--- a/src/m.py\n+++ b/src/m.py\n" + "+x = 1  # TODO\n" * rng.randint(5, 40)
    return {
        "jsonrpc": "2.0",
        "id": n,
        "result": {
            "task": {
                "id": str(uuid.UUID(int=rng.getrandbits(128))),
                "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-29T18:28:41Z"},
                "artifacts": [{"name": "review", "parts": [{"text": text}]}],
                "history": [{"role": "ROLE_USER", "parts": [{"text": "café ✓ " + text}]}],
            }
        },
    }


def cases(count: int) -> dict[str, list[bytes]]:
    rng = random.Random(7)
    values = [reply(rng, n) for n in range(count)]
    compact = [json.dumps(v, separators=(",", ":"), ensure_ascii=False) for v in values]
    return {
        "compact": [t.encode() for t in compact],
        "compact, numbers": [
            json.dumps(
                {"score": 0.75, "ratio": 1e-7, "n": [1.5, 2.25, 1e16], **v}, separators=(",", ":")
            ).encode()
            for v in values
        ],
        "ASCII-escaped": [json.dumps(v).encode() for v in values],
        "a name twice": [('{"id":1,' + t[1:]).encode() for t in compact],
        "canonical": [jsonbody.canonical_json_body(t.encode()) for t in compact],
    }


def timed(function: Callable[[bytes], bytes], bodies: list[bytes]) -> float:
    started = time.perf_counter()
    for body in bodies:
        function(body)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", help="another tree's recorder/format/jsonbody.py")
    args = parser.parse_args()
    trees: dict[str, Callable[[bytes], bytes]] = {"this": jsonbody.canonical_json_body}
    if args.baseline:
        trees["baseline"] = load(args.baseline).canonical_json_body
    best: dict[tuple[str, str], float] = {}
    bodies = cases(args.count)
    for _ in range(args.rounds):
        for case, items in bodies.items():
            for tree, function in trees.items():
                took = timed(function, items)
                key = (case, tree)
                best[key] = min(best.get(key, took), took)
    for case, items in bodies.items():
        size = sum(map(len, items)) / 1_000_000
        line = f"{case:18} this {size / best[(case, 'this')]:7.1f} MB/s"
        if args.baseline:
            base = size / best[(case, "baseline")]
            ratio = best[(case, "baseline")] / best[(case, "this")]
            line += f"  baseline {base:7.1f} MB/s  this/baseline {ratio:.2f}"
        print(line)


if __name__ == "__main__":
    main()
