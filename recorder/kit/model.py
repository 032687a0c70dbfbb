"""`recorder kit --model URL [--model-name NAME] [--tools URL]`: the kit's review worded by a
model, as an LLM-backed agent words one, its findings asked of an MCP tool.

- The facts: the kit's own review of the diff (`recorder.kit.review`), or, with a tools URL,
  what the MCP server's `findings` tool answers for the diff (`{"files": [...], "comments":
  [{"path", "line", "rule", "message"}]}`, as `tests/llm_stack`'s server answers), through the
  official `mcp` client (the `llm` extra) on the Streamable HTTP transport.
- The wording: one chat-completions call (`POST {URL}/chat/completions`, OpenAI-compatible,
  not streamed): a system prompt, and the facts as the kit's review lines (`src/app.py:3:
  [debug-print] ...`) as the user's message; `OPENAI_API_KEY`, when set, as its bearer
  token. The answer's text is the review.
- The facts kept: a wording that leaves out a finding's `path:line` or its `[rule]` is not
  the review: the kit answers with its own review text instead (and logs why), so what a
  client gets always holds every finding. A model or tool server that fails (unreachable,
  an error status, an answer without text) fails the task, its reason in the agent's
  message: an LLM-backed agent fails so too.

Without `--model` the kit is as it always was (the shipped transcripts are its answers).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Any

import httpx

from recorder.kit.review import Comment, Review, format_review, parse_unified_diff, review_diff

__all__ = ["SYSTEM_PROMPT", "ModelError", "ModelWording"]

log = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You are code-reviewer. Word this code review for the person who sent the diff: one "
    "finding per line, keeping every file:line and [rule] exactly as given."
)
MODEL_TIMEOUT = httpx.Timeout(60.0, connect=5.0)


class ModelError(Exception):
    """The model or the tool server did not give what the review needs (the message says
    what, without any secret)."""


@dataclass(frozen=True)
class ModelWording:
    """Where the kit's wording comes from: the model's base URL (`http://host:port/v1`), the
    model's name, and an MCP endpoint for the findings (None: the kit's own rules)."""

    url: str
    model_name: str = "gpt-4o-mini"
    tools_url: str | None = None
    prompt: str = SYSTEM_PROMPT
    """The system prompt the review is worded with."""

    async def review(self, diff: str) -> str:
        """The review of `diff` (a unified diff with file names) in the model's words."""
        found = await self._findings(diff)
        facts = format_review(found)
        worded = await self._word(facts)
        missing = _missing_facts(found, worded)
        if missing:
            log.warning(
                "the model's wording left out %s: answering with the kit's own review text",
                ", ".join(missing),
            )
            return facts
        return worded

    async def _findings(self, diff: str) -> Review:
        if self.tools_url is None:
            return review_diff(parse_unified_diff(diff))
        try:
            from mcp.client.client import Client
        except ImportError as exc:  # pragma: no cover - the llm extra is not installed
            raise ModelError(
                f"--tools needs the mcp package ({exc}): pip install 'a2a-recorder[llm]'"
            ) from None
        try:
            async with Client(self.tools_url) as client:
                result = await client.call_tool("findings", {"diff": diff})
        except Exception as exc:
            raise ModelError(f"the tool server at {self.tools_url} failed: {exc}") from None
        if result.is_error:
            text = " ".join(getattr(part, "text", "") for part in result.content)
            raise ModelError(f"the findings tool at {self.tools_url} failed: {text}")
        value = result.structured_content
        if value is None:  # (a server that answers text only: its JSON)
            text = "".join(getattr(part, "text", "") for part in result.content)
            try:
                value = json.loads(text)
            except ValueError:
                value = None
        return _review_of(value, self.tools_url)

    async def _word(self, facts: str) -> str:
        url = self.url.rstrip("/") + "/chat/completions"
        headers = {"Content-Type": "application/json"}
        key = os.environ.get("OPENAI_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = {
            "model": self.model_name,
            "messages": [
                {"role": "system", "content": self.prompt},
                {"role": "user", "content": facts},
            ],
        }
        try:
            async with httpx.AsyncClient(timeout=MODEL_TIMEOUT, trust_env=False) as client:
                answer = await client.post(url, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise ModelError(f"the model at {url} could not be reached: {exc}") from None
        if answer.status_code != 200:
            raise ModelError(f"the model at {url} answered {answer.status_code}")
        try:
            content = answer.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str) or not content.strip():
            raise ModelError(f"the model at {url} answered without a text")
        return content.strip()


def _review_of(value: Any, where: str) -> Review:
    """The findings tool's answer as a `Review`."""
    if not isinstance(value, dict) or not isinstance(value.get("comments"), list):
        raise ModelError(f"the findings tool at {where} answered no comments")
    comments = []
    for item in value["comments"]:
        if not isinstance(item, dict):
            continue
        line = item.get("line")
        comments.append(
            Comment(
                item.get("path") if isinstance(item.get("path"), str) else None,
                line if isinstance(line, int) else None,
                str(item.get("rule", "")),
                str(item.get("message", "")),
            )
        )
    files = value.get("files")
    paths = tuple(str(path) for path in files) if isinstance(files, list) else ()
    return Review(paths, tuple(comments))


def _missing_facts(review: Review, text: str) -> list[str]:
    """The facts of `review` (each finding's `path:line` and `[rule]`) that `text` lacks."""
    missing = []
    for comment in review.comments:
        for fact in (comment.where, f"[{comment.rule}]"):
            if comment.line is None and fact == comment.where:
                continue  # ("diff": a finding about the whole diff has no place to keep)
            if fact not in text and fact not in missing:
                missing.append(fact)
    return missing
