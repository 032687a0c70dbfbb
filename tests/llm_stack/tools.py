"""An MCP tool server on the official `mcp` SDK's Streamable HTTP transport (at `/mcp`):
one tool, `findings(diff)`, that reviews a unified diff with the kit's rules
(`recorder.kit.review`) and answers `{"files": [...], "comments": [{path, line, rule,
message}]}`. Sessions (`Mcp-Session-Id`) and SSE answers are the SDK's, as any MCP client
gets them; `api_key`: the `X-API-Key` header every request must carry (401 otherwise).
`calls` counts the tool's calls, with their arguments."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mcp.server import MCPServer

from recorder.kit.review import parse_unified_diff, review_diff

__all__ = ["ToolServer"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def findings_of(diff: str) -> dict[str, Any]:
    """The kit's review of `diff` as the tool answers it."""
    review = review_diff(parse_unified_diff(diff))
    return {
        "files": list(review.files),
        "comments": [
            {"path": c.path, "line": c.line, "rule": c.rule, "message": c.message}
            for c in review.comments
        ],
    }


class ToolServer:
    """The MCP server's ASGI app (`app`, with its lifespan: serve it with lifespan on)."""

    def __init__(self, *, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.calls: list[dict[str, Any]] = []
        server = MCPServer("findings", instructions="Review findings of unified diffs.")

        @server.tool()
        def findings(diff: str) -> dict[str, Any]:
            """The review findings of a unified diff: each comment's file, line, rule and
            message."""
            self.calls.append({"diff": diff})
            return findings_of(diff)

        self._app = server.streamable_http_app()

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.api_key is not None:
            sent = dict(scope["headers"]).get(b"x-api-key", b"").decode("latin-1")
            if sent != self.api_key:
                body = b'{"error": "a valid X-API-Key header is needed"}'
                headers = [(b"content-type", b"application/json")]
                headers.append((b"content-length", str(len(body)).encode()))
                await send({"type": "http.response.start", "status": 401, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self._app(scope, receive, send)
