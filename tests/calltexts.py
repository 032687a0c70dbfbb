"""Transcript text with the agent's own calls (`# @call NAME exchange N` blocks), for the
tests of the player's and serve's stand-ins: an A2A exchange, a model call (streamed), an MCP
tool call."""

from __future__ import annotations

import json

from recorder.format.httpfile import loads
from recorder.format.model import Transcript

__all__ = ["HEAD", "ask", "held_stream", "model_call", "tool_call", "transcript"]

HEAD = (
    "# recorder-format: 1\n"
    "# @downstream model https://api.example/v1\n"
    "# @downstream tools http://127.0.0.1:8931/mcp\n\n"
)


def ask(text: str) -> str:
    return (
        f"### SendMessage: {text}\n"
        "POST /a2a/jsonrpc HTTP/1.1\n"
        "Host: 127.0.0.1:41242\n"
        "Content-Type: application/json\n\n"
        + json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"t": text}})
        + "\n\nHTTP/1.1 200 OK\nContent-Type: application/json\n\n"
        '{"jsonrpc": "2.0", "id": 1, "result": {"message": {"parts": []}}}\n'
    )


def model_call(prompt: str, words: list[str], *, exchange: int = 1) -> str:
    frames = "".join(
        "data: " + json.dumps({"choices": [{"delta": {"content": word}}]}) + "\n\n"
        for word in words
    )
    return (
        "### model: POST /v1/chat/completions\n"
        f"# @call model exchange {exchange}\n"
        "POST /v1/chat/completions HTTP/1.1\n"
        "Host: 127.0.0.1:41260\n"
        "Authorization: Bearer {{OPENAI_API_KEY}}\n"
        "Content-Type: application/json\n\n"
        + json.dumps(
            {"model": "m", "stream": True, "messages": [{"role": "user", "content": prompt}]}
        )
        + "\n\nHTTP/1.1 200 OK\nContent-Type: text/event-stream\n\n"
        + frames
        + "data: [DONE]\n\n"
    )


def tool_call(path: str, *, exchange: int = 1) -> str:
    request = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "lint", "arguments": {"path": path}},
    }
    reply = {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "ok"}]}}
    return (
        "### tools: POST /mcp\n"
        f"# @call tools exchange {exchange}\n"
        "POST /mcp HTTP/1.1\n"
        "Host: 127.0.0.1:41261\n"
        "Content-Type: application/json\n"
        "Mcp-Session-Id: s-1\n\n"
        + json.dumps(request)
        + "\n\nHTTP/1.1 200 OK\nContent-Type: application/json\nMcp-Session-Id: s-1\n\n"
        + json.dumps(reply)
        + "\n"
    )


def transcript(*blocks: str) -> Transcript:
    return loads(HEAD + "\n".join(block.rstrip("\n") + "\n" for block in blocks))


def held_stream(*, exchange: int = 1) -> str:
    """An MCP client's GET stream, recorded while the agent kept it open (`# @truncated`)."""
    return (
        "### tools: GET /mcp\n"
        f"# @call tools exchange {exchange}\n"
        "# @truncated\n"
        "GET /mcp HTTP/1.1\n"
        "Host: 127.0.0.1:41261\n"
        "Accept: text/event-stream\n"
        "Mcp-Session-Id: s-1\n\n"
        "HTTP/1.1 200 OK\nContent-Type: text/event-stream\nMcp-Session-Id: s-1\n\n"
        ": ping\n\n"
    )
