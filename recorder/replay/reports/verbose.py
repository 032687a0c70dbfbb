"""`recorder play -v`: the recorded and the live reply of a mismatch in the report, normalized
as the comparison sees them: JSON pretty-printed, each generated value that paired shown as
its alias (`<id:1>`) in both, so that only real differences stand out; secrets as their
placeholders.

- `-v`: a unified diff of the two normalized replies (`difflib`, `DIFF_CONTEXT` lines of
  context): a four-frame stream that differs in one state is a dozen lines, not 150;
- `-vv`: both replies whole;
- `-vvv`: the request as it was sent too.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

from recorder.format.jsonvalue import dumps, loads
from recorder.format.model import Exchange, Request, Response
from recorder.replay.verdict.live import LiveReply
from recorder.replay.verdict.state import ReplayState
from recorder.secrets.redact import scrub_text

__all__ = ["DIFF_CONTEXT", "reply_diff", "verbose_lines"]

INDENT = "    "
DIFF_CONTEXT = 3


def verbose_lines(
    state: ReplayState,
    golden: Exchange,
    live: LiveReply | Response,
    secrets: Mapping[str, str],
    *,
    sent: Request | None = None,
    whole: bool = False,
) -> tuple[str, ...]:
    """The lines shown under a mismatch (without the report's indent): the diff of the
    normalized replies, or with `whole` both of them (and the request `sent`, when given)."""
    aliases = state.aliases()
    mapping = state.mapping
    live_aliases = {mapping[g]: alias for g, alias in aliases.items() if g in mapping}
    reply = live.response if isinstance(live, LiveReply) else live
    recorded = _scrubbed(_response_text(golden.response), aliases, secrets)
    got = _scrubbed(_response_text(reply), live_aliases, secrets)
    lines: list[str] = []
    if sent is not None:
        lines.append("request as sent:")
        lines.extend(INDENT + line for line in _scrubbed(_request_text(sent), {}, secrets))
    if not whole:
        lines.extend(reply_diff(recorded, got))
        return tuple(lines)
    lines.append("recorded reply (normalized):")
    lines.extend(INDENT + line for line in recorded)
    lines.append("live reply (normalized):")
    lines.extend(INDENT + line for line in got)
    return tuple(lines)


def reply_diff(recorded: list[str], live: list[str], context: int = DIFF_CONTEXT) -> list[str]:
    """A unified diff of the normalized replies' lines, `---` recorded, `+++` live; when the
    texts are the same (the difference is in what they do not show, such as a header), a line
    that says so."""
    diff = list(
        difflib.unified_diff(
            recorded,
            live,
            "recorded reply (normalized)",
            "live reply (normalized)",
            n=context,
            lineterm="",
        )
    )
    if not diff:
        return [
            "the normalized replies are the same text: the mismatch is in what they do not show"
        ]
    return [
        _with_frame(line, recorded, _leading_context(diff, index))
        for index, line in enumerate(diff)
    ]


_HUNK = re.compile(r"@@ -(\d+)")


def _leading_context(diff: list[str], index: int) -> int:
    """How many context lines a hunk opens with, before its first change."""
    count = 0
    for line in diff[index + 1 :]:
        if not line.startswith(" "):
            break
        count += 1
    return count


def _with_frame(line: str, recorded: list[str], lead: int) -> str:
    """A hunk header with the stream frame of its first change, as git names a hunk's
    function (`@@ -33,7 +33,7 @@ frame 2:`): a long stream's diff says where it is."""
    match = _HUNK.match(line)
    if match is None:
        return line
    # the first changed line (1-based `start + lead`) and the lines above it
    for text in reversed(recorded[: int(match.group(1)) + lead]):
        if text.startswith("frame "):
            return f"{line} {text}"
    return line
    # the hunk's first line (or, for an empty one, the line before it) and those above
    for text in reversed(recorded[: int(match.group(1))]):
        if text.startswith("frame "):
            return f"{line} {text}"
    return line


def _scrubbed(text: str, aliases: Mapping[str, str], secrets: Mapping[str, str]) -> list[str]:
    for value in sorted(aliases, key=len, reverse=True):
        if value:
            text = text.replace(value, aliases[value])
    return scrub_text(text, dict(secrets)).splitlines()


def _request_text(request: Request) -> str:
    head = [f"{request.method} {request.target}", *(f"{n}: {v}" for n, v in request.headers)]
    body = _pretty(request.body)
    return "\n".join([*head, "", body] if body else head)


def _response_text(response: Response) -> str:
    lines = [f"{response.http_version} {response.status} {response.reason}".rstrip()]
    if response.events is not None:
        for number, event in enumerate(response.events, start=1):
            name = f" ({event.event})" if event.event else ""
            data = _pretty((event.data or "").encode()) if event.data is not None else ""
            lines.append(f"frame {number}{name}:" + ("" if data else " (no data)"))
            lines.extend(INDENT + line for line in data.splitlines())
        return "\n".join(lines)
    body = _pretty(response.body)
    return "\n".join([*lines, body] if body else lines)


def _pretty(body: bytes) -> str:
    """A body as shown: JSON laid out, each number as it was written (`12345678901234567.89`
    and `...88`, which one float holds, are two lines of the diff)."""
    text = body.decode("utf-8", errors="replace")
    try:
        value = loads(text)
    except (ValueError, RecursionError):
        return text.rstrip("\n")
    return dumps(value, indent=2)
