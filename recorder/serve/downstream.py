"""`recorder serve --downstream NAME@[HOST:]PORT`: the stand-in answers as one of the agent's
downstreams did (its model, its MCP tool server, a peer), from the calls the transcripts
recorded (`# @call NAME exchange N` blocks).

A call block is an exchange in the `.http` format like any other: the agent's request, the
downstream's reply. The stand-in for NAME is a `StandIn` over each transcript's calls to NAME
(the file's order kept, a conversation per file as for an agent: `recorder.serve.book`),
nothing else: a client developer (or an agent developer) points a model client's base URL or
an MCP client at it and gets the recorded answers, matched as the stand-in matches any
request (the values a client makes up match any of their kind; an id the stand-in handed
out, a tool call's id, must come back as handed out). The A2A stand-in (`--listen`) answers
no call: a call is the agent's, not a client's request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from recorder.format.model import Transcript
from recorder.rules.ruleset import Rules
from recorder.serve.app import StandIn

__all__ = ["calls_to", "downstream_stand_in"]


def calls_to(transcripts: Sequence[Transcript], name: str) -> list[Transcript]:
    """Each transcript's calls to `name`, as the exchanges of a transcript of their own (in
    file order, their lines kept); the transcripts without one left out."""
    found: list[Transcript] = []
    for transcript in transcripts:
        calls = tuple(
            replace(exchange, call=None)
            for exchange in transcript.exchanges
            if exchange.call is not None and exchange.call.name == name
        )
        if calls:
            found.append(Transcript(calls, source=transcript.source))
    return found


def downstream_stand_in(
    transcripts: Sequence[Transcript], name: str, rules: Rules, **options: Any
) -> StandIn:
    """The stand-in for the downstream `name` (`options`: `StandIn`'s: `pace`, `fresh_ids`
    …). ValueError when no transcript has a call to it, naming those they have."""
    calls = calls_to(transcripts, name)
    if not calls:
        names = sorted(
            {e.call.name for t in transcripts for e in t.exchanges if e.call is not None}
        )
        known = ", ".join(names) if names else "none"
        raise ValueError(
            f"--downstream {name}: no transcript has calls to {name} (they have calls to: {known})"
        )
    return StandIn(calls, rules, **options)
