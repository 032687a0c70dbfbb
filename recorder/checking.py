"""`recorder check`: report every `.http` file that does not parse (found by
`recorder.disk.transcripts.find_transcripts`), or is not canonical, or holds JSON or gRPC
messages that do not read.

Pure apart from reading files: `check_paths` returns problems as values; the CLI prints them.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from recorder.bindings import grpc as grpc_binding
from recorder.bindings import jsonrpc
from recorder.bindings.push_configs import FORGED_TAG, is_forged, registers_push_config
from recorder.disk.transcripts import find_transcripts, note_skipped
from recorder.errors import ParseError, RecorderError
from recorder.format.httpfile import dumps
from recorder.format.httpread import BODY_MARKER, TRAILERS_TAG, after_lines, loads
from recorder.format.model import DOWNSTREAM_TAG, Exchange, Transcript

__all__ = ["NO_EXCHANGES", "Problem", "check_paths", "end_line"]

NO_EXCHANGES = "no exchanges: a transcript holds at least one"
"""What a transcript without an exchange is told, at its `end_line`."""

_DONE = "[DONE]"
"""The last frame's data of an OpenAI-compatible stream (a call's reply): no JSON."""


@dataclass(frozen=True)
class Problem:
    """One reason a file fails the check: `path:line: message`."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


def check_paths(
    paths: Iterable[str | os.PathLike[str]],
    *,
    canonical: bool = False,
    on_export: Callable[[Path], None] | None = note_skipped,
    on_file: Callable[[Path, list[Problem]], None] | None = None,
) -> tuple[int, list[Problem]]:
    """Parse every transcript; return how many files were checked and the problems found.

    `on_export` is told of each export left out (default: a note on stderr), `on_file` of
    each transcript checked, with its problems."""
    problems: list[Problem] = []
    count = 0
    found: list[Path] = []
    for raw in paths:
        skipped: list[Path] = []

        def skip(path: Path, skipped: list[Path] = skipped) -> None:
            skipped.append(path)
            if on_export is not None:
                on_export(path)

        files = list(find_transcripts([raw], on_export=skip))
        if not files and not skipped:  # a folder without transcripts must not pass as valid
            problems.append(Problem(os.fspath(raw), None, "no .http files in this folder"))
        found.extend(files)
    for path in found:
        count += 1
        found_here = _check_file(path, canonical=canonical)
        problems.extend(found_here)
        if on_file is not None:
            on_file(path, found_here)
    # (a cycle of needs is found from each file that runs into it: said once)
    return count, list(dict.fromkeys(problems))


def _check_file(path: Path, *, canonical: bool) -> list[Problem]:
    """The problems of one file. Its text is read once and parsed once (a second parse, for
    the lines of the bodies, held two transcripts at once: 887 MB for a 5.4 MB file)."""
    name = str(path)
    if not path.exists():
        return [Problem(name, None, "no such file or folder")]
    try:
        data = path.read_bytes()
    except OSError as exc:
        return [Problem(name, None, f"cannot read the file: {exc.strerror or exc}")]
    try:
        # (bytes, not `read_text`: its newline translation reads a lone CR as a line break,
        # and the text it gives is not the one the parser was given)
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return [
            Problem(
                name,
                line,
                "the file is not UTF-8 text (binary bodies are written as base64 by recorder)",
            )
        ]
    del data
    starts: list[int] = []
    try:
        transcript = loads(text, name, body_lines=starts)
    except ParseError as exc:
        return [Problem(exc.path or name, exc.line, exc.message)]
    if not transcript.exchanges:
        return [Problem(name, end_line(text), NO_EXCHANGES)]
    problems = json_problems(name, text, transcript=transcript, body_lines=starts)
    problems.extend(push_problems(name, transcript))
    problems.extend(call_problems(name, transcript, text))
    if transcript.after:
        problems.extend(after_problems(name, path, text))
    if canonical:
        expected = dumps(transcript)
        if text != expected:
            line = _first_difference(text, expected)
            problems.append(
                Problem(name, line, "not in canonical form (rewrite it with recorder's writer)")
            )
    return problems


