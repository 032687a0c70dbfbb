"""Sending a request to the agent and reading its live reply.

Each exchange's request (carried forward and with its placeholders filled) goes to the agent
over one keep-alive httpx transport per worker. The recorded Host, Content-Length and
hop-by-hop headers are not sent (httpx writes Host and Content-Length for the live request);
the body bytes go as recorded.

The live reply is kept as it arrived (`recorder.replay.verdict.state.LiveReply`: real status,
reason, headers and body; an event stream read as it arrives and kept raw), within one deadline for
the whole reply. Its model `Response` (pretty JSON, SSE parsed losslessly) is built only when
needed: for a stream, a reply the fast path cannot decide, and `--update`.
"""

from __future__ import annotations

import errno
import functools
import importlib.util
import re
import time
from collections.abc import Callable
from typing import Any

import httpx

from recorder.errors import NoReplyError, UpstreamError
from recorder.format.model import Request, Transcript, header_bytes, header_text, is_event_stream
from recorder.replay.verdict.live import is_frame
from recorder.replay.verdict.state import LiveReply

__all__ = [
    "DEFAULT_TIMEOUT",
    "agent_base_url",
    "make_transport",
    "recorded_base_url",
    "send_raw",
]

DEFAULT_TIMEOUT = 30.0

# RFC 9110 §7.6.1: Connection and the fields it names are hop-by-hop; these are the usual ones
# (RFC 2616 §13.5.1).
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# Content-Length is recomputed for the body actually sent; Host names the recorded agent and
# httpx writes the live one.
_NOT_SENT = _HOP_BY_HOP | {"content-length", "host"}
# What the live reply keeps: the same fields the recorder drops at record time are dropped here,
# so a blessed reply looks like a recorded one. httpx has decoded any Content-Encoding.
_NOT_KEPT = _HOP_BY_HOP | {"content-length", "content-encoding"}
_BODYLESS_METHODS = frozenset({"GET", "HEAD", "DELETE", "OPTIONS", "TRACE"})


# --------------------------------------------------------------------------- addresses


def agent_base_url(url: str) -> str:
    """`http://127.0.0.1:8000/` -> `http://127.0.0.1:8000`; raises ValueError on a bad URL.

    A path in the URL (an agent mounted under a prefix) is kept and put before every recorded
    request path: `http://host:port/a2a` sends `/a2a/a2a/jsonrpc` for a recorded
    `/a2a/jsonrpc` (give the agent's base URL unless it is mounted under a prefix). An invalid
    port is said as such.
    """
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        bad = re.search(r"^[a-zA-Z]+://[^/?#]*:(\d+)(?:[/?#]|$)", url)
        if bad and int(bad.group(1)) > 65535:
            raise ValueError(
                f"invalid port {bad.group(1)} in {url!r} (ports are 1-65535)"
            ) from None
        raise ValueError(f"not a URL: {url!r} ({exc})") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(
            f"expected an http:// or https:// URL such as http://127.0.0.1:41242, got {url!r}"
        )
    if parsed.port is not None and not 0 < parsed.port <= 65535:
        raise ValueError(f"invalid port {parsed.port} in {url!r} (ports are 1-65535)")
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    port = f":{parsed.port}" if parsed.port is not None else ""
    return f"{parsed.scheme}://{host}{port}{parsed.path.rstrip('/')}"


def recorded_base_url(transcript: Transcript) -> str | None:
    """The address the transcript was recorded against: `http://` + the first Host header."""
    return transcript.recorded_base_url


# --------------------------------------------------------------------------- sending


def make_transport(base_url: str = "http://") -> httpx.HTTPTransport:
    """A keep-alive HTTP/1.1 connection pool to the agent at `base_url` (one per worker).

    The player sends through the transport, not an `httpx.Client`: a replay must send exactly
    the recorded request, so none of what a client adds is wanted (default Accept,
    Accept-Encoding and User-Agent headers, cookies kept from earlier replies, redirects
    followed), and skipping it makes each exchange cheaper. Certificates are loaded (and
    verified) only for an https agent: loading them costs ~20 ms that plain http never needs.
    """
    return httpx.HTTPTransport(retries=0, verify=base_url.startswith("https:"))


