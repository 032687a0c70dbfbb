"""`recorder serve --downstream NAME@PORT`: the stand-in answers as the agent's model or MCP
server did, from the transcripts' calls (`recorder.serve.downstream`), to the official
clients."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from calltexts import HEAD, ask, model_call, tool_call
from click.testing import CliRunner

from recorder.cli import main
from recorder.format.httpfile import loads
from recorder.format.model import Transcript
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve.app import StandIn
from recorder.serve.downstream import calls_to, downstream_stand_in
from recorder.serve.server import server_options
from recorder.servers import ServerThread


def _json_model_call(prompt: str, answer: str) -> str:
    reply = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": answer},
            }
        ],
    }
    return (
        "### model: POST /v1/chat/completions\n"
        "# @call model exchange 3\n"
        "POST /v1/chat/completions HTTP/1.1\n"
        "Host: 127.0.0.1:41260\n"
        "Authorization: Bearer {{OPENAI_API_KEY}}\n"
        "Content-Type: application/json\n\n"
        + json.dumps({"model": "m", "messages": [{"role": "user", "content": prompt}]})
        + "\n\nHTTP/1.1 200 OK\nContent-Type: application/json\n\n"
        + json.dumps(reply)
        + "\n"
    )


TEXT = HEAD + "\n".join(
    block.rstrip("\n") + "\n"
    for block in (
        ask("review a.py"),
        tool_call("a.py"),
        ask("what do you know?"),
        model_call("review a.py", ["Two", " findings"]),
        _json_model_call("what do you know?", "Python diffs."),
    )
).replace("# @call model exchange 1\nPOST", "# @call model exchange 1\nPOST", 1)


@pytest.fixture
def transcript(tmp_path: Path) -> Transcript:
    path = tmp_path / "01-review.http"
    path.write_text(TEXT)
    return loads(TEXT, source=str(path))


@pytest.fixture
def model(transcript: Transcript) -> Iterator[str]:
    stand_in = downstream_stand_in([transcript], "model", DEFAULT_RULES)
    with ServerThread(stand_in, **server_options()) as server:
        yield server.url


def test_the_calls_to_a_downstream_are_its_exchanges(transcript: Transcript) -> None:
    [model] = calls_to([transcript], "model")
    assert [e.request.target for e in model.exchanges] == ["/v1/chat/completions"] * 2
    assert all(e.call is None for e in model.exchanges)
    assert calls_to([transcript], "peer") == []
    # the agent's stand-in counts no call among the exchanges a client gets answered
    assert StandIn([transcript], DEFAULT_RULES).exchanges == 2


def test_a_model_client_gets_the_recorded_answers(model: str) -> None:
    client = openai.OpenAI(base_url=model + "/v1", api_key="sk-any", max_retries=0)
    stream = client.chat.completions.create(
        model="m", stream=True, messages=[{"role": "user", "content": "review a.py"}]
    )
    assert [chunk.choices[0].delta.content for chunk in stream] == ["Two", " findings"]
    answer = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "what do you know?"}]
    )
    assert answer.choices[0].message.content == "Python diffs."
    with pytest.raises(openai.NotFoundError, match=r"closest: .*01-review.http:\d+"):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "something else"}]
        )


def test_a_tool_client_gets_the_recorded_answer(transcript: Transcript) -> None:
    stand_in = downstream_stand_in([transcript], "tools", DEFAULT_RULES)
    with ServerThread(stand_in, **server_options()) as server:
        request = {
            "jsonrpc": "2.0",
            "id": 12,
            "method": "tools/call",
            "params": {"name": "lint", "arguments": {"path": "a.py"}},
        }
        reply = httpx.post(server.url + "/mcp", json=request)
    assert reply.json() == {
        "jsonrpc": "2.0",
        "id": 12,
        "result": {"content": [{"type": "text", "text": "ok"}]},
    }
    assert reply.headers["mcp-session-id"] == "s-1"


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (
            "peer@0",
            "recorder serve: --downstream peer: no transcript has calls to peer (they have calls"
            " to: model, tools)\n",
        ),
        (
            "peer",
            "recorder serve: --downstream: expected NAME@[HOST:]PORT such as model@41260, got "
            "'peer'\n",
        ),
    ],
)
def test_a_bad_downstream_is_one_line_and_exit_2(
    option: str, message: str, tmp_path: Path, transcript: Transcript
) -> None:
    result = CliRunner().invoke(
        main, ["serve", str(tmp_path), "--listen", "0", "--downstream", option]
    )
    assert result.exit_code == 2
    assert result.stderr == message
