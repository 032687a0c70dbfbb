"""The store against the disk as others change it (issue 13): numbers claimed on disk, files,
temporaries and the folder removed while recording, temporaries nobody sees, appends."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from factories import make_exchange

from recorder import Transcript, dumps, load
from recorder.disk import atomic
from recorder.disk.atomic import release_scratch, write_text_atomic
from recorder.record.store.transcript_store import TranscriptStore, during_tagged
from recorder.secrets.redact import scrub_text

TMP = ".recorder-tmp"


def _titles(folder: Path) -> Counter[str]:
    """How many times each exchange title is in the transcripts of `folder`."""
    found: Counter[str] = Counter()
    for path in folder.glob("*.http"):
        found.update(exchange.title for exchange in load(path))
    return found


def _visible(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name != TMP)


def _unnamed_files_here(folder: Path) -> bool:
    try:
        os.close(os.open(folder, atomic._TMPFILE | os.O_WRONLY, 0o600))
    except (OSError, ValueError):
        return False
    return bool(atomic._TMPFILE) and os.path.isdir("/proc/self/fd")


@pytest.fixture(params=["unnamed", "named"])
def new_files(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> str:
    """How `create_exclusive` makes new files: an unnamed file (`O_TMPFILE`) linked, where
    the system allows it, or a named temporary file (its fallback, forced here)."""
    if request.param == "named":
        monkeypatch.setattr(atomic, "_TMPFILE", 0)
    elif not _unnamed_files_here(tmp_path):
        pytest.skip("no O_TMPFILE here")
    return str(request.param)


def test_two_stores_on_one_folder_overwrite_nothing(tmp_path: Path, new_files: str) -> None:
    # two recorders on one --out folder, each counting numbers from the same start
    stores = [TranscriptStore(tmp_path), TranscriptStore(tmp_path)]
    for store in stores:
        store.prepare()
    errors: list[BaseException] = []

    def record(which: int) -> None:
        store = stores[which]
        try:
            for n in range(40):
                # a file per exchange (the same names in both stores), and a scenario's file
                scenario = "review" if n % 4 == 0 else None
                title = f"store{which}-{n}"
                store.write(
                    store.begin(scenario),
                    make_exchange(title=title),
                    scenario=scenario,
                    operation="GetTask",
                )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=record, args=(which,)) for which in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    for store in stores:
        store.close()
    titles = _titles(tmp_path)
    expected = {f"store{which}-{n}" for which in (0, 1) for n in range(40)}
    assert set(titles) == expected  # none overwritten
    assert set(titles.values()) == {1}  # every exchange in exactly one file
    # each store's scenario file holds its own exchanges only, in order
    for which in (0, 1):
        (path,) = {p for p in tmp_path.glob("*-review.http") if f"store{which}-0" in p.read_text()}
        assert [e.title for e in load(path)] == [f"store{which}-{n}" for n in range(0, 40, 4)]
    assert _visible(tmp_path) == sorted(p.name for p in tmp_path.glob("*.http"))


def test_removing_files_temporaries_and_the_folder_while_recording_loses_nothing(
    tmp_path: Path, new_files: str
) -> None:
    out = tmp_path / "out"
    store = TranscriptStore(out, scrub=scrub_text)
    store.prepare()
    mischief = [
        lambda: None,
        lambda: [p.unlink() for p in out.glob("*-scenario.http")],  # a transcript
        lambda: shutil.rmtree(out / TMP, ignore_errors=True),  # the temporaries
        lambda: (shutil.rmtree(out), out.mkdir()),  # rm -rf out; mkdir out
        lambda: shutil.rmtree(out),  # rm -rf out
        lambda: [p.unlink() for p in out.glob("*.http")],  # every transcript
    ]
    titles = []
    for round_ in range(3):
        for n, harm in enumerate(mischief):
            harm()
            for scenario in ("scenario", None):
                title = f"{round_}-{n}-{scenario}"
                titles.append(title)
                store.write(
                    store.begin(scenario),
                    make_exchange(title=title),
                    scenario=scenario,
                    operation="GetTask",
                )
    store.close()
    # a file deleted is made again whole; the files deleted with the folder are lost with
    # it, the exchanges written after are all there
    (scenario_file,) = out.glob("*-scenario.http")
    last = [t for t in titles if t.endswith("-scenario")]
    assert [e.title for e in load(scenario_file)] == last  # the whole scenario, in order
    found = _titles(out)
    assert set(found.values()) == {1}
    assert {t for t in titles if t.startswith("2-5")} <= set(found)
    assert _visible(out) == sorted(p.name for p in out.glob("*.http"))
    assert not (out / TMP).exists()


def test_a_deleted_transcript_does_not_stop_the_scrub_of_the_others(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path, scrub=scrub_text)
    token = "tok-Rk4Lx9Pq"
    gone = store.write(
        store.begin(), make_exchange(title=f"a {token}"), scenario=None, operation="a"
    )
    kept = store.write(
        store.begin(), make_exchange(title=f"b {token}"), scenario=None, operation="b"
    )
    gone.unlink()  # a user deletes a transcript while recording
    secrets = {token: "A2A_TOKEN"}
    store.write(
        store.begin(),
        make_exchange(),
        scenario=None,
        operation="c",
        secrets=secrets,
        sent_secrets=secrets,
    )
    assert token not in kept.read_text()
    assert load(kept).exchanges[0].title == "b {{A2A_TOKEN}}"
    assert not gone.exists()


def test_temporary_files_are_not_among_the_transcripts(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path)
    store.prepare()
    first, second = store.begin("s"), store.begin("s")
    store.write(second, make_exchange(), scenario="s", operation="GetTask")
    store.write(first, make_exchange(), scenario="s", operation="GetTask")  # a rewrite
    assert _visible(tmp_path) == ["01-s.http"]  # nothing else a user sees
    # the store keeps its hidden temporary folder (its lock held) between writes
    (mine,) = (tmp_path / TMP).iterdir()
    assert os.listdir(mine) == ["lock"]
    store.close()
    assert os.listdir(tmp_path) == ["01-s.http"]


_KILLED_MID_WRITE = """
import os, sys
from pathlib import Path
from recorder.disk.atomic import write_text_atomic
def killed(*args, **kwargs):
    os._exit(9)  # like kill -9 between the temporary file and its rename
