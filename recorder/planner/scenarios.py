"""The planner's scenarios: the conversations with the kit that become `transcripts/`.

Each scenario is one file, in this order (the numbers are the file numbers; the guide cites
`02-message-reply.http` and exchange 3 of `11-errors.http`). Every file is self-contained: it
creates the tasks it then reads, lists (scoped by its own contextId), cancels or subscribes to,
so it replays alone against a fresh kit.

The calls go through the real a2a-sdk client wherever the SDK can make them, and through raw
httpx for what an SDK will not send (a missing A2A-Version, the old method name, malformed
JSON, invalid params). Values the client chooses are fixed so that a re-recording differs only
in what the agent generates: the user `messageId`s are `<scenario>-<n>`, and the JSON-RPC ids
are 1, 2, 3 ... per file (`Session` renumbers the SDK's uuid4 ids on the way out, see
`StableJsonRpcIds`).

One scenario overlaps calls on purpose (`subscribe`): its CancelTask is sent while the
SubscribeToTask stream is open, after the stream's first frame arrived; the stream then ends
with the CANCELED update. The recorder writes this down as `# @during exchange 2 frame 1` on
the CancelTask, and the player sends it at the same point (without waiting for the stream to
end, which would take the slow review's 30 s and end COMPLETED instead).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
from a2a.client import (
    A2ACardResolver,
    A2AClientError,
    Client,
    ClientCallContext,
    ClientConfig,
    ClientFactory,
)
from a2a.types import (
    AgentCard,
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError

from recorder.bindings.jsonrpc import BINDING as JSONRPC
from recorder.bindings.rest import BINDING as REST
from recorder.planner.webhook import Webhook

__all__ = ["SCENARIOS", "Scenario", "Session", "StableJsonRpcIds"]

LIMIT = 20.0  # seconds: the bound of every wait for a frame

QUESTION = "What languages can you review?"
DIFF = (
    "--- a/src/payments.py\n"
    "+++ b/src/payments.py\n"
    "@@ -10,3 +10,6 @@ def charge(amount):\n"
    "     if amount <= 0:\n"
    "         raise ValueError(amount)\n"
    '+    api_key = "sk-demo-1234"  # TODO: read it from the environment\n'
    "+    print(amount)\n"
    "+    return gateway.charge(amount, api_key)\n"
    "     return None\n"
)
DIFF_WITHOUT_FILE_NAME = (
    "@@ -1,2 +1,3 @@\n"
    " def total(items):\n"
    "+    # FIXME: handle an empty list\n"
    "     return sum(items)\n"
)
SLOW_DIFF = (
    "please review slowly\n"
    "--- a/src/report.py\n"
    "+++ b/src/report.py\n"
    "@@ -1,1 +1,2 @@\n"
    " import csv\n"
    "+import json\n"
)
WEBHOOK = "http://localhost:41299/webhook"  # loopback; the kit never delivers to it here
UNKNOWN_TASK = "00000000-0000-4000-8000-000000000000"
EXTENSION = "https://a2a.example/extensions/review-depth/v1"

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class StableJsonRpcIds(httpx.AsyncBaseTransport):
    """Gives JSON-RPC requests the ids 1, 2, 3 ... in the order they are sent.

    The a2a-sdk client picks a fresh uuid4 for every JSON-RPC id and offers no way to choose
    it; a transcript should not change on every recording for that. Only uuid-shaped ids (the
    SDK's) are replaced; a request that set its own id (`Session.raw_jsonrpc`) keeps it but
    still takes a number. The SDK does not compare the reply's id with the one it sent.
    """

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner
        self._next = 1

    def take(self) -> int:
        number = self._next
        self._next += 1
        return number

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and "json" in request.headers.get("content-type", ""):
            body = await request.aread()
            try:
                value = json.loads(body)
            except ValueError:
                value = None
            if (
                isinstance(value, dict)
                and value.get("jsonrpc") == "2.0"
                and isinstance(value.get("id"), str)
                and _UUID.match(value["id"])
            ):
                value["id"] = self.take()
                content = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
                headers = [(n, v) for n, v in request.headers.raw if n.lower() != b"content-length"]
                renumbered = httpx.Request(
                    request.method, request.url, headers=headers, content=content
                )
                renumbered.extensions = request.extensions
                request = renumbered
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


class Session:
    """One scenario's connection to the recorder: every request carries `Recorder-Scenario`.
    `webhook`: the client's push-notification receiver (`run.py` starts one for the run)."""

    webhook: Webhook | None = None

    def __init__(self, scenario: str, proxy_url: str, *, token: str, card: AgentCard | None):
        self.scenario = scenario
        self.proxy_url = proxy_url
        self.token = token
        self.card = card
        self.ids = StableJsonRpcIds(httpx.AsyncHTTPTransport())
        self.http = httpx.AsyncClient(transport=self.ids, timeout=LIMIT)
        # only what the client means to send: none of httpx's defaults (User-Agent, Accept,
        # Accept-Encoding, Connection), so the transcripts show the A2A headers alone
        self.http.headers.clear()
        self.http.headers["Recorder-Scenario"] = scenario
        self._messages = 0
        self._clients: list[Client] = []
        self.grpc_address: str | None = None  # the recorder's gRPC listener (`grpc_scenarios`)

    def title(self, text: str) -> None:
        """The description of the next exchange(s) (`### Operation: text`)."""
        self.http.headers["Recorder-Title"] = text

    def message(
        self, text: str, *, task_id: str | None = None, context_id: str | None = None
    ) -> Message:
        self._messages += 1
        message = Message(
            message_id=f"{self.scenario}-{self._messages}",
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
        )
        if task_id:
            message.task_id = task_id
        if context_id:
            message.context_id = context_id
        return message

    def send(self, message: Message, *, return_immediately: bool = False) -> SendMessageRequest:
        request = SendMessageRequest(message=message)
        if return_immediately:
            request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
        return request

    async def fetch_card(self) -> AgentCard:
        self.http.headers.setdefault("A2A-Version", "1.0")  # as the SDK's client factory does
        resolver = A2ACardResolver(self.http, self.proxy_url)
        card: AgentCard = await resolver.get_agent_card()
        return card

    def client(self, *, streaming: bool = False, binding: str = JSONRPC) -> Client:
        """An a2a-sdk client built from the card the proxy relayed (its URLs name the proxy)."""
        if self.card is None:
            raise RuntimeError("the agent-card scenario runs first and fetches the card")
        config = ClientConfig(
            httpx_client=self.http, streaming=streaming, supported_protocol_bindings=[binding]
        )
        client = ClientFactory(config).create(self.card)
        self._clients.append(client)
        return client

    def add_client(self, client: Client) -> None:
        """A client made elsewhere (`grpc_scenarios`), closed with the session."""
        self._clients.append(client)

    async def raw_jsonrpc(
        self,
        body: dict[str, Any] | bytes,
        *,
        version: str | None = "1.0",
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        """A JSON-RPC POST the SDK would not send; a dict body gets the next id."""
        if isinstance(body, dict):
            body = {"jsonrpc": "2.0", "id": self.ids.take(), **body}
            content = json.dumps(body).encode()
        else:
            self.ids.take()
            content = body
        sent = {"Content-Type": "application/json", **(headers or {})}
        if version is not None:
            sent["A2A-Version"] = version
        # the default A2A-Version (set by the SDK's factory) must not creep into these calls
        request = self.http.build_request(
            "POST", f"{self.proxy_url}/a2a/jsonrpc", content=content, headers=sent
        )
        if version is None and "A2A-Version" in request.headers:
            del request.headers["A2A-Version"]
        return await self.http.send(request)

    async def aclose(self) -> None:
        for client in self._clients:
            await client.close()
        await self.http.aclose()


# --------------------------------------------------------------------------- helpers


async def _collect(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    return [event async for event in stream]


def _task_of(events: list[StreamResponse]) -> Task:
    for event in events:
        if event.HasField("task"):
            return event.task
    raise AssertionError("the agent answered without a task")


async def _send_blocking(session: Session, client: Client, message: Message) -> Task:
    events = await _collect(client.send_message(session.send(message)))
    return _task_of(events)


async def _overlap_cancel(
    session: Session,
    stream: AsyncIterator[StreamResponse],
    task_id: str,
    *,
    frames_before_cancel: int,
) -> tuple[list[StreamResponse], Task]:
    """Read frames from an open stream, cancel the task while it is open, read the rest."""
    seen: list[StreamResponse] = []
    for _ in range(frames_before_cancel):
        seen.append(await asyncio.wait_for(anext(stream), LIMIT))
    session.title("cancel the review while the stream is open")
    canceled = await session.client().cancel_task(CancelTaskRequest(id=task_id))
    seen.extend(await asyncio.wait_for(_collect(stream), LIMIT))
    return seen, canceled


async def _expect_error(
    call: Awaitable[Any], error: type[Exception], what: str, *, containing: str = ""
) -> None:
    """The SDK raises `error` for the error reply the scenario provokes; the exchange itself is
    what gets recorded. Any other failure (a proxy 502, a timeout) is not the expected answer
    and stops the recording."""
    try:
        await call
    except error as exc:
        if containing in str(exc):
            return
        raise AssertionError(f"the kit did not answer as expected: {what}: {exc!r}") from exc
    raise AssertionError(f"the kit did not answer with an error: {what}")


def _json_rpc_outcome(reply: httpx.Response) -> str:
    """`result`, or the JSON-RPC error code as text (e.g. "-32009"), of a raw reply."""
    try:
        body = reply.json()
    except ValueError:
        return f"HTTP {reply.status_code}, not JSON"
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("code"))
    return "result" if isinstance(body, dict) and "result" in body else f"{body!r:.80}"


def _expect_outcome(reply: httpx.Response, expected: str, what: str) -> None:
    outcome = _json_rpc_outcome(reply)
    _check(outcome == expected, f"{what}: expected {expected}, got {outcome}")


def _check(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(f"the kit did not behave as the scenario expects: {what}")


# --------------------------------------------------------------------------- scenarios


async def agent_card(session: Session) -> None:
    session.title("discover the code-reviewer and its interfaces")
    session.card = await session.fetch_card()


async def message_reply(session: Session) -> None:
    session.title("ask which languages the reviewer knows")
    events = await _collect(session.client().send_message(session.send(session.message(QUESTION))))
    _check(len(events) == 1 and events[0].HasField("message"), "a direct message, no task")


async def review_task(session: Session) -> None:
    session.title("send a diff and wait for the review (blocking)")
    task = await _send_blocking(session, session.client(), session.message(DIFF))
    _check(task.status.state == 3, "the review completes")  # TASK_STATE_COMPLETED


async def streaming(session: Session) -> None:
    session.title("send a diff and watch the review as a stream")
    client = session.client(streaming=True)
    events = await _collect(client.send_message(session.send(session.message(DIFF))))
    _check(len(events) >= 3, "task, status and artifact updates")


async def input_required(session: Session) -> None:
    session.title("a diff without a file name: the reviewer asks for it")
    client = session.client()
    task = await _send_blocking(session, client, session.message(DIFF_WITHOUT_FILE_NAME))
    _check(task.status.state == 6, "INPUT_REQUIRED")
    session.title("answer with the file name on the same task")
    follow_up = session.message("src/totals.py", task_id=task.id, context_id=task.context_id)
    done = await _send_blocking(session, client, follow_up)
    _check(done.status.state == 3, "the follow-up completes the review")


async def get_and_list_tasks(session: Session) -> None:
    client = session.client()
    session.title("create a review task to read back")
    task = await _send_blocking(session, client, session.message(DIFF))
    session.title("read the task back with its last message only")
    await client.get_task(GetTaskRequest(id=task.id, history_length=1))
    session.title("list the tasks of this conversation (contextId)")
    listed = await client.list_tasks(ListTasksRequest(context_id=task.context_id))
    _check([t.id for t in listed.tasks] == [task.id], "ListTasks scoped by contextId")


async def cancel_task(session: Session) -> None:
    client = session.client()
    session.title("start a slow review without waiting for it")
    reply = client.send_message(session.send(session.message(SLOW_DIFF), return_immediately=True))
    task = _task_of(await _collect(reply))
    session.title("the review is in progress")
    await client.get_task(GetTaskRequest(id=task.id))
    session.title("cancel it")
    canceled = await client.cancel_task(CancelTaskRequest(id=task.id))
    _check(canceled.status.state == 5, "CANCELED")  # TASK_STATE_CANCELED


async def subscribe(session: Session) -> None:
    client = session.client(streaming=True)
    session.title("start a slow review without waiting for it")
    start = session.client().send_message(
        session.send(session.message(SLOW_DIFF), return_immediately=True)
    )
    task = _task_of(await _collect(start))
    session.title("subscribe to the review in progress")
    stream = client.subscribe(SubscribeToTaskRequest(id=task.id))
    seen, canceled = await _overlap_cancel(session, stream, task.id, frames_before_cancel=1)
    _check(canceled.status.state == 5, "CANCELED")
    _check(seen[-1].HasField("status_update"), "the stream ends with the CANCELED update")


async def push_notification_configs(session: Session) -> None:
    client = session.client()
    session.title("create a review task to attach a webhook to")
    task = await _send_blocking(session, client, session.message(DIFF))
    config = TaskPushNotificationConfig(
        task_id=task.id, id="planner-webhook", url=WEBHOOK, token="planner-verification"
    )
    session.title("register a webhook for the task")
    await client.create_task_push_notification_config(config)
    session.title("read it back")
    await client.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=task.id, id="planner-webhook")
    )
    session.title("list the task's webhooks")
    await client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id)
    )
    session.title("delete it")
    await client.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="planner-webhook")
    )
    session.title("the list is empty again")
    listed = await client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id)
    )
    _check(len(listed.configs) == 0, "no webhook left")


