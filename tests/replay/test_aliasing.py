"""Aliasing, carry-forward and bless: unit and property tests, no network.

The shipped transcripts (recorded from the real kit) are replayed against a simulated fresh
agent: every id and timestamp the agent generated is regenerated consistently, the agent
listens on another port. That must never mismatch; the carried-forward requests must be the
ones the live client would have sent.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import helpers
import pytest
from helpers import as_wire
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder.disk.transcripts import load
from recorder.format import httpfile
from recorder.format.model import (
    GRPC_VERSION,
    Exchange,
    Headers,
    Request,
    Response,
    SseEvent,
    Transcript,
)
from recorder.replay.verdict import fastpath
from recorder.replay.verdict.diff import ABSENT
from recorder.replay.verdict.fastpath import FastPath
from recorder.replay.verdict.state import LiveReply, ReplayState
from recorder.replay.verdict.walk import Walk
from recorder.rules.ruleset import DEFAULT_RULES

RECORDED = "http://localhost:41242"
LIVE = "http://127.0.0.1:40001"
JSON = [("Content-Type", "application/json")]
TRANSCRIPTS = sorted(helpers.TRANSCRIPTS.glob("*.http"))


def state(**overrides: Any) -> ReplayState:
    options: dict[str, Any] = {"recorded_base": RECORDED, "live_base": LIVE}
    options.update(overrides)
    return ReplayState(DEFAULT_RULES, **options)


def reply(value: Any, **kwargs: Any) -> Response:
    return Response(200, "OK", kwargs.pop("headers", JSON), json.dumps(value).encode(), **kwargs)


def rpc(method: str, params: Any, request_id: Any = 1, target: str = "/a2a/jsonrpc") -> Request:
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    headers = [("Host", "localhost:41242"), *JSON, ("A2A-Version", "1.0")]
    return Request("POST", target, headers, json.dumps(body).encode())


def task_reply(task_id: str, context_id: str, stamp: str, request_id: Any = 1) -> Response:
    return reply(
        {
            "result": {
                "task": {
                    "id": task_id,
                    "contextId": context_id,
                    "status": {"state": "TASK_STATE_COMPLETED", "timestamp": stamp},
                }
            },
            "id": request_id,
            "jsonrpc": "2.0",
        }
    )


def learn(s: ReplayState, golden: dict[str, str], live: dict[str, str]) -> None:
    """Teach `s` that each recorded task (id, context) is the live one."""
    for name in golden:
        request = rpc("SendMessage", {"message": {"messageId": f"msg-{name}"}})
        g_task, g_context = golden[name].split("|")
        l_task, l_context = live[name].split("|")
        exchange = Exchange(request, task_reply(g_task, g_context, "2026-11-29T18:28:41.946689Z"))
        assert (
            s.compare(exchange, task_reply(l_task, l_context, "2026-11-30T01:02:03.000001Z")) == []
        )


def ids() -> tuple[str, str]:
    return str(uuid.uuid4()), str(uuid.uuid4())


# --- carry-forward -------------------------------------------------------------------------


def test_prepare_carries_learned_values_into_body_path_query_and_headers() -> None:
    (g_task, g_ctx), (l_task, l_ctx) = ids(), ids()
    s = state()
    learn(s, {"a": f"{g_task}|{g_ctx}"}, {"a": f"{l_task}|{l_ctx}"})
    body = rpc("GetTask", {"id": g_task, "note": f"task {g_task} in {g_ctx}", "other": "x"})
    sent = s.prepare(body)
    assert sent.json["params"] == {"id": l_task, "note": f"task {l_task} in {l_ctx}", "other": "x"}
    assert sent.headers.get("Host") == "127.0.0.1:40001"

    rest = Request(
        "POST",
        f"/a2a/rest/tasks/{g_task}:cancel?contextId={g_ctx}&keep=1",
        [
            ("Host", "localhost:41242"),
            ("X-Task", g_task),
            ("Referer", f"{RECORDED}/tasks/{g_task}"),
        ],
    )
    sent = s.prepare(rest)
    assert sent.target == f"/a2a/rest/tasks/{l_task}:cancel?contextId={l_ctx}&keep=1"
    assert sent.headers.get("X-Task") == l_task
    assert sent.headers.get("Referer") == f"{LIVE}/tasks/{l_task}"


def test_prepared_headers_follow_what_is_learned_between_requests() -> None:
    # the same header list, before and after its value is learned (prepare keeps header lists
    # it has seen with nothing to carry forward): the later request carries the live value
    (g_task, g_ctx), (l_task, l_ctx) = ids(), ids()
    s = state()
    headers = [("Host", "localhost:41242"), ("X-Task", g_task), ("Referer", f"{RECORDED}/x")]
    before = s.prepare(Request("GET", "/a2a/rest/tasks", headers))
    assert before.headers == Headers(
        [("Host", "127.0.0.1:40001"), ("X-Task", g_task), ("Referer", f"{LIVE}/x")]
    )
    again = s.prepare(Request("GET", "/a2a/rest/tasks", headers))
    assert again.headers == before.headers
    plain = Request("GET", "/a2a/rest/tasks", [("Accept", "application/json")])
    assert s.prepare(plain) is plain
    assert s.prepare(plain) is plain
    learn(s, {"a": f"{g_task}|{g_ctx}"}, {"a": f"{l_task}|{l_ctx}"})
    after = s.prepare(Request("GET", "/a2a/rest/tasks", headers))
    assert after.headers.get("X-Task") == l_task
    assert after.headers.get("Referer") == f"{LIVE}/x"


def test_prepare_is_percent_encoding_aware() -> None:
    s = state()
    golden_time, live_time = "2026-11-29T18:28:41.946689Z", "2026-11-30T01:02:03.000001Z"
    g_task, l_task = str(uuid.uuid4()), str(uuid.uuid4())
    exchange = Exchange(rpc("SendMessage", {}), task_reply(g_task, g_task[::-1], golden_time))
    s.compare(exchange, task_reply(l_task, l_task[::-1], live_time))
    request = Request(
        "GET", f"/a2a/rest/tasks?statusTimestampAfter={golden_time.replace(':', '%3A')}&x=a%20b"
    )
    sent = s.prepare(request)
    assert sent.target == f"/a2a/rest/tasks?statusTimestampAfter={live_time}&x=a%20b"


def test_prepare_sends_unlearned_values_as_recorded() -> None:
    s = state(recorded_base=None)
    request = rpc("GetTask", {"id": str(uuid.uuid4())})
    sent = s.prepare(request)
    assert (sent.target, sent.body) == (request.target, request.body)
    # the Host header always names the agent played against
    assert sent.headers.get("Host") == "127.0.0.1:40001"
    no_host = Request("GET", "/a2a/rest/tasks/x")
    assert s.prepare(no_host) is no_host


def test_prepare_carries_a_non_uuid_id_in_a_custom_method_path() -> None:
    s = state()
    exchange = Exchange(
        rpc("SendMessage", {}), task_reply("task-1", "ctx-1", "2026-11-29T18:28:41Z")
    )
    assert s.compare(exchange, task_reply("task-7", "ctx-7", "2026-11-29T18:28:42Z")) == []
    sent = s.prepare(Request("POST", "/a2a/rest/tasks/task-1:cancel"))
    assert sent.target == "/a2a/rest/tasks/task-7:cancel"
    sent = s.prepare(rpc("GetTask", {"id": "task-1", "text": "task-1 is not replaced in text"}))
    assert sent.json["params"] == {"id": "task-7", "text": "task-1 is not replaced in text"}


def test_next_page_token_is_carried_forward() -> None:
    s = state()
    request = rpc("ListTasks", {"pageSize": 1})
    golden = reply({"result": {"tasks": [], "nextPageToken": "eyJ0cyI6MX0", "pageSize": 1}})
    live = reply({"result": {"tasks": [], "nextPageToken": "eyJ0cyI6Mn0", "pageSize": 1}})
    assert s.compare(Exchange(request, golden), live) == []
    sent = s.prepare(rpc("ListTasks", {"pageSize": 1, "pageToken": "eyJ0cyI6MX0"}))
    assert sent.json["params"]["pageToken"] == "eyJ0cyI6Mn0"


# --- rule 3: one to one ---------------------------------------------------------------------


def test_two_recorded_tasks_cannot_become_one_live_task() -> None:
    s = state()
    (g1, g2), (l1, _) = ids(), ids()
    request = rpc("ListTasks", {})
    golden = reply(
        {"result": {"tasks": [{"id": g1, "contextId": "c"}, {"id": g2, "contextId": "c"}]}}
    )
    live = reply(
        {"result": {"tasks": [{"id": l1, "contextId": "c"}, {"id": l1, "contextId": "c"}]}}
    )
    [mismatch] = s.compare(Exchange(request, golden), live)
    assert mismatch.path == "$.result.tasks[1].id"
    assert (mismatch.expected, mismatch.actual) == ("<id:3>", "<id:1>")  # "c" is <id:2>
    assert f"live {l1} already stands for <id:1> (recorded {g1})" in mismatch.message


def test_one_recorded_task_cannot_become_two_live_tasks() -> None:
    s = state()
    g1, (l1, l2) = str(uuid.uuid4()), ids()
    request = rpc("ListTasks", {})
    golden = reply(
        {"result": {"tasks": [{"id": g1, "contextId": "c"}, {"id": g1, "contextId": "c"}]}}
    )
    live = reply(
        {"result": {"tasks": [{"id": l1, "contextId": "c"}, {"id": l2, "contextId": "c"}]}}
    )
    [mismatch] = s.compare(Exchange(request, golden), live)
    assert mismatch.path == "$.result.tasks[1].id"
    assert mismatch.message == f"recorded {g1} is live {l1}, but the reply names {l2}"


def test_the_mapping_holds_across_exchanges() -> None:
    s = state()
    (g1, g2), (l1, l2) = ids(), ids()
    learn(s, {"a": f"{g1}|ga", "b": f"{g2}|gb"}, {"a": f"{l1}|la", "b": f"{l2}|lb"})
    request = rpc("GetTask", {"id": g1})
    golden = reply({"result": {"id": g1, "contextId": "ga"}})
    assert (
        s.compare(Exchange(request, golden), reply({"result": {"id": l1, "contextId": "la"}})) == []
    )
    found = s.compare(Exchange(request, golden), reply({"result": {"id": l2, "contextId": "la"}}))
    assert [(m.path, m.expected, m.actual) for m in found] == [("$.result.id", "<id:1>", "<id:3>")]


def test_timestamps_need_not_map_one_to_one() -> None:
    # two status updates may share a clock tick in one run and not in the other
    s = state()
    request = rpc("SendStreamingMessage", {})
    t1, t2 = "2026-11-29T18:28:41.001Z", "2026-11-29T18:28:41.002Z"
    golden = reply({"a": {"timestamp": t1}, "b": {"timestamp": t2}, "c": f"at {t1}"})
    same = "2026-11-30T00:00:00.000Z"
    assert (
        s.compare(
            Exchange(request, golden),
            reply({"a": {"timestamp": same}, "b": {"timestamp": same}, "c": f"at {same}"}),
        )
        == []
    )
    golden_same = reply({"a": {"timestamp": t1}, "b": {"timestamp": t1}})
    live = reply({"a": {"timestamp": same}, "b": {"timestamp": "2026-11-30T00:00:00.001Z"}})
    assert s.compare(Exchange(request, golden_same), live) == []


def test_a_timestamp_must_still_be_a_timestamp() -> None:
    s = state()
    golden = reply({"status": {"timestamp": "2026-11-29T18:28:41.001Z"}})
    [mismatch] = s.compare(
        Exchange(rpc("GetTask", {}), golden), reply({"status": {"timestamp": "soon"}})
    )
    assert mismatch.path == "$.status.timestamp"


def test_client_values_are_compared_exactly() -> None:
    s = state()
    request_id, message_id = str(uuid.uuid4()), str(uuid.uuid4())
    request = rpc("SendMessage", {"message": {"messageId": message_id}}, request_id=request_id)
    task_id = str(uuid.uuid4())
    golden = reply(
        {
            "result": {
                "task": {"id": task_id, "history": [{"messageId": message_id, "taskId": task_id}]}
            },
            "id": request_id,
        }
    )
    live_task = str(uuid.uuid4())
    good = reply(
        {
            "result": {
                "task": {
                    "id": live_task,
                    "history": [{"messageId": message_id, "taskId": live_task}],
                }
            },
            "id": request_id,
        }
    )
    assert s.compare(Exchange(request, golden), good) == []
    other = str(uuid.uuid4())
    bad = reply(
        {
            "result": {
                "task": {"id": live_task, "history": [{"messageId": other, "taskId": live_task}]}
            },
            "id": other,
        }
    )
    found = s.compare(Exchange(request, golden), bad)
    assert [(m.path, m.expected, m.actual) for m in found] == [
        ("$.result.task.history[0].messageId", message_id, other),
        ("$.id", request_id, other),
    ]


def test_id_is_generated_only_beside_task_members() -> None:
    s = state()
    request = Request("GET", "/.well-known/agent-card.json")
    golden = reply({"skills": [{"id": "review", "name": "Review"}]})
    found = s.compare(
        Exchange(request, golden), reply({"skills": [{"id": "rewrite", "name": "Review"}]})
    )
    assert [(m.path, m.expected, m.actual) for m in found] == [
        ("$.skills[0].id", "review", "rewrite")
    ]


def test_aliases_number_by_first_appearance_per_kind() -> None:
    s = state()
    g = [str(uuid.uuid4()) for _ in range(3)]
    assert s.alias(g[1], "id") == "<id:1>"
    assert s.alias("2026-11-29T18:28:41Z", "time") == "<time:1>"
    assert s.alias(g[0], "id") == "<id:2>"
    assert s.alias(g[1], "id") == "<id:1>"


def test_a_non_uuid_id_that_hides_in_literal_text_is_still_checked() -> None:
    # "task-1" is no shape: the fast path must not let an equal "id" member pass when the
    # mapping says task-1 is live task-7 (a non-fresh agent answering with an old task)
    s = state()
    assert (
        s.compare(
            Exchange(rpc("SendMessage", {}), task_reply("task-1", "ctx-1", "2026-11-29T18:28:41Z")),
            task_reply("task-7", "ctx-7", "2026-11-29T18:28:42Z"),
        )
        == []
    )
    request = rpc("GetTask", {"id": "task-1"})
    golden = reply({"result": {"id": "task-1", "contextId": "ctx-1"}})
    found = s.compare(
        Exchange(request, golden), reply({"result": {"id": "task-1", "contextId": "ctx-7"}})
    )
    assert [m.path for m in found] == ["$.result.id"]


# --- bless ------------------------------------------------------------------------------------


def test_bless_of_an_unchanged_reply_gives_the_recorded_bytes() -> None:
    s = state()
    g_task, l_task = str(uuid.uuid4()), str(uuid.uuid4())
    golden_headers = [("Date", "Sun, 29 Nov 2026 19:25:10 GMT"), ("Server", "uvicorn"), *JSON]
    golden = task_reply(g_task, "ctx", "2026-11-29T18:28:41.946689Z")
    golden = replace(golden, headers=Headers(golden_headers))
    live = task_reply(l_task, "ctx", "2026-11-30T01:02:03.000001Z")
    live = replace(
        live,
        headers=Headers(
            [
                ("date", "Mon, 30 Nov 2026 01:02:03 GMT"),
                ("server", "uvicorn"),
                ("content-length", "9"),
                ("content-type", "application/json"),
            ]
        ),
    )
    request = rpc("SendMessage", {})
    assert s.compare(Exchange(request, golden), live) == []
    blessed = s.bless(golden, live)
    assert blessed == golden
    assert blessed.body == golden.body


def test_bless_keeps_recorded_ids_and_shows_the_real_change() -> None:
    s = state()
    g_task, l_task = str(uuid.uuid4()), str(uuid.uuid4())
    golden = task_reply(g_task, "ctx", "2026-11-29T18:28:41.946689Z")
    live_value = json.loads(task_reply(l_task, "ctx", "2026-11-30T01:02:03.000001Z").body)
    live_value["result"]["task"]["status"]["state"] = "TASK_STATE_FAILED"
    live_value["result"]["task"]["artifacts"] = [{"artifactId": str(uuid.uuid4())}]
    live = reply(live_value)
    found = s.compare(Exchange(rpc("SendMessage", {}), golden), live)
    assert [m.path for m in found] == ["$.result.task.status.state", "$.result.task.artifacts"]
    blessed = s.bless(golden, live).json["result"]["task"]
    assert blessed["id"] == g_task
    assert blessed["status"] == {
        "state": "TASK_STATE_FAILED",
        "timestamp": "2026-11-29T18:28:41.946689Z",
    }
    # a new value keeps its live value
    assert blessed["artifacts"] == live_value["result"]["task"]["artifacts"]


def test_bless_a_stream_keeps_the_frame_layout() -> None:
    s = state()
    g_task, l_task = str(uuid.uuid4()), str(uuid.uuid4())

    def stream(task_id: str, stamp: str) -> Response:
        frames = [
            {
                "result": {
                    "task": {
                        "id": task_id,
                        "contextId": "c",
                        "status": {"state": "TASK_STATE_SUBMITTED"},
                    }
                }
            },
            {
                "result": {
                    "statusUpdate": {
                        "taskId": task_id,
                        "contextId": "c",
                        "status": {"timestamp": stamp},
                    }
                }
            },
        ]
        events = tuple(SseEvent(data=json.dumps(f)) for f in frames)
        return Response(
            200, "OK", [("Content-Type", "text/event-stream; charset=utf-8")], events=events
        )

    golden = stream(g_task, "2026-11-29T18:28:41.946689Z")
    live = stream(l_task, "2026-11-30T01:02:03.000001Z")
    assert s.compare(Exchange(rpc("SendStreamingMessage", {}), golden), live) == []
    assert s.bless(golden, live) == golden


def test_bless_puts_the_recorded_agent_address_back() -> None:
    s = state()
    golden = reply({"supportedInterfaces": [{"url": f"{RECORDED}/a2a/jsonrpc"}]})
    live = reply({"supportedInterfaces": [{"url": f"{LIVE}/a2a/jsonrpc"}]})
    assert s.compare(Exchange(Request("GET", "/.well-known/agent-card.json"), golden), live) == []
    assert s.bless(golden, live) == golden


# --- the shipped transcripts against a simulated fresh agent ----------------------------------

SHAPES = re.compile(
    r"(?P<id>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
    r"|(?P<time>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?Z)"
)


class FreshAgent:
    """What a freshly started agent on another port replies: every generated value renewed."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.renewed: dict[str, str] = {}
        self.client: set[str] = set()

    def new_value(self, match: re.Match[str]) -> str:
        value = match.group()
        if value in self.client:
            return value  # the agent echoes what the client sent
        if value not in self.renewed:
            if match.lastgroup == "id":
                self.renewed[value] = str(uuid.UUID(int=self.random.getrandbits(128), version=4))
            else:
                moment = datetime(2027, 1, 1, tzinfo=UTC) + timedelta(
                    microseconds=self.random.getrandbits(40)
                )
                self.renewed[value] = moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return self.renewed[value]

    def sees(self, request: Request) -> Request:
        """The request as the live client sends it; what it carries unlearned is the client's."""
        text = (
            request.target + "\n" + "\n".join(v for _, v in request.headers) + "\n" + request.text
        )
        for match in SHAPES.finditer(text):
            if match.group() not in self.renewed:
                self.client.add(match.group())
        return Request(
            request.method,
            SHAPES.sub(self.new_value, request.target),
            Headers(
                (n, LIVE.split("//")[1] if n.lower() == "host" else SHAPES.sub(self.new_value, v))
                for n, v in request.headers
            ),
            SHAPES.sub(self.new_value, request.text).encode() if request.body else b"",
            request.http_version,
        )

    def replies(self, response: Response) -> Response:
        headers = Headers(
            (n, SHAPES.sub(self.new_value, v).replace(RECORDED, LIVE)) for n, v in response.headers
        )
        body = SHAPES.sub(self.new_value, response.text).replace(RECORDED, LIVE)
        events = None
        if response.http_version == GRPC_VERSION and response.events is not None:
            # a gRPC stream's messages are its events (its body is empty): renewed as well
            events = tuple(
                replace(e, data=None if e.data is None else SHAPES.sub(self.new_value, e.data))
                for e in response.events
            )
        return Response(
            response.status,
            response.reason,
            headers,
            body.encode(),
            events=events,
            http_version=response.http_version,
            trailers=response.trailers,
        )