os.replace = killed
write_text_atomic(Path(sys.argv[1]), "# recorder-format: 1\\n")
"""


def test_temporaries_of_a_killed_writer_are_removed_by_the_next(tmp_path: Path) -> None:
    golden = tmp_path / "01-a.http"
    golden.write_text("# recorder-format: 1\n")
    # `play --update` killed mid-write, twice
    for _ in range(2):
        killed = subprocess.run(
            [sys.executable, "-c", _KILLED_MID_WRITE, str(golden)], timeout=30, check=False
        )
        assert killed.returncode == 9
    # a temporary a recorder of an earlier version left under this process's id (a recorder
    # that is PID 1 in its container has the same id every run)
    (tmp_path / f".recorder.{os.getpid()}.3.tmp").write_text("")
    # the next writer (another `play --update`, a recorder) cleans up what it can lock
    write_text_atomic(golden, "# recorder-format: 1\n")
    TranscriptStore(tmp_path).prepare()
    release_scratch(tmp_path)  # (what this process does when it exits)
    assert os.listdir(tmp_path) == ["01-a.http"]


_WRITING_SLOWLY = """
import os, sys, time
from pathlib import Path
from recorder.disk.atomic import write_text_atomic
def slow(src, dst):
    print(src, flush=True)  # a writer between its temporary file and its rename
    time.sleep(30)
