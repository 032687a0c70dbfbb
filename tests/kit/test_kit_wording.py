"""`recorder kit --vary` (`recorder.kit.wording`): a new wording on each reply, the facts
kept; with a seed, the same sequence; the plain kit's texts untouched (pure)."""

from __future__ import annotations

import re

from recorder.kit import review
from recorder.kit.wording import Wording

DIFF = (
    "--- a/src/cart.py\n+++ b/src/cart.py\n@@ -1,2 +1,4 @@\n def total(items):\n"
    "+    print(items)  # TODO remove\n+    token = 'abc'   \n     return sum(items)\n"
)
RESULT = review.review_diff(review.parse_unified_diff(DIFF))
FACTS = re.compile(r"src/cart\.py:\d+|\[[\w-]+\]|\bTODO\b|\bPython\b")


def test_each_reply_is_worded_anew_and_keeps_every_fact() -> None:
    wording = Wording(1)
    plain = review.format_review(RESULT)
    texts = [wording.review(RESULT) for _ in range(12)]
    assert len(set(texts)) >= 8
    for text in texts:
        assert sorted(FACTS.findall(text)) == sorted(FACTS.findall(plain))
        assert f"{len(RESULT.comments)} " in text  # the number of findings


def test_a_seed_gives_the_same_sequence_and_no_seed_another() -> None:
    first, second = Wording(5), Wording(5)
    assert [first.review(RESULT) for _ in range(5)] == [second.review(RESULT) for _ in range(5)]
    other = Wording(6)
    assert [first.review(RESULT) for _ in range(5)] != [other.review(RESULT) for _ in range(5)]


def test_the_answers_keep_their_names_rules_and_marker() -> None:
    wording = Wording(2)
    for _ in range(6):
        languages = wording.languages()
        assert all(name in languages for name in review.LANGUAGES)
        rules = wording.rules()
        assert all(f"{rule}: {text}" in rules for rule, text in review.RULES.items())
        assert f'"{review.SLOW_MARKER}"' in wording.help()
        assert "src/app.py" in wording.ask_file_name()


def test_a_review_without_comments_says_so_in_other_words() -> None:
    clean = review.Review(("src/a.py",), ())
    texts = {Wording(seed).review(clean) for seed in range(8)}
    assert len(texts) > 1 and all("1 file" in text for text in texts)


def test_kit_vary_takes_a_whole_number_as_its_seed() -> None:
    from click.testing import CliRunner

    from recorder.cli import main

    result = CliRunner().invoke(main, ["kit", "--vary", "x", "--port", "0"])
    assert result.exit_code == 2
    assert "'x' is not a whole number (a seed)" in result.stderr
