"""An agent's call in the store (`CallOf`): `# @call NAME exchange N [frame K]`, N its
exchange's place in the file whatever order the exchanges are written in; the head names the
downstream once (`# @downstream NAME URL`); a call moved to another exchange's file goes there."""

from __future__ import annotations

from pathlib import Path

from factories import make_exchange

from recorder import CallTag, load
from recorder.record.store.filetext import CallOf
from recorder.record.store.transcript_store import CONVERSATION, TranscriptStore

MODEL = "https://api.example/v1"


def test_in_order_a_call_is_appended_tagged_and_the_head_names_its_downstream(
    tmp_path: Path,
) -> None:
    store = TranscriptStore(tmp_path)
    key = (CONVERSATION, 1)
    ask = store.begin(into=key, operation="SendMessage")
    call = store.begin(into=key)
    again = store.begin(into=key)
    store.write(ask, make_exchange(title="ask"), scenario=None, operation="SendMessage")
    store.write(
        call,
        make_exchange(title="model: POST /v1/chat/completions"),
        scenario=None,
        operation="call",
        call=CallOf("model", MODEL, ask, frame=2),
    )
    path = store.write(
        again,
        make_exchange(title="model: POST /v1/chat/completions"),
        scenario=None,
        operation="call",
        call=CallOf("model", MODEL, ask, ambiguous=True),
    )
    assert path is not None
    text = path.read_text()
    assert text.startswith(f"# recorder-format: 1\n# @downstream model {MODEL}\n\n### ask\n")
    assert text.count("# @downstream") == 1
    assert [e.call for e in load(path)] == [
        None,
        CallTag("model", 1, 2),
        CallTag("model", 1, ambiguous=True),
    ]


def test_the_tag_follows_its_exchanges_place_as_the_file_is_written(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path)
    first, ask, call, later = (store.begin("s") for _ in range(4))
    store.write(ask, make_exchange(title="ask"), scenario="s", operation="x")
    store.write(later, make_exchange(title="later"), scenario="s", operation="x")
    path = store.write(
        call,
        make_exchange(title="tools: POST /mcp"),
        scenario="s",
        operation="call",
        call=CallOf("tools", "http://127.0.0.1:9", ask),
    )
    assert path is not None
    assert [(e.title, e.call) for e in load(path)] == [
        ("ask", None),
        ("tools: POST /mcp", CallTag("tools", 1)),
        ("later", None),
    ]
    store.write(first, make_exchange(title="first"), scenario="s", operation="x")
    assert [e.call.exchange if e.call else None for e in load(path)] == [None, None, 2, None]


def test_a_call_moved_to_another_exchange_goes_to_its_file(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path)
    one, two = (CONVERSATION, 1), (CONVERSATION, 2)
    ask_one = store.begin(into=one, operation="SendMessage")
    ask_two = store.begin(into=two, operation="SendStreamingMessage")
    call = store.begin(into=one)  # (pending: placed with the earliest open exchange)
    store.move(call, two)  # (its session's later call was one of exchange two's)
    store.write(ask_one, make_exchange(title="one"), scenario=None, operation="SendMessage")
    store.write(ask_two, make_exchange(title="two"), scenario=None, operation="x")
    path = store.write(
        call,
        make_exchange(title="tools: POST /mcp"),
        scenario=None,
        operation="call",
        call=CallOf("tools", "http://127.0.0.1:9", ask_two),
    )
    assert path is not None and path.name.endswith("send-streaming-message.http")
    assert [e.title for e in load(path)] == ["two", "tools: POST /mcp"]
    assert len(list(tmp_path.glob("*.http"))) == 2
