"""The recorded calls of one file in a replay: which wait, which came, and their verdicts.

One `FileCalls` per `FilePlayer` whose transcript holds calls (`# @call`), joined to the run's
stand-ins (`recorder.replay.standin`). The player opens an exchange before it sends its
request (`open`) and settles it once its reply was compared (`settle`, then `verdict`); in
between, the stand-ins' threads offer it each live call (`candidate`, `take`):

- a call of an open exchange that has not been made waits (`recorder.replay.calls.
  choose_call` picks among them);
- a call of a settled exchange that was not made still waits, last: an agent that made it
  late (after that exchange's reply ended) gets its recorded answer, and the exchange open
  then reports it as an extra call, made late;
- a live call that no recorded call waits for is an extra call of the first open exchange.

The verdict compares each call made with its recorded call through the file's
`ReplayState` (as a reply is compared: its pairs, rules and checks), in file order, after the
exchange's reply: `call 2 (model) $.messages[1].content: …`, `call 3 (tools): not made`, `an
extra call (model): POST /v1/chat/completions`. Thread-safe: the stand-ins' threads and the
player's meet under one lock; the comparison runs on the player's thread only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from recorder.format.model import Transcript
from recorder.replay.calls import (
    Candidate,
    LiveCall,
    RecordedCall,
    as_reply,
    choose_call,
    closeness,
    extra_call,
    live_as_reply,
    not_made,
    recorded_calls,
    target_mismatches,
)
from recorder.replay.reports.verbose import verbose_lines
from recorder.replay.verdict.diff import Mismatch
from recorder.replay.verdict.live import LiveReply
from recorder.replay.verdict.state import ReplayState
from recorder.rules.pairing import PairingRules

__all__ = ["CallVerdict", "FileCalls", "call_details"]


@dataclass(frozen=True)
class CallVerdict:
    """What an exchange's calls came to: their mismatches (in file order), how many recorded
    calls it had, and the live requests of the calls made (by their block's 0-based index:
    what --update blesses)."""

    mismatches: tuple[Mismatch, ...] = ()
    count: int = 0
    made: Mapping[int, LiveReply] | None = None
    whole: bool = True
    """Every recorded call was made and no extra one came (--update can bless the calls)."""
    lives: Mapping[int, LiveReply] | None = None
    """The live request of every call made, alike or not (by its block's index): what
    --update's second run compares, so that a call that varies is refused as noise."""


class FileCalls:
    """One file's calls in a replay (see the module docstring)."""

    def __init__(
        self,
        path: str,
        transcript: Transcript,
        rules: PairingRules,
        mapping: Callable[[], Mapping[str, str]],
    ) -> None:
        """`mapping` gives the file's pairs so far (recorded -> live values:
        `ReplayState.mapping`), read when a call comes."""
        self.path = path
        self.rules = rules
        self._mapping = mapping
        self.calls = recorded_calls(transcript)
        self._of: dict[int, list[RecordedCall]] = {}
        for call in self.calls:
            self._of.setdefault(call.exchange, []).append(call)
        self._lock = threading.Lock()
        self._open: list[int] = []  # exchanges sent and not settled, in file order
        self._settled: set[int] = set()
        self._made: dict[int, LiveCall] = {}  # a call block's index -> the live call
        self._extras: dict[int, list[tuple[LiveCall, str]]] = {}  # exchange -> extra calls

    def mapping(self) -> Mapping[str, str]:
        """The file's pairs so far (recorded -> live values)."""
        return self._mapping()

    @property
    def names(self) -> set[str]:
        """The downstreams its calls went to."""
        return {call.name for call in self.calls}

    def open(self, index: int) -> None:
        """Exchange `index` (0-based) is about to be sent: its calls wait from now."""
        with self._lock:
            if index not in self._open and index not in self._settled:
                self._open.append(index)
                self._open.sort()

    @property
    def is_open(self) -> bool:
        with self._lock:
            return bool(self._open)

    def candidate(self, live: LiveCall) -> tuple[Candidate, bool] | None:
        """The recorded call `live` would stand for in this file, and whether it is one of an
        open exchange (else a call made late); None when none waits, or no exchange is open
        (a file played to its end takes no call)."""
        with self._lock:
            if not self._open:
                return None
            waiting = [
                call
                for index in self._open
                for call in self._of.get(index, ())
                if call.index not in self._made
            ]
            late = [
                call
                for index in sorted(self._settled)
                for call in self._of.get(index, ())
                if call.index not in self._made
            ]
        mapping = self._mapping()
        found = choose_call(live, waiting, self.rules, mapping)
        if found is not None:
            return found, True
        found = choose_call(live, late, self.rules, mapping)
        return (found, False) if found is not None else None

    def closeness(self, live: LiveCall) -> tuple[int, int, int, int] | None:
        """How closely `live` matches any call of its downstream in this file (made or not),
        while an exchange is open: where an extra call belongs."""
        if not self.is_open:
            return None
        return closeness(live, self.calls, self.rules, self._mapping())

    def take(self, candidate: Candidate, live: LiveCall) -> bool:
        """`live` came for `candidate.call`; False when another live call took it first."""
        with self._lock:
            call = candidate.call
            if call.index in self._made:
                return False
            self._made[call.index] = live
            if call.exchange in self._settled:
                # made after its exchange's reply ended: an extra of the exchange open now
                place = self._open[0] if self._open else call.exchange
                note = f"made late: {call.label} of exchange {call.exchange + 1}"
                self._extras.setdefault(place, []).append((live, note))
            return True

    def extra(self, live: LiveCall) -> None:
        """`live` came and no recorded call waits for it: an extra call of the first open
        exchange."""
        with self._lock:
            place = self._open[0] if self._open else max(self._settled, default=0)
            self._extras.setdefault(place, []).append((live, ""))

    def settle(self, index: int, state: ReplayState | None) -> CallVerdict:
        """Exchange `index`'s reply was compared (`state`: the file's, on the player's
        thread): its calls compared with the recorded ones, in file order. None `state`:
        the exchange got no reply, its calls are not judged."""
        with self._lock:
            if index in self._open:
                self._open.remove(index)
            self._settled.add(index)
            calls = self._of.get(index, [])
            made = {call.index: self._made.get(call.index) for call in calls}
            extras = self._extras.pop(index, [])
        if state is None:
            return CallVerdict(count=len(calls))
        mismatches: list[Mismatch] = []
        blessed: dict[int, LiveReply] = {}
        lives: dict[int, LiveReply] = {}
        whole = not extras
        for call in calls:
            live = made[call.index]
            if live is None:
                mismatches.append(not_made(call))
                whole = False
                continue
            reply = live_as_reply(live)
            lives[call.index] = reply
            found = list(target_mismatches(call, live))
            found.extend(
                _labelled(m, call) for m in state.compare(as_reply(call), reply, number=None)
            )
            if found:
                blessed[call.index] = reply
            mismatches.extend(found)
        mismatches.extend(extra_call(live, note) for live, note in extras)
        return CallVerdict(tuple(mismatches), len(calls), blessed, whole, lives)


def _labelled(mismatch: Mismatch, call: RecordedCall) -> Mismatch:
    return replace(mismatch, call=call.label)


def call_details(
    state: ReplayState,
    calls: FileCalls,
    verdict: CallVerdict,
    secrets: Mapping[str, str],
    *,
    whole: bool = False,
) -> tuple[str, ...]:
    """`play -v`: each call that differs, its recorded and live request diffed as the
    comparison saw them (`recorder.replay.reports.verbose`; `whole`: both whole)."""
    lines: list[str] = []
    for call in calls.calls:
        live = (verdict.made or {}).get(call.index)
        if live is None:
            continue
        lines.append(f"{call.label}, {call.request.method} {call.request.target}:")
        for line in verbose_lines(state, as_reply(call), live, secrets, whole=whole):
            # (compared as a reply is: the request's body in a reply's place, under a status
            # line of its own making, left out)
            if line.strip() != "HTTP/1.1 200 OK":
                lines.append(line.replace(" reply (normalized)", " request (normalized)"))
    return tuple(lines)
