"""The planner's gRPC scenarios (issue 26): A2A's third binding, recorded through the
recorder's gRPC listener with the a2a-sdk client on its gRPC transport.

They come after the HTTP scenarios (`recorder.planner.scenarios`) and, like them, each file is
self-contained. The scenario and the titles travel as the metadata `recorder-scenario` and
`recorder-title` (what the `Recorder-Scenario` and `Recorder-Title` headers are over HTTP); the
listener strips them before the call goes on. The kit's public card, fetched by the first
scenario through the recorder, lists its GRPC interface rewritten to the recorder's gRPC
listener (`Session.grpc_address`): the gRPC client is made from that card, as a user's is.
"""

from __future__ import annotations

from a2a.client import Client, ClientCallContext, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    StreamResponse,
    Task,
)
from a2a.utils.errors import TaskNotFoundError

from recorder.bindings.grpc import BINDING as GRPC
from recorder.planner.scenarios import (
    DIFF,
    QUESTION,
    SLOW_DIFF,
    UNKNOWN_TASK,
    Scenario,
    Session,
)

__all__ = ["GRPC", "GRPC_SCENARIOS"]


def _context(session: Session) -> ClientCallContext:
    """The call's metadata: its scenario and its title (the session's HTTP headers)."""
    sent = {
        name.lower(): session.http.headers[name]
        for name in ("Recorder-Scenario", "Recorder-Title")
        if name in session.http.headers
    }
    return ClientCallContext(service_parameters=sent)


def _client(session: Session, *, streaming: bool = False) -> Client:
    """An a2a-sdk client on its gRPC transport, to the recorder's gRPC listener."""
    import grpc.aio

    if session.card is None:
        raise RuntimeError("the gRPC scenarios need the card (the first scenario fetches it)")
    listed = [i.url for i in session.card.supported_interfaces if i.protocol_binding == GRPC]
    if listed != [session.grpc_address]:
        # the recorder rewrites the card's GRPC interface to its listener: else the calls
        # would go around it, unrecorded
        raise RuntimeError(
            f"the card lists the GRPC interfaces {listed}, not the recorder's gRPC listener "
            f"{session.grpc_address}"
        )
    config = ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=[GRPC],
        grpc_channel_factory=grpc.aio.insecure_channel,
    )
    client = ClientFactory(config).create(session.card)
    session.add_client(client)
    return client


async def _events(session: Session, client: Client, message: Message) -> list[StreamResponse]:
    request = session.send(message)
    return [event async for event in client.send_message(request, context=_context(session))]


def _task(events: list[StreamResponse]) -> Task:
    for event in events:
        if event.HasField("task"):
            return event.task
    raise AssertionError("the agent answered without a task")


def _check(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(f"the kit did not answer as expected: {what}")


async def grpc_message_reply(session: Session) -> None:
    session.title("ask which languages the reviewer knows, over gRPC (SendMessage)")
    events = await _events(session, _client(session), session.message(QUESTION))
    _check(len(events) == 1 and events[0].HasField("message"), "a direct message, no task")


async def grpc_streaming(session: Session) -> None:
    session.title("send a diff and watch the review as a gRPC stream")
    events = await _events(session, _client(session, streaming=True), session.message(DIFF))
    _check(len(events) >= 3, "task, status and artifact updates")


async def grpc_get_task(session: Session) -> None:
    client = _client(session)
    session.title("send a diff and wait for the review, over gRPC")
    task = _task(await _events(session, client, session.message(DIFF)))
    _check(task.status.state == 3, "the review completes")  # TASK_STATE_COMPLETED
    session.title("read the task back with its last message only")
    await client.get_task(GetTaskRequest(id=task.id, history_length=1), context=_context(session))


async def grpc_cancel_task(session: Session) -> None:
    client = _client(session)
    session.title("start a slow review without waiting for it, over gRPC")
    message = session.message(SLOW_DIFF)
    request = session.send(message, return_immediately=True)
    events = [e async for e in client.send_message(request, context=_context(session))]
    task = _task(events)
    session.title("cancel it")
    canceled = await client.cancel_task(CancelTaskRequest(id=task.id), context=_context(session))
    _check(canceled.status.state == 5, "CANCELED")  # TASK_STATE_CANCELED


async def grpc_errors(session: Session) -> None:
    client = _client(session)
    session.title("a task id the agent never issued (NOT_FOUND)")
    try:
        await client.get_task(GetTaskRequest(id=UNKNOWN_TASK), context=_context(session))
    except TaskNotFoundError:
        return
    raise AssertionError("the kit did not answer GetTask of an unknown task with NOT_FOUND")


GRPC_SCENARIOS: tuple[Scenario, ...] = (
    Scenario("grpc-message-reply", grpc_message_reply, binding=GRPC),
    Scenario("grpc-streaming", grpc_streaming, binding=GRPC),
    Scenario("grpc-get-task", grpc_get_task, binding=GRPC),
    Scenario("grpc-cancel-task", grpc_cancel_task, binding=GRPC),
    Scenario("grpc-errors", grpc_errors, binding=GRPC),
)
