"""Keep a re-recorded transcript's generated values when nothing else changed.

Re-recording a scenario against a fresh agent gives new task ids, context ids, timestamps and
`Date` headers. A golden file that is rewritten with all of them would show a `git diff` on
every line that names one, hiding the changes that matter. So, like `recorder play --update`,
the fresh recording is laid over the previous one through the player's aliasing
(`recorder.replay.state.ReplayState`): the previous file plays the recorded side, the fresh
recording the live side.

- A request is kept as previously recorded when it is that request with the previously
  learned values carried forward (what the player would send). When one is not (the
  scenario changed), the fresh recording is taken whole: keeping the earlier exchanges' ids
  while the later ones name the fresh ids would give a file whose requests carry ids its
  replies never gave (a GetTask of a task no reply in the file made), which fails to replay.
- A reply that matches the previous one (no mismatch) is kept byte for byte; a reply that
  differs gets the previous values back wherever the alias mapping holds (`bless`).
- Titles and comments come from the fresh recording.

Pure: transcripts in, transcript out.
"""

from __future__ import annotations

import dataclasses

from recorder.model import Exchange, Transcript
from recorder.replay.state import ReplayState
from recorder.rules import Rules

__all__ = ["keep_recorded_values"]


def keep_recorded_values(previous: Transcript, fresh: Transcript, rules: Rules) -> Transcript:
    """`fresh` with the values `previous` recorded wherever the two say the same thing."""
    live_base = fresh.recorded_base_url
    if live_base is None:
        return fresh
    state = ReplayState(rules, recorded_base=previous.recorded_base_url, live_base=live_base)
    compared: list[tuple[Exchange, Exchange, bool]] = []
    if len(fresh.exchanges) != len(previous.exchanges):
        return fresh
    for old, new in zip(previous.exchanges, fresh.exchanges, strict=True):
        if state.prepare(old.request) != new.request:
            return fresh
        compared.append((old, new, not state.compare(old, new.response)))
    # blessed once all are compared: a value a later exchange pairs is put back everywhere
    kept = [
        dataclasses.replace(
            new,
            request=old.request,
            response=state.bless(old.response, new.response, matched=matched),
        )
        for old, new, matched in compared
    ]
    return dataclasses.replace(fresh, exchanges=tuple(kept))