@pytest.mark.parametrize("small", [fastpath._SMALL, 0], ids=["few", "many"])
@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[p.name for p in TRANSCRIPTS])
def test_shipped_transcript_replays_cleanly_against_a_fresh_agent(
    path: Path, small: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fastpath, "_SMALL", small)  # both ways the fast path pairs values
    transcript = load(path)
    for seed in range(3):
        agent = FreshAgent(seed)
        s = ReplayState(DEFAULT_RULES, recorded_base=RECORDED, live_base=LIVE)
        for number, exchange in enumerate(transcript, start=1):
            expected_request = agent.sees(exchange.request)
            sent = s.prepare(exchange.request)
            assert sent.target == expected_request.target, number
            assert sent.json == expected_request.json, number
            live = agent.replies(exchange.response)
            assert s.compare(exchange, live) == [], (path.name, number)
            assert s.bless(exchange.response, live) == exchange.response, (path.name, number)


def test_shipped_transcripts_rebless_to_identical_files() -> None:
    for path in TRANSCRIPTS:
        transcript = load(path)
        agent = FreshAgent(7)
        s = ReplayState(DEFAULT_RULES, recorded_base=RECORDED, live_base=LIVE)
        blessed = []
        for exchange in transcript:
            live = agent.replies(exchange.response)
            s.prepare(exchange.request)
            s.compare(exchange, live)
            blessed.append(replace(exchange, response=s.bless(exchange.response, live)))
        updated = Transcript(tuple(blessed), transcript.comments, transcript.format_version)
        assert httpfile.dumps(updated) == path.read_text(encoding="utf-8"), path.name


