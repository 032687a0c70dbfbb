"""`recorder learn`'s I/O: play the transcripts until what they teach is stable, validate it out
of sample, write it, verify.

1. Each file is played `runs` times against the live agent by the replay's own `FilePlayer`
   (carry-forward, placeholders, @during: exactly as `recorder play` sends), which tells us each
   live reply (`FilePlayer.on_reply`).
2. `recorder.rules.noise.propose` compares the live replies of each exchange with one another and
   proposes the narrowest rules that absorb what differs (pure).
3. No false alarm by construction: every proposal is validated out of sample, leaving one run
   out (`held_out`): the rules learned without run k judge run k's replies, as `recorder play`
   would (`FilePlayer.judge`). Where the proposal changes when a run is left out, or a held-out
   run fails, one more live run is played and everything learned again, up to `max_runs`
   (then said: `Learned.unstable`). The final proposal is learned from every run, so it
   holds on each (a token, a claim, a format a held-out run lacked is not in it); a band
   (`length`, `lines`) that failed a held-out run is widened by what that run needed
   (`Learned.adjusted`), its margin being too narrow for the next run too. The held-out
   failures give the estimated false-alarm rate per exchange (`HeldOut`, with its Wilson
   interval).
4. The rules file is written (new, or merged into `--rules FILE`: `recorder.learn.rulesfile`).
5. One more run, `recorder play` with the learned rules: what still mismatches differs from the
   recording at a place that is stable between live runs, a likely regression, never learned.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recorder.checks.facts import Check
from recorder.disk.atomic import write_text_atomic
from recorder.format.model import Exchange, Response, Transcript
from recorder.learn.rulesfile import merge, render
from recorder.replay.calls import request_as_reply
from recorder.replay.grpc_send import GrpcTarget, grpc_target, has_grpc
from recorder.replay.needs import needs_of, play_needs
from recorder.replay.plan import load_transcripts
from recorder.replay.player import AgentHandle, FilePlayer
from recorder.replay.reports.results import PlayResult
from recorder.replay.run import play
from recorder.replay.send import DEFAULT_TIMEOUT, agent_base_url, make_transport
from recorder.replay.standin import StandIns
from recorder.replay.stats import wilson_interval
from recorder.replay.variables import secret_values
from recorder.replay.verdict.diff import Mismatch
from recorder.replay.verdict.live import LiveReply
from recorder.rules.noise import MoreChecks, Proposal, Proposals, Replies, propose
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES, Rules, rules_from_text, rules_over
from recorder.secrets.redact import scrub_text

__all__ = ["HeldOut", "HeldOutFailure", "Learned", "learn"]

MAX_RUNS = 12
"""Live runs `learn` plays at most by default while the proposal still changes."""

_Key = tuple[int, int]  # (file number, exchange index)
_Run = dict[_Key, LiveReply]  # one live run: each exchange's reply
_BANDS = ("length", "lines")  # widened by what a held-out run needed
_UNSTABLE_CHECKS = ("length", "lines", "similar")  # their values move with every new run


@dataclass(frozen=True)
class HeldOutFailure:
    """One exchange of one held-out run that the rules learned without that run failed."""

    run: int
    """The held-out run (1-based)."""
    where: str
    """`FILE exchange N`."""
    scope: str
    """`NAME#N`, as a checks entry's `in` names the exchange."""
    mismatches: tuple[Mismatch, ...]


@dataclass(frozen=True)
class HeldOut:
    """Leave-one-out over the live runs: each run judged by the rules learned without it."""

    runs: int
    trials: int
    """Held-out exchange runs judged (the exchanges every run answered, times the runs)."""
    failures: tuple[HeldOutFailure, ...] = ()
    changed: tuple[str, ...] = ()
    """Where the proposal differs when one run is left out (a rule, a check, a token)."""

    @property
    def rate(self) -> float:
        """The estimated false-alarm rate per exchange: held-out exchange runs that failed."""
        return len(self.failures) / self.trials if self.trials else 0.0

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """The rate's two-sided Wilson interval at `confidence`."""
        return wilson_interval(len(self.failures), self.trials, confidence)

    @property
    def stable(self) -> bool:
        """No held-out run failed and no run left out changed the proposal."""
        return not self.failures and not self.changed


