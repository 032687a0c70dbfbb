"""Point an agent card's interface URLs at the recording proxy instead of the agent.

An A2A client reads `supportedInterfaces[].url` from the card and sends every call there
(A2A §8; risk R11 in the reference notes): a proxy that relays the card unchanged sees only the
card fetch. So the card the *client* gets names the proxy; the transcript keeps the card as the
agent sent it.

Pure: `rewrite_card(card_json, upstream, proxy)` takes and returns values. A URL is rewritten
when it has the upstream's scheme, port and host (the loopback names `localhost`, `127.0.0.1`
and `::1` count as one host) and its path starts with the upstream's path. A `GRPC`
interface (`host:port`, A2A's gRPC binding) is rewritten to the recorder's gRPC listener when
there is one (`GrpcRoute`) and it names the agent's gRPC address. Everything else (other
hosts, `provider.url`, `documentationUrl`) is left alone; `unproxied` lists the interfaces a
rewritten card still points elsewhere by, for the warning that traffic goes around the
recorder.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass
from typing import Any

from recorder.addresses import is_loopback
from recorder.bindings import grpc as grpc_binding
from recorder.bindings import jsonrpc

__all__ = [
    "GrpcRoute",
    "Origin",
    "card_of_reply",
    "grpc_address",
    "rewrite_card",
    "rewrite_card_body",
    "rewrite_url",
    "unproxied",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Origin:
    """scheme, host, port and a path prefix: `http://localhost:41242/agent`."""

    scheme: str
    host: str
    port: int
    path: str = ""

    @classmethod
    def parse(cls, url: str) -> Origin:
        parts = urllib.parse.urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise ValueError(f"expected an http:// or https:// URL with a host, got {url!r}")
        port = parts.port or _DEFAULT_PORTS[scheme]
        return cls(scheme, parts.hostname.lower(), port, parts.path.rstrip("/"))

    @property
    def base(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = _DEFAULT_PORTS[self.scheme] == self.port
        authority = host if default else f"{host}:{self.port}"
        return f"{self.scheme}://{authority}{self.path}"

    def same_host(self, host: str) -> bool:
        host = host.lower()
        return host == self.host or (is_loopback(host) and is_loopback(self.host))


@dataclass(frozen=True)
class GrpcRoute:
    """The agent's gRPC address (`host:port`, as its card's GRPC interface names it) and the
    port of the recorder's gRPC listener that stands in for it."""

    upstream: str
    listen_port: int


def grpc_address(url: str) -> tuple[str, int] | None:
    """(host, port) of a GRPC interface's url (`host:port`, `[::1]:port`, a `grpc://` or
    `http://` prefix allowed), or None when it names no port."""
    rest = url.partition("://")[2] if "://" in url else url
    rest = rest.rstrip("/")
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        return None
    return host.strip("[]").lower(), int(port)


def _rewrite_grpc(url: str, upstream: Origin, proxy: Origin, grpc: GrpcRoute) -> str:
    found, agent = grpc_address(url), grpc_address(grpc.upstream)
    if found is None or agent is None or found[1] != agent[1]:
        return url
    host = found[0]
    if not (host == agent[0] or (is_loopback(host) and is_loopback(agent[0]))):
        return url
    shown = f"[{proxy.host}]" if ":" in proxy.host else proxy.host
    return f"{shown}:{grpc.listen_port}"


def rewrite_url(url: str, upstream: Origin, proxy: Origin) -> str:
    """`url` with the upstream's origin and path prefix swapped for the proxy's, or unchanged."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    if scheme != upstream.scheme or not parts.hostname or not upstream.same_host(parts.hostname):
        return url
    if (port or _DEFAULT_PORTS.get(scheme)) != upstream.port:
        return url
    path = parts.path
    if upstream.path and not (path == upstream.path or path.startswith(upstream.path + "/")):
        return url
    rest = path[len(upstream.path) :]
    query = f"?{parts.query}" if parts.query else ""
    fragment = f"#{parts.fragment}" if parts.fragment else ""
    return f"{proxy.base}{rest}{query}{fragment}"


def rewrite_card(card: Any, upstream: Origin, proxy: Origin, grpc: GrpcRoute | None = None) -> Any:
    """A copy of a parsed card with its interface URLs rewritten (v1.0 and v0.3 fields); its
    GRPC interface too with a `grpc` route."""
    if not isinstance(card, dict):
        return card
    out = dict(card)
    for key in ("supportedInterfaces", "additionalInterfaces"):
        interfaces = card.get(key)
        if isinstance(interfaces, list):
            out[key] = [_rewrite_interface(i, upstream, proxy, grpc) for i in interfaces]
    # v0.3 cards (and the SDK's legacy fields) carry the preferred interface's URL at the top
    if isinstance(card.get("url"), str):
        out["url"] = rewrite_url(card["url"], upstream, proxy)
    return out


def _rewrite_interface(
    interface: Any, upstream: Origin, proxy: Origin, grpc: GrpcRoute | None
) -> Any:
    if isinstance(interface, dict) and isinstance(interface.get("url"), str):
        url = interface["url"]
        if interface.get("protocolBinding") == grpc_binding.BINDING:
            url = _rewrite_grpc(url, upstream, proxy, grpc) if grpc is not None else url
        else:
            url = rewrite_url(url, upstream, proxy)
        return {**interface, "url": url}
    return interface


def unproxied(card: Any, proxy: Origin, grpc_port: int | None = None) -> list[tuple[str, str]]:
    """(binding, url) of each interface of a card as the client gets it that does not point
    at the recorder (its HTTP origin `proxy`, or its gRPC listener's port): calls there go
    around it, unrecorded."""
    found: list[tuple[str, str]] = []
    if not isinstance(card, dict):
        return found
    for key in ("supportedInterfaces", "additionalInterfaces"):
        interfaces = card.get(key)
        for interface in interfaces if isinstance(interfaces, list) else ():
            if not isinstance(interface, dict) or not isinstance(interface.get("url"), str):
                continue
            url, binding = interface["url"], str(interface.get("protocolBinding") or "?")
            if binding == grpc_binding.BINDING:
                address = grpc_address(url)
                ours = address is not None and address[1] == grpc_port
                if ours and address is not None and proxy.same_host(address[0]):
                    continue
            elif _points_at(url, proxy):
                continue
            found.append((binding, url))
    return found


def _points_at(url: str, proxy: Origin) -> bool:
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return False
    return bool(parts.hostname) and proxy.same_host(parts.hostname or "") and port == proxy.port


def card_of_reply(reply: Any) -> tuple[Any, str | None]:
    """Where the card sits in a reply: the body itself, or a JSON-RPC `result` (extended card).

    Returns (card, "result") for a JSON-RPC reply, (card, None) for a bare card.
    """
    if jsonrpc.is_jsonrpc(reply) and isinstance(reply.get("result"), dict):
        return reply["result"], "result"
    return reply, None


def rewrite_card_body(
    body: bytes, upstream: Origin, proxy: Origin, grpc: GrpcRoute | None = None
) -> bytes | None:
    """The rewritten JSON body (a bare card or a JSON-RPC reply holding one), or None when
    there is nothing to rewrite (not JSON, no interface URL naming the upstream)."""
    try:
        reply = json.loads(body)
    except (ValueError, RecursionError):
        return None
    card, member = card_of_reply(reply)
    rewritten = rewrite_card(card, upstream, proxy, grpc)
    if rewritten == card:
        return None
    reply = {**reply, member: rewritten} if member is not None else rewritten
    return json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode()
