"""`recorder check` holds one parse of a file (issue 24, item 7: a 5.4 MB file of 40,000
exchanges took 887 MB): its peak memory, in a process of its own, stays within a bound."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXCHANGES = 20_000
# the child says its own peak: VmHWM, its memory's high-water mark (ru_maxrss would be at
# least the parent's size when it forked: Linux keeps that across the exec, and pytest's
# process holds 300 MB after tests/record)
CHECK = (
    "import re, sys; from recorder.checking import check_paths; "
    "print(check_paths(sys.argv[1:])); "
    "print(re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1))"
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


@pytest.mark.skipif(sys.platform != "linux", reason="/proc/self/status: Linux")
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
