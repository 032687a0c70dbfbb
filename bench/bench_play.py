"""Benchmark: `recorder play` of 1,000 exchanges vs a bare httpx loop sending the same requests.

    .venv/bin/python bench/bench_play.py [--exchanges 1000] [--rounds 5]

Goal (issue 5): playing costs at most 1.15x the bare loop. Both run in this process against the
same fake agent, a small raw-ASGI JSON-RPC app under uvicorn in a *separate process* on a
loopback port (so the agent's work does not share this process's GIL). The fake agent answers
like an A2A agent, with generated values to alias: SendMessage returns a new task (uuid4 id and
contextId, an RFC 3339 timestamp); GetTask returns the task it is asked for (stateless: the
contextId is derived from the task id). The golden transcripts (50 files of SendMessage then
GetTask pairs) are recorded from the same agent first.

- bare loop: one `httpx.Client`, `client.post(url, content=<recorded body>, headers=<recorded
  headers>)` and `.content` for every recorded request, in order.
- play: `recorder.replay.run.play(folder, agent=url)`: parsing the files, carry-forward
  (the live task id goes into each GetTask), placeholder filling, the comparison of each live
  reply as it came over the wire (its model `Response` is built only when the fast path cannot
  decide).

Rounds alternate bare / play; the ratio of the medians is reported, with each median, the
part of the play time spent parsing the transcripts (a user's `recorder play` reads them, so
the goal's ratio includes it), and for information the ratio of the fastest rounds (less
sensitive to other load on the machine), `--jobs 2` and a lower-level bare loop through
`httpx.HTTPTransport` (what the player itself sends with, so it shows the player's whole own
cost).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

FILES = 50

# --------------------------------------------------------------------------- the fake agent

_CONTEXT_NAMESPACE = uuid.UUID("6f1c0a8e-2d4b-4f7e-9a51-3c2b1d0e9f87")


def _task(task_id: str) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    return {
        "id": task_id,
        "contextId": str(uuid.uuid5(_CONTEXT_NAMESPACE, task_id)),
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": now},
    }


def _reply(body: bytes) -> bytes:
    request = json.loads(body)
    method = request.get("method")
    if method == "SendMessage":
        result: dict[str, Any] = {"task": _task(str(uuid.uuid4()))}
    elif method == "GetTask":
        result = _task(request["params"]["id"])
    else:
        error = {"code": -32601, "message": "Method not found"}
        return json.dumps({"error": error, "id": request.get("id"), "jsonrpc": "2.0"}).encode()
    reply = {"result": result, "id": request.get("id"), "jsonrpc": "2.0"}
    return json.dumps(reply, separators=(",", ":")).encode()


async def fake_agent(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Raw ASGI: POST /a2a/jsonrpc with a small JSON-RPC reply, no framework in the way."""
    if scope["type"] != "http":
        return
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = _reply(b"".join(chunks))
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def serve_fake_agent() -> None:
    """Child process: bind a free loopback port, print it, serve until killed."""
    import uvicorn

    from recorder.servers import bind_socket

    sock = bind_socket("127.0.0.1", 0)
    # accepted sockets inherit TCP_NODELAY: without it the reply's second write (the body)
    # waits ~40 ms for the client's delayed ACK (asyncio sets it only when proto == TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(fake_agent, log_level="warning", lifespan="off", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


# --------------------------------------------------------------------------- goldens


def record_goldens(url: str, folder: Path, exchanges: int) -> int:
    """SendMessage / GetTask pairs spread over FILES files; returns the exchange count."""
    from recorder.disk.transcripts import dump
    from recorder.format.model import Exchange, Headers, Request, Transcript
    from recorder.replay.send import make_transport, send_raw

    host = url.removeprefix("http://")
    headers = Headers(
        [("Host", host), ("Content-Type", "application/json"), ("A2A-Version", "1.0")]
    )
    per_file = max(2, exchanges // FILES // 2 * 2)
    total = 0
    with make_transport() as transport:
        for number in range(1, FILES + 1):
            recorded: list[Exchange] = []
            for pair in range(per_file // 2):
                message = {
                    "messageId": f"msg-{number}-{pair}",
                    "role": "ROLE_USER",
                    "parts": [{"text": "Which languages do you review?"}],
                }
                body = json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 2 * pair + 1,
                        "method": "SendMessage",
                        "params": {"message": message},
                    }
                ).encode()
                request = Request("POST", "/a2a/jsonrpc", headers, body)
                response = send_raw(transport, url, request).response
                recorded.append(Exchange(request, response, title="SendMessage"))
                task_id = response.json["result"]["task"]["id"]
                body = json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 2 * pair + 2,
                        "method": "GetTask",
                        "params": {"id": task_id},
                    }
                ).encode()
                request = Request("POST", "/a2a/jsonrpc", headers, body)
                reply = send_raw(transport, url, request).response
                recorded.append(Exchange(request, reply, title="GetTask"))
            dump(Transcript(tuple(recorded)), folder / f"{number:02d}-bench.http")
            total += len(recorded)
    return total