async def extended_card(session: Session) -> None:
    client = session.client()
    session.title("without a token the agent refuses")
    await _expect_error(
        client.get_extended_agent_card(GetExtendedAgentCardRequest()),
        A2AClientError,
        "401 without a token",
        containing="HTTP Error 401",
    )
    session.title("with the bearer token")
    context = ClientCallContext(service_parameters={"Authorization": f"Bearer {session.token}"})
    await client.get_extended_agent_card(GetExtendedAgentCardRequest(), context=context)


async def errors(session: Session) -> None:
    client = session.client()
    session.title("GetTask with an id the agent never issued (-32001)")
    await _expect_error(
        client.get_task(GetTaskRequest(id=UNKNOWN_TASK)), TaskNotFoundError, "task not found"
    )
    session.title("no A2A-Version header: read as 0.3 and refused (-32009)")
    reply = await session.raw_jsonrpc(
        {"method": "SendMessage", "params": {"message": _user_message(session, QUESTION)}},
        version=None,
    )
    _expect_outcome(reply, "-32009", "no A2A-Version")
    session.title("the 0.3 name message/send is not a 1.0 method (-32601)")
    reply = await session.raw_jsonrpc(
        {
            "method": "message/send",
            "params": {
                "message": {
                    "kind": "message",
                    "messageId": f"{session.scenario}-legacy",
                    "role": "user",
                    "parts": [{"kind": "text", "text": QUESTION}],
                }
            },
        }
    )
    _expect_outcome(reply, "-32601", "message/send")
    session.title("malformed JSON (-32700)")
    reply = await session.raw_jsonrpc(
        b'{"jsonrpc": "2.0", "id": 4, "method": "SendMessage", "params": '
    )
    _expect_outcome(reply, "-32700", "malformed JSON")
    session.title("a message without parts (-32602)")
    reply = await session.raw_jsonrpc(
        {
            "method": "SendMessage",
            "params": {"message": {"messageId": f"{session.scenario}-empty", "role": "ROLE_USER"}},
        }
    )
    _expect_outcome(reply, "-32602", "a message without parts")
    session.title("a finished review to misuse")
    task = await _send_blocking(session, client, session.message(DIFF))
    session.title("cancel a completed task (-32002)")
    await _expect_error(
        client.cancel_task(CancelTaskRequest(id=task.id)), TaskNotCancelableError, "not cancelable"
    )
    session.title("another message to the completed task (-32004)")
    again = session.message("one more thing", task_id=task.id, context_id=task.context_id)
    await _expect_error(
        _send_blocking(session, client, again), UnsupportedOperationError, "terminal task"
    )


