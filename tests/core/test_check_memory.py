"""`recorder check` holds one parse of a file (issue 24, item 7: a 5.4 MB file of 40,000
exchanges took 887 MB): its peak memory, in a process of its own, stays within a bound."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXCHANGES = 20_000
# the child says its own peak (RUSAGE_CHILDREN would be the largest of every child so far)
CHECK = (
    "import resource, sys; from recorder.checking import check_paths; "
    "print(check_paths(sys.argv[1:])); print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
)


def small_exchanges(count: int) -> str:
    parts = ["# recorder-format: 1\n"]
    for n in range(count):
        parts.append(
            f"### GetTask {n}\nPOST /a2a/jsonrpc HTTP/1.1\nContent-Type: application/json\n\n"
            f'{{"id": {n}, "method": "GetTask"}}\n\nHTTP/1.1 200 OK\n'
            f'Content-Type: application/json\n\n{{"id": {n}}}\n\n'
        )
    return "".join(parts)


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB: Linux")
def test_check_of_20000_exchanges_stays_under_250_mb(tmp_path: Path) -> None:
    path = tmp_path / "01-many.http"
    path.write_text(small_exchanges(EXCHANGES), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", CHECK, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result, peak_kib = done.stdout.strip().rsplit("\n", 1)
    assert result == "(1, [])", done.stderr
    peak = int(peak_kib) * 1024
    # (3.5 MB of text: ~110 MB with one parse, ~470 MB before; the interpreter alone ~30 MB)
    assert peak < 250 * 1024 * 1024, peak
