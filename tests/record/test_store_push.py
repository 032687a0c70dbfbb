"""A push delivery's `# @push config N` in the store: N is its registering exchange's place
in the file when the file is written, whatever order the exchanges are written in."""

from __future__ import annotations

from pathlib import Path

from factories import make_exchange, make_request

from recorder import load
from recorder.record.store.transcript_store import TranscriptStore

REGISTERS = make_request(
    body=b'{"jsonrpc": "2.0", "id": 1, "method": "CreateTaskPushNotificationConfig", '
    b'"params": {"taskId": "t-1", "url": "http://127.0.0.1:9/hook"}}'
)


def test_the_tag_names_the_registering_exchanges_place_in_write_order(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path)
    before, registering, delivery, later = (store.begin("push") for _ in range(4))
    # the delivery is written first (it came while its config's request was open), then a
    # later exchange, then the registering one, then one begun before it: the places move
    store.write(
        delivery, make_exchange(title="push"), scenario="push", operation="x", push=registering
    )
    store.write(later, make_exchange(title="later"), scenario="push", operation="x")
    path = store.write(
        registering,
        make_exchange(title="create", request=REGISTERS),
        scenario="push",
        operation="x",
    )
    assert path is not None
    assert [e.push_config for e in load(path)] == [None, 1, None]
    store.write(before, make_exchange(title="before"), scenario="push", operation="x")
    transcript = load(path)
    assert [e.title for e in transcript] == ["before", "create", "push", "later"]
    assert [e.push_config for e in transcript] == [None, None, 2, None]


def test_in_order_the_delivery_is_appended_with_its_tag(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path)
    registering, delivery = store.begin("push"), store.begin("push")
    store.write(registering, make_exchange(request=REGISTERS), scenario="push", operation="x")
    path = store.write(
        delivery, make_exchange(title="push"), scenario="push", operation="x", push=registering
    )
    assert path is not None
    assert "\n### push\n# @push config 1\nPOST " in path.read_text()
