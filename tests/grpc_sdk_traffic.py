"""The a2a-sdk client on its gRPC transport, as a user drives it (no recorder headers, uuid
ids): the session of issue 26 (`session`), the streams a client abandons (`abandoned_review`,
`expired_review`), what a client saw with the generated values left out (`seen_summary`), and
the gRPC calls a recorded folder holds (`grpc_calls`). For the e2e tests that record, replay
and serve that traffic."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from a2a.client import ClientCallContext
from a2a.client.errors import A2AClientTimeoutError
from a2a.types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError
from helpers import cli_process
from sdk_clients import collect, open_client, user_message

from recorder import Transcript, load

DIFF = (
    "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,4 @@\n import os\n"
    "+# TODO: read the port from the config\n+print(os.getcwd())\n x = 1\n"
)
HEADERLESS_DIFF = "@@ -1,2 +1,3 @@\n import os\n+# FIXME: handle errors\n x = 1\n"
SLOW_DIFF = "please review slowly\n" + DIFF
CANCELED = TaskState.TASK_STATE_CANCELED


async def session(url: str, token: str, *, listing: bool = True) -> dict[str, Any]:
    """What a user does over gRPC, through the recorder (or serve, or the kit) at `url`.
    `listing`: ListTasks too (what it lists is every client's tasks: left out when several
    clients share the agent)."""
    seen: dict[str, Any] = {}
    async with await open_client(url) as client:
        seen["card"] = [(i.protocol_binding, i.url) for i in client._card.supported_interfaces]  # type: ignore[attr-defined]
        seen["question"] = await collect(client.send_message(user_message("What can you review?")))
        review = await collect(client.send_message(user_message(DIFF)))
        task_id = review[0].task.id
        seen["review"] = review
        seen["task"] = await client.get_task(GetTaskRequest(id=task_id))
        if listing:
            seen["listed"] = await client.list_tasks(ListTasksRequest())
        # CancelTask while the slow review's stream is open
        stream = client.send_message(user_message(SLOW_DIFF))
        opened = [await anext(stream), await anext(stream)]
        seen["opened"] = opened
        seen["canceled"] = await client.cancel_task(CancelTaskRequest(id=opened[0].task.id))
        seen["slow_rest"] = await collect(stream)
        # multi-turn: the file name asked for, then given
        first = await collect(client.send_message(user_message(HEADERLESS_DIFF)))
        seen["asked"] = first
        asked = first[0].task
        seen["answer"] = await collect(
            client.send_message(
                user_message("src/app.py", task_id=asked.id, context_id=asked.context_id)
            )
        )
        hook = "http://127.0.0.1:9/hook"
        config = TaskPushNotificationConfig(task_id=task_id, id="hook-1", url=hook, token="tok")
        seen["push"] = [
            await client.create_task_push_notification_config(config),
            await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task_id, id="hook-1")
            ),
            await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            ),
        ]
        await client.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="hook-1")
        )
        try:
            await client.get_task(GetTaskRequest(id="no-such-task"))
        except TaskNotFoundError as exc:
            seen["unknown"] = exc
        bearer = {"Authorization": f"Bearer {token}"}
        extended = await client.get_extended_agent_card(
            GetExtendedAgentCardRequest(), context=ClientCallContext(service_parameters=bearer)
        )
        seen["extended"] = [(i.protocol_binding, i.url) for i in extended.supported_interfaces]
    return seen


async def abandoned_review(url: str, *, read: int = 2) -> list[StreamResponse]:
    """A client that reads `read` messages of a slow streaming review, then closes its call
    (the review's task is left running)."""
    async with await open_client(url) as client:
        stream = client.send_message(user_message(SLOW_DIFF))
        opened = [await anext(stream) for _ in range(read)]
        await stream.aclose()  # type: ignore[attr-defined]
    return opened


def grpc_calls(folder: Path) -> dict[str, list[str]]:
    """File name -> the gRPC methods recorded there, in order."""
    found: dict[str, list[str]] = {}
    for path in sorted(folder.glob("*.http")):
        transcript: Transcript = load(path)
        methods = [e.request.target.rsplit("/", 1)[1] for e in transcript.exchanges]
        if any(e.request.is_grpc for e in transcript.exchanges):
            found[path.name] = methods
    return found


@contextmanager
def serving(folder: Path) -> Iterator[tuple[Any, str]]:
    """`recorder serve FOLDER` with its gRPC binding, on free ports: (the process, its URL)."""
    args = ("serve", str(folder), "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0")
    with cli_process(*args, limit=30.0) as process:
        assert process.stderr is not None
        first = process.stderr.readline()
        second = process.stderr.readline()
        url = re.search(r"on (http://\S+) ", first)
        assert url and "gRPC binding on" in second, first + second
        yield process, url.group(1)


# ------------------------------------------------------------------ what a client saw


def _event(event: StreamResponse) -> tuple[Any, ...]:
    """A stream message without its generated values: its kind, state, artifact, texts."""
    kind = event.WhichOneof("payload")
    if kind == "task":
        return (kind, *_task(event.task))
    if kind == "status_update":
        status = event.status_update.status
        return (kind, status.state, _texts(status.message.parts))
    if kind == "artifact_update":
        artifact = event.artifact_update.artifact
        return (kind, artifact.name, _texts(artifact.parts))
    if kind == "message":
        return (kind, _texts(event.message.parts))
    return (kind,)


def _texts(parts: Any) -> tuple[str, ...]:
    return tuple(part.text for part in parts)


def _task(task: Any) -> tuple[Any, ...]:
    artifacts = tuple((a.name, _texts(a.parts)) for a in task.artifacts)
    return (task.status.state, _texts(task.status.message.parts), artifacts)


def _config(config: Any) -> tuple[str, str, str, str]:
    return (type(config).__name__, config.id, config.url, config.token)


def seen_summary(seen: dict[str, Any]) -> dict[str, Any]:
    """What `session` saw, as the client sees it with the generated values (ids, timestamps,
    addresses) left out: message texts, states, artifact names, error types."""
    out: dict[str, Any] = {}
    for key, value in seen.items():
        if key in ("card", "extended"):
            out[key] = sorted(binding for binding, _ in value)
        elif key == "unknown":
            out[key] = type(value).__name__
        elif key == "listed":
            out[key] = sorted(_task(task) for task in value.tasks)
        elif key in ("task", "canceled"):
            out[key] = _task(value)
        elif key == "push":
            created, got, listed = value
            out[key] = [_config(created), _config(got), [_config(c) for c in listed.configs]]
        else:
            out[key] = [_event(event) for event in value]
    out["links"] = _links(seen)
    return out


def _links(seen: dict[str, Any]) -> dict[str, bool]:
    """Whether the ids the client was handed lead where they did from the agent: GetTask's
    task is the review's, the cancel the slow review's, the answer the asked task's."""
    links: dict[str, bool] = {}
    if "review" in seen and "task" in seen:
        links["task is the review"] = seen["task"].id == seen["review"][0].task.id
    if "opened" in seen and "canceled" in seen:
        links["canceled is the slow review"] = seen["canceled"].id == seen["opened"][0].task.id
    if "asked" in seen and "answer" in seen:
        asked = seen["asked"][0].task
        answer = seen["answer"][0].status_update
        links["answer is the asked task"] = (answer.task_id, answer.context_id) == (
            asked.id,
            asked.context_id,
        )
    return links


async def expired_review(
    url: str, *, deadline: float, streaming: bool = True
) -> tuple[list[StreamResponse], str]:
    """A client whose deadline (`deadline` seconds) expires during a slow review, streamed
    (or, not `streaming`, a unary SendMessage that waits for the review's end): (the messages
    it read, the error that ended its call)."""
    read: list[StreamResponse] = []
    async with await open_client(url, streaming=streaming) as client:
        context = ClientCallContext(timeout=deadline)
        try:
            async for event in client.send_message(user_message(SLOW_DIFF), context=context):
                read.append(event)
        except A2AClientTimeoutError as exc:
            return read, type(exc).__name__
    return read, ""


async def come_back(url: str) -> dict[str, Any]:
    """A client that abandons a slow streaming review after two messages, then (a new client,
    as after a restart) asks for its task, subscribes to it, and cancels it during the
    subscription."""
    async with await open_client(url) as client:
        stream = client.send_message(user_message(SLOW_DIFF))
        opened = [await anext(stream), await anext(stream)]
        await stream.aclose()  # type: ignore[attr-defined]
    async with await open_client(url) as client:
        task_id = opened[0].task.id
        task = await client.get_task(GetTaskRequest(id=task_id))
        subscription = client.subscribe(SubscribeToTaskRequest(id=task_id))
        first = await anext(subscription)
        canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
        rest = await collect(subscription)
    return {"opened": opened, "task": task, "followed": [first, *rest], "canceled": canceled}
