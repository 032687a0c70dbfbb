"""Noise: what differs between live replies of one build, and the narrowest rules that absorb it.

Pure: replies in, proposed rules out (`recorder learn` runs the agent, `--update` uses it to
refuse to bless noise). Diffy's idea: play the same transcripts twice or more against the same
agent; what differs between those live replies is noise, what differs only from the recording
is a likely regression (never learned here: the player reports it).

For each exchange, the live replies (two or more) are walked together, place by place, with the
rules the replay would use (a place they already absorb proposes nothing):

- a string whose live values differ, and each of whose values recurs elsewhere in its file's
  replies at the same places in every run (a later reply names it again), is an id: a
  `generated_paths` entry of kind `id`, paired one to one (a reply naming the wrong one
  fails);
- a string that differs and reads as prose in some run (two words or more, never an id: an
  answer a model words anew on every run) becomes a `checks` entry scoped to its exchange
  (`in: "FILE#N"`): what held in every run and in the recording (`recorder.checks.facts`: the
  facts, the claims, a length band, the format, a similarity floor), never "any text";
- any other scalar whose live values differ becomes a `generated_paths` entry of a value kind
  (`recorder.rules.kinds`), chosen over every live value seen at that place in any exchange, so that
  a type regression still fails: `integer`, `number`, `hex`, `duration`, `hostname`, `base64`,
  else `text` for strings; values of several types (a number and a string, null) make the place
  `ignored_paths`;
- a member present in some live replies and not in others, an array whose length differs, or
  values of different structure (an object against a list) become `ignored_paths` at that
  place, the narrowest one (an array item's member, never the array when only the member moves);
- an array whose items are the same in every live reply but in another order becomes
  `unordered_paths`;
- a response header whose values differ becomes `ignored_headers`.

Paths name array items with `[*]`, so that a rule covers every item and every frame. Event
streams are walked frame by frame (rules paths apply to each frame's JSON data). Places that
cannot be learned (a status, a non-JSON body that differs) are notes.

Structure (`recorder.rules.assembly`): the text of a message or artifact is its text parts
joined, so each reply is walked with the text parts of every `parts` list joined into one (a check
learned there checks the joined text, as the replay does). Where the number of text parts
differs between runs (the recording is one of them), or a stream's frames differ in number or
in kind (an artifact in four chunks one run, in two the next), the exchange is proposed for the
rules' `assembled` list, scoped to it (`FILE#N`), and a stream's frames are walked as one
value, as the client assembles them (`assemble`: the task with its artifacts put together, the
states in order), instead of frame by frame.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from recorder.checks.facts import ENOUGH_RUNS, Check, Texts, is_prose, learn_facts
from recorder.format.model import Response
from recorder.format.sse import SseEvent
from recorder.jsonpath import PathMatcher, format_path
from recorder.rules.assembly import STREAM_PAYLOADS, assemble, joined_parts, text_parts_counts
from recorder.rules.kinds import is_of_kind
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import Rules

__all__ = ["Proposal", "Proposals", "Replies", "propose"]

_Keys = tuple[str | int, ...]
_Occurrence = tuple[str, _Keys]  # (exchange and frame, the place in its JSON)
_ABSENT = object()
_SAMPLES = 3
_WHERE = 3


@dataclass(frozen=True)
class Replies:
    """One exchange: where it is (`file exchange N`), its recorded reply and its live ones."""

    where: str
    recorded: Response
    lives: tuple[Response, ...]
    group: str = ""
    """The transcript file: a value that recurs within one file's replies may be an id."""
    exchange: int = 0
    """The exchange's number in its file (1-based; 0: read from `where`): checks name it."""
    truncated: bool = False
    """The recorded reply is cut where its client left (a stream's first frames only)."""


