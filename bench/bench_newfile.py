"""What a new file costs the kernel in a folder: the part of recording no code of ours can cut.

    .venv/bin/python bench/bench_newfile.py                      # in $TMPDIR (or /tmp)
    .venv/bin/python bench/bench_newfile.py --dir /var/tmp --dir /dev/shm
    .venv/bin/python bench/bench_newfile.py --smoke              # does it still run

Unscripted traffic without id lineage makes a new transcript file per exchange (one
conversation each: `recorder.record.lineage`), so every such exchange pays the file system for
a new file (an inode and a directory entry) on top of what the recorder itself does. That
price depends on the file system and its state, not on this program: on the 2-core machines
these benchmarks run on, one ext4 disk gave from 16-20 us to 400-650 us of kernel time per new
file, by folder (/tmp, crowded by earlier test runs, was the dearest) and by what else wrote
to the disk meanwhile, while an append cost 5-6 us and a new file on tmpfs 9-11 us. Read the
proxy benchmarks' CPU per request beside this figure for the folder they recorded into
(`mktemp -d` makes it in $TMPDIR), measured in the same run.

For each folder: a fresh subfolder, N files of 3 KB each made with O_CREAT|O_EXCL, written and
closed (the files are kept until the end, as transcripts are), then all removed; and, for
comparison, N appends of 3 KB to one file. Prints the kernel (system) and user CPU time per
operation from getrusage, and one JSON line per folder.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time

DATA = b"x" * 3000


def measure(folder: str, count: int) -> dict[str, object]:
    """New files and appends in a fresh subfolder of `folder`: CPU microseconds per operation."""
    work = tempfile.mkdtemp(prefix="bench-newfile-", dir=folder)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        for n in range(count):
            fd = os.open(os.path.join(work, f"{n:05d}-send-message.http"), flags, 0o666)
            try:
                os.write(fd, DATA)
            finally:
                os.close(fd)
        wall_new = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF)
        one = os.path.join(work, "appended.http")
        with open(one, "wb"):
            pass
        appended_before = resource.getrusage(resource.RUSAGE_SELF)
        for _ in range(count):
            fd = os.open(one, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            try:
                os.write(fd, DATA)
            finally:
                os.close(fd)
        appended_after = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    per = 1e6 / count
    return {
        "bench": "newfile",
        "folder": folder,
        "files": count,
        "new_file_sys_us": round((after.ru_stime - before.ru_stime) * per, 1),
        "new_file_user_us": round((after.ru_utime - before.ru_utime) * per, 1),
        "new_file_wall_us": round(wall_new * per, 1),
        "append_sys_us": round((appended_after.ru_stime - appended_before.ru_stime) * per, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dir",
        action="append",
        default=[],
        help="a folder to measure in (repeatable; default: $TMPDIR or /tmp)",
    )
    parser.add_argument("--files", type=int, default=2000, help="new files per folder")
    parser.add_argument("--smoke", action="store_true", help="a few files: does it still run")
    args = parser.parse_args()
    count = 20 if args.smoke else args.files
    folders = args.dir or [tempfile.gettempdir()]
    results = [measure(folder, count) for folder in folders]
    head = ("new file: sys us", "user us", "wall us", "append sys us")
    print(f"{'folder':24} {head[0]:>17} {head[1]:>8} {head[2]:>8} {head[3]:>14}")
    for result in results:
        print(
            f"{result['folder']!s:24} {result['new_file_sys_us']:>17} "
            f"{result['new_file_user_us']:>8} {result['new_file_wall_us']:>8} "
            f"{result['append_sys_us']:>14}"
        )
    for result in results:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
