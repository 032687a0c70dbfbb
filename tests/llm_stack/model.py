"""A scripted OpenAI-compatible model on loopback: `POST /v1/chat/completions` (and
`/chat/completions`, for a base URL without `/v1`), JSON or streamed (SSE
`chat.completion.chunk` frames, then `data: [DONE]`), with tool calls and usage, as the
OpenAI API answers; no model behind it, only rules:

- A request that declares `tools`, whose last message is the user's (no tool result after
  it), is answered with a call of its first tool (`finish_reason: "tool_calls"`): the
  tool's first required string parameter gets the user's text (a `findings(diff)` tool gets
  the diff).
- Any other request is answered with a wording of the facts of its last tool or user message:
  review findings (a JSON object whose `comments` are `{path, line, rule, message}`, as the
  stack's MCP tool answers, or the kit's review lines `src/app.py:3: [debug-print] …`) are
  worded by `recorder.kit.wording.Wording`, the facts kept (`path:line`, the rule, the numbers)
  and everything else varied; a text without findings is acknowledged in varied words.
- The words differ on every answer; the sequence of answers (and of ids) is the same for the
  same `seed` and the same sequence of requests.
- Ids as OpenAI's look: `chatcmpl-…`, `call_…` (tool calls), `fp_…` (`system_fingerprint`,
  one per server), `created` the clock's seconds. `usage` counts words as tokens; a stream
  sends it in a last chunk when `stream_options.include_usage` asks.
- `api_key`: the `Authorization: Bearer KEY` every request must carry (401 otherwise, in
  OpenAI's error shape). `requests` keeps every request (its headers and JSON) for tests.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import string
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from recorder.kit.review import Comment, Review
from recorder.kit.wording import Wording

__all__ = ["ScriptedModel", "facts_of"]

MODEL_NAME = "scripted-1"
# a review line as the kit writes it: `src/app.py:3: [debug-print] debugging statement …`
_FINDING_LINE = re.compile(r"^(?:[-*] )?(?P<where>\S+): \[(?P<rule>[\w-]+)\] (?P<message>.+)$")
_FILES = re.compile(r"\b(\d+) files?\b")
_TOKEN = re.compile(r"\S+\s*|\s+")
_ACKNOWLEDGE = (
    "You asked: {text}",
    "Here is my answer to: {text}",
    "About your message ({text}): noted.",
    "I read {text} and have nothing to add.",
)
_ALNUM = string.ascii_letters + string.digits


def facts_of(text: str) -> Review | None:
    """The review findings `text` states (the MCP tool's JSON, or the kit's review lines), or
    None when it states none."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("comments"), list):
        comments = tuple(
            Comment(
                item.get("path"),
                item.get("line"),
                str(item.get("rule", "")),
                str(item.get("message", "")),
            )
            for item in value["comments"]
            if isinstance(item, dict)
        )
        files = value.get("files")
        return Review(tuple(files) if isinstance(files, list) else (), comments)
    comments_found: list[Comment] = []
    for line in text.splitlines():
        found = _FINDING_LINE.match(line.strip())
        if found is None:
            continue
        where = found.group("where")
        path, _, number = where.rpartition(":")
        if where == "diff" or not number.isdigit():
            comment = Comment(None, None, found.group("rule"), found.group("message"))
        else:
            comment = Comment(path, int(number), found.group("rule"), found.group("message"))
        comments_found.append(comment)
    counted = _FILES.search(text)
    if not comments_found and counted is None:
        return None
    count = int(counted.group(1)) if counted else len({c.path for c in comments_found if c.path})
    return Review(tuple(f"file-{n}" for n in range(count)), tuple(comments_found))


