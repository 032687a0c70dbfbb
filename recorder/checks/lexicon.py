"""The words facts are told apart by (pure data, and the look-ups on it).

- each language's common words, from stopwords-iso (`stopwordsiso`: 58 languages by their
  ISO 639-1 code, a list kept by its project, no download at run time), and the language a
  text uses most of them of (`common_words`);
- the closed English sets `recorder.checks.extract` reads: labels (severities, statuses,
  each with its one spelling), number words, month names, currencies, the extensions that
  make a word a file's name.
"""

from __future__ import annotations

import calendar
import re
from functools import cache

import stopwordsiso

__all__ = [
    "CURRENCY_SIGNS",
    "CURRENCY_WORDS",
    "FILE_EXTENSIONS",
    "LABELS",
    "MONTHS",
    "NUMBER_WORDS",
    "common_count",
    "common_words",
    "lower_words",
]


@cache
def _stop_words() -> tuple[dict[str, frozenset[str]], dict[str, tuple[str, ...]]]:
    """Each language's common words, and for each word the languages it is common in."""
    lists = {code: frozenset(stopwordsiso.stopwords(code)) for code in sorted(stopwordsiso.langs())}
    languages: dict[str, list[str]] = {}
    for code, words in lists.items():
        for word in words:
            languages.setdefault(word, []).append(code)
    return lists, {word: tuple(codes) for word, codes in languages.items()}


_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


# a word of the prose: between spaces or punctuation, not in a tag, a path or code, not in
# capitals (`[todo]`, `src/todo.py`, `TODO` tell nothing of the language around them)
_PROSE_WORD = re.compile(r"(?<![\w\[`(/.@_-])[^\W\d_]+(?:'[^\W\d_]+)?(?![\w\]`)/@_-]|\.\w)")


def common_words(text: str) -> frozenset[str]:
    """The common words (lower case) of the language whose common words `text`'s prose uses
    most, two at least (English on a tie, and for a text without two of any)."""
    lists, languages = _stop_words()
    hits: dict[str, int] = {"en": 0}
    for word in _PROSE_WORD.findall(text):
        if word.isupper() and len(word) > 1:
            continue
        for code in languages.get(word.casefold(), ()):
            hits[code] = hits.get(code, 0) + 1
    best = max(hits, key=lambda code: (hits[code], code == "en"))
    # (one common word of another language is no language: "rule todo" is English)
    return lists[best if hits[best] >= 2 else "en"]


def common_count(text: str, language: str) -> int:
    """How many of `text`'s words are common words of `language` (0 for a language
    stopwords-iso does not list)."""
    lists, _ = _stop_words()
    common = lists.get(language, frozenset())
    return sum(word.casefold() in common for word in _WORD.findall(text))


def _words(text: str) -> list[str]:
    return text.split()


# (file extensions that name a file, not a version or an abbreviation)
FILE_EXTENSIONS = frozenset(
    _words(
        "py pyi ipynb js mjs cjs jsx ts tsx go java kt kts scala rs c h cc cpp cxx hpp hh cs rb "
        "php pl pm swift m mm r lua sh bash zsh ps1 bat sql md rst txt adoc html htm css scss "
        "sass less vue svelte json jsonl yaml yml toml ini cfg conf env xml csv tsv proto "
        "graphql gql lock log dockerfile mk gradle tf hcl nix ex exs erl hs ml fs clj dart zig "
        "jl nim http pdf png jpg jpeg gif svg zip gz tar"
    )
)
MONTHS = {name.casefold(): n for n, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.casefold(): n for n, name in enumerate(calendar.month_abbr) if name})
CURRENCY_SIGNS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}
CURRENCY_WORDS = {
    "usd": "USD", "dollar": "USD", "dollars": "USD", "eur": "EUR", "euro": "EUR",
    "euros": "EUR", "gbp": "GBP", "pounds": "GBP", "jpy": "JPY", "yen": "JPY",
}  # fmt: skip
NUMBER_WORDS = {
    word: n
    for n, word in enumerate(
        _words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
        )
    )
}
NUMBER_WORDS.update(
    {w: 10 * n for n, w in enumerate(_words("thirty forty fifty sixty seventy eighty ninety"), 3)}
)
LABELS = {
    word: word
    for word in _words(
        "critical high medium low blocker major minor trivial info warning error passed "
        "failed fixed closed resolved pending completed canceled rejected approved "
        "succeeded skipped"
    )
}
LABELS.update(
    {
        "cancelled": "canceled",
        "pass": "passed",
        "fail": "failed",
        "warn": "warning",
        "moderate": "medium",
        "severe": "critical",
    }
)


def lower_words(text: str) -> frozenset[str]:
    """The words `text` writes in lower case somewhere (its wording, wherever else it is
    capitalised)."""
    return frozenset(w for w in _WORD.findall(text) if w.islower())
