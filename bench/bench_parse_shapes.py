"""Parse speed of pathological shapes against the golden transcripts (issue 13, item 3).

    .venv/bin/python bench/bench_parse_shapes.py [--mb 1] [--repeat 3]

Each shape is a transcript of about --mb MB made of one thing: a header value of spaces (the
quadratic regex took 4 s for 40,000 of them, 65 s for 160,000), a format marker of spaces,
a long title, bodies of one long line, of blank lines, of `#` lines, of CRs, of CRLFs, of
lines that start with "HTTP/", of `data:` lines, as plain text, JSON and an event stream.
Prints MB/s for each (best of --repeat) and its ratio to the golden transcripts' MB/s (the
`transcripts/` folder parsed many times over): the goal is the same order, a ratio of 0.1
or more. A shape that is not valid (a lone CR) is timed up to its parse error.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from recorder import ParseError, loads

GOLDEN = Path(__file__).resolve().parent.parent / "transcripts"
EXCHANGE = "GET / HTTP/1.1\n\nHTTP/1.1 200 OK\n"


def _bodies(content_type: str, body: str) -> str:
    return (
        f"### t\nPOST /x HTTP/1.1\nContent-Type: {content_type}\n\n{body}\n\n"
        f"HTTP/1.1 200 OK\nContent-Type: {content_type}\n\n{body}\n"
    )


def shapes(size: int) -> Iterator[tuple[str, str]]:
    """(name, text) of about `size` characters each."""
    request = "###\nGET / HTTP/1.1\nX-A: a{}b\n\nHTTP/1.1 200 OK\n"
    yield "header value: spaces", request.format(" " * size)
    yield "header value: spaces+tabs", request.format(" \t" * (size // 2))
    yield "format marker: spaces", f"# recorder-format:{' ' * size}1 x\n"
    yield "title", f"### {'t ' * (size // 2)}\n{EXCHANGE}"
    yield "reason phrase", f"###\nGET / HTTP/1.1\n\nHTTP/1.1 200 {'ok ' * (size // 3)}\n"
    half = size // 2  # (two bodies: the request's and the response's)
    bodies = {
        "one long line": "a" * half,
        "blank lines": "a" + "\n" * half + "b",
        "# lines": "x\n" + "#\n" * (half // 2),
        "CRs": "a" + "\r" * half,
        "CRLFs": "a" + "\r\n" * (half // 2),
        "HTTP/ lines": "x\n" + "HTTP/\n" * (half // 6),
        "data: lines": "data: " + "\ndata:" * (half // 6),
    }
    for kind, short in (
        ("text/plain", "text"),
        ("application/json", "json"),
        ("text/event-stream", "sse"),
    ):
        for name, body in bodies.items():
            yield f"{short} body: {name}", _bodies(kind, body)
    escaped = f'###\nGET / HTTP/1.1\n\n# recorder-body: escaped\n{chr(10) * size}"a"\n\n'
    yield "escaped body: blank lines", escaped + "HTTP/1.1 200 OK\n"
    yield "many exchanges", ("###\n" + EXCHANGE) * (size // 36)


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _parse(text: str) -> None:
    with contextlib.suppress(ParseError):
        loads(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    golden = [p.read_text(encoding="utf-8") for p in sorted(GOLDEN.glob("*.http"))]
    golden_mb = sum(len(t.encode()) for t in golden) / 1_000_000
    rounds = max(1, int(args.mb / golden_mb))  # about as many bytes as one shape
    golden_time = best(lambda: [loads(t) for _ in range(rounds) for t in golden], args.repeat)
    golden_rate = golden_mb * rounds / golden_time
    print(f"golden transcripts: {golden_mb * rounds:.2f} MB  {golden_rate:7.1f} MB/s")
    worst = float("inf")
    for name, text in shapes(int(args.mb * 1_000_000)):
        size = len(text.encode()) / 1_000_000
        rate = size / best(functools.partial(_parse, text), args.repeat)
        worst = min(worst, rate / golden_rate)
        print(f"{name:28s} {size:5.2f} MB  {rate:7.1f} MB/s  {rate / golden_rate:6.2f}x golden")
    print(f"slowest shape: {worst:.2f}x the golden transcripts' MB/s")


if __name__ == "__main__":
    main()