os.replace = slow
write_text_atomic(Path(sys.argv[1]) / "01-a.http", "# recorder-format: 1\\n")
"""


def test_a_running_writers_temporaries_are_left_alone(tmp_path: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", _WRITING_SLOWLY, str(tmp_path)], stdout=subprocess.PIPE, text=True
    ) as other:
        try:
            assert other.stdout is not None
            theirs = other.stdout.readline().strip()
            assert os.path.exists(theirs)
            TranscriptStore(tmp_path).prepare()
            assert os.path.exists(theirs)  # its lock is held: not stale
        finally:
            other.kill()
            other.wait(10)
    TranscriptStore(tmp_path).prepare()
    assert not os.path.exists(theirs)


def test_in_order_exchanges_are_appended_not_rewritten(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path)
    path = store.write(store.begin("s"), make_exchange(title="one"), scenario="s", operation="x")
    inode = path.stat().st_ino
    store.write(store.begin("s"), make_exchange(title="two"), scenario="s", operation="x")
    assert path.stat().st_ino == inode  # the same file, grown: no rename of a new one
    assert [e.title for e in load(path)] == ["one", "two"]


def test_appended_files_are_what_a_rewrite_would_write(tmp_path: Path) -> None:
    # property: whatever the order the requests finish in, the @during tags and the secrets
    # learned on the way, the file is `dumps` of its exchanges (scrubbed), byte for byte
    rng = random.Random(13)
    for trial in range(30):
        folder = tmp_path / str(trial)
        store = TranscriptStore(folder, scrub=scrub_text)
        count = rng.randint(1, 12)
        tickets = [store.begin("s") for _ in range(count)]
        order = list(range(count))
        # mostly in order, a few swapped (concurrent requests finishing out of order)
        for _ in range(rng.randint(0, 3)):
            a, b = rng.randrange(count), rng.randrange(count)
            order[a], order[b] = order[b], order[a]
        secrets: dict[str, str] = {}
        written: list[tuple[int, object, tuple[int, int] | None]] = []
        path = None
        for n in order:
            token = f"secret-value-{rng.randrange(4)}"
            exchange = make_exchange(title=f"e{n} {token}")
            during = (tickets[n - 1], rng.randint(0, 3)) if n and rng.random() < 0.3 else None
            learned = {token: "TOKEN"} if rng.random() < 0.2 else {}
            secrets.update(learned)
            path = store.write(
                tickets[n],
                exchange,
                scenario="s",
                operation="x",
                secrets=learned,
                sent_secrets=learned,
                during=during,
            )
            written.append((tickets[n], exchange, during))
            expected = dumps(Transcript(exchanges=during_tagged(written)))  # type: ignore[arg-type]
            assert path.read_text() == scrub_text(expected, secrets), (trial, order)
        assert path is not None
        assert len(load(path)) == count
        store.close()


def test_two_stores_never_give_one_number_to_two_files(tmp_path: Path, new_files: str) -> None:
    # each exchange its own file, under names that differ between the stores: numbers are
    # claimed by name on disk, so both may link one number at once; the later name yields
    stores = [TranscriptStore(tmp_path), TranscriptStore(tmp_path)]
    barrier = threading.Barrier(2, timeout=10)

    def record(which: int) -> None:
        store = stores[which]
        for n in range(30):
            if n % 10 == 0:
                barrier.wait()
            store.write(
                store.begin(),
                make_exchange(title=f"store{which}-{n}"),
                scenario=None,
                operation=f"Op{which}",
            )

    threads = [threading.Thread(target=record, args=(which,)) for which in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    for store in stores:
        store.close()
    names = sorted(p.name for p in tmp_path.glob("*.http"))
    numbers = [name.split("-", 1)[0] for name in names]
    assert len(names) == 60
    assert len(set(numbers)) == 60, [n for n in names if numbers.count(n.split("-", 1)[0]) > 1]


_ONE_STORE = """
import sys, time
from pathlib import Path
from factories import make_exchange
from recorder.disk import atomic
from recorder.record.store.transcript_store import TranscriptStore
which, start, folder = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])
if sys.argv[4] == "named":
    atomic._TMPFILE = 0  # the fallback: named temporary files
store = TranscriptStore(folder)
while time.time() < start:
    time.sleep(0.001)
for n in range(100):
    store.write(store.begin(), make_exchange(title=f"p{which}-{n}"), scenario=None,
                operation=f"Op{which}")
