"""What recording an agent's own calls costs (`recorder record --downstream`), on loopback.

    .venv/bin/python bench/bench_calls.py            # ~30 s
    .venv/bin/python bench/bench_calls.py --smoke    # a few seconds

Starts, each in its own process: a fake agent and a fake model (one uvicorn process: the
agent's `/a2a/jsonrpc` streams a frame every 0.2 s while it is open; the model's
`POST /v1/chat/completions` answers ~1 KB of JSON, or, with `"stream": true`, `--frames`
`chat.completion.chunk` frames as fast as it can, then `data: [DONE]`), and `recorder record`
in front of the agent with `--downstream model=<the model>@0`. An A2A stream is opened
through the recorder and kept open, so that every call is the agent's call of that exchange
(placed, recorded). Then, interleaved so that drift hits both alike, the bench (standing in
for the agent) calls the model directly and through the downstream listener:

  call    sequential chat completions (JSON): p50 each way, the p50 the recorder adds
  frame   a streamed completion of `--frames` frames: time to its last frame, per frame, each
          way, and what the recorder adds per streamed token frame

Every figure is measured in the same run; the ratios (through the recorder / direct) are the
ones to compare across machines. Prints a table and one JSON line. The calls are recorded (at
the end, once the A2A exchange they belong to is written: the bench counts them from the
recorder's summary).
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve()
LIMIT = 60.0

FAKE = r"""
import asyncio, json, sys
import uvicorn
from recorder.servers import bind_socket

FRAMES = int(sys.argv[1])
REPLY = {"id": "chatcmpl-bench", "object": "chat.completion", "created": 1, "model": "m",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "word " * 150},
                      "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 1, "completion_tokens": 150, "total_tokens": 151}}
CHUNK = ("data: " + json.dumps({"id": "chatcmpl-bench", "object": "chat.completion.chunk",
         "created": 1, "model": "m", "choices": [{"index": 0, "delta": {"content": "word "},
         "finish_reason": None}]}) + "\n\n").encode()

async def read(receive):
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body

async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = await read(receive)
    if scope["path"] == "/a2a/jsonrpc":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        for n in range(3000):
            frame = {"jsonrpc": "2.0", "id": 1, "result": {"statusUpdate": {"n": n}}}
            await send({"type": "http.response.body", "more_body": True,
                        "body": ("data: " + json.dumps(frame) + "\n\n").encode()})
            try:
                message = await asyncio.wait_for(receive(), 0.2)
            except asyncio.TimeoutError:
                continue
            if message["type"] == "http.disconnect":
                return
        await send({"type": "http.response.body", "body": b""})
        return
    if json.loads(body or b"{}").get("stream"):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        for _ in range(FRAMES):
            await send({"type": "http.response.body", "body": CHUNK, "more_body": True})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})
        return
    data = json.dumps(REPLY).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})

