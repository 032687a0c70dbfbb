"""Replay state: alias generated values, carry them forward, compare replies, bless updates.

One `ReplayState` per transcript file, fed its exchanges in order (see DESIGN.md, "Generated
values: aliasing, not masking"):

    state = ReplayState(rules, recorded_base="http://localhost:41242", live_base=agent_url)
    for exchange in transcript:
        live = send(state.prepare(exchange.request))      # the I/O shell's job
        mismatches = state.compare(exchange, live)        # [] means the reply matches
        blessed = state.bless(exchange.response, live)    # for --update only

`ReplayState` is a façade over rooms of one concern each, which share one `AliasMap` (the
mapping learned so far) and one `PairingRules`:

- `recorder.rules.pairing`: rules 1-4 (what is generated, the client's values, the one-to-one
  mapping, alias numbering), usable without a replay;
- `recorder.replay.verdict.strings`: rules 5 and 9 (the agent's address, secret placeholders),
  strings;
- `recorder.replay.verdict.carry`: carry-forward of learned values into the requests (`prepare`);
- `recorder.replay.verdict.compare`: rules 7 and 8 (status, headers, bodies, SSE frames);
- `recorder.replay.verdict.fastpath`: the fast path (texts equal but for values that pair);
- `recorder.replay.verdict.walk`: rule 6, the tree walk and the explanation of what differs;
- `recorder.replay.verdict.bless`: the live reply put back into recorded terms (`--update`).

The rules of the comparison, numbered so that code and tests can point at them, each stated
in full where it is implemented:

1. What is generated (`recorder.rules.pairing`).
2. The client's own values are never generated (`recorder.rules.pairing`).
3. Recorded and live generated values pair one to one, loosely for loose kinds
   (`recorder.rules.pairing`).
4. Aliases are numbered by first appearance, per kind (`recorder.rules.pairing`).
5. The agent's addresses in any spelling pair one to one; the base reads as `<agent>`
   (`recorder.replay.verdict.strings`).
6. Objects member by member, arrays item by item, aligned; ignored and unordered paths
   (`recorder.replay.verdict.walk`).
7. SSE replies frame by frame; a truncated recording compares what it holds
   (`recorder.replay.verdict.compare`).
8. Status and Content-Type always, other headers unless ignored or secret; secret members for
   presence only (`recorder.replay.verdict.compare`, `recorder.replay.verdict.walk`).
9. A secret placeholder left in a recorded string matches any text
   (`recorder.replay.verdict.strings`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from recorder.format.model import Exchange, Request, Response
from recorder.format.sse import SseEvent
from recorder.replay.verdict.bless import Bless
from recorder.replay.verdict.carry import CarryForward
from recorder.replay.verdict.checked import FileChecks, Passed, keep_recorded
from recorder.replay.verdict.compare import Comparison
from recorder.replay.verdict.diff import Mismatch
from recorder.replay.verdict.fastpath import FastPath
from recorder.replay.verdict.listings import Others
from recorder.replay.verdict.live import LiveReply
from recorder.replay.verdict.strings import Addresses, Strings
from recorder.replay.verdict.walk import Walk
from recorder.rules.pairing import AliasMap, PairingRules
from recorder.rules.ruleset import Rules

__all__ = ["LiveReply", "ReplayState"]


class ReplayState:
    """The aliasing and carry-forward state of one transcript (see the module docstring)."""

    def __init__(
        self,
        rules: Rules,
        *,
        recorded_base: str | None,
        live_base: str,
        secret_placeholders: Iterable[str] = (),
        file: str | None = None,
    ) -> None:
        """`file` names the transcript (its path), for the checks scoped to it (`in:`); None:
        only the rules' unscoped checks apply."""
        self.rules = rules
        pairing = PairingRules(rules)
        aliases = AliasMap(pairing)
        addresses = Addresses(recorded_base, live_base)
        strings = Strings(pairing, aliases, addresses, secret_placeholders)
        self._aliases = aliases
        self._carry = CarryForward(pairing, aliases, addresses)
        self._comparison = Comparison(
            rules,
            aliases,
            strings,
            FastPath(pairing, aliases, addresses),
            Walk(pairing, aliases, strings),
            FileChecks(rules.checks, file or "") if rules.checks else None,
            file or "",
        )
        self._bless = Bless(pairing, aliases, addresses)
        self._passed: dict[int, list[Passed]] = {}  # exchange number -> checked places that held
        self._pairing = pairing
        self._others: Others | None = None  # set by `inherit`: a file that reads others' state

    @property
    def mapping(self) -> dict[str, str]:
        """Recorded generated value -> live value, as learned so far (a copy)."""
        return self._aliases.mapping

    def aliases(self) -> dict[str, str]:
        """Recorded generated value -> its alias (`<id:1>`), for each value paired so far."""
        return {golden: self._aliases.alias_of(golden) or "<?>" for golden in self._aliases.mapping}

    def alias(self, golden: str, kind: str) -> str:
        """The alias of a recorded generated value, numbered by first sight per kind (rule 4)."""
        return self._aliases.alias(golden, kind)

    def prepare(self, request: Request) -> Request:
        """The recorded request as it must be sent live: learned values and the address made live.

        Values not learned (the client's own) are sent as recorded.
        """
        return self._carry.prepare(request)

    def inherit(self, other: ReplayState) -> None:
        """Start from the pairs `other` (a file this one needs, `@after`, played first)
        learned: the ids its replies name must be the ones that file's live replies gave.
        From then on, the items of a listing that name none of this file's values are
        another file's state, left out where the listing is longer than recorded
        (`recorder.replay.verdict.listings`)."""
        self._aliases.adopt(other._aliases)
        self._others = Others(self._pairing, self._aliases)

    def without_others(self, recorded: Response, live: LiveReply) -> LiveReply:
        """`live` as `compare` sees it: without the items of other files' state, when this
        file inherited a state (`inherit`); else `live` itself."""
        if self._others is None:
            return live
        kept = self._others.leave_out(recorded, live)
        assert isinstance(kept, LiveReply)  # (a LiveReply in, a LiveReply out)
        return kept

    def unpaired(self, request: Request) -> set[str]:
        """The values of a recorded request that look generated but have no live counterpart
        and are not the client's own (see `CarryForward.unpaired`)."""
        return self._carry.unpaired(request)

    def compare(
        self, golden: Exchange, live: Response | LiveReply, *, number: int | None = None
    ) -> list[Mismatch]:
        """Normalize and compare the recorded reply with the live one, learn pairs. [] = match.

        `live` is a `Response`, or a `LiveReply` as it arrived (cheaper: see `LiveReply`).
        `number` is the exchange's in its file (1-based), for the checks scoped to it.
        """
        self._carry.learn_client_values(golden.request)
        if self._others is not None:
            live = self._others.leave_out(golden.response, live)
        out = self._comparison.compare(golden, live, number)
        checked = self._comparison.checked
        if checked is not None and number is not None:
            self._passed[number] = checked.passed
        self._bless.last_match = (golden.response, live) if not out else None
        return out

    def learn_frames(
        self,
        golden: Exchange,
        live: Sequence[SseEvent],
        start: int = 0,
        *,
        number: int | None = None,
    ) -> None:
        """Learn the pairs of the frames of a stream still open (`live`: the frames arrived so
        far), without a verdict: see `Comparison.learn_frames`. `compare` reports the stream
        when it has ended."""
        self._carry.learn_client_values(golden.request)
        self._comparison.learn_frames(golden, live, start, number)

    def bless(
        self,
        golden: Response,
        live: Response | LiveReply,
        *,
        matched: bool | None = None,
        number: int | None = None,
    ) -> Response:
        """The live reply with its generated values put back to the recorded ones (for --update;
        see `Bless.bless`). Call after `compare` for the same exchange, or (better) once the
        whole transcript is compared, passing `matched`. With the exchange's `number`, a
        checked place where every check held keeps its recorded value (`keep_recorded`).
        Another file's items of a listing are left out, as in `compare` (`inherit`)."""
        if self._others is not None:
            live = self._others.leave_out(golden, live)
        blessed = self._bless.bless(golden, live, matched=matched)
        if blessed is golden or number is None or number not in self._passed:
            return blessed
        return keep_recorded(blessed, self._passed[number])
