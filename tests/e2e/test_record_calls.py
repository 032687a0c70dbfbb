"""The agent's own calls recorded (issue 36), end to end with real parts on loopback: the
a2a-sdk client (uuid ids, no recorder headers) -> `recorder record` (a process) -> an
LLM-backed a2a-sdk agent (`tests/llm_stack`) -> the recorder's `--downstream` listeners ->
the scripted model (streamed, tool calls) and the MCP server (the official SDK's sessions
and SSE answers). Everything is recorded in the right files, in order, with secrets off the
disk; concurrent clients' calls stay in their files; the client gets what it gets directly."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from a2a.client import create_client
from a2a.helpers import get_message_text, new_text_message
from a2a.types import Role, SendMessageRequest
from helpers import downstream_listeners, recorder_process
from llm_stack import AgentSettings, start_agent, start_model, start_tools

from recorder.checking import check_paths
from recorder.disk.transcripts import load
from recorder.format.model import Transcript
from recorder.servers import bind_socket

pytestmark = pytest.mark.e2e

LIMIT = 60.0
MODEL_KEY = "sk-test-model-Zq8K2m4Xv7Lp9Rt3"
TOOLS_KEY = "tools-key-Hd5Fw1Ny6Jc0Ub2"


def diff(path: str, line: str = "print('debug')  # TODO remove") -> str:
    return f"--- a/{path}\n+++ b/{path}\n@@ -1,2 +1,3 @@\n import os\n+{line}\n x = 1\n"


QUESTION = "Which languages can you review for me?"


@dataclass
class Recorded:
    folder: Path
    stderr: str
    returncode: int
    seen: list[list[str]]  # what each client saw

    def transcripts(self) -> dict[str, Transcript]:
        return {path.name: load(path) for path in sorted(self.folder.glob("*.http"))}


async def _converse(url: str, texts: list[str]) -> list[str]:
    """What a client sees of a conversation: each event's kind and its texts, ids out."""
    client = await create_client(url)
    seen: list[str] = []
    try:
        for text in texts:
            request = SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER))
            async for event in client.send_message(request):
                kind = event.WhichOneof("payload")
                if kind == "message":
                    seen.append(f"message: {get_message_text(event.message)}")
                elif kind == "artifact_update":
                    parts = event.artifact_update.artifact.parts
                    seen.append("artifact: " + "".join(part.text for part in parts))
                elif kind == "status_update":
                    seen.append(f"status: {event.status_update.status.state}")
                else:
                    seen.append(f"{kind}: {event.task.status.state}")
    finally:
        await client.close()
    return seen


def _clients(url: str, conversations: list[list[str]]) -> list[list[str]]:
    async def all_at_once() -> list[list[str]]:
        return list(await asyncio.gather(*(_converse(url, texts) for texts in conversations)))

    return asyncio.run(asyncio.wait_for(all_at_once(), LIMIT))


@contextmanager
def _stack(seed: int) -> Iterator[tuple[str, str]]:
    with (
        start_model(seed=seed, api_key=MODEL_KEY) as model,
        start_tools(api_key=TOOLS_KEY) as tools,
    ):
        yield model.url + "/v1", tools.url


def _settings(model_url: str, tools_url: str) -> AgentSettings:
    return AgentSettings(
        model_url=model_url,
        tools_url=tools_url + "/mcp",
        api_key=MODEL_KEY,
        tools_api_key=TOOLS_KEY,
        mcp_mode="legacy",
    )


def direct(conversations: list[list[str]], seed: int = 5) -> list[list[str]]:
    """What the clients see without the recorder."""
    with _stack(seed) as (model_url, tools_url), start_agent(_settings(model_url, tools_url)) as a:
        return _clients(a.url, conversations)


def record(folder: Path, conversations: list[list[str]], seed: int = 5) -> Recorded:
    """The conversations through `recorder record --downstream model=… --downstream tools=…`
    (a process), all at once, one client each."""
    with _stack(seed) as (model_url, tools_url):
        agent_sock = bind_socket("127.0.0.1", 0)
        agent_url = f"http://127.0.0.1:{agent_sock.getsockname()[1]}"
        args = (
            "--agent",
            agent_url,
            "--out",
            str(folder),
            "--downstream",
            f"model={model_url}@0",
            "--downstream",
            f"tools={tools_url}@127.0.0.1:0",
        )
        with recorder_process(*args, limit=LIMIT) as (process, url):
            listeners = downstream_listeners(process, 2)
            assert listeners.keys() == {"model", "tools"}
            settings = _settings(listeners["model"], listeners["tools"])
            with start_agent(settings, sock=agent_sock):
                seen = _clients(url, conversations)
            process.send_signal(signal.SIGINT)
            try:
                _, rest = process.communicate(timeout=LIMIT)
            except subprocess.TimeoutExpired:  # pragma: no cover - reported by the assert
                rest = "(did not stop)"
        return Recorded(folder, rest, process.returncode, seen)