# --- properties -------------------------------------------------------------------------------


def live_form(response: Response, form: str) -> Response | LiveReply:
    """The reply as given (""), or as wire bytes ("compact" or "spaced" JSON)."""
    return as_wire(response, spaced=form == "spaced") if form else response


times = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 1, 1)).map(
    lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
)


def conversation(
    task_ids: list[str], context_ids: list[str], stamps: list[str], reads: list[int]
) -> list[tuple[Request, Response]]:
    """SendMessage per task, then GetTask (JSON-RPC) and REST reads of earlier tasks."""
    out = []
    for index, (task_id, context_id, stamp) in enumerate(
        zip(task_ids, context_ids, stamps, strict=True)
    ):
        out.append(
            (
                rpc("SendMessage", {"message": {"messageId": f"m{index}"}}, index),
                task_reply(task_id, context_id, stamp, index),
            )
        )
    for number, read in enumerate(reads):
        task_id, context_id = task_ids[read], context_ids[read]
        body = {
            "result": {
                "id": task_id,
                "contextId": context_id,
                "status": {"timestamp": stamps[read], "message": {"text": f"Task {task_id} done"}},
                "history": [{"taskId": task_id, "contextId": context_id}],
            },
            "id": 100 + number,
        }
        if number % 2:
            request = Request("GET", f"/a2a/rest/tasks/{task_id}", [("Host", "localhost:41242")])
            body = body["result"]
        else:
            request = rpc("GetTask", {"id": task_id}, 100 + number)
        out.append((request, reply(body)))
    return out


