"""Requests timed onto the upstream's keep-alive timeout, through the real recorder (issue 13,
item 7): how many fail (a spurious 502) of `--requests`.

    .venv/bin/python bench/bench_keepalive.py                    # 1,000 requests, ~15 s
    .venv/bin/python bench/bench_keepalive.py --requests 200     # quicker

The upstream (in this process, on its own event loop thread) answers a small JSON reply and
closes every connection that has been idle for `--keep-alive` seconds (50 ms), as uvicorn,
Node or Apache do after theirs. `recorder record` runs in its own process in front of it, and
`--workers` clients send through it, each waiting `--keep-alive` seconds, 1 ms less or 1 ms
more, between two requests: so the recorder keeps sending on upstream connections just as the
upstream closes them. A request the upstream closed before it could read it must be sent again
on a new connection (`recorder.record.transport.upstream.Http11Upstream.send`), never answered 502.

Prints the requests sent, the replies that were not 200 (and client errors), the upstream
connections opened (each one after the first per worker is a connection the upstream closed
at its timeout: the race was run that often), and the idle closes the upstream made; one JSON
line. Exit status 1 when any request failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPLY = b'{"jsonrpc":"2.0","id":1,"result":{"ok":true}}'
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(
    REPLY
)


class Upstream(asyncio.Protocol):
    """One upstream connection: answers each request with a small JSON reply, and closes the
    connection once it has been idle for `keep_alive` seconds. A request that arrives within
    `window` seconds of that bound meets the close instead of a reply, as it does on a real
    server whose idle timer fired first (the request unread): every other one of them by a
    reset (`abort`: the server closed with the request unread), the others by an orderly close
    (the server closed just before the request came)."""

    opened = 0
    idle_closes = 0
    raced = 0
    keep_alive = 0.05
    window = 0.002

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        Upstream.opened += 1
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]
        self.loop = asyncio.get_running_loop()
        self.buffer = b""
        self.idle_since = self.loop.time()
        self.timer = self.loop.call_later(self.keep_alive, self.idle)

    def data_received(self, data: bytes) -> None:
        self.timer.cancel()
        if not self.buffer and self.loop.time() - self.idle_since >= self.keep_alive - self.window:
            Upstream.raced += 1
            if Upstream.raced % 2:
                self.transport.abort()
            else:
                self.transport.close()
            return
        self.buffer += data
        head_end = self.buffer.find(b"\r\n\r\n")
        if head_end < 0:
            return
        head = self.buffer[:head_end].lower()
        length = 0
        for line in head.split(b"\r\n"):
            if line.startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        if len(self.buffer) < head_end + 4 + length:
            return
        self.buffer = self.buffer[head_end + 4 + length :]
        self.transport.write(HEAD + REPLY)
        self.idle_since = self.loop.time()
        self.timer = self.loop.call_later(self.keep_alive, self.idle)

    def idle(self) -> None:
        Upstream.idle_closes += 1
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.timer.cancel()


def start_upstream() -> tuple[int, asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    ready: list[int] = []
    started = threading.Event()

    async def serve() -> None:
        server = await loop.create_server(Upstream, "127.0.0.1", 0)
        ready.append(server.sockets[0].getsockname()[1])
        started.set()

    threading.Thread(target=loop.run_forever, daemon=True).start()
    asyncio.run_coroutine_threadsafe(serve(), loop)
    if not started.wait(10):
        raise SystemExit("the upstream did not start")
    return ready[0], loop


def start_recorder(upstream_port: int, out: Path) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-c", "from recorder.cli import main; main()", "record", "-q"]
    command += ["--upstream", f"http://127.0.0.1:{upstream_port}", "--listen", "127.0.0.1:0"]
    command += ["--out", str(out)]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    first = process.stderr.readline()
    if not first:
        raise SystemExit("the recorder did not start")
    url = first.split()[4].rstrip(",")  # "recorder record: listening on http://…, …"
    return process, url


async def drive(
    url: str, workers: int, requests: int, keep_alive: float
) -> tuple[dict[int, int], list[str], int]:
    """(replies by status, client errors, requests sent)."""
    statuses: dict[int, int] = {}
    errors: list[str] = []
    body = b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t-1"}}'
    headers = {"content-type": "application/json"}
    per_worker = requests // workers

    async def worker(k: int) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            for n in range(per_worker):
                # idle times of 1 ms less, the same, and 1 ms more than the upstream's bound
                await asyncio.sleep(keep_alive + ((k + n) % 3 - 1) / 1000)
                try:
                    reply = await client.post("/a2a/jsonrpc", content=body, headers=headers)
                    statuses[reply.status_code] = statuses.get(reply.status_code, 0) + 1
                except httpx.HTTPError as exc:
                    errors.append(repr(exc))

    async with asyncio.timeout(max(60.0, requests * keep_alive)):
        await asyncio.gather(*(worker(k) for k in range(workers)))
    return statuses, errors, per_worker * workers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=10)
    parser.add_argument("--keep-alive", type=float, default=0.05, help="the upstream's, s")
    args = parser.parse_args()
    if not 1 <= args.requests <= 10_000 or not 1 <= args.workers <= 100:
        parser.error("--requests must be 1-10000 and --workers 1-100")
    Upstream.keep_alive = args.keep_alive
    port, loop = start_upstream()
    with tempfile.TemporaryDirectory(prefix="bench-keepalive-") as folder:
        process, url = start_recorder(port, Path(folder))
        try:
            started = time.perf_counter()
            statuses, errors, sent = asyncio.run(
                drive(url, args.workers, args.requests, args.keep_alive)
            )
            seconds = time.perf_counter() - started
        finally:
            process.terminate()
            process.wait(timeout=15)

    loop.call_soon_threadsafe(loop.stop)
    failed = sum(count for status, count in statuses.items() if status != 200) + len(errors)
    figures = {
        "bench": "keepalive",
        "requests": sent,
        "failed": failed,
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "client_errors": errors[:3],
        "upstream_connections": Upstream.opened,
        "upstream_idle_closes": Upstream.idle_closes,
        "requests_met_by_a_close": Upstream.raced,
        "seconds": round(seconds, 1),
    }
    print(
        f"{figures['requests']} requests onto a {args.keep_alive * 1000:g} ms keep-alive: "
        f"{failed} failed; {Upstream.raced} of them met a close of their upstream connection "
        f"(the upstream opened {Upstream.opened} connections, and closed "
        f"{Upstream.idle_closes} more idle ones at its bound; {seconds:.1f} s)"
    )
    print(json.dumps(figures))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
