"""The test stack of an LLM-backed agent (`tests/llm_stack`), on its own: the scripted model
answers as the OpenAI API does (JSON and SSE, tool calls, usage), its words vary from one
answer to the next and repeat for the same seed; the MCP server answers the official client;
the agent, driven by the a2a-sdk client, reviews through both."""

from __future__ import annotations

import asyncio
import json

import httpx
import openai
import pytest
from a2a.client import create_client
from a2a.helpers import get_message_text, new_text_message
from a2a.types import Role, SendMessageRequest
from llm_stack import AgentSettings, start_agent, start_model, start_tools
from llm_stack.tools import findings_of
from mcp.client.client import Client

KEY = "sk-test-0123456789abcdef"
DIFF = (
    "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,3 @@\n import os\n"
    "+print('debug')  # TODO remove\n x = 1\n"
)


def _ask(url: str, *, stream: bool, tools: bool = False, key: str = KEY) -> httpx.Response:
    body: dict[str, object] = {
        "model": "scripted-1",
        "messages": [{"role": "user", "content": DIFF}],
        "stream": stream,
    }
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": "findings",
                    "parameters": {"type": "object", "required": ["diff"]},
                },
            }
        ]
    if stream:
        body["stream_options"] = {"include_usage": True}
    headers = {"Authorization": f"Bearer {key}"}
    return httpx.post(url + "/v1/chat/completions", json=body, headers=headers, timeout=10)


def test_the_model_answers_json_and_sse_and_words_each_answer_anew() -> None:
    review = json.dumps(findings_of(DIFF))
    with start_model(seed=3, api_key=KEY) as model:
        words = [model.app.answer({"messages": [{"role": "tool", "content": review}]})]
        words.append(model.app.answer({"messages": [{"role": "tool", "content": review}]}))
        plain = _ask(model.url, stream=False)
        streamed = _ask(model.url, stream=True)
        refused = _ask(model.url, stream=False, key="sk-wrong")
    assert words[0] != words[1]
    for answer in words:
        assert "src/app.py:2" in answer["content"] and "[debug-print]" in answer["content"]
    body = plain.json()
    assert body["object"] == "chat.completion" and body["id"].startswith("chatcmpl-")
    assert body["usage"]["total_tokens"] == sum(
        body["usage"][k] for k in ("prompt_tokens", "completion_tokens")
    )
    assert streamed.headers["content-type"].startswith("text/event-stream")
    frames = [line[6:] for line in streamed.text.split("\n") if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    chunks = [json.loads(frame) for frame in frames[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert "usage" in chunks[-1] and chunks[-1]["choices"] == []
    assert len(chunks) > 4  # a frame per token
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
    with start_model(seed=3) as again:
        assert again.app.answer({"messages": [{"role": "tool", "content": review}]}) == words[0]


def test_the_model_calls_the_declared_tool_with_the_users_text() -> None:
    with start_model(api_key=KEY) as model:
        for stream in (False, True):
            client = openai.OpenAI(base_url=model.url + "/v1", api_key=KEY, max_retries=0)
            tools = [
                {
                    "type": "function",
                    "function": {
                        "name": "findings",
                        "parameters": {
                            "type": "object",
                            "properties": {"diff": {"type": "string"}},
                            "required": ["diff"],
                        },
                    },
                }
            ]
            messages = [{"role": "user", "content": DIFF}]
            if stream:
                pieces = [
                    call.function.arguments
                    for chunk in client.chat.completions.create(
                        model="m", messages=messages, tools=tools, stream=True
                    )
                    for choice in chunk.choices
                    for call in choice.delta.tool_calls or ()
                    if call.function is not None and call.function.arguments
                ]
                arguments = "".join(pieces)
            else:
                answer = client.chat.completions.create(model="m", messages=messages, tools=tools)
                [call] = answer.choices[0].message.tool_calls or []
                assert (
                    call.id.startswith("call_") and answer.choices[0].finish_reason == "tool_calls"
                )
                arguments = call.function.arguments
            assert json.loads(arguments) == {"diff": DIFF}


def test_the_tool_server_answers_the_official_mcp_client() -> None:
    async def call(url: str, mode: str) -> object:
        async with Client(url, mode=mode) as client:
            result = await client.call_tool("findings", {"diff": DIFF})
            return result.structured_content

    with start_tools() as tools:
        for mode in ("legacy", "auto"):
            assert asyncio.run(call(tools.url + "/mcp", mode)) == findings_of(DIFF)
        assert len(tools.app.calls) == 2


@pytest.mark.parametrize("stream", [True, False])
def test_the_agent_reviews_through_its_model_and_its_tool(stream: bool) -> None:
    async def review(url: str) -> tuple[list[str], str]:
        client = await create_client(url)
        kinds, text = [], ""
        request = SendMessageRequest(message=new_text_message(DIFF, role=Role.ROLE_USER))
        async for event in client.send_message(request):
            kind = event.WhichOneof("payload")
            kinds.append(kind)
            if kind == "artifact_update":
                text = "".join(part.text for part in event.artifact_update.artifact.parts)
        question = SendMessageRequest(message=new_text_message("Which rules?", role=Role.ROLE_USER))
        answers = [get_message_text(e.message) async for e in client.send_message(question)]
        await client.close()
        assert answers and "Which rules?" in answers[0]
        return kinds, text

    with start_model(seed=1, api_key=KEY) as model, start_tools() as tools:
        settings = AgentSettings(
            model_url=model.url + "/v1", tools_url=tools.url + "/mcp", api_key=KEY, stream=stream
        )
        with start_agent(settings) as agent:
            kinds, text = asyncio.run(review(agent.url))
        assert kinds == ["task", "status_update", "artifact_update", "status_update"]
        for fact in ("src/app.py:2", "[debug-print]", "[todo]"):
            assert fact in text
        assert tools.app.calls == [{"diff": DIFF}]
        # the tool call, the wording, the question: each streamed as asked
        assert [seen.body.get("stream", False) for seen in model.app.requests] == [stream] * 3
        assert all(seen.headers["authorization"] == f"Bearer {KEY}" for seen in model.app.requests)