def end_line(text: str | bytes) -> int:
    """The line a file ends on (where an exchange that is not there was looked for: a
    transcript without one is told so there); 1 for an empty file."""
    return (text.count("\n") if isinstance(text, str) else text.count(b"\n")) + 1


def push_problems(name: str, transcript: Transcript) -> list[Problem]:
    """Each `# @push config N` whose exchange N registers no push config (a SendMessage with
    `configuration.taskPushNotificationConfig`, a CreateTaskPushNotificationConfig), at the
    delivery's line, and each `# @forged` on an exchange that is no delivery. (The reader has
    made sure N names an earlier exchange.)"""
    problems: list[Problem] = []
    exchanges = transcript.exchanges
    for exchange in exchanges:
        number = exchange.push_config
        if number is None and is_forged(exchange):
            problems.append(
                Problem(
                    name,
                    exchange.line,
                    f"{FORGED_TAG}: only a push delivery (# @push config N) is forged",
                )
            )
        if number is None or registers_push_config(exchanges[number - 1].request):
            continue
        problems.append(
            Problem(
                name,
                exchange.line,
                f"@push config {number}: exchange {number} registers no push config (a "
                "SendMessage with configuration.taskPushNotificationConfig, or a "
                "CreateTaskPushNotificationConfig)",
            )
        )
    return problems


def call_problems(name: str, transcript: Transcript, text: str) -> list[Problem]:
    """The file's calls and downstreams checked beyond what the reader checks: each
    `# @downstream NAME URL` of the head names NAME once and an http(s) URL without
    credentials; each `# @call NAME exchange N frame K` names a downstream of the head and,
    with a frame, a frame exchange N's reply has. Each at its tag's line."""
    problems: list[Problem] = []
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").split("\n")
    declared: set[str] = set()
    for number, text_line in enumerate(lines, start=1):
        if text_line.startswith("###"):
            break
        is_comment = text_line.startswith("#")
        found = DOWNSTREAM_TAG.match(text_line[1:].strip()) if is_comment else None
        if found is None:
            continue
        downstream, url = found.groups()
        problem = _downstream_problem(downstream, url, declared)
        if problem is not None:
            problems.append(Problem(name, number, problem))
        declared.add(downstream)
    exchanges = transcript.exchanges
    for exchange in exchanges:
        call = exchange.call
        if call is None:
            continue
        line = _next_line(lines, (exchange.line or 1) - 1, "# @call")
        if call.name not in declared:
            problems.append(
                Problem(
                    name,
                    line,
                    f"@call {call.name}: no downstream {call.name} in the file's head (a "
                    f'"# @downstream {call.name} URL" tag says where its calls went)',
                )
            )
        if call.frame is None:
            continue
        events = exchanges[call.exchange - 1].response.events
        if events is None:
            problems.append(
                Problem(
                    name,
                    line,
                    f"@call {call.name} exchange {call.exchange} frame {call.frame}: exchange "
                    f"{call.exchange}'s reply is not a stream of frames (drop the frame)",
                )
            )
        elif call.frame > len(events):
            problems.append(
                Problem(
                    name,
                    line,
                    f"@call {call.name} exchange {call.exchange} frame {call.frame}: exchange "
                    f"{call.exchange}'s reply has {len(events)} frame"
                    f"{'' if len(events) == 1 else 's'}",
                )
            )
    return problems


def _downstream_problem(downstream: str, url: str, declared: set[str]) -> str | None:
    """What is wrong with a `@downstream NAME URL` tag, or None."""
    if downstream in declared:
        return f"@downstream {downstream}: named twice (one URL per downstream)"
    try:
        parts = urllib.parse.urlsplit(url)
        has_userinfo = "@" in parts.netloc
    except ValueError:
        parts, has_userinfo = None, False
    if has_userinfo:  # (checked first: the message must not show them)
        return f"@downstream {downstream}: the URL holds credentials (user:password@): remove them"
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        return f"@downstream {downstream}: {url} is no http:// or https:// URL"
    return None