@dataclass
class Learned:
    """What one `learn` found and wrote."""

    proposals: Proposals
    files: int
    exchanges: int
    """The A2A exchanges played (push deliveries among them), the agent's calls not."""
    runs: int
    text: str
    """The rules file as written (new, or the merged `--rules` file)."""
    errors: list[str] = field(default_factory=list)
    """Exchanges that got no reply (or were not sent) in a learning run: not learned from."""
    verify: PlayResult | None = None
    """The run with the learned rules: its mismatches are the likely regressions."""
    held_out: HeldOut | None = None
    """The last leave-one-out validation (None: no exchange answered in every run)."""
    adjusted: list[str] = field(default_factory=list)
    """The bands widened because a held-out run failed them."""
    unstable: str | None = None
    """Why learning stopped at `max_runs` with a proposal that still changes, or None."""
    calls: int = 0
    """The agent's own calls in the files (`# @call`), stood in for and learned from."""

    @property
    def regressions(self) -> int:
        if self.verify is None:
            return 0
        return sum(1 for t in self.verify.transcripts for e in t.exchanges if not e.passed)


def _keep(run: _Run, number: int, player: FilePlayer, index: int, live: LiveReply) -> None:
    # (a file that needs others, `# @after`: as compared, without other files' items)
    recorded = _recorded(player.transcript.exchanges[index])
    run[(number, index)] = player.state.without_others(recorded, live)


def _recorded(exchange: Exchange) -> Response:
    """What a block's live reply is compared with: a call's request (its body in a reply's
    place, as the stand-in compares it), else the recorded reply."""
    return request_as_reply(exchange.request).response if exchange.call else exchange.response


class _Kept:
    """An agent the learn started, handed to `play` for the verification run: not stopped."""

    def __init__(self, handle: AgentHandle) -> None:
        self._handle = handle

    @property
    def url(self) -> str:
        return self._handle.url

    @property
    def base_url(self) -> str:
        return self._handle.base_url

    @property
    def token(self) -> str:
        return self._handle.token

    def stop(self) -> None:
        """Stopped by `learn` at its end."""


