"""Record modes of the transcript writer: new, replace, once (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import make_exchange

from recorder import Transcript, dumps, load
from recorder.record.store.modes import existing_file, existing_files, keep_in_place
from recorder.record.store.transcript_store import CONVERSATION, TranscriptStore


def put(store: TranscriptStore, title: str, scenario: str | None = "ask") -> Path | None:
    if scenario is None:
        ticket = store.begin(into=(CONVERSATION, 1), operation="GetTask")
    else:
        ticket = store.begin(scenario)
    return store.write(ticket, make_exchange(title=title), scenario=scenario, operation="GetTask")


def titles(path: Path) -> list[str]:
    return [exchange.title for exchange in load(path)]


def previous_folder(tmp_path: Path) -> Path:
    """A folder with 01-other.http, 02-ask.http (two exchanges) and 03-later.http."""
    folder = tmp_path / "out"
    folder.mkdir()
    for number, name, names in ((1, "other", ["o"]), (2, "ask", ["a1", "a2"]), (3, "later", ["l"])):
        exchanges = tuple(make_exchange(title=title) for title in names)
        (folder / f"{number:02d}-{name}.http").write_text(dumps(Transcript(exchanges=exchanges)))
    return folder


def test_existing_file_is_the_lowest_number_of_exactly_the_slug(tmp_path: Path) -> None:
    for name in ("07-ask.http", "03-ask.http", "02-2-ask.http", "01-ask-more.http", "ask.http"):
        (tmp_path / name).write_text("")
    assert existing_file(tmp_path, "ask") == tmp_path / "03-ask.http"
    assert existing_file(tmp_path, "2-ask") == tmp_path / "02-2-ask.http"
    assert existing_file(tmp_path, "more") is None
    assert existing_file(tmp_path / "missing", "ask") is None


def test_new_gives_an_existing_scenario_a_new_file(tmp_path: Path) -> None:
    out = previous_folder(tmp_path)
    store = TranscriptStore(out)
    assert put(store, "b1") == out / "04-ask.http"
    store.close()
    assert titles(out / "02-ask.http") == ["a1", "a2"]
    assert store.replaced == {}


def test_replace_writes_the_scenario_file_again_in_place(tmp_path: Path) -> None:
    out = previous_folder(tmp_path)
    seen: list[tuple[list[str], list[str]]] = []

    def keep(previous: Transcript, fresh: Transcript) -> Transcript:
        seen.append(([e.title for e in previous], [e.title for e in fresh]))
        return fresh

    store = TranscriptStore(out, mode="replace", keep=keep)
    assert put(store, "b1") == out / "02-ask.http"
    assert titles(out / "02-ask.http") == ["b1"]  # the fresh recording, as it comes
    assert put(store, "b2") == out / "02-ask.http"
    assert titles(out / "02-ask.http") == ["b1", "b2"]
    # traffic without a scenario, and a scenario without a file, get new files
    assert put(store, "c", scenario=None) == out / "04-get-task.http"
    assert put(store, "n", scenario="brand-new") == out / "05-brand-new.http"
    store.close()
    assert seen == [(["a1", "a2"], ["b1", "b2"])]
    assert store.replaced == {out / "02-ask.http": True}
    assert sorted(p.name for p in out.iterdir()) == [
        "01-other.http",
        "02-ask.http",
        "03-later.http",
        "04-get-task.http",
        "05-brand-new.http",
    ]


def test_replace_at_close_writes_what_keep_gives(tmp_path: Path) -> None:
    out = previous_folder(tmp_path)
    before = (out / "02-ask.http").read_bytes()

    def keep(previous: Transcript, fresh: Transcript) -> Transcript:
        return previous  # as if nothing had changed

    store = TranscriptStore(out, mode="replace", keep=keep)
    put(store, "b1")
    assert (out / "02-ask.http").read_bytes() != before
    store.close()
    assert (out / "02-ask.http").read_bytes() == before
    assert store.replaced == {out / "02-ask.http": False}


def test_replace_without_keep_leaves_the_fresh_recording(tmp_path: Path) -> None:
    out = previous_folder(tmp_path)
    store = TranscriptStore(out, mode="replace")
    put(store, "b1")
    store.close()
    assert titles(out / "02-ask.http") == ["b1"]


def test_a_scenario_run_again_goes_on_in_its_file(tmp_path: Path) -> None:
    # what this recording wrote is never replaced: the second run is appended
    out = tmp_path / "out"
    store = TranscriptStore(out, mode="replace")
    assert put(store, "first") == out / "01-ask.http"
    store.end("ask")
    assert put(store, "second") == out / "01-ask.http"
    store.end("ask")
    assert put(store, "third") == out / "01-ask.http"
    store.close()
    assert titles(out / "01-ask.http") == ["first", "second", "third"]
    assert [p.name for p in out.iterdir()] == ["01-ask.http"]
    assert store.replaced == {}


def test_a_file_replaced_then_run_again_keeps_both_runs(tmp_path: Path) -> None:
    out = previous_folder(tmp_path)
    store = TranscriptStore(out, mode="replace")
    assert put(store, "b1") == out / "02-ask.http"
    store.end("ask")
    assert put(store, "b2") == out / "02-ask.http"
    store.close()
    assert titles(out / "02-ask.http") == ["b1", "b2"]
    assert store.replaced == {out / "02-ask.http": True}


def test_replace_leaves_a_file_made_after_the_start(tmp_path: Path) -> None:
    # another recorder's file, made while this one runs, is not this one's to replace
    out = tmp_path / "out"
    store = TranscriptStore(out, mode="replace")
    store.prepare()
    other = out / "01-ask.http"
    other.write_text(dumps(Transcript(exchanges=(make_exchange(title="theirs"),))))
    assert put(store, "mine") == out / "02-ask.http"
    store.close()
    assert titles(other) == ["theirs"]
    assert titles(out / "02-ask.http") == ["mine"]


def test_once_keeps_only_files_from_before_the_start(tmp_path: Path) -> None:
    out = tmp_path / "out"
    store = TranscriptStore(out, mode="once")
    store.prepare()
    (out / "01-ask.http").write_text(dumps(Transcript(exchanges=(make_exchange(title="x"),))))
    assert put(store, "mine") == out / "02-ask.http"
    store.close()


def test_existing_files_are_each_slugs_lowest_number(tmp_path: Path) -> None:
    for name in ("07-ask.http", "03-ask.http", "02-2-ask.http", "01-ask-more.http", "ask.http"):
        (tmp_path / name).write_text("")
    assert existing_files(tmp_path) == {
        "ask": tmp_path / "03-ask.http",
        "2-ask": tmp_path / "02-2-ask.http",
        "ask-more": tmp_path / "01-ask-more.http",
    }
    assert existing_files(tmp_path / "missing") == {}


def test_once_keeps_the_file_and_records_new_scenarios(tmp_path: Path) -> None:
    out = previous_folder(tmp_path)
    before = (out / "02-ask.http").read_bytes()
    store = TranscriptStore(out, mode="once")
    assert put(store, "b1") is None
    assert put(store, "b2") is None
    assert put(store, "n", scenario="brand-new") == out / "04-brand-new.http"
    store.end("brand-new")
    # a scenario first seen without a file stays recorded for the whole run
    assert put(store, "n2", scenario="brand-new") == out / "05-brand-new.http"
    assert put(store, "c", scenario=None) == out / "06-get-task.http"
    store.close()
    assert (out / "02-ask.http").read_bytes() == before


def test_an_unknown_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown record mode 'all': use one of new, replace"):
        TranscriptStore(tmp_path, mode="all")


def test_keep_in_place_leaves_a_file_that_does_not_parse(tmp_path: Path) -> None:
    path = tmp_path / "01-ask.http"
    fresh = dumps(Transcript(exchanges=(make_exchange(title="b"),)))
    path.write_text(fresh)
    assert keep_in_place(path, "not a transcript\n", lambda p, f: p) is True
    assert path.read_text() == fresh
    assert keep_in_place(path, fresh, lambda p, f: p) is False
    assert keep_in_place(tmp_path / "gone.http", fresh, lambda p, f: p) is False


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--scenario", "..."], "recorder record: --scenario: cannot make a file name from '...'"),
        (["--mode", "all"], "'all' is not one of 'new', 'replace', 'once'"),
    ],
)
def test_cli_rejects_a_bad_scenario_or_mode(
    tmp_path: Path, options: list[str], message: str
) -> None:
    from click.testing import CliRunner

    from recorder.cli import main

    command = ["record", "--upstream", "http://127.0.0.1:9", "--listen", "127.0.0.1:0"]
    result = CliRunner().invoke(main, [*command, "--out", str(tmp_path / "out"), *options])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "out").exists()


def test_once_keeps_an_unscripted_follow_up_of_a_kept_scenario_out_too(tmp_path: Path) -> None:
    # by id lineage a request carrying an id a kept scenario's reply gave joins its file key
    out = previous_folder(tmp_path)
    store = TranscriptStore(out, mode="once")
    ticket = store.begin("ask")
    key = store.file_key(ticket)
    assert key is not None
    assert store.write(ticket, make_exchange(), scenario="ask", operation="GetTask") is None
    follow_up = store.begin(into=key, operation="GetTask")
    assert store.write(follow_up, make_exchange(), scenario=None, operation="GetTask") is None
    store.close()
    assert sorted(p.name for p in out.iterdir()) == [
        "01-other.http",
        "02-ask.http",
        "03-later.http",
    ]


def test_a_second_run_of_a_name_with_the_same_slug_keeps_the_first_file(tmp_path: Path) -> None:
    # "checkout flow" then "checkout/flow": one slug, `checkout-flow`; the second run's
    # replace took the first's file (3 exchanges lost) while the hash was the slug's
    out = tmp_path / "out"
    out.mkdir()
    first = TranscriptStore(out, mode="replace", keep=lambda previous, fresh: fresh)
    for title in ("c1", "c2", "c3"):
        put(first, title, scenario="checkout flow")
    first.close()
    second = TranscriptStore(out, mode="replace", keep=lambda previous, fresh: fresh)
    put(second, "s1", scenario="checkout/flow")
    second.close()
    files = sorted(out.glob("*.http"))
    assert [titles(path) for path in files] == [["c1", "c2", "c3"], ["s1"]]
    assert second.replaced == {}
