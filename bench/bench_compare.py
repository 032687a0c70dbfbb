"""Benchmark: normalizing and comparing large replies vs `json.loads` of them (issue 5, goal 5).

Goal: comparing a 1 MiB reply costs at most 3x `json.loads` of it, and grows linearly to
10 MiB. Also reported: the per-exchange cost of the pure core (`prepare` + `compare`) on small
replies, which is what the player's 1,000-exchange loop pays on top of HTTP (that loop's 1.15x
goal is measured by the player's own benchmark, bench/bench_play.py).

Each reply is built twice, as recorded and as a fresh agent answers it (every id and timestamp
regenerated, the agent on another port), so every generated value must be aliased and paired.
The timed call is `ReplayState.compare(golden, LiveReply(...wire bytes...))` with a fresh
golden `Response` (as read from its transcript; nothing cached, no mapping learned): all that
the player pays per reply once the bytes have arrived (parsing and normalizing the live reply,
parsing the golden body, comparing). For information, the same call with the live reply given
as an already built `Response` (its pretty-printing not timed: the measure before the player
compared wire bytes). The baseline is `json.loads` of the reply as it came over the wire
(compact JSON; for a stream, every frame's `data`), as a caller runs it (collector on, as the
comparison leaves it; the baseline with the collector paused is shown too, for information: at
10 MiB the collector's passes are what makes json.loads itself grow faster than linearly).
Sizes are wire sizes.

Three shapes:
- review:  a task whose artifact holds a long review text (few ids, much text): the common
           large reply;
- list:    a ListTasks page of many tasks with history (an id or timestamp every ~70 bytes):
           the worst case for aliasing;
- stream:  an SSE stream of artifact chunks (one JSON frame per ~500 bytes).

Also a listing whose first task's state differs live, at 1 and 5 MiB: the fast path cannot
decide, the walk pairs every id and deepdiff explains the one mismatch (what a failing listing
costs; its cost per MiB should not grow with the size).

Run: .venv/bin/python bench/bench_compare.py   (--quick: small sizes, for the test suite)
"""

from __future__ import annotations

import gc
import json
import sys
import time
import uuid
from typing import Any

from recorder.format.model import Exchange, Request, Response, SseEvent
from recorder.replay.verdict.state import LiveReply, ReplayState
from recorder.rules.ruleset import DEFAULT_RULES

RECORDED = "http://localhost:41242"
LIVE = "http://127.0.0.1:50123"
JSON = {"Content-Type": "application/json"}
SSE = {"Content-Type": "text/event-stream; charset=utf-8"}
MIB = 1 << 20


