"""Card handling: agent cards reach the client pointing at the proxy.

Agent cards (`/.well-known/agent-card.json`, GetExtendedAgentCard over JSON-RPC or REST)
reach the client with their interface URLs pointing at the proxy (`recorder.record.cards`), so
an A2A client sends every later call through the proxy too; the transcript keeps the card as
the agent sent it. The upstream is asked without `If-None-Match` (its ETag names the
unrewritten card); the client gets an ETag of the rewritten card and a 304 when it already
holds that one. A card that comes streamed (no Content-Length, or larger than the buffer
limit) passes through unchanged, with a warning. The card's GRPC interface points at the
recorder's gRPC listener when there is one (`grpc`, `recorder.record.grpc_proxy`; its agent
address learned from the first card that lists one); an interface the client would still
call the agent by (a binding the recorder does not proxy) is named once, in a warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import replace
from typing import Any, Protocol

from recorder.bindings import grpc as grpc_binding
from recorder.bindings import operations, rest
from recorder.record.cards import (
    GrpcRoute,
    Origin,
    card_of_reply,
    grpc_address,
    rewrite_card_body,
    unproxied,
)
from recorder.record.proxy.call import Call, Scope


class GrpcSide(Protocol):
    """What the card room needs of the gRPC listener (`recorder.record.grpc_proxy`)."""

    upstream: str | None
    port: int
    http_base: str

    def route(self) -> GrpcRoute | None: ...


log = logging.getLogger(__name__)

_CONDITIONAL = frozenset({b"if-none-match", b"if-modified-since"})
CARD_OPERATIONS = frozenset({"GetAgentCard", "GetExtendedAgentCard"})
_CARD = operations.AGENT_CARD_PATH  # under any prefix, as the card routes of record.naming
_EXTENDED_CARD = rest.EXTENDED_CARD_PATH
_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$")


class AgentCards:
    """Tells card requests, and rewrites the cards the upstream sends for the client."""

    def __init__(self, upstream: Origin) -> None:
        self.upstream = upstream
        self.grpc: GrpcSide | None = None
        self._warned: set[tuple[str, str]] = set()

    def inspect(self, call: Call, scope: Scope) -> None:
        """Set `call.operation` when it is cheap to tell (it decides card rewriting); for a
        card, ask the upstream for the whole card and note where the client sees the proxy."""
        call.operation = _quick_operation(call.request.method, scope["path"], call.request.body)
        if call.operation in CARD_OPERATIONS:
            # ask for the whole card: the upstream's validators name the unrewritten one
            request = call.request
            call.request = replace(
                request, headers=tuple((n, v) for n, v in request.headers if n not in _CONDITIONAL)
            )
            call.client_base = _client_base(scope, call.request.client_host)

    def warn_streamed(self, call: Call, status: int, buffer_limit: int) -> None:
        """A card that comes streamed cannot be rewritten: say so."""
        if call.operation in CARD_OPERATIONS and status == 200:
            log.warning(
                "the agent card of %s is streamed (no Content-Length, or over %d bytes): "
                "passed through without pointing its URLs at the proxy, so the client may "
                "call the agent directly",
                call.shown,
                buffer_limit,
            )

    def rewrite(
        self, call: Call, body: bytes, headers: list[tuple[bytes, bytes]]
    ) -> tuple[bytes, list[tuple[bytes, bytes]], bool]:
        """The card for the client, its headers (own ETag), and whether a 304 answers it."""
        try:
            proxy = Origin.parse(call.client_base)
        except ValueError:
            return body, headers, False
        route = self._grpc_route(body, call.client_base)
        rewritten = rewrite_card_body(body, self.upstream, proxy, route)
        self._warn_unproxied(rewritten if rewritten is not None else body, proxy)
        if rewritten is None:
            return body, headers, False
        etag = b'W/"' + hashlib.sha256(rewritten).hexdigest().encode() + b'"'
        headers = [(n, v) for n, v in headers if n.lower() not in (b"etag", b"last-modified")]
        headers.append((b"etag", etag))
        asked = call.request.if_none_match
        if asked is not None and _etag_matches(asked, etag):
            return b"", headers, True
        return rewritten, headers, False

    def _grpc_route(self, body: bytes, client_base: str) -> GrpcRoute | None:
        """The gRPC listener's route, its agent address learned from this card when it has
        none yet (the card's GRPC interface on the agent's host)."""
        side = self.grpc
        if side is None:
            return None
        if not side.http_base:
            side.http_base = client_base
        if side.upstream is None:
            for binding, url in _interfaces(body):
                address = grpc_address(url) if binding == grpc_binding.BINDING else None
                if address is not None and self.upstream.same_host(address[0]):
                    side.upstream = url
                    log.info("gRPC calls go to the agent at %s", url)
                    break
        return side.route()

    def _warn_unproxied(self, body: bytes, proxy: Origin) -> None:
        """Name, once each, the interfaces of the card the client gets that go around the
        recorder: what is called there is not recorded."""
        grpc_port = self.grpc.port if self.grpc is not None and self.grpc.upstream else None
        for binding, url in unproxied(_card(body), proxy, grpc_port):
            if (binding, url) in self._warned:
                continue
            self._warned.add((binding, url))
            grpc = binding == grpc_binding.BINDING
            hint = " (recorder record --grpc-listen, the grpc extra)" if grpc else ""
            log.warning(
                "the agent card lists a %s interface at %s that the recorder does not proxy%s: "
                "calls there go straight to the agent and are NOT recorded",
                binding,
                url,
                hint,
            )


def _card(body: bytes) -> Any:
    try:
        return card_of_reply(json.loads(body))[0]
    except (ValueError, RecursionError):
        return None


def _interfaces(body: bytes) -> list[tuple[str, str]]:
    card = _card(body)
    found: list[tuple[str, str]] = []
    if isinstance(card, dict):
        for key in ("supportedInterfaces", "additionalInterfaces"):
            listed = card.get(key)
            for item in listed if isinstance(listed, list) else ():
                if isinstance(item, dict) and isinstance(item.get("url"), str):
                    found.append((str(item.get("protocolBinding") or ""), item["url"]))
    return found


def _client_base(scope: Scope, client_host: bytes | None) -> str:
    """The proxy's address as the client used it (Host header), else the listening socket."""
    scheme = scope.get("scheme", "http")
    if client_host is not None:
        host = client_host.decode("latin-1").strip()
        if _HOST.match(host):
            return f"{scheme}://{host}"
    server = scope.get("server")
    if server:
        host, port = server[0], server[1]
        host = f"[{host}]" if ":" in host else host
        return f"{scheme}://{host}:{port}"
    return f"{scheme}://127.0.0.1"


def _quick_operation(method: str, path: str, body: bytes) -> str:
    """The operation name, computed cheaply before forwarding (it decides card rewriting)."""
    if method == "GET":
        if path.endswith(_CARD) or path == operations.LEGACY_AGENT_CARD_PATH:
            return "GetAgentCard"
        if path.endswith(_EXTENDED_CARD):
            return "GetExtendedAgentCard"
        return ""
    if method == "POST" and b"GetExtendedAgentCard" in body:
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            return ""
        if isinstance(value, dict) and value.get("method") == "GetExtendedAgentCard":
            return "GetExtendedAgentCard"
    return ""


def _etag_matches(if_none_match: bytes, etag: bytes) -> bool:
    """RFC 9110 §13.1.2: weak comparison; `*` matches any current representation."""
    wanted = etag.removeprefix(b"W/")
    for candidate in if_none_match.split(b","):
        candidate = candidate.strip()
        if candidate == b"*" or candidate.removeprefix(b"W/") == wanted:
            return True
    return False