@dataclass
class Seen:
    """One request the model got: its headers (lowercase names) and JSON body."""

    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class ScriptedModel:
    """The scripted model's state and its Starlette app (`app`); see the module docstring."""

    seed: int = 0
    api_key: str | None = None
    frame_delay: float = 0.0
    """Seconds between two streamed chunks (0: none; a benchmark's pace)."""
    requests: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._wording = Wording(self.seed)
        self._random = random.Random(f"ids-{self.seed}")
        self.fingerprint = "fp_" + "".join(self._random.choices("0123456789abcdef", k=10))
        routes = [
            Route("/v1/chat/completions", self._completions, methods=["POST"]),
            Route("/chat/completions", self._completions, methods=["POST"]),
        ]
        self.app = Starlette(routes=routes)

    # ---------------------------------------------------------------- the answer

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The assistant message for a request body: `{"content": …}` or `{"tool_calls":
        […]}` (one request at a time: the sequence is the seed's)."""
        messages = body.get("messages") or []
        with self._lock:
            tools = body.get("tools") or []
            last = messages[-1] if messages else {}
            if tools and isinstance(last, dict) and last.get("role") == "user":
                return {"tool_calls": [self._tool_call(tools[0], _text(last))]}
            source = next((m for m in reversed(messages) if m.get("role") in ("tool", "user")), {})
            text = _text(source)
            facts = facts_of(text)
            if facts is not None:
                return {"content": self._wording.review(facts)}
            shown = " ".join(text.split())[:80]
            return {"content": self._random.choice(_ACKNOWLEDGE).format(text=shown)}

    def _tool_call(self, tool: dict[str, Any], text: str) -> dict[str, Any]:
        function = tool.get("function") or {}
        parameters = function.get("parameters") or {}
        required = parameters.get("required") or list(parameters.get("properties") or {})
        arguments = {required[0]: text} if required else {}
        return {
            "id": "call_" + "".join(self._random.choices(_ALNUM, k=24)),
            "type": "function",
            "function": {"name": function.get("name", ""), "arguments": json.dumps(arguments)},
        }

    def _id(self) -> str:
        with self._lock:
            return "chatcmpl-" + "".join(self._random.choices(_ALNUM, k=29))

    # ---------------------------------------------------------------- HTTP

    async def _completions(self, request: Request) -> Response:
        if self.api_key is not None:
            expected = f"Bearer {self.api_key}"
            if request.headers.get("authorization") != expected:
                return _error(401, "Incorrect API key provided.", "invalid_api_key")
        try:
            body = json.loads(await request.body())
        except ValueError:
            return _error(400, "We could not parse the JSON body of your request.", None)
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "'messages' is a required property", None)
        self.requests.append(Seen(dict(request.headers), body))
        message = self.answer(body)
        completion_id = self._id()
        created = int(time.time())
        model = str(body.get("model") or MODEL_NAME)
        usage = _usage(body, message)
        finish = "tool_calls" if "tool_calls" in message else "stop"
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            chunks = self._chunks(completion_id, created, model, message, finish)
            if include_usage:
                chunks.append(self._chunk(completion_id, created, model, None, usage=usage))
            return StreamingResponse(
                self._stream(chunks),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache"},
            )
        return JSONResponse(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": None, **message},
                        "logprobs": None,
                        "finish_reason": finish,
                    }
                ],
                "usage": usage,
                "system_fingerprint": self.fingerprint,
            }
        )

    def _chunks(
        self, completion_id: str, created: int, model: str, message: dict[str, Any], finish: str
    ) -> list[dict[str, Any]]:
        """The message as OpenAI streams it: the role, then the content token by token (a
        tool call: its id and name, then its arguments in pieces), then the finish reason."""
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        for index, call in enumerate(message.get("tool_calls", ())):
            head = {"id": call["id"], "type": "function", "function": {"name": "", "arguments": ""}}
            head["function"]["name"] = call["function"]["name"]
            deltas.append({"tool_calls": [{"index": index, **head}]})
            arguments = call["function"]["arguments"]
            for start in range(0, len(arguments), 16):
                piece = {"function": {"arguments": arguments[start : start + 16]}}
                deltas.append({"tool_calls": [{"index": index, **piece}]})
        deltas.extend({"content": token} for token in _TOKEN.findall(message.get("content") or ""))
        chunks = [self._chunk(completion_id, created, model, delta) for delta in deltas]
        chunks.append(self._chunk(completion_id, created, model, {}, finish=finish))
        return chunks

    def _chunk(
        self,
        completion_id: str,
        created: int,
        model: str,
        delta: dict[str, Any] | None,
        *,
        finish: str | None = None,
        usage: dict[str, int] | None = None,
    ) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": self.fingerprint,
            "choices": []
            if delta is None
            else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if usage is not None:
            chunk["usage"] = usage
        return chunk

    async def _stream(self, chunks: list[dict[str, Any]]) -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"
            if self.frame_delay:
                await asyncio.sleep(self.frame_delay)
        yield b"data: [DONE]\n\n"


def _text(message: dict[str, Any]) -> str:
    """A chat message's text (its content as a string, or its text parts joined)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _usage(body: dict[str, Any], message: dict[str, Any]) -> dict[str, int]:
    prompt = sum(len(_text(m).split()) for m in body.get("messages", []) if isinstance(m, dict))
    completion = len((message.get("content") or json.dumps(message.get("tool_calls"))).split())
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _error(status: int, message: str, code: str | None) -> JSONResponse:
    kind = "invalid_request_error"
    return JSONResponse(
        {"error": {"message": message, "type": kind, "param": None, "code": code}},
        status_code=status,
    )