def after_problems(name: str, path: Path, text: str) -> list[Problem]:
    """Each `# @after NAME` tag of the file at `path` (its `text`) that names no transcript
    of its folder, or the file itself, at the tag's line; and needs that form a cycle
    (`after_cycle`: what the player refuses to plan, at the tag that closes it)."""
    problems: list[Problem] = []
    for line, needed in after_lines(text):
        target = path.parent / needed
        if not _is_file(target):
            where = os.fspath(path.parent) if path.parent != Path() else "."
            problems.append(Problem(name, line, f"@after {needed}: no such transcript in {where}"))
        elif target.resolve() == path.resolve():
            problems.append(Problem(name, line, f"@after {needed}: a file cannot need itself"))
    cycle = after_cycle(path, text)
    if cycle is not None and cycle not in problems:
        problems.append(cycle)
    return problems


def _is_file(path: Path) -> bool:
    """Whether `path` is a file: False, not an OSError, for a name the system refuses (one
    over 255 bytes: ENAMETOOLONG, which `Path.is_file` raises on Python 3.11)."""
    return os.path.isfile(path)


def after_cycle(path: Path, text: str) -> Problem | None:
    """The cycle the `@after` needs of the file at `path` (its `text`) run into, if any: at
    the tag that closes it, in the file that has it, worded as the player words it
    (`recorder.replay.needs.needs_of`, which refuses such a run before anything is sent).
    The needs are followed as the player follows them: each file's tags in order, a needed
    file read from the folder of the file that names it; a tag naming no file, or a file
    that cannot be read, is left to that file's own check."""
    texts: dict[str, tuple[str, str]] = {os.path.realpath(path): (os.fspath(path), text)}

    def tags(real: str) -> list[tuple[int, str]]:
        return after_lines(texts[real][1])

    def read(target: Path) -> str | None:
        real = os.path.realpath(target)
        if real not in texts:
            try:
                texts[real] = (os.fspath(target), target.read_bytes().decode("utf-8"))
            except (OSError, UnicodeDecodeError):
                return None
        return real

    def visit(real: str, trail: list[str], done: set[str]) -> Problem | None:
        shown = texts[real][0]
        for line, needed in tags(real):
            target = Path(shown).parent / needed
            if not _is_file(target):
                continue
            found = read(target)
            if found is None:
                continue
            if found == real:  # (the player calls it a cycle of one)
                return Problem(shown, line, f"@after {needed}: a file cannot need itself")
            if found in trail:
                chain = [os.path.basename(texts[r][0]) for r in trail[trail.index(found) :]]
                return Problem(
                    shown,
                    line,
                    f"@after {needed}: the needs form a cycle "
                    f"({' needs '.join([*chain, needed])}): a needed file is played before "
                    "the file that needs it",
                )
            if found in done:
                continue
            problem = visit(found, [*trail, found], done)
            if problem is not None:
                return problem
            done.add(found)
        return None

    start = os.path.realpath(path)
    return visit(start, [start], set())


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON (JSON has no NaN or Infinity)")


def _json_error(text: str | bytes) -> tuple[int, str] | None:
    """(line within the text, from 1; the reason) when `text` is not strict JSON."""
    try:
        json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return exc.lineno, f"{exc.msg} (column {exc.colno})"
    except UnicodeDecodeError:
        return 1, "not UTF-8 text"
    except (ValueError, RecursionError) as exc:
        return 1, str(exc) or "nested too deep"
    return None


