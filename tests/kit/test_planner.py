"""The planner's scenarios and the transcripts they recorded (no network: the files are read).

Issue 4, item 7: every listed scenario is there, each file is self-contained (it creates the
tasks it then names, ListTasks is scoped by contextId), and `11-errors.http` shows the errors
with exchange 3 the old method name answered with -32601, as the guide says.
"""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import TRANSCRIPTS

from recorder import Exchange, load
from recorder.planner.run import PLANNED
from recorder.planner.scenarios import UNKNOWN_TASK
from recorder.record.naming import file_name

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SCENARIO_FILES = [file_name(n, s.name) for n, s in enumerate(PLANNED, start=1)]
ELEVEN_OPERATIONS = {
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
    "GetExtendedAgentCard",
}


def method(exchange: Exchange) -> str | None:
    """The JSON-RPC method of a request, None for other requests."""
    payload: Any = exchange.request.json if exchange.request.is_json else None
    return payload.get("method") if isinstance(payload, dict) else None


def error_code(exchange: Exchange) -> int | None:
    payload: Any = exchange.response.json if exchange.response.is_json else None
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        code: int | None = payload["error"].get("code")
        return code
    return None


def reply_text(exchange: Exchange) -> str:
    """The reply as text, every SSE frame included."""
    response = exchange.response
    if response.events is not None:
        return "\n".join(event.data or "" for event in response.events)
    return response.body.decode("utf-8", errors="replace")


def test_the_shipped_transcripts_are_the_planners_scenarios_in_order() -> None:
    shipped = sorted(p.name for p in TRANSCRIPTS.glob("*.http"))
    assert shipped == SCENARIO_FILES
    assert SCENARIO_FILES[1] == "02-message-reply.http"  # named by the guide
    assert SCENARIO_FILES[10] == "11-errors.http"


def test_the_json_rpc_scenarios_use_all_eleven_operations() -> None:
    used = {method(e) for name in SCENARIO_FILES for e in load(TRANSCRIPTS / name)}
    assert used >= ELEVEN_OPERATIONS


def test_the_core_flows_are_recorded_over_http_json_too() -> None:
    requests = {
        (e.request.method, UUID.sub("<id>", e.request.target.split("?")[0]))
        for name in SCENARIO_FILES
        if name.split("-", 1)[1].startswith("rest-")
        for e in load(TRANSCRIPTS / name)
    }
    assert requests >= {
        ("POST", "/a2a/rest/message:send"),
        ("POST", "/a2a/rest/message:stream"),
        ("GET", "/a2a/rest/tasks/<id>"),
        ("GET", "/a2a/rest/tasks"),
        ("POST", "/a2a/rest/tasks/<id>:cancel"),
    }


def test_errors_transcript_shows_each_error_and_exchange_3_is_the_old_method_name() -> None:
    errors = load(TRANSCRIPTS / "11-errors.http").exchanges
    assert method(errors[2]) == "message/send"
    assert error_code(errors[2]) == -32601
    codes = [error_code(e) for e in errors]
    for code in (-32001, -32002, -32004, -32009, -32601, -32602, -32700):
        assert code in codes, f"11-errors.http has no {code}"


@pytest.mark.parametrize("name", SCENARIO_FILES)
def test_each_file_names_only_ids_it_was_given_earlier(name: str) -> None:
    """Self-contained: an id a request names came from an earlier reply of the same file
    (or is the made-up unknown task id), so the file replays alone against a fresh kit."""
    seen: set[str] = {UNKNOWN_TASK}
    for number, exchange in enumerate(load(TRANSCRIPTS / name), start=1):
        request = exchange.request
        sent = request.target + "\n" + request.body.decode("utf-8", errors="replace")
        # a user message's own ids are the client's: `messageId`s are "<scenario>-<n>"
        foreign = set(UUID.findall(sent)) - seen
        assert not foreign, f"{name} exchange {number} names ids no earlier reply gave: {foreign}"
        seen.update(UUID.findall(reply_text(exchange)))


