"""A transcript's requests as a bash script that runs against a fresh agent (pure: text out).

The script (`export_curl`):

1. Starts with `EXPORT_MARK` (play and check skip such a file), what it needs (bash, curl, and
   jq when it captures a value) and the variables to set; `set -euo pipefail`.
2. Sends to `"$BASE_URL"` + the recorded path; `BASE_URL` defaults to the recorded agent
   (`--agent`, else `http://` + the recorded Host).
3. Prints each reply as `curl -i` shows it (status line, headers, body) under a `### N. title`
   line, then a blank line, so a reply never runs into the next status line.
4. Captures each generated value a later request sends (`recorder.docs.chains`) from the
   earlier reply with jq (`-e`: a reply without it stops the script, naming the exchange), and
   sends the capture: `"$task_id_1"`.
5. A secret placeholder `{{NAME}}` is `"${NAME:?set NAME}"`: an unset or empty variable stops
   the script before that request is sent, never an empty bearer token.
6. A request recorded `@during exchange N frame K` is sent while exchange N is open: N's curl
   runs in the background, the script waits (10 s at most) until its reply holds K frames,
   sends the request, then waits for N and prints N's reply.
7. A gRPC call is a grpcurl command (`recorder.docs.grpcexport`) to `"$GRPC_HOST"` (the
   `--grpc-agent`, else the recorded host, else to set) that loads `a2a.proto` from
   `"$PROTO_DIR"` (default: the script's folder, where the export writes it); its reply is
   printed as `GRPC 0 OK`, a blank line and its messages (a failed call's status as JSON),
   and a stream's message K is captured as the K-th JSON value of its messages so far.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

from recorder.docs.chains import Capture, JsonPath, call_notes, find_chains, templated_request
from recorder.docs.export import (
    EXPORT_MARK,
    ExportError,
    curl_command,
    export_base,
    is_streaming_request,
    sent_placeholders,
    shell_word,
    where,
)
from recorder.docs.grpcexport import (
    GRPC_HELPERS,
    PROTO_FILE,
    grpc_host_of,
    grpcurl_arguments,
)
from recorder.format.model import Exchange, Request, is_event_stream

__all__ = ["export_curl", "jq_path"]

_HELPERS = r"""out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

body() {  # the reply body of exchange $1 (what follows the header block)
  sed '1,/^\r\{0,1\}$/d' "$out/$1"
}
frame() {  # the data of frame $2 of exchange $1's event stream
  body "$1" | awk -v want="$2" '
    { sub(/\r$/, "") }
    /^data:/ { sub(/^data: ?/, ""); data = n++ ? data "\n" $0 : $0; next }
    /^$/ { if (n && ++k == want) { print data; found = 1; exit } n = 0 }
    END { if (!found && n && k + 1 == want) print data }'
}
frames() {  # how many frames of exchange $1's event stream came so far
  body "$1" | awk '
    { sub(/\r$/, "") } /^data:/ { n++ } /^$/ { if (n) k++; n = 0 } END { print k + 0 }'
}
await_frames() {  # wait (10 s at most) until exchange $1's stream holds $2 frames ($3 counts)
  local tries=0
  while [ "$("${3:-frames}" "$1")" -lt "$2" ]; do
    if [ "$tries" -ge 200 ]; then
      echo "exchange $1: frame $2 of its event stream did not come within 10 s" >&2
      return 1
    fi
    tries=$((tries + 1))
    sleep 0.05
  done
}
show() {  # print exchange $1's reply and a blank line after it
  cat "$out/$1"
  echo
}
"""


def jq_path(path: JsonPath) -> str:
    """A JSON path as a jq filter: `.result.task.id`, `.["a-b"][0]`."""
    parts: list[str] = []
    for key in path:
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif key.isidentifier() and key.isascii():
            parts.append(f".{key}")
        else:
            parts.append(".[" + _json_string(key) + "]")
    text = "".join(parts)
    return text if text.startswith(".") else "." + text


def _json_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _capture_lines(
    captures: Sequence[Capture], number_of: dict[int, int], grpc: frozenset[int] = frozenset()
) -> list[str]:
    """The jq lines that capture each value from its reply (body, SSE frame, or message K of
    a gRPC stream: the K-th JSON value of its messages)."""
    lines = []
    for capture in captures:
        number = number_of[capture.exchange]
        what = jq_path(capture.path)
        where_ = f"exchange {number}" + ("" if capture.frame is None else f" frame {capture.frame}")
        message = shlex.quote(f"{where_}: the reply has no {what}")
        if capture.frame is None:
            source, flags, jq = f"body {number}", "-er", what
        elif capture.exchange in grpc:
            # the messages so far (the stream may be open), as many as needed: a message
            # still being written after them is not read
            source = f'cat "$out/{number}.grpc"'
            flags, jq = (
                "-ner",
                f"[limit({capture.frame}; inputs)] | .[{capture.frame - 1}] | {what}",
            )
        else:
            source, flags, jq = f"frame {number} {capture.frame}", "-er", what
        lines.append(
            f"{capture.name}=$({source} | jq {flags} {shlex.quote(jq)})"
            f" || {{ echo {message} >&2; exit 1; }}"
        )
    return lines


def _grpcurl_command(request: Request, local: frozenset[str]) -> str:
    """`grpc_call`'s arguments: the grpcurl command of a gRPC call (rule 7)."""
    headers, body, method = grpcurl_arguments(request)
    lines = [f'grpcurl -plaintext -import-path "$PROTO_DIR" -proto {PROTO_FILE} -format-error']
    lines.extend("-H " + shell_word(header, local) for header in headers)
    lines.append("-d " + shell_word(body, local))
    lines.append(f'"$GRPC_HOST" {method}')
    return " \\\n  ".join(lines)