@dataclass
class _Session:
    """The transcripts, the agent and the runs of one `learn` (one owner of its state)."""

    loaded: list[tuple[str, Transcript]]
    rules: Rules
    variables: dict[str, str]
    base_url: str
    live_base: str | None
    timeout: float
    grpc: GrpcTarget
    transport: Any
    runs: list[_Run] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    more_checks: MoreChecks | None = None
    """More checks where prose varied (a model's: `recorder.checks.model_proposals`)."""
    stand_ins: StandIns | None = None
    """The stand-ins for the agent's calls, as `recorder play` stands in by default: the runs
    learn what the replay will see (a call's noise too), not the live model's wording."""

    def player(self, path: str, transcript: Transcript, rules: Rules) -> FilePlayer:
        return FilePlayer(
            path,
            transcript,
            self.transport,
            self.base_url,
            rules=rules,
            variables=self.variables,
            timeout=self.timeout,
            live_base=self.live_base,
            grpc=self.grpc,
            stand_ins=self.stand_ins,
        )

    def play_once(self) -> None:
        """One more live run of every file."""
        run: _Run = {}
        needs = needs_of(self.loaded)
        for number, (path, transcript) in enumerate(self.loaded):
            player = self.player(path, transcript, self.rules)
            if path in needs:  # (`# @after`: the files it needs, played first)
                play_needs(
                    needs[path],
                    lambda need: self.player(need.path, need.transcript, self.rules),
                    lambda: False,
                    into=player.state,
                )
            player.on_reply = functools.partial(_keep, run, number, player)
            for index in range(len(transcript.exchanges)):
                result = player.play_until(index)
                if result.error is not None:
                    self.errors.append(f"{path} exchange {index + 1}: {result.error}")
        self.runs.append(run)

    def answered(self) -> list[_Key]:
        """The exchanges every run got a reply to (the ones learned from)."""
        return [
            (number, index)
            for number, (_, transcript) in enumerate(self.loaded)
            for index in range(len(transcript.exchanges))
            if all((number, index) in run for run in self.runs)
        ]

    def replies(self, runs: Sequence[_Run]) -> list[Replies]:
        out = []
        for number, index in self.answered():
            path, transcript = self.loaded[number]
            exchange = transcript.exchanges[index]
            out.append(
                Replies(
                    f"{path} exchange {index + 1}",
                    _recorded(exchange),
                    tuple(run[(number, index)].response for run in runs),
                    path,
                    index + 1,
                    exchange.truncated,
                )
            )
        return out

    def propose(self, runs: Sequence[_Run]) -> Proposals:
        return propose(self.replies(runs), self.rules, more_checks=self.more_checks)

    def held_out(self, full: Proposals) -> tuple[HeldOut, list[Proposals]]:
        """Leave each run out in turn: learn from the others, judge it (module docstring)."""
        answered = self.answered()
        failures: list[HeldOutFailure] = []
        changed: dict[str, None] = {}
        without: list[Proposals] = []
        mine = _signature(full)
        every = rules_over(self.rules, _as_mapping(full.rules), "<rules learned from every run>")
        for k, run in enumerate(self.runs):
            learned = self.propose([r for n, r in enumerate(self.runs) if n != k])
            without.append(learned)
            changed.update(dict.fromkeys(sorted(mine ^ _signature(learned))))
            if _values(learned) == _values(full):
                continue  # the same rules, to the last band: they hold on run k too
            # (as the rules file would read: the file itself is written once, at the end)
            rules = rules_over(
                self.rules, _as_mapping(learned.rules), "<rules learned without one run>"
            )
            for number, (path, transcript) in enumerate(self.loaded):
                player = self.player(path, transcript, rules)
                # (what the rules learned from every run find too differs from the recording
                # in every run: a likely regression, which no run more makes go away)
                judge = self.player(path, transcript, every)
                for index in range(len(transcript.exchanges)):
                    if (number, index) not in answered:
                        continue
                    live = run[(number, index)]
                    stable = {_place(m) for m in judge.judge(index, live)}
                    mismatches = [m for m in player.judge(index, live) if _place(m) not in stable]
                    if mismatches:
                        failures.append(
                            HeldOutFailure(
                                k + 1,
                                f"{path} exchange {index + 1}",
                                f"{os.path.basename(path)}#{index + 1}",
                                tuple(mismatches),
                            )
                        )
        held = HeldOut(
            len(self.runs), len(answered) * len(self.runs), tuple(failures), tuple(changed)
        )
        return held, without


def _signature(proposals: Proposals) -> frozenset[str]:
    """What a proposal says, but for the bands and floors that move with each run seen: the
    rules, the checks and their tokens."""
    out = set()
    for p in proposals.rules:
        head = f"{p.key} {p.target} {p.kind or ''} {p.scope}".strip()
        if not p.checks:
            out.add(head)
        for check in p.checks:
            value = "" if check.name in _UNSTABLE_CHECKS else json.dumps(check.value)
            out.add(f"{head}: {check.name} {value}{' ignore_case' if check.ignore_case else ''}")
    return frozenset(out)


def _as_mapping(proposals: Sequence[Proposal]) -> dict[str, Any]:
    """The proposals as the mapping their rules file loads as."""
    data: dict[str, Any] = {}
    for p in proposals:
        if p.key == "generated_paths":
            data.setdefault(p.key, {})[p.target] = p.kind
        elif p.key == "checks":
            # (a check written commented out is no rule: never run, held-out runs included)
            checks = [c.as_rule() for c in p.checks if not c.commented]
            item: dict[str, Any] = {"path": p.target, "assert": checks}
            if p.scope:
                item["in"] = p.scope
            data.setdefault("checks", []).append(item)
        else:
            data.setdefault(p.key, {"add": []})["add"].append(p.target)
    return data


def _values(proposals: Proposals) -> list[tuple[Any, ...]]:
    """What a proposal's rules say, to the last band (not why, nor what was seen)."""
    return [
        (p.key, p.target, p.kind, p.scope, [(c.name, c.value, c.ignore_case) for c in p.checks])
        for p in proposals.rules
    ]


def _place(mismatch: Mismatch) -> tuple[int | None, str, str | None]:
    return mismatch.frame, mismatch.path, mismatch.check


def _pattern(path: str) -> str:
    return re.sub(r"\[\d+\]", "[*]", path)


