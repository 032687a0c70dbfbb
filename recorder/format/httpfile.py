"""The `.http` transcript format: `loads`, `dumps`, `splice` (`loads` lives in
`recorder.format.httpread`, the reading half, linear in any shape of input). Text in, text out:
a file is read and written by `recorder.disk.transcripts` (`load`, `dump`).

Grammar (version 1). Lines end in LF (CRLF and a missing final line break are read too); a
line is split only at LF, never at other Unicode line separators.

    file          = [marker] *(comment / after-tag / downstream-tag / blank) *exchange
    marker        = "# recorder-format: " 1*DIGIT                  ; first line; absent = 1
    after-tag     = "# @after " file-name                          ; "# @after 04-send.http"
    file-name     = 1*(VCHAR except "/" and "\\") ".http"          ; same folder
    downstream-tag = "# @downstream " name SP 1*VCHAR              ; "# @downstream model URL"
    name          = ALPHA *(ALPHA / DIGIT / "-" / "_")
    exchange      = "###" [SP title] LF
                    *(comment / blank)                             ; tags: see below
                    request-line *header-line blank
                    request-body
                    status-line *header-line blank
                    response-body [trailers]                       ; trailers: gRPC only
    comment       = "#" [SP text]                                  ; not "###"
    request-line  = method SP target [SP http-version]             ; "POST /a2a/jsonrpc HTTP/1.1"
                  / "GRPC" SP "/" service "/" rpc-method           ; a gRPC call: no version
    status-line   = http-version SP 3DIGIT [SP reason]             ; "HTTP/1.1 200 OK"
                  / "GRPC" SP 1*2DIGIT [SP code-name]              ; "GRPC 5 NOT_FOUND" (0-16)
    header-line   = field-name ":" [SP field-value]                ; no obs-fold
    http-version  = "HTTP/" DIGIT ["." DIGIT]
    trailers      = blank "# @trailers" LF *header-line            ; trailing metadata

Bodies. The request body is every line after the blank line that ends the request headers, up
to the status line; the response body is every line up to the next `###` line or the end of
the file. One blank line before the status line, or before the next `###`, separates and is not
part of the body. A body is written in one of these forms:

    verbatim      its UTF-8 text, line by line. JSON bodies are pretty-printed (2 spaces, key
                  order kept) from their own tokens: every number and string as it was sent
                  (`1E5`, `-0`, `"caf\\u00e9"`), a member named twice kept twice; only DEL,
                  the C1 controls and U+2028/U+2029 are written as `\\uXXXX`
                  (`recorder.format.jsonbody`). Used when the text has no CR, no control character
                  but TAB, no line starting with "###", no line that looks like a status
                  line, and does not start with "# recorder-body:".
    SSE           for a response with Content-Type text/event-stream: its frames, each frame's
                  fields ("data: …", "event: …", "id: …", "retry: …", ": comment") then a blank
                  line. `data:` JSON stays on one line as on the wire.
    escaped       "# recorder-body: escaped" then one line holding the text as a JSON string
                  (any UTF-8 text that cannot be verbatim, and raw event streams).
    base64        "# recorder-body: base64" then base64 lines of 76 characters (bytes that are
                  not UTF-8 text).

Placeholders. `{{NAME}}` in a request or reply is a variable (a secret the player fills from
the environment). Text that was sent so is escaped where it stands (`recorder.format.literals`): in
JSON text its first brace as `\\u007b` (`"\\u007b{user_name}}"`: the same string), elsewhere
as httpyac escapes it, `\\{\\{user_name\\}\\}`.

gRPC (the third A2A binding, `recorder.bindings.grpc`). A call is written as the JetBrains HTTP
Client and httpyac write one: the request line `GRPC /lf.a2a.v1.A2AService/SendMessage`, the
call's metadata as header lines (lower case, as on the wire; `-bin` values in base64), the
request message as ProtoJSON (lowerCamelCase names, pretty-printed like every JSON body).
The reply's status line is the call's end, `GRPC <code> <name>`; its header lines are the
initial metadata; its body is the reply message as ProtoJSON (a unary call), the messages of
a server stream as frames (one `data:` line of compact ProtoJSON each, then a blank line: the
SSE form, so the bindings' frames read alike), or, for a call that failed before any message,
its google.rpc.Status as JSON (`{"code": 5, "message": "…", "details": [{"@type": …}]}`).
The trailing metadata follows in a `# @trailers` block. A stream that failed after messages
keeps them as frames, and its status's message and details are trailers: `grpc-message`
(the text) and `grpc-status-details` (the google.rpc.Status as one line of JSON, what the wire's
`grpc-status-details-bin` holds). A reply body of a gRPC call that is neither JSON nor frames
and that would read as frames or trailers is escaped.

    ### SendStreamingMessage
    GRPC /lf.a2a.v1.A2AService/SendStreamingMessage
    a2a-version: 1.0

    {
      "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    }

    GRPC 0 OK
    content-type: application/grpc

    data: {"task": {"id": "t-1", "status": {"state": "TASK_STATE_SUBMITTED"}}}

    data: {"statusUpdate": {"taskId": "t-1", "status": {"state": "TASK_STATE_COMPLETED"}}}

    # @trailers
    x-served-by: kit

Tags are comments of an exchange that start with "@": "# @truncated" (the reply was cut off
while recording: `Exchange.truncated`), and "# @during exchange N frame K" (this request was
sent while the event stream of exchange N, an earlier one, was still open, once its frame K
had arrived: a CancelTask sent during a SubscribeToTask stream). A `@during` tag that does not
read so, or names no earlier exchange, is a parse error.

    push-tag      = "# @push config " 1*DIGIT                      ; "# @push config 1"

"# @push config N" marks a push notification delivery (`Exchange.push_config`): its request is
the agent's POST to the client's webhook as the webhook got it (the webhook's path as target,
its headers and JSON body, secrets as placeholders: the token header, credentials, secret path
segments), its reply the webhook's answer. N is the exchange of the same file whose request
registered the push config (a SendMessage carrying `configuration.taskPushNotificationConfig`,
or a CreateTaskPushNotificationConfig); the deliveries sit in the file of the task they are
about, in the order they arrived. A `@push` tag that does not read so, a second one, or one
that names no earlier exchange is a parse error; `recorder check` also fails one whose exchange
registers no push config. The writer puts it after the exchange's comments, before
`@truncated`.

    call-tag      = "# @call " name " exchange " 1*DIGIT [" frame " 1*DIGIT] [" ambiguous"]

"# @call NAME exchange N" marks a call the agent made to a downstream of its own while it
answered exchange N (`Exchange.call`, a `CallTag`): its model's API, an MCP tool server, a
peer agent, named NAME (`# @downstream NAME URL` in the file's head says where it went). The
request is the agent's as the recorder's listener for NAME got it (its method and target as
the agent sent them, `Host` the listener's address, secrets as placeholders), the reply the
downstream's (a stream's frames as SSE). N counts every block of the file, as `@during` and
`@push` do, and names an earlier exchange the client sent (not a call, not a delivery);
" frame K" says the call went out after the K-th frame of exchange N's streamed reply (none:
before its first byte); " ambiguous" that the recorder could not tell which of the exchanges
open at the time caused it (N is the earliest of them). A call's block follows its
exchange's block and the calls it made before, in the order their requests arrived. It is
never an exchange of the client's: the player does not send it, an export leaves it out. A
`@call` that does not read so, a second one, one beside `@push` or `@during`, or one that
names no earlier client exchange (or "frame 0") is a parse error; `recorder check` also fails
a frame beyond exchange N's frames, and a NAME no `@downstream` tag of the head names. The
writer puts it where `@push` goes.

A file's head may also hold "# @downstream NAME URL" tags, one per downstream its calls went
to (the upstream's URL, without credentials): comments of the file too
(`Transcript.downstreams`). One that does not read so, or one inside an exchange, is a parse
error; `recorder check` also fails a name given twice and a URL with credentials in it.

A file's head (its comments before the first "###") may hold "# @after NAME.http" tags, one
name each: this file reads state those files of its folder made (a ListTasks whose reply lists
the tasks they created), and the player plays them first (`recorder.replay.needs`). They stay
comments of the file (`Transcript.comments`, read by `Transcript.after`), so they round-trip
as any comment. A `@after` that names no plain file name ending in ".http", or one inside an
exchange, is a parse error; `recorder check` also fails one that names no file of the folder.

Canonical form (what `dumps` writes, what `recorder check --canonical` expects): the marker,
the file comments, a blank line, then the exchanges separated by one blank line, every line
ending in LF. `dumps(loads(s)) == s` for every canonical `s`, and `loads(dumps(t)) == t` for
every transcript `t`.
"""