@st.composite
def runs(
    draw: st.DrawFn,
) -> tuple[list[tuple[Request, Response]], list[tuple[Request, Response]], int]:
    count = draw(st.integers(1, 4))
    unique = st.lists(st.uuids().map(str), min_size=2 * count, max_size=2 * count, unique=True)
    golden_ids, live_ids = draw(unique), draw(unique)
    reads = draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=5))
    golden = conversation(
        golden_ids[:count],
        golden_ids[count:],
        draw(st.lists(times, min_size=count, max_size=count)),
        reads,
    )
    live = conversation(
        live_ids[:count],
        live_ids[count:],
        draw(st.lists(times, min_size=count, max_size=count)),
        reads,
    )
    return golden, live, count


@settings(max_examples=60, deadline=None)
@given(runs())
def test_consistently_regenerated_values_never_mismatch(
    run: tuple[list[tuple[Request, Response]], list[tuple[Request, Response]], int],
) -> None:
    golden, live, _ = run
    # the fast path pairs few values one way, many another; the live reply as a Response or as
    # the bytes that came over the wire
    for small, wire in itertools.product((fastpath._SMALL, 0), ("", "compact", "spaced")):
        with mock.patch.object(fastpath, "_SMALL", small):
            s = ReplayState(DEFAULT_RULES, recorded_base=RECORDED, live_base=LIVE)
            for (golden_request, golden_response), (live_request, live_response) in zip(
                golden, live, strict=True
            ):
                sent = s.prepare(golden_request)
                assert sent.target == live_request.target
                assert sent.json == live_request.json
                exchange = Exchange(golden_request, golden_response)
                live_reply = live_form(live_response, wire)
                assert s.compare(exchange, live_reply) == []


@settings(max_examples=60, deadline=None)
@given(runs(), st.data())
def test_an_inconsistent_mapping_always_mismatches(
    run: tuple[list[tuple[Request, Response]], list[tuple[Request, Response]], int],
    data: st.DataObject,
) -> None:
    golden, live, count = run
    # pick one read and make its reply name another id in one place: another task's, or new
    victim = data.draw(st.integers(count, len(live) - 1))
    value = live[victim][1].json
    document = value.get("result", value)
    place = data.draw(st.sampled_from(["id", "history", "message"]))
    wrong = data.draw(st.uuids().map(str).filter(lambda u: u != document["id"]))
    if place == "id":
        document["id"] = wrong
    elif place == "history":
        document["history"][0]["taskId"] = wrong
    else:
        document["status"]["message"]["text"] = f"Task {wrong} done"
    live = [*live[:victim], (live[victim][0], reply(value)), *live[victim + 1 :]]
    prefix = "$.result" if "result" in value else "$"
    path = {
        "id": f"{prefix}.id",
        "history": f"{prefix}.history[0].taskId",
        "message": f"{prefix}.status.message.text",
    }[place]
    for small, wire in itertools.product((fastpath._SMALL, 0), ("", "compact", "spaced")):
        with mock.patch.object(fastpath, "_SMALL", small):
            s = ReplayState(DEFAULT_RULES, recorded_base=RECORDED, live_base=LIVE)
            found = []
            for number, ((golden_request, golden_response), (_, live_response)) in enumerate(
                zip(golden, live, strict=True)
            ):
                s.prepare(golden_request)
                exchange = Exchange(golden_request, golden_response)
                live_reply = live_form(live_response, wire)
                found.extend((number, m.path) for m in s.compare(exchange, live_reply))
            assert found == [(victim, path)]


def test_bless_of_a_changed_stream_keeps_ids_and_layout() -> None:
    s = state()
    g_task, l_task = str(uuid.uuid4()), str(uuid.uuid4())

    def stream(task_id: str, stamp: str, state_name: str) -> Response:
        frame = {
            "statusUpdate": {"taskId": task_id, "status": {"state": state_name, "timestamp": stamp}}
        }
        event = SseEvent(data=json.dumps(frame))
        return Response(200, "OK", [("Content-Type", "text/event-stream")], events=(event,))

    golden = stream(g_task, "2026-11-29T18:28:41.946689Z", "TASK_STATE_COMPLETED")
    live = stream(l_task, "2026-11-30T01:02:03.000001Z", "TASK_STATE_FAILED")
    found = s.compare(Exchange(rpc("SendStreamingMessage", {}), golden), live)
    assert [(m.path, m.frame) for m in found] == [("$.statusUpdate.status.state", 1)]
    blessed = s.bless(golden, live)
    assert blessed.events is not None
    expected = stream(g_task, "2026-11-29T18:28:41.946689Z", "TASK_STATE_FAILED")
    assert blessed == expected


