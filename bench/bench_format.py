"""Parse and write speed of the .http format on a ~10 MB transcript.

    .venv/bin/python bench/bench_format.py [--mb 10] [--repeat 3]

The transcript mixes what real A2A traffic records: JSON-RPC requests and replies (pretty JSON)
and SSE streams of task/statusUpdate/artifactUpdate frames, with uuids and timestamps. Prints
MB/s for `loads` and `dumps` (best of --repeat runs), and for comparison `json.loads` over the
same JSON payloads. Then the canonical body (`canonical_json_body`, what recording a JSON body
costs) of those payloads as agents send them: compact, compact with numbers that have a
fraction, ASCII-escaped (`\u00e9`), and with a member named twice. Run it with another tree's
`recorder` first on PYTHONPATH to compare (the bodies are the same: a fixed seed).
"""

from __future__ import annotations

import argparse
import json
import time
import uuid

from recorder import Exchange, Headers, Request, Response, SseEvent, Transcript, dumps, loads
from recorder.format.model import canonical_json_body

JSON = Headers([("Content-Type", "application/json")])
TIME = "2026-11-29T18:28:41.946689Z"


def _exchange(n: int) -> Exchange:
    task, context = str(uuid.uuid4()), str(uuid.uuid4())
    text = f"--- a/src/module_{n}.py\n+++ b/src/module_{n}.py\n" + "+x = 1  # TODO\n" * 20
    request = Request(
        "POST",
        "/a2a/jsonrpc",
        Headers([("Host", "localhost:41242"), *JSON, ("A2A-Version", "1.0")]),
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "SendStreamingMessage",
                "params": {
                    "message": {
                        "messageId": str(uuid.uuid4()),
                        "role": "ROLE_USER",
                        "parts": [{"text": text}],
                    }
                },
            }
        ).encode(),
    )
    if n % 2:
        body = {
            "jsonrpc": "2.0",
            "id": n,
            "result": {
                "task": {
                    "id": task,
                    "contextId": context,
                    "status": {
                        "state": "TASK_STATE_COMPLETED",
                        "timestamp": "2026-11-29T18:28:41Z",
                    },
                    "artifacts": [
                        {
                            "artifactId": str(uuid.uuid4()),
                            "name": "review",
                            "parts": [{"text": f"line {i}: TODO found"} for i in range(20)],
                        }
                    ],
                }
            },
        }
        response = Response(200, "OK", JSON, json.dumps(body).encode())
    else:
        frames = [
            {
                "task": {
                    "id": task,
                    "contextId": context,
                    "status": {"state": "TASK_STATE_SUBMITTED"},
                }
            },
            {"statusUpdate": {"taskId": task, "contextId": context, "status": {"state": "W"}}},
            {
                "artifactUpdate": {
                    "taskId": task,
                    "artifact": {"artifactId": str(uuid.uuid4()), "parts": [{"text": text}]},
                }
            },
            {"statusUpdate": {"taskId": task, "contextId": context, "status": {"state": "C"}}},
        ]
        events = tuple(
            SseEvent(data=json.dumps({"jsonrpc": "2.0", "id": n, "result": f})) for f in frames
        )
        response = Response(
            200, "OK", Headers([("Content-Type", "text/event-stream")]), events=events
        )
    return Exchange(request=request, response=response, title=f"exchange {n}")


def build(megabytes: float) -> str:
    exchanges: list[Exchange] = []
    size = 0
    while size < megabytes * 1_000_000:
        exchange = _exchange(len(exchanges))
        exchanges.append(exchange)
        size += len(exchange.request.body) + len(exchange.response.body) + 200
    return dumps(Transcript(exchanges=tuple(exchanges)))


def best(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    text = build(args.mb)
    size_mb = len(text.encode()) / 1_000_000
    transcript = loads(text)
    assert dumps(transcript) == text
    parse = best(lambda: loads(text), args.repeat)
    write = best(lambda: dumps(transcript), args.repeat)
    payloads = [e.request.body for e in transcript] + [e.response.body for e in transcript]
    payloads = [p for p in payloads if p.startswith(b"{")]
    json_mb = sum(map(len, payloads)) / 1_000_000
    json_time = best(lambda: [json.loads(p) for p in payloads], args.repeat)
    print(f"transcript: {size_mb:.1f} MB, {len(transcript)} exchanges")
    print(f"loads: {parse * 1000:8.1f} ms  {size_mb / parse:7.1f} MB/s")
    print(f"dumps: {write * 1000:8.1f} ms  {size_mb / write:7.1f} MB/s")
    print(f"json.loads of the JSON bodies alone: {json_mb / json_time:7.1f} MB/s")
    values = [json.loads(p) for p in payloads]
    cases = {
        "compact": [json.dumps(v, separators=(",", ":"), ensure_ascii=False) for v in values],
        "compact, numbers": [
            json.dumps({"score": 0.75, "ratio": 1e-7, "big": 12.5, **v}, separators=(",", ":"))
            for v in values
        ],
        "ASCII-escaped": [json.dumps({"note": "café ✓", **v}) for v in values],
        "a name twice": [
            '{"id":1,' + json.dumps(v, separators=(",", ":"))[1:] for v in values if v
        ],
    }
    for name, texts in cases.items():
        bodies = [t.encode() for t in texts]
        size = sum(map(len, bodies)) / 1_000_000
        took = best(lambda bodies=bodies: [canonical_json_body(b) for b in bodies], args.repeat)
        print(f"canonical body, {name + ':':18} {size / took:7.1f} MB/s")


if __name__ == "__main__":
    main()
