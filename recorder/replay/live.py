"""A live reply as it arrived (`LiveReply`), and a reply body's parsed value."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from recorder.model import Headers, Response

__all__ = ["EMPTY", "NOT_JSON", "LiveReply", "body_value", "parse_json_text"]


class _NotJson:
    """Marks a body or frame whose text is not JSON."""


NOT_JSON = _NotJson()
EMPTY = object()


def parse_json_text(text: str) -> Any:
    """The JSON value of `text`, or `NOT_JSON`."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return NOT_JSON


def body_value(message: Response) -> Any:
    """The parsed body, `EMPTY`, or `NOT_JSON` (uses the cached `Response.json`)."""
    if not message.body:
        return EMPTY
    value = message.json
    if value is None and message.body.strip() != b"null":
        return NOT_JSON
    return value


class LiveReply:
    """A live reply as it arrived: status, reason, header pairs, raw body bytes.

    `ReplayState.compare` takes it in place of a `Response` so that a JSON reply that matches
    is never pretty-printed: the fast path reads the wire bytes (parsed and written on one line
    by the C encoder), and the model's `Response` (`.response`, built on first use) is made
    only for a stream, a reply the fast path cannot decide, and `bless`. Header values are
    stripped as `Headers` strips them.
    """

    __slots__ = ("_response", "body", "headers", "http_version", "reason", "status")

    def __init__(
        self,
        status: int,
        reason: str,
        headers: Iterable[tuple[str, str]],
        body: bytes,
        http_version: str = "HTTP/1.1",
    ) -> None:
        self.status = status
        self.reason = reason
        self.headers: tuple[tuple[str, str], ...] = tuple(
            (name, value.strip()) for name, value in headers
        )
        self.body = body
        self.http_version = http_version
        self._response: Response | None = None

    @property
    def content_type(self) -> str | None:
        for name, value in self.headers:
            if name.lower() == "content-type":
                return value
        return None

    @property
    def response(self) -> Response:
        """The reply in the model's canonical form (built once, on first use)."""
        if self._response is None:
            self._response = Response(
                status=self.status,
                reason=self.reason,
                # a field named "#..." is valid HTTP that a .http file cannot hold (it reads as a
                # comment): left out here, it is still compared (and reported) from `headers`
                headers=Headers([(n, v) for n, v in self.headers if not n.startswith("#")]),
                body=self.body,
                http_version=self.http_version,
            )
        return self._response

    def __repr__(self) -> str:
        return f"LiveReply({self.status}, {len(self.body)} bytes)"