@dataclass(frozen=True)
class Proposal:
    """One rule: `key` (generated_paths, ignored_paths, unordered_paths, ignored_headers), its
    `target` (a path, a header name), the kind of a generated_paths entry, why, the exchanges
    that made it necessary and a few of the live values seen there."""

    key: str
    target: str
    kind: str | None
    reason: str
    where: tuple[str, ...]
    samples: tuple[str, ...] = ()
    places: int = 0
    """How many exchanges (or frames) made it necessary (`where` names the first few)."""
    scope: str = ""
    """A `checks` entry's `in` (`FILE#N`)."""
    checks: tuple[Check, ...] = ()
    """A `checks` entry's checks (its `assert` list)."""

    def rule_text(self) -> str:
        """The rule as one line of YAML: `generated_paths: {'$.a': integer}`."""
        target = json.dumps(self.target)
        if self.key == "checks":
            scope = f", in: {json.dumps(self.scope)}" if self.scope else ""
            asserts = ", ".join(
                json.dumps(check.as_rule()) for check in self.checks if not check.commented
            )
            return f"checks: [{{path: {target}{scope}, assert: [{asserts}]}}]"
        if self.key == "generated_paths":
            return f"generated_paths: {{{target}: {self.kind}}}"
        return f"{self.key}: {{add: [{target}]}}"


