"""What the recorder's memory costs (issue 13: items 5 and 8), read from /proc on loopback.

    .venv/bin/python bench/bench_memory.py                      # ~30 s: 1,000 idle, 100 MB
    .venv/bin/python bench/bench_memory.py --idle 200 --mb 20   # quicker

Starts `recorder record` in its own process (on a free 127.0.0.1 port, recording into a
temporary folder) in front of a raw upstream process, then:

  idle   opens `--idle` connections to the proxy (at most 1,000) that send nothing, reads the
         proxy's resident memory (VmRSS) before and with them open, then waits (bounded) for
         the proxy to close them after its keep-alive bound (`--keep-alive`).
  reply  for each body kind (`--kinds`: "binary", bytes that are no UTF-8 and are written
         base64; "text", ASCII lines written verbatim), a fresh recorder relays and records
         one `--mb` MB reply (Content-Length, so a streamed body); the figure is the proxy's
         peak resident memory (VmHWM) less its resident memory just before the request
         (the idle footprint), next to the body's size.

Prints a table and one JSON line per figure.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

MB = 1_000_000

# a raw HTTP/1.1 upstream: every request gets the same prepared reply (kind and size from argv)
UPSTREAM = r"""
import asyncio, os, sys
kind, size = sys.argv[1], int(sys.argv[2])
if kind == "binary":
    body = (bytes(range(256)) * (size // 256 + 1))[:size]  # 0x80.. bytes: no UTF-8
    ctype = b"application/octet-stream"
else:
    line = b"the quick brown fox jumps over the lazy dog 0123456789 " * 2 + b"\n"
    body = (line * (size // len(line) + 1))[:size]
    ctype = b"text/plain; charset=utf-8"
head = b"HTTP/1.1 200 OK\r\ncontent-type: " + ctype + b"\r\ncontent-length: %d\r\n\r\n" % size

async def serve(reader, writer):
    try:
        while True:
            data = await reader.readuntil(b"\r\n\r\n")
            writer.write(head)
            writer.write(body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()

async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()

asyncio.run(main())
"""


def proc_status(pid: int, field: str) -> int:
    """A /proc/PID/status figure in bytes (VmRSS, VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


@contextmanager
def running(
    command: list[str], what: str, *, status_on_stderr: bool = False
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A child process and the first line it prints (its port or its address), on stdout or,
    with `status_on_stderr` (the recorder's status lines), on stderr."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    quiet, piped = subprocess.DEVNULL, subprocess.PIPE
    process = subprocess.Popen(
        command,
        stdout=quiet if status_on_stderr else piped,
        stderr=piped if status_on_stderr else quiet,
        text=True,
        env=env,
    )
    try:
        stream = process.stderr if status_on_stderr else process.stdout
        assert stream is not None
        first = stream.readline()
        if not first:
            raise SystemExit(f"{what} did not start")
        yield process, first
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@contextmanager
def recorder(upstream_port: int, out: Path, *options: str) -> Iterator[tuple[int, str]]:
    command = [sys.executable, "-c", "from recorder.cli import main; main()", "record"]
    command += ["--upstream", f"http://127.0.0.1:{upstream_port}", "--listen", "127.0.0.1:0"]
    command += ["--out", str(out), *options]
    with running(command, "the recorder", status_on_stderr=True) as (process, first):
        url = first.split()[4].rstrip(",")  # "recorder record: listening on http://…, …"
        httpx.get(url + "/_recorder/scenario", timeout=10)  # up and serving
        yield process.pid, url


@contextmanager
def upstream(kind: str, size: int) -> Iterator[int]:
    command = [sys.executable, "-c", UPSTREAM, kind, str(size)]
    with running(command, "the upstream") as (_, first):
        yield int(first)


def idle_connections(count: int, keep_alive: float, folder: Path) -> dict[str, float]:
    with (
        upstream("text", 10) as port,
        recorder(port, folder, "--keep-alive", str(keep_alive)) as (
            pid,
            url,
        ),
    ):
        host, _, proxy_port = url.removeprefix("http://").rpartition(":")
        time.sleep(0.5)
        before = proc_status(pid, "VmRSS")
        sockets = []
        opened = time.monotonic()
        try:
            for _ in range(count):
                sockets.append(socket.create_connection((host, int(proxy_port)), timeout=5))
            fds = Path(f"/proc/{pid}/fd")
            deadline = time.monotonic() + 10
            while len(list(fds.iterdir())) < count and time.monotonic() < deadline:
                time.sleep(0.05)  # until the proxy has accepted them all (bounded)
            time.sleep(0.2)
            during = proc_status(pid, "VmRSS")
            # every connection closed by the proxy within the keep-alive bound (+5 s)
            selector = selectors.DefaultSelector()
            for sock in sockets:
                sock.setblocking(False)
                selector.register(sock, selectors.EVENT_READ)
            open_ = len(sockets)
            deadline = opened + keep_alive + 5
            while open_ and time.monotonic() < deadline:
                for key, _ in selector.select(timeout=0.2):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    try:
                        data = sock.recv(4096)
                    except (ConnectionError, BlockingIOError):
                        data = b""
                    if not data:
                        selector.unregister(sock)
                        open_ -= 1
            closed_after = time.monotonic() - opened
            selector.close()
        finally:
            for sock in sockets:
                sock.close()
    return {
        "connections": count,
        "rss_before_mb": before / MB,
        "rss_with_them_mb": during / MB,
        "added_mb": (during - before) / MB,
        "still_open": open_,
        "all_closed_after_s": closed_after,
    }


def one_reply(kind: str, size: int, folder: Path) -> dict[str, float]:
    with upstream(kind, size) as port, recorder(port, folder, "--timeout", "120") as (pid, url):
        time.sleep(0.3)
        idle = proc_status(pid, "VmRSS")
        started = time.monotonic()
        received = 0
        with (
            httpx.Client(timeout=120) as client,
            client.stream("GET", url + "/big", headers={"Recorder-Scenario": kind}) as reply,
        ):
            for chunk in reply.iter_raw():
                received += len(chunk)
        took = time.monotonic() - started
        peak = proc_status(pid, "VmHWM")
        after = proc_status(pid, "VmRSS")
    written = sum(path.stat().st_size for path in folder.glob("*.http"))
    assert received == size, (received, size)
    return {
        "kind": kind,
        "body_mb": size / MB,
        "idle_mb": idle / MB,
        "peak_mb": peak / MB,
        "peak_growth_mb": (peak - idle) / MB,
        "growth_per_body": (peak - idle) / size,
        "after_mb": after / MB,
        "transcript_mb": written / MB,
        "seconds": took,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--idle", type=int, default=1000, help="idle connections (<= 1000)")
    parser.add_argument("--keep-alive", type=float, default=3.0)
    parser.add_argument("--mb", type=float, default=100.0, help="reply size, MB")
    parser.add_argument("--kinds", default="binary,text")
    args = parser.parse_args()
    count = max(1, min(args.idle, 1000))
    results: list[dict[str, float | str]] = []
    work = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    try:
        idle = idle_connections(count, args.keep_alive, work / "idle")
        print(
            f"{count} idle connections: +{idle['added_mb']:.1f} MB RSS "
            f"({idle['rss_before_mb']:.1f} -> {idle['rss_with_them_mb']:.1f} MB); "
            f"{idle['still_open']:.0f} still open {idle['all_closed_after_s']:.1f} s after "
            f"opening (keep-alive {args.keep_alive:g} s)"
        )
        results.append({"target": "idle-connections", **idle})
        for kind in args.kinds.split(","):
            reply = one_reply(kind, int(args.mb * MB), work / kind)
            print(
                f"{reply['body_mb']:.0f} MB {kind} reply: peak +{reply['peak_growth_mb']:.0f} MB "
                f"over the idle {reply['idle_mb']:.0f} MB ({reply['growth_per_body']:.2f}x the "
                f"body), {reply['after_mb']:.0f} MB after, transcript "
                f"{reply['transcript_mb']:.0f} MB, {reply['seconds']:.2f} s"
            )
            results.append({"target": f"reply-{kind}", **reply})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for result in results:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