def _user_message(session: Session, text: str) -> dict[str, Any]:
    session._messages += 1
    return {
        "messageId": f"{session.scenario}-{session._messages}",
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }


async def service_parameters(session: Session) -> None:
    session.title("A2A-Version 1.0 and an A2A-Extensions request")
    context = ClientCallContext(service_parameters={"A2A-Extensions": EXTENSION})
    events = await _collect(
        session.client().send_message(session.send(session.message(QUESTION)), context=context)
    )
    _check(events[0].HasField("message"), "a direct message")
    session.title("A2A-Version 1.1: same major version, accepted")
    reply = await session.raw_jsonrpc(
        {"method": "SendMessage", "params": {"message": _user_message(session, QUESTION)}},
        version="1.1",
    )
    _expect_outcome(reply, "result", "A2A-Version 1.1")
    session.title("A2A-Version 2.0: refused (-32009)")
    reply = await session.raw_jsonrpc(
        {"method": "SendMessage", "params": {"message": _user_message(session, QUESTION)}},
        version="2.0",
    )
    _expect_outcome(reply, "-32009", "A2A-Version 2.0")


async def rest_message_reply(session: Session) -> None:
    session.title("ask which languages the reviewer knows, over HTTP+JSON")
    client = session.client(binding=REST)
    events = await _collect(client.send_message(session.send(session.message(QUESTION))))
    _check(events[0].HasField("message"), "a direct message")


