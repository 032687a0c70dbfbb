"""Files shared between recorders (issue 24 item 2): two stores, two processes, one
scenario, one folder; every exchange in exactly one file, none rewritten away."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from factories import make_exchange

from recorder import Transcript, dumps, load
from recorder.record.store.transcript_store import TranscriptStore

LIMIT = 60.0


def titles(folder: Path) -> Counter[str]:
    found: Counter[str] = Counter()
    for path in folder.glob("*.http"):
        found.update(exchange.title for exchange in load(path))
    return found


def earlier_file(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / "01-dup.http"
    path.write_text(dumps(Transcript(exchanges=(make_exchange(title="old"),))))
    return path


def put(store: TranscriptStore, title: str, scenario: str = "dup") -> Path | None:
    ticket = store.begin(scenario)
    return store.write(ticket, make_exchange(title=title), scenario=scenario, operation="GetTask")


def test_two_stores_replacing_one_file_keep_every_exchange(tmp_path: Path) -> None:
    # both started before either wrote: the first to write replaces the file, the other
    # joins it (appends), never rewrites it from its own memory
    out = tmp_path / "out"
    earlier_file(out)
    stores = [TranscriptStore(out, mode="replace"), TranscriptStore(out, mode="replace")]
    for store in stores:
        store.prepare()
    errors: list[BaseException] = []

    def record(which: int) -> None:
        try:
            for n in range(50):
                put(stores[which], f"s{which}-{n}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=record, args=(which,)) for which in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(LIMIT)
    assert not errors
    for store in stores:
        store.close()
    found = titles(out)
    assert set(found) == {f"s{which}-{n}" for which in (0, 1) for n in range(50)}
    assert set(found.values()) == {1}
    assert [p.name for p in out.glob("*.http")] == ["01-dup.http"]
    # each store's exchanges in its order
    order = [e.title for e in load(out / "01-dup.http")]
    for which in (0, 1):
        mine = [t for t in order if t.startswith(f"s{which}-")]
        assert mine == [f"s{which}-{n}" for n in range(50)]


def test_a_store_that_finds_its_file_changed_joins_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    path = earlier_file(out)
    store = TranscriptStore(out, mode="replace")
    store.prepare()
    early, late = store.begin("dup"), store.begin("dup")
    assert store.write(late, make_exchange(title="late"), scenario="dup", operation="Op") == path
    # another writer appends (as another recorder would); this store's next exchange comes
    # out of order, which alone it would write by rewriting the file from its memory
    with path.open("a") as file:
        file.write("\n" + dumps(Transcript(exchanges=(make_exchange(title="theirs"),)))[21:])
    assert store.write(early, make_exchange(title="early"), scenario="dup", operation="Op") == path
    store.close()
    assert [e.title for e in load(path)] == ["late", "theirs", "early"]


_RECORDER = """
import sys, time
from pathlib import Path
from factories import make_exchange
from recorder.record.store.transcript_store import TranscriptStore
which, start, folder, count = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
store = TranscriptStore(folder, mode="replace")
store.prepare()
while time.time() < start:
    time.sleep(0.001)
for n in range(count):
    ticket = store.begin("dup")
    store.write(ticket, make_exchange(title=f"p{which}-{n}"), scenario="dup", operation="Op")
print("done", flush=True)
sys.stdin.readline()  # still running (its notes held) until told
store.close()
"""


def _recorder(which: str, start: float, out: Path, count: int) -> subprocess.Popen[str]:
    tests = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), *sys.path])}
    return subprocess.Popen(
        [sys.executable, "-c", _RECORDER, which, str(start), str(out), str(count)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_two_recorder_processes_on_one_scenario_lose_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    earlier_file(out)
    start = time.time() + 1.0
    procs = [_recorder(which, start, out, 150) for which in ("0", "1")]
    for proc in procs:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline() == "done\n"
    for proc in procs:
        assert proc.communicate("\n", timeout=LIMIT)[1] is None
        assert proc.returncode == 0
    found = titles(out)
    assert set(found) == {f"p{which}-{n}" for which in (0, 1) for n in range(150)}
    assert set(found.values()) == {1}


def test_a_recorder_started_after_another_made_the_file_does_not_replace_it(
    tmp_path: Path,
) -> None:
    # B makes 01-dup.http and still runs; A starts then (the file is there at its start) and
    # records the same scenario: B's file is B's, A joins it, nothing replaced
    out = tmp_path / "out"
    out.mkdir()
    first = _recorder("0", 0.0, out, 20)
    assert first.stdout is not None
    assert first.stdout.readline() == "done\n"
    assert sorted(p.name for p in out.glob("*.http")) == ["01-dup.http"]
    second = _recorder("1", 0.0, out, 20)
    assert second.stdout is not None
    assert second.stdout.readline() == "done\n"
    for proc in (second, first):
        proc.communicate("\n", timeout=LIMIT)
        assert proc.returncode == 0
    found = titles(out)
    assert set(found) == {f"p{which}-{n}" for which in (0, 1) for n in range(20)}
    assert set(found.values()) == {1}


def test_a_during_tag_in_a_shared_file_names_the_exchanges_place_there(tmp_path: Path) -> None:
    out = tmp_path / "out"
    path = earlier_file(out)
    store = TranscriptStore(out, mode="replace")
    store.prepare()
    first, stream, follow = store.begin("dup"), store.begin("dup"), store.begin("dup")
    assert store.write(first, make_exchange(title="first"), scenario="dup", operation="Op")
    with path.open("a") as file:  # another recorder's exchange lands in between
        file.write("\n" + dumps(Transcript(exchanges=(make_exchange(title="theirs"),)))[21:])
    store.write(stream, make_exchange(title="stream"), scenario="dup", operation="Op")
    store.write(
        follow, make_exchange(title="follow"), scenario="dup", operation="Op", during=(stream, 2)
    )
    store.close()
    exchanges = load(path).exchanges
    assert [e.title for e in exchanges] == ["first", "theirs", "stream", "follow"]
    assert "@during exchange 3 frame 2" in exchanges[3].comments


def test_a_shared_file_that_does_not_parse_has_no_count() -> None:
    # the places of a shared file's exchanges are known only while its text parses: a writer
    # killed inside an append leaves it unknown (None), and no `@during` tag is numbered then
    from recorder.format.httpfile import dumps_exchange
    from recorder.record.store.sharing import count_exchanges

    block = dumps_exchange(make_exchange())
    assert count_exchanges(block.encode()) == 1
    assert count_exchanges((block + "\n" + block).encode()) == 2
    assert count_exchanges((block + "\n###\nGET /cut-off").encode()) is None