@pytest.mark.parametrize("name", SCENARIO_FILES)
def test_list_tasks_is_scoped_by_context_id(name: str) -> None:
    for exchange in load(TRANSCRIPTS / name):
        request = exchange.request
        if method(exchange) == "ListTasks":
            assert request.json["params"].get("contextId"), f"{name}: unscoped ListTasks"
        elif request.method == "GET" and request.path.endswith("/a2a/rest/tasks"):
            assert "contextId=" in request.target, f"{name}: unscoped ListTasks"


@pytest.mark.e2e
def test_a_busy_preferred_port_is_said_not_silently_replaced(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from recorder.planner.run import _start_kit
    from recorder.servers import bind_socket

    with bind_socket() as busy:
        port = int(busy.getsockname()[1])
        with (
            caplog.at_level(logging.WARNING, logger="recorder.planner.run"),
            _start_kit(port) as kit,
        ):
            assert kit.port != port
    [record] = caplog.records
    assert f"cannot listen on port {port}" in record.getMessage()
    assert f"the transcripts name localhost:{kit.port}" in record.getMessage()


async def _raise(error: Exception) -> None:
    raise error


def test_a_scenario_accepts_only_the_error_it_provokes() -> None:
    from a2a.client import A2AClientError
    from a2a.utils.errors import TaskNotFoundError

    from recorder.planner.scenarios import _expect_error

    expected = _expect_error(_raise(TaskNotFoundError()), TaskNotFoundError, "task not found")
    asyncio.run(expected)  # the error the scenario provokes: recorded, no complaint
    # a proxy or network failure is not the kit's answer: the recording stops, saying so
    with pytest.raises(A2AClientError, match="502"):
        asyncio.run(
            _expect_error(
                _raise(A2AClientError("HTTP Error 502: Bad Gateway")),
                TaskNotFoundError,
                "task not found",
            )
        )
    with pytest.raises(AssertionError, match="401 without a token"):
        asyncio.run(
            _expect_error(
                _raise(A2AClientError("HTTP Error 502: Bad Gateway")),
                A2AClientError,
                "401 without a token",
                containing="HTTP Error 401",
            )
        )
    with pytest.raises(AssertionError, match="did not answer with an error: task not found"):
        asyncio.run(_expect_error(asyncio.sleep(0), TaskNotFoundError, "task not found"))


@pytest.mark.parametrize(
    ("status", "body", "outcome"),
    [
        (200, b'{"jsonrpc": "2.0", "id": 1, "result": {}}', "result"),
        (200, b'{"jsonrpc": "2.0", "id": 1, "error": {"code": -32009}}', "-32009"),
        (502, b"Bad Gateway", "HTTP 502, not JSON"),
    ],
)
def test_raw_calls_are_checked_for_the_outcome_they_provoke(
    status: int, body: bytes, outcome: str
) -> None:
    import httpx

    from recorder.planner.scenarios import _expect_outcome

    reply = httpx.Response(status, content=body)
    _expect_outcome(reply, outcome, "call")
    with pytest.raises(AssertionError, match=f"call: expected -32601, got {outcome}"):
        _expect_outcome(reply, "-32601", "call")


def test_planner_refuses_a_file_as_the_transcripts_folder_before_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from recorder.planner.run import main

    not_a_folder = tmp_path / "transcripts"
    not_a_folder.write_text("x")
    assert main(["--out", str(not_a_folder)]) == 2
    assert capsys.readouterr().err == (
        f"planner: --out {not_a_folder} is a file; name the transcripts folder\n"
    )
    assert not_a_folder.read_text() == "x"


def test_a_scenario_that_hangs_stops_the_planner_with_its_name() -> None:
    from recorder.planner.run import _run
    from recorder.planner.scenarios import Scenario, Session

    async def hangs(session: Session) -> None:
        await asyncio.Event().wait()  # never set: a reply that never comes

    with pytest.raises(RuntimeError, match=r"scenario 'hangs' did not finish within 0\.05 s"):
        asyncio.run(_run([Scenario("hangs", hangs)], "http://127.0.0.1:9", "token", limit=0.05))
