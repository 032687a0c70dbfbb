"""A wordy agent for the tests of checks (issue 23): the real kit behind a loopback proxy
(`noisy_agent.NoisyAgent`'s) that adds no noise, only `rewrite`: each JSON body and event-stream
frame is edited as it passes (the same answer worded otherwise, or a regression on purpose).
Its one addition is the `X-Served-By` header the proxy adds: tests ignore it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from noisy_agent import NoisyAgent

IGNORE_SERVED_BY = "ignored_headers: {add: [x-served-by]}\n"
"""The rules line a play against the wordy agent needs (its proxy's header)."""


class WordyAgent(NoisyAgent):
    """The kit, its replies edited by `rewrite` (settable; None: as the kit sent them)."""

    def _noisy(self, data: bytes) -> bytes:
        try:
            value = json.loads(data)
        except ValueError:
            return data
        if self.rewrite is not None:
            self.rewrite(value)
        return json.dumps(value).encode()


def texts(value: Any) -> Iterator[dict[str, Any]]:
    """Every part of an A2A reply that holds a `text` (artifacts' and messages')."""
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            yield value
        for item in value.values():
            yield from texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)


def reword(
    edit: Callable[[str], str], *, only: str = "Reviewed"
) -> Callable[[dict[str, Any]], None]:
    """A `rewrite` that applies `edit` to each text part starting with `only`."""

    def rewrite(value: dict[str, Any]) -> None:
        for part in texts(value):
            if part["text"].startswith(only):
                part["text"] = edit(part["text"])

    return rewrite
