"""Unscripted A2A traffic: a client that knows nothing of the recorder.

This is how SDK users and conformance suites drive an agent: no `Recorder-Scenario` header, a
random uuid4 for every user `messageId` and every JSON-RPC id (the a2a-sdk client picks them),
follow-up calls by the ids the agent handed out, streams read to their end, abandoned, or
opened twice at once. Its recordings are what DESIGN.md, "Recordings of unscripted traffic",
asks the recorder to group by id lineage.

`drive(base_url, token=..., binding=...)` runs one fixed conversation against `base_url` (the
recording proxy in front of the kit) with the real a2a-sdk client, built from the card fetched
through the proxy (the proxy rewrites its interface URLs to itself), and raw httpx for the
calls an SDK will not make (an unknown method, a body that is not JSON). It returns what the
client saw, so a test can check the client's own results.

Every wait is bounded (`LIMIT` seconds); every address is on loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientCallContext, ClientConfig, ClientFactory
from a2a.helpers import get_message_text, new_text_message
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)

__all__ = [
    "BINDINGS",
    "DIFF",
    "DIFF_WITHOUT_FILE_NAME",
    "LIMIT",
    "REUSED_MESSAGE_ID",
    "SLOW_DIFF",
    "drive",
    "drive_listing",
]

JSONRPC = "JSONRPC"
REST = "HTTP+JSON"
BINDINGS = (JSONRPC, REST)
LIMIT = 10.0  # seconds: the bound of every call and every wait

QUESTION = "Which languages do you review?"
DIFF = (
    "--- a/src/cart.py\n"
    "+++ b/src/cart.py\n"
    "@@ -1,2 +1,3 @@\n"
    " def total(items):\n"
    "+    print(items)  # TODO remove\n"
    "     return sum(items)\n"
)
DIFF_WITHOUT_FILE_NAME = (
    "@@ -1,2 +1,3 @@\n def mean(xs):\n+    # FIXME: empty list\n     return sum(xs) / len(xs)\n"
)
FILE_NAME = "src/stats.py"
SLOW_DIFF = "please review slowly\n" + DIFF


def _state(task: Task) -> str:
    return TaskState.Name(task.status.state)


def _kinds(events: list[StreamResponse]) -> list[str]:
    return [str(event.WhichOneof("payload")) for event in events]


def _message(text: str, *, task_id: str | None = None, context_id: str | None = None) -> Message:
    # new_text_message gives the message a random uuid4 messageId, as SDK users get
    return new_text_message(text, role=Role.ROLE_USER, task_id=task_id, context_id=context_id)


def _send(message: Message, *, return_immediately: bool = False) -> SendMessageRequest:
    request = SendMessageRequest(message=message)
    if return_immediately:
        request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
    return request


async def _bounded(call: Awaitable[Any]) -> Any:
    return await asyncio.wait_for(call, LIMIT)


async def _collect(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    async def read() -> list[StreamResponse]:
        return [event async for event in stream]

    return await _bounded(read())


async def _outcome(call: Awaitable[Any]) -> tuple[Any, str | None]:
    """(the result, None), or (None, the error's class name) when the call raised."""
    try:
        return await _bounded(call), None
    except TimeoutError:
        raise
    except Exception as exc:  # the error is the answer being recorded
        return None, type(exc).__name__


def _task_of(events: list[StreamResponse]) -> Task:
    for event in events:
        if event.HasField("task"):
            return event.task
    raise AssertionError(f"the agent answered without a task: {_kinds(events)}")


class _Webhook:
    """A listening loopback socket used as the push-notification URL: it counts the
    connections the agent makes to it (none are expected: the task is already finished)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.setblocking(False)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"

    def calls(self) -> int:
        count = 0
        for _ in range(100):  # bounded: the backlog holds at most a few
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                break
            conn.close()
            count += 1
        return count

    def close(self) -> None:
        self.sock.close()


class _Session:
    """The httpx client and the SDK clients of one run, built from one card."""

    def __init__(self, base_url: str, binding: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.binding = binding
        self.http = httpx.AsyncClient(timeout=LIMIT)
        self.card: AgentCard | None = None
        self._clients: list[Client] = []

    async def fetch_card(self) -> AgentCard:
        # the SDK's factory sets A2A-Version on a shared httpx client; the resolver runs
        # first here, so set it as the factory would
        self.http.headers.setdefault("A2A-Version", "1.0")
        self.card = await _bounded(A2ACardResolver(self.http, self.base_url).get_agent_card())
        return self.card

    def client(self, *, streaming: bool) -> Client:
        assert self.card is not None
        config = ClientConfig(
            httpx_client=self.http,
            streaming=streaming,
            supported_protocol_bindings=[self.binding],
        )
        client = ClientFactory(config).create(self.card)
        self._clients.append(client)
        return client

    def interface_url(self) -> str:
        assert self.card is not None
        for interface in self.card.supported_interfaces:
            if interface.protocol_binding == self.binding:
                return str(interface.url)
        raise AssertionError(f"the card has no {self.binding} interface")

    async def aclose(self) -> None:
        for client in self._clients:
            await client.close()
        await self.http.aclose()


def _subscriber(
    card: AgentCard,
    binding: str,
    task_id: str,
    start: threading.Barrier,
    first: threading.Event,
    out: dict[str, Any],
) -> None:
    """One thread's SubscribeToTask: its own event loop, httpx client and SDK client."""

    async def run() -> None:
        http = httpx.AsyncClient(timeout=LIMIT)
        config = ClientConfig(
            httpx_client=http, streaming=True, supported_protocol_bindings=[binding]
        )
        client = ClientFactory(config).create(card)
        events: list[StreamResponse] = []
        try:
            await asyncio.to_thread(start.wait, LIMIT)
            stream = client.subscribe(SubscribeToTaskRequest(id=task_id))
            async with contextlib.aclosing(stream):
                events.append(await _bounded(anext(stream)))
                first.set()
                events.extend(await _collect(stream))
        finally:
            out["kinds"] = _kinds(events)
            out["last_state"] = (
                TaskState.Name(events[-1].status_update.status.state)
                if events and events[-1].HasField("status_update")
                else None
            )
            await client.close()
            await http.aclose()

    try:
        asyncio.run(run())
    except BaseException as exc:  # reported to the main thread through `out`
        out["error"] = repr(exc)
        first.set()


async def _run(base_url: str, token: str, binding: str) -> dict[str, Any]:
    seen: dict[str, Any] = {"binding": binding}
    session = _Session(base_url, binding)
    webhook = _Webhook()
    try:
        # ---- the public card; a question -> a direct message
        card = await session.fetch_card()
        seen["card_name"] = card.name
        seen["interface_url"] = session.interface_url()
        client = session.client(streaming=False)
        events = await _collect(client.send_message(_send(_message(QUESTION))))
        seen["question"] = _kinds(events)
        seen["question_text"] = get_message_text(events[0].message) if events else ""

        # ---- a review task, then GetTask, ListTasks by its context, CancelTask (completed)
        review = _task_of(await _collect(client.send_message(_send(_message(DIFF)))))
        seen["review_state"] = _state(review)
        seen["review_text"] = [
            "\n".join(p.text for p in artifact.parts) for artifact in review.artifacts
        ]
        got = await _bounded(client.get_task(GetTaskRequest(id=review.id)))
        seen["get_task"] = (got.id == review.id, _state(got))
        listed = await _bounded(client.list_tasks(ListTasksRequest(context_id=review.context_id)))
        seen["listed"] = [task.id == review.id for task in listed.tasks]
        canceled, error = await _outcome(client.cancel_task(CancelTaskRequest(id=review.id)))
        seen["cancel_completed"] = error or _state(canceled)

        # ---- multi-turn: no file name -> INPUT_REQUIRED; the answer on the same task
        asking = _task_of(
            await _collect(client.send_message(_send(_message(DIFF_WITHOUT_FILE_NAME))))
        )
        seen["input_required"] = _state(asking)
        answer = _message(FILE_NAME, task_id=asking.id, context_id=asking.context_id)
        answered = _task_of(await _collect(client.send_message(_send(answer))))
        seen["answered"] = (answered.id == asking.id, _state(answered))

        # ---- push-notification configs on the (finished) review task
        created = await _bounded(
            client.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=review.id, url=webhook.url)
            )
        )
        config_id = created.id
        seen["push_created"] = (created.task_id == review.id, bool(config_id))
        fetched = await _bounded(
            client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=review.id, id=config_id)
            )
        )
        seen["push_get"] = fetched.url == webhook.url
        listed_configs = await _bounded(
            client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=review.id)
            )
        )
        seen["push_list"] = [config.id == config_id for config in listed_configs.configs]
        await _bounded(
            client.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=review.id, id=config_id)
            )
        )
        after = await _bounded(
            client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=review.id)
            )
        )
        seen["push_after_delete"] = len(after.configs)

        # ---- the extended card, with the bearer token
        auth = ClientCallContext(service_parameters={"Authorization": f"Bearer {token}"})
        extended = await _bounded(
            client.get_extended_agent_card(GetExtendedAgentCardRequest(), context=auth)
        )
        seen["extended_card"] = (extended.name, len(extended.skills) > len(card.skills))

        # ---- errors
        errors: dict[str, Any] = {}
        _, errors["unknown_task"] = await _outcome(
            client.get_task(GetTaskRequest(id=str(uuid.uuid4())))
        )
        url = session.interface_url()
        if binding == JSONRPC:
            unknown = await session.http.post(
                url,
                json={
                    "jsonrpc": "2.0",
                    "id": str(uuid.uuid4()),
                    "method": "tasks/archive",
                    "params": {"id": review.id},
                },
            )
            errors["unknown_method"] = unknown.json()["error"]["code"]
            garbage = await session.http.post(
                url, content=b"this is not JSON", headers={"Content-Type": "application/json"}
            )
            errors["not_json"] = garbage.json()["error"]["code"]
        else:
            unknown = await session.http.post(f"{url}/tasks/{review.id}:archive", json={})
            errors["unknown_route"] = unknown.status_code
            garbage = await session.http.post(
                f"{url}/message:send",
                content=b"this is not JSON",
                headers={"Content-Type": "application/a2a+json"},
            )
            errors["not_json"] = garbage.status_code
        seen["errors"] = errors

        # ---- a streamed review, read to its last event (the SDK closes the stream then)
        streaming = session.client(streaming=True)
        streamed = await _collect(streaming.send_message(_send(_message(DIFF))))
        seen["stream"] = _kinds(streamed)
        seen["stream_last_state"] = (
            TaskState.Name(streamed[-1].status_update.status.state) if streamed else None
        )

        # ---- a slow review streamed and abandoned after its first event, then canceled
        slow_stream = streaming.send_message(_send(_message(SLOW_DIFF)))
        async with contextlib.aclosing(slow_stream):
            first = await _bounded(anext(slow_stream))
        abandoned = first.task
        seen["abandoned_first"] = first.WhichOneof("payload")
        canceled = await _bounded(client.cancel_task(CancelTaskRequest(id=abandoned.id)))
        seen["abandoned_canceled"] = (canceled.id == abandoned.id, _state(canceled))

        # ---- a slow review started without waiting, two subscribers, CancelTask
        started = _task_of(
            await _collect(client.send_message(_send(_message(SLOW_DIFF), return_immediately=True)))
        )
        seen["started_state"] = _state(started)
        barrier = threading.Barrier(2)
        firsts = [threading.Event(), threading.Event()]
        outs: list[dict[str, Any]] = [{}, {}]
        threads = [
            threading.Thread(
                target=_subscriber,
                args=(card, binding, started.id, barrier, firsts[n], outs[n]),
                name=f"traffic-subscriber-{n}",
                daemon=True,
            )
            for n in range(2)
        ]
        for thread in threads:
            thread.start()
        for event in firsts:
            assert await asyncio.to_thread(event.wait, LIMIT), "no first event on a subscription"
        canceled = await _bounded(client.cancel_task(CancelTaskRequest(id=started.id)))
        seen["subscribed_canceled"] = (canceled.id == started.id, _state(canceled))
        for thread in threads:
            await asyncio.to_thread(thread.join, LIMIT)
            assert not thread.is_alive(), "a subscription did not end"
        seen["subscribers"] = outs
        seen["webhook_calls"] = webhook.calls()
    finally:
        webhook.close()
        await session.aclose()
    return seen