from __future__ import annotations

import binascii
import json
import re
from collections.abc import Mapping

from recorder.errors import ParseError
from recorder.format.httpread import (
    _FRAME_START,
    BODY_MARKER,
    CALL_TAG,
    DURING_TAG,
    FORMAT_VERSION,
    MARKER_PREFIX,
    PUSH_TAG,
    TRAILERS_TAG,
    TRUNCATED_TAG,
    loads,
)
from recorder.format.model import Exchange, Transcript, is_event_stream

__all__ = ["CALL_TAG", "DURING_TAG", "FORMAT_VERSION", "PUSH_TAG", "dumps", "loads", "splice"]

# a body line that would end the body: "###" (next exchange) or a status line
_AMBIGUOUS_LINE = re.compile(r"^(?:###|HTTP/\d|GRPC \d)", re.MULTILINE)
_SAFE_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n"
# control characters (TAB and LF excepted) and the characters editors take as line breaks
_UNSAFE_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_BASE64_WIDTH = 76


# --------------------------------------------------------------------------- writing


def dumps(transcript: Transcript) -> str:
    """The canonical `.http` text of a transcript."""
    head = [f"{MARKER_PREFIX} {transcript.format_version}"]
    head.extend(_comment(c) for c in transcript.comments)
    blocks = ["\n".join(head) + "\n"]
    blocks.extend(map(dumps_exchange, transcript.exchanges))
    return "\n".join(blocks)


