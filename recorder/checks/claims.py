"""Claims: facts that belong together, checked as a unit (pure).

A review's finding is a line number with its file, a rule and a severity with them; a model
that swaps the line numbers of two findings, flips a severity, makes a finding up, drops one
or says one twice keeps every fact of the answer but not their meaning. A text is cut into
segments (`recorder.checks.segments`: sentences, list items, table rows); a segment's facts
(`recorder.checks.extract`) are a `Statement`. A `Claim` is a set of facts that one statement
holds; `Claims`, the value of the `claims` check, says:

- `each`: claims that must each be stated, all their facts in one statement, and not in the
  negative (`src/cart.py:2 [todo]: not a problem`, `there is no TODO at src/cart.py:2`);
- `denied`: claims that must be stated in the negative (`no issues found in src/cart.py`);
- `once`: no claim stated twice (a model that loops says a finding again);
- `count`: the number of statements that read as findings (a location or a rule id in them,
  or a file with a label), made-up ones among them.

`learn_claims` finds them over the texts seen at one place: the facts that sat in one
statement in every text (the recording's statements, each narrowed to the facts a statement of
every other text shares with it), two facts or more, not numbers and labels alone (a
summary's counts: the `facts` check has them); `once`, `count` and each claim's polarity only
where they were the same in every text. A statement is in the negative when it holds a
negation (`no`, `not`, `n't`, `never`, `none`, `nothing`, `without`, `cannot`) or a phrase
that dismisses its thing (`is fine`, `can be ignored`, `false positive`: `_DISMISSAL`), read in
English: light, and a claim's polarity is learned only where every text agreed (a finding
that is negative by nature, "no test file changed", is so in every wording), so a wording
that reads otherwise is never learned as a claim's polarity; a statement of its facts and
hardly a word more (a terse answer's) is not read for one.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recorder.checks.extract import (
    Fact,
    FactError,
    common_words,
    describe,
    facts_of,
    lower_words,
    one_word_items,
    parse_fact,
    written_in,
)
from recorder.checks.segments import segments

__all__ = [
    "Claim",
    "Claims",
    "Statement",
    "check_claims",
    "claims_value",
    "learn_claims",
    "parse_claims",
    "statements",
]

_WORDS = re.compile(r"[^\W\d_]{2,}")
_ENOUGH_WORDS = 4
_NEGATION = re.compile(r"\b(?:no|not|never|none|nothing|without|cannot)\b|n't\b", re.I)
_DISMISSAL = re.compile(
    r"""\b(?:
        not\s+(?:really\s+|actually\s+)?(?:a|an)\s+(?:real\s+|actual\s+)?
            (?:problem|issue|concern|bug|defect|finding)
      | no\s+(?:real\s+)?(?:issues?|problems?|concerns?|bugs?|defects?|findings?|comments?
            |remarks?)\b
      | nothing\s+(?:to\s+(?:flag|fix|report|address|worry\s+about)|wrong)
      | false\s+(?:positive|alarm)
      | (?:can|may)\s+(?:safely\s+)?be\s+ignored
      | (?:is|are|looks?|seems?)\s+(?:fine|harmless|ok|okay|intentional)\b
      | all\s+clear
      | looks\s+good
    )""",
    re.I | re.X,
)


@dataclass(frozen=True)
class Statement:
    """One segment's facts, its text, and whether it is in the negative."""

    text: str
    facts: tuple[Fact, ...]
    negative: bool
    wordy: bool = True
    """Whether it has words enough besides its facts to be read for a negation (a terse
    `the diff as a whole [missing-tests] medium (src/a.py)` says its facts, nothing of them)."""

    def states(self, fact: Fact) -> bool:
        """Whether this statement holds `fact` (a name or a label: written anywhere in it,
        a sentence's first word too)."""
        if any(fact.matches(mine) for mine in self.facts):
            return True
        return fact.kind in ("name", "label") and written_in(fact, self.text)

    @property
    def is_finding(self) -> bool:
        """A location or a rule id in it, or a file with a label: it reads as a finding."""
        kinds = {fact.kind for fact in self.facts}
        return bool(kinds & {"location", "tag"}) or {"path", "label"} <= kinds


@dataclass(frozen=True)
class Claim:
    """Facts that one statement must hold together."""

    facts: tuple[Fact, ...]

    def __str__(self) -> str:
        return describe(self.facts)

    def held_by(self, statement: Statement) -> bool:
        return all(statement.states(fact) for fact in self.facts)


@dataclass(frozen=True)
class Claims:
    """The `claims` check's value (see the module docstring)."""

    each: tuple[Claim, ...] = ()
    denied: tuple[Claim, ...] = ()
    count: int | None = None
    once: bool = False


def statements(text: str) -> list[Statement]:
    """The statements of `text`: each segment that holds a fact."""
    return list(_statements(text))


