"""The facts of the rewording agent's answers (tests/rewording_agent.py), found whatever the
wording: every finding's place, rule id and severity and the count, in every style and form
(a list, markdown, prose, a table, a terse one-liner; `src/cart.py:2`, `line 2 of
src/cart.py`, `` `cart.py`, line 2 ``, `src/cart.py (line 2)`; `[todo]`, `` `todo` ``,
`(todo)`, `rule todo`; digits or words), each finding's place and rule in one statement, and
no fact that is none (a word of the wording). Pure: the agent's `reword`, no server."""

from __future__ import annotations

from collections import Counter

import pytest
from rewording_agent import REVIEW_DIFF, SEVERITIES, STREAM_DIFF, RewordingAgent

from recorder.checks.claims import statements
from recorder.checks.extract import Fact, facts_in, parse_fact
from recorder.kit import review

WORDINGS = 150  # per diff: every style, form and case many times over


class _NoKit:
    """Enough of a kit for `RewordingAgent.reword` (no server started)."""

    token = "t"
    base_url = "http://localhost:1"
    url = "http://127.0.0.1:1"


def _truth(diff: str) -> tuple[str, list[tuple[Fact | None, Fact, Fact]], set[tuple[str, str]]]:
    """The kit's review of `diff`, each finding's (place, rule, severity), and every fact
    the review may state (its files, words, languages, numbers besides)."""
    result = review.review_diff(review.parse_unified_diff(diff))
    findings = []
    known: set[tuple[str, str]] = set()
    for comment in result.comments:
        place = None if comment.where == "diff" else parse_fact(comment.where)
        rule = parse_fact(f"[{comment.rule}]")
        severity = parse_fact(SEVERITIES.get(comment.rule, "low"))
        findings.append((place, rule, severity))
        for fact in (place, rule, severity):
            if fact is not None:
                known.add((fact.kind, fact.key))
        for fact in facts_in(comment.message):
            known.add((fact.kind, fact.key))
    for file in result.files:
        known.add(("path", file))
    for number in (len(result.comments), len(result.files)):
        known.add(("number", str(number)))
    return review.format_review(result), findings, known


@pytest.mark.parametrize("diff", [REVIEW_DIFF, STREAM_DIFF], ids=["review", "stream"])
def test_every_fact_of_every_wording_is_found_and_no_word_is_a_fact(diff: str) -> None:
    kit, findings, known = _truth(diff)
    agent = RewordingAgent(_NoKit(), seed=33)  # type: ignore[arg-type]
    missed: Counter[str] = Counter()
    false: Counter[str] = Counter()
    apart = 0
    for _ in range(WORDINGS):
        text = agent.reword(kit)
        found = facts_in(text)
        said = statements(text)
        count = parse_fact(str(len(findings)))
        for fact in (count, *(f for finding in findings for f in finding if f is not None)):
            if not any(fact.matches(other) for other in found):
                missed[str(fact)] += 1
        for place, rule, _ in findings:
            if place is not None and not any(s.states(place) and s.states(rule) for s in said):
                apart += 1
        for fact in found:
            if (fact.kind, fact.key) in known or any(
                fact.kind in ("path", "location") and fact.matches(parse_fact(key))
                for kind, key in known
                if kind in ("path", "location")
            ):
                continue
            false[f"{fact.kind}:{fact}"] += 1
    assert not missed, missed  # (measured: 0 of 150 wordings missed a place, rule, severity)
    assert apart == 0  # a finding's place and rule in one statement, in every style
    assert not false, false
