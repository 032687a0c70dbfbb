"""Keep a re-recorded transcript's generated values when nothing else changed.

Re-recording a scenario against a fresh agent gives new task ids, context ids, timestamps and
`Date` headers. A golden file that is rewritten with all of them would show a `git diff` on
every line that names one, hiding the changes that matter. So, like `recorder play --update`,
the fresh recording is laid over the previous one through the player's aliasing
(`recorder.replay.state.ReplayState`): the previous file plays the recorded side, the fresh
recording the live side.

- A request is kept as previously recorded when it is that request with the previously
  learned values carried forward (what the player would send); otherwise the fresh one is
  taken, and the files stop being matched from there on (a changed scenario is a new file).
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
    rest: tuple[Exchange, ...] = ()
    for index, new in enumerate(fresh.exchanges):
        if index >= len(previous.exchanges):
            rest = fresh.exchanges[index:]
            break
        old = previous.exchanges[index]
        if state.prepare(old.request) != new.request:
            rest = fresh.exchanges[index:]
            break
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
    return dataclasses.replace(fresh, exchanges=(*kept, *rest))
