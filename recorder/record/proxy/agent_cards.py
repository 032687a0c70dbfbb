"""Card handling: agent cards reach the client pointing at the proxy.

Agent cards (`/.well-known/agent-card.json`, GetExtendedAgentCard over JSON-RPC or REST)
reach the client with their interface URLs pointing at the proxy (`recorder.record.cards`), so
an A2A client sends every later call through the proxy too; the transcript keeps the card as
the agent sent it. The upstream is asked without `If-None-Match` (its ETag names the
unrewritten card); the client gets an ETag of the rewritten card and a 304 when it already
holds that one. A card that comes streamed (no Content-Length, or larger than the buffer
limit) passes through unchanged, with a warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re

from recorder.record.cards import Origin, rewrite_card_body
from recorder.record.proxy.call import Call, Scope

log = logging.getLogger(__name__)

_CONDITIONAL = frozenset({b"if-none-match", b"if-modified-since"})
CARD_OPERATIONS = frozenset({"GetAgentCard", "GetExtendedAgentCard"})
_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$")


class AgentCards:
    """Tells card requests, and rewrites the cards the upstream sends for the client."""

    def __init__(self, upstream: Origin) -> None:
        self.upstream = upstream

    def inspect(self, call: Call, scope: Scope) -> None:
        """Set `call.operation` when it is cheap to tell (it decides card rewriting); for a
        card, ask the upstream for the whole card and note where the client sees the proxy."""
        call.operation = _quick_operation(call.method, scope["path"], call.body)
        if call.operation in CARD_OPERATIONS:
            # ask for the whole card: the upstream's validators name the unrewritten one
            call.headers = [(n, v) for n, v in call.headers if n not in _CONDITIONAL]
            call.client_base = _client_base(scope, call.client_host)

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
        rewritten = rewrite_card_body(body, self.upstream, proxy)
        if rewritten is None:
            return body, headers, False
        etag = b'W/"' + hashlib.sha256(rewritten).hexdigest().encode() + b'"'
        headers = [(n, v) for n, v in headers if n.lower() not in (b"etag", b"last-modified")]
        headers.append((b"etag", etag))
        if call.if_none_match is not None and _etag_matches(call.if_none_match, etag):
            return b"", headers, True
        return rewritten, headers, False


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
        if path.endswith("/.well-known/agent-card.json") or path == "/.well-known/agent.json":
            return "GetAgentCard"
        if path.endswith("/extendedAgentCard"):
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
