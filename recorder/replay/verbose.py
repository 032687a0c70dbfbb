"""`recorder play -v`: the whole recorded and live reply of a mismatch, side by side in the
report, normalized as the comparison sees them: JSON pretty-printed, each generated value
that paired shown as its alias (`<id:1>`) in both, so that only real differences stand out;
secrets as their placeholders. `-vv` adds the request as it was sent."""

from __future__ import annotations

import json
from collections.abc import Mapping

from recorder.model import Exchange, Request, Response
from recorder.redact import scrub_text
from recorder.replay.live import LiveReply
from recorder.replay.state import ReplayState

__all__ = ["verbose_lines"]

INDENT = "    "


def verbose_lines(
    state: ReplayState,
    golden: Exchange,
    live: LiveReply | Response,
    secrets: Mapping[str, str],
    *,
    sent: Request | None = None,
) -> tuple[str, ...]:
    """The lines shown under a mismatch (without the report's indent)."""
    aliases = state.aliases()
    mapping = state.mapping
    live_aliases = {mapping[g]: alias for g, alias in aliases.items() if g in mapping}
    reply = live.response if isinstance(live, LiveReply) else live
    lines: list[str] = []
    if sent is not None:
        lines.append("request as sent:")
        lines.extend(INDENT + line for line in _scrubbed(_request_text(sent), {}, secrets))
    lines.append("recorded reply (normalized):")
    lines.extend(
        INDENT + line for line in _scrubbed(_response_text(golden.response), aliases, secrets)
    )
    lines.append("live reply (normalized):")
    lines.extend(INDENT + line for line in _scrubbed(_response_text(reply), live_aliases, secrets))
    return tuple(lines)


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
    text = body.decode("utf-8", errors="replace")
    try:
        value = json.loads(text)
    except ValueError:
        return text.rstrip("\n")
    return json.dumps(value, indent=2, ensure_ascii=False)
