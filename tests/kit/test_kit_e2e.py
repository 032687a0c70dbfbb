"""The kit end to end: real uvicorn on loopback ports, the real a2a-sdk client, raw httpx.

One kit serves the module (tests scope their ListTasks by contextId); tests that need a
different setting start their own. Every operation runs over JSON-RPC and HTTP+JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2AClientError, ClientCallContext
from a2a.helpers import get_message_text
from a2a.types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Role,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError
from google.protobuf.json_format import MessageToDict
from helpers import announced_address
from sdk_clients import collect, kinds, open_client, state_of, user_message
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from recorder.kit import DEFAULT_TOKEN, KitServer, create_app, start_kit
from recorder.servers import ServerThread, bind_socket

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

BINDINGS = ["JSONRPC", "HTTP+JSON"]
VERSION = {"A2A-Version": "1.0"}
SUBMITTED, WORKING = TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING
COMPLETED, CANCELED = TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED
INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED

DIFF = (
    "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,4 @@\n import os\n"
    "+# TODO: read the port from the config\n+print(os.getcwd())\n x = 1\n"
)
DIFF_REVIEW = (
    "Reviewed 1 file: 3 comments.\n"
    "src/app.py:2: [todo] TODO left in added code.\n"
    "src/app.py:3: [debug-print] debugging statement in Python code: remove it or use logging.\n"
    "diff: [missing-tests] src/app.py changed but no test file did: add or update tests."
)
HEADERLESS_DIFF = "@@ -1,2 +1,3 @@\n import os\n+# FIXME: handle errors\n x = 1\n"
SLOW_DIFF = "please review slowly\n" + DIFF


# --- fixtures and helpers -------------------------------------------------------------------


@pytest.fixture(scope="module")
def http(kit: KitServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=kit.url, timeout=20) as client:
        yield client


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def rpc(http: httpx.Client, method: str, params: Any, *, headers: Any = None) -> dict[str, Any]:
    reply = http.post(
        "/a2a/jsonrpc",
        json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params},
        headers=VERSION if headers is None else headers,
    )
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def finished_review(kit: KitServer) -> tuple[str, str]:
    """(task id, context id) of a new, completed review."""

    async def send() -> tuple[str, str]:
        async with await open_client(kit.url, "JSONRPC", streaming=False) as client:
            (event,) = await collect(client.send_message(user_message(DIFF)))
        assert event.task.status.state == COMPLETED
        return event.task.id, event.task.context_id

    result: tuple[str, str] = run(send())
    return result


class Webhook:
    """A push-notification receiver on a loopback port: records (token header, JSON body)."""

    def __init__(self) -> None:
        self.received: list[tuple[str | None, dict[str, Any]]] = []
        self._changed = threading.Condition()
        app = Starlette(routes=[Route("/hook", self._hook, methods=["POST"])])
        self.server = ServerThread(app)

    async def _hook(self, request: Request) -> Response:
        body = await request.json()
        with self._changed:
            self.received.append((request.headers.get("x-a2a-notification-token"), body))
            self._changed.notify_all()
        return Response(status_code=204)

    @property
    def url(self) -> str:
        return f"{self.server.url}/hook"

    def wait_for(self, count: int, timeout: float = 10.0) -> list[tuple[str | None, Any]]:
        with self._changed:
            arrived = self._changed.wait_for(lambda: len(self.received) >= count, timeout)
            assert arrived, f"expected {count} notifications, got {self.received}"
            return list(self.received)


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    with hook.server:
        yield hook


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A loopback URL whose port refuses connections: bound (so no one else takes it while the
    test runs), not listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/hook"


# --- the card -------------------------------------------------------------------------------


def test_card_announces_its_three_interfaces_at_the_localhost_base(
    kit: KitServer, http: httpx.Client
) -> None:
    card = http.get("/.well-known/agent-card.json").json()
    base = f"http://localhost:{kit.port}"
    assert kit.base_url == base
    assert card["name"] == "code-reviewer"
    assert card["supportedInterfaces"] == [
        {"url": f"{base}/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": f"{base}/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": kit.grpc_address, "protocolBinding": "GRPC", "protocolVersion": "1.0"},
    ]
    assert card["capabilities"] == {
        "streaming": True,
        "pushNotifications": True,
        "extendedAgentCard": True,
    }
    assert [skill["id"] for skill in card["skills"]] == ["languages", "review-diff"]
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    # no v0.3 legacy fields (they appear when an interface lacks protocolVersion)
    assert not {"url", "preferredTransport", "protocolVersion"} & card.keys()


# --- SendMessage / SendStreamingMessage -----------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
def test_question_gets_one_direct_message(kit: KitServer, binding: str, streaming: bool) -> None:
    async def scenario() -> list[StreamResponse]:
        async with await open_client(kit.url, binding, streaming=streaming) as client:
            return await collect(
                client.send_message(user_message("What languages can you review?"))
            )

    events = run(scenario())
    assert kinds(events) == ["message"]
    message = events[0].message
    assert message.role == Role.ROLE_AGENT
    assert message.task_id == ""
    assert get_message_text(message) == (
        "I can review Python, JavaScript, TypeScript, Go, Java and Rust. "
        "Send me a unified diff and I will comment on the added lines."
    )


@pytest.mark.parametrize("binding", BINDINGS)
def test_other_text_gets_a_help_message(kit: KitServer, binding: str) -> None:
    async def scenario() -> list[StreamResponse]:
        async with await open_client(kit.url, binding) as client:
            return await collect(client.send_message(user_message("hello")))

    (event,) = run(scenario())
    assert get_message_text(event.message).startswith("I am code-reviewer.")


@pytest.mark.parametrize("binding", BINDINGS)
def test_diff_is_reviewed_in_a_stream_of_fixed_frames(kit: KitServer, binding: str) -> None:
    async def scenario() -> list[StreamResponse]:
        async with await open_client(kit.url, binding) as client:
            return await collect(client.send_message(user_message(DIFF)))

    events = run(scenario())
    assert kinds(events) == ["task", "status_update", "artifact_update", "status_update"]
    assert [state_of(e) for e in (events[0], events[1], events[3])] == [
        SUBMITTED,
        WORKING,
        COMPLETED,
    ]
    task_id = events[0].task.id
    assert {events[1].status_update.task_id, events[2].artifact_update.task_id} == {task_id}
    artifact = events[2].artifact_update.artifact
    assert artifact.name == "review"
    assert [part.text for part in artifact.parts] == [DIFF_REVIEW]


@pytest.mark.parametrize("binding", BINDINGS)
def test_blocking_send_returns_the_completed_task(kit: KitServer, binding: str) -> None:
    async def scenario() -> list[StreamResponse]:
        async with await open_client(kit.url, binding, streaming=False) as client:
            return await collect(client.send_message(user_message(DIFF)))

    (event,) = run(scenario())
    task = event.task
    assert task.status.state == COMPLETED
    assert [a.name for a in task.artifacts] == ["review"]
    assert task.artifacts[0].parts[0].text == DIFF_REVIEW
    assert [m.role for m in task.history] == [Role.ROLE_USER]


@pytest.mark.parametrize("binding", BINDINGS)
def test_headerless_diff_asks_for_the_file_name_then_completes(
    kit: KitServer, binding: str
) -> None:
    async def scenario() -> tuple[list[StreamResponse], ...]:
        async with await open_client(kit.url, binding) as client:
            first = await collect(client.send_message(user_message(HEADERLESS_DIFF)))
            task = first[0].task
            not_a_name = await collect(
                client.send_message(
                    user_message("no idea", task_id=task.id, context_id=task.context_id)
                )
            )
            answer = await collect(
                client.send_message(
                    user_message("src/app.py", task_id=task.id, context_id=task.context_id)
                )
            )
            return first, not_a_name, answer

    first, not_a_name, answer = run(scenario())
    assert kinds(first) == ["task", "status_update", "status_update"]
    assert [state_of(e) for e in first] == [SUBMITTED, WORKING, INPUT_REQUIRED]
    question = first[2].status_update.status.message
    assert question.role == Role.ROLE_AGENT
    assert "Which file is it for?" in get_message_text(question)
    assert [state_of(e) for e in not_a_name] == [INPUT_REQUIRED]
    assert "'no idea' is not a file path." in get_message_text(
        not_a_name[0].status_update.status.message
    )
    assert kinds(answer) == ["status_update", "artifact_update", "status_update"]
    assert [state_of(answer[0]), state_of(answer[2])] == [WORKING, COMPLETED]
    assert answer[1].artifact_update.artifact.parts[0].text == (
        "Reviewed 1 file: 2 comments.\n"
        "src/app.py:2: [todo] FIXME left in added code.\n"
        "diff: [missing-tests] src/app.py changed but no test file did: add or update tests."
    )


# --- GetTask / ListTasks --------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_get_task_and_list_tasks_of_a_context(kit: KitServer, binding: str) -> None:
    task_id, context_id = finished_review(kit)

    async def scenario() -> tuple[Any, Any]:
        async with await open_client(kit.url, binding) as client:
            task = await client.get_task(GetTaskRequest(id=task_id, history_length=0))
            listed = await client.list_tasks(
                ListTasksRequest(context_id=context_id, include_artifacts=True)
            )
            return task, listed

    task, listed = run(scenario())
    assert (task.id, task.context_id, task.status.state) == (task_id, context_id, COMPLETED)
    assert list(task.history) == []
    assert task.artifacts[0].parts[0].text == DIFF_REVIEW
    assert [t.id for t in listed.tasks] == [task_id]
    assert listed.tasks[0].artifacts[0].name == "review"
    assert listed.total_size == 1


# --- CancelTask / SubscribeToTask -----------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_slow_review_is_subscribed_to_and_canceled(kit: KitServer, binding: str) -> None:
    async def scenario() -> dict[str, Any]:
        async with await open_client(kit.url, binding) as client:
            stream = client.send_message(user_message(SLOW_DIFF))
            opened = [await anext(stream), await anext(stream)]
            task_id = opened[0].task.id
            subscription = client.subscribe(SubscribeToTaskRequest(id=task_id))
            snapshot = await anext(subscription)
            canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
            return {
                "opened": opened,
                "snapshot": snapshot,
                "canceled": canceled,
                "stream_rest": await collect(stream),
                "subscription_rest": await collect(subscription),
                "after": await client.get_task(GetTaskRequest(id=task_id)),
            }

    result = run(scenario())
    assert kinds(result["opened"]) == ["task", "status_update"]
    assert [state_of(e) for e in result["opened"]] == [SUBMITTED, WORKING]
    assert "Reviewing slowly" in get_message_text(result["opened"][1].status_update.status.message)
    assert kinds([result["snapshot"]]) == ["task"]
    assert result["snapshot"].task.status.state == WORKING
    assert result["canceled"].status.state == CANCELED
    for rest in (result["stream_rest"], result["subscription_rest"]):
        assert kinds(rest) == ["status_update"]
        assert state_of(rest[0]) == CANCELED
    assert result["after"].status.state == CANCELED
    assert list(result["after"].artifacts) == []


@pytest.mark.parametrize("binding", BINDINGS)
def test_return_immediately_gives_the_submitted_task(kit: KitServer, binding: str) -> None:
    # The handler taps the task's events before the executor runs, and the executor's first
    # event is the SUBMITTED task, so this reply does not depend on timing.
    async def scenario() -> tuple[list[StreamResponse], Any]:
        async with await open_client(kit.url, binding, streaming=False) as client:
            request = user_message(SLOW_DIFF)
            request.configuration.return_immediately = True
            events = await collect(client.send_message(request))
            canceled = await client.cancel_task(CancelTaskRequest(id=events[0].task.id))
            return events, canceled

    events, canceled = run(scenario())
    assert kinds(events) == ["task"]
    assert events[0].task.status.state == SUBMITTED
    assert canceled.status.state == CANCELED


def test_slow_review_completes_once_its_time_bound_passes() -> None:
    with start_kit(slow_review_seconds=0.2) as quick_kit:

        async def scenario() -> list[StreamResponse]:
            async with await open_client(quick_kit.url, "JSONRPC") as client:
                return await collect(client.send_message(user_message(SLOW_DIFF)))

        events = run(scenario())
    assert kinds(events) == ["task", "status_update", "artifact_update", "status_update"]
    assert state_of(events[3]) == COMPLETED
    assert events[2].artifact_update.artifact.parts[0].text == DIFF_REVIEW


@pytest.mark.parametrize("binding", BINDINGS)
def test_sdk_client_raises_the_a2a_errors(kit: KitServer, binding: str) -> None:
    task_id, context_id = finished_review(kit)

    async def scenario() -> list[type[Exception]]:
        raised: list[type[Exception]] = []
        async with await open_client(kit.url, binding) as client:
            for call in (
                lambda: client.get_task(GetTaskRequest(id="no-such-task")),
                lambda: client.cancel_task(CancelTaskRequest(id=task_id)),
                lambda: collect(
                    client.send_message(
                        user_message("again", task_id=task_id, context_id=context_id)
                    )
                ),
                lambda: collect(client.subscribe(SubscribeToTaskRequest(id=task_id))),
            ):
                with pytest.raises(Exception) as caught:
                    await call()
                raised.append(caught.type)
        return raised

    assert run(scenario()) == [
        TaskNotFoundError,
        TaskNotCancelableError,
        UnsupportedOperationError,
        UnsupportedOperationError,
    ]


# --- push notifications ---------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_push_notification_configs_are_created_read_listed_and_deleted(
    kit: KitServer, binding: str, refused_url: str
) -> None:
    task_id, _ = finished_review(kit)
    url = refused_url

    async def scenario() -> dict[str, Any]:
        async with await open_client(kit.url, binding) as client:
            created = await client.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task_id, id="hook-1", url=url, token="tok")
            )
            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task_id, id="hook-1")
            )
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            )
            await client.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="hook-1")
            )
            after = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            )
            with pytest.raises(TaskNotFoundError):
                await client.get_task_push_notification_config(
                    GetTaskPushNotificationConfigRequest(task_id=task_id, id="hook-1")
                )
            with pytest.raises(TaskNotFoundError):
                await client.create_task_push_notification_config(
                    TaskPushNotificationConfig(task_id="no-such-task", url=url)
                )
            return {"created": created, "got": got, "listed": listed, "after": after}

    result = run(scenario())
    expected = {"id": "hook-1", "taskId": task_id, "url": url, "token": "tok"}
    assert MessageToDict(result["created"]) == expected
    assert MessageToDict(result["got"]) == expected
    assert [MessageToDict(c) for c in result["listed"].configs] == [expected]
    assert list(result["after"].configs) == []


@pytest.mark.parametrize("binding", BINDINGS)
def test_push_notifications_reach_the_webhook_in_order(
    kit: KitServer, binding: str, webhook: Webhook
) -> None:
    async def scenario() -> list[StreamResponse]:
        async with await open_client(kit.url, binding) as client:
            (*_, asked) = await collect(client.send_message(user_message(HEADERLESS_DIFF)))
            task_id = asked.status_update.task_id
            context_id = asked.status_update.context_id
            await client.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task_id, url=webhook.url, token="push-token")
            )
            return await collect(
                client.send_message(
                    user_message("src/app.py", task_id=task_id, context_id=context_id)
                )
            )

    answer = run(scenario())
    assert state_of(answer[-1]) == COMPLETED
    received = webhook.wait_for(3)
    assert [token for token, _ in received] == ["push-token"] * 3
    bodies = [body for _, body in received]
    assert [next(iter(body)) for body in bodies] == [
        "statusUpdate",
        "artifactUpdate",
        "statusUpdate",
    ]
    assert [
        bodies[0]["statusUpdate"]["status"]["state"],
        bodies[2]["statusUpdate"]["status"]["state"],
    ] == [
        "TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED",
    ]
    assert {body[next(iter(body))]["taskId"] for body in bodies} == {
        answer[0].status_update.task_id
    }


def test_unreachable_webhooks_neither_block_the_reply_nor_break_the_agent(
    refused_url: str,
) -> None:
    # One webhook refuses connections (a closed port); the other accepts them into the
    # backlog and never answers, so a delivery would wait for the whole push timeout.
    never_answers = bind_socket("127.0.0.1", 0)
    silent_url = f"http://127.0.0.1:{never_answers.getsockname()[1]}/hook"
    sock = bind_socket("127.0.0.1", 0)
    base = f"http://localhost:{sock.getsockname()[1]}"
    # With the SDK's inline sender, each of the 4 events would wait PUSH_TIMEOUT for the
    # silent webhook before the reply is sent; the client gives up long before that.
    app = create_app(base, push_timeout=8.0)
    try:
        with (
            ServerThread(app, sock=sock, lifespan="on") as server,
            httpx.Client(base_url=server.url, timeout=4.0, headers=VERSION) as http,
        ):
            for url in (refused_url, silent_url):
                params = {
                    "message": {
                        "messageId": "m",
                        "role": "ROLE_USER",
                        "parts": [{"text": DIFF}],
                    },
                    "configuration": {"taskPushNotificationConfig": {"url": url}},
                }
                reply = rpc(http, "SendMessage", params)
                task = reply["result"]["task"]
                assert task["status"]["state"] == "TASK_STATE_COMPLETED"
                again = rpc(http, "GetTask", {"id": task["id"]})
                assert again["result"]["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        never_answers.close()


# --- GetExtendedAgentCard -------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_extended_card_is_given_to_token_holders_only(kit: KitServer, binding: str) -> None:
    async def scenario() -> Any:
        async with await open_client(kit.url, binding) as client:
            with pytest.raises(A2AClientError, match="HTTP Error 401"):
                await client.get_extended_agent_card(GetExtendedAgentCardRequest())
            bearer = {"Authorization": f"Bearer {kit.token}"}
            return await client.get_extended_agent_card(
                GetExtendedAgentCardRequest(),
                context=ClientCallContext(service_parameters=bearer),
            )

    card = run(scenario())
    assert kit.token == DEFAULT_TOKEN
    assert [skill.id for skill in card.skills] == ["languages", "review-diff", "review-rules"]
    assert list(card.skills[2].security_requirements[0].schemes) == ["bearer"]


@pytest.mark.parametrize(
    ("authorization", "challenge", "message"),
    [
        (None, 'Bearer realm="code-reviewer"', "needs authentication"),
        ("Bearer wrong", 'Bearer realm="code-reviewer", error="invalid_token"', "not valid"),
        ("Basic a2l0", 'Bearer realm="code-reviewer", error="invalid_token"', "not valid"),
    ],
)
def test_extended_card_without_the_right_token_is_401_on_both_bindings(
    http: httpx.Client, authorization: str | None, challenge: str, message: str
) -> None:
    headers = dict(VERSION)
    if authorization is not None:
        headers["Authorization"] = authorization
    jsonrpc = http.post(
        "/a2a/jsonrpc",
        json={"jsonrpc": "2.0", "id": "card-1", "method": "GetExtendedAgentCard", "params": {}},
        headers=headers,
    )
    rest = http.get("/a2a/rest/extendedAgentCard", headers=headers)
    tenant_rest = http.get("/tenant-1/a2a/rest/extendedAgentCard", headers=headers)
    head = http.head("/a2a/rest/extendedAgentCard", headers=headers)
    for reply in (jsonrpc, rest, tenant_rest, head):
        assert reply.status_code == 401
        assert reply.headers["www-authenticate"] == challenge
        assert reply.headers["content-type"] == "application/json"
    error = jsonrpc.json()
    assert (error["jsonrpc"], error["id"], error["error"]["code"]) == ("2.0", "card-1", -32000)
    assert message in error["error"]["message"]
    assert rest.json()["error"]["code"] == 401
    assert rest.json()["error"]["status"] == "UNAUTHENTICATED"
    assert message in rest.json()["error"]["message"]


def test_guard_leaves_other_json_rpc_calls_untouched(kit: KitServer, http: httpx.Client) -> None:
    # The guard reads the JSON-RPC body to find GetExtendedAgentCard; other calls, streaming
    # ones included, must reach the SDK intact.
    reply = http.post(
        "/a2a/jsonrpc",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendStreamingMessage",
            "params": {
                "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": DIFF}]}
            },
        },
        headers=VERSION,
    )
    frames = [json.loads(line[5:]) for line in reply.text.splitlines() if line.startswith("data:")]
    assert reply.headers["content-type"].startswith("text/event-stream")
    assert [next(iter(frame["result"])) for frame in frames] == [
        "task",
        "statusUpdate",
        "artifactUpdate",
        "statusUpdate",
    ]


# --- errors on the wire ---------------------------------------------------------------------


def message_params(text: str = "hi", message_id: str = "m-1", **fields: str) -> dict[str, Any]:
    message = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"message": {**message, **fields}}


def test_json_rpc_errors(kit: KitServer, http: httpx.Client) -> None:
    task_id, context_id = finished_review(kit)
    terminal = message_params(taskId=task_id, contextId=context_id)
    cases: list[tuple[str, dict[str, Any] | None, dict[str, str], int, str | None]] = [
        ("GetTask", {"id": "no-such-task"}, VERSION, -32001, "TASK_NOT_FOUND"),
        ("CancelTask", {"id": task_id}, VERSION, -32002, "TASK_NOT_CANCELABLE"),
        ("SendMessage", terminal, VERSION, -32004, "UNSUPPORTED_OPERATION"),
        ("SendStreamingMessage", terminal, VERSION, -32004, "UNSUPPORTED_OPERATION"),
        ("SubscribeToTask", {"id": task_id}, VERSION, -32004, "UNSUPPORTED_OPERATION"),
        ("SendMessage", message_params(), {}, -32009, "VERSION_NOT_SUPPORTED"),
        ("SendMessage", message_params(), {"A2A-Version": "2.0"}, -32009, "VERSION_NOT_SUPPORTED"),
        ("message/send", message_params(), VERSION, -32601, None),
        ("message/send", message_params(), {}, -32601, None),
        (
            "SendMessage",
            {"message": {"messageId": "m", "parts": "x"}},
            VERSION,
            -32602,
            "INVALID_PARAMS",
        ),
        ("SendMessage", {}, VERSION, -32602, "INVALID_PARAMS"),
    ]
    for method, params, headers, code, reason in cases:
        error = rpc(http, method, params, headers=headers)["error"]
        assert error["code"] == code, (method, params, headers, error)
        reasons = [detail.get("reason") for detail in error.get("data", [])]
        assert reasons[:1] == ([reason] if reason else []), (method, error)
    malformed = http.post(
        "/a2a/jsonrpc",
        content=b'{"jsonrpc": "2.0", "id": 1, "method":',
        headers={**VERSION, "Content-Type": "application/json"},
    )
    assert malformed.status_code == 200
    assert malformed.json()["error"]["code"] == -32700
    assert malformed.json()["id"] is None


def test_http_json_errors(kit: KitServer, http: httpx.Client) -> None:
    task_id, context_id = finished_review(kit)
    terminal = message_params(taskId=task_id, contextId=context_id)
    json_type = {**VERSION, "Content-Type": "application/json"}
    bad_parts = {"message": {"messageId": "m", "parts": "x"}}
    precondition, invalid = "FAILED_PRECONDITION", "INVALID_ARGUMENT"
    cases: list[tuple[str, str, dict[str, Any], int, str, str]] = [
        ("GET", "/tasks/no-such-task", {"headers": VERSION}, 404, "NOT_FOUND", "TASK_NOT_FOUND"),
        ("POST", f"/tasks/{task_id}:cancel", {"headers": VERSION}, 400, precondition,
         "TASK_NOT_CANCELABLE"),
        ("POST", "/message:send", {"json": terminal, "headers": VERSION}, 400, precondition,
         "UNSUPPORTED_OPERATION"),
        ("GET", f"/tasks/{task_id}:subscribe", {"headers": VERSION}, 400, precondition,
         "UNSUPPORTED_OPERATION"),
        ("GET", f"/tasks/{task_id}", {}, 400, precondition, "VERSION_NOT_SUPPORTED"),
        ("GET", f"/tasks/{task_id}", {"headers": {"A2A-Version": "2.0"}}, 400, precondition,
         "VERSION_NOT_SUPPORTED"),
        ("POST", "/message:send", {"content": b'{"message":', "headers": json_type}, 400, invalid,
         "INVALID_REQUEST"),
        ("POST", "/message:send", {"json": bad_parts, "headers": VERSION}, 400, invalid,
         "INVALID_REQUEST"),
        ("POST", "/message:send", {"json": {}, "headers": VERSION}, 400, invalid, "INVALID_PARAMS"),
    ]  # fmt: skip
    for method, path, options, status, grpc_status, reason in cases:
        reply = http.request(method, f"/a2a/rest{path}", **options)
        assert reply.status_code == status, (method, path, reply.text)
        error = reply.json()["error"]
        assert (error["code"], error["status"]) == (status, grpc_status), (path, error)
        assert error["details"][0]["reason"] == reason, (path, error)


# --- the same conversation twice ------------------------------------------------------------

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")


def with_stable_placeholders(text: str) -> str:
    """Generated ids -> <id:N>, timestamps -> <time:N>, numbered by first appearance."""
    for pattern, kind in ((_UUID, "id"), (_TIMESTAMP, "time")):
        seen: dict[str, str] = {}
        text = pattern.sub(
            lambda match, seen=seen, kind=kind: seen.setdefault(
                match.group(), f"<{kind}:{len(seen) + 1}>"
            ),
            text,
        )
    return text


def test_with_stable_placeholders_numbers_values_by_first_appearance() -> None:
    a, b = "0f02dae5-8ef1-4b08-8971-a755ca682445", "bd51e2ab-954b-45c1-89f8-f006952684e5"
    text = f"{b} {a} {b} 2026-11-29T18:28:41.946689Z 2026-11-29T18:28:41Z"
    assert with_stable_placeholders(text) == "<id:1> <id:2> <id:1> <time:1> <time:2>"


def converse(kit: KitServer) -> list[str]:
    """A fixed conversation over both bindings; each reply as 'status type\\nbody'."""
    replies: list[str] = []
    with httpx.Client(base_url=kit.url, timeout=20, headers=VERSION) as http:

        def send(method: str, path: str, body: Any = None, **headers: str) -> Any:
            reply = http.request(method, path, json=body, headers=headers)
            text = reply.text.replace(kit.base_url, "<base>")
            replies.append(f"{reply.status_code} {reply.headers['content-type']}\n{text}")
            if reply.headers["content-type"].startswith("text/event-stream"):
                return [
                    json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")
                ]
            return json.loads(reply.text)

        def call(method: str, params: Any, request_id: int) -> Any:
            payload = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            return send("POST", "/a2a/jsonrpc", payload)

        send("GET", "/.well-known/agent-card.json")
        call("SendMessage", message_params("What languages can you review?", "m-1"), 1)
        task = call("SendMessage", message_params(DIFF, "m-2"), 2)["result"]["task"]
        call("SendStreamingMessage", message_params(DIFF, "m-3"), 3)
        asked = send("POST", "/a2a/rest/message:stream", message_params(HEADERLESS_DIFF, "m-4"))
        pending = asked[0]["task"]
        follow_up = message_params(
            "src/app.py", "m-5", taskId=pending["id"], contextId=pending["contextId"]
        )
        call("SendMessage", follow_up, 4)
        call("GetTask", {"id": task["id"]}, 5)
        send("GET", f"/a2a/rest/tasks?contextId={pending['contextId']}&includeArtifacts=true")
        config = {"taskId": task["id"], "id": "hook", "url": "http://127.0.0.1:9/hook"}
        call("CreateTaskPushNotificationConfig", config, 6)
        send("GET", f"/a2a/rest/tasks/{task['id']}/pushNotificationConfigs")
        call("CancelTask", {"id": task["id"]}, 7)
        send("POST", "/a2a/rest/message:send", message_params("x", "m-6", taskId=task["id"]))
        call("GetExtendedAgentCard", {}, 8)
        send("GET", "/a2a/rest/extendedAgentCard", Authorization=f"Bearer {kit.token}")
    # One numbering for the whole conversation: an id that recurs in a later reply must be
    # the same placeholder there.
    separator = "\n\n=====\n\n"
    return with_stable_placeholders(separator.join(replies)).split(separator)


def test_two_runs_of_a_conversation_differ_only_in_generated_values() -> None:
    runs = []
    for _ in range(2):
        with start_kit(grpc_port=None) as fresh_kit:  # (the card names no other port)
            runs.append(converse(fresh_kit))
    first, second = runs
    assert len(first) == 14
    assert "TASK_STATE_INPUT_REQUIRED" in first[4] and "TASK_STATE_COMPLETED" in first[5]
    assert '"code":-32002' in first[10] and "UNSUPPORTED_OPERATION" in first[11]
    # the reviewed task (reply 2) is the one GetTask (6), the push config (8) and the
    # cancel error (11) name
    task_placeholder = json.loads(first[2].split("\n", 1)[1])["result"]["task"]["id"]
    assert task_placeholder.startswith("<id:")
    assert all(task_placeholder in first[i] for i in (6, 8, 9, 11))
    for index, (one, two) in enumerate(zip(first, second, strict=True)):
        assert one == two, f"reply {index} differs"


# --- the command line -----------------------------------------------------------------------


def test_recorder_kit_command_serves_until_ctrl_c() -> None:
    env = {**os.environ, "RECORDER_KIT_TOKEN": "env-token"}
    command = [sys.executable, "-c", "from recorder.cli import main; main()", "kit", "--port", "0"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert process.stdout is not None
        first_line = process.stdout.readline()
        assert first_line.startswith("code-reviewer listening on http://127.0.0.1:"), first_line
        port = int(announced_address(first_line).rsplit(":", 1)[1])
        # The socket listens before the line is printed, so this waits for uvicorn if need be.
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=20) as http:
            card = http.get("/.well-known/agent-card.json").json()
            assert card["supportedInterfaces"][0]["url"] == f"http://localhost:{port}/a2a/jsonrpc"
            stream = http.post(
                "/a2a/rest/message:stream",
                json=message_params(DIFF),
                headers=VERSION,
            )
            assert stream.text.count("data:") == 4
            extended = http.get(
                "/a2a/rest/extendedAgentCard",
                headers={**VERSION, "Authorization": "Bearer env-token"},
            )
            assert extended.status_code == 200
        process.send_signal(signal.SIGINT)
        rest_of_stdout, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert rest_of_stdout.splitlines()[-1] == "code-reviewer stopped."
    assert "Traceback" not in stderr and "Failed to detach" not in stderr, stderr


def test_recorder_kit_command_reports_a_busy_port(kit: KitServer) -> None:
    command = [sys.executable, "-c", "from recorder.cli import main; main()", "kit"]
    result = subprocess.run(
        [*command, "--port", str(kit.port)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2
    assert result.stderr == (
        f"recorder kit: cannot listen on 127.0.0.1:{kit.port}: address already in use\n"
    )


@pytest.mark.parametrize("port", ["65536", "-1", "http"])
def test_recorder_kit_command_refuses_a_port_out_of_range(port: str) -> None:
    from click.testing import CliRunner

    from recorder.cli import main

    result = CliRunner().invoke(main, ["kit", "--port", port])
    assert result.exit_code == 2
    assert "Invalid value for '--port'" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


# --- the kit page's examples (docs/kit.md) ---------------------------------------------------

KIT_PAGE = Path(__file__).parent.parent.parent / "docs" / "kit.md"


def readme_block(language: str, containing: str) -> str:
    """The first ```language block of docs/kit.md whose text contains `containing`."""
    blocks = re.findall(rf"^```{language}\n(.*?)^```$", KIT_PAGE.read_text(), re.S | re.M)
    found = [block for block in blocks if containing in block]
    assert found, f"docs/kit.md has no ```{language} block with {containing!r}"
    return str(found[0])


@pytest.mark.skipif(shutil.which("curl") is None, reason="the curl binary is not installed")
def test_the_readme_curl_example_gets_the_languages_message(kit: KitServer) -> None:
    command = readme_block("sh", "curl -s localhost:41242/a2a/jsonrpc")
    command = command.replace("localhost:41242", f"127.0.0.1:{kit.port}").rstrip()
    completed = subprocess.run(
        ["bash", "-c", command + " --max-time 20"], capture_output=True, text=True, timeout=30
    )
    assert completed.returncode == 0, completed.stderr
    reply = json.loads(completed.stdout)
    assert reply["result"]["message"]["parts"][0]["text"].startswith("I can review Python")


def test_the_readme_python_example_prints_the_languages_message(
    kit: KitServer, capsys: pytest.CaptureFixture[str]
) -> None:
    source = readme_block("python", "create_client")
    source = source.replace("http://localhost:41242", kit.url)
    exec(compile(source, "docs/kit.md", "exec"), {"__name__": "readme"})
    assert capsys.readouterr().out.startswith("I can review Python, JavaScript")