def test_bless_keeps_timestamps_that_shared_a_clock_tick() -> None:
    s = state()
    tick = "2026-11-29T18:28:41.001Z"
    golden = reply({"a": {"timestamp": tick}, "b": {"timestamp": tick}})
    live = reply(
        {
            "a": {"timestamp": "2027-01-01T00:00:00.001Z"},
            "b": {"timestamp": "2027-01-01T00:00:00.002Z"},
        }
    )
    assert s.compare(Exchange(rpc("GetTask", {}), golden), live) == []
    assert s.bless(golden, live) is golden


def test_an_empty_live_id_is_a_mismatch() -> None:
    s = state()
    golden = task_reply(str(uuid.uuid4()), "ctx", "2026-11-29T18:28:41Z")
    [mismatch] = s.compare(
        Exchange(rpc("SendMessage", {}), golden), task_reply("", "ctx", "2026-11-29T18:28:42Z")
    )
    assert (mismatch.path, mismatch.actual) == ("$.result.task.id", "")
    assert mismatch.message.endswith("got an empty string")


def test_a_live_id_that_the_client_sent_is_a_mismatch() -> None:
    s = state()
    message_id = str(uuid.uuid4())
    request = rpc("SendMessage", {"message": {"messageId": message_id}})
    golden = task_reply(str(uuid.uuid4()), "ctx", "2026-11-29T18:28:41Z")
    [mismatch] = s.compare(
        Exchange(request, golden), task_reply(message_id, "ctx", "2026-11-29T18:28:42Z")
    )
    assert mismatch.path == "$.result.task.id"
    assert "a value the client sent" in mismatch.message


def test_bless_headers_keep_recorded_order_and_volatile_values() -> None:
    s = state()
    golden = Response(
        200,
        "OK",
        [("Date", "Sun, 29 Nov 2026 19:25:10 GMT"), ("Server", "uvicorn"), ("X-Mode", "a"), *JSON],
        b'{"result": {"state": "TASK_STATE_COMPLETED"}}',
    )
    live = Response(
        200,
        "OK",
        [
            ("content-type", "application/json"),
            ("x-mode", "b"),
            ("date", "Mon, 30 Nov 2026 01:02:03 GMT"),
            ("server", "uvicorn"),
            ("content-length", "44"),
            ("x-new", "1"),
        ],
        b'{"result": {"state": "TASK_STATE_FAILED"}}',
    )
    found = s.compare(Exchange(rpc("GetTask", {}), golden), live)
    assert [m.path for m in found] == ["header x-mode", "header x-new", "$.result.state"]
    blessed = s.bless(golden, live)
    assert list(blessed.headers) == [
        ("Date", "Sun, 29 Nov 2026 19:25:10 GMT"),
        ("Server", "uvicorn"),
        ("X-Mode", "b"),
        ("Content-Type", "application/json"),
        ("x-new", "1"),
    ]
    assert blessed.json == {"result": {"state": "TASK_STATE_FAILED"}}


def test_non_ascii_and_escaped_text_replays_cleanly() -> None:
    s = state()
    g_task, l_task = str(uuid.uuid4()), str(uuid.uuid4())

    def body(task_id: str) -> Response:
        return reply(
            {"result": {"id": task_id, "contextId": "c", "text": 'Prüfung "ok"\n✓ ' + task_id}}
        )

    assert s.compare(Exchange(rpc("GetTask", {}), body(g_task)), body(l_task)) == []
    assert s.mapping[g_task] == l_task
    assert s.bless(body(g_task), body(l_task)) == body(g_task)


def test_rules_can_name_more_generated_places() -> None:
    rules = replace(
        DEFAULT_RULES,
        generated_fields={**DEFAULT_RULES.generated_fields, "sessionId": "session"},
        generated_paths={"$.result.ticket": "ticket"},
    )
    s = ReplayState(rules, recorded_base=RECORDED, live_base=LIVE)
    request = rpc("Open", {})
    golden = reply({"result": {"sessionId": "s-1", "ticket": "T-100", "note": "T-100"}})
    live = reply({"result": {"sessionId": "s-9", "ticket": "T-555", "note": "T-100"}})
    assert s.compare(Exchange(request, golden), live) == []
    assert s.mapping == {"s-1": "s-9", "T-100": "T-555"}
    assert s.alias("s-1", "session") == "<session:1>"
    assert s.prepare(rpc("Use", {"session": "s-1", "ticket": "T-100"})).json["params"] == {
        "session": "s-9",
        "ticket": "T-555",
    }
    wrong = reply({"result": {"sessionId": "s-2", "ticket": "T-555", "note": "T-100"}})
    [mismatch] = s.compare(Exchange(request, golden), wrong)
    assert (mismatch.path, mismatch.expected, mismatch.actual) == (
        "$.result.sessionId",
        "<session:1>",
        "s-2",
    )


def test_a_prepared_body_is_canonical_and_parses_to_the_live_values() -> None:
    (g_task, g_ctx), (l_task, l_ctx) = ids(), ids()
    s = state()
    learn(s, {"a": f"{g_task}|{g_ctx}"}, {"a": f"{l_task}|{l_ctx}"})
    request = rpc("GetTask", {"id": g_task, "text": f"é {g_task}"})
    assert request.json["params"]["id"] == g_task  # parsed (and cached) before prepare
    sent = s.prepare(request)
    assert sent.json["params"] == {"id": l_task, "text": f"é {l_task}"}
    # the constructor finds the body canonical already
    assert sent == replace(request, body=sent.body, headers=sent.headers)
    assert sent.body == request.body.replace(g_task.encode(), l_task.encode())


# --- live replies as they came over the wire (LiveReply) --------------------------------------


@pytest.mark.parametrize("spaced", [False, True], ids=["compact", "spaced"])
def test_a_matching_json_reply_from_the_wire_is_never_pretty_printed(spaced: bool) -> None:
    s = state()
    g_task, l_task = str(uuid.uuid4()), str(uuid.uuid4())
    exchange = Exchange(rpc("SendMessage", {}), task_reply(g_task, "ctx-1", "2026-11-29T18:28:41Z"))
    live = as_wire(task_reply(l_task, "ctx-1", "2026-11-30T01:02:03.5Z"), spaced=spaced)
    with mock.patch.object(fastpath, "_one_line_text", wraps=fastpath._one_line_text) as parsed:
        assert s.compare(exchange, live) == []
    # compact JSON is read as it came; other layouts are parsed and written on one line
    assert parsed.call_count == (1 if spaced else 0)
    assert live._response is None  # no Response built, no pretty-printing
    assert s.mapping[g_task] == l_task
    # a matched reply blesses to the recorded one without building the live Response
    assert s.bless(exchange.response, live) is exchange.response
    assert live._response is None


