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
5. `.http`. A comment naming the source and the variables to define, `@host = <base URL>`, then
   each request as `### title`, `METHOD {{host}}/target HTTP/1.1`, headers, blank line, body.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from recorder.errors import RecorderError
from recorder.model import Exchange, Request, is_event_stream
from recorder.redact import PLACEHOLDER

__all__ = [
    "ExportError",
    "curl_command",
    "exchange_curl_command",
    "export_curl",
    "export_http",
    "is_streaming_request",
    "placeholders",
    "request_url",
]

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
_STREAMING_METHODS = frozenset({"SendStreamingMessage", "SubscribeToTask"})
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
            f"{request.method} {request.target} has no Host header: pass a base URL "
            "(--base-url http://127.0.0.1:41242)"
        )
    return f"http://{host}{target}"


def _sent_headers(request: Request) -> list[tuple[str, str]]:
    return [(n, v) for n, v in request.headers if n.lower() not in _NOT_SENT]


def is_streaming_request(request: Request) -> bool:
    """Does the request ask for a stream (SSE)? Rule 4."""
    accept = request.headers.get("Accept") or ""
    if "text/event-stream" in accept.lower():
        return True
    path = request.path
    if path.endswith(":stream") or path.endswith(":subscribe"):
        return True
    payload = request.json
    return isinstance(payload, dict) and payload.get("method") in _STREAMING_METHODS


# --------------------------------------------------------------------------- curl


def _shell_word(text: str) -> str:
    """One shell word: literal parts single-quoted, `{{NAME}}` as `"$NAME"` (rule 3)."""
    parts: list[str] = []
    position = 0
    for match in PLACEHOLDER.finditer(text):
        if match.start() > position:
            parts.append(shlex.quote(text[position : match.start()]))
        parts.append(f'"${match.group(1)}"')
        position = match.end()
    if position < len(text) or not parts:
        parts.append(shlex.quote(text[position:]))
    return "".join(parts)


def _curl_body(request: Request) -> tuple[str | None, bytes | None]:
    """(text to pass as a word, or bytes to pipe in) for the request body."""
    body = request.body
    if not body:
        return None, None
    if request.is_json:
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            pass
        else:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":")), None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None, body
    if "\0" in text:
        return None, body
    return text, None


def curl_command(
    request: Request, *, base_url: str | None = None, stream: bool | None = None
) -> str:
    """One runnable curl command (lines joined with ` \\` continuations). Rules 1-4."""
    url = request_url(request, base_url)
    text_body, binary_body = _curl_body(request)
    has_body = text_body is not None or binary_body is not None
    if stream is None:
        stream = is_streaming_request(request)
    first = ["curl", "-sS", "-i"]
    if stream:
        first.append("-N")
    if _CURL_GLOB.search(url):
        first.append("-g")  # brackets and braces in the URL are literal, not a curl glob
    method = request.method
    if method == "HEAD":
        first.append("--head")
    elif not ((method == "GET" and not has_body) or (method == "POST" and has_body)):
        first.extend(["-X", method])
    first.append(_shell_word(url))
    lines = [" ".join(first)]
    for name, value in _sent_headers(request):
        # `-H 'Name:'` would remove the header; `-H 'Name;'` sends it empty
        lines.append("-H " + _shell_word(f"{name}: {value}" if value else f"{name};"))
    if has_body and request.headers.get("Content-Type") is None:
        lines.append("-H 'Content-Type:'")
    prefix = ""
    if text_body is not None:
        lines.append("--data-binary " + _shell_word(text_body))
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


def export_curl(
    exchanges: Sequence[Exchange],
    *,
    base_url: str | None = None,
    source: str | None = None,
    start: int = 1,
) -> str:
    """Every request as a curl command, each under a `# N. title` comment.

    `start` is the number of the first exchange in its file (`FILE#4` exports exchange 4)."""
    blocks = []
    names: list[str] = []
    for number, exchange in enumerate(exchanges, start=start):
        try:
            command = exchange_curl_command(exchange, base_url=base_url)
        except ExportError as exc:
            raise ExportError(_where(source, exchange, number) + str(exc)) from None
        names.extend(_request_placeholders(exchange.request))
        title = f"# {number}. {exchange.title}" if exchange.title else f"# {number}."
        blocks.append(f"{title}\n{command}\n")
    head = []
    if source:
        head.append(f"# curl commands for the requests of {source}")
    variables = list(dict.fromkeys(names))
    if variables:
        head.append("# set in the environment first: " + ", ".join(variables))
    text = "\n".join(blocks)
    return ("\n".join(head) + "\n\n" + text) if head else text


# --------------------------------------------------------------------------- .http


def _http_base(exchanges: Iterable[Exchange], base_url: str | None, source: str | None) -> str:
    if base_url is not None:
        _check_base_url(base_url)
        return base_url.rstrip("/")
    for exchange in exchanges:
        host = exchange.request.headers.get("Host")
        if host:
            return f"http://{host}"
    where = f"{source}: " if source else ""
    raise ExportError(f"{where}no request has a Host header: pass a base URL (--base-url URL)")


def export_http(
    exchanges: Sequence[Exchange],
    *,
    base_url: str | None = None,
    source: str | None = None,
    start: int = 1,
) -> str:
    """A requests-only `.http` file (rule 5), sendable by the common `.http` clients.

    `start` numbers the first exchange in error messages, as in `export_curl`."""
    base = _http_base(exchanges, base_url, source)
    blocks: list[str] = []
    names: list[str] = []
    for number, exchange in enumerate(exchanges, start=start):
        request = exchange.request
        where = _where(source, exchange, number)
        target = request.target
        if "://" in target:
            parts = urlsplit(target)
            target = parts.path + (f"?{parts.query}" if parts.query else "")
        lines = [f"### {exchange.title}" if exchange.title else "###"]
        lines.append(f"{request.method} {{{{host}}}}{target} {request.http_version}")
        for name, value in _sent_headers(request):
            lines.append(f"{name}: {value}")
        if request.body:
            try:
                text = request.body.decode("utf-8")
            except UnicodeDecodeError:
                raise ExportError(
                    f"{where}the request body is binary: .http clients cannot send it inline"
                ) from None
            body_lines = text.split("\n")
            if body_lines[-1] == "":
                body_lines.pop()
            for line in body_lines:
                if line.startswith("###") or line.startswith("< "):
                    raise ExportError(
                        f"{where}a body line starts with {line[:3]!r}, which .http clients "
                        "read as a separator or a file include"
                    )
            lines.append("")
            lines.extend(body_lines)
        block = "\n".join(lines) + "\n"
        names.extend(placeholders(block))
        blocks.append(block)
    head = []
    if source:
        head.append(f"# The requests of {source}, for JetBrains HTTP Client,")
        head.append("# VS Code REST Client, httpyac and other .http clients.")
    variables = [name for name in dict.fromkeys(names) if name != "host"]
    if variables:
        head.append("# Define in your client's environment: " + ", ".join(variables))
    head.append(f"@host = {base}")
    return "\n".join(head) + "\n\n" + "\n".join(blocks)


def _request_placeholders(request: Request) -> list[str]:
    words = [request.target, *(value for _, value in _sent_headers(request))]
    words.append(request.body.decode("utf-8", errors="replace"))
    return placeholders("\n".join(words))


def _where(source: str | None, exchange: Exchange, number: int) -> str:
    if source is None:
        return f"exchange {number}: "
    line = f":{exchange.line}" if exchange.line is not None else ""
    return f"{source}{line}: exchange {number}: "
