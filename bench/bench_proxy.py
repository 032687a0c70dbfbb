"""What the recording proxy costs, measured on loopback against a fast fake upstream.

    .venv/bin/python bench/bench_proxy.py            # ~1 minute
    .venv/bin/python bench/bench_proxy.py --quick    # ~20 s

Starts, each in its own process on a free 127.0.0.1 port: a fake A2A JSON-RPC upstream (a raw
ASGI app: ~1 KB JSON replies, and SSE streams of 5 frames 20 ms apart), and the recorder
(`recorder.record.proxy`, recording into a temporary folder) once per variant (`--variants`):
"per-connection" (the default: a free list of keep-alive connections whose replies httptools
parses, under the proxy's own HTTP/1.1 server on uvloop, `recorder.record.transport.http1`),
"shared" (one httpx transport's pool for every request), and, for information, "forward-only"
(the default with recording switched off: what the recording itself costs is the difference).
Then, with the targets interleaved so that drift hits all alike:

  lat   sequential small JSON-RPC calls: p50 / p99, and the p50 added over direct
  cpu   32 requests in flight for a few seconds: requests/s and the proxy's CPU time per
        recorded request (utime+stime from /proc, the steadiest figure on a shared machine)
  sse   time to the first SSE frame: p50, and how much later than direct

`--baseline DIR` adds "recorder/baseline": the default variant run from another source tree
(DIR holds a `recorder` package, e.g. `git archive <commit> recorder | tar -x -C DIR`), so that
a change is measured before/after in one run, interleaved (`--baseline-variants`: which
variants run from there, "baseline/VARIANT" each when more than the default). Throughput is
measured for direct too (`rps_vs_direct`: a target's requests/s over direct's).

Every request through the proxy is recorded (one transcript file per exchange); the bench
reports the count of files next to the count of requests that were answered, and, measured in
the same run, what a new file costs the kernel in the folder the recordings go to (`--dir`,
default the temporary folder; bench/bench_newfile.py): on a crowded ext4 it can outweigh the
recorder's own CPU per request, so read the two together. Prints a table
and one JSON line per target. For a comparison with mitmdump, time `mitmdump --mode
reverse:AGENT_URL` in front of the same agent with the same client, in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from bench_newfile import measure as measure_new_file

PATH = "/a2a/jsonrpc"
TICK = os.sysconf("SC_CLK_TCK")
HERE = Path(__file__).resolve()


# --------------------------------------------------------------------------- servers


async def upstream_app(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    """A fast fake agent: JSON-RPC replies of ~1 KB; SendStreamingMessage -> 5 SSE frames."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    try:
        call = json.loads(body) if body else {}
    except ValueError:
        call = {}
    rid = call.get("id")
    if call.get("method") == "SendStreamingMessage":
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        for n in range(5):
            if n:
                await asyncio.sleep(0.02)
            frame = {"jsonrpc": "2.0", "id": rid, "result": {"statusUpdate": {"n": n}}}
            data = b"data: " + json.dumps(frame).encode() + b"\n\n"
            await send({"type": "http.response.body", "body": data, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    text = "lorem ipsum dolor sit amet " * 34
    reply = {
        "jsonrpc": "2.0",
        "id": rid,
        "result": {"message": {"role": "ROLE_AGENT", "parts": [{"text": text}]}},
    }
    data = json.dumps(reply, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


def serve_upstream(port: int) -> None:
    import uvicorn

    uvicorn.run(upstream_app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def serve_recorder(port: int, upstream: str, out: str, variant: str) -> None:
    """`variant`: the upstream pool ("per-connection", "shared"), or "forward-only" (for
    information: the default proxy with its recording switched off, no model, no file)."""
    from recorder.record.proxy import create_proxy_app
    from recorder.record.proxy.server import serve

    pool = "shared" if variant == "shared" else "per-connection"
    proxy = create_proxy_app(upstream, out=Path(out), pool=pool)  # type: ignore[arg-type]
    if variant == "forward-only":
        recording = proxy.recording
        recording.submit = lambda call, *a: None  # type: ignore[method-assign]
        recording.builder.exchange = lambda call, *a, **k: None  # type: ignore[method-assign]
        recording.write = lambda call, exchange: None  # type: ignore[method-assign]
    serve(proxy, host="127.0.0.1", port=port, announce=lambda _: None)


# --------------------------------------------------------------------------- measuring


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def rpc(i: int, method: str = "SendMessage") -> bytes:
    message = {"messageId": f"m-{i}", "role": "ROLE_USER", "parts": [{"text": "ping"}]}
    body = {"jsonrpc": "2.0", "id": i, "method": method, "params": {"message": message}}
    return json.dumps(body, separators=(",", ":")).encode()


HEADERS = {"content-type": "application/json", "a2a-version": "1.0"}


def wait_up(url: str, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if httpx.post(url + PATH, content=rpc(0), headers=HEADERS).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{url} did not come up")


def latency_block(client: httpx.Client, start: int, n: int, out: list[float]) -> None:
    for i in range(start, start + n):
        t0 = time.perf_counter()
        reply = client.post(PATH, content=rpc(i), headers=HEADERS)
        reply.read()
        elapsed = time.perf_counter() - t0
        if reply.status_code == 200:
            out.append(elapsed)


def sse_first_frame(client: httpx.Client, i: int) -> float | None:
    t0 = time.perf_counter()
    first = None
    buffer = b""
    with client.stream("POST", PATH, content=rpc(i, "SendStreamingMessage"), headers=HEADERS) as r:
        for chunk in r.iter_raw():
            buffer += chunk
            if first is None and b"\n\n" in buffer:
                first = time.perf_counter() - t0
    return first


async def load_phase(url: str, conc: int, seconds: float) -> tuple[int, int]:
    """`conc` coroutines, one single-connection client each, until the deadline."""
    done = 0
    errors = 0
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)

    async def worker(k: int) -> None:
        nonlocal done, errors
        i = 1_000_000 * (k + 1)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30.0) as client:
            while time.monotonic() < deadline:
                i += 1
                try:
                    reply = await client.post(PATH, content=rpc(i), headers=HEADERS)
                    ok = reply.status_code == 200
                except httpx.HTTPError:
                    ok = False
                if ok:
                    done += 1
                else:
                    errors += 1

    await asyncio.gather(*(worker(k) for k in range(conc)))
    return done, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="a few calls: does it still run")
    parser.add_argument(
        "--variants",
        default="per-connection,shared",
        help="comma-separated: per-connection, shared, forward-only",
    )
    parser.add_argument(
        "--baseline", help="a folder holding another `recorder` package: measured beside"
    )
    parser.add_argument(
        "--baseline-variants",
        default="per-connection",
        help="comma-separated: the variants run from --baseline too",
    )
    parser.add_argument(
        "--dir",
        help="where the recorders' transcript folders go (default: the temporary folder); "
        "what a new file costs there is measured in the same run (bench_newfile.py)",
    )
    parser.add_argument("--serve-upstream", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-recorder", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream(args.serve_upstream)
        return
    if args.serve_recorder:
        port, upstream, out, pool = args.serve_recorder
        serve_recorder(int(port), upstream, out, pool)
        return

    lat_n, block, cpu_s, sse_n = (300, 50, 3.0, 10) if args.quick else (1500, 250, 6.0, 40)
    if args.smoke:
        lat_n, block, cpu_s, sse_n = (40, 20, 0.5, 3)
    processes: list[subprocess.Popen[bytes]] = []
    folders: dict[str, str] = {}
    try:
        up_port = free_port()
        processes.append(
            subprocess.Popen([sys.executable, str(HERE), "--serve-upstream", str(up_port)])
        )
        upstream = f"http://127.0.0.1:{up_port}"
        targets: dict[str, str] = {"direct": upstream}
        pids: dict[str, int] = {}
        variants = [(v, f"recorder/{v}", None) for v in args.variants.split(",")]
        if args.baseline:
            chosen = args.baseline_variants.split(",")
            for variant in chosen:
                name = (
                    "recorder/baseline" if chosen == ["per-connection"] else f"baseline/{variant}"
                )
                variants.append((variant, name, args.baseline))
        for variant, name, source in variants:
            port = free_port()
            folder = tempfile.mkdtemp(prefix=f"bench-proxy-{variant}-", dir=args.dir)
            command = [sys.executable, str(HERE), "--serve-recorder", str(port), upstream]
            env = dict(os.environ)
            if source is not None:
                env["PYTHONPATH"] = str(Path(source).resolve())
            process = subprocess.Popen([*command, folder, variant], env=env)
            processes.append(process)
            targets[name] = f"http://127.0.0.1:{port}"
            pids[name] = process.pid
            folders[name] = folder
        for url in targets.values():
            wait_up(url)

        results: dict[str, dict[str, Any]] = {name: {"target": name} for name in targets}
        clients = {name: httpx.Client(base_url=url, timeout=30.0) for name, url in targets.items()}
        print(f"[lat] {lat_n} sequential calls per target", file=sys.stderr)
        lat: dict[str, list[float]] = {name: [] for name in targets}
        answered = {name: 1 for name in targets}  # the wait_up call
        for name, client in clients.items():
            warm: list[float] = []
            latency_block(client, 1, 50, warm)
            answered[name] += len(warm)
        for start in range(0, lat_n, block):
            for name, client in clients.items():
                latency_block(client, 10_000 + start, min(block, lat_n - start), lat[name])
        for name in targets:
            results[name]["lat_p50_ms"] = round(pct(lat[name], 0.5) * 1000, 3)
            results[name]["lat_p99_ms"] = round(pct(lat[name], 0.99) * 1000, 3)

        print(f"[sse] {sse_n} streams per target", file=sys.stderr)
        firsts: dict[str, list[float]] = {name: [] for name in targets}
        for i in range(sse_n):
            for name, client in clients.items():
                first = sse_first_frame(client, i)
                if first is not None:
                    firsts[name].append(first)
        for name in targets:
            results[name]["sse_first_p50_ms"] = round(pct(firsts[name], 0.5) * 1000, 3)
            answered[name] += len(lat[name]) + len(firsts[name])

        # each unscripted exchange is a new file: its price is the disk's, read beside the CPU
        disk = measure_new_file(args.dir or tempfile.gettempdir(), 500)
        print(
            f"[disk] a new file in {disk['folder']}: {disk['new_file_sys_us']} us of kernel CPU "
            "(bench_newfile.py)",
            file=sys.stderr,
        )
        print(f"[cpu] 32 in flight, {cpu_s}s per target", file=sys.stderr)
        for name, url in targets.items():
            before = cpu_seconds(pids[name]) if name in pids else 0.0
            t0 = time.monotonic()
            done, errors = asyncio.run(load_phase(url, 32, cpu_s))
            elapsed = time.monotonic() - t0
            results[name]["rps"] = round(done / elapsed, 1)
            results[name]["errors"] = errors
            if name in pids:
                used = cpu_seconds(pids[name]) - before
                results[name]["cpu_us_per_request"] = round(used / max(done, 1) * 1e6, 1)
                answered[name] += done
        for client in clients.values():
            client.close()
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()

    direct = results["direct"]
    for name, folder in folders.items():
        files = len(list(Path(folder).glob("*.http")))
        shutil.rmtree(folder, ignore_errors=True)
        results[name]["recorded_files"] = files
        results[name]["new_file_sys_us"] = disk["new_file_sys_us"]
        results[name]["answered_requests"] = answered[name]
        results[name]["added_p50_ms"] = round(results[name]["lat_p50_ms"] - direct["lat_p50_ms"], 3)
        results[name]["sse_first_later_ms"] = round(
            results[name]["sse_first_p50_ms"] - direct["sse_first_p50_ms"], 3
        )
        results[name]["rps_vs_direct"] = round(results[name]["rps"] / max(direct["rps"], 1), 2)
    columns = ("p50 ms", "+p50", "p99 ms", "sse1 ms", "+sse1", "req/s", "x direct", "cpu us/req")
    print(f"{'target':24} " + " ".join(f"{c:>10}" for c in columns))
    for name, row in results.items():
        keys = ("lat_p50_ms", "added_p50_ms", "lat_p99_ms", "sse_first_p50_ms")
        keys += ("sse_first_later_ms", "rps", "rps_vs_direct", "cpu_us_per_request")
        print(f"{name:24} " + " ".join(f"{row.get(k, 0):10.3f}" for k in keys))
    for row in results.values():
        print(json.dumps(row))


if __name__ == "__main__":
    main()