@functools.lru_cache(maxsize=4096)  # (learn reads the same texts again, run after run)
def _statements(text: str) -> tuple[Statement, ...]:
    common = common_words(text)
    lower = lower_words(text)
    found = []
    cut = segments(text)
    listed = one_word_items(cut)
    for segment in cut:
        for piece in _pieces(segment.text, common, lower):
            facts = facts_of(piece, common, lower, listed=segment.start in listed)
            if facts:
                negative = bool(_NEGATION.search(piece) or _DISMISSAL.search(piece))
                found.append(Statement(piece, tuple(facts), negative, _wordy(piece, facts, common)))
    return tuple(found)


_ANCHORS = frozenset(("location", "path", "tag"))


def _wordy(text: str, facts: Sequence[Fact], common: frozenset[str]) -> bool:
    """Words enough besides its facts and the common words (see `Statement.wordy`)."""
    said = {word.casefold() for fact in facts for word in _WORDS.findall(fact.key)}
    rest = [
        word
        for word in _WORDS.findall(text)
        if word.casefold() not in said and word.casefold() not in common
    ]
    return len(rest) >= _ENOUGH_WORDS


def _pieces(text: str, common: frozenset[str], lower: frozenset[str]) -> list[str]:
    """A segment cut at its `; ` where every piece names a thing of one kind (a terse
    answer's `src/a.py:2 [todo]; src/a.py:5 [debug-print]; the diff [missing-tests]`: a rule
    id each), else whole (a sentence's `at src/a.py:2, a secret; load it from the
    environment [hardcoded-secret]`: a place, then a rule)."""
    pieces = text.split("; ")
    if len(pieces) < 2:
        return [text]
    kinds = [frozenset(f.kind for f in facts_of(p, common, lower)) & _ANCHORS for p in pieces]
    return pieces if frozenset.intersection(*kinds) else [text]


# --- checking ----------------------------------------------------------------------------------


def check_claims(spec: Claims, text: str) -> list[str]:
    """What is wrong with `text` by `spec`, one reason per claim (nothing: it holds)."""
    said = statements(text)
    reasons: list[str] = []
    for claim, denied in [(c, False) for c in spec.each] + [(c, True) for c in spec.denied]:
        name = f'"{claim}"'
        holders = [s for s in said if claim.held_by(s)]
        if not holders:
            reasons.append(f"claim {name} missing{_found(claim, said)}")
        elif spec.once and len(holders) > 1:
            reasons.append(f"claim {name} repeated: stated {len(holders)} times")
        elif not denied and all(s.negative for s in holders):
            reasons.append(f"claim {name} stated in the negative: {_quote(holders[0].text)}")
        elif denied and not any(s.negative or not s.wordy for s in holders):
            reasons.append(
                f"claim {name} no longer stated in the negative: {_quote(holders[0].text)}"
            )
    if spec.count is not None:
        findings = [s for s in said if s.is_finding]
        if len(findings) != spec.count:
            claims = (*spec.each, *spec.denied)
            extra = [s for s in findings if not any(c.held_by(s) for c in claims)]
            noun = "claim" if len(findings) == 1 else "claims"
            reason = f"{len(findings)} {noun} stated, expected {spec.count}"
            if extra:
                shown = ", ".join(f'"{describe(s.facts)}"' for s in extra[:3])
                reason += f"; not expected: {shown}"
            reasons.append(reason)
    return reasons


def _found(claim: Claim, said: Sequence[Statement]) -> str:
    """`; found "src/cart.py:3 [todo]"`: the statement closest to a missing claim, its facts of
    the claim's kinds (`nothing like it` when no statement holds any of the claim's facts)."""
    kinds = {fact.kind for fact in claim.facts}
    best: tuple[int, int] = (0, 0)
    shown: list[Fact] = []
    for statement in said:
        alike = [f for f in statement.facts if f.kind in kinds or f.kind == "location"]
        score = (sum(statement.states(f) for f in claim.facts), len(alike))
        if alike and score[0] and score > best:
            best, shown = score, alike
    return f'; found "{describe(shown)}"' if shown else "; nothing like it"


def _quote(text: str) -> str:
    short = text if len(text) <= 60 else text[:59] + "…"
    return json.dumps(short, ensure_ascii=False)


# --- reading and writing -----------------------------------------------------------------------


def parse_claims(value: Any) -> Claims:
    """A `claims` check's options: a list of claims (each a list of facts, as `facts` writes
    them), or {each, denied, count, once}. Raises ValueError saying what is wrong."""
    if isinstance(value, list):
        return Claims(each=_claims(value, "claims"))
    if not isinstance(value, Mapping):
        raise ValueError("expected a list of claims (lists of facts) or {each, count, once}")
    unknown = sorted(str(k) for k in value if k not in ("each", "denied", "count", "once"))
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r} (options: each, denied, count, once)")
    count = value.get("count")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 0):
        raise ValueError(f"count: expected a whole number, 0 or more, got {count!r}")
    once = value.get("once", False)
    if not isinstance(once, bool):
        raise ValueError(f"once: expected true or false, got {once!r}")
    each = _claims(value.get("each", []), "each")
    denied = _claims(value.get("denied", []), "denied")
    if not each and not denied and count is None:
        raise ValueError("give each, denied or count")
    return Claims(each, denied, count, once)