def dumps_exchange(exchange: Exchange) -> str:
    """The text of one exchange as `dumps` writes it in a file: `dumps` joins the file's head
    and these blocks with blank lines."""
    lines = _exchange_lines(exchange)
    lines.append("")  # the final line break, in the join: `+ "\n"` would copy the text again
    return "\n".join(lines)


def splice(text: str, transcript: Transcript, replaced: Mapping[int, Exchange]) -> str | None:
    """`text` (the file `transcript` was read from) with the exchanges numbered in `replaced`
    (0-based) written anew, every other line kept as it was: an update shows in `git diff` as
    the exchanges it changed, not as a file rewritten in the canonical layout. The new blocks
    take the file's line ending (CRLF or LF). None when the text and the transcript do not
    agree (the file changed since it was read): the caller writes `dumps` instead."""
    starts = [exchange.line or 0 for exchange in transcript.exchanges]
    if not replaced or 0 in starts:
        return None  # a transcript not read from a file
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    lines = text[len(bom) :].split("\n")
    crlf = lines[0].endswith("\r")
    for index in sorted(replaced, reverse=True):
        begin = starts[index] - 1
        end = starts[index + 1] - 1 if index + 1 < len(starts) else len(lines)
        if not (0 <= begin < end <= len(lines)) or not lines[begin].startswith("###"):
            return None
        # the block and one blank line: before the next "###", or the file's final line break
        block = [*dumps_exchange(replaced[index]).split("\n")[:-1], ""]
        if crlf:
            block = [line + "\r" for line in block]
            if end == len(lines):
                block[-1] = ""  # after the final line break: nothing
        lines[begin:end] = block
    new = bom + "\n".join(lines)
    expected = tuple(replaced.get(i, e) for i, e in enumerate(transcript.exchanges))
    try:
        if loads(new).exchanges != expected:
            return None
    except ParseError:
        return None
    return new


def _comment(text: str) -> str:
    return f"# {text}" if text else "#"