def send_raw(
    transport: httpx.BaseTransport,
    base_url: str,
    request: Request,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    max_events: int | None = None,
    on_frames: Callable[[int], None] | None = None,
    on_chunk: Callable[[bytes], None] | None = None,
    on_sent: Callable[[], None] | None = None,
) -> LiveReply:
    """Send `request` to the agent at `base_url`; return its reply as it arrived (a
    `LiveReply`: its `Response` is built on use).

    An event stream is read as it arrives; with `max_events` (a golden reply recorded
    truncated) reading stops once that many frames arrived (comment-only frames, keep-alive
    pings, do not count), and the reply is marked `cut`; `on_frames(n)` is told how many
    frames have arrived (0 when the reply's head arrives), `on_chunk(data)` each chunk of the
    stream as it arrives. `on_sent()` is called once the whole request has been written (from
    httpcore's `trace` extension; a transport that reports no trace never calls it, and the
    caller takes the reply's head for it). The whole reply must arrive within
    `timeout` seconds. Raises `UpstreamError` when the agent cannot be reached, and its
    `NoReplyError` when no whole reply arrives (too slow, or the connection dropped).
    """
    target = request.target
    if not target.startswith("/"):
        # absolute-form (RFC 9112 §3.2.2): keep the path and query only
        try:
            url = httpx.URL(target)
        except httpx.InvalidURL as exc:
            raise NoReplyError(f"cannot send {request.method} {target}: {exc}") from None
        if not url.is_absolute_url:
            # asterisk-form (`OPTIONS *`) and the like: httpx sends origin-form only
            raise NoReplyError(
                f"cannot send {request.method} {target}: recorder sends requests for a path"
                " (such as /a2a/jsonrpc) or a full URL"
            )
        target = url.raw_path.decode("ascii")
    # bytes: a header value is octets (RFC 9110 §5.5); the recorder wrote them as UTF-8 text
    # where they were UTF-8 (`recorder.format.model.header_text`), and sends them so
    headers = [
        (name.encode("latin-1", "replace"), header_bytes(value))
        for name, value in request.headers
        if name.lower() not in _NOT_SENT
    ]
    body: bytes | None = request.body
    if not body and request.method.upper() in _BODYLESS_METHODS:
        body = None
    deadline = time.monotonic() + timeout
    try:
        url = _url(base_url + target)
    except httpx.InvalidURL as exc:
        raise NoReplyError(f"cannot send {request.method} {target}: {exc}") from None
    extensions: dict[str, object] = {"timeout": _timeouts(timeout)}
    if on_sent is not None:
        extensions["trace"] = _sent_tracer(on_sent)
    try:
        outgoing = httpx.Request(
            request.method,
            url,
            headers=headers,
            content=body,
            extensions=extensions,
        )
        reply = transport.handle_request(outgoing)
        try:
            content_type = reply.headers.get("content-type")
            if on_frames is not None:
                on_frames(0)
            encoding = reply.headers.get("content-encoding")
            if encoding is not None and not _decodable(encoding):
                raise NoReplyError(
                    f"the reply of the agent at {base_url} ({request.method} {target}) has"
                    f" Content-Encoding: {encoding}, which recorder cannot decode"
                )
            cut = False
            if is_event_stream(content_type):
                data, cut = _read_stream(reply, deadline, max_events, on_frames, on_chunk)
            else:
                data = _read_body(reply, deadline)
        finally:
            reply.close()
    except _StreamDeadline as exc:
        what = "event stream" if exc.args and exc.args[0] == "stream" else "reply"
        raise NoReplyError(
            f"the {what} that the agent at {base_url} sent for {request.method} {target} "
            f"did not end within {timeout:g} s"
        ) from None
    except httpx.ConnectTimeout:
        raise UpstreamError(
            f"cannot reach the agent at {base_url}: it did not accept a connection within"
            f" {timeout:g} s"
        ) from None
    except httpx.TimeoutException:
        raise NoReplyError(
            f"the agent at {base_url} did not answer within {timeout:g} s"
            f" ({request.method} {target})"
        ) from None
    except httpx.ConnectError as exc:
        raise UpstreamError(f"cannot reach the agent at {base_url}: {_reason(exc)}") from None
    except httpx.DecodingError as exc:
        raise NoReplyError(
            f"the reply of the agent at {base_url} ({request.method} {target}) cannot be"
            f" decoded as its Content-Encoding says: {exc}"
        ) from None
    except httpx.RequestError as exc:
        raise NoReplyError(
            f"no whole reply from the agent at {base_url} ({request.method} {target}):"
            f" {_reason(exc)}"
        ) from None
    return LiveReply(
        reply.status_code,
        reply.reason_phrase,
        [
            (name, header_text(value))
            for name, value in ((n.decode("latin-1"), v) for n, v in reply.headers.raw)
            if name.lower() not in _NOT_KEPT
        ],
        data,
        reply.http_version if reply.http_version.startswith("HTTP/") else "HTTP/1.1",
        cut=cut,
    )


