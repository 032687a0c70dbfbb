"""What the recording writer spends per exchange before the store: the recorded `Exchange`
built from the raw request and reply bytes (`Builder.exchange`), and its `.http` text
(`dumps_exchange`).

    .venv/bin/python bench/bench_build.py                      # ~10 s
    .venv/bin/python bench/bench_build.py --quick              # a few seconds
    .venv/bin/python bench/bench_build.py --smoke              # does it still run
    .venv/bin/python bench/bench_build.py --baseline /tmp/base # before/after in one run

The input is what a side-by-side proxy benchmark sends and gets: an unscripted
JSON-RPC SendMessage (compact JSON, a fresh message id each time, the headers an httpx client
sends as forwarded) and a ~1 KB compact JSON reply with fresh uuids, as raw bytes in a `Call`
and the kept reply header pairs, as the forwarding room hands them to `Recording.submit`.
Per exchange: a fresh redactor (`Redactor.fresh`, as `Recording.begin` gives), then what
the writer thread does (`Writer._record`): the exchange's text, made straight from its
bytes (`Builder.built`: `recorder.record.proxy.direct`) or through the model
(`Builder.exchange`, then `dumps_exchange`) when it is no common one (a tree before the
direct path: always so). A tree whose proxy reads a reply's value when it learns its values
(`Recording.settle`, on the event loop) hands it to the writer: here it is read before the
timing, as the loop would. The store's write and the transcript scrub are
`bench/bench_store.py`'s. Cases: "plain"
(no secret anywhere), "bearer" (an `Authorization: Bearer` header: the redactor's and the
scrub's path), "spaced" (bodies in `json.dumps`'s default layout, with non-ASCII text),
"large" (a 1 MiB reply of English text: 1/100 of the exchanges).

`--baseline DIR` (DIR holds a `recorder` package: `git archive main recorder | tar -x -C
DIR`) measures that tree too, each tree in its own process, the rounds interleaved so that
drift hits both alike, and checks that both write the same text. Prints µs per exchange
(median of the rounds) per case and tree, and one JSON line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
CASES = ("plain", "bearer", "spaced", "large")
LARGE = 1 << 20
FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit " * 40


def inputs(case: str, count: int) -> list[tuple[bytes, list[tuple[bytes, bytes]], bytes]]:
    """`count` (request body, forwarded request headers, reply body) of `case`."""
    spaced = case == "spaced"
    separators = (", ", ": ") if spaced else (",", ":")
    text = "ping, café ✓" if spaced else "ping"
    rng = random.Random(13)  # the same exchanges in every process: their texts compare

    def new_uuid() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128)))

    out = []
    for i in range(count):
        message = {"messageId": f"m-{i}", "role": "ROLE_USER", "parts": [{"text": text}]}
        params = {"message": message}
        request = {"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params": params}
        headers = [
            (b"accept", b"application/json, text/event-stream"),
            (b"user-agent", b"python-httpx/0.28.1"),
            (b"content-type", b"application/json"),
        ]
        if case == "bearer":
            headers.append((b"authorization", b"Bearer tok-" + new_uuid().encode()))
        reply_message = {
            "messageId": new_uuid(),
            "contextId": new_uuid(),
            "role": "ROLE_AGENT",
            "parts": [{"text": ""}],
        }
        reply = {"jsonrpc": "2.0", "id": i, "result": {"message": reply_message}}
        base = len(json.dumps(reply, separators=separators))
        size = LARGE if case == "large" else 1024
        filler = FILLER * (size // len(FILLER) + 1)
        reply_message["parts"] = [{"text": filler[: max(0, size - base)]}]
        out.append(
            (
                json.dumps(request, separators=separators, ensure_ascii=False).encode(),
                headers,
                json.dumps(reply, separators=separators, ensure_ascii=False).encode(),
            )
        )
    return out


def worker(case: str, count: int, repeat: int) -> dict[str, Any]:
    """In this process (the `recorder` on sys.path): µs per exchange, best of `repeat`
    passes over `count` exchanges, and a digest of the text written."""
    from recorder.format.httpfile import dumps_exchange
    from recorder.record.lineage import Lineage
    from recorder.record.proxy import call as call_room
    from recorder.record.proxy.call import Call, CallRequest, Routing
    from recorder.record.proxy.recording import Recording
    from recorder.record.transport.upstream import UpstreamReply
    from recorder.secrets.redact import Redactor

    recording = Recording(None, Redactor(), "127.0.0.1:9999")  # type: ignore[arg-type]
    redactor = recording._redactor  # (each call gets a copy of the proxy's, `begin`)
    # (a tree before the direct path has neither)
    built = getattr(recording.builder, "built", None) or getattr(recording, "_built", None)
    lineage = Lineage()
    # (a tree whose writer takes the value read on the loop: `Recording.settle`)
    book = getattr(call_room, "ReplyBook", None)
    settled = "parsed" in getattr(book, "__slots__", ())
    reply_headers = [
        (b"date", b"Mon, 30 Nov 2026 23:00:00 GMT"),
        (b"server", b"uvicorn"),
        (b"content-length", b"1024"),
        (b"content-type", b"application/json"),
    ]

    async def no_chunks() -> Any:
        yield b""

    async def no_close() -> None:
        return None

    data = inputs(case, count)
    best = float("inf")
    digest = ""
    for _ in range(repeat):
        calls = []
        for body, headers, reply in data:
            call = Call(CallRequest("POST", "/a2a/jsonrpc", tuple(headers), body))
            if settled:  # (on the event loop, before the writer)
                call.reply.parsed = lineage.learn_body(reply, "file", frozenset())
            calls.append((call, reply))
        upstream = UpstreamReply(200, "OK", reply_headers, no_chunks(), no_close)  # type: ignore[arg-type]
        texts = []
        start = time.perf_counter()
        for call, reply in calls:
            call.redactor = redactor.fresh()
            call.routing = Routing(1, None)
            if built is not None:
                made = built(call, upstream, reply_headers, reply)
                if isinstance(made, str):
                    texts.append(made)
                else:  # (its block's text, or the model's)
                    text = getattr(made, "text", None)
                    texts.append(text if isinstance(text, str) else dumps_exchange(made))
            else:
                exchange = recording.builder.exchange(call, upstream, reply_headers, body=reply)
                texts.append(dumps_exchange(exchange))
        best = min(best, time.perf_counter() - start)
        digest = hashlib.sha256("".join(texts).encode()).hexdigest()[:16]
    return {"us": best / count * 1e6, "digest": digest}


def run_tree(tree: Path, case: str, count: int, repeat: int) -> dict[str, Any]:
    if case == "large":
        count = max(3, count // 100)
    env = dict(os.environ, PYTHONPATH=str(tree))
    command = [sys.executable, str(HERE), "--worker", case, "--exchanges", str(count)]
    result = subprocess.run(
        [*command, "--repeat", str(repeat)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tree),
        timeout=300,
        check=True,
    )
    value: dict[str, Any] = json.loads(result.stdout.splitlines()[-1])
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3, help="passes per process (best)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="a few exchanges: does it run")
    parser.add_argument("--baseline", type=Path, help="a tree holding the `recorder` to compare")
    parser.add_argument("--worker", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.exchanges, args.repeat)))
        return
    count, rounds, repeat = args.exchanges, args.rounds, args.repeat
    if args.quick:
        count, rounds = 1000, 3
    if args.smoke:
        count, rounds, repeat = 50, 1, 1
    trees = {"recorder": ROOT}
    if args.baseline is not None:
        if not (args.baseline / "recorder" / "__init__.py").is_file():
            sys.exit(f"bench_build.py: --baseline {args.baseline}: no recorder package there")
        trees["baseline"] = args.baseline.resolve()
    times: dict[tuple[str, str], list[float]] = {}
    digests: dict[tuple[str, str], str] = {}
    for _ in range(rounds):
        for case in CASES:
            for name, tree in trees.items():
                result = run_tree(tree, case, count, repeat)
                times.setdefault((case, name), []).append(result["us"])
                digests[(case, name)] = result["digest"]
    print(f"{count} exchanges per pass, {rounds} rounds; µs per exchange (median of rounds)")
    print(f"{'case':<8} " + " ".join(f"{name:>10}" for name in trees) + "     ratio  same text")
    summary: dict[str, Any] = {"bench": "build", "exchanges": count}
    for case in CASES:
        medians = {name: statistics.median(times[(case, name)]) for name in trees}
        row = f"{case:<8} " + " ".join(f"{medians[name]:>10.1f}" for name in trees)
        summary[case] = {name: round(value, 1) for name, value in medians.items()}
        if "baseline" in trees:
            ratio = medians["recorder"] / medians["baseline"]
            same = digests[(case, "recorder")] == digests[(case, "baseline")]
            row += f" {ratio:>9.2f}  {'yes' if same else 'NO'}"
            summary[case]["ratio"] = round(ratio, 3)
            summary[case]["same_text"] = same
        print(row)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