def _exchange_lines(exchange: Exchange) -> list[str]:
    request, response = exchange.request, exchange.response
    lines = [f"### {exchange.title}" if exchange.title else "###"]
    lines.extend(_comment(c) for c in exchange.comments)
    if exchange.push_config is not None:
        lines.append(_comment(f"@push config {exchange.push_config}"))
    if exchange.call is not None:
        lines.append(_comment(exchange.call.text))
    if exchange.truncated:
        lines.append(_comment(TRUNCATED_TAG))
    version = f" {request.http_version}" if request.http_version else ""  # (gRPC: none)
    lines.append(f"{request.method} {request.target}{version}")
    lines.extend([f"{n}: {v}" if v else f"{n}:" for n, v in request.headers])
    lines.append("")
    request_body = _body_lines(request.body, raw_stream=False)
    if request_body:
        lines.extend(request_body)
        lines.append("")
    status = f"{response.http_version} {response.status}"
    lines.append(f"{status} {response.reason}" if response.reason else status)
    lines.extend([f"{n}: {v}" if v else f"{n}:" for n, v in response.headers])
    if response.events is not None:
        body = [response.body.decode().rstrip("\n")] if response.events else []
    elif response.is_grpc:
        body = _body_lines(response.body, raw_stream=_grpc_unsafe(response.body))
    else:
        body = _body_lines(response.body, raw_stream=is_event_stream(response.content_type))
    if body:  # an empty response body needs no blank line: "###" or the end follows
        lines.append("")
        lines.extend(body)
    if response.trailers:
        lines.extend(("", TRAILERS_TAG))
        lines.extend([f"{n}: {v}" if v else f"{n}:" for n, v in response.trailers])
    return lines


def _grpc_unsafe(body: bytes) -> bool:
    """Whether a gRPC reply's body (not JSON: JSON is always safe) would read back as
    something else verbatim: frames (a first line like an SSE field), or trailers."""
    return body.startswith(tuple(s.encode() for s in _FRAME_START)) or (
        b"\n" + TRAILERS_TAG.encode() in b"\n" + body
    )


def _body_lines(body: bytes, *, raw_stream: bool) -> list[str]:
    """The lines that stand for `body` ([] for none); a body's lines are one item holding its
    line breaks (a list of a million short strings would cost twice the text)."""
    if not body:
        return []
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return [f"{BODY_MARKER} base64", _base64_text(body)]
    if raw_stream or not _verbatim_safe(text):
        return [f"{BODY_MARKER} escaped", json.dumps(text, ensure_ascii=False)]
    return [text]


def _base64_text(body: bytes) -> str:
    """`body` as base64 lines of 76 characters joined by LF, made in blocks of about 1 MiB
    (`base64.encodebytes` holds a bytes object per line: 1.4 times the text on top)."""
    width, block, size = _BASE64_WIDTH, _BASE64_WIDTH * 3 // 4 * 16384, -(-len(body) // 3) * 4
    encoded = bytearray(size + max(-(-size // width) - 1, 0))  # made once, at its size
    view, at = memoryview(body), 0
    for start in range(0, len(body), block):
        text = binascii.b2a_base64(view[start : start + block], newline=False)
        part = b"\n".join([text[i : i + width] for i in range(0, len(text), width)])
        encoded[at : at + len(part)] = part
        at += len(part)
        if at < len(encoded):
            encoded[at], at = 0x0A, at + 1
    return encoded.decode("ascii")


def _verbatim_safe(text: str) -> bool:
    if text.startswith(BODY_MARKER) or _has_ambiguous_line(text):
        return False
    if text.isascii():
        # C-speed scan: delete every safe byte; anything left is a control character
        return not text.encode("ascii").translate(None, _SAFE_ASCII)
    return _UNSAFE_CHARS.search(text) is None


def _has_ambiguous_line(text: str) -> bool:
    """Whether a line of `text` starts with "###" or a status line's "HTTP/<digit>" (or
    "GRPC <digit>"). The `in` tests are memory searches; `_AMBIGUOUS_LINE` (a MULTILINE `^`)
    tries every position of the text (about 5 ms per MiB), so it runs only when "HTTP/" or
    "GRPC " is there at all."""
    # (a one-character `in` is a memchr, ~50x faster than a longer one: a gate)
    if text.startswith("###") or ("#" in text and "\n###" in text):
        return True
    if ("/" in text and "HTTP/" in text) or ("C" in text and "GRPC " in text):
        return _AMBIGUOUS_LINE.search(text) is not None
    return False