class _StreamDeadline(Exception):
    """An event stream still open when the time for the whole reply ran out."""


@functools.lru_cache(maxsize=16)
def _timeouts(seconds: float) -> dict[str, float | None]:
    """httpx's per-request timeout settings (connect, read, write, pool), made once."""
    return httpx.Timeout(seconds).as_dict()


@functools.lru_cache(maxsize=512)
def _url(text: str) -> httpx.URL:
    """Parsed once per distinct URL (a JSON-RPC transcript sends every request to one URL)."""
    return httpx.URL(text)


def _sent_tracer(on_sent: Callable[[], None]) -> Callable[[str, dict[str, Any]], None]:
    """httpcore's `trace` extension: `on_sent()` once the request body has been written."""

    def trace(event: str, info: dict[str, Any]) -> None:
        if event.endswith(".send_request_body.complete"):
            on_sent()

    return trace


def _read_stream(
    reply: httpx.Response,
    deadline: float,
    max_events: int | None,
    on_frames: Callable[[int], None] | None,
    on_chunk: Callable[[bytes], None] | None,
) -> tuple[bytes, bool]:
    """The stream's bytes, and whether reading stopped at `max_events` frames (`cut`)."""
    from recorder.format.sse import SseDecoder

    counting = max_events is not None or on_frames is not None
    decoder = SseDecoder() if counting else None
    chunks: list[bytes] = []
    frames = 0
    if max_events is not None and max_events <= 0:
        return b"", True  # a truncated recording with no frame: nothing to wait for
    for chunk in reply.iter_bytes():
        chunks.append(chunk)
        if on_chunk is not None:
            on_chunk(chunk)
        if decoder is not None:
            # comment-only frames (keep-alive pings) are not counted
            frames += sum(map(is_frame, decoder.feed(chunk)))
            if on_frames is not None:
                on_frames(frames)
            if max_events is not None and frames >= max_events:
                return b"".join(chunks), True
        if time.monotonic() > deadline:
            raise _StreamDeadline("stream")
    return b"".join(chunks), False


def _read_body(reply: httpx.Response, deadline: float) -> bytes:
    """A whole body, within the time left for the reply: httpx's read timeout bounds each read,
    not the whole (an agent sending a byte every few seconds would never time out)."""
    chunks: list[bytes] = []
    for chunk in reply.iter_bytes():
        chunks.append(chunk)
        if time.monotonic() > deadline:
            raise _StreamDeadline("reply")
    return b"".join(chunks)


def _decodable(encoding: str) -> bool:
    """Whether httpx decodes this Content-Encoding (br and zstd only with their packages)."""
    return all(_DECODABLE.get(part.strip().lower(), False) for part in encoding.split(","))


_DECODABLE = {
    "identity": True,
    "gzip": True,
    "deflate": True,
    "br": importlib.util.find_spec("brotli") is not None
    or importlib.util.find_spec("brotlicffi") is not None,
    "zstd": importlib.util.find_spec("zstandard") is not None,
}


def _reason(exc: BaseException) -> str:
    """A short, human reason: `connection refused`, `timed out` …"""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno is not None:
            if current.errno == errno.ECONNREFUSED:
                return "connection refused"
            if current.errno == errno.ECONNRESET:
                return "connection reset"
            return (current.strerror or str(current)).lower()
        current = current.__cause__ or current.__context__
    text = str(exc)
    if "refused" in text.lower():
        return "connection refused"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"the connection closed before a whole reply ({text})" if text else "closed"
    return text or type(exc).__name__
