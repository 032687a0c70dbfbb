"""Naming, numbering and the transcript writer."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from factories import make_exchange, make_request

from recorder import Headers, Request, Transcript, dumps, load
from recorder.disk import atomic
from recorder.disk.transcripts import find_transcripts
from recorder.format.httpfile import dumps_exchange
from recorder.record.naming import (
    exchange_title,
    file_name,
    header_case,
    next_number,
    operation_name,
    operation_slug,
    slugify,
)
from recorder.record.store.filetext import Block
from recorder.record.store.transcript_store import CONVERSATION, TranscriptStore, during_tagged

JSON = Headers([("Content-Type", "application/json")])
PUSH = "/a2a/rest/tasks/t-1/pushNotificationConfigs"


@pytest.mark.parametrize(
    ("method", "target", "body", "expected"),
    [
        ("POST", "/a2a/jsonrpc", b'{"id":1,"method":"SendMessage"}', "SendMessage"),
        (
            "POST",
            "/a2a/jsonrpc",
            b'{"id":3,"method":"message/send"}',
            "message/send",
        ),
        ("GET", "/.well-known/agent-card.json", b"", "GetAgentCard"),
        ("GET", "/tenant/.well-known/agent-card.json", b"", "GetAgentCard"),
        ("POST", "/a2a/rest/message:send", b"{}", "SendMessage"),
        ("POST", "/a2a/rest/message:stream", b"{}", "SendStreamingMessage"),
        ("GET", "/a2a/rest/tasks/t-1", b"", "GetTask"),
        ("GET", "/a2a/rest/tasks/t-1?historyLength=2", b"", "GetTask"),
        ("GET", "/a2a/rest/tasks?contextId=c", b"", "ListTasks"),
        ("POST", "/a2a/rest/tasks/t-1:cancel", b"{}", "CancelTask"),
        ("GET", "/a2a/rest/tasks/t-1:subscribe", b"", "SubscribeToTask"),
        ("POST", "/a2a/rest/tasks/t-1:subscribe", b"", "SubscribeToTask"),
        (
            "POST",
            PUSH,
            b"{}",
            "CreateTaskPushNotificationConfig",
        ),
        (
            "GET",
            PUSH,
            b"",
            "ListTaskPushNotificationConfigs",
        ),
        (
            "GET",
            PUSH + "/p",
            b"",
            "GetTaskPushNotificationConfig",
        ),
        (
            "DELETE",
            PUSH + "/p",
            b"",
            "DeleteTaskPushNotificationConfig",
        ),
        ("GET", "/a2a/rest/extendedAgentCard", b"", "GetExtendedAgentCard"),
        ("GET", "/a2a/rest/nope", b"", "GET /a2a/rest/nope"),
        ("POST", "/a2a/jsonrpc", b'{"jsonrpc":"2.0","id":7,"method":', "POST /a2a/jsonrpc"),
        ("POST", "/a2a/jsonrpc", b"[]", "POST /a2a/jsonrpc"),
        # a method name with a line break names no operation (a title holds one line)
        ("POST", "/a2a/jsonrpc", b'{"method":"SendMessage\\n"}', "POST /a2a/jsonrpc"),
    ],
)
def test_operation_name(method: str, target: str, body: bytes, expected: str) -> None:
    headers = JSON if body else Headers()
    request = Request(method=method, target=target, headers=headers, body=body)
    assert operation_name(request) == expected


def test_exchange_title_adds_a_one_line_description() -> None:
    request = make_request()
    assert exchange_title(request) == "GetTask"
    assert exchange_title(request, "read  the\n review") == "GetTask: read the review"


def hashed(name: str) -> str:
    """The 8 hex digits that end the slug of a name that is not its own slug."""
    return hashlib.sha256(name.encode()).hexdigest()[:8]


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        # a name that is its own slug is the slug (every golden file's name)
        ("message-reply", "message-reply"),
        ("grpc-errors", "grpc-errors"),
        ("x" * 60, "x" * 60),
        ("x" * 200, "x" * 51 + "-" + hashed("x" * 200)),
        ("a-" * 40, "a-" * 26 + hashed("a-" * 40)),
        # any other ends with a hash of the whole name: the slug alone loses what tells
        # names apart
        ("Message Reply", "message-reply-" + hashed("Message Reply")),
        ("GetTask", "get-task-" + hashed("GetTask")),
        ("../../etc/passwd", "etc-passwd-" + hashed("../../etc/passwd")),
        ("a/b\\c", "a-b-c-" + hashed("a/b\\c")),
        ("Überprüfung 2", "uberprufung-2-" + hashed("Überprüfung 2")),
        ("Café\x00crème/..", "cafe-creme-" + hashed("Café\x00crème/..")),
        ("ﬁle ＣＯＮ", "file-con-" + hashed("ﬁle ＣＯＮ")),
        ("..", None),
        ("", None),
        ("/", None),
        ("日本語", None),
    ],
)
def test_slugify(name: str, slug: str | None) -> None:
    if slug is None:
        with pytest.raises(ValueError, match="file name"):
            slugify(name)
    else:
        assert slugify(name) == slug
        assert "/" not in slug and ".." not in slug and len(slug) <= 60


def test_names_whose_slugs_collide_get_files_of_their_own() -> None:
    # (the hash was over the slug: "checkout flow" and "checkout/flow" shared one file)
    names = ["checkout flow", "checkout/flow", "Checkout Flow", "checkout_flow", "checkout-flow"]
    slugs = [slugify(name) for name in names]
    assert len(set(slugs)) == len(names), slugs
    assert slugs[-1] == "checkout-flow"  # the name that is its own slug keeps it
    long = "tests/test_checkout.py::test_flow[" + "x" * 60
    assert slugify(long + "a]") != slugify(long + "a)")


@pytest.mark.parametrize(
    ("operation", "slug"),
    [
        ("GetTask", "get-task"),
        ("SendStreamingMessage", "send-streaming-message"),
        ("GET /a2a/rest/nope", "get-a2a-rest-nope"),
        ("日本語", "exchange"),
    ],
)
def test_operation_slugs_read_as_words(operation: str, slug: str) -> None:
    # a conversation's file is numbered and its own: its slug needs no hash
    assert operation_slug(operation) == slug


def test_slugs_cut_at_60_stay_apart() -> None:
    # test node ids of one module: a long common prefix, the test's name past the cut
    prefix = "tests/e2e/test_a_module_with_a_longer_name.py::TestAClassOfManyCases::"
    assert len(prefix) >= 70
    names = [f"{prefix}test_{n}" for n in range(30)]
    slugs = [slugify(name) for name in names]
    assert len(set(slugs)) == 30
    assert all(len(slug) <= 60 and slug.startswith(slugify(prefix)[:40]) for slug in slugs)
    assert slugify(names[0]) == slugs[0]  # the same name, the same file, every run


def test_next_number_continues_after_the_highest() -> None:
    assert next_number([]) == 1
    assert next_number(["01-a.http", "11-errors.http", "readme.md", "7-x.http"]) == 12
    assert next_number(["99-a.http"]) == 100
    assert next_number(["x-01.http", "01-a.txt"]) == 1
    assert file_name(3, "get-task") == "03-get-task.http"
    assert file_name(123, "a") == "123-a.http"


@pytest.mark.parametrize(
    ("lower", "conventional"),
    [
        ("content-type", "Content-Type"),
        ("a2a-version", "A2A-Version"),
        ("a2a-extensions", "A2A-Extensions"),
        ("etag", "ETag"),
        ("www-authenticate", "WWW-Authenticate"),
        ("x-api-key", "X-API-Key"),
        ("cache-control", "Cache-Control"),
        ("X-Custom-ID", "X-Custom-ID"),
    ],
)
def test_header_case(lower: str, conventional: str) -> None:
    assert header_case(lower) == conventional


def test_scenario_exchanges_go_to_one_file_in_request_order(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path)
    first, second = store.begin(), store.begin()
    late = make_exchange(title="second")
    early = make_exchange(title="first")
    path_a = store.write(second, late, scenario="message-reply", operation="GetTask")
    path_b = store.write(first, early, scenario="message-reply", operation="GetTask")
    assert path_a == path_b == tmp_path / "01-message-reply.http"
    assert [e.title for e in load(path_a)] == ["first", "second"]


def test_without_scenario_each_exchange_gets_a_numbered_file(tmp_path: Path) -> None:
    (tmp_path / "07-old.http").write_text("# recorder-format: 1\n")
    store = TranscriptStore(tmp_path)
    paths = [
        store.write(store.begin(), make_exchange(), scenario=None, operation="GetTask")
        for _ in range(2)
    ]
    assert [p.name for p in paths] == ["08-get-task.http", "09-get-task.http"]


def test_ended_scenario_starts_a_new_file(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path)
    one = store.write(store.begin(), make_exchange(), scenario="s", operation="GetTask")
    store.end("s")
    two = store.write(store.begin(), make_exchange(), scenario="s", operation="GetTask")
    assert (one.name, two.name) == ("01-s.http", "02-s.http")


def test_an_exchange_given_as_its_block_is_written_as_its_model_is(tmp_path: Path) -> None:
    # the proxy's common exchanges reach the store as their text (`Block`, made straight from
    # the bytes): the file is the one the model would make, and a block takes no tag
    first, second = make_exchange(title="one"), make_exchange(title="two")
    by_model = TranscriptStore(tmp_path / "model")
    by_block = TranscriptStore(tmp_path / "block")
    for exchange in (first, second):
        by_model.write(by_model.begin(), exchange, scenario="s", operation="GetTask")
        block = Block(dumps_exchange(exchange), exchange.title)
        by_block.write(by_block.begin(), block, scenario="s", operation="GetTask")
    [made] = by_model.written
    [given] = by_block.written
    assert given.read_text() == made.read_text()
    assert load(given).exchanges == (first, second)
    with pytest.raises(ValueError, match="no @during tag"):
        by_block.write(
            by_block.begin(), Block("x", "x"), scenario="s", operation="Op", during=(1, 0)
        )


def test_scrub_runs_over_the_whole_text(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path, scrub=lambda text, secrets: text.replace("t-1", "T-ONE"))
    exchange = make_exchange()
    path = store.write(
        store.begin(), exchange, scenario=None, operation="GetTask", secrets={"t-1": "T"}
    )
    assert "t-1" not in path.read_text()


def test_failed_write_raises_and_leaves_the_old_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    store = TranscriptStore(out)
    store.prepare()
    path = store.write(store.begin(), make_exchange(title="kept"), scenario="s", operation="x")
    before = path.read_bytes()
    # a file where the folder was: no one (not even root) can create files in it
    out.rename(tmp_path / "moved")
    out.write_text("not a folder")
    with pytest.raises(OSError):
        store.write(store.begin(), make_exchange(title="lost"), scenario="s", operation="x")
    with pytest.raises(OSError):  # a new file that could not be written is not counted
        store.write(store.begin(), make_exchange(), scenario=None, operation="x")
    assert store.written == [path]
    out.unlink()
    (tmp_path / "moved").rename(out)
    assert path.read_bytes() == before
    # the failed exchange is not remembered: the next write holds only what was written
    store.write(store.begin(), make_exchange(title="third"), scenario="s", operation="x")
    assert [e.title for e in load(path)] == ["kept", "third"]


def test_concurrent_writes_lose_nothing(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path)

    def work(n: int) -> None:
        for _ in range(5):
            scenario = f"s{n % 3}" if n % 2 else None
            store.write(store.begin(), make_exchange(), scenario=scenario, operation="GetTask")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    files = sorted(tmp_path.glob("*.http"))
    total = sum(len(load(f)) for f in files)
    assert total == 40
    numbers = [int(f.name.split("-")[0]) for f in files]
    assert len(set(numbers)) == len(numbers)


def test_during_tags_name_the_open_stream_by_its_place_in_the_file() -> None:
    send, stream, cancel = (make_exchange(title=t) for t in ("send", "stream", "cancel"))
    tagged = during_tagged([(3, cancel, (2, 1)), (1, send, None), (2, stream, None)])
    assert [e.title for e in tagged] == ["send", "stream", "cancel"]
    assert tagged[2].comments == ("@during exchange 2 frame 1",)
    # the stream is not written yet: no tag until it is
    alone = during_tagged([(1, send, None), (3, cancel, (2, 1))])
    assert alone[1].comments == ()


def test_file_text_is_dumps_of_the_tagged_exchanges_whatever_the_arrival_order(
    tmp_path: Path,
) -> None:
    # cached per-exchange blocks must give the same bytes as one dumps of the whole file,
    # also when an earlier request finishes later and shifts the @during positions
    store = TranscriptStore(tmp_path)
    tickets = [store.begin() for _ in range(4)]
    exchanges = [make_exchange(title=f"e{n}") for n in range(4)]
    during = {tickets[3]: (tickets[2], 1), tickets[1]: (tickets[0], 2)}
    written: list[tuple[int, object, tuple[int, int] | None]] = []
    for n in (2, 3, 1, 0):
        path = store.write(
            tickets[n],
            exchanges[n],
            scenario="s",
            operation="x",
            during=during.get(tickets[n]),
        )
        written.append((tickets[n], exchanges[n], during.get(tickets[n])))
        expected = dumps(Transcript(exchanges=during_tagged(written)))  # type: ignore[arg-type]
        assert path.read_text() == expected
    assert [e.comments for e in load(path)] == [
        (),
        ("@during exchange 1 frame 2",),
        (),
        ("@during exchange 3 frame 1",),
    ]


def test_a_written_exchange_is_let_go_unless_its_tag_can_change(tmp_path: Path) -> None:
    # the store holds every file it writes to; of an exchange once written it keeps the text
    # (a few KB) and lets the exchange go (several times that), except where a later rewrite
    # may have to number its `@during` tag again. Out-of-order rewrites still give dumps
    store = TranscriptStore(tmp_path)
    tickets = [store.begin() for _ in range(3)]
    exchanges = [make_exchange(title=f"e{n}") for n in range(3)]
    during = {tickets[2]: (tickets[1], 1)}
    for n in (1, 2, 0):  # the first finishes last: the file is written again whole
        path = store.write(
            tickets[n], exchanges[n], scenario="s", operation="x", during=during.get(tickets[n])
        )
    assert path is not None
    written = [(tickets[n], exchanges[n], during.get(tickets[n])) for n in range(3)]
    assert path.read_text() == dumps(Transcript(exchanges=during_tagged(written)))
    [record] = store.routes.open.values()
    held = [entry.exchange is not None for entry in record.entries]
    assert held == [False, False, True]


@pytest.mark.parametrize("fsync", [False, True])
def test_fsync_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsync: bool
) -> None:
    flushed: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        flushed.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    store = TranscriptStore(tmp_path, fsync=fsync)
    path = store.write(store.begin(), make_exchange(), scenario=None, operation="GetTask")
    assert len(flushed) == (1 if fsync else 0)
    assert load(path).exchanges == (make_exchange(),)
    store.close()
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left


def test_a_request_begun_before_its_scenario_ended_goes_to_its_file(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path)
    first, late = store.begin("s"), store.begin("s")
    store.write(first, make_exchange(title="first"), scenario="s", operation="GetTask")
    store.end("s")
    after = store.begin("s")
    store.write(after, make_exchange(title="after"), scenario="s", operation="GetTask")
    store.write(late, make_exchange(title="late"), scenario="s", operation="GetTask")
    assert [e.title for e in load(tmp_path / "01-s.http")] == ["first", "late"]
    assert [e.title for e in load(tmp_path / "02-s.http")] == ["after"]
    assert store.routes.open.keys() == {("s", 1)}  # the ended file is let go once complete


def test_a_forgotten_request_lets_its_ended_file_go(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path)
    first, failed = store.begin("s"), store.begin("s")
    store.write(first, make_exchange(), scenario="s", operation="GetTask")
    store.end("s")
    assert store.routes.open.keys() == {("s", 0)}  # `failed` may still come
    store.forget(failed)
    store.forget(first)  # already written: nothing happens
    assert store.routes.open == {} and store.routes.pending == {}


def test_a_secret_first_sent_later_is_scrubbed_from_earlier_files(tmp_path: Path) -> None:
    from recorder.secrets.redact import scrub_text

    store = TranscriptStore(tmp_path, scrub=scrub_text)
    token = "tok-Rk4Lx9Pq"
    login = make_exchange(title=f"login gave {token}")
    first = store.write(store.begin(), login, scenario="login", operation="x")
    other = store.write(store.begin(), make_exchange(title="other"), scenario=None, operation="y")
    secrets = {token: "A2A_TOKEN"}
    store.write(
        store.begin(),
        make_exchange(),
        scenario=None,
        operation="z",
        secrets=secrets,
        sent_secrets=secrets,
    )
    assert token not in first.read_text() and "{{A2A_TOKEN}}" in first.read_text()
    assert load(first).exchanges[0].title == "login gave {{A2A_TOKEN}}"
    assert load(other).exchanges[0].title == "other"


def _entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_new_transcript_is_made_in_the_hidden_temporary_folder_then_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # where there is no O_TMPFILE (forced here): a named temporary file, linked
    made: list[str] = []
    real_link = os.link

    def watching_link(src: str, dst: str) -> None:
        made.append(src)
        real_link(src, dst)

    monkeypatch.setattr(atomic, "_TMPFILE", 0)
    monkeypatch.setattr(os, "link", watching_link)
    store = TranscriptStore(tmp_path)
    path = store.write(store.begin("s"), make_exchange(), scenario="s", operation="x")
    # in the process's hidden temporary folder, not among the transcripts
    assert [Path(tmp).parent.parent for tmp in made] == [tmp_path / ".recorder-tmp"]
    assert not os.path.exists(made[0])
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~_umask()
    assert len(load(path)) == 1
    store.close()
    assert _entries(tmp_path) == ["01-s.http"]


def test_a_rewritten_transcript_keeps_its_mode(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path)
    first, second = store.begin("s"), store.begin("s")
    path = store.write(second, make_exchange(title="second"), scenario="s", operation="x")
    os.chmod(path, 0o640)
    # an exchange that lands before one already written: the file is rewritten whole
    store.write(first, make_exchange(title="first"), scenario="s", operation="x")
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert [e.title for e in load(path)] == ["first", "second"]
    store.close()
    assert _entries(tmp_path) == ["01-s.http"]


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    store = TranscriptStore(out)
    store.prepare()
    with pytest.raises(ValueError):  # a scenario name that cannot be a file name
        store.write(store.begin(), make_exchange(), scenario="..", operation="x")
    store.close()
    assert _entries(out) == []


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_prepare_removes_the_temporary_files_of_processes_that_are_gone(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = int(gone.stdout)  # a process that has exited (its pid is not reused this quickly)
    names = {
        f".recorder.{dead}.3.tmp": False,  # opened ahead by a recorder that was killed
        f".01-s.http.{dead}.7.tmp": False,  # a write cut short before its rename
        # this process makes none: one under its id is a previous run's (a recorder that is
        # PID 1 in its container has the same id every run)
        f".recorder.{os.getpid()}.1.tmp": False,
        f".recorder.{os.getppid()}.1.tmp": True,  # a running process's
        ".recorder.99999999999.1.tmp": True,  # no pid there can be: left alone
        "01-s.http": True,
        "notes.tmp": True,
    }
    for name in names:
        (tmp_path / name).write_text("")
    TranscriptStore(tmp_path).prepare()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        n for n, kept in names.items() if kept
    )


def test_a_conversation_is_one_file_named_after_its_first_request(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path)
    conversation = (CONVERSATION, 1)
    first = store.begin(into=conversation, operation="SendStreamingMessage")
    other = store.begin(into=(CONVERSATION, 2), operation="GetAgentCard")
    follow_up = store.begin(into=store.file_key(first), operation="CancelTask")
    assert store.file_key(follow_up) == store.file_key(first) == conversation
    # the follow-up finishes first (a stream ends after its cancel): the file keeps the name
    # and the request order of the conversation
    path = store.write(follow_up, make_exchange(title="cancel"), scenario=None, operation="x")
    store.write(other, make_exchange(title="card"), scenario=None, operation="GetAgentCard")
    again = store.write(first, make_exchange(title="stream"), scenario=None, operation="x")
    assert path == again == tmp_path / "01-send-streaming-message.http"
    assert [e.title for e in load(path)] == ["stream", "cancel"]
    assert (tmp_path / "02-get-agent-card.http").exists()


def test_numbers_grow_past_99_and_play_in_number_order(tmp_path: Path) -> None:
    for name in ("11-errors.http", "99-last-two-digit.http"):
        (tmp_path / name).write_text("# recorder-format: 1\n")
    store = TranscriptStore(tmp_path)
    path = store.write(store.begin(), make_exchange(), scenario=None, operation="GetTask")
    assert path.name == "100-get-task.http"
    assert [p.name for p in find_transcripts([tmp_path])] == [
        "11-errors.http",
        "99-last-two-digit.http",
        "100-get-task.http",
    ]


def test_a_file_that_reads_others_state_names_them_in_its_head(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path)
    a, b, listing = ((CONVERSATION, n) for n in (1, 2, 3))
    for key, operation in ((a, "SendMessage"), (b, "SendMessage")):
        store.write(
            store.begin(into=key, operation=operation),
            make_exchange(),
            scenario=None,
            operation=operation,
        )
    first = store.begin(into=listing, operation="ListTasks")
    path = store.write(first, make_exchange(title="l1"), scenario=None, operation="x", after={b})
    assert path is not None and path.name == "03-list-tasks.http"
    assert path.read_text().startswith("# recorder-format: 1\n# @after 02-send-message.http\n\n")
    # a later exchange that needs no more is appended; one that needs another file too
    # rewrites the head (names in number order; never the file itself)
    second = store.begin(into=listing, operation="x")
    store.write(second, make_exchange(title="l2"), scenario=None, operation="x", after={b})
    third = store.begin(into=listing, operation="x")
    store.write(
        third, make_exchange(title="l3"), scenario=None, operation="x", after={b, a, listing}
    )
    transcript = load(path)
    assert transcript.after == ("01-send-message.http", "02-send-message.http")
    assert [e.title for e in transcript] == ["l1", "l2", "l3"]
    assert path.read_text() == dumps(transcript)


def test_a_need_written_after_the_file_that_needs_it_is_named_then(tmp_path: Path) -> None:
    # a listing sent while the first exchange of another conversation, a stream, was open:
    # the listing is written first (and numbered first), the stream's file at its end
    store = TranscriptStore(tmp_path)
    stream, listing = (CONVERSATION, 1), (CONVERSATION, 2)
    streamed = store.begin(into=stream, operation="SendStreamingMessage")
    listed = store.begin(into=listing, operation="ListTasks")
    path = store.write(listed, make_exchange(), scenario=None, operation="x", after={stream})
    assert path is not None and load(path).after == ()
    store.write(streamed, make_exchange(), scenario=None, operation="x")
    assert load(path).after == ("02-send-streaming-message.http",)
    assert path.read_text() == dumps(load(path))


def test_a_folded_conversation_goes_on_in_the_file_it_was_folded_into(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path)
    first = store.begin(into=(CONVERSATION, 1), operation="GetAgentCard")
    store.write(first, make_exchange(title="card 1"), scenario=None, operation="GetAgentCard")
    second = store.begin(into=(CONVERSATION, 2), operation="GetAgentCard")
    store.fold(second, (CONVERSATION, 1))
    store.write(second, make_exchange(title="card 2"), scenario=None, operation="GetAgentCard")
    # a later request by an id of the folded conversation joins the same file
    later = store.begin(into=(CONVERSATION, 2))
    store.write(later, make_exchange(title="later"), scenario=None, operation="GetTask")
    store.fold(store.begin("s"), (CONVERSATION, 1))  # (a scenario's request is never folded)
    store.close()
    assert sorted(p.name for p in tmp_path.glob("*.http")) == ["01-get-agent-card.http"]
    assert [e.title for e in load(tmp_path / "01-get-agent-card.http")] == [
        "card 1",
        "card 2",
        "later",
    ]
