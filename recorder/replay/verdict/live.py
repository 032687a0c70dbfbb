"""A live reply as it arrived (`LiveReply`), and a reply body's parsed value."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from recorder.format.jsonbody import NOT_JSON
from recorder.format.model import Exchange, Headers, Response
from recorder.format.sse import SseEvent

__all__ = [
    "EMPTY",
    "LiveReply",
    "body_value",
    "is_frame",
    "real_frames",
]


EMPTY = object()


def body_value(message: Response) -> Any:
    """The parsed body, `EMPTY`, or `NOT_JSON` (uses the cached `Response.json`)."""
    if not message.body:
        return EMPTY
    value = message.json
    if value is None and message.body.strip() != b"null":
        return NOT_JSON
    return value


def is_frame(event: SseEvent) -> bool:
    """Whether an SSE frame is a frame of the reply: one that holds only comments (a keep-alive
    ping) is not (rule 7), nor counted by `@during ... frame K` and `@truncated`."""
    return not (
        event.data is None and event.event is None and event.id is None and event.retry is None
    )


def real_frames(events: Iterable[SseEvent]) -> list[SseEvent]:
    """The frames of a reply, without its comment-only frames (keep-alive pings)."""
    return [event for event in events if is_frame(event)]


def frames_read(golden: Exchange) -> int | None:
    """How many frames of the reply to read before the player cuts it: the data frames a
    truncated recording holds (keep-alive pings are not waited for); 0 for a gRPC call cut
    before its first message (its recorded body is the status of its client's leaving);
    None (read to the end) for a recording that is whole, or a truncated single body."""
    if not golden.truncated:
        return None
    if golden.response.events is not None:
        return len(real_frames(golden.response.events))
    return 0 if golden.request.is_grpc else None


class LiveReply:
    """A live reply as it arrived: status, reason, header pairs, raw body bytes.

    `ReplayState.compare` takes it in place of a `Response` so that a JSON reply that matches
    is never pretty-printed: the fast path reads the wire bytes (parsed and written on one line
    by the C encoder), and the model's `Response` (`.response`, built on first use) is made
    only for a stream, a reply the fast path cannot decide, and `bless`. Header values are
    stripped as `Headers` strips them. `cut`: reading stopped before the reply ended (an event
    stream read only up to the frames of a truncated recording).
    """

    __slots__ = (
        "_response",
        "body",
        "cut",
        "events",
        "headers",
        "http_version",
        "reason",
        "status",
        "trailers",
    )

    def __init__(
        self,
        status: int,
        reason: str,
        headers: Iterable[tuple[str, str]],
        body: bytes,
        http_version: str = "HTTP/1.1",
        *,
        cut: bool = False,
        events: tuple[SseEvent, ...] | None = None,
        trailers: Iterable[tuple[str, str]] = (),
    ) -> None:
        self.status = status
        self.events = events  # a gRPC stream's messages (an HTTP stream is parsed from body)
        self.trailers = Headers(trailers)
        self.cut = cut
        self.reason = reason
        self.headers: tuple[tuple[str, str], ...] = tuple(
            (name, value.strip()) for name, value in headers
        )
        self.body = body
        self.http_version = http_version
        self._response: Response | None = None

    @classmethod
    def of(cls, response: Response, *, cut: bool = False) -> LiveReply:
        """A reply already in the model's form (a gRPC call's, `recorder.replay.grpc_send`)."""
        live = cls(
            response.status,
            response.reason,
            response.headers,
            response.body,
            response.http_version,
            cut=cut,
            events=response.events,
            trailers=response.trailers,
        )
        live._response = response
        return live

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
                events=self.events,
                http_version=self.http_version,
                trailers=self.trailers,
            )
        return self._response

    def __repr__(self) -> str:
        return f"LiveReply({self.status}, {len(self.body)} bytes)"
