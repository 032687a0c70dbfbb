"""What a crash of the recorder costs: `recorder record` killed with SIGKILL under load, the
replies its clients had got counted against the exchanges on disk.

    .venv/bin/python bench/bench_kill.py              # 20 kills, ~1 minute
    .venv/bin/python bench/bench_kill.py --kills 3    # a smoke run

Each round starts, on free 127.0.0.1 ports, `recorder record` (a fresh folder) in front of
bench/bench_proxy.py's fast fake agent (started once), drives it with `--clients` concurrent
clients (small JSON-RPC SendMessage calls, each message id unique) for `--seconds`, then kills
it (SIGKILL) while the clients are still sending. A client that got its 200 before the kill
holds an exchange the recorder answered; the exchanges on disk are read back (a last block cut
by the kill does not count). Lost: answered, not on disk — the exchanges still in the window
between the reply and its write. Prints each round, then the totals and one JSON line.
`--files` gives each exchange a file of its own (unscripted traffic) instead of one
scenario's file. Loopback only; every wait is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from bench_proxy import HEADERS, PATH, free_port, wait_up

HERE = Path(__file__).resolve().parent
LIMIT = 20.0  # seconds any one wait may take
_ID = re.compile(r'"messageId":\s*"(k\d+-\d+)"')


def start_upstream(port: int) -> subprocess.Popen[bytes]:
    code = f"import bench_proxy; bench_proxy.serve_upstream({port})"
    return subprocess.Popen([sys.executable, "-c", code], cwd=HERE)


def start_recorder(upstream: str, out: Path, port: int) -> subprocess.Popen[bytes]:
    args = ["record", "--upstream", upstream, "--out", str(out), "--listen", f"127.0.0.1:{port}"]
    code = "from recorder.cli import main; main()"
    return subprocess.Popen(
        [sys.executable, "-c", code, *args, "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


pending: list[int] = []  # the backlog seen in the round that runs


def body(round_: int, n: int) -> bytes:
    message = {"messageId": f"k{round_}-{n}", "role": "ROLE_USER", "parts": [{"text": "ping"}]}
    call = {"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": {"message": message}}
    return json.dumps(call, separators=(",", ":")).encode()


async def drive(
    url: str, round_: int, clients: int, seconds: float, pid: int, headers: dict[str, str]
) -> set[str]:
    """Send from `clients` tasks; after `seconds`, kill the recorder (process `pid`) while
    they send; returns the message ids whose 200 came before the kill."""
    answered: set[str] = set()
    pending.clear()
    counter = iter(range(10**9))
    killed = asyncio.Event()

    async def client(http: httpx.AsyncClient) -> None:
        while not killed.is_set():
            n = next(counter)
            try:
                reply = await http.post(PATH, content=body(round_, n), headers=headers)
            except httpx.HTTPError:
                return
            if reply.status_code == 200 and not killed.is_set():
                answered.add(f"k{round_}-{n}")

    async def watch(http: httpx.AsyncClient) -> None:
        # the writer's backlog, as the status tells it, every 20 ms (what a kill then costs)
        while not killed.is_set():
            try:
                status = (await http.get("/_recorder/status")).json()
            except (httpx.HTTPError, ValueError):
                return
            pending.append(int(status["pending"]))
            await asyncio.sleep(0.02)

    limits = httpx.Limits(max_connections=clients + 1)
    async with httpx.AsyncClient(base_url=url, timeout=LIMIT, limits=limits) as http:
        tasks = [asyncio.create_task(client(http)) for _ in range(clients)]
        tasks.append(asyncio.create_task(watch(http)))
        await asyncio.sleep(seconds)
        killed.set()  # (before the kill: a 200 read after it is not counted)
        os.kill(pid, signal.SIGKILL)
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), LIMIT)
    return answered


def on_disk(folder: Path) -> set[str]:
    """The message ids of the whole exchanges in `folder`'s transcripts."""
    found: set[str] = set()
    for path in folder.glob("*.http"):
        text = path.read_text("utf-8", "replace")
        blocks = text.split("\n### ")
        if blocks and not text.endswith("\n"):
            blocks = blocks[:-1]  # cut by the kill inside its last write
        for block in blocks:
            if "\nHTTP/1.1 " in block:  # (its reply is there too)
                found.update(_ID.findall(block.split("\nHTTP/1.1 ", 1)[0]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--files", action="store_true", help="a file per exchange")
    args = parser.parse_args()
    upstream_port = free_port()
    upstream = start_upstream(upstream_port)
    total_answered = total_lost = 0
    lost_per_kill: list[int] = []
    backlog: list[int] = []
    try:
        wait_up(f"http://127.0.0.1:{upstream_port}")
        with tempfile.TemporaryDirectory() as tmp:
            for round_ in range(args.kills):
                out = Path(tmp) / f"round-{round_}"
                port = free_port()
                recorder = start_recorder(f"http://127.0.0.1:{upstream_port}", out, port)
                try:
                    url = f"http://127.0.0.1:{port}"
                    wait_up(url)
                    headers = dict(HEADERS)
                    if not args.files:
                        headers["Recorder-Scenario"] = "load"
                    answered = asyncio.run(
                        drive(url, round_, args.clients, args.seconds, recorder.pid, headers)
                    )
                finally:
                    if recorder.poll() is None:
                        recorder.kill()
                    recorder.wait(LIMIT)
                lost = len(answered - on_disk(out))
                total_answered += len(answered)
                total_lost += lost
                lost_per_kill.append(lost)
                backlog.extend(pending)
                print(
                    f"kill {round_ + 1:2d}: {len(answered):6d} answered, {lost:3d} lost"
                    f" (backlog seen: most {max(pending, default=0)})"
                )
    finally:
        upstream.send_signal(signal.SIGTERM)
        try:
            upstream.wait(LIMIT)
        except subprocess.TimeoutExpired:
            upstream.kill()
    mean = total_lost / max(len(lost_per_kill), 1)
    print(
        f"{total_lost} of {total_answered} answered exchanges lost over {len(lost_per_kill)} "
        f"kills: {mean:.1f} per kill (most {max(lost_per_kill, default=0)})"
    )
    result = {
        "bench": "kill",
        "kills": len(lost_per_kill),
        "answered": total_answered,
        "lost": total_lost,
        "lost_per_kill": lost_per_kill,
        "backlog_max": max(backlog, default=0),
        "backlog_mean": round(sum(backlog) / max(len(backlog), 1), 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    start = time.monotonic()
    main()
    print(f"({time.monotonic() - start:.0f} s)", file=sys.stderr)