def test_a_wire_reply_that_differs_is_explained_like_a_response() -> None:
    g_task, l_task = str(uuid.uuid4()), str(uuid.uuid4())
    exchange = Exchange(rpc("SendMessage", {}), task_reply(g_task, "ctx-1", "2026-11-29T18:28:41Z"))
    document = task_reply(l_task, "ctx-2", "2026-11-30T01:02:03Z").json
    document["result"]["task"]["status"]["state"] = "TASK_STATE_FAILED"
    found = {}
    for wire in (False, True):
        live = reply(document)
        found[wire] = state().compare(exchange, as_wire(live) if wire else live)
    assert [m.path for m in found[True]] == ["$.result.task.status.state"]
    assert found[True] == found[False]


def test_wire_reply_header_values_are_stripped_like_headers() -> None:
    live = LiveReply(200, "OK", [("Content-Type", " application/json "), ("X-A", "b\t")], b"{}")
    assert live.headers == (("Content-Type", "application/json"), ("X-A", "b"))
    assert live.response.headers == Headers(live.headers)
    golden = Response(200, "OK", [("Content-Type", "application/json"), ("X-A", "b")], b"{}")
    assert state().compare(Exchange(rpc("GetCard", {}), golden), live) == []


def test_recorded_body_that_is_not_json_is_not_read_on_one_line() -> None:
    # a raw line break inside a string: not JSON, so the model keeps the text as it is; taking
    # the line breaks out would make it read like the live JSON (which the walk would not say)
    golden = Response(200, "OK", JSON, b'{"text": "a\n  b"}')
    assert golden.json is None
    live = LiveReply(200, "OK", JSON, b'{"text":"ab"}')
    [mismatch] = state().compare(Exchange(rpc("GetCard", {}), golden), live)
    assert mismatch.path == "body"
    assert mismatch.message == (
        "expected a non-JSON body, got a JSON body; the recorded body says JSON but is not JSON"
    )


def test_a_comment_line_read_into_a_recorded_json_body_is_pointed_out() -> None:
    # "# read it back" written before the next ### is part of the reply body above it
    golden = Response(200, "OK", JSON, b'{\n  "a": 1\n}\n# read it back')
    [mismatch] = state().compare(Exchange(rpc("GetTask", {}), golden), reply({"a": 1}))
    assert mismatch.message == (
        "expected a non-JSON body, got a JSON body; the recorded body says JSON but is not JSON"
        " (its last line starts with #: a comment line before the next ### belongs to the body"
        " above it)"
    )


def test_wire_reply_streams_and_truncated_bodies_compare_like_responses() -> None:
    stream_type = [("Content-Type", "text/event-stream")]
    frame = json.dumps({"statusUpdate": {"taskId": "t", "status": {"state": "WORKING"}}})
    golden = Response(200, "OK", stream_type, events=(SseEvent(data=frame),))
    raw = f"data: {frame}\n\n".encode()
    assert (
        state().compare(Exchange(rpc("Stream", {}), golden), LiveReply(200, "", stream_type, raw))
        == []
    )
    truncated = Exchange(rpc("GetCard", {}), reply({"a": 1}), truncated=True)
    live = LiveReply(200, "OK", JSON, b'{"a": 2')
    assert state().compare(truncated, live) == []
    assert live._response is None
    assert [m.path for m in state().compare(truncated, LiveReply(500, "", JSON, b""))] == ["status"]


def test_shapes_outside_the_strings_of_a_request_body_are_client_values() -> None:
    # a JSON-typed body that is not JSON (a bare uuid): its shapes are still the client's,
    # so a reply naming another value there mismatches (rule 2)
    client_id = str(uuid.uuid4())
    request = Request("POST", "/a2a/jsonrpc", [*JSON], f'{{"id": {client_id}, "n": -1}}'.encode())
    assert request.json is None
    golden = reply({"result": {"taskId": client_id}})
    assert state().compare(Exchange(request, golden), golden) == []
    other = reply({"result": {"taskId": str(uuid.uuid4())}})
    [mismatch] = state().compare(Exchange(request, golden), other)
    assert mismatch.path == "$.result.taskId"


def test_a_large_reply_is_compared_with_the_collector_as_the_process_has_it() -> None:
    # the garbage collector is the process's: under --jobs several threads compare at once, and
    # the pytest plugin runs in the user's process; the comparison never switches it
    import gc

    def listing(seed: int, state_name: str) -> Response:
        tasks = [
            {"id": str(uuid.UUID(int=seed << 64 | n)), "contextId": "ctx", "status": {"n": n}}
            for n in range(4000)
        ]
        tasks[-1]["status"]["state"] = state_name
        return reply({"result": {"tasks": tasks}})

    golden = Exchange(rpc("ListTasks", {}), listing(1, "WORKING"))
    assert len(golden.response.body) >= 256 * 1024  # large: 4,000 tasks
    seen: list[bool] = []
    real_walk = Walk._normalize

    def walk(self: Walk, *args: Any) -> Any:
        seen.append(gc.isenabled())
        return real_walk(self, *args)

    with mock.patch.object(Walk, "_normalize", walk):
        found = state().compare(golden, as_wire(listing(2, "FAILED")))
    assert [m.path for m in found] == ["$.result.tasks[3999].status.state"]
    assert seen and all(seen)  # the collector stayed on while comparing
    assert gc.isenabled()


def test_a_shape_without_a_dash_inside_a_request_string_is_a_client_value() -> None:
    # a rules file's own shape (a ULID) that holds no "-": a request that names one inside a
    # longer string sent it itself, so a reply naming another one there mismatches (rule 2)
    shapes = {**DEFAULT_RULES.generated_shapes, "ulid": "[0-9A-HJKMNP-TV-Z]{26}"}
    rules = replace(DEFAULT_RULES, generated_shapes=shapes)
    sent_ulid, other_ulid = "01ARZ3NDEKTSV4RRFFQ69G5FAV", "01BX5ZZKBKACTAV9WEVGEMMVRZ"
    request = rpc("SendMessage", {"message": {"messageId": "m-1", "text": f"ref {sent_ulid}"}})
    golden = Exchange(request, reply({"result": {"taskId": sent_ulid}}))
    s = ReplayState(rules, recorded_base=RECORDED, live_base=LIVE)
    assert s.compare(golden, as_wire(reply({"result": {"taskId": sent_ulid}}))) == []
    s = ReplayState(rules, recorded_base=RECORDED, live_base=LIVE)
    [mismatch] = s.compare(golden, as_wire(reply({"result": {"taskId": other_ulid}})))
    assert mismatch.path == "$.result.taskId"


def test_a_live_header_a_transcript_cannot_hold_is_a_mismatch_not_a_crash() -> None:
    # "#x" is a valid HTTP field name, but a .http line starting with "#" is a comment
    stream_type = [("Content-Type", "text/event-stream")]
    frame = json.dumps({"statusUpdate": {"taskId": "t", "status": {"state": "WORKING"}}})
    golden = Response(200, "OK", stream_type, events=(SseEvent(data=frame),))
    raw = f"data: {frame}\n\n".encode()
    live = LiveReply(200, "OK", [*stream_type, ("#x", "1")], raw)
    s = state()
    exchange = Exchange(rpc("Stream", {}), golden)
    [mismatch] = s.compare(exchange, live)
    assert (mismatch.path, mismatch.actual) == ("header #x", "1")
    assert s.bless(golden, live).headers == Headers(stream_type)