def _measure(name: str, text: Any) -> int | None:
    if not isinstance(text, str):
        return None
    return len(text) if name == "length" else len(text.splitlines())


def _widened(check: Check, held: Check, value: int) -> Check:
    """`check` (a band) widened by what `value` needed beyond `held`, the band learned
    without the run that gave it."""
    band = dict(check.value) if isinstance(check.value, dict) else {}
    old = held.value if isinstance(held.value, dict) else {}
    if "min" in band and "min" in old and value < old["min"]:
        band["min"] = band["min"] - (old["min"] - value)
        if band["min"] < 1:
            del band["min"]
    if "max" in band and "max" in old and value > old["max"]:
        band["max"] = band["max"] + (value - old["max"])
    seen = f"{check.seen}; widened: a held-out run needed {value}"
    return dataclasses.replace(check, value=band, seen=seen)


def _adjust(
    full: Proposals, held: HeldOut, without: Sequence[Proposals]
) -> tuple[Proposals, list[str]]:
    """`full` with each band (`length`, `lines`) that failed on a held-out run widened by what
    that run needed beyond the band learned without it. (Any other check that failed there
    is already out of `full`, or narrower: `full` learned from that run too, and holds only
    what held in it.)"""
    by_entry = {(p.scope, p.target): p for p in full.rules if p.key == "checks"}
    changes: dict[tuple[str, str], list[Check]] = {}
    said: list[str] = []
    for failure in held.failures:
        learned = {
            (p.scope, p.target): p for p in without[failure.run - 1].rules if p.key == "checks"
        }
        for mismatch in failure.mismatches:
            if mismatch.check not in _BANDS:
                continue
            entry = (failure.scope, _pattern(mismatch.path))
            mine, theirs = by_entry.get(entry), learned.get(entry)
            if mine is None or theirs is None:
                continue
            # (a list, not a mapping by name: two checks may share one, `similar` lexical
            # and by meaning, and neither may be lost)
            current = changes.setdefault(entry, list(mine.checks))
            at = next((n for n, c in enumerate(current) if c.name == mismatch.check), None)
            held_check = next((c for c in theirs.checks if c.name == mismatch.check), None)
            value = _measure(mismatch.check, mismatch.actual)
            if at is None or held_check is None or value is None:
                continue
            check = current[at]
            current[at] = _widened(check, held_check, value)
            said.append(
                f"{failure.scope} {entry[1]}: {check.name} widened (held-out run {failure.run}"
                f" needed {value})"
            )
    rules = [
        dataclasses.replace(p, checks=tuple(changes[(p.scope, p.target)]))
        if p.key == "checks" and (p.scope, p.target) in changes
        else p
        for p in full.rules
    ]
    return Proposals(rules, full.notes, full.hints), list(dict.fromkeys(said))


