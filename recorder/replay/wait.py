"""`--wait SECONDS`: poll the agent's card until the agent answers, before anything is played.

In CI the agent and the player start side by side; the player must not fail on a
"connection refused" because the agent is still starting. The card
(`/.well-known/agent-card.json`, A2A §8.2) is what every agent serves and what a client reads
first, so it is what is polled: one GET at a time, a short pause between attempts, until any
reply below 500 comes (the agent's HTTP server is up: a 404 there is still an answer) or the
time is up. A 5xx (a gateway in front of an agent still starting) counts as not yet.
"""

from __future__ import annotations

import time

import httpx

from recorder.bindings.operations import AGENT_CARD_PATH
from recorder.errors import UpstreamError

__all__ = ["CARD_PATH", "wait_for_agent"]

CARD_PATH = AGENT_CARD_PATH
# the pause between two attempts: short next to an agent's start-up, long next to a GET
_PAUSE = 0.1


def wait_for_agent(base_url: str, seconds: float) -> int:
    """Poll `base_url`'s card until the agent answers (below 500) or `seconds` pass.

    Returns the number of attempts it took. Raises `UpstreamError` naming the agent, the
    time waited and the last reason when it never answers. A path in `base_url` (an agent
    mounted under a prefix) is kept: the card is looked for under it.
    """
    url = base_url.rstrip("/") + CARD_PATH
    deadline = time.monotonic() + seconds
    attempts = 0
    with httpx.Client(timeout=httpx.Timeout(min(5.0, max(seconds, 0.1)))) as client:
        while True:
            attempts += 1
            try:
                status = client.get(url).status_code
            except httpx.HTTPError as exc:
                reason = _reason(exc)
            else:
                if status < 500:
                    return attempts
                reason = f"HTTP {status}"
            left = deadline - time.monotonic()
            if left <= 0:
                raise UpstreamError(
                    f"the agent at {base_url} did not answer within {seconds:g} s "
                    f"(GET {CARD_PATH}: {reason}, {attempts} attempts)"
                )
            time.sleep(min(_PAUSE, left))


def _reason(exc: httpx.HTTPError) -> str:
    """`connection refused`, `timed out`, or the exception's own words."""
    if isinstance(exc, httpx.ConnectError):
        text = str(exc).lower()
        return "connection refused" if "refused" in text else f"cannot connect ({exc})"
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the connection closed without a reply"
    return str(exc) or type(exc).__name__
