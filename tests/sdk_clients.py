"""The a2a-sdk client as the tests drive an agent with it (the kit, the recorder in front of
it, the stand-in): a client for one binding, a user's message, a stream read to its end, and
what a stream's events are. One copy for every test module."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers import new_text_message
from a2a.types import Role, SendMessageRequest, StreamResponse, TaskState

__all__ = ["collect", "kinds", "open_client", "state_of", "user_message"]


async def open_client(url: str, binding: str = "GRPC", *, streaming: bool = True) -> Client:
    """The SDK's client of the agent whose card is at `url`, on `binding` (`JSONRPC`,
    `HTTP+JSON`, `GRPC`: an insecure channel, as on loopback)."""
    config = ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=[binding],
        grpc_channel_factory=grpc.aio.insecure_channel,
    )
    return await create_client(url, client_config=config)


def user_message(text: str, *, task_id: str = "", context_id: str = "") -> SendMessageRequest:
    """A user's text message (a random uuid4 messageId, as SDK users send)."""
    message = new_text_message(text, role=Role.ROLE_USER, task_id=task_id, context_id=context_id)
    return SendMessageRequest(message=message)


async def collect(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    """Every event of `stream`, read to its end."""
    return [event async for event in stream]


def kinds(events: list[StreamResponse]) -> list[str | None]:
    """Each event's payload kind: `task`, `message`, `status_update`, `artifact_update`."""
    return [event.WhichOneof("payload") for event in events]


def state_of(event: StreamResponse) -> TaskState.ValueType:
    """The task state a `task` or `status_update` event carries."""
    if event.HasField("task"):
        return event.task.status.state
    return event.status_update.status.state
