"""`recorder kit --model URL [--tools URL]` (`recorder.kit.model`): the review worded by a
model (the scripted one of `tests/llm_stack`, on loopback), its findings asked of the MCP
server's tool; a wording that drops a fact replaced by the kit's own text; a failing model a
FAILED task that says why."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from a2a.client import create_client
from a2a.helpers import get_message_text, new_text_message
from a2a.types import Role, SendMessageRequest, TaskState
from click.testing import CliRunner
from llm_stack import start_model, start_tools

from recorder.cli import main
from recorder.kit import review, start_kit
from recorder.kit.model import SYSTEM_PROMPT, ModelWording

DIFF = (
    "--- a/src/cart.py\n+++ b/src/cart.py\n@@ -1,2 +1,4 @@\n def total(items):\n"
    "+    print(items)  # TODO remove\n+    token = 'abcdefgh'\n     return sum(items)\n"
)
PLAIN = review.format_review(review.review_diff(review.parse_unified_diff(DIFF)))


async def _review(url: str, text: str = DIFF) -> tuple[list[Any], str]:
    """The states the review went through, and its artifact's text (or the failure's)."""
    client = await create_client(url)
    states, text_seen = [], ""
    try:
        request = SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER))
        async for event in client.send_message(request):
            kind = event.WhichOneof("payload")
            if kind == "status_update":
                status = event.status_update.status
                states.append(status.state)
                if status.HasField("message"):
                    text_seen = get_message_text(status.message)
            elif kind == "artifact_update":
                text_seen = "".join(p.text for p in event.artifact_update.artifact.parts)
    finally:
        await client.close()
    return states, text_seen


def _facts(text: str) -> list[str]:
    return sorted(
        fact
        for fact in ("src/cart.py:2", "src/cart.py:3", "[todo]", "[debug-print]")
        if fact in text
    )


@pytest.mark.parametrize("tools", [False, True])
def test_the_review_is_the_models_wording_of_the_findings(tools: bool) -> None:
    with start_model(seed=4) as model, start_tools() as tool_server:
        wording = ModelWording(
            model.url + "/v1", "scripted-1", tool_server.url + "/mcp" if tools else None
        )
        with start_kit(model=wording) as kit:
            first = asyncio.run(_review(kit.url))
            second = asyncio.run(_review(kit.url))
        asked = model.app.requests
        assert tool_server.app.calls == ([{"diff": DIFF}] * 2 if tools else [])
    for states, text in (first, second):
        assert states == [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]
        assert text != PLAIN and _facts(text) == _facts(PLAIN)
    assert first[1] != second[1]  # worded anew
    assert len(asked) == 2
    body = asked[0].body
    assert body["model"] == "scripted-1" and body["messages"][0]["content"] == SYSTEM_PROMPT
    assert body["messages"][1] == {"role": "user", "content": PLAIN}  # the facts in
    assert "authorization" not in asked[0].headers  # (no OPENAI_API_KEY set)


def test_a_wording_that_drops_a_fact_gives_the_kits_own_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with start_model() as model:
        monkeypatch.setattr(model.app, "answer", lambda body: {"content": "Looks fine to me!"})
        with start_kit(model=ModelWording(model.url + "/v1")) as kit:
            states, text = asyncio.run(_review(kit.url))
    assert states[-1] == TaskState.TASK_STATE_COMPLETED
    assert text == PLAIN


def test_a_model_that_refuses_fails_the_task_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-123456")
    with start_model(api_key="sk-right-key-654321") as model:
        with start_kit(model=ModelWording(model.url + "/v1")) as kit:
            states, text = asyncio.run(_review(kit.url))
        assert model.app.requests == []  # (refused before it was kept)
    assert states[-1] == TaskState.TASK_STATE_FAILED
    assert text == (
        f"I could not word the review: the model at {model.url}/v1/chat/completions answered 401"
    )
    assert "sk-" not in text


def test_kit_tools_needs_a_model_and_both_take_an_http_url() -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["kit", "--listen", "0", "--tools", "http://127.0.0.1:9/mcp"])
    assert result.exit_code == 2
    assert "--tools asks a tool for the findings that --model words: give --model" in result.stderr
    result = runner.invoke(main, ["kit", "--listen", "0", "--model", "api.example/v1"])
    assert result.exit_code == 2
    assert "--model api.example/v1: expected an http:// or https:// URL" in result.stderr
