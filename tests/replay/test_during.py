"""Replaying `@during` and `@truncated` exchanges (`recorder.replay.during`, the player), and
explaining recorded ids sent blind (`recorder.replay.origins`).

Pure parts without a network; a small raw-ASGI agent on a loopback port for the timing of
`frame 0` and truncated streams; the real kit for streams open at once and their ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from factories import make_exchange, make_request, make_response
from helpers import DIFF, GoldenRecorder, rpc, user_message

from recorder.disk.transcripts import dump
from recorder.format.httpfile import loads
from recorder.format.model import Exchange, Headers, Request, Response, Transcript
from recorder.format.sse import SseEvent
from recorder.kit import start_kit
from recorder.replay.during import BackgroundExchange, during_tags
from recorder.replay.origins import Origins, unpaired_notes
from recorder.replay.run import play
from recorder.replay.send import make_transport, send_raw
from recorder.replay.update import why_not_updated
from recorder.replay.verdict.live import LiveReply
from recorder.replay.verdict.state import ReplayState
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.servers import ServerThread

TASK = "0b7c6f3e-1d2a-4c5b-9e8f-7a6b5c4d3e2f"
LIVE_TASK = "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"
SSE = Headers([("Content-Type", "text/event-stream")])


# --------------------------------------------------------------------------- pure parts


def test_during_tags_name_the_exchange_and_frames_and_what_runs_in_the_background() -> None:
    transcript = Transcript(
        (
            make_exchange(title="stream A"),
            make_exchange(title="stream B", comments=("@during exchange 1 frame 2",)),
            make_exchange(title="cancel", comments=("@during exchange 2 frame 0",)),
            make_exchange(title="after"),
        )
    )
    during, background = during_tags(transcript)
    assert during == {1: (0, 2), 2: (1, 0)}
    # a blocking call that a later exchange is sent during runs in the background too
    assert background == frozenset({0, 1})


def _background(
    steps: Callable[[BackgroundExchange, threading.Event], None],
) -> tuple[BackgroundExchange, threading.Event]:
    go_on = threading.Event()

    def start(background: BackgroundExchange) -> LiveReply:
        steps(background, go_on)
        return LiveReply(200, "OK", [], b"")

    return BackgroundExchange(start, timeout=5), go_on


def test_frame_0_waits_for_the_request_sent_not_for_the_reply() -> None:
    def steps(background: BackgroundExchange, go_on: threading.Event) -> None:
        background.on_sent()
        go_on.wait(5)  # the reply's head comes only once the tagged request has acted
        background.on_frames(0)

    background, go_on = _background(steps)
    started = time.monotonic()
    background.wait_for_frames(0)
    assert time.monotonic() - started < 2
    go_on.set()
    assert background.result().status == 200


def test_without_a_trace_frame_0_is_the_reply_head_and_frame_k_is_k_data_frames() -> None:
    seen: list[str] = []

    def steps(background: BackgroundExchange, go_on: threading.Event) -> None:
        background.on_frames(0)  # a transport that reports no sending: the head counts
        go_on.wait(5)
        background.on_chunk(b": ping\n\ndata: 1\n\n")
        background.on_frames(1)
        go_on.wait(5)

    background, go_on = _background(steps)
    background.wait_for_frames(0)
    seen.append("head")
    go_on.set()
    background.wait_for_frames(1)
    assert background.new_frames() == (0, [SseEvent(data="1")])
    assert background.new_frames() == (1, [SseEvent(data="1")])  # nothing new from 1 on
    assert seen == ["head"]
    background.result()


def _task_frames(task_id: str) -> tuple[SseEvent, ...]:
    return (
        SseEvent(comments=("ping",)),
        SseEvent(data=json.dumps({"result": {"task": {"id": task_id, "state": "WORKING"}}})),
        SseEvent(data=json.dumps({"result": {"statusUpdate": {"taskId": task_id}}})),
    )


def test_frames_of_an_open_stream_teach_their_ids_and_report_nothing_until_its_end() -> None:
    state = ReplayState(DEFAULT_RULES, recorded_base=None, live_base="http://127.0.0.1:1")
    stream = make_exchange(
        request=make_request(body=rpc(1, "SendStreamingMessage", {"message": {}})),
        response=make_response(headers=SSE, body=b"", events=_task_frames(TASK)),
    )
    cancel = make_request(body=rpc(2, "CancelTask", {"id": TASK}))
    assert state.unpaired(cancel) == {TASK}
    # the first data frame arrived (after a ping): learned, twice over, without a verdict
    arrived = list(_task_frames(LIVE_TASK)[:2])
    state.learn_frames(stream, arrived)
    state.learn_frames(stream, arrived)
    assert state.prepare(cancel).json["params"]["id"] == LIVE_TASK
    # a frame that disagrees is not reported while learning ...
    wrong = [*arrived, SseEvent(data=json.dumps({"result": {"statusUpdate": {"taskId": "x"}}}))]
    state.learn_frames(stream, wrong, 1)
    # ... but once, when the whole stream is compared
    live = Response(200, "OK", SSE, events=tuple(wrong))
    mismatches = state.compare(stream, live)
    assert [(m.frame, m.path) for m in mismatches] == [(2, "$.result.statusUpdate.taskId")]


def _reply(body: dict[str, Any]) -> Response:
    return make_response(body=json.dumps(body).encode())


def test_origins_name_the_exchange_and_file_that_generated_a_value() -> None:
    created = make_exchange(
        request=make_request(body=rpc(1, "SendMessage", {"messageId": "m-1"})),
        response=_reply({"result": {"task": {"id": TASK, "contextId": "c-1"}}}),
    )
    echoed = make_exchange(
        # the client's own uuid echoed back is not generated by the reply
        request=make_request(body=rpc(1, "SendMessage", {"messageId": LIVE_TASK})),
        response=_reply({"result": {"message": {"messageId": LIVE_TASK}}}),
    )
    asked = make_exchange(request=make_request(body=rpc(2, "GetTask", {"id": TASK})))
    files = [
        ("t/01-create.http", Transcript((created,))),
        ("t/02-ask.http", Transcript((echoed, asked))),
    ]
    origins = Origins(files, DEFAULT_RULES)
    assert origins._index is None  # nothing built until a value needs explaining
    assert origins.find(TASK, "t/02-ask.http", 1) == ("t/01-create.http", 0)
    assert origins.find(LIVE_TASK, "t/02-ask.http", 1) is None
    notes, origin = unpaired_notes({TASK, LIVE_TASK}, origins, "t/02-ask.http", 1)
    assert notes == (
        f"sends {TASK}, which exchange 1 of 01-create.http generated; no reply in this file"
        " gave its live value, so the recorded one was sent (record the two together, or use"
        " one scenario)",
    )
    assert origin == ("01-create.http", 1)
    # in its own file, the exchange before it
    assert origins.find(TASK, "t/01-create.http", 1) == ("t/01-create.http", 0)


def test_update_leaves_a_file_that_sent_an_id_another_file_generated() -> None:
    from recorder.replay.reports.results import ExchangeResult
    from recorder.replay.verdict.diff import Mismatch

    failed = ExchangeResult(2, "GetTask", 9, (Mismatch("$.error", "absent", "{...}"),))
    results = {0: ExchangeResult(1, "SendMessage", 3), 1: failed}
    assert why_not_updated(results, None, [1], [0, 1], {1: ("01-create.http", 1)}) == (
        "exchange 2 sent a recorded id that exchange 1 of 01-create.http generated, and no"
        " reply in this file paired it; record the two together, or use one scenario"
    )
    assert why_not_updated(results, None, [1], [0, 1], {}) is None


# --------------------------------------------------------------------------- a small agent


async def _left(receive: Any) -> None:
    """Returns when the client has disconnected."""
    while (await receive())["type"] != "http.disconnect":
        pass


def _toy_agent() -> Callable[..., Any]:
    """/block answers once /release came; /endless sends a ping and two frames, then nothing
    for 20 s or until the client leaves; /short sends one frame and ends."""
    released = asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        while (await receive()).get("more_body"):
            pass
        path = scope["path"]
        if path in ("/block", "/release"):
            if path == "/block":
                try:
                    await asyncio.wait_for(released.wait(), 10)
                    body = b'{"released":true}'
                except TimeoutError:
                    body = b'{"released":false}'
                released.clear()
            else:
                released.set()
                body = b'{"ok":true}'
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        chunks = [b"data: 1\n\n"] if path == "/short" else [b": ping\n\n", b"data: 1\n\n"]
        if path == "/endless":
            chunks += [b": ping\n\n", b"data: 2\n\n"]
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if path == "/endless":
            # nothing more for 20 s, or until the client leaves (the server then stops at once:
            # a handler still sleeping held the test's end for the server's 10 s stop timeout)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(_left(receive), 20)
        await send({"type": "http.response.body", "body": b""})

    return app


def _exchange(target: str, response: Response, **fields: Any) -> Exchange:
    headers = Headers([("Host", "127.0.0.1:1"), ("Content-Type", "application/json")])
    return Exchange(Request("POST", target, headers, b"{}"), response, **fields)


def _json(body: dict[str, Any]) -> Response:
    return Response(200, "OK", Headers([("Content-Type", "application/json")]), json.dumps(body))


def test_send_reports_the_request_sent_before_the_reply_comes() -> None:
    order: list[str] = []
    with ServerThread(_toy_agent()) as server, make_transport() as transport:
        blocked = threading.Thread(
            target=lambda: order.append(
                send_raw(
                    transport,
                    server.url,
                    _exchange("/block", _json({})).request,
                    timeout=10,
                    on_sent=lambda: order.append("sent"),
                ).body.decode()
            )
        )
        blocked.start()
        deadline = time.monotonic() + 5
        while not order and time.monotonic() < deadline:
            time.sleep(0.01)
        assert order == ["sent"]  # the request is out; its reply waits for /release
        send_raw(transport, server.url, _exchange("/release", _json({})).request, timeout=5)
        blocked.join(10)
    assert order == ["sent", '{"released":true}']


def test_frame_0_sends_the_tagged_request_while_a_blocking_call_waits(tmp_path: Path) -> None:
    path = tmp_path / "01-block.http"
    exchanges = (
        _exchange("/block", _json({"released": True}), title="a call that waits"),
        _exchange(
            "/release",
            _json({"ok": True}),
            title="what ends it",
            comments=("@during exchange 1 frame 0",),
        ),
    )
    dump(Transcript(exchanges), path)
    with ServerThread(_toy_agent()) as server:
        started = time.monotonic()
        result = play([path], agent=server.url, environ={}, timeout=8)
    assert result.passed, [e.mismatches or e.error for t in result.transcripts for e in t.exchanges]
    assert time.monotonic() - started < 5


def _truncated(tmp_path: Path, target: str, events: tuple[SseEvent, ...]) -> Path:
    path = tmp_path / "01-stream.http"
    response = Response(200, "OK", SSE, events=events)
    dump(Transcript((_exchange(target, response, title="a stream", truncated=True),)), path)
    return path


def test_a_truncated_stream_compares_its_data_frames_and_waits_for_no_ping(
    tmp_path: Path,
) -> None:
    # recorded: a ping, frame 1, a ping, frame 2, a trailing ping; the agent then sends
    # nothing for 20 s. Two data frames are read, the pings are not waited for.
    events = (
        SseEvent(comments=("ping",)),
        SseEvent(data="1"),
        SseEvent(comments=("ping",)),
        SseEvent(data="2"),
        SseEvent(comments=("ping",)),
    )
    path = _truncated(tmp_path, "/endless", events)
    with ServerThread(_toy_agent()) as server:
        started = time.monotonic()
        result = play([path], agent=server.url, environ={}, timeout=8)
        assert time.monotonic() - started < 4
        assert result.passed, [e.mismatches or e.error for e in result.transcripts[0].exchanges]
        # a recorded frame 2 the agent no longer sends: --update keeps the tag (the live stream
        # was read only as far as the recording goes)
        path.write_text(path.read_text().replace("data: 2", "data: 3"))
        updated = play([path], agent=server.url, environ={}, timeout=8, update=True)
    assert updated.transcripts[0].updated
    [exchange] = loads(path.read_text()).exchanges
    assert exchange.truncated
    assert [e.data for e in exchange.response.events or ()] == [None, "1", None, "2"]


def test_update_removes_the_truncated_tag_when_the_live_stream_ended_whole(
    tmp_path: Path,
) -> None:
    path = _truncated(tmp_path, "/short", (SseEvent(data="1"), SseEvent(data="2")))
    with ServerThread(_toy_agent()) as server:
        result = play([path], agent=server.url, environ={}, timeout=8, update=True)
    assert result.transcripts[0].updated
    [exchange] = loads(path.read_text()).exchanges
    assert not exchange.truncated
    assert "@truncated" not in path.read_text()
    assert [e.data for e in exchange.response.events or ()] == ["1"]


# --------------------------------------------------------------------------- the real kit


def _slow_review(rec: GoldenRecorder) -> tuple[list[Exchange], str]:
    """A slow review as a stream (open until canceled), SubscribeToTask during it, CancelTask
    during that: three exchanges open at once, each tagged as the recorder tags them."""
    frames: dict[str, threading.Event] = {"A": threading.Event(), "B": threading.Event()}
    out: dict[str, Exchange] = {}
    task: list[str] = []

    def stream_a() -> None:
        def seen(count: int) -> None:
            if count >= 2:
                frames["A"].set()

        out["A"] = rec.exchange(
            "SendStreamingMessage: a slow review",
            rpc(1, "SendStreamingMessage", user_message("msg-a", "please review slowly\n" + DIFF)),
            stream=True,
            on_frames=seen,
        )

    threads = [threading.Thread(target=stream_a)]
    threads[0].start()
    assert frames["A"].wait(10)
    # the task id, from the agent's own list of tasks (the stream's frames are the player's)
    listed = rec.exchange("ListTasks", rpc(9, "ListTasks", {}))
    task.append(listed.response.json["result"]["tasks"][0]["id"])

    def stream_b() -> None:
        out["B"] = rec.exchange(
            "SubscribeToTask: follow it",
            rpc(2, "SubscribeToTask", {"id": task[0]}),
            stream=True,
            comments=("@during exchange 1 frame 2",),
            on_frames=lambda count: frames["B"].set() if count >= 1 else None,
        )

    threads.append(threading.Thread(target=stream_b))
    threads[1].start()
    assert frames["B"].wait(10)
    cancel = rec.exchange(
        "CancelTask: by the id the first stream announced",
        rpc(3, "CancelTask", {"id": task[0]}),
        comments=("@during exchange 2 frame 1",),
    )
    for thread in threads:
        thread.join(10)
    return [out["A"], out["B"], cancel], task[0]


@pytest.mark.e2e
def test_streams_open_at_once_and_a_cancel_by_an_id_only_an_open_stream_gave(
    tmp_path: Path,
) -> None:
    """Stream A (a slow review) open, stream B `@during` A, CancelTask `@during` B by the task
    id that A's first frame announced: the cancel goes out with both streams open (A ends only
    after it), carries the live task id learned from A's frames, and both streams end
    CANCELED. Before, the player read A to its end first: nothing until the timeout."""
    with start_kit() as kit, make_transport() as transport:
        exchanges, task_id = _slow_review(GoldenRecorder(kit, transport))
    a, b, cancel = exchanges
    assert a.response.events is not None and task_id in (a.response.events[0].data or "")
    path = tmp_path / "01-slow.http"
    dump(Transcript((a, b, cancel)), path)
    # the id that B's frames hold too: here only A's can give it (B starts after the cancel's
    # id was needed in the second file)
    only_a = tmp_path / "02-only-a.http"
    alone = dataclasses.replace(cancel, comments=("@during exchange 1 frame 1",))
    dump(Transcript((a, alone)), only_a)
    with start_kit() as fresh:
        started = time.monotonic()
        result = play([path, only_a], agent=fresh.base_url, environ={}, timeout=10)
    assert time.monotonic() - started < 9
    problems = [
        (t.path, e.number, e.error, e.mismatches, e.notes)
        for t in result.transcripts
        for e in t.exchanges
        if not e.passed or e.notes
    ]
    assert problems == []


@pytest.mark.e2e
def test_a_recorded_id_another_file_generated_is_named_with_that_file(
    tmp_path: Path,
) -> None:
    with start_kit() as kit, make_transport() as transport:
        rec = GoldenRecorder(kit, transport)
        created = rec.exchange(
            "SendMessage: review a diff", rpc(1, "SendMessage", user_message("msg-2", DIFF))
        )
        task_id = created.response.json["result"]["task"]["id"]
        asked = rec.exchange("GetTask: the review task", rpc(2, "GetTask", {"id": task_id}))
    folder = tmp_path / "transcripts"
    folder.mkdir()
    dump(Transcript((created,)), folder / "01-send.http")
    dump(Transcript((asked,)), folder / "02-get.http")
    before = (folder / "02-get.http").read_bytes()
    with start_kit() as fresh:
        result = play([folder], agent=fresh.base_url, environ={}, update=True)
    first, second = result.transcripts
    assert first.exchanges[0].passed
    [get] = second.exchanges
    assert get.mismatches  # the agent never made the recorded task
    assert get.notes == (
        f"sends {task_id}, which exchange 1 of 01-send.http generated; no reply in this file"
        " gave its live value, so the recorded one was sent (record the two together, or use"
        " one scenario)",
    )
    assert second.not_updated == (
        "exchange 1 sent a recorded id that exchange 1 of 01-send.http generated, and no"
        " reply in this file paired it; record the two together, or use one scenario"
    )
    assert (folder / "02-get.http").read_bytes() == before
