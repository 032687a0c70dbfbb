"""gRPC calls in exports (pure): httpyac's `GRPC` requests in a `.http` file, a grpcurl
command where a curl script cannot send one.

- `.http` (JetBrains HTTP Client and httpyac): `GRPC {{grpc_host}}/lf.a2a.v1.A2AService/Method`,
  the metadata as headers (but what the client writes itself: content-type, te, user-agent,
  grpc-*, host), the request message as its ProtoJSON. httpyac needs the service's proto
  (`proto < ./a2a.proto`); the a2a-sdk does not ship the A2A 1.0 `a2a.proto` (only its
  compiled `a2a_pb2`), so the file says where to put it (the A2A specification's
  `specification/grpc/a2a.proto`). `@grpc_host` is the call's recorded `host`, or to define.
- curl cannot send a gRPC call: a curl export of one is an error that gives the grpcurl
  command instead (`grpcurl -plaintext -proto a2a.proto -H ... -d JSON HOST:PORT
  lf.a2a.v1.A2AService/Method`).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

from recorder.bindings.grpc import SERVICE, method_of
from recorder.model import Exchange, Request

__all__ = ["GRPC_HOST", "grpc_head", "grpc_request_line", "grpc_sent_headers", "grpcurl_command"]

GRPC_HOST = "grpc_host"
"""The `.http` variable a gRPC call is sent to (`host:port`)."""
PROTO = "a2a.proto"
_NOT_SENT = frozenset({"host", "content-type", "te", "user-agent", "content-length"})


def grpc_sent_headers(request: Request) -> list[tuple[str, str]]:
    """The metadata an exported call sends."""
    return [
        (name, value)
        for name, value in request.headers
        if name.lower() not in _NOT_SENT and not name.lower().startswith(("grpc-", ":"))
    ]


def grpc_request_line(request: Request) -> str:
    """`GRPC {{grpc_host}}/lf.a2a.v1.A2AService/SendMessage` (httpyac's request line)."""
    return f"GRPC {{{{{GRPC_HOST}}}}}{request.target}"


def _recorded_host(exchanges: Sequence[Exchange]) -> str | None:
    for exchange in exchanges:
        if exchange.request.is_grpc:
            host = exchange.request.headers.get("host")
            if host:
                return host
    return None


def grpc_head(exchanges: Sequence[Exchange], grpc_host: str | None) -> list[str]:
    """The head lines a `.http` export with gRPC calls needs ([] without any): the proto
    directive and where the proto comes from, and `@grpc_host` (or the note to define it)."""
    if not any(exchange.request.is_grpc for exchange in exchanges):
        return []
    lines = [
        f"# The GRPC requests ({SERVICE}) need the A2A 1.0 proto beside this file as {PROTO}",
        "# (the A2A specification's specification/grpc/a2a.proto; the a2a-sdk ships only its",
        "# compiled messages). httpyac reads it from the next line.",
        f"proto < ./{PROTO}",
    ]
    host = grpc_host or _recorded_host(exchanges)
    if host:
        lines.append(f"@{GRPC_HOST} = {host}")
    return lines


def grpcurl_command(request: Request, address: str | None) -> str:
    """The grpcurl command of a gRPC call (`address`: host:port, else `$GRPC_HOST`)."""
    words = ["grpcurl", "-plaintext", "-proto", PROTO]
    for name, value in grpc_sent_headers(request):
        words.extend(["-H", shlex.quote(f"{name}: {value}")])
    try:
        body = json.dumps(json.loads(request.body or b"{}"), ensure_ascii=False)
    except ValueError:
        body = (request.body or b"{}").decode("utf-8", "replace")
    words.extend(["-d", shlex.quote(body)])
    words.append(shlex.quote(address) if address else '"$GRPC_HOST"')
    words.append(f"{SERVICE}/{method_of(request.target) or request.target.rsplit('/', 1)[-1]}")
    return " ".join(words)
