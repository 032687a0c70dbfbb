"""What the recorder's gRPC listener adds to a call, against the kit on loopback.

    .venv/bin/python bench/bench_grpc_proxy.py              # ~20 s
    .venv/bin/python bench/bench_grpc_proxy.py --smoke      # a few seconds (tests)

Starts `recorder kit --grpc-port 0` and `recorder record` in front of it, each in its own
process (the recorder's gRPC listener on a free port, recording into a temporary folder), and
calls both with grpcio's own stub (raw A2A messages, no SDK client in the measure):

  unary   sequential GetTask calls of one task: p50 / p99 direct and through the recorder,
          and the p50 added per call
  stream  SendStreamingMessage of a diff (the kit's review: 4 messages): p50 time per stream
          message, direct and through the recorder, and the time added per message

Direct and proxied calls are interleaved round by round, so that drift hits both alike. Prints
a table and one JSON line (`"bench": "grpc-proxy"`, with the ratios).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
from a2a.types import a2a_pb2, a2a_pb2_grpc

ROOT = Path(__file__).resolve().parent.parent
RECORDER = [sys.executable, "-c", "from recorder.cli import main; main()"]
DIFF = "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,1 +1,2 @@\n import os\n+# TODO: later\n"
METADATA = (("a2a-version", "1.0"),)
LIMIT = 30.0


def read_line(process: subprocess.Popen[str], pattern: str, stream: str) -> re.Match[str]:
    """The first line of the process's `stream` matching `pattern` (bounded in time)."""
    deadline = time.monotonic() + LIMIT
    pipe = process.stdout if stream == "stdout" else process.stderr
    assert pipe is not None
    while time.monotonic() < deadline:
        line = pipe.readline()
        if not line:
            break
        found = re.search(pattern, line)
        if found:
            return found
    raise RuntimeError(f"no line matching {pattern!r} from {process.args!r}")


def message(text: str) -> a2a_pb2.SendMessageRequest:
    sent = a2a_pb2.Message(message_id=f"bench-{time.monotonic_ns()}", role=a2a_pb2.ROLE_USER)
    sent.parts.add(text=text)
    return a2a_pb2.SendMessageRequest(message=sent)


async def measure(direct: str, proxied: str, calls: int, streams: int) -> dict[str, Any]:
    async with (
        grpc.aio.insecure_channel(direct) as direct_channel,
        grpc.aio.insecure_channel(proxied) as proxy_channel,
    ):
        stubs = {
            "direct": a2a_pb2_grpc.A2AServiceStub(direct_channel),
            "recorder": a2a_pb2_grpc.A2AServiceStub(proxy_channel),
        }
        task = await stubs["direct"].SendMessage(message(DIFF), metadata=METADATA, timeout=LIMIT)
        task_id = task.task.id
        unary: dict[str, list[float]] = {name: [] for name in stubs}
        per_message: dict[str, list[float]] = {name: [] for name in stubs}
        for stub in stubs.values():  # warm-up: connections, caches
            for _ in range(5):
                await stub.GetTask(a2a_pb2.GetTaskRequest(id=task_id), metadata=METADATA)
        for _ in range(calls):
            for name, stub in stubs.items():
                started = time.perf_counter()
                await stub.GetTask(
                    a2a_pb2.GetTaskRequest(id=task_id), metadata=METADATA, timeout=LIMIT
                )
                unary[name].append(time.perf_counter() - started)
        for _ in range(streams):
            for name, stub in stubs.items():
                started = time.perf_counter()
                count = 0
                async for _reply in stub.SendStreamingMessage(
                    message(DIFF), metadata=METADATA, timeout=LIMIT
                ):
                    count += 1
                per_message[name].append((time.perf_counter() - started) / max(count, 1))
    return {"unary": unary, "stream": per_message}


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400, help="unary calls per target")
    parser.add_argument("--streams", type=int, default=100, help="streams per target")
    parser.add_argument("--smoke", action="store_true", help="a few calls (the tests)")
    args = parser.parse_args()
    calls, streams = (20, 5) if args.smoke else (args.calls, args.streams)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    with tempfile.TemporaryDirectory(prefix="bench-grpc-") as out:
        kit = subprocess.Popen(
            [*RECORDER, "kit", "--port", "0", "--grpc-port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        recorder = None
        try:
            base = read_line(kit, r"listening on (http://\S+)", "stdout").group(1)
            direct = read_line(kit, r"gRPC\s+(\S+)", "stdout").group(1)
            recorder = subprocess.Popen(
                [*RECORDER, "record", "-q", "--upstream", base, "--listen", "127.0.0.1:0"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                cwd=out,
            )
            proxied = read_line(recorder, r"gRPC listening on (\S+),", "stderr").group(1)
            figures = asyncio.run(measure(direct, proxied, calls, streams))
        finally:
            for process in (recorder, kit):
                if process is not None:
                    process.terminate()
                    process.wait(LIMIT)
    unary, stream = figures["unary"], figures["stream"]
    result: dict[str, Any] = {"bench": "grpc-proxy", "calls": calls, "streams": streams}
    print(f"{'':8} {'direct p50':>12} {'recorder p50':>13} {'added':>9} {'ratio':>6}")
    for name, values in (("unary", unary), ("message", stream)):
        d, r = statistics.median(values["direct"]), statistics.median(values["recorder"])
        print(f"{name:8} {d * 1e3:10.3f}ms {r * 1e3:11.3f}ms {(r - d) * 1e3:7.3f}ms {r / d:6.2f}")
        result[name] = {
            "direct_p50_ms": round(d * 1e3, 3),
            "recorder_p50_ms": round(r * 1e3, 3),
            "direct_p99_ms": round(p(values["direct"], 0.99) * 1e3, 3),
            "recorder_p99_ms": round(p(values["recorder"], 0.99) * 1e3, 3),
            "added_ms": round((r - d) * 1e3, 3),
            "ratio": round(r / d, 2),
        }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