# --------------------------------------------------------------------------- the two loops


def bare_loop(url: str, requests: list[tuple[str, bytes, list[tuple[str, str]]]]) -> float:
    started = time.perf_counter()
    with httpx.Client() as client:
        for target, body, headers in requests:
            response = client.post(url + target, content=body, headers=headers)
            response.content  # noqa: B018 - read the whole reply
            assert response.status_code == 200
    return time.perf_counter() - started


def bare_transport_loop(
    url: str, requests: list[tuple[str, bytes, list[tuple[str, str]]]]
) -> float:
    """The same requests through `httpx.HTTPTransport` directly, as the player sends them."""
    started = time.perf_counter()
    timeout = httpx.Timeout(30).as_dict()
    with httpx.HTTPTransport(verify=False) as transport:
        for target, body, headers in requests:
            request = httpx.Request(
                "POST", url + target, headers=headers, content=body, extensions={"timeout": timeout}
            )
            response = transport.handle_request(request)
            response.read()
            response.close()
            assert response.status_code == 200
    return time.perf_counter() - started


def play_loop(url: str, folder: Path, exchanges: int, jobs: int = 1) -> float:
    from recorder.replay.run import play

    started = time.perf_counter()
    result = play([folder], agent=url, environ={}, jobs=jobs)
    elapsed = time.perf_counter() - started
    assert result.exchange_count == exchanges, result.exchange_count
    assert result.passed, [
        m for t in result.transcripts for e in t.exchanges for m in e.mismatches
    ][:3]
    return elapsed


def parse_only(folder: Path) -> float:
    """What `play` spends reading the transcripts (part of the play time, shown apart)."""
    from recorder.replay.plan import load_transcripts

    started = time.perf_counter()
    load_transcripts([folder])
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--exchanges", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_fake_agent()
        return

    agent = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert agent.stdout is not None
        port = int(agent.stdout.readline())
        url = f"http://127.0.0.1:{port}"
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            exchanges = record_goldens(url, folder, args.exchanges)
            from recorder.disk.transcripts import load

            requests = [
                (
                    e.request.target,
                    e.request.body,
                    [(n, v) for n, v in e.request.headers if n.lower() != "host"],
                )
                for path in sorted(folder.glob("*.http"))
                for e in load(path).exchanges
            ]
            bare_loop(url, requests[:100])  # warm up both paths
            play_loop(url, folder, exchanges)
            bare: list[float] = []
            played: list[float] = []
            parsed: list[float] = []
            parallel: list[float] = []
            low_level: list[float] = []
            for _ in range(args.rounds):
                bare.append(bare_loop(url, requests))
                low_level.append(bare_transport_loop(url, requests))
                played.append(play_loop(url, folder, exchanges))
                parsed.append(parse_only(folder))
                parallel.append(play_loop(url, folder, exchanges, jobs=2))
    finally:
        agent.terminate()
        agent.wait(10)
    bare_median = statistics.median(bare)
    play_median = statistics.median(played)

    def line(name: str, seconds: float) -> str:
        per = seconds / exchanges * 1e6
        return f"{name:<22}{seconds * 1000:8.1f} ms  ({per:6.1f} µs/exchange)"

    print(f"exchanges per run     {exchanges} ({FILES} files)")
    print(line("bare httpx loop", bare_median))
    print(line("recorder play", play_median))
    parse_median = statistics.median(parsed)
    print(line("  of which parsing", parse_median))
    print(f"ratio play / bare     {play_median / bare_median:8.3f}  (goal <= 1.15)")
    without = (play_median - parse_median) / bare_median
    print(f"  without parsing     {without:8.3f}")
    print(f"ratio of fastest rounds{min(played) / min(bare):7.3f}  (for information)")
    low_median = statistics.median(low_level)
    print(line("bare transport loop", low_median))
    print(f"ratio play / transport{play_median / low_median:8.3f}  (for information)")
    parallel_median = statistics.median(parallel)
    print(line("recorder play -j 2", parallel_median))
    print(f"ratio play -j 2 / bare{parallel_median / bare_median:8.3f}  (for information)")
    print(f"rounds (s)            bare {[round(b, 3) for b in bare]}")
    print(f"                      play {[round(p, 3) for p in played]}")


if __name__ == "__main__":
    main()