@pytest.mark.parametrize("form", ["", "compact", "spaced"])
def test_many_values_are_numbered_by_first_appearance_like_the_walk(form: str) -> None:
    # members named generated (contextId) and whole values of a shape (note) interleave: the
    # fast path for many values numbers them in the order the walk meets them
    def listing(seed: int) -> Response:
        items = []
        for n in range(40):
            item: dict[str, Any] = {"note": str(uuid.UUID(int=seed << 64 | 1000 + n))}
            if n % 3:
                item = {"contextId": str(uuid.UUID(int=seed << 64 | n)), **item}
            items.append(item)
        return reply({"result": {"items": items, "again": items[5]["note"]}})

    exchange = Exchange(rpc("ListTasks", {}), listing(1))
    values = [*listing(1).json["result"]["items"]]
    fast, walked = state(), state()
    assert fast.compare(exchange, live_form(listing(2), form)) == []
    with mock.patch.object(FastPath, "matches_text", lambda self, *a, **k: False):
        assert walked.compare(exchange, live_form(listing(2), form)) == []
    names = [v for item in values for v in item.values()]
    assert [fast.alias(v, "id") for v in names] == [walked.alias(v, "id") for v in names]
    assert fast.alias(values[0]["note"], "id") == "<id:1>"
    assert fast.mapping == walked.mapping


@pytest.mark.parametrize(
    "broken",
    [
        lambda body, live_id: body.replace(live_id, "ctx\t1"),  # a raw tab in a generated value
        lambda body, live_id: body.replace(LIVE, "\0"),  # a raw NUL where the address was
    ],
    ids=["control character in a value", "NUL for the address"],
)
def test_a_wire_reply_that_is_not_json_is_never_passed_as_text(
    broken: Callable[[str, str], str],
) -> None:
    # raw control characters cannot be in JSON text: the reply is not JSON, whatever its layout
    g_ctx, l_ctx = str(uuid.uuid4()), str(uuid.uuid4())

    def card(base: str, context_id: str) -> Response:
        return reply({"url": f"{base}/a2a/jsonrpc", "contextId": context_id, "n": 1})

    golden = Exchange(rpc("GetCard", {}), card(RECORDED, g_ctx))
    for spaced in (False, True):
        live = as_wire(card(LIVE, l_ctx), spaced=spaced)
        body = broken(live.body.decode(), l_ctx).encode()
        broken_live = LiveReply(200, "OK", JSON, body)
        [mismatch] = state().compare(golden, broken_live)
        assert (mismatch.path, mismatch.message) == (
            "body",
            "expected a JSON body, got a non-JSON body",
        )
        assert state().compare(golden, broken_live.response) == [mismatch]


def test_a_rules_shape_that_matches_a_backslash_never_lets_a_broken_wire_reply_pass() -> None:
    shapes = {**DEFAULT_RULES.generated_shapes, "code": r"[A-Z\\]{4}"}
    rules = replace(DEFAULT_RULES, generated_shapes=shapes)
    golden = Exchange(rpc("GetCard", {}), reply({"ref": "ABCD", "n": 1}))
    live = LiveReply(200, "OK", JSON, b'{"ref":"AB\\Z","n":1}')  # \Z: no JSON escape
    found = ReplayState(rules, recorded_base=RECORDED, live_base=LIVE).compare(golden, live)
    assert [(m.path, m.message) for m in found] == [
        ("body", "expected a JSON body, got a non-JSON body")
    ]
    fine = LiveReply(200, "OK", JSON, b'{"ref":"WXYZ","n":1}')
    assert ReplayState(rules, recorded_base=RECORDED, live_base=LIVE).compare(golden, fine) == []


def test_a_request_body_with_a_bad_json_escape_is_played_not_a_crash() -> None:
    # a JSON-typed request body that is not JSON (a bad escape) is kept as recorded by the
    # model; carry-forward still reaches its valid strings and leaves the bad one alone
    (g_task, g_ctx), (l_task, l_ctx) = ids(), ids()
    s = state()
    learn(s, {"a": f"{g_task}|{g_ctx}"}, {"a": f"{l_task}|{l_ctx}"})
    body = f'{{"id": "{g_task}", "note": "bad \\q {g_task}", "tab": "a\tb"}}'
    request = Request("POST", "/a2a/jsonrpc", [*JSON], body.encode())
    assert request.json is None
    sent = s.prepare(request)
    assert sent.body.decode() == body.replace(f'"{g_task}"', f'"{l_task}"', 1)
    golden = Exchange(request, reply({"result": {"taskId": g_task}}))
    assert s.compare(golden, as_wire(reply({"result": {"taskId": l_task}}))) == []


@pytest.mark.parametrize(
    "text",
    [
        'say "x": y',  # an escaped quote, then ": ", inside a string
        'a backslash \\": and "quotes": here',
        "plain text: nothing special",
    ],
)
def test_a_compact_wire_reply_takes_the_fast_path_whatever_its_strings_hold(text: str) -> None:
    g_task, l_task = str(uuid.uuid4()), str(uuid.uuid4())

    def document(task_id: str, words: str) -> dict[str, Any]:
        return {"result": {"task": {"id": task_id, "note": words, "n": [1, {"k": ": "}]}}}

    exchange = Exchange(rpc("GetTask", {}), reply(document(g_task, text)))
    s = state()
    assert s.compare(exchange, as_wire(reply(document(l_task, text)))) == []
    assert s.mapping[g_task] == l_task
    changed = state().compare(exchange, as_wire(reply(document(l_task, text + "!"))))
    assert [m.path for m in changed] == ["$.result.task.note"]
    # one layout or the other, the fast path is taken: no Response is built for the wire reply
    live = as_wire(reply(document(l_task, text)))
    state().compare(exchange, live)
    assert live._response is None


@pytest.mark.parametrize(
    ("golden", "live", "paths"),
    [
        # orjson writes a NaN as null: the recorded NaN must still differ from a live null
        ('{"id": 1, "result": {"score": NaN}}', '{"id":1,"result":{"score":null}}', ["score"]),
        ('{"id": 1, "result": {"n": 123456789012345678901234567890}}', None, []),
        ('{"id": 1, "result": {"x": 1.5e-07, "y": 1e16}}', None, []),  # json's spelling
        ('{"id": 1, "result": {"x": 1.5e-07}}', '{"id":1,"result":{"x":1.6e-07}}', ["x"]),
    ],
)
def test_compact_replies_compare_by_value_whatever_the_numbers(
    golden: str, live: str | None, paths: list[str]
) -> None:
    exchange = Exchange(rpc("GetTask", {}), Response(200, "OK", JSON, golden.encode()))
    wire = live if live is not None else json.dumps(json.loads(golden), separators=(",", ":"))
    found = state().compare(exchange, LiveReply(200, "OK", JSON, wire.encode()))
    assert [m.path for m in found] == [f"$.result.{p}" for p in paths]