class Run:
    """The generated values of one agent run: deterministic per seed."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.count = 0

    def id(self) -> str:
        self.count += 1
        return str(uuid.UUID(int=(self.seed << 64) + self.count, version=4))

    def time(self, n: int) -> str:
        n += self.seed * 1000
        return f"2026-11-29T18:{n // 60 % 60:02d}:{n % 60:02d}.{n * 7919 % 1000000:06d}Z"


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def task(run: Run, n: int, text: str, context_id: str) -> dict[str, Any]:
    task_id = run.id()
    return {
        "id": task_id,
        "contextId": context_id,
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": run.time(n)},
        "artifacts": [
            {
                "artifactId": run.id(),
                "name": "review",
                "parts": [{"text": text, "mediaType": "text/plain"}],
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
                "messageId": run.id(),
                "contextId": context_id,
                "taskId": task_id,
                "role": "ROLE_AGENT",
                "parts": [{"text": "Reviewing.", "filename": "", "mediaType": ""}],
                "extensions": [],
                "referenceTaskIds": [],
            },
        ],
    }


def review_text(size: int) -> str:
    lines = []
    total = n = 0
    while total < size:
        line = (
            f"src/module_{n % 97}.py:{n}: [long-line] line is {80 + n % 40} characters long:"
            " wrap it at 79 (PEP 8)."
        )
        lines.append(line)
        total += len(line) + 2
        n += 1
    return "\n".join(lines)


def review_reply(size: int, seed: int) -> bytes:
    run = Run(seed)
    return compact(
        {"result": {"task": task(run, 1, review_text(size), run.id())}, "id": 1, "jsonrpc": "2.0"}
    )


def list_reply(size: int, seed: int) -> bytes:
    run = Run(seed)
    context_id = run.id()
    tasks: list[dict[str, Any]] = []
    total = 0
    while total < size:
        item = task(run, len(tasks), f"Looks good; see line {len(tasks)}.", context_id)
        total += len(compact(item)) + 1
        tasks.append(item)
    page = {"tasks": tasks, "nextPageToken": "", "pageSize": len(tasks), "totalSize": len(tasks)}
    return compact({"result": page, "id": 1, "jsonrpc": "2.0"})


def stream_frames(size: int, seed: int) -> list[str]:
    run = Run(seed)
    task_id, context_id, artifact_id = run.id(), run.id(), run.id()
    frames = []
    total = n = 0
    chunk = review_text(400)
    while total < size:
        frame = {
            "result": {
                "artifactUpdate": {
                    "taskId": task_id,
                    "contextId": context_id,
                    "artifact": {"artifactId": artifact_id, "parts": [{"text": f"{n}: {chunk}"}]},
                    "append": n > 0,
                }
            },
            "id": "req-1",
            "jsonrpc": "2.0",
        }
        data = json.dumps(frame)  # the SDK's SSE layout: ", " and ": " separators
        frames.append(data)
        total += len(data) + 8
        n += 1
    return frames


REQUEST = Request(
    "POST",
    "/a2a/jsonrpc",
    {"Host": "localhost:41242", **JSON, "A2A-Version": "1.0"},
    b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}',
)


def best(times: list[float]) -> float:
    return min(times)


def measure(shape: str, size: int, repeat: int) -> tuple[int, float, float, float, bool]:
    """(wire bytes, json.loads s, compare s from the wire, compare s given a Response, matched)."""
    if shape == "stream":
        golden_frames, live_frames = stream_frames(size, 1), stream_frames(size, 2)
        wire = sum(len(f) for f in live_frames)
        golden_body = Response(
            200, "OK", SSE, events=tuple(SseEvent(data=f) for f in golden_frames)
        ).body
        live_raw = b"".join(f"data: {f}\n\n".encode() for f in live_frames)
        content_type = SSE

        def load() -> object:
            return [json.loads(f) for f in live_frames]

    else:
        build = review_reply if shape == "review" else list_reply
        golden_body = build(size, 1)
        live_raw = build(size, 2).replace(RECORDED.encode(), LIVE.encode())
        wire = len(live_raw)
        content_type = JSON

        def load() -> object:
            return json.loads(live_raw)

    loads_times = []
    paused_times = []
    wire_times = []
    given_times = []
    matched = True
    for _ in range(repeat):
        start = time.perf_counter()
        load()
        loads_times.append(time.perf_counter() - start)
        gc.disable()  # for information: the baseline without the cyclic collector's passes
        try:
            start = time.perf_counter()
            load()
            paused_times.append(time.perf_counter() - start)
        finally:
            gc.enable()
        # from the wire: what the player pays
        state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED, live_base=LIVE)
        exchange = Exchange(REQUEST, Response(200, "OK", content_type, golden_body))
        reply = LiveReply(200, "OK", content_type.items(), live_raw)
        start = time.perf_counter()
        found = state.compare(exchange, reply)
        wire_times.append(time.perf_counter() - start)
        matched = matched and found == []
        # given a built Response (its construction not timed)
        state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED, live_base=LIVE)
        exchange = Exchange(REQUEST, Response(200, "OK", content_type, golden_body))
        built = Response(200, "OK", content_type, live_raw)
        start = time.perf_counter()
        found = state.compare(exchange, built)
        given_times.append(time.perf_counter() - start)
        matched = matched and found == []
    PAUSED_LOADS[(shape, size)] = best(paused_times)
    return wire, best(loads_times), best(wire_times), best(given_times), matched


PAUSED_LOADS: dict[tuple[str, int], float] = {}


def mismatch(size: int, repeat: int) -> tuple[int, float]:
    """(wire bytes, best s) of comparing a listing whose first task's state differs live."""
    golden_body = list_reply(size, 1)
    live_raw = list_reply(size, 2).replace(b"TASK_STATE_COMPLETED", b"TASK_STATE_FAILED", 1)
    times = []
    for _ in range(repeat + 1):  # (the first also imports deepdiff: not counted)
        state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED, live_base=LIVE)
        exchange = Exchange(REQUEST, Response(200, "OK", JSON, golden_body))
        reply = LiveReply(200, "OK", JSON.items(), live_raw)
        start = time.perf_counter()
        found = state.compare(exchange, reply)
        times.append(time.perf_counter() - start)
        assert [m.path for m in found] == ["$.result.tasks[0].status.state"], found
    return len(live_raw), min(times[1:])


def wire_form(response: Response) -> LiveReply:
    """A reply as an agent sends it: JSON compact, a stream as its raw event lines."""
    body = response.body
    if response.is_json:
        body = compact(response.json)
    return LiveReply(response.status, response.reason, response.headers, body)


