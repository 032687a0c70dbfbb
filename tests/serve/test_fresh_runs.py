"""A client that makes its own ids, run again against `recorder serve` of its own recording.

The client (`own_ids.py`, the real a2a-sdk client) picks uuids, a contextId, ids with a
per-run random suffix and a made-up taskId afresh each run, and sends one request three times.
Recorded unscripted through the real recorder in front of the real kit, then run again (new
ids) against the stand-in of that recording: every result is the agent's, ids aside, and no
request goes unmatched; two such clients at once too.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from own_ids import LIMIT, drive_own_ids

from recorder.kit import KitServer
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve import load_stand_in
from recorder.serve.server import server_options
from recorder.servers import ServerThread

pytestmark = pytest.mark.e2e


@dataclass(frozen=True)
class Recorded:
    folder: Path
    seen: dict[str, Any]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, kit: KitServer) -> Recorded:
    out = tmp_path_factory.mktemp("own-ids") / "rec"
    # (the traffic's webhook is on loopback: local work, said so)
    with ProxyServer(create_proxy_app(kit.url, out=out, push_loopback=True)) as server:
        seen = drive_own_ids(server.url)
    return Recorded(out, seen)


def test_a_second_run_with_fresh_ids_gets_what_the_agent_gave(recorded: Recorded) -> None:
    stand_in = load_stand_in([str(recorded.folder)], DEFAULT_RULES)
    with ServerThread(stand_in, **server_options()) as server:
        seen = drive_own_ids(server.url)
    assert stand_in.problems == []
    assert stand_in.unmatched == 0
    assert seen == recorded.seen
    # every recorded exchange answered once: the three identical requests each had their own
    assert stand_in.matched == stand_in.exchanges


@pytest.mark.parametrize("fresh_ids", [False, True], ids=["recorded-ids", "fresh-ids"])
def test_two_such_clients_at_once(recorded: Recorded, fresh_ids: bool) -> None:
    stand_in = load_stand_in([str(recorded.folder)], DEFAULT_RULES, fresh_ids=fresh_ids)
    results: list[dict[str, Any]] = [{}, {}]
    with ServerThread(stand_in, **server_options()) as server:

        def client(number: int) -> None:
            results[number] = drive_own_ids(server.url)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(LIMIT * 6)
            assert not thread.is_alive()
    assert stand_in.problems == []
    assert results == [recorded.seen, recorded.seen]
    assert stand_in.matched == 2 * stand_in.exchanges
