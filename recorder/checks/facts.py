"""What held in every wording of a varying answer, as the checks `learn` proposes (pure).

A model-backed agent words the same answer differently on every run; what must hold is the
meaning. `learn_facts` takes the texts seen at one place of one exchange (the recorded one
and one per live run, at each concrete path and frame the place names) and proposes the
checks of the rules file's `checks` key that held in EVERY run and in the recording. It is a
function of the texts alone (deterministic, a few milliseconds per text): any subset of the
runs can be given to it, to validate a proposal on the runs it was not learned from.

- `facts`: the facts (`recorder.checks.extract`: paths, `path:line` in any of its forms, rule
  ids, numbers and number words, quoted strings, identifiers, names met inside a sentence,
  labels beside a fact …) that every text states, each in its most specific form (`src/a.py:3`
  over `a.py:3`; a path beside its own `path:line` is left out). The common words of the
  text's language are never facts: a word that recurs by chance in a few runs would fail the
  next wording.
- `claims` (`recorder.checks.claims`): the facts that sat in one sentence, list item or table
  row in every text, checked together (a line with its file, a rule and a severity with
  them), each as stated or in the negative where every text said it so; `once` where each
  was said once in every text, `count` (the findings) where it was the same in every text.
- `length`, `lines`: a band whose margin is the spread seen: the longest multiplied, the
  shortest divided, by the ratio of the longest to the shortest (1.5 at least; the floor
  divided twice: a terse wording keeps the facts and drops the words; a line count's ceiling
  multiplied twice: a table or a list says in lines what prose says in one); never below one
  character (an empty answer fails) unless an empty one was seen; `lines` a ceiling only,
  when every text had two lines or more.
- the format, when every text had it: a bulleted list (`matches`), a code fence (`contains`),
  JSON (`json: true`).
- `language`: the language every text was detected in (`recorder.checks.language`, when
  py3langid is installed), for texts of eight words or more (a detector guesses on fewer).
- `similar`: a floor below the lowest pairwise similarity seen at each place (rapidfuzz
  `token_set_ratio`, the check's default, as it scores) by the spread of those scores (0.1 at
  least), at most 0.7, rounded down to 0.05.

Each check carries `seen`: what it saw, written as the YAML comment beside it; a weak one (a
single short fact, a band ten times as wide as it is low, a floor of 0.2 or less) says
`weak` there. `notes` say where more runs would tell more: a fact stated in all but one run
(left out: it may be wording, or a fact the odd run lost), or fewer runs than `ENOUGH_RUNS`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from rapidfuzz import fuzz, utils

from recorder.checks.claims import claims_value, learn_claims
from recorder.checks.extract import Fact, facts_in, stated_in
from recorder.checks.language import LANGUAGE_CODE, detect_language, language_available

__all__ = ["ENOUGH_RUNS", "Check", "Facts", "Texts", "is_prose", "learn_facts"]

ENOUGH_RUNS = 4
"""Live runs that tell facts from wording: a wording that recurs by chance in each of them is
unlikely (one of k wordings: (1/k)^(runs-1)), and `all but one run` still leaves three."""

_MAX_FACTS = 24
_LANGUAGE_WORDS = 8
_SIMILAR_CAP = 0.7
_LEAST_RATIO = 1.5
"""A band's margin when the texts were about as long: one a third shorter or half longer is
still the same kind of answer."""
_WIDE = 10
_BULLET = re.compile(r"(?m)^\s*(?:[-*•]|\d+[.)])\s+\S")
_BULLET_PATTERN = r"(?m)^\s*(?:[-*•]|\d+[.)])\s+\S"
_FENCE = "```"


@dataclass(frozen=True)
class Check:
    """One proposed check: its name and value as the rules file writes them (`contains_all`,
    a list of tokens), `ignore_case`, and `seen`: what it saw (the YAML comment)."""

    name: str
    value: Any
    seen: str
    ignore_case: bool = False
    commented: bool = False
    """Written commented out, for the user to take (a model judge without an endpoint)."""

    def as_rule(self) -> dict[str, Any]:
        """The check as one item of a `checks` entry's `assert` list."""
        item: dict[str, Any] = {self.name: self.value}
        if self.ignore_case:
            item["ignore_case"] = True
        return item


