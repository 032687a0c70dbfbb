"""Learning what a varying answer must keep (`recorder.checks.facts`, and `recorder.rules.noise`
proposing `checks` with it), pure: facts against wording, the scope of an entry, its comments, the
notes that ask for more runs."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from recorder.checks.facts import Check, Texts, is_prose, learn_facts
from recorder.checks.language import language_available
from recorder.format.model import Response
from recorder.learn.rulesfile import merge, render
from recorder.rules.noise import Proposal, Replies, propose
from recorder.rules.ruleset import DEFAULT_RULES, rules_from_text

RECORDED = "Reviewed 1 file: 2 comments.\nsrc/app.py:2: [todo] TODO left in added code.\n" + (
    "src/app.py:2: [debug-print] debugging statement in Python code: use logging."
)
WORDINGS = (
    "I went through 1 file and have 2 remarks.\n"
    "- [debug-print] at src/app.py:2: a Python debugging statement; prefer logging.\n"
    "- [todo] at src/app.py:2: a TODO is still in the new code.",
    "Two findings in src/app.py.\n"
    "* src/app.py:2 [todo]: the added code keeps a TODO.\n"
    "* src/app.py:2 [debug-print]: this debugging call in Python code should go.\nHope it helps!",
    "Here is my review.\nsrc/app.py:2 — [todo] TODO left in the added lines.\n"
    "src/app.py:2 — [debug-print] drop this Python debugging statement.",
    RECORDED,
)


def checks_of(texts: list[Texts]) -> dict[str, Check]:
    return {
        check.name + ("/i" if check.ignore_case else ""): check
        for check in learn_facts(texts).checks
    }


def test_the_facts_every_wording_kept_are_checked_and_the_wording_is_not() -> None:
    found = checks_of([Texts(RECORDED, WORDINGS)])
    # (the recording's order; its path beside its own path:line is left out)
    assert found["facts"].value == ["src/app.py:2", "[todo]", "TODO", "[debug-print]", "Python"]
    assert found["facts"].seen == "in all 4 runs and the recording"
    # words of one wording only, and a sentence's first word, are never facts
    for word in ("Reviewed", "Here", "review", "findings", "logging", "Two", "2"):
        assert word not in found["facts"].value


def test_the_facts_that_sat_together_in_every_run_are_claims_each_said_once() -> None:
    found = checks_of([Texts(RECORDED, WORDINGS)])
    assert found["claims"].value == {
        "each": [["src/app.py:2", "[todo]", "TODO"], ["src/app.py:2", "[debug-print]", "Python"]],
        "count": 2,
        "once": True,
    }
    assert found["claims"].seen == (
        "2 claims, each in one statement, each once, 2 findings in all 4 runs and the recording"
    )
    twice = checks_of([Texts("[dup] at x.py:3\n[dup] at x.py:3", ("[dup] x.py:3\n[dup] x.py:3",))])
    assert twice["claims"].value == {"each": [["[dup]", "x.py:3"]], "count": 2}


def test_a_length_band_with_a_margin_around_what_was_seen() -> None:
    sizes = [len(t) for t in (RECORDED, *WORDINGS)]
    length = checks_of([Texts(RECORDED, WORDINGS)])["length"]
    assert length.value["min"] < min(sizes) and length.value["max"] > max(sizes)
    assert length.value["min"] >= 1
    assert length.seen == f"seen {min(sizes)}..{max(sizes)} characters"


@pytest.mark.parametrize(
    ("sizes", "band"),
    [
        # the margin is the spread seen (the longest over the shortest), 1.5 at least
        # (the floor divided twice: a terse wording says the facts without words around them)
        ((100, 100, 100), {"min": 44, "max": 150}),
        ((100, 120, 150), {"min": 44, "max": 225}),
        ((100, 200, 300), {"min": 11, "max": 900}),
        ((16, 18, 20), {"min": 7, "max": 30}),  # "Review canceled." and its kin: 16 passes
    ],
)
def test_the_margin_of_a_band_is_the_spread_seen(sizes: tuple[int, ...], band: Any) -> None:
    texts = tuple("x" * (n - 2) + " y" for n in sizes)
    assert checks_of([Texts(None, texts)])["length"].value == band


def test_a_wide_band_and_a_single_short_fact_are_marked_weak() -> None:
    found = checks_of([Texts(None, ("see x.py now", "about x.py " + "words " * 40))])
    assert found["length"].seen.endswith("characters; weak: a wide band")
    assert found["facts"].value == ["x.py"]
    assert found["facts"].seen == "in all 2 runs; weak: a single short fact" or len("x.py") > 3
    short = checks_of([Texts(None, ("it is 42 now", "42, said twice"))])
    assert short["facts"].seen == "in all 2 runs; weak: a single short fact"


def test_an_empty_answer_always_fails_the_length() -> None:
    length = checks_of([Texts("ok then", ("fine by me", "looks good"))])["length"]
    assert length.value["min"] >= 1


def test_the_similarity_floor_is_below_the_lowest_pair_seen() -> None:
    similar = checks_of([Texts(RECORDED, WORDINGS)])["similar"]
    lowest = float(similar.seen.split()[2])
    assert 0 < similar.value <= min(lowest - 0.15, 0.7) + 1e-9
    assert similar.seen.endswith("(token_set_ratio)")


def test_format_checks_hold_only_when_every_run_had_the_format() -> None:
    bullets = ("- a [x] b\n- c d", "* e [x] f\n* g h", "1. i [x]\n2. j k")
    found = checks_of([Texts(None, bullets)])
    assert found["matches"].seen == "a bulleted list in all 3 runs"
    assert found["lines"].value == {"max": 5}
    assert "lines" not in checks_of([Texts(None, (*bullets, "a terse [x] answer"))])
    assert "matches" not in checks_of([Texts(None, (*bullets, "plain [x] text here"))])
    fenced = ("see ```x = 1``` here", "code: ```x = 1```")
    assert checks_of([Texts(None, fenced)])["contains"].value == "```"
    documents = ('{"findings": [1, 2]}', '{ "findings": [1,2] }')
    assert checks_of([Texts(None, documents)])["json"].value is True
    assert "json" not in checks_of([Texts(None, (*documents, "not json at all"))])


def test_a_fact_reworded_is_one_fact() -> None:
    found = checks_of(
        [
            Texts(
                None,
                (
                    "The [TODO] rule fires in x.py:3, severity HIGH",
                    "line 3 of src/x.py: rule todo (high)",
                    "In `x.py`, line 3, a todo (`todo`) of High severity",
                    "src/x.py (line 3): (todo), high",
                ),
            )
        ]
    )
    assert found["facts"].value == ["[todo]", "src/x.py:3", "high"]
    assert found["facts"].as_rule() == {"facts": ["[todo]", "src/x.py:3", "high"]}
    assert found["claims"].value == {
        "each": [["[todo]", "src/x.py:3", "high"]],
        "count": 1,
        "once": True,
    }


def test_a_fact_in_all_runs_but_one_is_a_note_not_a_check() -> None:
    texts = ("x.py:3 and Rust today", "x.py:3 and Rust again", "x.py:3, no more", "x.py:3 Rust")
    facts = learn_facts([Texts(None, texts)])
    assert facts.checks[0].value == ["x.py:3"]
    assert len(facts.notes) == 1 and facts.notes[0].startswith('"Rust" in all runs but one')


@pytest.mark.skipif(not language_available(), reason="py3langid is not installed")
def test_the_language_every_run_was_in_is_checked_when_the_texts_are_long_enough() -> None:
    assert checks_of([Texts(RECORDED, WORDINGS)])["language"].value == "en"
    french = "J'ai relu 1 fichier et trouvé 2 remarques dans le code ajouté, merci beaucoup."
    assert "language" not in checks_of([Texts(RECORDED, (*WORDINGS, french))])
    assert "language" not in checks_of([Texts(None, ("short text here", "another short one"))])


@pytest.mark.skipif(not language_available(), reason="py3langid is not installed")
def test_a_language_the_check_cannot_name_is_not_proposed() -> None:
    # py3langid reads a code diff as Ligurian ("lij"): no ISO 639-1 code, so a `language`
    # check of it would be refused when the learned rules are read (learn stopped there)
    diffs = tuple(
        f"--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,3 @@\n import os  # {n}\n"
        "+print('debug')  # TODO remove\n x = 1\n"
        for n in range(3)
    )
    assert "language" not in checks_of([Texts(diffs[0], diffs)])


def test_prose_is_two_words_or_more() -> None:
    assert is_prose("Looks good to me")
    assert not is_prose("src/app.py") and not is_prose("") and not is_prose(3)


# --- noise.propose: checks scoped to the exchanges where the text varied --------------------


def artifact(text: str) -> Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"task": {"artifacts": [{"parts": [{"text": text}]}]}},
    }
    return Response(200, "OK", [("Content-Type", "application/json")], json.dumps(body).encode())


def proposals(*exchanges: tuple[str, int, str, tuple[str, ...]]) -> Any:
    return propose(
        [
            Replies(
                f"t/{file} exchange {n}", artifact(rec), tuple(map(artifact, lives)), f"t/{file}", n
            )
            for file, n, rec, lives in exchanges
        ],
        DEFAULT_RULES,
    )


def test_varying_prose_gets_a_checks_entry_per_exchange_never_any_text_everywhere() -> None:
    stable = "Reviewed 1 file: no comments. Looks good to me."
    found = proposals(
        ("03-review.http", 1, RECORDED, WORDINGS),
        ("03-review.http", 2, stable, (stable,) * 4),
        ("05-other.http", 3, RECORDED, tuple(reversed(WORDINGS))),
    )
    assert [(p.key, p.target, p.scope) for p in found.rules] == [
        ("checks", "$.result.task.artifacts[*].parts[*].text", "03-review.http#1"),
        ("checks", "$.result.task.artifacts[*].parts[*].text", "05-other.http#3"),
    ]
    assert not any(p.key == "generated_paths" for p in found.rules)
    assert not any("too few" in hint for hint in found.hints)  # four runs: enough


def test_too_few_runs_say_so() -> None:
    found = proposals(("03-review.http", 1, RECORDED, WORDINGS[:2]))
    assert found.hints[0].startswith("2 live runs: too few to tell the facts")
    assert "--runs 4" in found.hints[0]


def test_a_varying_token_keeps_its_value_kind() -> None:
    found = proposals(("03-review.http", 1, "abc", ("Fine.", "LGTM!")))
    assert [(p.key, p.kind) for p in found.rules] == [("generated_paths", "text")]


def test_the_rules_file_says_what_each_check_saw_and_reads_back() -> None:
    found = proposals(("03-review.http", 1, RECORDED, WORDINGS))
    text = render(found.rules, ["learned"])
    assert '    in: "03-review.http#1"' in text
    assert "# in all 4 runs and the recording" in text
    assert "characters" in text and "(token_set_ratio)" in text
    entry = yaml.safe_load(text)["checks"][0]
    assert entry["path"] == "$.result.task.artifacts[*].parts[*].text"
    names = [next(iter(item)) for item in entry["assert"]]
    language = ["language"] if language_available() else []
    assert names == ["facts", "claims", "length", "lines", *language, "similar"]
    assert entry["assert"][names.index("length")]["length"]["min"] >= 1


def test_checks_merge_into_a_rules_file_keeping_its_entries() -> None:
    found: list[Proposal] = proposals(("03-review.http", 1, RECORDED, WORDINGS)).rules
    block = "version: 1\nchecks:\n  - path: $.a\n    assert:\n      - contains: x  # mine\n"
    merged = merge(block, found, ["learned"])
    assert merged.startswith(block)
    assert [e["path"] for e in yaml.safe_load(merged)["checks"]] == [
        "$.a",
        "$.result.task.artifacts[*].parts[*].text",
    ]
    flow = "version: 1\nchecks: [{path: $.a, assert: [{json: true}]}]\n"
    assert len(yaml.safe_load(merge(flow, found, ["learned"]))["checks"]) == 2
    assert len(yaml.safe_load(merge("version: 1\n", found, ["learned"]))["checks"]) == 1


def test_a_place_the_rules_already_check_there_learns_nothing() -> None:
    path = "$.result.task.artifacts[*].parts[*].text"
    for scope, learned in (("03-review.http#1", 0), ("03-review.http#2", 1), ("*.http", 0)):
        entry = f'  - path: "{path}"\n    in: "{scope}"\n    assert: [{{length: {{min: 1}}}}]\n'
        rules = rules_from_text("checks:\n" + entry, "mine.yaml")
        found = propose(
            [
                Replies(
                    "t/03-review.http exchange 1",
                    artifact(RECORDED),
                    tuple(map(artifact, WORDINGS)),
                    "t/03-review.http",
                    1,
                )
            ],
            rules,
        )
        assert len(found.rules) == learned, scope


def test_an_answer_one_word_long_in_one_run_still_gets_checks() -> None:
    found = proposals(("03-review.http", 1, RECORDED, (*WORDINGS[:3], "LGTM")))
    assert [(p.key, p.scope) for p in found.rules] == [("checks", "03-review.http#1")]
    length = next(c for c in found.rules[0].checks if c.name == "length")
    assert length.value["min"] <= 4


def test_every_proposed_check_holds_on_what_it_was_learned_from() -> None:
    from recorder.checks.vocabulary import CheckContext, run_check

    cases = [("03-review.http", 1, RECORDED, WORDINGS), ("04-x.http", 2, "a b", ("", "c d e"))]
    for case in cases:
        rules = rules_from_text(render(proposals(case).rules, ["learned"]), "learned.yaml")
        (entry,) = rules.checks
        _, _, recorded, lives = case
        for check in entry.checks:
            for live in (recorded, *lives):
                outcome = run_check(check, recorded, live, CheckContext())
                assert outcome.passed, (check, live, outcome)


def test_the_proposal_is_a_function_of_the_texts_alone() -> None:
    # (learn may validate a proposal on the runs it was not learned from: any subset)
    whole = learn_facts([Texts(RECORDED, WORDINGS)])
    assert learn_facts([Texts(RECORDED, WORDINGS)]) == whole
    for left_out in range(len(WORDINGS)):
        subset = WORDINGS[:left_out] + WORDINGS[left_out + 1 :]
        fewer = learn_facts([Texts(RECORDED, subset)])
        assert fewer == learn_facts([Texts(RECORDED, subset)])
        # what held in more runs held in fewer: each fact of the whole is among the subset's
        facts = {c.name: c.value for c in fewer.checks}["facts"]
        assert set({c.name: c.value for c in whole.checks}["facts"]) <= set(facts)