sock = bind_socket()
print(sock.getsockname()[1], flush=True)
uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off")).run(sockets=[sock])
"""


def _start_fake(frames: int) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", FAKE, str(frames)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    port = int(process.stdout.readline())
    return process, f"http://127.0.0.1:{port}"


def _start_recorder(fake: str, out: Path) -> tuple[subprocess.Popen[str], str, str]:
    command = [sys.executable, "-c", "from recorder.cli import main; main()", "record"]
    command += ["--agent", fake, "--listen", "127.0.0.1:0", "--out", str(out), "-q"]
    command += ["--downstream", f"model={fake}@0"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    proxy = process.stderr.readline().split()[4].rstrip(",")
    found = re.search(r"downstream model: (\S+) ->", process.stderr.readline())
    assert found is not None
    return process, proxy, found.group(1)


def _wait(url: str) -> None:
    deadline = time.monotonic() + LIMIT
    while True:
        try:
            httpx.post(url, json={"messages": []}, timeout=1)
            return
        except httpx.HTTPError:
            assert time.monotonic() < deadline, f"nothing serves {url}"
            time.sleep(0.05)


def _call(http: httpx.Client, base: str) -> float:
    started = time.perf_counter()
    reply = http.post(base + "/v1/chat/completions", json={"model": "m", "messages": []})
    assert reply.status_code == 200
    return time.perf_counter() - started


def _stream(http: httpx.Client, base: str, frames: int) -> float:
    started = time.perf_counter()
    body = {"model": "m", "messages": [], "stream": True}
    seen = 0
    with http.stream("POST", base + "/v1/chat/completions", json=body) as reply:
        for line in reply.iter_lines():
            if line.startswith("data: "):
                seen += 1
    assert seen == frames + 1, seen
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="JSON calls each way")
    parser.add_argument("--streams", type=int, default=30, help="streamed calls each way")
    parser.add_argument("--frames", type=int, default=400, help="frames per streamed call")
    parser.add_argument("--smoke", action="store_true", help="a few of each: it runs")
    options = parser.parse_args()
    if options.smoke:
        options.calls, options.streams, options.frames = 20, 3, 50
    with tempfile.TemporaryDirectory() as folder:
        fake, fake_url = _start_fake(options.frames)
        recorder, proxy_url, listener = _start_recorder(fake_url, Path(folder))
        try:
            _wait(fake_url + "/v1/chat/completions")
            _wait(listener + "/v1/chat/completions")
            results = _measure(options, proxy_url, fake_url, listener)
        finally:
            recorder.send_signal(signal.SIGINT)
            _, err = recorder.communicate(timeout=LIMIT)
            fake.terminate()
            fake.wait(LIMIT)
        found = re.search(r"and (\d+) calls? recorded", err)
        results["calls_recorded"] = int(found.group(1)) if found else 0
        expected = options.calls + options.streams + 2  # (through the listener; warm-ups)
        results["calls_made"] = expected
    _report(results, options.frames)


def _measure(options: Any, proxy: str, direct: str, listener: str) -> dict[str, Any]:
    """The A2A stream held open through the recorder while the calls are measured."""
    opened = threading.Event()
    done = threading.Event()

    def hold() -> None:
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {}}
        headers = {"A2A-Version": "1.0", "Accept": "text/event-stream"}
        with (
            httpx.Client(timeout=LIMIT * 10) as http,
            http.stream("POST", proxy + "/a2a/jsonrpc", json=body, headers=headers) as reply,
        ):
            for _ in reply.iter_lines():
                opened.set()
                if done.is_set():
                    return

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert opened.wait(LIMIT), "the A2A stream did not open"
    calls: dict[str, list[float]] = {"direct": [], "recorder": []}
    streams: dict[str, list[float]] = {"direct": [], "recorder": []}
    targets = {"direct": direct, "recorder": listener}
    with httpx.Client(timeout=LIMIT) as http:
        for base in targets.values():  # (warm: connections open, code paths hot)
            _call(http, base)
            _stream(http, base, options.frames)
        for _ in range(options.calls):
            for name, base in targets.items():
                calls[name].append(_call(http, base))
        for _ in range(options.streams):
            for name, base in targets.items():
                streams[name].append(_stream(http, base, options.frames))
    done.set()
    holder.join(LIMIT)
    call = {name: statistics.median(values) for name, values in calls.items()}
    stream = {name: statistics.median(values) for name, values in streams.items()}
    frame = {name: value / options.frames for name, value in stream.items()}
    return {
        "bench": "calls",
        "call_p50_direct_ms": round(call["direct"] * 1000, 3),
        "call_p50_recorder_ms": round(call["recorder"] * 1000, 3),
        "call_added_ms": round((call["recorder"] - call["direct"]) * 1000, 3),
        "call_ratio": round(call["recorder"] / call["direct"], 2),
        "stream_p50_direct_ms": round(stream["direct"] * 1000, 3),
        "stream_p50_recorder_ms": round(stream["recorder"] * 1000, 3),
        "frame_direct_us": round(frame["direct"] * 1e6, 2),
        "frame_recorder_us": round(frame["recorder"] * 1e6, 2),
        "frame_added_us": round((frame["recorder"] - frame["direct"]) * 1e6, 2),
        "frame_ratio": round(frame["recorder"] / frame["direct"], 2),
    }


def _report(results: dict[str, Any], frames: int) -> None:
    print(f"{'':28}{'direct':>12}{'recorder':>12}{'added':>12}{'ratio':>8}")
    print(
        f"{'call (JSON), p50':28}{results['call_p50_direct_ms']:>10.3f}ms"
        f"{results['call_p50_recorder_ms']:>10.3f}ms{results['call_added_ms']:>10.3f}ms"
        f"{results['call_ratio']:>8.2f}"
    )
    print(
        f"{f'stream frame ({frames}/call)':28}{results['frame_direct_us']:>10.2f}us"
        f"{results['frame_recorder_us']:>10.2f}us{results['frame_added_us']:>10.2f}us"
        f"{results['frame_ratio']:>8.2f}"
    )
    print(f"calls recorded: {results['calls_recorded']} of {results['calls_made']}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
