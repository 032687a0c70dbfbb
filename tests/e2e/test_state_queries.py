"""A test suite's unscripted traffic (`tests/traffic.py`, `drive_listing`: the real a2a-sdk
client, one messageId reused in every test, a ListTasks with no filter) recorded through the
real proxy in front of the real kit: the reused messageId ties no two tests into one file,
the ListTasks file names the files whose tasks it lists (`# @after`), and it replays alone,
with `-k`, under `--jobs 4` and in every shard, against a fresh kit each time."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from traffic import REUSED_MESSAGE_ID, drive_listing

from recorder import dump, load
from recorder.cli import main
from recorder.disk.transcripts import find_transcripts
from recorder.format.model import Transcript
from recorder.kit import KitServer, start_kit
from recorder.learn.run import learn
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.replay.reports.results import PlayResult
from recorder.replay.run import play

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.e2e

TIMEOUT = 5.0  # seconds per exchange


@dataclass(frozen=True)
class Recording:
    folder: Path
    seen: dict[str, Any]
    files: dict[str, Transcript]

    def listing(self) -> Path:
        [name] = [n for n, t in self.files.items() if t.exchanges[0].title.startswith("ListTasks")]
        return self.folder / name


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    out = tmp_path_factory.mktemp("listing") / "rec"
    with start_kit() as kit, ProxyServer(create_proxy_app(kit.url, out=out)) as server:
        seen = drive_listing(server.url)
    files = {path.name: load(path) for path in find_transcripts([out])}
    return Recording(out, seen, files)


@pytest.fixture
def kits() -> Iterator[list[KitServer]]:
    started: list[KitServer] = []
    try:
        yield started
    finally:
        for kit in started:
            kit.stop()


def replay(paths: list[Path], kits: list[KitServer], **options: Any) -> PlayResult:
    kit = start_kit()
    kits.append(kit)
    return play([str(p) for p in paths], agent=kit.url, timeout=TIMEOUT, **options)


def summary(result: PlayResult) -> str:
    lines = [f"{result.passed_count} of {result.exchange_count} passed"]
    for transcript in result.transcripts:
        for exchange in transcript.failed:
            lines.append(f"  {Path(transcript.path).name} #{exchange.number}: {exchange}")
    return "\n".join(lines)


def test_the_client_saw_both_tasks_listed(recording: Recording) -> None:
    assert recording.seen["history"] == [REUSED_MESSAGE_ID]
    assert recording.seen["listed"] is True


def test_a_reused_message_id_ties_no_two_tests_together(recording: Recording) -> None:
    titles = {name: [e.title.split(":")[0] for e in t] for name, t in recording.files.items()}
    reviews = sorted(ops for ops in titles.values() if ops[0] == "SendMessage")
    # each review its own file (the first with its GetTask), the listing its own too
    assert reviews == [["SendMessage"], ["SendMessage"], ["SendMessage", "GetTask"]], titles
    assert sum(ops == ["ListTasks"] for ops in titles.values()) == 1, titles


def test_the_listing_names_the_files_whose_tasks_it_lists(recording: Recording) -> None:
    listing = recording.files[recording.listing().name]
    needed = [recording.files[name] for name in listing.after]
    # the two reviews made before the listing: not the card, not the review after it
    assert len(needed) == 2, listing.after
    assert all(t.exchanges[0].title.startswith("SendMessage") for t in needed)
    later = max(recording.files, key=lambda name: name)
    assert later not in listing.after
    text = recording.listing().read_text()
    assert text.startswith(f"# recorder-format: 1\n# @after {listing.after[0]}\n")
    outcome = CliRunner().invoke(main, ["check", "--canonical", str(recording.folder)])
    assert outcome.exit_code == 0, outcome.output


def test_the_listing_replays_alone(recording: Recording, kits: list[KitServer]) -> None:
    result = replay([recording.listing()], kits)
    assert result.passed, summary(result)
    # its needs were played first, not reported
    assert [Path(t.path).name for t in result.transcripts] == [recording.listing().name]
    assert result.exchange_count == 1


def test_the_listing_replays_selected_by_k(recording: Recording, kits: list[KitServer]) -> None:
    result = replay([recording.folder], kits, pattern="ListTasks")
    assert result.passed, summary(result)
    assert result.exchange_count == 1


def test_the_folder_replays_in_order_and_with_four_jobs(
    recording: Recording, kits: list[KitServer]
) -> None:
    for jobs in (1, 4):
        result = replay([recording.folder], kits, jobs=jobs)
        assert result.passed, f"--jobs {jobs}: {summary(result)}"
        assert result.exchange_count == sum(len(t) for t in recording.files.values())


@pytest.mark.parametrize("count", [2, 3])
def test_every_shard_replays(recording: Recording, kits: list[KitServer], count: int) -> None:
    played = 0
    for shard in range(1, count + 1):
        result = replay([recording.folder], kits, shard=(shard, count))
        assert result.passed, f"--shard {shard}/{count}: {summary(result)}"
        played += result.exchange_count
    assert played == sum(len(t) for t in recording.files.values())


def test_the_listing_passes_as_a_pytest_item(
    recording: Recording, pytester: pytest.Pytester, kits: list[KitServer]
) -> None:
    shutil.copytree(recording.folder, pytester.path / "transcripts")
    kit = start_kit()
    kits.append(kit)
    listing = f"transcripts/{recording.listing().name}"
    result = pytester.runpytest(listing, "--recorder-agent", kit.base_url, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_file_that_names_its_need_carries_that_files_ids_forward(
    recording: Recording, tmp_path: Path, kits: list[KitServer]
) -> None:
    # a GetTask cut out of the file that created its task: alone it asks for a task no reply
    # of its file made; naming that file in its head makes the player create it first
    [name] = [n for n, t in recording.files.items() if len(t) == 2]
    get_task = recording.files[name].exchanges[1]
    shutil.copytree(recording.folder, tmp_path / "rec")
    blind = tmp_path / "rec" / "99-get-task.http"
    dump(Transcript((get_task,)), blind)
    assert not replay([blind], kits).passed
    dump(Transcript((get_task,), comments=(f"@after {name}",)), blind)
    result = replay([blind], kits)
    assert result.passed, summary(result)
    assert [e.notes for t in result.transcripts for e in t.exchanges] == [()]


def test_a_missing_need_fails_the_pytest_collection_naming_the_tag(
    recording: Recording, pytester: pytest.Pytester
) -> None:
    listing = recording.listing()
    (pytester.path / listing.name).write_text(listing.read_text())
    result = pytester.runpytest(listing.name, "--recorder-agent", "http://127.0.0.1:9")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*{listing.name}:2: @after * no such transcript in *"])


def test_learning_finds_no_noise_in_the_listing(
    recording: Recording, kits: list[KitServer]
) -> None:
    # played twice against one agent, the listing would list twice the tasks: its needs are
    # played with it and the other files' tasks left out, so nothing varies between runs
    kit = start_kit()
    kits.append(kit)
    learned = learn([str(recording.folder)], agent=kit.url, timeout=TIMEOUT)
    assert learned.proposals.rules == [], learned.text
    assert learned.regressions == 0