store.close()
"""


def test_two_recorder_processes_never_give_one_number_to_two_files(
    tmp_path: Path, new_files: str
) -> None:
    # as two `recorder record`s on one --out: each process's store alone, started together;
    # one that finishes first takes its temporary folder away while the other still writes
    out = tmp_path / "out"
    out.mkdir()
    start = time.time() + 1.0
    tests = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), *sys.path])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _ONE_STORE, str(which), str(start), str(out), new_files],
            env=env,
        )
        for which in (0, 1)
    ]
    assert [proc.wait(timeout=60) for proc in procs] == [0, 0]
    names = sorted(p.name for p in out.glob("*.http"))
    numbers = [name.split("-", 1)[0] for name in names]
    assert len(names) == 200
    assert len(set(numbers)) == 200, sorted(n for n in numbers if numbers.count(n) > 1)
    assert {e.title for name in names for e in load(out / name)} == {
        f"p{which}-{n}" for which in (0, 1) for n in range(100)
    }


def test_a_writer_gone_from_the_folder_is_no_longer_listed_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # another writer comes (its hidden folder appears), makes files, and goes: while it is
    # there each new file is checked against a listing of the folder; once it is gone, the
    # numbers go on past its files and new files cost no listing (flat cost)
    store = TranscriptStore(tmp_path)
    store.prepare()

    def new_file(n: int) -> Path:
        path = store.write(
            store.begin(), make_exchange(title=f"e{n}"), scenario=None, operation="Op"
        )
        assert path is not None
        return path

    new_file(1)
    theirs = tmp_path / TMP / "0123456789ab"
    theirs.mkdir()
    (tmp_path / "02-other.http").write_text("# recorder-format: 1\n")
    assert new_file(2).name == "03-op.http"  # 02 passed over: the other writer's
    (tmp_path / "04-other.http").write_text("# recorder-format: 1\n")  # its last file
    theirs.rmdir()  # it exited
    listings: list[str] = []
    real_listdir = os.listdir

    def counting_listdir(path: Any = ".") -> list[str]:
        listings.append(os.fspath(path))
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", counting_listdir)
    # 04 was handed out while it was there: still checked, and passed over
    assert new_file(3).name == "05-op.http"
    listings.clear()
    made = [new_file(n).name for n in range(4, 9)]
    assert made == [f"{n:02d}-op.http" for n in range(6, 11)]
    assert listings == []  # no listing per new file once alone again
    store.close()
    numbers = [name.split("-", 1)[0] for name in os.listdir(tmp_path)]
    assert len(numbers) == len(set(numbers))


_A_SHORT_RUN = """
import sys
from pathlib import Path
from factories import make_exchange
from recorder.record.store.transcript_store import TranscriptStore
store = TranscriptStore(Path(sys.argv[1]))
store.prepare()
for n in range(3):
    store.write(store.begin(), make_exchange(title=f"b{n}"), scenario=None, operation="OpB")
store.close()
"""


def test_a_recorder_that_ran_between_two_files_gets_no_number_given_twice(
    tmp_path: Path,
) -> None:
    # a second `recorder record` on the folder starts and finishes while this one is idle:
    # its files take numbers this one counted on in memory
    store = TranscriptStore(tmp_path)
    store.prepare()
    store.write(store.begin(), make_exchange(title="a0"), scenario=None, operation="OpA")
    time.sleep(0.03)  # (a clock tick: see `other_writers`)
    tests = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), *sys.path])}
    subprocess.run(
        [sys.executable, "-c", _A_SHORT_RUN, str(tmp_path)], env=env, timeout=60, check=True
    )
    for n in range(1, 4):
        store.write(store.begin(), make_exchange(title=f"a{n}"), scenario=None, operation="OpA")
    store.close()
    names = sorted(p.name for p in tmp_path.glob("*.http"))
    assert len(names) == 7
    numbers = [name.split("-", 1)[0] for name in names]
    assert len(set(numbers)) == 7, names
