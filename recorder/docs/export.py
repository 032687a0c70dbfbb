"""Recorded requests as things people run: curl commands and requests-only `.http` files.

Pure: requests in, text out. Rules:

1. URL. `base_url` (scheme, host, port and an optional path prefix) + the recorded target; without
   it, `http://` + the recorded `Host` header + the target. An absolute-form target keeps its own
   authority unless `base_url` is given.
2. Headers. The recorded headers in order, except those the sending tool sets itself from the
   URL and the body or that belong to one connection: `Host`, `Content-Length`, the hop-by-hop
   fields (RFC 9110 §7.6.1), `Accept-Encoding` (curl would print compressed bytes) and
   `User-Agent`, plus recorder's own `Recorder-Scenario`.
3. Placeholders. A secret recorded as `{{NAME}}` (e.g. `Authorization: Bearer {{A2A_TOKEN}}`)
   becomes the shell variable `"$NAME"` in curl commands and stays a `{{NAME}}` variable in `.http`
   files, which JetBrains HTTP Client, VS Code REST Client and httpyac all fill from an
   environment.
4. curl. `curl -sS -i` (show the status line and headers, as the transcript does), `-N` (no
   buffering) for a stream (the request accepts `text/event-stream`, calls
   `SendStreamingMessage`/`SubscribeToTask`, or the recorded reply was a stream), `-X` only when
   curl would not infer the method, the body as `--data-binary` (JSON compacted; meaning kept),
   every word quoted with `shlex.quote`. A body with no recorded Content-Type gets `-H
   'Content-Type:'` so curl does not add its form type. Bytes that are not text (or hold NUL)
   are piped in from base64.
5. `.http`. A comment naming the source, the dialect and the variables to define,
   `@host = <base URL>`, then each request as `### title`, `METHOD {{host}}/target HTTP/1.1`,
   headers, blank line, body.
6. Recorded data is never code in any export. httpyac evaluates any `{{ ... }}` as JavaScript
   (and JetBrains HTTP Client and VS Code REST Client read `{{` as a variable): in a `.http`
   export only the real placeholders (secrets, the ids an export chains) are `{{NAME}}`;
   recorded text that holds `{{` is written so that no client reads a variable there: in a
   JSON body as the JSON escape `\\u007b{` (the same string to the agent), in the URL as
   `%7B` (the same URL), in a header or other body as httpyac's `\\{\\{...\\}\\}` (what
   httpyac sends as `{{...}}`), and a text that cannot be written so is refused. A body line
   that httpyac would read as something else (`###`, `< file`, `<@ file`, `> {%` handler,
   `>> file`, a `{{` script) is refused. In a shell script every recorded word is
   single-quoted (`shlex.quote`); only placeholders are shell variables.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from urllib.parse import urlsplit

from recorder.bindings import jsonrpc, rest
from recorder.disk.transcripts import EXPORT_MARK
from recorder.docs.chains import JsonPath, call_notes, find_chains, templated_request
from recorder.docs.grpcexport import (
    GRPC_HOST,
    grpc_head,
    grpc_request_line,
    grpc_sent_headers,
    loader_body,
)
from recorder.errors import RecorderError
from recorder.format.jsonbody import relayout
from recorder.format.literals import PLACEHOLDER, literal_text, rewrite
from recorder.format.model import Exchange, Request, is_event_stream

__all__ = [
    "DIALECTS",
    "EXPORT_MARK",
    "ExportError",
    "curl_command",
    "exchange_curl_command",
    "export_base",
    "export_http",
    "is_streaming_request",
    "placeholders",
    "request_url",
    "sent_placeholders",
    "shell_word",
    "where",
]

DIALECTS = ("jetbrains", "vscode")
"""The `.http` dialects of chained requests: JetBrains HTTP Client and httpyac; VS Code REST
Client."""

_NOT_SENT = frozenset(
    name.lower()
    for name in (
        "Host",
        "Content-Length",
        "Connection",
        "Keep-Alive",
        "Proxy-Connection",
        "Transfer-Encoding",
        "TE",
        "Trailer",
        "Upgrade",
        "Accept-Encoding",
        "User-Agent",
        "Recorder-Scenario",
    )
)
_CURL_GLOB = re.compile(r"[\[\]{}]")


class ExportError(RecorderError):
    """A request that cannot be exported as asked (no Host and no base URL, an unsafe body)."""


def placeholders(text: str) -> list[str]:
    """The `{{NAME}}` placeholder names in `text`, in order of first appearance."""
    return list(dict.fromkeys(PLACEHOLDER.findall(text)))


def _check_base_url(base_url: str) -> None:
    if urlsplit(base_url).scheme not in ("http", "https"):
        raise ExportError(f"the base URL must start with http:// or https://, got {base_url!r}")


def request_url(request: Request, base_url: str | None = None) -> str:
    """Rule 1."""
    if base_url is not None:
        _check_base_url(base_url)
    target = request.target
    if "://" in target:
        if base_url is None:
            return target
        parts = urlsplit(target)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
    elif not target.startswith("/"):
        target = "/" + target  # authority-form or "*": nothing better to send to
    if base_url is not None:
        return base_url.rstrip("/") + target
    host = request.headers.get("Host")
    if not host:
        raise ExportError(
            f"{request.method} {request.target} has no Host header: pass the agent "
            "(--agent http://127.0.0.1:41242)"
        )
    return f"http://{host}{target}"


def _origin_form(target: str) -> str:
    """The path and query of a request target (an absolute-form one loses its authority)."""
    if "://" in target:
        parts = urlsplit(target)
        return parts.path + (f"?{parts.query}" if parts.query else "")
    return target if target.startswith("/") else "/" + target


def _sent_headers(request: Request) -> list[tuple[str, str]]:
    return [(n, v) for n, v in request.headers if n.lower() not in _NOT_SENT]


def is_streaming_request(request: Request) -> bool:
    """Does the request ask for a stream (SSE)? Rule 4."""
    accept = request.headers.get("Accept") or ""
    if "text/event-stream" in accept.lower():
        return True
    path = request.path
    if rest.streams(path):
        return True
    return jsonrpc.method_of(request.json) in jsonrpc.STREAMING


# --------------------------------------------------------------------------- curl


def shell_word(text: str, local: frozenset[str] = frozenset()) -> str:
    """One shell word: literal parts single-quoted as they were sent (`literal_text`),
    `{{NAME}}` as `"${NAME:?set NAME}"` (rule 3: an unset or empty variable stops the script)
    or, for a name in `local` (a script's own variable), `"$NAME"` (rule 6)."""

    def literal(piece: str) -> str:
        return shlex.quote(literal_text(piece)) if piece else ""

    def variable(name: str) -> str:
        return f'"${name}"' if name in local else f'"${{{name}:?set {name}}}"'

    return rewrite(text, literal, variable) or "''"


def is_json_text(text: str) -> bool:
    """Whether `text` is JSON (as Python's `json` reads it)."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _curl_body(request: Request) -> tuple[str | None, bytes | None]:
    """(text to pass as a word, or bytes to pipe in) for the request body: JSON on one line,
    each scalar as recorded (no escape or placeholder decoded on the way)."""
    body = request.body
    if not body:
        return None, None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None, body
    if request.is_json and is_json_text(text):
        return relayout(text, compact=True), None
    if "\0" in text:
        return None, body
    return text, None


def curl_command(
    request: Request,
    *,
    base_url: str | None = None,
    stream: bool | None = None,
    local: frozenset[str] = frozenset(),
    base_variable: str | None = None,
) -> str:
    """One runnable curl command (lines joined with ` \\` continuations). Rules 1-4.

    `local` names the `{{NAME}}`s that are the script's own variables (`"$NAME"`, not checked);
    `base_variable` sends to `"$BASE_VARIABLE"` + the recorded path instead of rule 1's URL."""
    if base_variable is not None:
        url = "{{" + base_variable + "}}" + _origin_form(request.target)
        local = local | {base_variable}
    else:
        url = request_url(request, base_url)
    text_body, binary_body = _curl_body(request)
    has_body = text_body is not None or binary_body is not None
    if stream is None:
        stream = is_streaming_request(request)
    first = ["curl", "-sS", "-i"]
    if stream:
        first.append("-N")
    if _CURL_GLOB.search(literal_text(PLACEHOLDER.sub("", url))):
        first.append("-g")  # brackets and braces in the URL are literal, not a curl glob
    method = request.method
    if method == "HEAD":
        first.append("--head")
    elif not ((method == "GET" and not has_body) or (method == "POST" and has_body)):
        first.extend(["-X", method])
    first.append(shell_word(url, local))
    lines = [" ".join(first)]
    for name, value in _sent_headers(request):
        # `-H 'Name:'` would remove the header; `-H 'Name;'` sends it empty
        lines.append("-H " + shell_word(f"{name}: {value}" if value else f"{name};", local))
    if has_body and request.headers.get("Content-Type") is None:
        lines.append("-H 'Content-Type:'")
    prefix = ""
    if text_body is not None:
        lines.append("--data-binary " + shell_word(text_body, local))
    elif binary_body is not None:
        encoded = base64.b64encode(binary_body).decode("ascii")
        prefix = f"printf '%s' {encoded} | base64 --decode | "
        lines.append("--data-binary @-")
    return prefix + " \\\n  ".join(lines)


def exchange_curl_command(exchange: Exchange, *, base_url: str | None = None) -> str:
    """The curl command of an exchange's request; `-N` also when the recorded reply streamed."""
    request = exchange.request
    stream = is_streaming_request(request) or is_event_stream(exchange.response.content_type)
    return curl_command(request, base_url=base_url, stream=stream)


# --------------------------------------------------------------------------- .http

# what a .http client reads as its own where a body line starts so (httpyac: a separator, a
# file import, a file import with variables, a response handler or output, a script block)
_BODY_LINE_STARTS = ("###", "< ", "<@", "> {%", ">> ", ">>! ", "{{")
# a literal `{{...}}` httpyac sends as it is when written `\{\{...\}\}` (its escapeVariable
# replacer: what is inside holds no `}`)
_HTTPYAC_ESCAPABLE = re.compile(r"\{\{([^}]+?)\}\}")


def _variable(name: str) -> str:
    return "{{" + name + "}}"


def _http_url(target: str) -> str:
    """A target in a `.http` export: placeholders kept, every brace of recorded text
    percent-encoded (`%7B`: the same URL to the agent, no variable to the client)."""

    def literal(piece: str) -> str:
        return literal_text(piece).replace("{", "%7B").replace("}", "%7D")

    return rewrite(target, literal, _variable)


def _http_text(text: str) -> str:
    """A header value or a body that is no JSON in a `.http` export: placeholders kept,
    recorded `{{...}}` written as httpyac's `\\{\\{...\\}\\}`; ExportError for recorded
    text that would still read as a variable (a brace before a placeholder, `{{}}`)."""

    def literal(piece: str) -> str:
        sent = literal_text(piece)
        written = _HTTPYAC_ESCAPABLE.sub(lambda m: "\\{\\{" + m.group(1) + "\\}\\}", sent)
        if "{{" in written or written.endswith("{"):
            raise ExportError(
                f"recorded text {_shown(sent)} would read as a variable in a .http file"
                " (which httpyac runs as JavaScript): export it with --to curl"
            )
        return written

    return rewrite(text, literal, _variable)


def _http_json(text: str) -> str:
    """JSON text in a `.http` export: placeholders kept, every `{` of recorded text that
    would open one (`{{`, and a brace right before a placeholder) as the JSON escape
    `\\u007b` (the same string to the agent; in JSON text `{{` stands only inside strings)."""

    def literal(piece: str) -> str:
        piece = piece.replace("{{", "\\u007b{")
        return piece[:-1] + "\\u007b" if piece.endswith("{") else piece

    return rewrite(text, literal, _variable)


def _shown(text: str) -> str:
    return json.dumps(text if len(text) <= 60 else text[:60] + "…", ensure_ascii=False)


def export_base(exchanges: Iterable[Exchange], base_url: str | None, source: str | None) -> str:
    """The base URL an export sends to: `base_url`, else `http://` + the first recorded Host."""
    if base_url is not None:
        _check_base_url(base_url)
        return base_url.rstrip("/")
    first: Exchange | None = None
    for exchange in exchanges:
        first = first or exchange
        host = exchange.request.headers.get("Host")
        if host:
            return f"http://{host}"
    where_ = ""
    if source:
        line = "" if first is None or first.line is None else f":{first.line}"
        where_ = f"{source}{line}: "
    raise ExportError(
        f"{where_}no request has a Host header: pass the agent (--agent http://127.0.0.1:41242)"
    )


def _js_path(path: JsonPath) -> str:
    """`response.body` + a JSON path, as JavaScript (JetBrains and httpyac handler scripts)."""
    return _path_text("response.body", path, json.dumps)


def _json_path(path: JsonPath) -> str:
    """A JSONPath (`$.result.task.id`, `$['a-b'][0]`): VS Code REST Client references."""
    return _path_text(
        "$", path, lambda key: "'" + key.replace("\\", "\\\\").replace("'", "\\'") + "'"
    )


def _path_text(root: str, path: JsonPath, quote: Callable[[str], str]) -> str:
    """`root.name[0]['other-name']`: a member that is no identifier quoted by `quote`."""
    parts = [root]
    for key in path:
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif key.isidentifier() and key.isascii():
            parts.append(f".{key}")
        else:
            parts.append(f"[{quote(key)}]")
    return "".join(parts)


def _request_name(exchange: Exchange, number: int) -> str:
    operation = exchange.title.partition(":")[0]
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", operation)
    stem = re.sub(r"[^0-9A-Za-z]+", "_", words).strip("_").lower()
    if not stem or stem[0].isdigit():
        stem = "request"
    return f"{stem}_{number}"


def export_http(
    exchanges: Sequence[Exchange],
    *,
    base_url: str | None = None,
    source: str | None = None,
    start: int = 1,
    dialect: str = "jetbrains",
    grpc_host: str | None = None,
) -> str:
    """A requests-only `.http` file (rule 5), whose requests chain (`recorder.docs.chains`).

    Each request is named (`# @name`). `dialect` says how a later request gets a value an
    earlier reply generated: "jetbrains" (JetBrains HTTP Client and httpyac) sets a global
    variable in a response handler (`> {% client.global.set("task_id_1",
    response.body.result.task.id); %}`) and sends `{{task_id_1}}`; "vscode" (VS Code REST
    Client) sends a request variable `{{send_message_1.response.body.$.result.task.id}}`.
    A value a stream frame generated is sent as recorded (noted). `start` numbers the first
    exchange in error messages, as in `export_curl`. A gRPC call is httpyac's `GRPC` request
    to `{{grpc_host}}` (`grpc_host`, else its recorded host; `recorder.docs.grpcexport`), which
    loads the service from `a2a.proto` beside the file (the caller writes it there)."""
    if dialect not in DIALECTS:
        raise ExportError(f"unknown .http dialect {dialect!r}: one of {', '.join(DIALECTS)}")
    http = [e for e in exchanges if not e.request.is_grpc and not e.sent_by_agent]
    base = export_base(http, base_url, source) if http or not exchanges else None
    chains = find_chains(exchanges)
    calls = call_notes(exchanges, start)
    names = [_request_name(e, n) for n, e in enumerate(exchanges, start=start)]
    blocks: list[str] = []
    variables: list[str] = []
    for index, exchange in enumerate(exchanges):
        if exchange.sent_by_agent:
            continue  # a push delivery or a call (`@push`, `@call`): the agent sends it
        number = index + start
        where_ = where(source, exchange, number)
        usable = [c for c in chains.uses[index] if c.frame is None]
        request = templated_request(exchange.request, usable)
        target = _origin_form(request.target)
        local = {c.name for c in usable}
        title = exchange.title.replace("{{", "{ {")  # (a name: never a variable)
        lines = [f"### {number}. {title}" if title else f"### {number}."]
        lines.append(f"# @name {names[index]}")
        lines.extend(calls.get(index, ()))
        for capture in chains.uses[index]:
            if capture.frame is not None:
                lines.append(
                    f"# sends {capture.value} as recorded: exchange {capture.exchange + start}'s"
                    f" stream frame {capture.frame} generated it, which .http clients cannot read"
                )
        if index in chains.during:
            open_index, frame = chains.during[index]
            lines.append(
                f"# recorded while exchange {open_index + start}'s stream was open (after frame"
                f" {frame}): .http clients send one request at a time, so it goes after that"
                " stream ends"
            )
        if request.is_grpc:
            lines.append(grpc_request_line(request))
        else:
            lines.append(f"{request.method} {{{{host}}}}{_http_url(target)} {request.http_version}")
        sent = grpc_sent_headers(request) if request.is_grpc else _sent_headers(request)
        body = loader_body(request.body, request.target) if request.is_grpc else request.body
        try:
            for name, value in sent:
                lines.append(f"{name}: {_http_text(value)}")
            text = body.decode("utf-8") if body else ""
            if request.is_grpc or (request.is_json and is_json_text(text)):
                text = _http_json(text)
            else:
                text = _http_text(text)
        except UnicodeDecodeError:
            raise ExportError(
                f"{where_}the request body is binary: .http clients cannot send it inline"
            ) from None
        except ExportError as exc:
            raise ExportError(where_ + str(exc)) from None
        if text:
            body_lines = text.split("\n")
            if body_lines[-1] == "":
                body_lines.pop()
            for line in body_lines:
                if line.startswith(_BODY_LINE_STARTS):
                    raise ExportError(
                        f"{where_}a body line starts with {line[:3]!r}, which .http clients "
                        "read as a separator, a file include, a handler script or a script"
                    )
            lines.append("")
            lines.extend(body_lines)
        block = "\n".join(lines) + "\n"
        variables.extend(
            n for n in placeholders(block) if n not in local and n not in ("host", GRPC_HOST)
        )
        if dialect == "vscode":
            for capture in usable:
                reference = f"{names[capture.exchange]}.response.body.{_json_path(capture.path)}"
                block = block.replace("{{" + capture.name + "}}", "{{" + reference + "}}")
        else:
            sets = [c for c in chains.of(index) if c.frame is None]
            if sets:
                block += "\n> {%\n"
                for capture in sets:
                    block += f'    client.global.set("{capture.name}", {_js_path(capture.path)});\n'
                block += "%}\n"
        blocks.append(block)
    head = [EXPORT_MARK + (f" from {source}" if source else "")]
    if dialect == "vscode":
        head.append("# Dialect: VS Code REST Client. Later requests read earlier replies through")
        head.append("# request variables ({{name.response.body.$.path}}); run them in order.")
    else:
        head.append("# Dialect: httpyac and JetBrains HTTP Client (`httpyac send FILE --all`):")
        head.append("# response handlers keep generated ids in global variables for later ones.")
    head.append("# Variables are the export's own (secrets, chained ids); recorded text that")
    head.append("# would read as one is escaped (JSON \\u007b, URL %7B, httpyac's \\{\\{ \\}\\}).")
    names_to_define = list(dict.fromkeys(variables))
    if names_to_define:
        head.append("# Define in your client's environment: " + ", ".join(names_to_define))
    if base is not None:
        head.append(f"@host = {base}")
    head.extend(grpc_head(exchanges, grpc_host))
    return "\n".join(head) + "\n\n" + "\n".join(blocks)


def sent_placeholders(request: Request, exclude: Iterable[str] = ()) -> list[str]:
    """The `{{NAME}}`s a request sends (target, sent headers, body), but those in `exclude`."""
    words = [request.target, *(value for _, value in _sent_headers(request))]
    words.append(request.body.decode("utf-8", errors="replace"))
    skip = set(exclude)
    return [name for name in placeholders("\n".join(words)) if name not in skip]


def where(source: str | None, exchange: Exchange, number: int) -> str:
    """`FILE:LINE: exchange N: `, the start of an error message about one exchange."""
    if source is None:
        return f"exchange {number}: "
    line = f":{exchange.line}" if exchange.line is not None else ""
    return f"{source}{line}: exchange {number}: "