def learn(
    paths: Sequence[str | os.PathLike[str]],
    *,
    agent: str | None,
    rules: Rules = DEFAULT_RULES,
    rules_file: str | None = None,
    output: str | None = None,
    runs: int = 4,
    max_runs: int | None = None,
    environ: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    start_agent: Callable[..., AgentHandle] | None = None,
    grpc_agent: str | None = None,
    more_checks: MoreChecks | None = None,
) -> Learned:
    """Play `paths` `runs` times against `agent` (or the agent `start_agent` starts), and more
    (up to `max_runs`, by default `MAX_RUNS` or `runs` if more) while the proposal changes
    when a run is left out or a held-out run fails; propose the rules that absorb the noise
    over `rules` (read from `rules_file`, if any), write them to `output` (or merged into
    `rules_file`; neither: not written, see `Learned.text`), and play once more with them.
    gRPC calls go where `recorder.replay.grpc_send.grpc_target` says (`grpc_agent`, the started
    agent's, the card's); `more_checks` proposes more checks where prose varied (a model's:
    `recorder.checks.model_proposals`). Raises `TranscriptErrors`, `UpstreamError`,
    `RulesError`."""
    if runs < 2:
        raise ValueError("learning needs two live runs or more")
    most = max(runs, MAX_RUNS if max_runs is None else max_runs)
    loaded = load_transcripts(paths)
    variables = dict(os.environ if environ is None else environ)
    handle: AgentHandle | None = None
    live_base: str | None = None
    if agent is not None:
        base_url = agent_base_url(agent)
    elif start_agent is None:
        raise ValueError("no agent to learn from: give agent or start_agent")
    else:
        handle = start_agent(grpc=True) if has_grpc(t for _, t in loaded) else start_agent()
        base_url = agent_base_url(handle.url)
        live_base = agent_base_url(handle.base_url)
        variables.setdefault("A2A_TOKEN", handle.token)
    grpc = grpc_target(grpc_agent, base_url, handle, timeout)
    calls = sum(1 for _, t in loaded for e in t.exchanges if e.call is not None)
    exchanges = sum(len(t.exchanges) for _, t in loaded) - calls
    original = Path(rules_file).read_text(encoding="utf-8") if rules_file is not None else None
    secrets = secret_values(
        variables, {*rules.secret_headers.values(), *rules.secret_fields.values()}
    )

    def scrub(text: str) -> str:
        return scrub_text(text, secrets)

    made = f" (and their {calls} calls)" if calls else ""

    def text_of(proposed: Sequence[Proposal], count: int = 0) -> str:
        header = [
            f"recorder learn: {len(proposed)} rules for the noise of {base_url},",
            f"learned from {count} live runs of {exchanges} exchanges{made} in {len(loaded)}"
            f" files on {datetime.date.today().isoformat()}.",
            "Each rule says why it is needed, the exchanges that made it necessary, and a few",
            "of the live values seen there.",
        ]
        if original is not None:
            return merge(original, proposed, header, scrub) if proposed else original
        return render(proposed, header, scrub)

    stand_ins: StandIns | None = None
    try:
        if calls:
            stand_ins = StandIns(PairingRules(rules))
            stand_ins.stand_in_for(t for _, t in loaded)
        with make_transport(base_url) as transport:
            session = _Session(
                loaded, rules, variables, base_url, live_base, timeout, grpc, transport
            )
            session.more_checks = more_checks
            session.stand_ins = stand_ins
            for _ in range(runs):
                session.play_once()
            full = session.propose(session.runs)
            # (leaving each run out costs a proposal a run: first the last run only, which
            # says whether one more run changed the proposal; all of them once it did not)
            before = _signature(session.propose(session.runs[:-1]))
            next_check = 0  # (after a failed check, a few runs more before the next)
            while True:
                count = len(session.runs)
                if (before == _signature(full) and count >= next_check) or count >= most:
                    held, without = session.held_out(full)
                    if held.stable or count >= most:
                        break
                    next_check = math.ceil(count * 1.25)
                session.play_once()
                before, full = _signature(full), session.propose(session.runs)
        unstable = None
        if not held.stable:
            what = (
                f"{len(held.failures)} held-out exchange runs failed"
                if held.failures
                else f"the proposal changes when one run is left out ({held.changed[0]})"
            )
            unstable = (
                f"still not stable after {len(session.runs)} live runs (--max-runs): {what};"
                " the rules hold what held in every run, a band a held-out run failed widened"
            )
        if stand_ins is not None:  # (the verification run stands in where these listen)
            stand_ins.close()
            stand_ins = None
        proposals, adjusted = _adjust(full, held, without)
        text = text_of(proposals.rules, len(session.runs))
        learned_rules = rules_from_text(text, output or rules_file or "<learned rules>")
        target = output or rules_file
        if target is not None and (output is not None or proposals.rules):
            write_text_atomic(Path(target), text)
        start: Callable[..., AgentHandle] | None = None
        if handle is not None:
            kept = _Kept(handle)
            start = lambda **_: kept  # noqa: E731
        verify = play(
            paths,
            agent=base_url if handle is None else None,
            grpc_agent=grpc_agent or getattr(handle, "grpc_address", None),
            rules=learned_rules,
            environ=variables,
            timeout=timeout,
            start_agent=start,
        )
        return Learned(
            proposals,
            len(loaded),
            exchanges,
            len(session.runs),
            text,
            session.errors,
            verify,
            held if held.trials else None,
            adjusted,
            unstable,
            calls,
        )
    finally:
        if stand_ins is not None:
            stand_ins.close()
        grpc.channels.close()
        if handle is not None:
            handle.stop()