def _rejected(exchange: Exchange) -> bool:
    """Whether the agent rejected the request: a 4xx status (HTTP+JSON's 400), a JSON-RPC
    parse error (-32700, sent with status 200), or a gRPC call that failed (bytes that are no
    message, which the recorder keeps as they came, end INTERNAL or INVALID_ARGUMENT)."""
    status = exchange.response.status
    if exchange.request.is_grpc:
        return status != 0
    if 400 <= status < 500:
        return True
    reply = exchange.response.json
    if not isinstance(reply, dict):
        return False
    error = reply.get("error")
    return isinstance(error, dict) and error.get("code") == jsonrpc.PARSE_ERROR


def json_problems(
    name: str,
    text: str,
    *,
    transcript: Transcript | None = None,
    body_lines: list[int] | None = None,
) -> list[Problem]:
    """Every JSON body (a request or reply under a JSON media type) and every event-stream
    frame's `data:` that starts with `{` or `[` that is not JSON, at the line of the mistake
    (the body's first line for a base64 or escaped body). `text` parses (`check_paths`);
    `transcript` and `body_lines` are what `loads(text, body_lines=...)` gave, when known.
    A gRPC call's messages are checked against their message types too (`_grpc_problems`).

    A request body that is not JSON passes when the recorded reply rejects it (a 4xx status,
    or a JSON-RPC parse error -32700): the client sent it so on purpose (an error scenario),
    and the agent said so. A reply recorded `@truncated` (cut short: the recorder writes what
    came) is not held to be JSON; its whole frames are. A call's stream may end in a frame
    `data: [DONE]` (OpenAI-compatible APIs end so)."""
    if transcript is None or body_lines is None:
        body_lines = []
        transcript = loads(text, name, body_lines=body_lines)
    starts = body_lines
    lines = text.replace("\r\n", "\n").split("\n")
    problems: list[Problem] = []
    for number, exchange in enumerate(transcript.exchanges):
        request_line, response_line = starts[2 * number], starts[2 * number + 1]
        parts = (
            ("request", exchange.request, request_line),
            ("reply", exchange.response, response_line),
        )
        for what, message, line in parts:
            if not message.is_json or not message.body:
                continue
            if what == "request" and _rejected(exchange):
                continue  # sent malformed on purpose, and the agent said so: a recording of that
            if what == "reply" and exchange.truncated:
                continue  # cut short: what came, as it came
            found = _json_error(message.body)
            if found is None:
                continue
            encoded = line <= len(lines) and lines[line - 1].startswith(BODY_MARKER)
            at = line if encoded else line + found[0] - 1
            problems.append(Problem(name, at, f"the {what} body is not JSON: {found[1]}"))
        position = response_line - 1  # where the search for the next frame's data starts
        for frame, event in enumerate(exchange.response.events or (), start=1):
            data = event.data
            if data is None:
                continue
            first = data.split("\n", 1)[0]
            for index in range(position, len(lines)):
                if lines[index].startswith("data:") and lines[index][5:].lstrip(" ") == first:
                    position = index
                    break
            if not data.lstrip().startswith(("{", "[")) or (
                exchange.call is not None and data == _DONE
            ):
                continue
            found = _json_error(data)
            if found is not None:
                problems.append(
                    Problem(
                        name,
                        position + found[0],
                        f"the data of event-stream frame {frame} is not JSON: {found[1]}",
                    )
                )
            position += 1
        if exchange.request.is_grpc:
            bodies = (request_line, response_line)
            try:
                problems.extend(_grpc_problems(name, exchange, lines, bodies))
            except RecorderError as exc:  # the SDK's message types are not installed
                line = _next_line(lines, (exchange.line or 1) - 1, "GRPC ")
                problems.append(Problem(name, line, f"cannot check a gRPC call: {exc}"))
                break
    return problems


