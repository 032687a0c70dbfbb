"""The player's stand-in for an agent's model: what one call costs, against a bare server.

    .venv/bin/python bench/bench_standin.py             # ~15 s
    .venv/bin/python bench/bench_standin.py --smoke     # a second

A transcript of `--exchanges` review exchanges, each with the calls an LLM agent makes (a
chat completion answered as JSON, one streamed in `--frames` SSE frames, an MCP tool call; a
prompt of some 2 KB that names the exchange), is stood in for by the player's stand-ins
(`recorder.replay.standin`, on loopback, the file's calls waiting as the player leaves them:
the exchange opened, its calls made, the exchange settled, their comparison included). One
client (httpx, keep-alive) makes the same calls, in the same order, to:

- `bare`: a server of the same kind (the standard library's threaded HTTP server) that
  answers each call with the recorded reply's bytes, nothing matched: the floor of the HTTP;
- `stand-in`: the player's stand-in, which matches each call among the file's waiting calls
  (as `recorder serve` matches a request), answers it, and at the exchange's end compares
  each call with its recording (`FileCalls.settle`, through the file's `ReplayState`).

Rounds alternate the two, so drift hits both alike. Printed: the median time of one call per
target (a streamed call read to its last frame), the stand-in's added time per call and the
ratio stand-in / bare, and in process, without HTTP: the matching's cost per call
(`StandIns.route`) and the comparison's (`settle`). The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from recorder.format.httpfile import loads  # noqa: E402
from recorder.format.model import Transcript  # noqa: E402
from recorder.replay.calls import LiveCall, frames_of, recorded_calls  # noqa: E402
from recorder.replay.filecalls import FileCalls  # noqa: E402
from recorder.replay.standin import StandIns  # noqa: E402
from recorder.replay.verdict.state import ReplayState  # noqa: E402
from recorder.rules.pairing import PairingRules  # noqa: E402
from recorder.rules.ruleset import DEFAULT_RULES  # noqa: E402

SYSTEM = "You are a code reviewer. " * 40  # ~1 KB, as a real system prompt


def prompt(number: int) -> list[dict[str, Any]]:
    diff = "".join(f"+line {i} of change {number}\n" for i in range(30))
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": f"--- a/f{number}.py\n+++ b/f{number}.py\n@@ -1 +1,30 @@\n{diff}",
        },
    ]


def transcript_text(exchanges: int, frames: int) -> str:
    blocks = [
        "# recorder-format: 1\n# @downstream model https://api.example/v1\n"
        "# @downstream tools http://127.0.0.1:8931/mcp\n"
    ]
    for number in range(1, exchanges + 1):
        index = len(blocks)  # the A2A exchange's number in the file
        blocks.append(
            f"### SendMessage: review {number}\nPOST /a2a/jsonrpc HTTP/1.1\nHost: 127.0.0.1:1\n"
            "Content-Type: application/json\n\n"
            + json.dumps({"jsonrpc": "2.0", "id": number, "method": "SendMessage"})
            + "\n\nHTTP/1.1 200 OK\nContent-Type: application/json\n\n"
            + json.dumps({"jsonrpc": "2.0", "id": number, "result": {}})
            + "\n"
        )
        tool = {"name": "findings", "arguments": {"diff": f"change {number}"}}
        blocks.append(
            f"### tools: POST /mcp tools/call\n# @call tools exchange {index}\n"
            "POST /mcp HTTP/1.1\nHost: 127.0.0.1:2\nContent-Type: application/json\n\n"
            + json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": tool})
            + "\n\nHTTP/1.1 200 OK\nContent-Type: application/json\n\n"
            + json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text"}]}})
            + "\n"
        )
        answer = {"choices": [{"message": {"role": "assistant", "content": f"Review {number}."}}]}
        blocks.append(
            f"### model: POST /v1/chat/completions\n# @call model exchange {index}\n"
            "POST /v1/chat/completions HTTP/1.1\nHost: 127.0.0.1:3\n"
            "Content-Type: application/json\n\n"
            + json.dumps({"model": "m", "messages": prompt(number)})
            + "\n\nHTTP/1.1 200 OK\nContent-Type: application/json\n\n"
            + json.dumps(answer)
            + "\n"
        )
        chunks = "".join(
            "data: "
            + json.dumps({"id": f"c{number}", "choices": [{"delta": {"content": f"w{k} "}}]})
            + "\n\n"
            for k in range(frames)
        )
        blocks.append(
            f"### model: POST /v1/chat/completions\n# @call model exchange {index}\n"
            "POST /v1/chat/completions HTTP/1.1\nHost: 127.0.0.1:3\n"
            "Content-Type: application/json\n\n"
            + json.dumps({"model": "m", "stream": True, "messages": prompt(number)})
            + "\n\nHTTP/1.1 200 OK\nContent-Type: text/event-stream\n\n"
            + chunks
            + "data: [DONE]\n\n"
        )
    return "\n".join(blocks)


class Bare:
    """A threaded HTTP server answering the Nth call with the Nth recorded reply's bytes."""

    def __init__(self, transcript: Transcript) -> None:
        self.replies = [call.response for call in recorded_calls(transcript)]
        self.next = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # (as the stand-in's)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                reply = owner.replies[owner.next % len(owner.replies)]
                owner.next += 1
                self.send_response(200)
                self.send_header("Content-Type", reply.headers.get("Content-Type") or "")
                if reply.events is None:
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for frame in frames_of(reply):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def one_call(client: httpx.Client, url: str, body: bytes, stream: bool) -> float:
    started = time.perf_counter()
    if stream:
        with client.stream("POST", url, content=body, headers=JSON) as reply:
            for _ in reply.iter_bytes():
                pass
    else:
        client.post(url, content=body, headers=JSON).read()
    return time.perf_counter() - started


