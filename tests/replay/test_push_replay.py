"""Push notifications replayed: the player points a push config at its receiver, awaits the
recorded deliveries and compares them (`recorder.replay.pushes`), against the real kit."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from pushtraffic import spoiling_proxy, write_push_transcript

from recorder.disk.transcripts import load
from recorder.format.model import Exchange, Headers, Request, Response
from recorder.kit import KitServer
from recorder.replay.pushes import delivery_plan, point_configs, push_config_of
from recorder.replay.pushrecv import PushReceiver
from recorder.replay.reports.json_report import json_report
from recorder.replay.run import play

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def push_file(kit: KitServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_push_transcript(kit.url, tmp_path_factory.mktemp("push") / "01-push.http")


def _lines(result: Any) -> list[str]:
    return [
        f"{e.number}: {m.describe()}"
        for f in result.transcripts
        for e in f.exchanges
        for m in e.mismatches
    ]


def test_a_push_transcript_replays_clean_five_times(kit: KitServer, push_file: Path) -> None:
    transcript = load(push_file)
    assert delivery_plan(transcript) == {1: [1, 2, 3, 4]}
    for _ in range(5):
        result = play([push_file], agent=kit.url, environ={"TOKEN": "live-token"})
        assert result.passed, _lines(result)
        assert [e.number for e in result.transcripts[0].exchanges] == [1, 2, 3, 4, 5]


def _spoiled(kit: KitServer, push_file: Path, spoil: Any, timeout: float = 10.0) -> list[str]:
    with spoiling_proxy(kit.url, spoil) as proxy:
        result = play([push_file], agent=proxy, environ={"TOKEN": "t"}, timeout=timeout)
    assert not result.passed
    return _lines(result)


def test_an_agent_that_stops_delivering_fails_at_the_missing_deliveries(
    kit: KitServer, push_file: Path
) -> None:
    lines = _spoiled(kit, push_file, lambda n, body: [body] if n <= 2 else [], timeout=2.0)
    assert lines == [
        '4: delivery 3 (push config 1): expected "a delivery", got "missing (none within 2 s)"',
        '5: delivery 4 (push config 1): expected "a delivery", got "missing (none within 2 s)"',
    ]


def test_a_wrong_state_fails_at_its_path(kit: KitServer, push_file: Path) -> None:
    lines = _spoiled(kit, push_file, _failed_state)
    assert lines == [
        '5: $.statusUpdate.status.state: expected "TASK_STATE_COMPLETED", got "TASK_STATE_FAILED"'
    ]


def test_an_extra_update_fails_where_it_came(kit: KitServer, push_file: Path) -> None:
    # the WORKING update sent twice: delivery 3 is that repeat, not the artifact
    lines = _spoiled(kit, push_file, lambda n, body: [body, body] if n == 2 else [body])
    assert lines and all(line.startswith(("4:", "5:")) for line in lines), lines
    assert lines[0].startswith("4: $.artifactUpdate: expected {"), lines


def test_the_pytest_plugin_awaits_each_delivery_as_an_item(
    pytester: pytest.Pytester, kit: KitServer, push_file: Path
) -> None:
    (pytester.path / "transcripts").mkdir()
    (pytester.path / "transcripts" / push_file.name).write_bytes(push_file.read_bytes())
    result = pytester.runpytest("transcripts", "--recorder-agent", kit.url, "-v")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["*delivery 4 PASSED*"])


def test_a_json_report_has_each_delivery_with_its_verdict(
    kit: KitServer, push_file: Path, tmp_path: Path
) -> None:
    with spoiling_proxy(kit.url, _failed_state) as proxy:
        result = play([push_file], agent=proxy, environ={"TOKEN": "t"})
    report = json_report(result)
    verdicts = [(e["exchange"], e["title"], e["verdict"]) for e in report["exchanges"]]
    assert verdicts[1:] == [
        (2, "delivery 1", "passed"),
        (3, "delivery 2", "passed"),
        (4, "delivery 3", "passed"),
        (5, "delivery 4", "failed"),
    ]


# ---------------------------------------------------------------- pure parts, the receiver


def test_the_tag_is_the_models() -> None:
    request = Request("POST", "/hook")
    assert push_config_of(Exchange(request, Response(200), push_config=3)) == 3
    assert push_config_of(Exchange(request, Response(200), comments=("push config 3",))) is None


def test_a_push_config_url_is_pointed_at_the_receiver() -> None:
    json_type = Headers([("Content-Type", "application/json")])
    body = (
        b'{"method": "CreateTaskPushNotificationConfig", "jsonrpc": "2.0",'
        b' "params": {"taskId": "t", "url": "http://c/hook"}}'
    )
    original = Request("POST", "/a2a/jsonrpc", json_type, body)
    pointed, sent = point_configs(original, "http://r/push/1")
    assert sent == "http://c/hook"
    assert pointed.json["params"]["url"] == "http://r/push/1"
    assert original.json["params"]["url"] == "http://c/hook"  # the recorded one untouched
    plain = Request(
        "POST", "/a2a/jsonrpc", json_type, b'{"method": "GetTask", "params": {"id": "t"}}'
    )
    assert point_configs(plain, "http://r/push/1") == (plain, None)


def test_the_receiver_answers_as_recorded_and_wakes_the_waiter() -> None:
    import httpx

    receiver = PushReceiver()
    try:
        key = receiver.new_key()
        receiver.answer(key, [Response(202, "Accepted", Headers([("X-Seen", "1")]), b"ok")])
        assert receiver.wait(key, 1, 0.05) == []
        first = httpx.post(receiver.url(key), json={"a": 1}, timeout=10)
        second = httpx.post(receiver.url(key), json={"a": 2}, timeout=10)
        assert (first.status_code, first.headers["x-seen"], first.content) == (202, "1", b"ok")
        assert (second.status_code, second.content) == (200, b"")
        assert [a.body for a in receiver.wait(key, 2, 10)] == [b'{"a":1}', b'{"a":2}']
    finally:
        receiver.close()


def _failed_state(number: int, body: dict[str, Any]) -> list[dict[str, Any]]:
    # the final update of every run fails (the proxy numbers deliveries over its life)
    if body.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED":
        body = copy.deepcopy(body)
        body["statusUpdate"]["status"]["state"] = "TASK_STATE_FAILED"
    return [body]


def test_update_records_the_live_delivery(kit: KitServer, push_file: Path, tmp_path: Path) -> None:
    copied = tmp_path / push_file.name
    copied.write_bytes(push_file.read_bytes())
    before = load(copied)
    with spoiling_proxy(kit.url, _failed_state) as proxy:
        updated = play([copied], agent=proxy, environ={"TOKEN": "t"}, update=True)
        assert updated.transcripts[0].updated, updated.transcripts[0].not_updated
        after = load(copied)
        again = play([copied], agent=proxy, environ={"TOKEN": "t"})
    assert again.passed, _lines(again)
    assert after.exchanges[4].request.json["statusUpdate"]["status"]["state"] == "TASK_STATE_FAILED"
    # only the delivery changed: the SendMessage, the other deliveries, the answers as they were
    assert after.exchanges[:4] == before.exchanges[:4]
    assert after.exchanges[4].response == before.exchanges[4].response
    assert after.exchanges[4].push_config == 1