def _grpc_problems(
    name: str, exchange: Exchange, lines: list[str], at: tuple[int, int]
) -> list[Problem]:
    """A gRPC call's messages against the method's message types (ProtoJSON): the request,
    the reply (a google.rpc.Status when the call failed), each frame of a server stream,
    a failed stream's `grpc-status-details` trailer; each mistake at its field's line. The
    JSON that is not JSON at all is `json_problems`'s to report."""
    request, response = exchange.request, exchange.response
    request_line, response_line = at
    method = grpc_binding.method_of(request.target)
    if method is None:
        line = _next_line(lines, (exchange.line or 1) - 1, "GRPC ")
        service = grpc_binding.SERVICE
        return [Problem(name, line, f"{request.target}: not a method of the A2A service {service}")]
    problems: list[Problem] = []

    def check(body: bytes | str, kind: str, start: int, what: str, *, reply: bool) -> None:
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        if not text or _json_error(text) is not None:
            return
        found = grpc_binding.message_problem(kind, text, reply=reply)
        if found is not None:
            chain, reason = found
            line = _field_line(lines, start, text.count("\n") + 1, chain)
            problems.append(Problem(name, line, f"the {what} is {reason}"))

    check(request.body, method, request_line, "request", reply=False)
    streaming = grpc_binding.is_server_streaming(method)
    status_line = _previous_line(lines, response_line - 1, "GRPC ")
    if response.events:
        if not streaming:
            problems.append(
                Problem(name, response_line, f"{method} replies one message, not a stream's frames")
            )
        position = response_line - 1
        for frame, event in enumerate(response.events, start=1):
            position = _next_line(lines, position, "data:") - 1
            if event.data is not None:
                check(event.data, method, position + 1, f"message of frame {frame}", reply=True)
            position += 1
    elif response.events is None and response.status == 0:
        if streaming:
            problems.append(
                Problem(name, response_line, f"{method} replies a stream: its messages as frames")
            )
        check(response.body, method, response_line, "reply", reply=True)
    elif response.events is None:
        check(response.body, "google.rpc.Status", response_line, "status", reply=False)
        code = response.json.get("code") if isinstance(response.json, dict) else None
        if code is not None and code != response.status:
            problems.append(
                Problem(
                    name, status_line, f"the status line says {response.status}, its body {code}"
                )
            )
    details = response.trailers.get(grpc_binding.STATUS_DETAILS)
    if details is not None:
        tag = _next_line(lines, response_line - 1, TRAILERS_TAG)
        line = _next_line(lines, tag - 1, grpc_binding.STATUS_DETAILS + ":")
        found = _json_error(details)
        if found is not None:
            problems.append(
                Problem(name, line, f"the trailer grpc-status-details is not JSON: {found[1]}")
            )
        else:
            check(details, "google.rpc.Status", line, "trailer grpc-status-details", reply=False)
    return problems


def _next_line(lines: list[str], index: int, prefix: str) -> int:
    """The number (1-based) of the first line from `lines[index]` on that starts with
    `prefix`; `index + 1` when there is none."""
    for number in range(max(index, 0), len(lines)):
        if lines[number].startswith(prefix):
            return number + 1
    return index + 1


def _previous_line(lines: list[str], index: int, prefix: str) -> int:
    """The number (1-based) of the last line before `lines[index]` that starts with
    `prefix`; `index + 1` when there is none."""
    for number in range(min(index, len(lines)) - 1, -1, -1):
        if lines[number].startswith(prefix):
            return number + 1
    return index + 1


def _field_line(lines: list[str], start: int, count: int, chain: tuple[str, ...]) -> int:
    """The line of the field `chain` names (its names outermost first, each looked for after
    the one before) in the `count` lines from line `start` (1-based); `start` if not found."""
    line, end = start, min(start - 1 + count, len(lines))
    for key in chain:
        quoted = json.dumps(key) + ":"
        for number in range(line - 1, end):
            if quoted in lines[number]:
                line = number + 1
                break
        else:
            return line
    return line


def _first_difference(actual: str, expected: str) -> int:
    actual_lines = actual.replace("\r\n", "\n").split("\n")
    expected_lines = expected.split("\n")
    if "\r" in actual:
        return 1
    for number, (a, e) in enumerate(zip(actual_lines, expected_lines, strict=False), start=1):
        if a != e:
            return number
    return min(len(actual_lines), len(expected_lines))
