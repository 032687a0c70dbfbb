"""Facts and claims (recorder.checks.extract, segments, claims; issue 33), pure: a fact
reworded is the same fact, a word of the wording is never one, facts stated together are a
claim, and the `facts` and `claims` checks fail a changed meaning at the claim it changed."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder.checks.claims import Claims, check_claims, learn_claims, parse_claims, statements
from recorder.checks.extract import Fact, FactError, facts_in, parse_fact
from recorder.checks.lexicon import common_words
from recorder.checks.segments import segments
from recorder.checks.vocabulary import CHECKS, Check, CheckContext, CheckOptionError, run_check


def written(text: str) -> list[str]:
    return [str(fact) for fact in facts_in(text)]


# --- one fact, its forms -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "src/cart.py:2",
        "line 2 of src/cart.py",
        "`cart.py`, line 2",
        "src/cart.py (line 2)",
        "src/cart.py, line 2",
        "src/cart.py#L2",
        "in src/cart.py at line 2",
        "**File:** src/cart.py **Line:** 2",
        "| File | Line |\n|---|---|\n| src/cart.py | 2 |",
    ],
)
def test_a_place_in_any_of_its_forms_is_one_fact(text: str) -> None:
    (place,) = facts_in(text)
    assert place.kind == "location"
    assert place.matches(parse_fact("src/cart.py:2"))
    assert not place.matches(parse_fact("src/cart.py:3"))
    if "/" in str(place):
        assert not place.matches(parse_fact("lib/cart.py:2"))  # another folder's file


def test_a_file_name_matches_a_path_that_ends_with_it_and_no_other() -> None:
    name, path = parse_fact("cart.py"), parse_fact("src/cart.py")
    assert name.matches(path) and path.matches(name)
    assert not parse_fact("lib/cart.py").matches(path)
    assert not parse_fact("art.py").matches(path)  # (a whole part of the path)
    # a path is stated where a place in it is
    assert path.matches(parse_fact("src/cart.py:2"))
    assert not parse_fact("src/cart.py:2").matches(path)


@pytest.mark.parametrize(
    "text", ["[todo]", "`todo`", "(todo)", "rule todo", "Rule TODO", "| Rule |\n|---|\n| todo |"]
)
def test_a_rule_id_in_any_of_its_forms_is_one_fact(text: str) -> None:
    assert facts_in(text) == [Fact("tag", "todo")]


@pytest.mark.parametrize(
    ("text", "number"),
    [("3 findings", "3"), ("three findings", "3"), ("Three findings", "3"), ("1,000", "1000")],
)
def test_a_number_in_digits_or_words_is_one_fact(text: str, number: str) -> None:
    assert written(text) == [number]


def test_a_pronoun_is_no_number_and_a_list_marker_none() -> None:
    assert written("one of them, and one more") == []
    assert written("1. the first\n2. the second") == []


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("a HIGH severity finding in x.py", ["high", "x.py"]),
        ("severity High at x.py:3", ["high", "x.py:3"]),
        ("the review was cancelled in x.py", ["canceled", "x.py"]),
        ("High", []),  # a label alone is a word: a label is a fact beside another
        ("on March 5, 2024 and 2024-03-06", ["2024-03-05", "2024-03-06"]),
        ("for $12.50 or 3 EUR", ["12.50 USD", "3.00 EUR"]),
        ("see https://Example.com/a/ or Bob@X.org", ["https://Example.com/a/", "Bob@X.org"]),
        ("call getUser() or os.path.join on debug_print in v1.2.3", None),
        ('it says "not found" here', ['"not found"']),
        ("we met Acme Corp and used Python", ["Acme Corp", "Python"]),
        ("Languages: JavaScript, Go, Java and Rust.", ["JavaScript", "Java", "Rust"]),
    ],
)
def test_the_shapes_of_facts(text: str, facts: list[str] | None) -> None:
    if facts is None:
        assert written(text) == ["getUser()", "os.path.join", "debug_print", "v1.2.3"]
        assert {f.kind for f in facts_in(text)} == {"identifier"}
    else:
        assert written(text) == facts


@pytest.mark.parametrize(
    "text",
    [
        "If you want, I can look again. No problem at all. The rest is fine.",
        "Rule: todo-less. Severity: see below. Review of the change. File: none. Line: none.",
        "| File | Line | Rule | Severity |\n|---|---|---|---|",
        "**Review** done. **File** list below. **Severity** varies.",
        "Review canceled.",
        "Here is my review. Thanks for the diff! Hope this helps.",
        "I went through it and have remarks; please add tests and use logging.",
    ],
)
def test_the_words_of_the_wording_are_never_facts(text: str) -> None:
    found = written(text)
    for word in ("If", "No", "The", "Rule", "Severity", "Review", "File", "Line", "Here"):
        assert word not in found, found
    assert not [f for f in facts_in(text) if f.kind == "name"], found


def test_a_list_of_names_one_an_item_gives_names_and_a_heading_none() -> None:
    listed = "Languages I review:\n- Rust\n- **Python**\n- Go\n\n## Review\n\nDone."
    assert written(listed) == ["Rust", "Python"]  # ("go" is a common word)
    assert written("## Findings\n- Review\n\nsee x.py") == ["x.py"]


def test_a_word_the_text_also_writes_in_lower_case_is_wording() -> None:
    assert written("we ran Tests and more tests on x.py") == ["x.py"]
    assert written("we ran Tests on x.py") == ["Tests", "x.py"]


def test_the_common_words_are_those_of_the_texts_language() -> None:
    french = "J'ai relu le fichier src/cart.py avec Le chat et des amis."
    assert {"le", "des", "et"} <= common_words(french) and "the" not in common_words(french)
    assert {"the", "and"} <= common_words("I read the file and the tests.")
    # "Le", a common French word, is no name in French; in English it may be one
    assert written(french) == ["src/cart.py"]
    assert written("I read src/cart.py with Le here") == ["src/cart.py", "Le"]


@pytest.mark.parametrize(
    "item",
    ["src/cart.py:2", "src/cart.py", "[todo]", "3", "15%", "high", "Python", "Acme Corp",
     "TODO", "JavaScript", '"not found"', "2024-03-05", "12.50 USD", "debug_print"],
)  # fmt: skip
def test_a_fact_as_a_rules_file_writes_it_reads_back_the_same(item: str) -> None:
    fact = parse_fact(item)
    assert str(fact) == item
    assert parse_fact(str(fact)) == fact


@pytest.mark.parametrize("item", ["", "two words", "the", "x.py and y.py", "!!"])
def test_a_rules_file_item_that_is_not_one_fact_is_an_error(item: str) -> None:
    with pytest.raises(FactError):
        parse_fact(item)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_gives_facts_that_read_back_as_they_are_written(text: str) -> None:
    for fact in facts_in(text):
        assert parse_fact(str(fact)) == fact, fact


# --- segments ----------------------------------------------------------------------------------


def test_a_text_is_cut_into_items_rows_and_sentences() -> None:
    text = (
        "Here is my review. Two findings.\n"
        "- src/cart.py:2 [todo] a TODO.\n  It stays.\n"
        "1. src/cart.py:5 [debug-print], e.g. print().\n"
        "\n| Where | Rule |\n|---|---|\n| `cart.py`, line 7 | todo |\n"
        "## Done"
    )
    assert [(s.kind, s.text) for s in segments(text)] == [
        ("sentence", "Here is my review."),
        ("sentence", "Two findings."),
        ("item", "src/cart.py:2 [todo] a TODO. It stays."),
        ("item", "src/cart.py:5 [debug-print], e.g. print()."),
        ("row", "`cart.py`, line 7 | [todo]"),
        ("sentence", "Done"),
    ]
    assert text[segments(text)[2].start :].startswith("src/cart.py:2")


# --- claims --------------------------------------------------------------------------------------

REVIEW = (
    "Reviewed 1 file: 3 findings.\n"
    "- src/cart.py:2: [todo] a TODO is left (severity: low).\n"
    "- src/cart.py:5: [debug-print] a Python debugging call (severity: medium).\n"
    "- the diff: [missing-tests] src/cart.py changed alone (severity: medium)."
)
CLAIMS = parse_claims(
    {
        "each": [
            ["src/cart.py:2", "[todo]", "low"],
            ["src/cart.py:5", "[debug-print]", "medium"],
            ["[missing-tests]", "src/cart.py"],
        ],
        "count": 3,
        "once": True,
    }
)


def test_claims_hold_in_another_wording_and_style() -> None:
    terse = (
        "Three findings: `cart.py`, line 5 (debug-print) MEDIUM; line 2 of src/cart.py "
        "rule todo LOW; the diff [missing-tests] Medium (src/cart.py)."
    )
    table = (
        "| Where | Rule | Severity |\n|---|---|---|\n| src/cart.py (line 2) | `todo` | Low |\n"
        "| src/cart.py:5 | debug-print | Medium |\n| the diff | missing-tests | medium |"
    )
    assert check_claims(CLAIMS, REVIEW) == []
    assert check_claims(CLAIMS, terse) == []
    assert check_claims(parse_claims({"each": [["src/cart.py:2", "[todo]", "low"]]}), table) == []


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (
            lambda t: t.replace(":2:", ":9:").replace(":5:", ":2:").replace(":9:", ":5:"),
            'claim "src/cart.py:2 [todo] low" missing; found "src/cart.py:5 [todo] low"',
        ),
        (
            lambda t: t.replace("low", "high"),
            'claim "src/cart.py:2 [todo] low" missing; found "src/cart.py:2 [todo] high"',
        ),
        (
            lambda t: t + "\n- src/cart.py:7: [hardcoded-secret] a secret (severity: high).",
            '4 claims stated, expected 3; not expected: "src/cart.py:7 [hardcoded-secret] high"',
        ),
        (
            lambda t: t.replace(
                "- src/cart.py:5",
                "- src/cart.py:2: [todo] a TODO is left (severity: low).\n- src/cart.py:5",
            ),
            'claim "src/cart.py:2 [todo] low" repeated: stated 2 times',
        ),
        (
            lambda t: t.replace("a TODO is left", "this TODO is not a problem"),
            'claim "src/cart.py:2 [todo] low" stated in the negative: "src/cart.py:2: [todo] this'
            ' TODO is not a problem (severity:…"',
        ),
        (
            lambda t: "\n".join(t.splitlines()[:2]),
            'claim "src/cart.py:5 [debug-print] medium" missing; nothing like it',
        ),
    ],
    ids=["swapped", "flipped", "made-up", "repeated", "negated", "dropped"],
)
def test_a_changed_meaning_fails_naming_the_claim(edit: Any, reason: str) -> None:
    reasons = check_claims(CLAIMS, edit(REVIEW))
    assert reason in reasons, reasons


def test_claims_are_learned_where_their_facts_sat_together_in_every_text() -> None:
    wordings = [
        REVIEW,
        "Three findings: src/cart.py (line 5) `debug-print` MEDIUM; line 2 of src/cart.py "
        "(todo) LOW; the diff [missing-tests] medium (src/cart.py).",
        "I reviewed one file. At `cart.py`, line 2, a TODO is left ([todo], low severity). At "
        "src/cart.py:5, a Python print ([debug-print], medium severity). Overall, src/cart.py"
        " changed alone ([missing-tests], medium severity).",
    ]
    learned = learn_claims(wordings)
    assert learned.claims is not None
    assert [str(claim) for claim in learned.claims.each] == [
        "src/cart.py:2 [todo] TODO low",
        "src/cart.py:5 [debug-print] medium",  # (the terse wording does not name Python)
        "[missing-tests] src/cart.py medium",
    ]
    # stated in the negative in one text and not in another: no polarity to check, no claim
    again = learn_claims([wordings[0].replace("alone", "without tests"), *wordings[1:]])
    assert again.claims is not None
    assert "[missing-tests] src/cart.py medium" not in [str(c) for c in again.claims.each]
    assert (learned.claims.count, learned.claims.once) == (3, True)
    assert learned.seen == "3 claims, each in one statement, each once, 3 findings"
    for text in wordings:
        assert check_claims(learned.claims, text) == []


def test_a_claim_in_the_negative_in_every_text_must_stay_so_and_one_stated_too() -> None:
    texts = [
        "src/cart.py:2 [todo]: not a problem here. src/cart.py:5 [debug-print] must go.",
        "The TODO at src/cart.py:2 [todo] can be ignored. src/cart.py:5 [debug-print] must go.",
        "There is no [missing-tests] finding for src/cart.py:2, and src/cart.py:5 [debug-print]"
        " must go.",
    ]
    learned = learn_claims(texts[:2]).claims
    assert learned is not None
    assert [str(c) for c in learned.denied] == ["src/cart.py:2 [todo]"]
    assert [str(c) for c in learned.each] == ["src/cart.py:5 [debug-print]"]
    flipped = (
        "src/cart.py:2 [todo] blocks merging: remove that marker. src/cart.py:5 [debug-print]."
    )
    assert check_claims(learned, flipped) == [
        'claim "src/cart.py:2 [todo]" no longer stated in the negative: "src/cart.py:2 [todo]'
        ' blocks merging: remove that marker."'
    ]
    # (a statement of its facts and hardly a word more is not read for a negation)
    assert check_claims(learned, "src/cart.py:2 [todo] low. src/cart.py:5 [debug-print].") == []
    negated = "src/cart.py:2 [todo] is fine. src/cart.py:5 [debug-print] is not there any more."
    assert check_claims(learned, negated) == [
        'claim "src/cart.py:5 [debug-print]" stated in the negative: "src/cart.py:5'
        ' [debug-print] is not there any more."'
    ]


def test_an_answer_that_found_nothing_in_every_text_fails_a_made_up_finding() -> None:
    clean = ["No findings in 1 file: looks good to me.", "1 file reviewed: all clear."]
    learned = learn_claims(clean).claims
    assert learned == Claims(count=0)
    assert check_claims(learned, "1 file reviewed: src/cart.py:2 [todo] a TODO.") == [
        '1 claim stated, expected 0; not expected: "1 src/cart.py:2 [todo] TODO"'
    ]


def test_numbers_alone_are_no_claim_and_mixed_polarity_is_not_learned() -> None:
    # (a summary's counts: a wording cuts its sentence anywhere; the facts check has them)
    assert learn_claims(["Reviewed 1 file: 3 notes.", "1 file, 3 notes."]).claims is None
    mixed = ["x.py:2 [todo] is not a problem.", "x.py:2 [todo] is open."]
    assert learn_claims(mixed).claims is None


def test_statements_cut_a_terse_answer_at_its_semicolons_but_not_a_sentence() -> None:
    terse = "src/a.py:2 [todo] low; src/a.py:5 [debug-print] high; the diff [missing-tests]"
    assert len(statements(terse)) == 3
    sentence = "at src/a.py:2, a secret; load it from the environment [hardcoded-secret]"
    assert len(statements(sentence)) == 1


# --- the checks ----------------------------------------------------------------------------------


def run(name: str, value: Any, live: Any) -> Any:
    check = Check(name, CHECKS[name].parse(value))
    return run_check(check, "", live, CheckContext())


def test_the_facts_check_holds_for_any_wording_and_names_what_is_missing() -> None:
    facts = ["src/cart.py:2", "[todo]", "3", "high", "Python"]
    assert run("facts", facts, "Python: three findings; line 2 of `cart.py` (todo), HIGH.")
    outcome = run("facts", facts, "Python: 3 findings; src/cart.py:5 [todo], high.")
    assert outcome == (False, '"src/cart.py:2" not found; found "src/cart.py:5"')
    assert run("facts", facts, 3) == (False, "expected text, got a number")


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("facts", ["two words"], "'two words' is not one fact"),
        ("facts", [], "expected a string or a list of strings, got a list"),
        ("claims", {"each": [[]]}, "each[0]: expected a list of facts (strings), got []"),
        ("claims", {"each": [["x.py"]], "count": -1}, "count: expected a whole number"),
        ("claims", {"cont": 3}, "unknown option 'cont'"),
        ("claims", {}, "give each, denied or count"),
    ],
)
def test_bad_facts_and_claims_options_say_why(name: str, value: Any, problem: str) -> None:
    with pytest.raises(CheckOptionError, match=re.escape(problem)):
        CHECKS[name].parse(value)