def test_frames_that_came_in_another_order_still_teach_their_values() -> None:
    # the live stream swapped the WORKING update and the artifact: reported frame by frame,
    # and the artifact's id and the timestamp are still paired with the recorded ones, so
    # bless (--update) writes the recorded values back, in the live order
    def frames(task: str, artifact: str, stamp: str, swap: bool) -> Response:
        working = {"statusUpdate": {"taskId": task, "status": {"state": "W", "timestamp": stamp}}}
        made = {"artifactUpdate": {"taskId": task, "artifact": {"artifactId": artifact}}}
        middle = [made, working] if swap else [working, made]
        values = [{"task": {"id": task}}, *middle, {"statusUpdate": {"taskId": task}}]
        events = tuple(
            SseEvent(data=json.dumps({"result": v, "id": 1, "jsonrpc": "2.0"})) for v in values
        )
        return Response(200, "OK", [("Content-Type", "text/event-stream")], events=events)

    (g_task, g_artifact), (l_task, l_artifact) = ids(), ids()
    golden = frames(g_task, g_artifact, "2026-11-29T18:00:00Z", swap=False)
    live = frames(l_task, l_artifact, "2026-11-30T09:00:00Z", swap=True)
    s = state()
    exchange = Exchange(rpc("SendStreamingMessage", {}), golden)
    found = s.compare(exchange, live)
    assert {m.frame for m in found} == {2, 3}
    assert s.mapping[g_artifact] == l_artifact
    blessed = s.bless(golden, live, matched=False)
    assert blessed == frames(g_task, g_artifact, "2026-11-29T18:00:00Z", swap=True)


def test_a_secret_member_is_compared_for_presence_only() -> None:
    # the recorder wrote the secret as a placeholder; the agent sends the secret itself
    rules = replace(DEFAULT_RULES, secret_fields={"apiKey": "API_KEY"})
    s = ReplayState(rules, recorded_base=RECORDED, live_base=LIVE)
    golden = Exchange(rpc("GetKey", {}), reply({"apiKey": "{{API_KEY}}", "n": 1}))
    assert s.compare(golden, reply({"apiKey": "live-secret-123", "n": 1})) == []
    assert [(m.path, m.actual) for m in s.compare(golden, reply({"n": 1}))] == [
        ("$.apiKey", ABSENT)
    ]
    # a member no rule names secret is compared (apiKey is secret by default: none here)
    unnamed = replace(DEFAULT_RULES, secret_fields={})
    plain = ReplayState(unnamed, recorded_base=RECORDED, live_base=LIVE)
    assert [m.path for m in plain.compare(golden, reply({"apiKey": "x", "n": 1}))] == ["$.apiKey"]


def test_a_secret_member_is_one_in_any_case_as_the_recorder_redacts_it() -> None:
    rules = replace(DEFAULT_RULES, secret_fields={"apikey": "API_KEY"})
    s = ReplayState(rules, recorded_base=RECORDED, live_base=LIVE)
    golden = Exchange(rpc("GetKey", {}), reply({"ApiKey": "{{API_KEY}}", "n": 1}))
    assert s.compare(golden, reply({"ApiKey": "live-secret-123", "n": 1})) == []
    [missing] = s.compare(golden, reply({"n": 1}))
    assert (missing.path, missing.expected) == ("$.ApiKey", "{{API_KEY}}")


def test_a_secret_member_inside_an_unordered_array_is_compared_for_presence_only() -> None:
    rules = replace(DEFAULT_RULES, secret_fields={"apiKey": "API_KEY"}, unordered_paths=("$.keys",))
    s = ReplayState(rules, recorded_base=RECORDED, live_base=LIVE)
    recorded = [{"name": "a", "apiKey": "{{API_KEY}}"}, {"name": "b", "apiKey": "{{API_KEY}}"}]
    golden = Exchange(rpc("ListKeys", {}), reply({"keys": recorded}))
    live = [{"name": "b", "apiKey": "sk-2"}, {"name": "a", "apiKey": "sk-1"}]
    assert s.compare(golden, reply({"keys": live})) == []


def _many_tasks(seed: int, stamps: Callable[[int], str], count: int = 3000) -> Response:
    tasks = [
        {
            "id": str(uuid.UUID(int=seed << 64 | n)),
            "contextId": str(uuid.UUID(int=seed << 64 | 1 << 32 | n)),
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": stamps(n)},
        }
        for n in range(count)
    ]
    return reply({"result": {"tasks": tasks}})


def test_a_reply_of_many_values_pairs_them_without_a_container_per_pair() -> None:
    # the fast path pairs thousands of values as sets: a tuple kept per (recorded, live) pair
    # made the garbage collector pass over the young objects (the replies' parsed values)
    # again and again, 10-15 % of a large listing's comparison
    import gc

    golden = Exchange(
        rpc("ListTasks", {}), _many_tasks(1, lambda n: f"2026-11-29T18:00:{n % 60:02d}Z")
    )
    live = as_wire(_many_tasks(2, lambda n: f"2026-11-30T09:00:{n % 60:02d}Z"))
    passes: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    s = state()
    real_matches_text = FastPath.matches_text
    decided: list[bool] = []

    def matches_text(self: FastPath, *args: Any, **kwargs: Any) -> bool:
        gc.callbacks.append(count)
        try:
            decided.append(real_matches_text(self, *args, **kwargs))
        finally:
            gc.callbacks.remove(count)
        return decided[-1]

    with mock.patch.object(FastPath, "matches_text", matches_text):
        assert s.compare(golden, live) == []
    assert decided == [True]  # the fast path decided (6,000 ids and 3,000 timestamps paired)
    assert len(passes) <= 2, passes  # (at most where the count stood near a threshold)
    assert s.mapping[str(uuid.UUID(int=1 << 64 | 2999))] == str(uuid.UUID(int=2 << 64 | 2999))


@pytest.mark.parametrize("count", [5, 100], ids=["few", "many"])
def test_a_recorded_time_may_meet_two_live_ones_a_recorded_id_may_not(count: int) -> None:
    # (5 tasks hold 15 values, which the fast path pairs one by one; 100, past its `_SMALL`,
    # it pairs as sets)
    # timestamps are loose (two tasks recorded in one second, live in two): still a match
    golden = Exchange(rpc("ListTasks", {}), _many_tasks(1, lambda n: "2026-11-29T18:00:00Z", count))
    live = _many_tasks(2, lambda n: f"2026-11-30T09:00:{n % 2:02d}Z", count)
    assert state().compare(golden, as_wire(live)) == []
    # two recorded task ids, one live one: rule 3 says no (the fast path leaves it to the walk)
    twice = json.loads(live.body)
    twice["result"]["tasks"][1]["id"] = twice["result"]["tasks"][0]["id"]
    found = state().compare(golden, as_wire(reply(twice)))
    assert [m.path for m in found] == ["$.result.tasks[1].id"]