def small_exchanges(count: int) -> tuple[float, float]:
    """Per-exchange prepare + compare, in microseconds: (SendMessage task reply, 4-frame stream).

    One ReplayState per 5 exchanges, as in a typical transcript.
    """

    def status(state: str, stamp: str) -> dict[str, str]:
        return {"state": state, "timestamp": stamp}

    def frames(t: str, c: str, a: str, s1: str, s2: str) -> list[dict[str, Any]]:
        parts = [{"text": "review: 2 comments"}]
        return [
            {"task": {"id": t, "contextId": c, "status": {"state": "TASK_STATE_SUBMITTED"}}},
            {"statusUpdate": {"taskId": t, "contextId": c, "status": status("WORKING", s1)}},
            {
                "artifactUpdate": {
                    "taskId": t,
                    "contextId": c,
                    "artifact": {"artifactId": a, "parts": parts},
                }
            },
            {"statusUpdate": {"taskId": t, "contextId": c, "status": status("COMPLETED", s2)}},
        ]

    def task_reply(run: Run) -> Response:
        return Response(
            200,
            "OK",
            JSON,
            compact(
                {
                    "result": {"task": task(run, 1, "review: ok", run.id())},
                    "id": 1,
                    "jsonrpc": "2.0",
                }
            ),
        )

    def stream_reply(run: Run) -> Response:
        values = frames(run.id(), run.id(), run.id(), run.time(1), run.time(2))
        events = tuple(
            SseEvent(data=json.dumps({"result": v, "id": 1, "jsonrpc": "2.0"})) for v in values
        )
        return Response(200, "OK", SSE, events=events)

    results = []
    for build in (task_reply, stream_reply):
        # a transcript of 5 exchanges (5 tasks), replayed count / 5 times against fresh agents
        goldens = [Exchange(REQUEST, build(Run(1 + k))) for k in range(5)]
        # the live replies as they come over the wire (what the player compares)
        lives = [wire_form(build(Run(100 + i))) for i in range(count)]
        start = time.perf_counter()
        state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED, live_base=LIVE)
        for index, reply in enumerate(lives):
            if index % 5 == 0:
                state = ReplayState(DEFAULT_RULES, recorded_base=RECORDED, live_base=LIVE)
            state.prepare(REQUEST)
            assert state.compare(goldens[index % 5], reply) == []
        results.append((time.perf_counter() - start) / count * 1e6)
    return results[0], results[1]


def main() -> int:
    quick = "--quick" in sys.argv[1:]  # a smoke run (the test suite's): small sizes, one round
    sizes = (1 / 16, 1 / 8) if quick else (1, 2, 5, 10)
    ok = True
    print(
        "shape   size       json.loads  from wire   ratio   ms per MiB"
        "  | Response given  ratio  verdict"
    )
    for shape in ("review", "list", "stream"):
        per_mib: list[float] = []
        for mib in sizes:
            wire, loads_time, compare_time, given_time, matched = measure(
                shape, int(mib * MIB), 1 if quick else 5 if mib < 5 else 3
            )
            per_mib.append(compare_time * 1000 / (wire / MIB))
            ok = ok and matched
            ratio = compare_time / loads_time
            print(
                f"{shape:7s} {wire / MIB:5.2f} MiB {loads_time * 1000:9.1f} ms"
                f" {compare_time * 1000:7.1f} ms {ratio:6.2f}x {per_mib[-1]:8.1f}"
                f"     | {given_time * 1000:7.1f} ms {given_time / loads_time:6.2f}x"
                f"  {'match' if matched else 'MISMATCH'}"
            )
        growth = per_mib[-1] / per_mib[0]
        first, last = (f"{size:g} MiB" for size in (sizes[0], sizes[-1]))
        print(f"{shape:7s} linearity: cost per MiB at {last} / at {first} = {growth:.2f}")
        if not quick:
            paused = [PAUSED_LOADS[(shape, mib * MIB)] * 1000 for mib in (1, 10)]
            print(
                f"{shape:7s} json.loads with the collector paused: {paused[0]:.1f} ms at 1 MiB,"
                f" {paused[1]:.1f} ms at 10 MiB (for information)"
            )
    # one task's state differs live: the fast path cannot decide, the walk pairs every id and
    # deepdiff explains the one mismatch (what a failing listing costs)
    per_mib = []
    for mib in sizes[:2] if quick else (1, 5):
        wire, took = mismatch(int(mib * MIB), 1 if quick else 3)
        per_mib.append(took * 1000 / (wire / MIB))
        print(f"list, one state differs: {wire / MIB:5.2f} MiB {took * 1000:9.1f} ms")
    print(f"list, one state differs: linearity {per_mib[-1] / per_mib[0]:.2f}")
    task_us, stream_us = small_exchanges(50 if quick else 2000)
    print(
        f"small replies, prepare + compare per exchange: task reply {task_us:.0f} us,"
        f" 4-frame stream {stream_us:.0f} us"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
