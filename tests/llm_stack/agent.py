"""An LLM-backed A2A agent of our own (a2a-sdk 1.3), wired as real ones are: its model
through the official `openai` client (`base_url`, `api_key`), its tools through the official
`mcp` client (Streamable HTTP), both at URLs it is given.

For each message:
- a unified diff (a hunk header `@@ -a,b +c,d @@`): a task (SUBMITTED, then WORKING); the
  model is asked with the `findings` tool declared; when it calls the tool, the agent calls it
  on the MCP server (a session of its own per message) and gives the model its result; the
  model's words are the artifact `review`; COMPLETED.
- anything else: the model's answer (no tools) as a message.

`AgentSettings` also holds the knobs a test turns to inject a regression in the agent's own
code: another system prompt (a prompt template changed), `tool_arguments` (the tool called
with other arguments), `call_tools=False` (the tool call dropped), `read_answer` (the
model's answer parsed wrongly).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai
from a2a.helpers import get_message_text, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Task,
    TaskState,
    TaskStatus,
)
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from starlette.applications import Starlette

from recorder.kit import review

__all__ = ["SYSTEM_PROMPT", "AgentSettings", "LlmAgentExecutor", "create_agent_app"]

SYSTEM_PROMPT = (
    "You are a code reviewer. Call the findings tool on the user's diff, then tell the user "
    "each finding in plain words, keeping every file:line and [rule] as given."
)
QUESTION_PROMPT = "You are a code reviewer. Answer the user's question briefly."
FINDINGS_TOOL = {
    "type": "function",
    "function": {
        "name": "findings",
        "description": "The review findings of a unified diff.",
        "parameters": {
            "type": "object",
            "properties": {"diff": {"type": "string", "description": "the unified diff"}},
            "required": ["diff"],
        },
    },
}
JSONRPC_PATH = "/a2a/jsonrpc"


def _same(value: Any) -> Any:
    return value


@dataclass
class AgentSettings:
    """Where the agent's downstreams are and how it calls them (see the module docstring)."""

    model_url: str
    """The OpenAI-compatible base URL (`http://127.0.0.1:PORT/v1`)."""
    tools_url: str | None = None
    """The MCP endpoint (`http://127.0.0.1:PORT/mcp`); None: no tools."""
    api_key: str = "sk-test-0123456789abcdef"
    tools_api_key: str | None = None
    """Sent as `X-API-Key` to the MCP server."""
    model: str = "scripted-1"
    stream: bool = True
    """Whether the model's answers are streamed (SSE)."""
    mcp_mode: str = "legacy"
    """The MCP client's: "legacy" (initialize, `Mcp-Session-Id`, SSE answers) or "auto"."""
    system_prompt: str = SYSTEM_PROMPT
    tool_arguments: Callable[[dict[str, Any]], dict[str, Any]] = _same
    call_tools: bool = True
    read_answer: Callable[[str], str] = _same
    openai_options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Completion:
    """The model's answer: its text, or the tool calls it asked for (OpenAI's dicts)."""

    content: str
    tool_calls: tuple[dict[str, Any], ...] = ()


class LlmAgentExecutor(AgentExecutor):
    """The agent's executor (see the module docstring)."""

    def __init__(self, settings: AgentSettings) -> None:
        self.settings = settings
        self._model = openai.AsyncOpenAI(
            base_url=settings.model_url,
            api_key=settings.api_key,
            max_retries=0,
            **settings.openai_options,
        )

    async def aclose(self) -> None:
        await self._model.close()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        text = get_message_text(message) if message is not None else ""
        if review.classify(text) is not review.Intent.REVIEW or message is None:
            answer = await self._complete(
                [
                    {"role": "system", "content": QUESTION_PROMPT},
                    {"role": "user", "content": text},
                ],
                tools=None,
            )
            reply = self.settings.read_answer(answer.content)
            await event_queue.enqueue_event(new_text_message(reply, context_id=context.context_id))
            return
        task = Task(
            id=context.task_id,
            context_id=context.context_id,
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=[message],
        )
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        words = await self._review(text)
        await updater.add_artifact(
            parts=[new_text_part(self.settings.read_answer(words), "text/plain")], name="review"
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()

    async def _review(self, diff: str) -> str:
        settings = self.settings
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": settings.system_prompt},
            {"role": "user", "content": diff},
        ]
        tools = [FINDINGS_TOOL] if settings.tools_url and settings.call_tools else None
        answer = await self._complete(messages, tools)
        if not answer.tool_calls:
            return answer.content
        messages.append({"role": "assistant", "content": None, "tool_calls": answer.tool_calls})
        async with self._tools() as tools_client:
            for call in answer.tool_calls:
                arguments = settings.tool_arguments(json.loads(call["function"]["arguments"]))
                result = await tools_client.call_tool(call["function"]["name"], arguments)
                texts = [getattr(part, "text", "") for part in result.content]
                messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": "".join(texts)}
                )
        return (await self._complete(messages, tools)).content

    @contextlib.asynccontextmanager
    async def _tools(self) -> AsyncIterator[Client]:
        """An MCP client session with the tool server (one per review)."""
        settings = self.settings
        assert settings.tools_url is not None
        headers = {"X-API-Key": settings.tools_api_key} if settings.tools_api_key else None
        http: httpx2.AsyncClient = create_mcp_http_client(headers=headers)
        async with http:
            transport = streamable_http_client(settings.tools_url, http_client=http)
            async with Client(transport, mode=settings.mcp_mode) as client:
                yield client

    async def _complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> Completion:
        settings = self.settings
        options: dict[str, Any] = {"model": settings.model, "messages": messages}
        if tools:
            options["tools"] = tools
        if not settings.stream:
            completion = await self._model.chat.completions.create(**options)
            message = completion.choices[0].message
            calls = tuple(call.model_dump(exclude_none=True) for call in message.tool_calls or ())
            return Completion(message.content or "", calls)
        stream = await self._model.chat.completions.create(
            **options, stream=True, stream_options={"include_usage": True}
        )
        content: list[str] = []
        calls_by_index: dict[int, dict[str, Any]] = {}
        async for chunk in stream:
            for choice in chunk.choices:
                delta = choice.delta
                if delta.content:
                    content.append(delta.content)
                for part in delta.tool_calls or ():
                    call = calls_by_index.setdefault(
                        part.index,
                        {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                    )
                    if part.id:
                        call["id"] = part.id
                    if part.function is not None:
                        call["function"]["name"] += part.function.name or ""
                        call["function"]["arguments"] += part.function.arguments or ""
        calls = tuple(calls_by_index[index] for index in sorted(calls_by_index))
        return Completion("".join(content), calls)


def agent_card(base_url: str) -> AgentCard:
    """The agent's card: JSON-RPC at `{base_url}/a2a/jsonrpc`, streaming."""
    return AgentCard(
        name="llm-reviewer",
        description="A code reviewer that asks a model, and an MCP tool for its findings.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=f"{base_url.rstrip('/')}{JSONRPC_PATH}",
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="review-diff",
                name="Review a unified diff",
                description="Reviews a unified diff sent as text, in the model's words.",
                tags=["code-review"],
            )
        ],
    )


def create_agent_app(base_url: str, settings: AgentSettings) -> Starlette:
    """The agent as a Starlette app (serve it with lifespan on), reachable at `base_url`."""
    executor = LlmAgentExecutor(settings)
    card = agent_card(base_url)
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await handler.aclose()
            await executor.aclose()

    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url=JSONRPC_PATH),
    ]
    return Starlette(routes=routes, lifespan=lifespan)