@dataclass(frozen=True)
class Texts:
    """One concrete place (a path and frame) of an exchange: its recorded text (None when the
    recording had none there) and its live text in each run, in run order."""

    recorded: str | None
    lives: tuple[str, ...]


@dataclass(frozen=True)
class Facts:
    """What `learn_facts` proposes for one place of one exchange."""

    checks: tuple[Check, ...]
    notes: tuple[str, ...]


def is_prose(value: Any) -> bool:
    """Whether a value reads as prose (two words or more), not as an id, a number or a token:
    those keep the value kinds of `recorder.rules.noise`."""
    return isinstance(value, str) and len(value.split()) >= 2


def learn_facts(places: Sequence[Texts]) -> Facts:
    """The checks that held in every run (and in the recording) over `places`, which all
    share one rules path in one exchange (so one check entry covers them all)."""
    runs = max((len(p.lives) for p in places), default=0)
    # each run's texts at every place; the recording counts as one more run
    by_run: list[list[str]] = [
        [p.lives[run] for p in places if run < len(p.lives)] for run in range(runs)
    ]
    recorded = [p.recorded for p in places if p.recorded is not None]
    if recorded:
        by_run.insert(0, recorded)  # (its tokens first: the checks list them in its order)
    texts = [text for run_texts in by_run for text in run_texts]
    if not texts:
        return Facts((), ())
    seen_in = f"in all {_runs(runs)}" + (" and the recording" if recorded else "")
    checks: list[Check] = []
    notes: list[str] = []
    held, nearly = _common_facts(by_run)
    if held:
        short = len(held) == 1 and len(held[0].key) <= 3
        seen = seen_in + ("; weak: a single short fact" if short else "")
        checks.append(Check("facts", [str(fact) for fact in held], seen))
    claims = learn_claims(texts)
    if claims.claims is not None:
        checks.append(Check("claims", claims_value(claims.claims), f"{claims.seen} {seen_in}"))
    if nearly:
        shown = ", ".join(json.dumps(str(f), ensure_ascii=False) for f in nearly[:3])
        more = f" and {len(nearly) - 3} more" if len(nearly) > 3 else ""
        notes.append(
            f"{shown}{more} in all runs but one: not checked (wording, or a fact that run "
            "lost); more --runs tell"
        )
    checks.append(_length(texts))
    lines = [len(text.splitlines()) for text in texts]  # (as the check counts)
    if min(lines) > 1:
        # (a ceiling only, multiplied twice: prose, a list and a table of the same findings
        # differ in lines; a list turned into one paragraph is the bulleted list's to see)
        band = _band("lines", lines, "lines", floor=1, above=2)
        checks.append(Check("lines", {"max": band.value["max"]}, band.seen))
    if all(_BULLET.search(text) for text in texts):
        checks.append(Check("matches", _BULLET_PATTERN, f"a bulleted list {seen_in}"))
    if all(_FENCE in text for text in texts):
        checks.append(Check("contains", _FENCE, f"a code fence {seen_in}"))
    if all(_is_json(text) for text in texts):
        checks.append(Check("json", True, f"parsed as JSON {seen_in}"))
    language = _language(texts)
    if language is not None:
        checks.append(Check("language", language, f"detected {seen_in}"))
    scores = _similarities(places)
    if scores:
        lowest, spread = min(scores), max(scores) - min(scores)
        # below the lowest seen by the spread seen, and never above _SIMILAR_CAP: the facts
        # are the facts' checks to check; similarity only says "the same kind of answer"
        floor = max(0.0, math.floor(min(lowest - max(spread, 0.1), _SIMILAR_CAP) * 20 + 1e-9) / 20)
        if floor > 0:
            low = "; weak: a low floor" if floor <= 0.2 else ""
            seen = f"lowest seen {lowest:.2f} (token_set_ratio){low}"
            checks.append(Check("similar", round(floor, 2), seen))
    return Facts(tuple(checks), tuple(notes))


