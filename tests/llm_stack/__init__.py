"""The test stack of an LLM-backed agent, all on loopback, all real HTTP (issue 36):

- `ScriptedModel` (`model.py`): an OpenAI-compatible chat-completions server, scripted and
  seeded: tool calls, streaming (SSE `chat.completion.chunk`) and not, usage; its wording of
  the same facts differs on every answer, the same for the same seed and requests.
- `ToolServer` (`tools.py`): an MCP server on the official `mcp` SDK's Streamable HTTP
  transport with one tool, `findings(diff)` (the kit's review rules).
- the agent (`agent.py`): an a2a-sdk agent that, for each A2A message, calls the model
  (the official `openai` client) and the MCP tool (the official `mcp` client) at the base URLs
  it is given: point them at `recorder record --downstream` listeners to record its calls.

    with start_model(seed=7) as model, start_tools() as tools, start_agent(
        AgentSettings(model_url=model.url + "/v1", tools_url=tools.url + "/mcp")
    ) as agent:
        ...  # an A2A client talks to agent.url

Run one alone (a docs page, a person): `python -m llm_stack model --port 0 --seed 7` (with
`tests/` on `PYTHONPATH`) prints its URL and serves until interrupted.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from llm_stack.agent import SYSTEM_PROMPT, AgentSettings, create_agent_app
from llm_stack.model import ScriptedModel
from llm_stack.tools import ToolServer
from recorder.servers import ServerThread, bind_socket

__all__ = [
    "SYSTEM_PROMPT",
    "AgentSettings",
    "Running",
    "ScriptedModel",
    "ToolServer",
    "start_agent",
    "start_model",
    "start_tools",
]


@dataclass
class Running:
    """A started server of the stack: `url` (`http://127.0.0.1:PORT`), and what it serves
    (`app`: the `ScriptedModel`, the `ToolServer` or the agent's settings)."""

    url: str
    app: Any


def _serve(app: Any, host: str = "127.0.0.1", port: int = 0, sock: Any = None) -> ServerThread:
    return ServerThread(
        app, sock=sock, host=host, port=port, lifespan="on", interface="asgi3"
    ).start()


@contextmanager
def start_model(
    seed: int = 0, *, api_key: str | None = None, port: int = 0, frame_delay: float = 0.0
) -> Iterator[Running]:
    """The scripted model on a loopback port (0: a free one); its base URL is `url + "/v1"`."""
    model = ScriptedModel(seed=seed, api_key=api_key, frame_delay=frame_delay)
    server = _serve(model.app, port=port)
    try:
        yield Running(server.url, model)
    finally:
        server.stop()


@contextmanager
def start_tools(*, api_key: str | None = None, port: int = 0) -> Iterator[Running]:
    """The MCP tool server on a loopback port; its endpoint is `url + "/mcp"`."""
    tools = ToolServer(api_key=api_key)
    server = _serve(tools.app, port=port)
    try:
        yield Running(server.url, tools)
    finally:
        server.stop()


@contextmanager
def start_agent(
    settings: AgentSettings, *, port: int = 0, sock: socket.socket | None = None
) -> Iterator[Running]:
    """The LLM-backed agent on a loopback port (its card says so), or on `sock` (bound
    first: a recorder in front of it is made before the agent knows its listeners)."""
    sock = sock if sock is not None else bind_socket("127.0.0.1", port)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = _serve(create_agent_app(url, settings), sock=sock)
    try:
        yield Running(url, settings)
    finally:
        server.stop()