def export_curl(
    exchanges: Sequence[Exchange],
    *,
    base_url: str | None = None,
    source: str | None = None,
    start: int = 1,
    grpc_host: str | None = None,
) -> str:
    """The requests as one bash script (the module docstring's rules 1-7).

    `start` is the number of the first exchange in its file (`FILE#4` exports exchange 4);
    chains are followed within `exchanges` only."""
    sent = [e for e in exchanges if not e.sent_by_agent]
    http = [e for e in sent if not e.request.is_grpc]
    base = export_base(http or exchanges, base_url, source) if http or not sent else None
    grpc = frozenset(i for i, e in enumerate(exchanges) if e.request.is_grpc)
    chains = find_chains(exchanges)
    calls = call_notes(exchanges, start)
    local = frozenset(capture.name for capture in chains.captures)
    number_of = {index: index + start for index in range(len(exchanges))}
    opened: dict[int, list[int]] = {}
    for later, (open_index, _frame) in chains.during.items():
        opened.setdefault(open_index, []).append(later)
    secrets: list[str] = []
    blocks: list[str] = []

    def command(index: int) -> tuple[str, str]:
        exchange = exchanges[index]
        number = number_of[index]
        request = templated_request(exchange.request, chains.uses[index])
        secrets.extend(sent_placeholders(request, exclude=local))
        title = f"### {number}. {exchange.title}" if exchange.title else f"### {number}."
        if index in grpc:
            return title, f"grpc_call {number} " + _grpcurl_command(request, local)
        stream = is_streaming_request(request) or is_event_stream(exchange.response.content_type)
        try:
            text = curl_command(request, stream=stream, local=local, base_variable="BASE_URL")
        except ExportError as exc:
            raise ExportError(where(source, exchange, number) + str(exc)) from None
        return title, text + f' \\\n  > "$out/{number}"'

    def foreground(index: int, note: str = "") -> None:
        title, text = command(index)
        number = number_of[index]
        lines = [f"# {title[4:]}{note}", *calls.get(index, ()), f"echo {shlex.quote(title)}", text]
        lines.append(f"show {number}")
        lines.extend(_capture_lines(chains.of(index), number_of, grpc))
        blocks.append("\n".join(lines) + "\n")

    for index in range(len(exchanges)):
        if exchanges[index].sent_by_agent:
            continue  # a push delivery or a call (`@push`, `@call`): the agent sends it
        if index in chains.during and chains.during[index][0] in opened:
            continue  # sent by the exchange it arrived during
        if index not in opened:
            foreground(index)
            continue
        title, text = command(index)
        number = number_of[index]
        noted = "".join(line + "\n" for line in calls.get(index, ()))
        blocks.append(
            f"# {title[4:]} (in the background: later requests are sent while it is open)\n"
            f"{noted}{text} &\npid_{number}=$!\n"
        )
        counter = " grpc_frames" if index in grpc else ""
        waited = 0
        for later in opened[index]:
            frame = chains.during[later][1]
            if frame > waited:
                caught = [c for c in chains.of(index) if c.frame is not None and c.frame <= frame]
                block = [f"await_frames {number} {frame}{counter}"]
                block.extend(_capture_lines(caught, number_of, grpc))
                blocks.append("\n".join(block) + "\n")
                waited = frame
            foreground(later, f" (sent while exchange {number}'s stream is open)")
        rest = [c for c in chains.of(index) if c.frame is None or c.frame > waited]
        lines = [f'wait "$pid_{number}"', f"echo {shlex.quote(title)}", f"show {number}"]
        lines.extend(_capture_lines(rest, number_of, grpc))
        blocks.append("\n".join(lines) + "\n")

    head = ["#!/usr/bin/env bash", EXPORT_MARK + (f" from {source}" if source else "")]
    against = "GRPC_HOST" if grpc and not http else "BASE_URL"
    head.append(f"# Each request in order against {against}, each reply printed after its '### N.'")
    head.append("# line; ids that earlier replies generated are captured and sent on.")
    # jq: the captures, and counting a gRPC stream's messages for a request sent during it
    jq = bool(chains.captures) or any(open_index in grpc for open_index in opened)
    tools = ["bash", *(["curl"] if http else []), *(["grpcurl"] if grpc else [])]
    tools += ["jq"] if jq else []
    head.append(f"# Requires {', '.join(tools[:-1])} and {tools[-1]}.")
    if grpc:
        head.append(
            f"# The gRPC calls go to GRPC_HOST (host:port) and load {PROTO_FILE} from PROTO_DIR"
        )
        head.append("# (default: this script's folder, where recorder export writes it).")
    variables = list(dict.fromkeys(secrets))
    if variables:
        head.append("# Set first: " + ", ".join(variables) + ".")
    head.append("set -euo pipefail")
    for tool, why in (("jq", "jq (apt-get install jq)"), ("grpcurl", "grpcurl")):
        if tool in tools:
            head.append(
                f'command -v {tool} > /dev/null || {{ echo "this script needs {why}"'
                " >&2; exit 2; }"
            )
    if base is not None:
        head.append(f"BASE_URL=${{BASE_URL:-{shlex.quote(base)}}}")
    helpers = _HELPERS
    if grpc:
        host = grpc_host_of(exchanges, grpc_host)
        if host:
            head.append(f"GRPC_HOST=${{GRPC_HOST:-{shlex.quote(host)}}}")
        else:
            head.append(': "${GRPC_HOST:?set GRPC_HOST to the gRPC host:port of the agent}"')
        head.append('PROTO_DIR=${PROTO_DIR:-$(dirname "${BASH_SOURCE[0]:-.}")}')
        helpers += GRPC_HELPERS
    return "\n".join(head) + "\n" + helpers + "\n" + "\n".join(blocks)
