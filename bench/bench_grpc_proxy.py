"""What the recorder's gRPC listener adds to a call, against the kit on loopback.

    .venv/bin/python bench/bench_grpc_proxy.py                         # ~20 s
    .venv/bin/python bench/bench_grpc_proxy.py --baseline ../main      # and another checkout
    .venv/bin/python bench/bench_grpc_proxy.py --smoke                 # a few seconds (tests)

Starts `recorder kit --grpc-port 0` and `recorder record` in front of it, each in its own
process (the recorder's gRPC listener on a free port, recording into a temporary folder), and
calls them with grpcio's own stub (raw A2A messages, no SDK client in the measure):

  unary   sequential GetTask calls of one task: p50 / p99, and the p50 added per call
  stream  SendStreamingMessage of a diff (the kit's review: 4 messages): p50 time per stream
          message, and the time added per message
  cpu     each proxy process's processor time per call (per stream message), read from
          Linux's /proc once the phase's work is done: its event loop's thread (`loop`) and
          all its threads (`all`: the recorder's writer too); steadier than the latencies on
          a busy machine, where the recorder's work after a reply slows whatever runs next

Beside direct calls and the recorder, in the same run: `pass-through`, a bare grpc.aio proxy
in a process of its own (a generic handler forwarding raw bytes with their metadata, nothing
recorded: what any Python gRPC hop costs here, the floor under the recorder's figure), and
with `--baseline DIR` the recorder of another checkout (before / after a change).

Targets are interleaved call by call, so that drift hits all alike, in an order shuffled each
round: a target called right after the recorder shares the processor with its writer (on two
cores, the fourth of a fixed order measured the same recorder 0.2-1.5 ms slower). Prints a
table and one JSON line (`"bench": "grpc-proxy"`, with each target's p50s, what it adds and
its ratio to direct).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import random
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
STREAMING = ("SendStreamingMessage", "SubscribeToTask")
MESSAGES = 4  # the kit's review: messages in each stream (its processor time is per message)
SETTLE = 0.5  # seconds a proxy gets to finish a phase's work before its processor time is read


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


async def pass_through(upstream: str) -> None:
    """A bare grpc.aio proxy to `upstream`: raw bytes and metadata forwarded, nothing else."""
    channel = grpc.aio.insecure_channel(upstream)
    skipped = ("user-agent", "te", "content-type", "grpc-accept-encoding")

    def metadata(context: Any) -> Any:
        pairs = [(k, v) for k, v in context.invocation_metadata() if k not in skipped]
        return [(k, v) for k, v in pairs if not k.startswith(":")] or None

    async def unary(path: str, request: bytes, context: Any) -> bytes:
        rpc = channel.unary_unary(path)(
            request, metadata=metadata(context), timeout=context.time_remaining()
        )
        reply: bytes = await rpc
        initial = await rpc.initial_metadata()
        if initial:
            await context.send_initial_metadata(initial)
        return reply

    async def stream(path: str, request: bytes, context: Any) -> Any:
        rpc = channel.unary_stream(path)(
            request, metadata=metadata(context), timeout=context.time_remaining()
        )
        async for message in rpc:
            yield message

    class Handler(grpc.GenericRpcHandler):
        def service(self, details: Any) -> Any:
            if details.method.rpartition("/")[2] in STREAMING:
                return grpc.unary_stream_rpc_method_handler(
                    functools.partial(stream, details.method)
                )
            return grpc.unary_unary_rpc_method_handler(functools.partial(unary, details.method))

    server = grpc.aio.server()
    server.add_generic_rpc_handlers((Handler(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"gRPC listening on 127.0.0.1:{port}, forwarding to {upstream}", file=sys.stderr)
    await server.wait_for_termination()


def message(text: str) -> a2a_pb2.SendMessageRequest:
    sent = a2a_pb2.Message(message_id=f"bench-{time.monotonic_ns()}", role=a2a_pb2.ROLE_USER)
    sent.parts.add(text=text)
    return a2a_pb2.SendMessageRequest(message=sent)


def cpu_seconds(pid: int) -> tuple[float, float] | None:
    """The processor time process `pid` has used so far (its main thread's, all its
    threads'), in seconds; None where Linux's /proc does not tell."""
    try:
        main = total = 0.0
        for thread in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{thread}/schedstat") as stat:
                used = int(stat.read().split()[0]) / 1e9  # (nanoseconds on the processor)
            total += used
            if int(thread) == pid:
                main = used
        return main, total
    except (OSError, ValueError, IndexError):
        return None


async def cpu_now(pids: dict[str, int]) -> dict[str, tuple[float, float] | None]:
    """Each proxy's `cpu_seconds` once the work of the calls made so far is done (its
    writer's too: it records after the reply)."""
    await asyncio.sleep(SETTLE)
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def cpu_per_call(
    before: dict[str, tuple[float, float] | None],
    after: dict[str, tuple[float, float] | None],
    calls: int,
) -> dict[str, tuple[float, float] | None]:
    """Each proxy's processor time per call between two `cpu_now`s (main thread, all)."""
    found: dict[str, tuple[float, float] | None] = {}
    for name, start in before.items():
        end = after.get(name)
        if start is None or end is None or not calls:
            found[name] = None
        else:
            found[name] = ((end[0] - start[0]) / calls, (end[1] - start[1]) / calls)
    return found


async def measure(
    targets: dict[str, str], pids: dict[str, int], calls: int, streams: int
) -> dict[str, Any]:
    channels = {name: grpc.aio.insecure_channel(address) for name, address in targets.items()}
    try:
        stubs = {name: a2a_pb2_grpc.A2AServiceStub(c) for name, c in channels.items()}
        task = await stubs["direct"].SendMessage(message(DIFF), metadata=METADATA, timeout=LIMIT)
        task_id = task.task.id
        unary: dict[str, list[float]] = {name: [] for name in stubs}
        per_message: dict[str, list[float]] = {name: [] for name in stubs}
        for stub in stubs.values():  # warm-up: connections, caches
            for _ in range(5):
                await stub.GetTask(a2a_pb2.GetTaskRequest(id=task_id), metadata=METADATA)
        started_cpu = await cpu_now(pids)
        rounds = random.Random(39)  # (each round's order: no target always after another)
        order = list(stubs.items())
        for _ in range(calls):
            rounds.shuffle(order)
            for name, stub in order:
                started = time.perf_counter()
                await stub.GetTask(
                    a2a_pb2.GetTaskRequest(id=task_id), metadata=METADATA, timeout=LIMIT
                )
                unary[name].append(time.perf_counter() - started)
        unary_cpu = await cpu_now(pids)
        for _ in range(streams):
            rounds.shuffle(order)
            for name, stub in order:
                started = time.perf_counter()
                count = 0
                async for _reply in stub.SendStreamingMessage(
                    message(DIFF), metadata=METADATA, timeout=LIMIT
                ):
                    count += 1
                per_message[name].append((time.perf_counter() - started) / max(count, 1))
        stream_cpu = await cpu_now(pids)
    finally:
        for channel in channels.values():
            await channel.close()
    return {
        "unary": unary,
        "stream": per_message,
        "cpu": {
            "unary": cpu_per_call(started_cpu, unary_cpu, calls),
            "stream": cpu_per_call(unary_cpu, stream_cpu, streams * MESSAGES),
        },
    }


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def start(command: list[str], env: dict[str, str], out: str) -> tuple[subprocess.Popen[str], str]:
    """A proxy process and the gRPC address it says it listens on."""
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=out
    )
    return process, read_line(process, r"gRPC listening on (\S+),", "stderr").group(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400, help="unary calls per target")
    parser.add_argument("--streams", type=int, default=100, help="streams per target")
    parser.add_argument("--baseline", metavar="DIR", help="another checkout's recorder too")
    parser.add_argument("--smoke", action="store_true", help="a few calls (the tests)")
    parser.add_argument("--pass-through", metavar="UPSTREAM", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pass_through:
        asyncio.run(pass_through(args.pass_through))
        return 0
    calls, streams = (20, 5) if args.smoke else (args.calls, args.streams)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    processes: list[subprocess.Popen[str]] = []
    pids: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="bench-grpc-") as out:
        kit = subprocess.Popen(
            [*RECORDER, "kit", "--port", "0", "--grpc-port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        processes.append(kit)
        try:
            base = read_line(kit, r"listening on (http://\S+)", "stdout").group(1)
            targets = {"direct": read_line(kit, r"gRPC\s+(\S+)", "stdout").group(1)}
            record = [*RECORDER, "record", "-q", "--upstream", base, "--listen", "127.0.0.1:0"]
            floor = [sys.executable, __file__, "--pass-through", targets["direct"]]
            runs = [("pass-through", floor, env), ("recorder", record, env)]
            if args.baseline:
                before = {**env, "PYTHONPATH": str(Path(args.baseline).resolve())}
                runs.append(("baseline", record, before))
            for name, command, its_env in runs:
                folder = Path(out) / name
                folder.mkdir()
                process, targets[name] = start(command, its_env, str(folder))
                processes.append(process)
                pids[name] = process.pid
            figures = asyncio.run(measure(targets, pids, calls, streams))
        finally:
            for process in reversed(processes):
                process.terminate()
                process.wait(LIMIT)
    result: dict[str, Any] = {"bench": "grpc-proxy", "calls": calls, "streams": streams}
    print(
        f"{'':8} {'target':>13} {'p50':>10} {'p99':>10} {'added':>9} {'ratio':>6}"
        f" {'cpu loop':>9} {'cpu all':>9}"
    )
    for kind, label in (("unary", "unary"), ("stream", "message")):
        values = figures[kind]
        direct = statistics.median(values["direct"])
        result[label] = {}
        for name, taken in values.items():
            median = statistics.median(taken)
            added, ratio = median - direct, median / direct
            used = figures["cpu"][kind].get(name)
            shown = f" {used[0] * 1e3:7.3f}ms {used[1] * 1e3:7.3f}ms" if used else ""
            print(
                f"{label:8} {name:>13} {median * 1e3:8.3f}ms {p(taken, 0.99) * 1e3:8.3f}ms "
                f"{added * 1e3:7.3f}ms {ratio:6.2f}{shown}"
            )
            result[label][name] = {
                "p50_ms": round(median * 1e3, 3),
                "p99_ms": round(p(taken, 0.99) * 1e3, 3),
                "added_ms": round(added * 1e3, 3),
                "ratio": round(ratio, 2),
            }
            if used:
                result[label][name]["cpu_loop_ms"] = round(used[0] * 1e3, 3)
                result[label][name]["cpu_all_ms"] = round(used[1] * 1e3, 3)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