@dataclass
class Proposals:
    """What `propose` found: the rules, and what differs that no rule can absorb."""

    rules: list[Proposal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    """Where more live runs would tell more (a fact in all runs but one, too few runs)."""


@dataclass
class _Place:
    """Everything seen at one path: each occurrence's live values, and whether any was noise."""

    lives: list[tuple[Any, ...]] = field(default_factory=list)
    noisy: list[str] = field(default_factory=list)
    occurrences: list[tuple[str, _Occurrence, tuple[Any, ...]]] = field(default_factory=list)
    """(file, occurrence, live values) of each time the place was seen."""
    noisy_at: list[tuple[str, int, tuple[Any, ...]]] = field(default_factory=list)
    """(file, exchange, live values) of each time the values differed."""
    texts: dict[tuple[str, int], list[Texts]] = field(default_factory=dict)
    """(file, exchange) -> the texts (recorded, live) at each concrete place of it."""


def pattern(keys: _Keys) -> str:
    """`("result", "items", 3, "id")` -> `$.result.items[*].id`."""
    return "$" + "".join("[*]" if isinstance(k, int) else format_path((k,))[1:] for k in keys)


MoreChecks = Callable[[Sequence[Texts], Sequence[Check]], tuple[Sequence[Check], Sequence[str]]]
"""More checks for a place whose prose varied, beside what held in every wording, and notes:
(texts, checks proposed) -> (checks, notes) (`recorder.checks.model_proposals`)."""


class _Learner:
    def __init__(self, rules: Rules, more_checks: MoreChecks | None = None) -> None:
        self.rules = rules
        self.more_checks = more_checks
        self.pairing = PairingRules(rules)
        self.ignored = rules.ignored_matcher
        self.unordered = rules.unordered_matcher
        self.secret_fields = {name.lower() for name in rules.secret_fields}
        self.places: dict[str, _Place] = {}
        self.structural: dict[tuple[str, str], tuple[str, list[str]]] = {}
        self.headers: dict[str, tuple[list[str], list[str]]] = {}
        self.notes: list[str] = []
        self.hints: list[str] = []
        self.assembled: list[Proposal] = []
        self.group = ""
        self.exchange = 0
        self.runs = 0
        self.checked = PathMatcher([])
        # (file, live run) -> string value -> the occurrences of it in that run's replies
        self.values: dict[tuple[str, int], dict[str, list[_Occurrence]]] = {}

    # --- the walk ----------------------------------------------------------------------------

    def reply(self, replies: Replies) -> None:
        lives = replies.lives
        if len(lives) < 2:
            return
        where = replies.where
        self.group = replies.group
        self.exchange = replies.exchange or _exchange_number(where)
        self.runs = max(self.runs, len(lives))
        # a place the rules' checks already decide here is theirs: nothing to learn there
        self.checked = PathMatcher(
            [e.path for e in self.rules.checks if e.applies(self.group, self.exchange)]
        )
        recorded = replies.recorded
        if len({live.status for live in lives}) > 1:
            statuses = ", ".join(str(live.status) for live in lives)
            self.notes.append(f"{where}: the status differs between live runs ({statuses})")
            return
        self.header_noise(where, lives)
        streams = [live.events for live in lives]
        if all(events is not None for events in streams):
            self.stream(
                where,
                recorded,
                [[e for e in ev or () if _is_data(e)] for ev in streams],
                replies.truncated,
            )
            return
        if any(events is not None for events in streams):
            self.notes.append(f"{where}: a stream in one live run, not in another")
            return
        values = [live.json if live.body else _ABSENT for live in lives]
        if all(v is not None and v is not _ABSENT for v in values):
            old = recorded.json if recorded.body and recorded.events is None else _ABSENT
            cut = self.cut_otherwise(([] if old is _ABSENT else [old]) + values)
            if cut:
                self.assemble(where, f"the number of text parts differs between runs ({cut})")
            joined = tuple(joined_parts(v) for v in values)
            self.visit((), joined, where, None, old if old is _ABSENT else joined_parts(old))
        elif len({live.body for live in lives}) > 1:
            self.notes.append(f"{where}: the body (not JSON) differs between live runs")

    def stream(
        self, where: str, recorded: Response, frames: list[list[SseEvent]], truncated: bool
    ) -> None:
        """An event stream's live frames (and the recorded ones): walked frame by frame, or
        assembled when the runs cut them otherwise (the module docstring)."""
        recorded_frames = [e for e in recorded.events or () if _is_data(e)]
        # (a truncated recording holds the first frames only: not a run to compare the cut of)
        runs = ([recorded_frames] if recorded.events is not None and not truncated else []) + frames
        kinds = {tuple(_frame_kind(event) for event in run) for run in runs}
        a2a = all(kind in STREAM_PAYLOADS for run in kinds for _, kind in run)
        if len(kinds) > 1 and not a2a:
            counts = ", ".join(str(len(f)) for f in frames)
            self.notes.append(f"{where}: the number of frames differs between live runs ({counts})")
            return
        if len(kinds) > 1:
            counts = ", ".join(str(len(run)) for run in runs)
            self.assemble(
                where, f"the number or kind of frames differs between runs ({counts} frames)"
            )
            views = tuple(assemble([_json_or_text(e.data) for e in run]) for run in frames)
            old = (
                assemble([_json_or_text(e.data) for e in recorded_frames])
                if recorded.events is not None
                else _ABSENT
            )
            self.visit((), views, where, None, old)
            return
        for number, frame in enumerate(zip(*frames, strict=True), start=1):
            values = [_json(event.data or "") for event in frame]
            old = (
                joined_parts(_json(recorded_frames[number - 1].data or ""))
                if number <= len(recorded_frames)
                else _ABSENT
            )
            if all(value is not _ABSENT for value in values):
                joined = tuple(joined_parts(value) for value in values)
                self.visit((), joined, f"{where} frame {number}", None, old)
            elif len({event.data for event in frame}) > 1:
                self.notes.append(f"{where} frame {number}: non-JSON data differs")

    def cut_otherwise(self, values: Sequence[Any]) -> str:
        """The text parts' counts of `values` (`1, 2, 1`) when some place the rules compare
        has a different number of them in one value than in another; "" when none has."""
        counts = [text_parts_counts(value) for value in values]
        places = set(counts[0]).intersection(*counts[1:])
        for keys in sorted(places, key=str):
            if self.ignored.match(keys) or (self.checked and self.checked.match(keys)):
                continue
            seen = [count[keys] for count in counts]
            if len(set(seen)) > 1:
                return ", ".join(map(str, seen))
        return ""

    def assemble(self, where: str, why: str) -> None:
        """Propose the exchange for the rules' `assembled` list."""
        name = re.split(r"[\\/]", self.group)[-1]
        scope = f"{name}#{self.exchange}" if name else f"*#{self.exchange}"
        reason = f"{why}: compared as the client assembles it"
        self.assembled.append(Proposal("assembled", scope, None, reason, (where,), (), 1))

    def header_noise(self, where: str, lives: Sequence[Response]) -> None:
        names: dict[str, None] = {}
        for live in lives:
            names.update((name.lower(), None) for name, _ in live.headers)
        skip = self.rules.ignored_headers | self.rules.secret_headers.keys() | {"content-type"}
        for name in names:
            if name in skip:
                continue
            values = {tuple(live.headers.get_all(name)) for live in lives}
            if len(values) > 1:
                seen, samples = self.headers.setdefault(name, ([], []))
                seen.append(where)
                samples.extend(", ".join(v) for v in values)

    def visit(
        self,
        keys: _Keys,
        lives: tuple[Any, ...],
        where: str,
        kind: str | None,
        recorded: Any = _ABSENT,
    ) -> None:
        """Walk the live values at `keys` together (`recorded`: the recorded value there)."""
        if keys and self.ignored.match(keys):
            return
        if keys and self.checked and self.checked.match(keys):
            return
        if keys and isinstance(keys[-1], str) and keys[-1].lower() in self.secret_fields:
            return
        kind = self.rules.generated_path_kind(keys) or kind
        if all(isinstance(v, dict) for v in lives):
            names: dict[str, None] = {}
            for value in lives:
                names.update(dict.fromkeys(value))
            for name in names:
                children = tuple(value.get(name, _ABSENT) for value in lives)
                child = (*keys, name)
                if any(c is _ABSENT for c in children):
                    if not self.ignored.match(child):
                        self.structure(
                            child, "ignored_paths", "present in some live runs only", where
                        )
                    continue
                old = recorded.get(name, _ABSENT) if isinstance(recorded, dict) else _ABSENT
                self.visit(child, children, where, self.pairing.field_kind(name, lives[0]), old)
            return
        if all(isinstance(v, list) for v in lives):
            self.array(keys, lives, where, kind, recorded)
            return
        if any(isinstance(v, dict | list) for v in lives):
            self.structure(keys, "ignored_paths", "an object, a list and a value by turns", where)
            return
        place = self.places.setdefault(pattern(keys), _Place())
        place.lives.append(lives)
        occurrence = (where, keys)
        place.occurrences.append((self.group, occurrence, lives))
        for run, value in enumerate(lives):
            if isinstance(value, str) and value:
                seen = self.values.setdefault((self.group, run), {})
                seen.setdefault(value, []).append(occurrence)
        if all(isinstance(v, str) for v in lives):
            old = recorded if isinstance(recorded, str) else None
            texts = place.texts.setdefault((self.group, self.exchange), [])
            texts.append(Texts(old, tuple(lives)))
        if _all_same(lives) or self.absorbed(lives, kind):
            return
        place.noisy.append(where)
        place.noisy_at.append((self.group, self.exchange, lives))

    def array(
        self, keys: _Keys, lives: tuple[Any, ...], where: str, kind: str | None, recorded: Any
    ) -> None:
        if len({len(v) for v in lives}) > 1:
            self.structure(
                keys, "ignored_paths", "the number of items differs between live runs", where
            )
            return
        canon = [[self.canon(item) for item in value] for value in lives]
        if len({tuple(sorted(c)) for c in canon}) == 1 and (
            len({tuple(c) for c in canon}) > 1 or self.unordered.match(keys)
        ):
            if not self.unordered.match(keys):
                self.structure(keys, "unordered_paths", "the same items in another order", where)
            # pair the items by content: what is inside them is compared as the replay pairs it
            lives = tuple(
                [item for _, item in sorted(zip(c, value, strict=True), key=lambda p: p[0])]
                for c, value in zip(canon, lives, strict=True)
            )
        for index in range(len(lives[0])):
            old = (
                recorded[index] if isinstance(recorded, list) and index < len(recorded) else _ABSENT
            )
            self.visit((*keys, index), tuple(value[index] for value in lives), where, kind, old)

    def structure(self, keys: _Keys, key: str, reason: str, where: str) -> None:
        self.structural.setdefault((key, pattern(keys)), (reason, []))[1].append(where)

    def absorbed(self, lives: tuple[Any, ...], kind: str | None) -> bool:
        """Whether the rules already absorb these differing live values at their place."""
        if kind is not None:
            if kind in self.pairing.value_kinds:
                return all(is_of_kind(kind, v) for v in lives)
            return all(isinstance(v, str) and v for v in lives)
        if all(isinstance(v, str) for v in lives):
            return _all_same([self.wildcard(v) for v in lives])
        return False

    def wildcard(self, text: str) -> str:
        shapes = self.pairing.shapes
        if shapes is None:
            return text
        return shapes.sub(lambda m: f"<{m.lastgroup}>", text)

    def canon(self, value: Any) -> str:
        """An item as a key for pairing items regardless of order (generated values as kinds)."""

        def walk(item: Any, kind: str | None) -> Any:
            if isinstance(item, dict):
                return {
                    name: walk(member, self.pairing.field_kind(name, item))
                    for name, member in item.items()
                }
            if isinstance(item, list):
                return [walk(member, kind) for member in item]
            if isinstance(item, str):
                return f"<{kind}>" if kind is not None and item else self.wildcard(item)
            return item

        return json.dumps(walk(value, None), sort_keys=True)

    def recurs(self, place: _Place) -> bool:
        """Whether the strings of a place are ids: in every live run, a value of it recurs
        elsewhere in its file's replies (a later reply names it again), and the places where
        each value recurs are the same in every run (so they pair one to one)."""
        recurs = False
        for group, _, lives in place.occurrences:
            if not all(isinstance(v, str) and v for v in lives):
                return False
            classes = {
                frozenset(self.values[(group, run)][value]) for run, value in enumerate(lives)
            }
            if len(classes) > 1:
                return False
            recurs = recurs or any(len(c) > 1 for c in classes)
        return recurs

    # --- the proposals -------------------------------------------------------------------------

    def proposals(self) -> Proposals:
        out: list[Proposal] = []
        for (key, target), (reason, where) in self.structural.items():
            out.append(Proposal(key, target, None, reason, _first(where), (), _count(where)))
        for target, place in self.places.items():
            if not place.noisy:
                continue
            noisy = [v for _, _, lives in place.noisy_at for v in lives]
            if all(isinstance(v, str) for v in noisy) and any(is_prose(v) for v in noisy):
                # (an answer that is one word in one run is still an answer: never "any text")
                out.extend(self.facts(target, place))
                continue
            values = [v for lives in place.lives for v in lives]
            kind = classify(values)
            samples = _samples(values)
            if kind is not None and self.recurs(place):
                kind = "id"
            if kind is None:
                reason = "differs between live runs, in type too"
                out.append(
                    Proposal(
                        "ignored_paths",
                        target,
                        None,
                        reason,
                        _first(place.noisy),
                        samples,
                        _count(place.noisy),
                    )
                )
            else:
                reason = (
                    "differs between live runs, and each value recurs at the same places in"
                    " every run: an id, paired one to one"
                    if kind == "id"
                    else f"differs between live runs; {kind} every time"
                )
                out.append(
                    Proposal(
                        "generated_paths",
                        target,
                        kind,
                        reason,
                        _first(place.noisy),
                        samples,
                        _count(place.noisy),
                    )
                )
        for name, (seen, values) in self.headers.items():
            reason = "the header differs between live runs"
            out.append(
                Proposal(
                    "ignored_headers",
                    name,
                    None,
                    reason,
                    _first(seen),
                    _first(values),
                    _count(seen),
                )
            )
        out.extend(self.assembled)
        ignored = [p.target for p in out if p.key == "ignored_paths"]
        kept = [
            p
            for p in out
            if p.key in ("ignored_headers", "assembled")
            or not any(
                _under(p.target, i) and (p.target != i or p.key != "ignored_paths") for i in ignored
            )
        ]
        order = {
            "generated_paths": 0,
            "unordered_paths": 1,
            "ignored_paths": 2,
            "ignored_headers": 3,
            "assembled": 4,
            "checks": 5,
        }
        kept.sort(key=lambda p: (order[p.key], p.where, p.target))
        hints = list(self.hints)
        if any(p.key == "checks" for p in kept) and self.runs < ENOUGH_RUNS:
            hints.insert(
                0,
                f"{self.runs} live runs: too few to tell the facts of a varying answer from "
                f"its wording; learn with --runs {ENOUGH_RUNS} or more",
            )
        return Proposals(kept, self.notes, hints)

    def facts(self, target: str, place: _Place) -> list[Proposal]:
        """One `checks` entry per exchange where the prose at `target` varied: what held in
        every run there (`recorder.checks.facts`)."""
        out: list[Proposal] = []
        for group, exchange in dict.fromkeys((g, e) for g, e, _ in place.noisy_at):
            texts = place.texts.get((group, exchange), [])
            found = learn_facts(texts)
            checks, notes = found.checks, found.notes
            if self.more_checks is not None:
                more, said = self.more_checks(texts, checks)
                checks, notes = (*checks, *more), (*notes, *said)
            name = re.split(r"[\\/]", group)[-1]
            scope = f"{name}#{exchange}" if name else ""
            where = f"{group} exchange {exchange}" if group else f"exchange {exchange}"
            samples = _samples(
                [v for g, e, lives in place.noisy_at if (g, e) == (group, exchange) for v in lives]
            )
            reason = "the text differs between live runs; what held in every run is checked"
            out.append(
                Proposal("checks", target, None, reason, (where,), samples, 1, scope, checks)
            )
            self.hints.extend(f"{scope or where} {target}: {note}" for note in notes)
        return out


def propose(
    replies: Sequence[Replies], rules: Rules, *, more_checks: MoreChecks | None = None
) -> Proposals:
    """The narrowest rules that absorb what differs between the live replies of each exchange
    (see the module docstring), over `rules` (a place they absorb proposes nothing);
    `more_checks`: more checks where prose varied (a model's)."""
    learner = _Learner(rules, more_checks)
    for item in replies:
        learner.reply(item)
    return learner.proposals()


def classify(values: Sequence[Any]) -> str | None:
    """The narrowest value kind of every one of `values`, or None (several types)."""
    if all(is_of_kind("integer", v) for v in values):
        return "integer"
    if all(is_of_kind("number", v) for v in values):
        return "number"
    if not all(isinstance(v, str) for v in values):
        return None
    if all(is_of_kind("hex", v) for v in values) and max(map(len, values)) >= 8:
        return "hex"
    if all(is_of_kind("duration", v) for v in values):
        return "duration"
    if all(is_of_kind("hostname", v) for v in values):
        return "hostname"
    if all(_token_like(v) for v in values):
        return "base64"
    return "text"


def _token_like(value: str) -> bool:
    """base64 that reads as a token, not as a word: 8 characters or more, a digit or padding."""
    return (
        len(value) >= 8
        and is_of_kind("base64", value)
        and (value.endswith("=") or any(c.isdigit() for c in value))
    )


def _under(path: str, ancestor: str) -> bool:
    return path == ancestor or path.startswith((ancestor + ".", ancestor + "["))


def _all_same(values: Sequence[Any]) -> bool:
    first = values[0]
    return all(type(v) is type(first) and v == first for v in values[1:])


def _count(items: Sequence[str]) -> int:
    return len(set(items))


def _first(items: Sequence[str]) -> tuple[str, ...]:
    unique = list(dict.fromkeys(items))
    shown = unique[:_WHERE]
    if len(unique) > _WHERE:
        shown.append(f"and {len(unique) - _WHERE} more")
    return tuple(shown)


def _samples(values: Sequence[Any]) -> tuple[str, ...]:
    texts = dict.fromkeys(json.dumps(v, ensure_ascii=False) for v in values)
    return tuple(t if len(t) <= 60 else t[:57] + "..." for t in list(texts)[:_SAMPLES])


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _ABSENT


def _json_or_text(data: str | None) -> Any:
    """A frame's data as JSON, or as its text when it is not JSON."""
    value = _json(data or "")
    return data if value is _ABSENT else value


def _frame_kind(event: SseEvent) -> tuple[str | None, str]:
    """A frame's event name and the member its JSON payload is (`artifactUpdate` ...)."""
    value = _json(event.data or "")
    body = value.get("result", value) if isinstance(value, dict) else None
    kind = next(iter(body), "") if isinstance(body, dict) else ""
    return event.event, kind if isinstance(kind, str) else ""


def _exchange_number(where: str) -> int:
    found = re.search(r"exchange (\d+)$", where)
    return int(found.group(1)) if found else 0


def _is_data(event: SseEvent) -> bool:
    return event.data is not None
