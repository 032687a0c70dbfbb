"""A long gRPC stream through the recorder: what it holds of the other clients, and of memory.

    .venv/bin/python bench/bench_grpc_stream.py                        # 100 MiB, ~1 min
    .venv/bin/python bench/bench_grpc_stream.py --baseline ../main     # and another checkout
    .venv/bin/python bench/bench_grpc_stream.py --smoke                # 4 MiB (the tests)

An agent of the bench's own (grpc.aio, in a process of its own, no message limit) streams
`--mib` MiB as SendStreamingMessage messages of `--message-kib` KiB (a task whose artifact
holds that much text), and answers GetTask at once. The stream goes through a recorder
(`create_proxy_app` + `listen_grpc` + `serve`, in a process of its own, recording into a
temporary folder, in front of the kit for HTTP) while probes run beside it, 20 a second each,
until the stream is in its transcript: a gRPC GetTask through the recorder (scenario metadata: one
file) and an HTTP `GET /_recorder/status` (answered by the recorder's own event loop). Then
the same directly against the agent (the HTTP probe: the kit's card), and with `--baseline
DIR` through another checkout's recorder (before / after a change).

Per target: the stream's time, each probe's p50 and worst latency and their ratio, and the
recorder's memory from /proc/PID/status: VmHWM (the peak) and VmRSS after the recording,
each over what it held before the stream, in MiB and in messages, and the most VmRSS it
held while the stream ran (sampled at each message the client got). Prints a table and one
JSON line (`"bench": "grpc-stream"`).
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

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 60.0
PROBE_EVERY = 0.05  # seconds between two probes of a kind
UNLIMITED = (("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1))
SERVICE = "/lf.a2a.v1.A2AService/"


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


# --------------------------------------------------------------------------- the processes


async def agent(messages: int, size: int) -> None:
    """The streaming agent: `messages` messages of `size` bytes of text each."""
    import grpc
    import grpc.aio
    from a2a.types import a2a_pb2

    body = ("0123456789abcdef" * (size // 16 + 1))[:size]

    async def stream(request: bytes, context: Any) -> Any:
        for index in range(messages):
            found = a2a_pb2.Task(id="t-long", context_id="c-long")
            found.artifacts.add(artifact_id=f"a-{index}").parts.add(text=body)
            yield a2a_pb2.StreamResponse(task=found).SerializeToString()

    async def get_task(request: bytes, context: Any) -> bytes:
        wanted = a2a_pb2.GetTaskRequest.FromString(request).id
        return a2a_pb2.Task(id=wanted, context_id="c-probe").SerializeToString()

    handlers = {
        "SendStreamingMessage": grpc.unary_stream_rpc_method_handler(stream),
        "GetTask": grpc.unary_unary_rpc_method_handler(get_task),
    }

    class Handler(grpc.GenericRpcHandler):
        def service(self, details: Any) -> Any:
            return handlers.get(details.method.removeprefix(SERVICE))

    server = grpc.aio.server(options=UNLIMITED)
    server.add_generic_rpc_handlers((Handler(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"agent on 127.0.0.1:{port}", flush=True)
    await server.wait_for_termination()


def recorder(http_upstream: str, grpc_upstream: str, out: str) -> None:
    """The recorder under measure (whichever checkout PYTHONPATH names)."""
    from recorder.record.proxy import create_proxy_app
    from recorder.record.proxy.server import serve

    proxy = create_proxy_app(http_upstream, out=Path(out))
    proxy.listen_grpc(port=0, upstream=grpc_upstream)
    serve(proxy, port=0, announce=lambda line: print(line, file=sys.stderr, flush=True))


# --------------------------------------------------------------------------- the measure


def memory(pid: int | None) -> dict[str, float]:
    """VmHWM and VmRSS of process `pid`, in MiB ({} without one)."""
    if pid is None:
        return {}
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS"):
            found[name] = int(value.split()[0]) / 1024
    return found


def in_transcript(out: Path | None, size: int) -> bool:
    """Whether the stream's exchange is in a transcript under `out` (its file as long as the
    stream, at least)."""
    if out is None:
        return True
    return any(p.stat().st_size >= size for p in out.glob("*stream*.http"))


async def run_target(
    grpc_address: str, http_url: str, out: Path | None, pid: int | None
) -> dict[str, Any]:
    """The stream and the probes beside it, until the stream is recorded in `out` (None:
    direct, nothing recorded: half a second more); the memory of `pid` (the recorder) once the
    probes ran alone for a while, and after."""
    import grpc.aio
    import httpx
    from a2a.types import a2a_pb2

    probes: dict[str, list[float]] = {"grpc": [], "http": []}
    done = asyncio.Event()
    async with (
        grpc.aio.insecure_channel(grpc_address, options=UNLIMITED) as channel,
        httpx.AsyncClient(timeout=LIMIT) as client,
    ):
        get_task = channel.unary_unary(SERVICE + "GetTask")
        request = a2a_pb2.GetTaskRequest(id="t-probe").SerializeToString()
        scenario = (("recorder-scenario", "probes"),)

        async def grpc_probe() -> None:
            while not done.is_set():
                started = time.perf_counter()
                await get_task(request, metadata=scenario, timeout=LIMIT)
                probes["grpc"].append(time.perf_counter() - started)
                await asyncio.sleep(PROBE_EVERY)

        async def http_probe() -> None:
            while not done.is_set():
                started = time.perf_counter()
                (await client.get(http_url)).raise_for_status()
                probes["http"].append(time.perf_counter() - started)
                await asyncio.sleep(PROBE_EVERY)

        running = [asyncio.create_task(grpc_probe()), asyncio.create_task(http_probe())]
        await asyncio.sleep(1.0)  # (the probes' own pace first: what they load, loaded)
        before = memory(pid)
        started = time.perf_counter()
        received = 0
        sampled: list[float] = []  # the recorder's VmRSS while the stream runs
        stream = channel.unary_stream(SERVICE + "SendStreamingMessage")
        async for message in stream(b"", timeout=LIMIT * 5):
            received += len(message)
            if pid is not None:
                sampled.append(memory(pid)["VmRSS"])
        streamed = time.perf_counter() - started
        if out is None:
            await asyncio.sleep(0.5)
        for _ in range(int(LIMIT * 20)):  # until the stream is recorded (bounded)
            if await asyncio.to_thread(in_transcript, out, received):
                break
            await asyncio.sleep(PROBE_EVERY)
        recorded = time.perf_counter() - started
        done.set()
        await asyncio.gather(*running)
    return {
        "probes": probes,
        "streamed": streamed,
        "recorded": recorded,
        "bytes": received,
        "before": before,
        "after": memory(pid),
        "during": max(sampled, default=0.0),
    }


def measure(
    name: str,
    grpc_address: str,
    http_url: str,
    pid: int | None,
    message_size: int,
    out: Path | None = None,
) -> dict[str, Any]:
    run = asyncio.run(run_target(grpc_address, http_url, out, pid))
    before, after = run["before"], run["after"]
    figures: dict[str, Any] = {
        "target": name,
        "mib": round(run["bytes"] / 2**20, 1),
        "stream_s": round(run["streamed"], 2),
        "recorded_s": round(run["recorded"], 2),
    }
    for kind, taken in run["probes"].items():
        p50, worst = statistics.median(taken), max(taken)
        figures[f"{kind}_p50_ms"] = round(p50 * 1e3, 2)
        figures[f"{kind}_max_ms"] = round(worst * 1e3, 2)
        figures[f"{kind}_max_over_p50"] = round(worst / p50, 1)
    if before:
        message = message_size / 2**20
        peak, held = after["VmHWM"] - before["VmRSS"], after["VmRSS"] - before["VmRSS"]
        figures.update(
            during_mib=round(run["during"] - before["VmRSS"], 1),
            peak_mib=round(peak, 1),
            held_mib=round(held, 1),
            peak_messages=round(peak / message, 1),
            held_messages=round(held / message, 1),
        )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=100, help="MiB streamed")
    parser.add_argument("--message-kib", type=int, default=1024, help="KiB per message")
    parser.add_argument("--baseline", metavar="DIR", help="another checkout's recorder too")
    parser.add_argument("--smoke", action="store_true", help="4 MiB (the tests)")
    parser.add_argument("--agent", nargs=2, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--recorder", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.agent:
        asyncio.run(agent(*args.agent))
        return 0
    if args.recorder:
        recorder(*args.recorder)
        return 0
    mib = 4 if args.smoke else args.mib
    size = args.message_kib * 1024
    messages = mib * 2**20 // size
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    processes: list[subprocess.Popen[str]] = []
    results = []
    this = [sys.executable, __file__]
    try:
        kit = subprocess.Popen(
            [sys.executable, "-c", "from recorder.cli import main; main()", "kit", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        processes.append(kit)
        kit_url = read_line(kit, r"listening on (http://\S+)", "stdout").group(1)
        streamer = subprocess.Popen(
            [*this, "--agent", str(messages), str(size)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        processes.append(streamer)
        agent_address = read_line(streamer, r"agent on (\S+)", "stdout").group(1)
        card = f"{kit_url}/.well-known/agent-card.json"
        results.append(measure("direct", agent_address, card, None, size))
        targets = [("recorder", env)]
        if args.baseline:
            targets.append(("baseline", {**env, "PYTHONPATH": str(Path(args.baseline).resolve())}))
        for name, its_env in targets:
            with tempfile.TemporaryDirectory(prefix="bench-grpc-stream-") as out:
                proxy = subprocess.Popen(
                    [*this, "--recorder", kit_url, agent_address, out],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=its_env,
                )
                processes.append(proxy)
                http = read_line(proxy, r"listening on (http://\S+),", "stderr").group(1)
                address = read_line(proxy, r"gRPC listening on (\S+),", "stderr").group(1)
                status = f"{http}/_recorder/status"
                results.append(measure(name, address, status, proxy.pid, size, Path(out)))
                proxy.terminate()
                proxy.wait(LIMIT)
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait(LIMIT)
    columns = ("stream_s", "recorded_s", "grpc_p50_ms", "grpc_max_ms", "http_p50_ms")
    columns += ("http_max_ms", "during_mib", "peak_mib", "held_mib")
    print(f"{messages} messages of {size // 1024} KiB ({mib} MiB)")
    print(f"{'target':>9} " + " ".join(f"{c:>13}" for c in columns))
    for found in results:
        print(f"{found['target']:>9} " + " ".join(f"{found.get(c, '-'):>13}" for c in columns))
    print(json.dumps({"bench": "grpc-stream", "messages": messages, "results": results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