def _runs(count: int) -> str:
    return "1 run" if count == 1 else f"{count} runs"


def _band_text(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}..{high}"


def _length(texts: Sequence[str]) -> Check:
    # (wider below: a terse wording says the facts without the words around them, and the
    # facts are their own check; an empty, refused or cut answer is still far below)
    check = _band("length", [len(text) for text in texts], "characters", floor=1, below=2)
    if min(len(text) for text in texts) == 0:
        # an empty answer was seen: the check must hold where it held
        check = Check(check.name, {"max": check.value["max"]}, check.seen)
    return check


def _band(
    name: str, sizes: Sequence[int], unit: str, *, floor: int, below: int = 1, above: int = 1
) -> Check:
    """A band around `sizes` whose margin is their spread: the shortest divided (`below`
    times) and the longest multiplied (`above` times) by the ratio of the longest to the
    shortest
    (`_LEAST_RATIO` at least): answers that varied two-fold may vary four-fold, not a
    hundred-fold."""
    low, high = min(sizes), max(sizes)
    ratio = max(high / low if low else _LEAST_RATIO, _LEAST_RATIO)
    least = max(floor, math.floor(low / ratio**below))
    most = max(math.ceil(high * ratio**above), least + 1)
    weak = "; weak: a wide band" if most >= _WIDE * max(least, 1) else ""
    return Check(name, {"min": least, "max": most}, f"seen {_band_text(low, high)} {unit}{weak}")


def _common_facts(by_run: Sequence[Sequence[str]]) -> tuple[list[Fact], list[Fact]]:
    """(the facts every text of every run states, those every text of all runs but one
    states), in the order first met, each in its most specific form."""
    found = [[(text, facts_in(text)) for text in run_texts] for run_texts in by_run]
    candidates: dict[Fact, None] = {}
    for run in found:
        for _, facts in run:
            candidates.update(dict.fromkeys(facts))
    held: list[Fact] = []
    nearly: list[Fact] = []
    for fact in candidates:
        runs = sum(all(stated_in(fact, text, facts) for text, facts in run) for run in found)
        if runs == len(found):
            held.append(fact)
        elif runs == len(found) - 1 and len(found) > 2:
            nearly.append(fact)
    return _most_specific(held), _most_specific(nearly)


def _most_specific(facts: list[Fact]) -> list[Fact]:
    """`facts`, each in the most precise form among them (`src/a.py:3` for `a.py:3`, a path's
    `path:line` for the path), each once, in the order first met; at most `_MAX_FACTS`."""
    kept: dict[Fact, None] = {}
    for fact in facts:
        alike = [other for other in facts if fact.matches(other)]
        kept[max(alike, key=lambda f: f.precision)] = None
    return list(kept)[:_MAX_FACTS]


def _language(texts: Sequence[str]) -> str | None:
    """The one language every text is detected in, or None (not installed, a text too short
    to tell, two languages, one a `language` check cannot name)."""
    if not language_available() or any(len(t.split()) < _LANGUAGE_WORDS for t in texts):
        return None
    found = {detect_language(text) for text in texts}
    language = found.pop() if len(found) == 1 else None
    return language if language is not None and LANGUAGE_CODE.match(language) else None


def _is_json(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict | list)
    except (ValueError, RecursionError):
        return False


def _similarities(places: Sequence[Texts]) -> list[float]:
    """The pairwise similarities of the texts at each place (recorded and live)."""
    scores: list[float] = []
    for place in places:
        texts = [*place.lives, *([place.recorded] if place.recorded is not None else [])]
        for first, second in combinations(dict.fromkeys(texts), 2):
            # (as the check scores: lower case, punctuation out)
            scores.append(
                fuzz.token_set_ratio(first, second, processor=utils.default_process) / 100
            )
    return scores