async def rest_review_task(session: Session) -> None:
    session.title("send a diff and wait for the review, over HTTP+JSON")
    task = await _send_blocking(session, session.client(binding=REST), session.message(DIFF))
    _check(task.status.state == 3, "COMPLETED")


async def rest_streaming(session: Session) -> None:
    session.title("watch a review as a stream, over HTTP+JSON")
    client = session.client(streaming=True, binding=REST)
    events = await _collect(client.send_message(session.send(session.message(DIFF))))
    _check(len(events) >= 3, "task, status and artifact updates")


async def rest_tasks(session: Session) -> None:
    client = session.client(binding=REST)
    session.title("create a review task to read back")
    task = await _send_blocking(session, client, session.message(DIFF))
    session.title("read it back")
    await client.get_task(GetTaskRequest(id=task.id, history_length=1))
    session.title("list the tasks of this conversation")
    await client.list_tasks(ListTasksRequest(context_id=task.context_id))
    session.title("start a slow review without waiting for it")
    reply = client.send_message(session.send(session.message(SLOW_DIFF), return_immediately=True))
    slow = _task_of(await _collect(reply))
    session.title("cancel it")
    canceled = await client.cancel_task(CancelTaskRequest(id=slow.id))
    _check(canceled.status.state == 5, "CANCELED")
    session.title("a task id the agent never issued (404)")
    await _expect_error(
        client.get_task(GetTaskRequest(id=UNKNOWN_TASK)), TaskNotFoundError, "task not found"
    )


