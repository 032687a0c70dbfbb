"""`recorder learn` validates what it proposes out of sample (issue 33): each live run judged by
the rules learned without it. The pure parts here (what a held-out failure does to the final
proposal, the rate and its interval, the proposal's signature); the loop against live agents in
tests/e2e/test_reworded_trials.py and tests/learn/test_learn_agent.py."""

from __future__ import annotations

import pytest

from recorder.checks.facts import Check
from recorder.learn.run import HeldOut, HeldOutFailure, _adjust, _signature
from recorder.replay.verdict.diff import Mismatch
from recorder.rules.noise import Proposal, Proposals

PATH = "$.result.message.parts[*].text"
SCOPE = "02-ask.http#1"


def entry(*checks: Check) -> Proposal:
    return Proposal("checks", PATH, None, "varies", ("f exchange 1",), (), 1, SCOPE, checks)


def failed(run: int, *mismatches: Mismatch) -> HeldOutFailure:
    return HeldOutFailure(run, "f exchange 1", SCOPE, mismatches)


LIVE = "Languages: Go, Rust."  # 20 characters, 1 line: what the held-out run said


def test_a_band_that_failed_a_held_out_run_is_widened_by_what_it_needed() -> None:
    final = entry(
        Check("length", {"min": 30, "max": 400}, "seen 40..300 characters"),
        Check("lines", {"min": 2, "max": 12}, "seen 3..8 lines"),
        Check("contains_all", ["Go", "Rust"], "in all 5 runs"),
    )
    without_run_2 = entry(
        Check("length", {"min": 35, "max": 380}, "seen 44..300 characters"),
        Check("lines", {"min": 3, "max": 12}, "seen 3..8 lines"),
    )
    held = HeldOut(
        5,
        50,
        (
            failed(
                2,
                Mismatch(PATH.replace("[*].text", "[0].text"), "", LIVE, check="length"),
                Mismatch(PATH, "", LIVE, check="lines"),
            ),
        ),
    )
    empty = Proposals([entry()])
    adjusted, said = _adjust(Proposals([final]), held, [empty, Proposals([without_run_2])])
    (proposal,) = adjusted.rules
    checks = {c.name: c for c in proposal.checks}
    # 35 needed 15 more below it (20): 30 - 15; lines 3 needed 2 more (1): 2 - 2 is none
    assert checks["length"].value == {"min": 15, "max": 400}
    assert checks["lines"].value == {"max": 12}
    assert "widened: a held-out run needed 20" in checks["length"].seen
    assert checks["contains_all"] == final.checks[2]
    assert said == [
        f"{SCOPE} {PATH}: length widened (held-out run 2 needed 20)",
        f"{SCOPE} {PATH}: lines widened (held-out run 2 needed 1)",
    ]


def test_any_other_check_that_failed_a_held_out_run_is_left_as_learned_from_every_run() -> None:
    # learned without run 1: "Python" in every text; run 1 lacked it: learned from every run,
    # the final check has no "Python", and holds on run 1 as it is
    final = entry(Check("facts", ["Go"], "in all 5 runs"), Check("length", {"min": 10}, "s"))
    learned_without = entry(Check("facts", ["Go", "Python"], "in all 4 runs"))
    mismatch = Mismatch(PATH, "", LIVE, message='"Python" not found', check="facts")
    held = HeldOut(5, 50, (failed(1, mismatch),))
    adjusted, said = _adjust(Proposals([final]), held, [Proposals([learned_without])])
    assert adjusted.rules == [final] and said == []


def test_a_check_the_final_proposal_no_longer_has_is_left_alone() -> None:
    # learned without run 3, a bulleted list; run 3 was a one-liner: with run 3 learned
    # from, the final proposal has no such check, nothing to drop
    final = entry(Check("length", {"min": 10}, "seen"))
    without = entry(Check("matches", "^- ", "a bulleted list"))
    held = HeldOut(4, 8, (failed(1, Mismatch(PATH, "", LIVE, check="matches")),))
    adjusted, said = _adjust(Proposals([final]), held, [Proposals([without])])
    assert adjusted.rules == [final] and said == []


def test_the_rate_and_its_interval() -> None:
    held = HeldOut(10, 200, (failed(1, Mismatch(PATH, "", "")),) * 4)
    assert held.rate == pytest.approx(0.02)
    low, high = held.interval(0.95)
    assert 0.005 < low < 0.02 < high < 0.06
    assert HeldOut(10, 200).interval(0.95)[0] == 0.0 and HeldOut(10, 200).stable
    assert not HeldOut(10, 200, changed=("checks ...",)).stable


def test_the_signature_leaves_out_what_moves_with_every_run_seen() -> None:
    one = entry(Check("length", {"min": 10}, "a"), Check("contains_all", ["Go"], "b"))
    other = entry(Check("length", {"min": 12}, "c"), Check("contains_all", ["Go"], "d"))
    assert _signature(Proposals([one])) == _signature(Proposals([other]))
    token = entry(Check("length", {"min": 10}, "a"), Check("contains_all", ["Go", "If"], "b"))
    assert _signature(Proposals([one])) != _signature(Proposals([token]))
