"""A client that makes its own ids, afresh on every run, as conformance suites do.

`drive_own_ids(base_url)` runs one fixed conversation with the real a2a-sdk client (JSON-RPC,
no scenario header) where the client picks values the agent does not: uuid4 message ids and
JSON-RPC ids (the SDK's), a contextId of its own, ids with a per-run random suffix
(`tck-question-af33c277`, a task id `tck-nonexistent-err-test-af33c277` that does not exist),
a taskId it makes up, a uuid inside a text, a push config with an id it picks on a webhook
of its own port, and the same request sent three times (each
answered on its own task, the follow-ups sent in reverse order). It returns what the client
saw with every id set aside, so a run against the agent and a run against `recorder serve` of
another run's recording compare equal.

Every wait is bounded (`LIMIT` seconds); every address is on loopback.
"""

from __future__ import annotations

import asyncio
import socket
import uuid
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_message_text, new_text_message
from a2a.types import (
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from traffic import DIFF, DIFF_WITHOUT_FILE_NAME, QUESTION

__all__ = ["LIMIT", "drive_own_ids"]

LIMIT = 10.0  # seconds: the bound of every call


def _message(
    text: str,
    *,
    message_id: str | None = None,
    context_id: str | None = None,
    task_id: str | None = None,
) -> Message:
    message = new_text_message(text, role=Role.ROLE_USER, task_id=task_id, context_id=context_id)
    if message_id is not None:
        message.message_id = message_id
    return message


async def _bounded(call: Any) -> Any:
    return await asyncio.wait_for(call, LIMIT)


async def _events(client: Any, message: Message) -> list[StreamResponse]:
    async def read() -> list[StreamResponse]:
        return [event async for event in client.send_message(SendMessageRequest(message=message))]

    return await _bounded(read())


def _task(events: list[StreamResponse]) -> Task:
    tasks = [event.task for event in events if event.HasField("task")]
    assert tasks, f"no task in {events}"
    return tasks[-1]


def _state(task: Task) -> str:
    return TaskState.Name(task.status.state)


async def _error(call: Any) -> str:
    """The class name of the error the call raised ("no error" when none)."""
    try:
        await _bounded(call)
    except TimeoutError:
        raise
    except Exception as exc:  # the error is the answer
        return type(exc).__name__
    return "no error"


async def _run(base_url: str) -> dict[str, Any]:
    suffix = uuid.uuid4().hex[:8]  # this run's own: another run has another
    seen: dict[str, Any] = {}
    http = httpx.AsyncClient(timeout=LIMIT, headers={"A2A-Version": "1.0"})
    try:
        card = await _bounded(A2ACardResolver(http, base_url).get_agent_card())
        config = ClientConfig(
            httpx_client=http, streaming=False, supported_protocol_bindings=["JSONRPC"]
        )
        client = ClientFactory(config).create(card)
        context = str(uuid.uuid4())  # a context the client starts itself

        question = _message(QUESTION, message_id=f"tck-question-{suffix}", context_id=context)
        events = await _events(client, question)
        seen["question"] = [get_message_text(event.message) for event in events]

        review = _task(await _events(client, _message(DIFF, context_id=context)))
        seen["review"] = (_state(review), [artifact.name for artifact in review.artifacts])
        got = await _bounded(client.get_task(GetTaskRequest(id=review.id)))
        seen["get_task"] = (got.id == review.id, _state(got))
        listed = await _bounded(client.list_tasks(ListTasksRequest(context_id=context)))
        seen["listed"] = [task.id == review.id for task in listed.tasks]

        # a push config whose id the client picks, on a webhook of this run's own port
        hook = socket.socket()
        hook.bind(("127.0.0.1", 0))
        webhook = f"http://127.0.0.1:{hook.getsockname()[1]}/hook-{suffix}"
        try:
            config = TaskPushNotificationConfig(task_id=review.id, id=f"push-{suffix}", url=webhook)
            made = await _bounded(client.create_task_push_notification_config(config))
            fetched = await _bounded(
                client.get_task_push_notification_config(
                    GetTaskPushNotificationConfigRequest(task_id=review.id, id=made.id)
                )
            )
            seen["push"] = (made.id == f"push-{suffix}", fetched.url == webhook)
        finally:
            hook.close()

        missing = f"tck-nonexistent-err-test-{suffix}"
        seen["missing_task"] = await _error(client.get_task(GetTaskRequest(id=missing)))
        made_up = _message("src/app.py", task_id=str(uuid.uuid4()))
        seen["made_up_task"] = await _error(_events(client, made_up))
        quoted = _message(f"{QUESTION} (see {uuid.uuid4()})")
        seen["quoted_uuid"] = [get_message_text(e.message) for e in await _events(client, quoted)]

        # the same request three times: three tasks, each asking for its file name; the
        # answers go in reverse order, each with its own name
        asking = [_task(await _events(client, _message(DIFF_WITHOUT_FILE_NAME))) for _ in range(3)]
        seen["asking"] = [_state(task) for task in asking]
        answers = []
        for number, task in reversed(list(enumerate(asking))):
            answer = _message(f"src/stats{number}.py", task_id=task.id, context_id=task.context_id)
            done = _task(await _events(client, answer))
            text = "\n".join(part.text for artifact in done.artifacts for part in artifact.parts)
            answers.append((done.id == task.id, _state(done), f"src/stats{number}.py" in text))
        seen["answers"] = answers
        await client.close()
    finally:
        await http.aclose()
    return seen


def drive_own_ids(base_url: str) -> dict[str, Any]:
    """Run the conversation against `base_url`; what the client saw, ids set aside."""
    result: dict[str, Any] = asyncio.run(_run(base_url))
    return result