PUSH_PATH = "/.planner/push/q7Xk2mP9vL4tR8sW3nZ5"  # a secret-looking segment, as tools make
PUSH_TOKEN = "planner-push-token"
PUSH_CREDENTIALS = "planner-push-credentials"


async def push_notifications(session: Session) -> None:
    # Each push is waited for before the next request: the agent sends a task's updates one
    # after another, and its last one (INPUT_REQUIRED, COMPLETED) may come after its reply,
    # so the recorder's arrival order is the same on every run.
    hook = session.webhook
    if hook is None:
        raise RuntimeError("the push scenario needs the planner's webhook (Session.webhook)")
    client = session.client()
    config = TaskPushNotificationConfig(
        url=hook.url(PUSH_PATH),
        token=PUSH_TOKEN,
        authentication=AuthenticationInfo(scheme="Bearer", credentials=PUSH_CREDENTIALS),
    )
    session.title("a diff without a file name, with a webhook for its task")
    request = session.send(session.message(DIFF_WITHOUT_FILE_NAME))
    request.configuration.task_push_notification_config.CopyFrom(config)
    task = _task_of(await _collect(client.send_message(request)))
    _check(task.status.state == 6, "INPUT_REQUIRED")
    asked = await hook.wait_for_state("TASK_STATE_INPUT_REQUIRED", timeout=LIMIT)
    session.title("answer with the file name: the review's updates are pushed too")
    follow_up = session.message("src/totals.py", task_id=task.id, context_id=task.context_id)
    done = await _send_blocking(session, client, follow_up)
    _check(done.status.state == 3, "the follow-up completes the review")
    pushed = await hook.wait_for_state("TASK_STATE_COMPLETED", after=len(asked), timeout=LIMIT)
    _check({d.headers.get("x-a2a-notification-token") for d in pushed} == {PUSH_TOKEN}, "token")
    _check({d.path for d in pushed} == {PUSH_PATH}, "every push reached the webhook's path")


@dataclass(frozen=True)
class Scenario:
    """One transcript file: its name (the slug) and the conversation that fills it."""

    name: str
    run: Callable[[Session], Awaitable[None]]
    binding: str = JSONRPC  # GRPC: through the recorder's gRPC listener (`grpc_scenarios`)


# in file-number order: 01-agent-card.http, 02-message-reply.http, ..., 11-errors.http, ...
SCENARIOS: tuple[Scenario, ...] = (
    Scenario("agent-card", agent_card),
    Scenario("message-reply", message_reply),
    Scenario("review-task", review_task),
    Scenario("streaming", streaming),
    Scenario("input-required", input_required),
    Scenario("get-and-list-tasks", get_and_list_tasks),
    Scenario("cancel-task", cancel_task),
    Scenario("subscribe", subscribe),
    Scenario("push-notification-configs", push_notification_configs),
    Scenario("extended-card", extended_card),
    Scenario("errors", errors),
    Scenario("service-parameters", service_parameters),
    Scenario("rest-message-reply", rest_message_reply),
    Scenario("rest-review-task", rest_review_task),
    Scenario("rest-streaming", rest_streaming),
    Scenario("rest-tasks", rest_tasks),
    Scenario("push-notifications", push_notifications),
)
