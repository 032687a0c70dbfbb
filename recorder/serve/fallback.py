"""`--fallback URL`: a request that matches no recorded exchange goes to a real agent, and its
reply comes back to the client as the agent sent it (WireMock's proxying, for A2A).

The request goes as the client sent it (less the hop-by-hop headers, Host and
Accept-Encoding: the agent answers in identity so that the reply can be read); the reply's
status and headers come back, an event stream chunk by chunk as it arrives, any other body
whole with the agent's address in it (a card's interface URLs) made the stand-in's, as the
client reached it. The recording of what passes is not this room's business: the CLI puts the
recorder's own proxy in front of the agent for `serve -o DIR`, and hands its URL here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from recorder.addresses import address_in_urls
from recorder.format.jsonbody import compact_json, json_value
from recorder.format.model import header_bytes
from recorder.serve.match import LiveRequest
from recorder.serve.replies import grpc_card_reply

__all__ = ["Fallback"]

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
    }
)


class Fallback:
    """Relays requests to the agent at `url` (http or https; one httpx client, opened on the
    serving event loop at the first relay)."""

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"--fallback {url}: expected an http:// or https:// URL")
        self.url = url.rstrip("/")
        self.authority = parts.netloc
        self.timeout = timeout
        self.relayed = 0
        self._client: httpx.AsyncClient | None = None

    async def relay(
        self, live: LiveRequest, send: Send, host: str | None, *, grpc: str | None = None
    ) -> None:
        """Send `live` to the agent and its reply to the client (a card's GRPC interface made
        the stand-in's gRPC address `grpc`, or left out when it serves none: gRPC calls are not
        relayed). Raises httpx.HTTPError when the agent cannot be reached (nothing was sent to
        the client then)."""
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout, follow_redirects=False)
        headers = [(name, value) for name, value in live.headers if name.lower() not in _HOP_BY_HOP]
        request = self._client.build_request(
            live.method, self.url + live.target, headers=headers, content=live.body
        )
        response = await self._client.send(request, stream=True)
        try:
            kept = [
                (name.lower(), value)
                for name, value in response.headers.multi_items()
                if name.lower() not in _HOP_BY_HOP
            ]
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                await send(
                    {
                        "type": "http.response.start",
                        "status": response.status_code,
                        "headers": _raw(kept),
                    }
                )
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            else:
                body = _grpc_interface(self._address(await response.aread(), host), grpc)
                kept.append(("content-length", str(len(body))))
                await send(
                    {
                        "type": "http.response.start",
                        "status": response.status_code,
                        "headers": _raw(kept),
                    }
                )
                await send({"type": "http.response.body", "body": body})
        finally:
            await response.aclose()
        self.relayed += 1

    def _address(self, body: bytes, host: str | None) -> bytes:
        """The agent's address in `body` made the stand-in's (`host`: as the client reached
        it)."""
        pattern = address_in_urls(self.authority)
        if not host or pattern is None or b"//" not in body:
            return body
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return body
        return pattern.sub(f"//{host}", text).encode("utf-8")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _grpc_interface(body: bytes, grpc: str | None) -> bytes:
    """A relayed card's GRPC interface (the agent's own address, or the recorder's in front
    of it, which the client must not dial around the stand-in) made `grpc`, or left out."""
    if b'"GRPC"' not in body:
        return body
    value = json_value(body)  # (its numbers as written: the card is written back)
    fixed = grpc_card_reply(value, grpc)
    return body if fixed == value else compact_json(fixed)


def _raw(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(name.encode("latin-1"), header_bytes(value)) for name, value in headers]
