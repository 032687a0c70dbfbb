"""Benchmark: normalizing and comparing a large reply vs `json.loads` of it (issue 5, goal 5).

Goal: comparing a 1 MiB reply costs at most 3x `json.loads` of it, and grows linearly to 10 MiB;
per-exchange overhead for small replies is tiny (the player's 1,000-exchange loop must stay within
1.15x a bare httpx loop: that figure is measured by the player's own benchmark, this script
reports the per-exchange cost of the pure core for it).

The replies are ListTasks results built like the kit's (tasks with history and artifacts, UUIDs
and timestamps everywhere), recorded and live with every id and timestamp regenerated, so every
generated value must be aliased and paired. The timed call is `ReplayState.compare` on fresh
`Response` objects (nothing cached): it includes everything the player pays per reply.

Run: .venv/bin/python bench/bench_compare.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from recorder.aliasing import ReplayState
from recorder.model import Exchange, Request, Response
from recorder.rules import DEFAULT_RULES

JSON = {"Content-Type": "application/json"}


def _stamp(n: int) -> str:
    return f"2026-11-29T18:{n // 60 % 60:02d}:{n % 60:02d}.{n * 7919 % 1000000:06d}Z"


def _task(
    task_id: str, context_id: str, artifact_id: str, message_id: str, n: int, clock: int = 0
) -> dict[str, Any]:
    return {
        "id": task_id,
        "contextId": context_id,
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": _stamp(n + clock)},
        "artifacts": [
            {
                "artifactId": artifact_id,
                "name": "review",
                "parts": [{"text": f"Looks good overall; see line {n}.", "mediaType": "text/plain"}],
            }
        ],
        "history": [
            {
                "messageId": f"user-{n}",
                "contextId": context_id,
                "taskId": task_id,
                "role": "ROLE_USER",
                "parts": [{"text": f"Please review change {n}", "filename": "", "mediaType": ""}],
                "extensions": [],
                "referenceTaskIds": [],
            },
            {
                "messageId": message_id,
                "contextId": context_id,
                "taskId": task_id,
                "role": "ROLE_AGENT",
                "parts": [{"text": "Reviewing.", "filename": "", "mediaType": ""}],
                "extensions": [],
                "referenceTaskIds": [],
            },
        ],
    }


def list_tasks_reply(size: int, seed: int) -> bytes:
    """A JSON-RPC ListTasks reply of about `size` bytes (compact JSON) with fresh ids."""
    tasks = []
    context_id = str(uuid.UUID(int=seed * 7 + 1, version=4))
    total = 0
    n = 0
    while total < size:
        task = _task(
            str(uuid.UUID(int=(seed << 64) + 4 * n + 1, version=4)),
            context_id,
            str(uuid.UUID(int=(seed << 64) + 4 * n + 2, version=4)),
            str(uuid.UUID(int=(seed << 64) + 4 * n + 3, version=4)),
            n,
            seed * 13,
        )
        total += len(json.dumps(task, separators=(",", ":"))) + 1
        tasks.append(task)
        n += 1
    body = {
        "result": {"tasks": tasks, "nextPageToken": "", "pageSize": len(tasks), "totalSize": len(tasks)},
        "id": 1,
        "jsonrpc": "2.0",
    }
    return json.dumps(body, separators=(",", ":")).encode()


def best_of(function: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


REQUEST = Request(
    "POST",
    "/a2a/jsonrpc",
    {"Host": "localhost:41242", **JSON, "A2A-Version": "1.0"},
    b'{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": 100}}',
)


def measure(size: int, repeat: int) -> tuple[int, float, float, bool]:
    golden_raw = list_tasks_reply(size, 1)
    live_raw = list_tasks_reply(size, 2)
    golden = Response(200, "OK", JSON, golden_raw)
    state_holder: list[ReplayState] = []
    lives: list[Response] = []

    def setup() -> None:
        # fresh objects: no cached parse, no learned mapping
        state_holder.append(ReplayState(DEFAULT_RULES, recorded_base="http://localhost:41242", live_base="http://127.0.0.1:1"))
        lives.append(Response(200, "OK", JSON, live_raw))

    results: list[list[Any]] = []

    def run() -> None:
        state = state_holder.pop()
        live = lives.pop()
        results.append(state.compare(Exchange(REQUEST, golden_fresh.pop()), live))

    golden_fresh: list[Response] = []
    times = []
    for _ in range(repeat):
        setup()
        golden_fresh.append(Response(200, "OK", JSON, golden.body))
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    compare_time = min(times)
    loads_time = best_of(lambda: json.loads(live_raw), repeat)
    return len(live_raw), loads_time, compare_time, all(r == [] for r in results)


def small_exchange_overhead(count: int) -> float:
    """Per-exchange cost of prepare + compare for a typical small SendMessage reply."""
    task_g = _task(str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4()), 1)
    golden = Response(200, "OK", JSON, json.dumps({"result": {"task": task_g}, "id": 1, "jsonrpc": "2.0"}))
    lives = []
    for _ in range(count):
        task_l = _task(str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4()), 1)
        lives.append(Response(200, "OK", {**JSON, "date": "now", "server": "uvicorn"}, json.dumps({"result": {"task": task_l}, "id": 1, "jsonrpc": "2.0"})))
    exchange = Exchange(REQUEST, golden)
    start = time.perf_counter()
    for live in lives:
        state = ReplayState(DEFAULT_RULES, recorded_base="http://localhost:41242", live_base="http://127.0.0.1:1")
        state.prepare(REQUEST)
        assert state.compare(exchange, live) == []
    return (time.perf_counter() - start) / count


def main() -> int:
    print("size      json.loads   compare    ratio   per-MiB   (goal: ratio <= 3.0 at 1 MiB, linear)")
    per_mib = []
    ok = True
    for mib in (1, 2, 5, 10):
        size, loads_time, compare_time, matched = measure(mib << 20, repeat=5 if mib < 5 else 3)
        ratio = compare_time / loads_time
        per_mib.append(compare_time / (size / (1 << 20)))
        print(
            f"{size / (1 << 20):5.2f} MiB {loads_time * 1000:8.1f} ms {compare_time * 1000:8.1f} ms"
            f" {ratio:6.2f}x {per_mib[-1] * 1000:7.1f} ms  {'match' if matched else 'MISMATCH'}"
        )
        ok = ok and matched
    print(f"linearity: cost per MiB at 10 MiB / at 1 MiB = {per_mib[-1] / per_mib[0]:.2f}")
    overhead = small_exchange_overhead(1000)
    print(f"small SendMessage reply: prepare + compare = {overhead * 1e6:.0f} us per exchange")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