JSON = {"Content-Type": "application/json"}


def play_round(
    client: httpx.Client,
    urls: dict[str, str],
    transcript: Transcript,
    files: FileCalls | None,
    state: ReplayState | None,
) -> tuple[list[float], list[str]]:
    """Every exchange's calls made in order; their times, and what settling found."""
    times: list[float] = []
    found: list[str] = []
    calls = recorded_calls(transcript)
    by_exchange: dict[int, list[Any]] = {}
    for call in calls:
        by_exchange.setdefault(call.exchange, []).append(call)
    for exchange, mine in sorted(by_exchange.items()):
        if files is not None:
            files.open(exchange)
        for call in mine:
            url = urls[call.name] + call.request.target
            times.append(one_call(client, url, call.request.body, call.response.events is not None))
        if files is not None:
            assert state is not None
            found.extend(str(m) for m in files.settle(exchange, state).mismatches)
    return times, found


def state_mapping(state: ReplayState) -> Any:
    return lambda: state.mapping


def in_process(transcript: Transcript, rules: PairingRules) -> tuple[float, float]:
    """Seconds per call of the matching (`StandIns.route`) and of the comparison (`settle`),
    without HTTP."""
    with StandIns(rules) as stand_ins:
        state = ReplayState(DEFAULT_RULES, recorded_base=None, live_base="http://x:1")
        files = FileCalls("bench.http", transcript, rules, lambda: state.mapping)
        stand_ins.join(files)
        calls = recorded_calls(transcript)
        route = settle = 0.0
        exchanges = sorted({call.exchange for call in calls})
        for exchange in exchanges:
            files.open(exchange)
            started = time.perf_counter()
            for call in (c for c in calls if c.exchange == exchange):
                headers = tuple(call.request.headers)
                stand_ins.route(
                    LiveCall(call.name, "POST", call.request.target, headers, call.request.body)
                )
            route += time.perf_counter() - started
            started = time.perf_counter()
            assert not files.settle(exchange, state).mismatches
            settle += time.perf_counter() - started
        return route / len(calls), settle / len(calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exchanges", type=int, default=40)
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--smoke", action="store_true", help="3 exchanges, 2 rounds")
    options = parser.parse_args()
    if options.smoke:
        options.exchanges, options.rounds, options.frames = 3, 2, 5
    transcript = loads(transcript_text(options.exchanges, options.frames))
    rules = PairingRules(DEFAULT_RULES)
    bare = Bare(transcript)
    stand_ins = StandIns(rules, {"model": ("127.0.0.1", 0), "tools": ("127.0.0.1", 0)})
    stand_ins.stand_in_for([transcript])
    urls = {name: found[0] for name, found in stand_ins.addresses.items()}
    timings: dict[str, list[float]] = {"bare": [], "stand-in": []}
    try:
        with httpx.Client(timeout=30) as client:
            for _ in range(options.rounds):
                times, _ = play_round(
                    client, {"model": bare.url, "tools": bare.url}, transcript, None, None
                )
                timings["bare"].extend(times)
                state = ReplayState(DEFAULT_RULES, recorded_base=None, live_base="http://x:1")
                files = FileCalls("bench.http", transcript, rules, state_mapping(state))
                stand_ins.join(files)
                times, found = play_round(client, urls, transcript, files, state)
                assert not found, found  # the same calls: nothing may differ
                timings["stand-in"].extend(times)
    finally:
        stand_ins.close()
        bare.close()
    route, settle = in_process(transcript, rules)
    bare_median = statistics.median(timings["bare"])
    stand_in_median = statistics.median(timings["stand-in"])
    calls = len(timings["bare"])
    print(f"{calls} calls per target ({options.frames} frames in each streamed answer)")
    for name, values in timings.items():
        print(f"  {name:9} median {statistics.median(values) * 1e3:7.3f} ms per call")
    print(
        f"  the stand-in adds {(stand_in_median - bare_median) * 1e3:.3f} ms per call "
        f"(x{stand_in_median / bare_median:.2f} the bare server); in process: matching "
        f"{route * 1e6:.0f} us, comparing {settle * 1e6:.0f} us per call"
    )
    result = {
        "bench": "standin",
        "calls": calls,
        "frames": options.frames,
        "bare_ms": round(bare_median * 1e3, 4),
        "standin_ms": round(stand_in_median * 1e3, 4),
        "ratio": round(stand_in_median / bare_median, 3),
        "match_us": round(route * 1e6, 1),
        "compare_us": round(settle * 1e6, 1),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
