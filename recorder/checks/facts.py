"""Facts: what held in every wording of a varying answer, as the narrowest checks (pure).

A model-backed agent words the same answer differently on every run; what must hold is the
meaning. `learn_facts` takes the texts seen at one place of one exchange (the recorded one
and one per live run, at each concrete path and frame the place names) and proposes the
checks of the rules file's `checks` key that held in EVERY run and in the recording:

- `contains_all`: the fact-shaped tokens present in every text: `path:line`, file names and
  paths, rule tags (`[todo]`), quoted strings and code spans, identifiers (snake_case,
  camelCase, `call(`), acronyms (`TODO`), numbers of two characters or more, and capitalised
  names met inside a sentence (`Python`; a sentence's first word is wording); a file path
  is left out beside its own `path:line`. A token present
  in every text only when case is ignored goes to a second `contains_all` with
  `ignore_case: true`; a rule tag there once in every text is checked to stay once
  (`not_matches`: a finding said twice fails). Words of the wording (verbs, synonyms,
  openers) are never taken: a word that stays the same in a few runs by chance would fail
  the next wording.
- `length`: a band around the lengths seen, with a margin (the spread seen, and at least a
  third of the shortest below, half the longest above), never below one character (an empty
  answer fails) unless an empty one was seen.
- the format, when every text had it: `lines` (a band, for answers of several lines), a
  bulleted list (`matches`), a code fence (`contains`), JSON (`json: true`).
- `language`: the language every text was detected in (`recorder.checks.language`, when py3langid
  is installed), for texts of eight words or more (a detector guesses on fewer).
- `similar`: a floor 0.15 below the lowest pairwise similarity seen at each place (rapidfuzz
  `token_set_ratio`, the check's default, as it scores), at most 0.7, rounded down to 0.05.

Each check carries `seen`: what it saw, written as the YAML comment beside it. `notes` say
where more runs would tell more: a token present in all but one run (left out: it may be
wording, or a fact the odd run lost), or fewer runs than `ENOUGH_RUNS`.
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

from recorder.checks.language import detect_language, language_available

__all__ = ["ENOUGH_RUNS", "Check", "Facts", "Texts", "is_prose", "learn_facts"]

ENOUGH_RUNS = 4
"""Live runs that tell facts from wording: a wording that recurs by chance in each of them is
unlikely (one of k wordings: (1/k)^(runs-1)), and `all but one run` still leaves three."""

_MAX_TOKENS = 24
_LANGUAGE_WORDS = 8
_SIMILAR_CAP = 0.7
_TOKEN = re.compile(
    r"""
      (?P<code>`[^`\n]{1,80}`)
    | (?P<quoted>"[^"\n]{1,80}"|(?<!\w)'[^'\n]{1,80}'(?!\w))
    | (?P<tag>\[[\w.-]{1,40}\])
    | (?P<path>(?:[\w.-]+/)+[\w.-]*\w(?::\d+)?|[\w-]+\.[A-Za-z]\w{0,7}:\d+)
    | (?P<file>\b[\w-]+\.(?:py|[cm]?jsx?|tsx?|go|java|rs|c|h|cpp|rb|php|md|json|ya?ml|toml
                          |txt|html|css|sh|sql)\b)
    | (?P<call>\b[A-Za-z_][\w.]*\w\((?:\))?|\b[a-z_]\w+\.[a-z_]\w+\b)
    | (?P<ident>\b[A-Za-z]*_\w+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z]{2,}[0-9]*\b)
    | (?P<number>(?<![\w.])\d+(?:\.\d+)?%?(?![\w.]\w))
    | (?P<name>\b[A-Z][a-z]+(?:[A-Z][a-z]*)*\b)
    """,
    re.VERBOSE,
)
_SENTENCE_START = re.compile(r"(?:[.!?:;]\s+|\n\s*(?:[-*•]|\d+[.)])?\s*|[(\"'—-]\s*|\A\s*)\Z")
_TAG = re.compile(r"\[[\w.-]{1,40}\]")
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
    those keep the value kinds of `recorder.noise`."""
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
    exact, folded, nearly = _common_tokens(by_run)
    if exact:
        checks.append(Check("contains_all", exact, seen_in))
    if folded:
        checks.append(Check("contains_all", folded, seen_in + ", case aside", ignore_case=True))
    once = [t for t in exact if _TAG.fullmatch(t) and all(text.count(t) == 1 for text in texts)]
    if once:
        # a finding said twice (a model that loops) fails: each tag is there once, always
        # ("-" needs no escape outside a class: the pattern stays readable)
        tags = "|".join(re.escape(t).replace("\\-", "-") for t in once)
        pattern = f"(?s)({tags}).*\\1"
        checks.append(Check("not_matches", pattern, f"each once {seen_in}"))
    if nearly:
        shown = ", ".join(json.dumps(t, ensure_ascii=False) for t in nearly[:3])
        more = f" and {len(nearly) - 3} more" if len(nearly) > 3 else ""
        notes.append(
            f"{shown}{more} in all runs but one: not checked (wording, or a fact that run "
            "lost); more --runs tell"
        )
    checks.append(_length(texts))
    lines = [len(text.splitlines()) for text in texts]  # (as the check counts)
    if max(lines) > 1:
        low, high = min(lines), max(lines)
        margin = max(1, high - low)
        checks.append(
            Check(
                "lines",
                {"min": max(1, low - margin), "max": high + max(2, margin)},
                f"seen {_band(low, high)} lines",
            )
        )
    if all(_BULLET.search(text) for text in texts):
        checks.append(Check("matches", _BULLET_PATTERN, f"a bulleted list {seen_in}"))
    if all(_FENCE in text for text in texts):
        checks.append(Check("contains", _FENCE, f"a code fence {seen_in}"))
    if all(_is_json(text) for text in texts):
        checks.append(Check("json", True, f"parsed as JSON {seen_in}"))
    language = _language(texts)
    if language is not None:
        checks.append(Check("language", language, f"detected {seen_in}"))
    lowest = _lowest_similarity(places)
    if lowest is not None:
        # below the lowest seen (a few runs see a few wordings), and never above _SIMILAR_CAP:
        # the facts are the tokens' to check; similarity only says "the same kind of answer"
        floor = max(0.0, math.floor(min(lowest - 0.15, _SIMILAR_CAP) * 20 + 1e-9) / 20)
        if floor > 0:
            checks.append(
                Check("similar", round(floor, 2), f"lowest seen {lowest:.2f} (token_set_ratio)")
            )
    return Facts(tuple(checks), tuple(notes))


def _runs(count: int) -> str:
    return "1 run" if count == 1 else f"{count} runs"


def _band(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}..{high}"


def _length(texts: Sequence[str]) -> Check:
    sizes = [len(text) for text in texts]
    low, high = min(sizes), max(sizes)
    spread = high - low
    # a few runs see a few wordings: room beyond them (more above, where an opener and a
    # closing remark add up; below, an empty, refused or cut answer must still fail)
    band = {"min": max(1, low - max(spread, low // 3)), "max": high + max(spread, high // 2, 20)}
    if low == 0:
        del band["min"]  # an empty answer was seen: the check must hold where it held
    return Check("length", band, f"seen {_band(low, high)} characters")


def _tokens(text: str) -> list[str]:
    """The fact-shaped tokens of `text`, in order (see the module docstring)."""
    found: list[str] = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        token = match.group()
        if kind == "number" and len(token) < 2:
            continue  # "1" is in most texts by chance (a path:line, a count)
        start = match.start()
        if kind == "name" and _SENTENCE_START.search(text[max(0, start - 8) : start]):
            continue  # a sentence's first word is wording, not a name
        found.append(token)
    return found


def _common_tokens(by_run: Sequence[Sequence[str]]) -> tuple[list[str], list[str], list[str]]:
    """(tokens in every text as written, tokens in every text case aside, tokens in every text
    of all runs but one): each run counts when the token is in every text of it."""
    candidates: dict[str, str] = {}  # casefolded -> first spelling seen
    for run_texts in by_run:
        for text in run_texts:
            for token in _tokens(text):
                candidates.setdefault(token.casefold(), token)
    exact: list[str] = []
    folded: list[str] = []
    nearly: list[str] = []
    folded_runs = [[text.casefold() for text in run_texts] for run_texts in by_run]
    for key, token in candidates.items():
        if all(all(token in text for text in run_texts) for run_texts in by_run):
            exact.append(token)
            continue
        held = sum(all(key in text for text in run_texts) for run_texts in folded_runs)
        if held == len(by_run):
            folded.append(token)
        elif held == len(by_run) - 1 and len(by_run) > 2:
            nearly.append(token)
    return _implied_out(exact), _implied_out(folded), _implied_out(nearly)


def _implied_out(tokens: list[str]) -> list[str]:
    """`tokens` without a path its own `path:line` names (`src/a.py` beside `src/a.py:3`), at
    most `_MAX_TOKENS` of them. (A name inside another, `Java` in `JavaScript`, stays: it
    says what is meant.)"""
    kept = [t for t in tokens if not any(other.startswith(t + ":") for other in tokens)]
    return kept[:_MAX_TOKENS]


def _language(texts: Sequence[str]) -> str | None:
    """The one language every text is detected in, or None (not installed, a text too short
    to tell, two languages)."""
    if not language_available() or any(len(t.split()) < _LANGUAGE_WORDS for t in texts):
        return None
    found = {detect_language(text) for text in texts}
    return found.pop() if len(found) == 1 else None


def _is_json(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict | list)
    except (ValueError, RecursionError):
        return False


def _lowest_similarity(places: Sequence[Texts]) -> float | None:
    """The lowest pairwise similarity of the texts at any one place (recorded and live)."""
    lowest: float | None = None
    for place in places:
        texts = [*place.lives, *([place.recorded] if place.recorded is not None else [])]
        for first, second in combinations(dict.fromkeys(texts), 2):
            # (as the check scores: lower case, punctuation out)
            score = fuzz.token_set_ratio(first, second, processor=utils.default_process) / 100
            lowest = score if lowest is None else min(lowest, score)
    return lowest
