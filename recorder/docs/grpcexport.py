"""gRPC calls in exports (pure): httpyac's `GRPC` requests in a `.http` file, grpcurl commands
in a bash script. Both load the service from `a2a.proto` beside the export (the a2a-sdk ships
only its compiled `a2a_pb2`; `recorder.bindings.grpc_proto` prints the proto from it, and the
CLI writes it next to the export).

- `.http` (JetBrains HTTP Client and httpyac): `proto < ./a2a.proto` in the file's head with
  proto-loader's options (enums and 64-bit integers read back as text, as ProtoJSON writes
  them), `@grpc_host` (the `--grpc-agent`, else the call's recorded `host`, else a variable
  to define), then each call as `GRPC {{grpc_host}}/lf.a2a.v1.A2AService/Method`, the
  metadata as headers (but what the client writes itself: content-type, te, user-agent,
  grpc-*, host), the request message as its ProtoJSON, but for the well-known types
  (Struct, Value, Timestamp …), which protobufjs reads only in its object form
  (`loader_body`).
- bash: `grpcurl -plaintext -import-path "$PROTO_DIR" -proto a2a.proto -format-error -H ...
  -d JSON "$GRPC_HOST" lf.a2a.v1.A2AService/Method` (`grpcurl_arguments`); the script's
  `grpc_call` helper (`GRPC_HELPERS`) keeps its reply as `GRPC <code> <NAME>`, a blank line
  and the reply's messages (or the failed call's google.rpc.Status as JSON), so a reply reads
  as an HTTP one does (`show`, `body`): grpcurl exits 64 + the status code on a failed call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from recorder.bindings.grpc import SERVICE, STATUS_NAMES, message_type, method_of
from recorder.bindings.grpc_proto import PROTO_FILE, loader_object
from recorder.format.jsonbody import pretty_json, relayout
from recorder.format.literals import PLACEHOLDER, escape_json_text
from recorder.format.model import Exchange, Request

__all__ = [
    "GRPC_HELPERS",
    "GRPC_HOST",
    "PROTO_FILE",
    "grpc_head",
    "grpc_host_of",
    "grpc_request_line",
    "grpc_sent_headers",
    "grpcurl_arguments",
    "has_grpc",
    "loader_body",
]

GRPC_HOST = "grpc_host"
"""The `.http` variable a gRPC call is sent to (`host:port`); `GRPC_HOST` in a script."""
_NOT_SENT = frozenset({"host", "content-type", "te", "user-agent", "content-length"})
# proto-loader's options (httpyac evaluates each value): replies' enums and int64s as text
_LOADER_OPTIONS = ("enums: String", "longs: String")

GRPC_HELPERS = (
    "GRPC_STATUS=("
    + " ".join(STATUS_NAMES)
    + ")\n"
    + r"""grpc_call() {  # grpcurl (the other arguments) as exchange $1: its status line, its reply
  local number=$1 code=0
  shift
  "$@" > "$out/$number.grpc" 2> "$out/$number.err" || code=$?
  if [ "$code" -ne 0 ] && [ "$code" -lt 64 ]; then
    cat "$out/$number.err" >&2
    echo "exchange $number: grpcurl failed (exit $code) before the agent answered" >&2
    return 1
  fi
  if [ "$code" -ge 64 ]; then code=$((code - 64)); fi
  {
    echo "GRPC $code ${GRPC_STATUS[$code]:-UNKNOWN}"
    echo
    cat "$out/$number.grpc"
    if [ "$code" -ne 0 ]; then cat "$out/$number.err"; fi
  } > "$out/$number"
}
grpc_frames() {  # how many messages of gRPC stream $1 came whole so far
  jq -n '[inputs] | length' "$out/$1.grpc" 2> /dev/null || echo 0
}
"""
)


def has_grpc(exchanges: Sequence[Exchange]) -> bool:
    """Does any exchange hold a gRPC call (so the export needs `a2a.proto`)?"""
    return any(exchange.request.is_grpc for exchange in exchanges)


def grpc_sent_headers(request: Request) -> list[tuple[str, str]]:
    """The metadata an exported call sends."""
    return [
        (name, value)
        for name, value in request.headers
        if name.lower() not in _NOT_SENT and not name.lower().startswith(("grpc-", ":"))
    ]


def loader_body(body: bytes, target: str) -> bytes:
    """A `.http` GRPC request's message as httpyac sends it whole: its well-known-type
    fields (metadata, a data part, a timestamp) in protobufjs's object form
    (`recorder.bindings.grpc_proto.loader_object`); the body as it is when it holds none."""
    method = method_of(target)
    try:
        text = body.decode("utf-8")
        value = json.loads(text)
        message = message_type(method or "").DESCRIPTOR
    except ValueError:
        return body  # not JSON, or no method of the service: sent as recorded
    converted = loader_object(message, value)
    if converted == value:
        return body
    # written anew from the value: a literal `{{NAME}}` (`\\u007b{` in the text, `{{` in
    # the value) escaped again, the text's own placeholders kept
    placeholders = {match.group(1) for match in PLACEHOLDER.finditer(text)}
    return (escape_json_text(pretty_json(converted), placeholders) + "\n").encode()


def grpc_request_line(request: Request) -> str:
    """`GRPC {{grpc_host}}/lf.a2a.v1.A2AService/SendMessage` (httpyac's request line)."""
    return f"GRPC {{{{{GRPC_HOST}}}}}{request.target}"


def grpc_host_of(exchanges: Sequence[Exchange], grpc_host: str | None = None) -> str | None:
    """Where the calls go: `grpc_host` (the `--grpc-agent`), else the first recorded `host`."""
    if grpc_host:
        return grpc_host
    for exchange in exchanges:
        if exchange.request.is_grpc:
            host = exchange.request.headers.get("host")
            if host:
                return host
    return None


def grpc_head(exchanges: Sequence[Exchange], grpc_host: str | None) -> list[str]:
    """The head lines a `.http` export with gRPC calls needs ([] without any): `@grpc_host`
    (or the note to define it), and the proto directive with its loader options."""
    if not has_grpc(exchanges):
        return []
    host = grpc_host_of(exchanges, grpc_host)
    lines = [] if host else [f"# Define {GRPC_HOST} (the agent's gRPC host:port)."]
    if host:
        lines.append(f"@{GRPC_HOST} = {host}")
    lines.append(
        f"# The GRPC requests ({SERVICE}) load the service from {PROTO_FILE} beside this file"
    )
    lines.append(
        "# (recorder export writes it next to the export, or into the folder --proto names)."
    )
    lines.append(f"proto < ./{PROTO_FILE}")
    lines.extend(_LOADER_OPTIONS)
    return lines


def grpcurl_arguments(request: Request) -> tuple[list[str], str, str]:
    """What a grpcurl command of the call sends: its metadata (each `-H` text), its message as
    one line of JSON (`-d`), and its method (`lf.a2a.v1.A2AService/SendMessage`)."""
    headers = [f"{name}: {value}" for name, value in grpc_sent_headers(request)]
    body = (request.body or b"{}").decode("utf-8", "replace")
    try:
        json.loads(body)
    except ValueError:
        pass
    else:
        body = relayout(body, one_line=True)  # (each scalar as recorded, placeholders too)
    method = method_of(request.target) or request.target.rsplit("/", 1)[-1]
    return headers, body, f"{SERVICE}/{method}"