def _claims(value: Any, key: str) -> tuple[Claim, ...]:
    if not isinstance(value, list):
        raise ValueError(f"{key}: expected a list of claims, each a list of facts")
    claims = []
    for n, item in enumerate(value):
        items = [item] if isinstance(item, str) else item
        if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
            raise ValueError(f"{key}[{n}]: expected a list of facts (strings), got {item!r}")
        try:
            claims.append(Claim(tuple(parse_fact(i) for i in items)))
        except FactError as exc:
            raise ValueError(f"{key}[{n}]: {exc}") from None
    return tuple(claims)


def claims_value(spec: Claims) -> Any:
    """`spec` as a rules file writes it (what `parse_claims` reads back the same)."""
    if not spec.denied and spec.count is None and not spec.once:
        return [[str(f) for f in claim.facts] for claim in spec.each]
    value: dict[str, Any] = {}
    if spec.each:
        value["each"] = [[str(f) for f in claim.facts] for claim in spec.each]
    if spec.denied:
        value["denied"] = [[str(f) for f in claim.facts] for claim in spec.denied]
    if spec.count is not None:
        value["count"] = spec.count
    if spec.once:
        value["once"] = True
    return value


# --- learning ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Learned:
    """What `learn_claims` found: the check's value (None: nothing to check) and what it saw."""

    claims: Claims | None
    seen: str


def learn_claims(texts: Sequence[str]) -> Learned:
    """The claims every one of `texts` stated (the first is the anchor: the recording's, when
    there is one). See the module docstring."""
    if not texts:
        return Learned(None, "")
    said = [statements(text) for text in texts]
    candidates = [list(s.facts) for s in said[0] if len(s.facts) >= 2]
    for other in said[1:]:
        narrowed = []
        for facts in candidates:
            best: list[Fact] = []
            for statement in other:
                shared = [_precise(f, statement) for f in facts if statement.states(f)]
                if len(shared) > len(best):
                    best = shared
            narrowed.append(best)
        candidates = [facts for facts in narrowed if len(facts) >= 2]
    # (numbers alone are a summary's, whose sentences a wording cuts anywhere: the facts
    # check has them; a claim is about something: a file, a rule, a name …)
    candidates = [f for f in candidates if any(x.kind not in ("number", "label") for x in f)]
    claims = _distinct([Claim(tuple(facts)) for facts in candidates])
    each, denied = [], []
    for claim in claims:
        holders = [[s for s in statements if claim.held_by(s)] for statements in said]
        polarity = {s.negative for found in holders for s in found}
        if polarity == {False}:
            each.append(claim)
        elif polarity == {True}:
            denied.append(claim)
    counts = {sum(s.is_finding for s in statements) for statements in said}
    count = counts.pop() if len(counts) == 1 else None
    kept = (*each, *denied)
    once = bool(kept) and all(
        sum(claim.held_by(s) for s in statements) == 1 for claim in kept for statements in said
    )
    if not kept:
        if count == 0 and all(_DISMISSAL.search(text) for text in texts):
            # an answer that found nothing, in every run: a made-up finding fails
            return Learned(Claims(count=0), "no finding stated, in every run")
        return Learned(None, "")
    if count == 0:
        count = None  # (no finding in any run: claims of another kind, a count says nothing)
    each_ = "each " if len(kept) > 1 else ""
    parts = [f"{len(kept)} claim{'s' if len(kept) > 1 else ''}, {each_}in one statement"]
    if once:
        parts.append(f"{each_}once")
    if count is not None:
        parts.append(f"{count} findings")
    return Learned(Claims(tuple(each), tuple(denied), count, once), ", ".join(parts))


def _precise(fact: Fact, statement: Statement) -> Fact:
    """`fact` as `statement` says it, if it says it more precisely (`src/a.py:3` for `a.py:3`)."""
    alike = [mine for mine in statement.facts if mine.kind == fact.kind and fact.matches(mine)]
    return max([fact, *alike], key=lambda f: f.precision)


def _distinct(claims: list[Claim]) -> list[Claim]:
    """Each claim once, and none that another holds whole (its check is the other's)."""
    keys = [frozenset((f.kind, f.key) for f in claim.facts) for claim in claims]
    kept = []
    for n, claim in enumerate(claims):
        if keys[n] in keys[:n]:
            continue
        if any(keys[n] < other for other in keys):
            continue
        kept.append(claim)
    return kept
