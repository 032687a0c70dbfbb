"""`recorder import FILE.har` (`recorder.record.harimport`): a HAR's exchanges become the
transcripts the recording proxy would have written for that traffic: grouped by id lineage,
secrets redacted, streams split into frames, bytes kept, hostile input refused at its JSON
path with nothing written outside --out (or at all)."""

from __future__ import annotations

import base64
import datetime
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recorder.cli import main
from recorder.disk.transcripts import load
from recorder.errors import HarError
from recorder.record.harimport import import_har

AGENT = "http://127.0.0.1:41242"
T0 = datetime.datetime(2026, 12, 4, 12, 0, 0, tzinfo=datetime.UTC)


def rpc(method: str, params: dict[str, Any]) -> str:
    return json.dumps(
        {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
    )


def reply(result: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": "x", "result": result})


def entry(
    body: str | None,
    answer: str,
    *,
    method: str = "POST",
    path: str = "/a2a/jsonrpc",
    headers: list[tuple[str, str]] | None = None,
    reply_headers: list[tuple[str, str]] | None = None,
    status: int = 200,
    content_type: str = "application/json",
    at: float = 0.0,
    took: float = 10.0,
    **extra: Any,
) -> dict[str, Any]:
    """An entry as mitmproxy writes one (`at`, `took`: milliseconds)."""
    request: dict[str, Any] = {
        "method": method,
        "url": AGENT + path,
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": [
            {"name": n, "value": v}
            for n, v in [
                ("Host", "127.0.0.1:41242"),
                ("A2A-Version", "1.0"),
                *(headers or []),
                *([("Content-Type", "application/json")] if body is not None else []),
            ]
        ],
        "queryString": [],
        "headersSize": -1,
        "bodySize": len(body or ""),
    }
    if body is not None:
        request["postData"] = {"mimeType": "application/json", "text": body}
    started = T0 + datetime.timedelta(milliseconds=at)
    value = {
        "startedDateTime": started.isoformat(),
        "time": took,
        "request": request,
        "response": {
            "status": status,
            "statusText": "OK",
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [
                {"name": n, "value": v}
                for n, v in [("content-type", content_type), *(reply_headers or [])]
            ],
            "content": {"size": len(answer), "mimeType": content_type, "text": answer},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": len(answer),
        },
        "cache": {},
        "timings": {"send": 1, "wait": 2, "receive": max(took - 3, 0)},
    }
    value.update(extra)
    return value


def har(*entries: dict[str, Any], creator: str = "mitmproxy") -> str:
    return json.dumps(
        {
            "log": {
                "version": "1.2",
                "creator": {"name": creator, "version": "1"},
                "entries": entries,
            }
        }
    )


def task(task_id: str, state: str = "TASK_STATE_COMPLETED") -> dict[str, Any]:
    return {"id": task_id, "contextId": f"ctx-{task_id}", "status": {"state": state}}


def send(text: str) -> str:
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    return rpc("SendMessage", {"message": message})


def imported(tmp_path: Path, text: str, **options: Any) -> dict[str, str]:
    """Import `text`; each file written, by name, as text."""
    out = tmp_path / "out"
    result = import_har(text, source="capture.har", out=out, **options)
    assert [p.parent for p in result.files] == [out] * len(result.files)
    return {path.name: path.read_text() for path in sorted(out.glob("*.http"))}


def test_follow_ups_join_the_file_of_the_reply_that_gave_their_id(tmp_path: Path) -> None:
    one, two = str(uuid.uuid4()), str(uuid.uuid4())
    files = imported(
        tmp_path,
        har(
            entry(send("a"), reply({"task": task(one)}), at=0),
            entry(send("b"), reply({"task": task(two)}), at=20),
            entry(rpc("GetTask", {"id": one}), reply(task(one)), at=40),
            entry(rpc("GetTask", {"id": two}), reply(task(two)), at=60),
        ),
    )
    assert list(files) == ["01-send-message.http", "02-send-message.http"]
    first = load_text(tmp_path, "01-send-message.http")
    assert [e.title for e in first] == ["SendMessage", "GetTask"]
    assert first.exchanges[1].request.json["params"]["id"] == one
    second = load_text(tmp_path, "02-send-message.http")
    assert second.exchanges[1].request.json["params"]["id"] == two


def load_text(tmp_path: Path, name: str) -> Any:
    return load(tmp_path / "out" / name)


def test_entries_are_taken_in_the_order_their_requests_started(tmp_path: Path) -> None:
    one = str(uuid.uuid4())
    files = imported(
        tmp_path,
        har(
            entry(rpc("GetTask", {"id": one}), reply(task(one)), at=50),
            entry(send("a"), reply({"task": task(one)}), at=0),
        ),
    )
    assert list(files) == ["01-send-message.http"]
    assert [e.title for e in load_text(tmp_path, "01-send-message.http")] == [
        "SendMessage",
        "GetTask",
    ]


def test_secrets_are_redacted_before_anything_is_written(tmp_path: Path) -> None:
    config = {"taskId": "t", "url": "http://127.0.0.1:9/hook", "token": "s3cr3t-push-token"}
    files = imported(
        tmp_path,
        har(
            entry(
                rpc("CreateTaskPushNotificationConfig", config),
                reply(config),
                headers=[
                    ("Authorization", "Bearer live-token-123456"),
                    ("Cookie", "sid=abcdef123456"),
                ],
                reply_headers=[("Set-Cookie", "sid=abcdef123456; Path=/")],
            )
        ),
    )
    (text,) = files.values()
    for secret in ("live-token-123456", "s3cr3t-push-token", "abcdef123456"):
        assert secret not in text
    assert "Authorization: Bearer {{A2A_TOKEN}}" in text
    assert '"token": "{{TOKEN}}"' in text
    assert "Set-Cookie: sid={{SET_COOKIE}}; Path=/" in text


def test_a_literal_placeholder_of_a_foreign_har_stays_a_literal(tmp_path: Path) -> None:
    # a HAR from a browser whose page sent "{{HOME}}": data, never a variable the player fills
    files = imported(
        tmp_path,
        har(
            entry(
                send("Hello {{HOME}}"),
                reply({"message": {"parts": [{"text": "ok"}]}}),
                headers=[("X-Note", "{{HOME}}")],
                _recorder={"placeholders": ["HOME"]},
            )
        ),
    )
    (text,) = files.values()
    assert "{{HOME}}" not in text
    assert "X-Note: \\{\\{HOME\\}\\}" in text
    assert "Hello \\u007b{HOME}}" in text


def test_an_event_stream_is_split_into_its_frames(tmp_path: Path) -> None:
    one = str(uuid.uuid4())
    frames = "".join(
        f"data: {json.dumps({'jsonrpc': '2.0', 'id': 'x', 'result': r})}\r\n\r\n"
        for r in ({"task": task(one, "TASK_STATE_SUBMITTED")}, {"statusUpdate": {"taskId": one}})
    )
    cut = frames + 'data: {"jsonrpc": "2.0", "id": "x", "res'
    imported(
        tmp_path,
        har(
            entry(rpc("SendStreamingMessage", {}), frames, content_type="text/event-stream"),
            entry(
                rpc("SendStreamingMessage", {"a": 1}), cut, content_type="text/event-stream", at=50
            ),
        ),
    )
    whole = load_text(tmp_path, "01-send-streaming-message.http").exchanges[0]
    assert whole.response.events is not None and len(whole.response.events) == 2
    assert not whole.truncated
    halted = load_text(tmp_path, "02-send-streaming-message.http").exchanges[0]
    assert halted.truncated  # (it ended inside a frame: its whole frames kept)
    assert halted.response.events is not None and len(halted.response.events) == 2


def test_bytes_that_are_no_text_are_kept(tmp_path: Path) -> None:
    data = bytes(range(256))
    value = entry(None, "", method="GET", path="/blob", content_type="application/octet-stream")
    value["response"]["content"] = {
        "size": 256,
        "mimeType": "application/octet-stream",
        "text": base64.b64encode(data).decode(),
        "encoding": "base64",
    }
    files = imported(tmp_path, har(value))
    (name,) = files
    assert "# recorder-body: base64" in files[name]
    assert load_text(tmp_path, name).exchanges[0].response.body == data


def test_http2_pseudo_headers_hop_by_hop_and_encodings_are_not_recorded(tmp_path: Path) -> None:
    value = entry(
        send("a"),
        reply({"message": {}}),
        headers=[
            (":authority", "127.0.0.1:41242"),
            ("accept-encoding", "gzip"),
            ("te", "trailers"),
        ],
        reply_headers=[
            (":status", "200"),
            ("content-encoding", "gzip"),
            ("content-length", "99"),
            ("transfer-encoding", "chunked"),
        ],
    )
    value["request"]["headers"] = [h for h in value["request"]["headers"] if h["name"] != "Host"]
    value["request"]["httpVersion"] = "h2"
    value["response"]["httpVersion"] = "h2"
    value["response"]["statusText"] = ""
    imported(tmp_path, har(value))
    exchange = load_text(tmp_path, "01-send-message.http").exchanges[0]
    assert exchange.request.http_version == "HTTP/2"
    assert exchange.request.headers.names()[0] == "Host"
    assert exchange.request.headers.get("Host") == "127.0.0.1:41242"
    names = {
        n.lower() for n in (*exchange.request.headers.names(), *exchange.response.headers.names())
    }
    assert not names & {":authority", ":status", "accept-encoding", "te", "content-encoding"}
    assert not names & {"content-length", "transfer-encoding"}
    assert exchange.response.reason == "OK"  # (HTTP/2 has no reason phrase: the status's)


def test_entries_without_a_reply_are_left_out_with_the_reason(tmp_path: Path) -> None:
    aborted = entry(send("a"), "", status=0)
    unkept = entry(send("b"), "x", at=10)
    del unkept["response"]["content"]["text"]
    websocket = entry(None, "", method="GET", path="/ws", status=101, at=20)
    other = entry(None, "{}", method="GET", path="/x", at=30)
    other["request"]["url"] = "http://example.invalid/x"
    good = entry(send("c"), reply({"message": {}}), at=40)
    out = tmp_path / "out"
    result = import_har(
        har(aborted, unkept, websocket, other, good), source="c.har", out=out, only=AGENT
    )
    assert result.exchanges == 1
    reasons = "\n".join(result.skipped)
    assert "$.log.entries[0]" in reasons and "status 0" in reasons
    assert "$.log.entries[1]" in reasons and "holds no body" in reasons
    assert "$.log.entries[2]" in reasons and "WebSocket" in reasons
    assert "$.log.entries[3]" in reasons and f"not a request to {AGENT}" in reasons


def test_a_scenario_puts_every_exchange_in_one_file(tmp_path: Path) -> None:
    files = imported(
        tmp_path,
        har(
            entry(send("a"), reply({"message": {}})), entry(send("b"), reply({"message": {}}), at=9)
        ),
        scenario="my-client-run",
    )
    assert list(files) == ["01-my-client-run.http"]
    assert len(load_text(tmp_path, "01-my-client-run.http").exchanges) == 2


def test_a_recorder_scenario_header_names_the_file(tmp_path: Path) -> None:
    files = imported(
        tmp_path,
        har(
            entry(
                send("a"),
                reply({"message": {}}),
                headers=[("Recorder-Scenario", "ask"), ("Recorder-Title", "ask it")],
            )
        ),
    )
    assert list(files) == ["01-ask.http"]
    exchange = load_text(tmp_path, "01-ask.http").exchanges[0]
    assert exchange.title == "SendMessage: ask it"
    assert exchange.request.headers.get("Recorder-Scenario") is None


def test_a_clients_identical_card_fetches_fold_into_one_file(tmp_path: Path) -> None:
    card = json.dumps({"name": "kit"})
    fetch = {"method": "GET", "path": "/.well-known/agent-card.json"}
    files = imported(
        tmp_path,
        har(
            entry(None, card, **fetch, at=0),
            entry(None, card, **fetch, at=10),
            entry(send("a"), reply({"message": {}}), at=20),
        ),
    )
    assert list(files) == ["01-get-agent-card.http", "02-send-message.http"]
    assert len(load_text(tmp_path, "01-get-agent-card.http").exchanges) == 2


def test_numbering_goes_on_after_the_highest_file_there(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "07-mine.http").write_text("kept")
    imported(tmp_path, har(entry(send("a"), reply({"message": {}}))))
    assert sorted(p.name for p in out.iterdir() if p.is_file()) == [
        "07-mine.http",
        "08-send-message.http",
    ]
    assert (out / "07-mine.http").read_text() == "kept"


def test_hostile_names_write_nothing_outside_out(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "out"
    hostile = entry(
        send("a"),
        reply({"message": {}}),
        headers=[("Recorder-Scenario", "../../../escaped")],
        _recorder={"file": "../../../../tmp/escaped.http", "exchange": 1, "title": "t"},
    )
    result = import_har(har(hostile), source="c.har", out=out)
    assert [path.parent for path in result.files] == [out]
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [result.files[0].name]


def test_a_bad_entry_anywhere_writes_nothing(tmp_path: Path) -> None:
    good = entry(send("a"), reply({"message": {}}))
    bad = entry(send("b"), reply({"message": {}}), method="BAD METHOD", at=10)
    out = tmp_path / "out"
    with pytest.raises(HarError) as caught:
        import_har(har(good, bad), source="c.har", out=out)
    assert str(caught.value).startswith("c.har: $.log.entries[1]: ")
    assert "invalid request method" in str(caught.value)
    assert not out.exists()


def test_a_recorder_annotation_of_the_wrong_type_is_an_error_at_its_path(tmp_path: Path) -> None:
    value = entry(send("a"), reply({"message": {}}), _recorder={"comments": "not a list"})
    with pytest.raises(HarError) as caught:
        import_har(har(value), source="c.har", out=tmp_path / "out")
    assert caught.value.where == "$.log.entries[0]._recorder.comments"
    assert str(caught.value).startswith("c.har: ")


def test_times_are_read_for_during_tags_only_when_asked(tmp_path: Path) -> None:
    one = str(uuid.uuid4())
    stream = "".join(
        f"data: {json.dumps({'jsonrpc': '2.0', 'id': 'x', 'result': r})}\n\n"
        for r in (
            {"task": task(one, "TASK_STATE_WORKING")},
            {"statusUpdate": {"taskId": one, "status": {"state": "TASK_STATE_WORKING"}}},
            {"statusUpdate": {"taskId": one, "status": {"state": "TASK_STATE_WORKING"}}},
            {"statusUpdate": {"taskId": one, "status": {"state": "TASK_STATE_CANCELED"}}},
        )
    )
    entries = (
        entry(send("slow"), reply({"task": task(one, "TASK_STATE_WORKING")}), at=0, took=10),
        # the subscription opens at 20 ms, its head at 23 ms, and ends at 1020 ms
        entry(
            rpc("SubscribeToTask", {"id": one}),
            stream,
            content_type="text/event-stream",
            at=20,
            took=1000,
        ),
        # the cancel is sent at 300 ms, while the stream is open
        entry(rpc("CancelTask", {"id": one}), reply(task(one, "TASK_STATE_CANCELED")), at=300),
        # a GetTask after both
        entry(rpc("GetTask", {"id": one}), reply(task(one, "TASK_STATE_CANCELED")), at=2000),
    )
    files = imported(tmp_path, har(*entries), during_by_time=True)
    exchanges = load(tmp_path / "out" / next(iter(files))).exchanges
    assert [e.title for e in exchanges] == [
        "SendMessage",
        "SubscribeToTask",
        "CancelTask",
        "GetTask",
    ]
    # at least the first frame (which names the task), ~30% of the way: 1 of 4 frames
    assert exchanges[2].comments == ("@during exchange 2 frame 1",)
    assert exchanges[3].comments == ()
    # not during the SendMessage, though it ended after the cancel started by the times:
    # its reply gave the id the cancel carries, so it had come whole
    late = list(entries)
    late[0] = entry(send("slow"), reply({"task": task(one, "TASK_STATE_WORKING")}), took=400)
    again = imported(tmp_path / "again", har(*late), during_by_time=True)
    exchanges = load(tmp_path / "again" / "out" / next(iter(again))).exchanges
    assert exchanges[2].comments == ("@during exchange 2 frame 1",)
    # without asking: no tag
    plain = imported(tmp_path / "plain", har(*entries))
    exchanges = load(tmp_path / "plain" / "out" / next(iter(plain))).exchanges
    assert all(not e.comments for e in exchanges)


def test_the_command_says_what_it_wrote_and_left_out(tmp_path: Path) -> None:
    path = tmp_path / "c.har"
    path.write_text(har(entry(send("a"), reply({"message": {}})), entry(send("b"), "", status=0)))
    result = CliRunner().invoke(main, ["import", str(path), "-v", "-o", str(tmp_path / "t")])
    assert result.exit_code == 0, result.output
    assert (
        result.stdout == f"imported 1 exchange into 1 file in {tmp_path / 't'}; 1 entry left out\n"
    )
    assert "recorder import: left out $.log.entries[1]: POST" in result.stderr
    assert f"recorder import: wrote {tmp_path / 't' / '01-send-message.http'}" in result.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "recorder import: {path}: 1:2: not JSON: Expecting property name"),
        (
            '{"log": {"entries": [{"request": 1}]}}',
            "recorder import: {path}: $.log.entries[0].request: expected an object, got a number",
        ),
        ('{"log": {"entries": []}}', "recorder import: {path}: no exchange to import"),
    ],
)
def test_the_command_refuses_what_it_cannot_import_in_one_line(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "c.har"
    path.write_text(text)
    result = CliRunner().invoke(main, ["import", str(path), "-v", "-o", str(tmp_path / "t")])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(message.format(path=path))
    assert "Traceback" not in result.output