def _calls(transcript: Transcript) -> list[tuple[int, str, str]]:
    """(the exchange N its tag names, downstream, title) of each call, in file order."""
    return [(e.call.exchange, e.call.name, e.title) for e in transcript.exchanges if e.call]


def test_a_conversation_is_recorded_with_its_calls_in_order_secrets_off_disk(
    tmp_path: Path,
) -> None:
    conversation = [[diff("src/app.py"), QUESTION]]
    recorded = record(tmp_path / "out", conversation)
    assert recorded.returncode == 0, recorded.stderr
    # the client got what it gets without the recorder (the same seed: the same words)
    assert recorded.seen == direct(conversation)
    assert any("src/app.py:2" in line for line in recorded.seen[0])
    files = recorded.transcripts()
    assert check_paths([recorded.folder]) == (len(files), [])
    # the card fetch, the review (its calls), the question (its call)
    review_name = next(name for name in files if files[name].calls and len(files[name]) > 3)
    review = files[review_name]
    calls = _calls(review)
    assert review.exchanges[0].call is None and review.exchanges[0].title == "SendStreamingMessage"
    assert calls[0] == (1, "model", "model: POST /chat/completions")
    assert calls[-1] == (1, "model", "model: POST /chat/completions")
    # the MCP session in the order its requests came (its GET stream opens beside)
    titles = [title for _, _, title in calls[1:-1]]
    assert [title for title in titles if title != "tools: GET /mcp"] == [
        "tools: POST /mcp (initialize)",
        "tools: POST /mcp (notifications/initialized)",
        "tools: POST /mcp (tools/call)",
        "tools: POST /mcp (tools/list)",
        "tools: DELETE /mcp",
    ]
    assert titles.count("tools: GET /mcp") <= 1
    # every call after its exchange's block, tagged with the frames of the review relayed when
    # it came: at most the two the agent had sent (its task, "working") before it called, and
    # never fewer than an earlier call's (the agent queues its frames and calls at once, so
    # a call may come before the recorder read them: how many it had is not fixed)
    frames = [e.call.frame or 0 for e in review.exchanges if e.call]
    assert frames == sorted(frames) and set(frames) <= {0, 1, 2}, frames
    assert review.downstreams.keys() == {"model", "tools"}
    # the model's stream is kept frame by frame; the key and the tools' key are placeholders
    first = next(e for e in review.exchanges if e.call)
    assert first.request.headers.get("Authorization") == "Bearer {{MODEL_TOKEN}}"
    assert first.response.events is not None and first.response.events[-1].data == "[DONE]"
    tools_call = next(e for e in review.exchanges if e.title.endswith("(tools/call)"))
    assert tools_call.request.headers.get("X-API-Key") == "{{TOOLS_API_KEY}}"
    assert tools_call.request.json["params"]["arguments"] == {"diff": diff("src/app.py")}
    question = next(t for t in files.values() if len(t) == 2 and t.calls)
    assert _calls(question) == [(1, "model", "model: POST /chat/completions")]
    assert question.exchanges[1].call.frame is None  # before the reply's first frame
    for path in recorded.folder.glob("*.http"):
        text = path.read_text()
        assert MODEL_KEY not in text and TOOLS_KEY not in text
    calls_count = sum(len(t.calls) for t in files.values())
    exchanges_count = sum(len(t) for t in files.values()) - calls_count
    assert (
        f"stopped; {exchanges_count} exchanges and {calls_count} calls recorded in "
        f"{len(files)} files" in recorded.stderr
    )


def test_concurrent_clients_keep_their_calls_in_their_files(tmp_path: Path) -> None:
    paths = ["src/alpha.py", "lib/beta.py", "pkg/gamma.py"]
    conversations = [[diff(path, f"print('{path}')  # TODO {n}")] for n, path in enumerate(paths)]
    recorded = record(tmp_path / "out", conversations)
    assert recorded.returncode == 0, recorded.stderr
    files = recorded.transcripts()
    assert check_paths([recorded.folder]) == (len(files), [])
    reviews = [t for t in files.values() if t.calls]
    assert len(reviews) == 3
    sessions: dict[str, str] = {}
    for name, transcript in files.items():
        if not transcript.calls:
            continue
        asked = transcript.exchanges[0].request.text
        mine = next(path for path in paths if path in asked)
        others = [path for path in paths if path != mine]
        for call in transcript.calls:
            assert call.call is not None and call.call.exchange == 1
            assert not call.call.ambiguous, (name, call.title)
            body = call.request.text
            assert not any(other in body for other in others), (name, call.title)
            session = call.request.headers.get("Mcp-Session-Id") or call.response.headers.get(
                "Mcp-Session-Id"
            )
            if session:
                assert sessions.setdefault(session, name) == name, (name, call.title)
        # each review's own MCP session: initialize to DELETE, and its two model calls
        titles = [call.title for call in transcript.calls]
        assert titles.count("model: POST /chat/completions") == 2
        assert "tools: POST /mcp (initialize)" in titles and "tools: DELETE /mcp" in titles
    assert len(set(sessions.values())) == 3
    assert "ambiguous" not in recorded.stderr
