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
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

from recorder.docs.chains import Capture, JsonPath, find_chains, templated_request
from recorder.docs.export import (
    EXPORT_MARK,
    ExportError,
    curl_command,
    export_base,
    is_streaming_request,
    sent_placeholders,
    where,
)
from recorder.docs.grpcexport import grpcurl_command
from recorder.model import Exchange, is_event_stream

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
await_frames() {  # wait (10 s at most) until exchange $1's event stream holds $2 frames
  local tries=0
  while [ "$(frames "$1")" -lt "$2" ]; do
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


def _capture_lines(captures: Sequence[Capture], number_of: dict[int, int]) -> list[str]:
    lines = []
    for capture in captures:
        number = number_of[capture.exchange]
        source = f"body {number}" if capture.frame is None else f"frame {number} {capture.frame}"
        what = jq_path(capture.path)
        where_ = f"exchange {number}" + ("" if capture.frame is None else f" frame {capture.frame}")
        message = shlex.quote(f"{where_}: the reply has no {what}")
        lines.append(
            f"{capture.name}=$({source} | jq -er {shlex.quote(what)})"
            f" || {{ echo {message} >&2; exit 1; }}"
        )
    return lines


def export_curl(
    exchanges: Sequence[Exchange],
    *,
    base_url: str | None = None,
    source: str | None = None,
    start: int = 1,
) -> str:
    """The requests as one bash script (the module docstring's rules 1-6).

    `start` is the number of the first exchange in its file (`FILE#4` exports exchange 4);
    chains are followed within `exchanges` only."""
    for number, exchange in enumerate(exchanges, start=start):
        if exchange.request.is_grpc:
            raise ExportError(
                where(source, exchange, number)
                + f"GRPC {exchange.request.target} is a gRPC call, which curl cannot send:"
                " export it --to http (httpyac's GRPC requests), or call it with grpcurl: "
                + grpcurl_command(exchange.request, exchange.request.headers.get("host"))
            )
    base = export_base(exchanges, base_url, source)
    chains = find_chains(exchanges)
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
        stream = is_streaming_request(request) or is_event_stream(exchange.response.content_type)
        try:
            text = curl_command(request, stream=stream, local=local, base_variable="BASE_URL")
        except ExportError as exc:
            raise ExportError(where(source, exchange, number) + str(exc)) from None
        title = f"### {number}. {exchange.title}" if exchange.title else f"### {number}."
        return title, text

    def foreground(index: int, note: str = "") -> None:
        title, text = command(index)
        number = number_of[index]
        lines = [f"# {title[4:]}{note}", f"echo {shlex.quote(title)}"]
        lines.append(f'{text} \\\n  > "$out/{number}"')
        lines.append(f"show {number}")
        lines.extend(_capture_lines(chains.of(index), number_of))
        blocks.append("\n".join(lines) + "\n")

    for index in range(len(exchanges)):
        if exchanges[index].push_config is not None:
            continue  # a push delivery (`# @push config N`): the agent sends it, not the client
        if index in chains.during and chains.during[index][0] in opened:
            continue  # sent by the exchange it arrived during
        if index not in opened:
            foreground(index)
            continue
        title, text = command(index)
        number = number_of[index]
        blocks.append(
            f"# {title[4:]} (in the background: later requests are sent while it is open)\n"
            f'{text} \\\n  > "$out/{number}" &\npid_{number}=$!\n'
        )
        waited = 0
        for later in opened[index]:
            frame = chains.during[later][1]
            if frame > waited:
                caught = [c for c in chains.of(index) if c.frame is not None and c.frame <= frame]
                block = [f"await_frames {number} {frame}"]
                block.extend(_capture_lines(caught, number_of))
                blocks.append("\n".join(block) + "\n")
                waited = frame
            foreground(later, f" (sent while exchange {number}'s stream is open)")
        rest = [c for c in chains.of(index) if c.frame is None or c.frame > waited]
        lines = [f'wait "$pid_{number}"', f"echo {shlex.quote(title)}", f"show {number}"]
        lines.extend(_capture_lines(rest, number_of))
        blocks.append("\n".join(lines) + "\n")

    head = ["#!/usr/bin/env bash", EXPORT_MARK + (f" from {source}" if source else "")]
    head.append("# Each request in order against BASE_URL, each reply printed after its '### N.'")
    head.append("# line; ids that earlier replies generated are captured and sent on.")
    needs = "bash, curl and jq" if chains.captures else "bash and curl"
    head.append(f"# Requires {needs}.")
    variables = list(dict.fromkeys(secrets))
    if variables:
        head.append("# Set first: " + ", ".join(variables) + ".")
    head.append("set -euo pipefail")
    if chains.captures:
        head.append(
            'command -v jq > /dev/null || { echo "this script needs jq (apt-get install jq)"'
            " >&2; exit 2; }"
        )
    head.append(f"BASE_URL=${{BASE_URL:-{shlex.quote(base)}}}")
    return "\n".join(head) + "\n" + _HELPERS + "\n" + "\n".join(blocks)