def drive(base_url: str, *, token: str, binding: str = JSONRPC) -> dict[str, Any]:
    """Run the conversation against `base_url` over `binding` ("JSONRPC" or "HTTP+JSON");
    return what the client saw (states by name, payload kinds, error class names)."""
    if binding not in BINDINGS:
        raise ValueError(f"binding must be one of {BINDINGS}, got {binding!r}")
    result: dict[str, Any] = asyncio.run(_run(base_url, token, binding))
    return result


REUSED_MESSAGE_ID = "test-message-1"
"""The messageId a test suite's fixture sends in every test (`drive_listing`)."""


async def _run_listing(base_url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    session = _Session(base_url, JSONRPC)
    try:
        await session.fetch_card()
        client = session.client(streaming=False)

        def review(text: str) -> SendMessageRequest:
            message = _message(text)
            message.message_id = REUSED_MESSAGE_ID  # the same in every "test"
            return _send(message)

        # ---- "test 1": a review and a GetTask, whose reply echoes the messageId in the history
        first = _task_of(await _collect(client.send_message(review(DIFF))))
        got = await _bounded(client.get_task(GetTaskRequest(id=first.id)))
        seen["history"] = [m.message_id for m in got.history]
        # ---- "test 2": another review, the same messageId
        second = _task_of(await _collect(client.send_message(review(DIFF))))
        # ---- "test 3": every task the agent holds (no filter: no id of theirs)
        listed = await _bounded(client.list_tasks(ListTasksRequest()))
        seen["listed"] = sorted(task.id for task in listed.tasks) == sorted([first.id, second.id])
        # ---- "test 4": a review after the listing (state the listing does not name)
        await _collect(client.send_message(review(DIFF)))
    finally:
        await session.aclose()
    return seen


def drive_listing(base_url: str) -> dict[str, Any]:
    """A test suite's traffic: four tests, each of whose messages has the same messageId
    (`REUSED_MESSAGE_ID`); the first reviews a diff and gets the task, the second reviews
    another, the third lists every task (ListTasks with no filter), the fourth reviews once
    more. Returns what the client saw."""
    result: dict[str, Any] = asyncio.run(_run_listing(base_url))
    return result
