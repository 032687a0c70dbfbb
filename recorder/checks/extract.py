"""Facts: the fact-shaped parts of a text, normalised, so that a fact reworded is the same fact.

A model words the same answer anew on every run; what must stay are its facts. A fact is
fact-shaped, never a word of the wording. `facts_of(segment)` finds them in one segment of a
text (`recorder.checks.segments`), each a `Fact(kind, key)` whose `key` is its normal form
(`written` is how a rules file writes it, and how a report names it):

    location    `src/cart.py:2`, `line 2 of src/cart.py`, `src/cart.py (line 2)`,
                `` `cart.py`, line 2 ``, `src/cart.py, line 2`, `src/cart.py#L2`, and a
                `line 2` in a segment that names one file      -> src/cart.py:2
    path        a file name with an extension, or a path with a slash   -> src/cart.py
    tag         a rule id: `[todo]`, `` `todo` ``, `(todo)`, `rule todo`  -> [todo]
    label       a word of a closed set (severities, statuses) in a segment that holds
                another fact, any case: `HIGH`, `High` -> high; `cancelled` -> canceled
    number      `3`, `three`, `1,000`, `2.50`, `15%` (a list's `1.` marker is none)
    amount      `$12.50`, `12.50 USD`, `€5` -> 12.50 USD / 5.00 EUR
    date        `2024-03-05`, `March 5, 2024`, `5 March 2024` -> 2024-03-05
    url, email  as written, scheme and host (an email whole) in lower case
    identifier  snake_case, camelCase, PascalCase of two humps or more, dotted.names,
                `call()` (-> call), versions `1.2.3`
    name        capitalised words met inside a sentence (`Python`, `Acme Corp`), and
                acronyms (`TODO`); a sentence's first word, a word before `:` (a field's
                label) and a word the text also writes in lower case are wording
    text        a quoted string or a code span that is no other fact  -> "…"

The common words of the text's language (stopwords-iso's list, through `stopwordsiso`) are
never facts: the language is the one whose common words the text uses most (English on a
tie), so the facts of a text are the same whether or not the `language` extra is installed.
Number words, the labels and the words that tie a line to its file are English.

Facts match (`Fact.matches`) by kind and key, but for paths: a file name matches a path that
ends with it (`cart.py` and `src/cart.py`, not `lib/cart.py` and `src/cart.py`), and a path
is there where a location of it is. Pure; `facts_of` takes well under a millisecond for a
paragraph.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from recorder.checks.lexicon import (
    CURRENCY_SIGNS,
    CURRENCY_WORDS,
    FILE_EXTENSIONS,
    LABELS,
    MONTHS,
    NUMBER_WORDS,
    common_words,
    lower_words,
)
from recorder.checks.segments import Segment, segments

__all__ = [
    "KINDS",
    "Fact",
    "FactError",
    "common_words",
    "describe",
    "facts_in",
    "facts_of",
    "lower_words",
    "one_word_items",
    "parse_fact",
    "stated_in",
    "written_in",
]

KINDS = (
    "location",
    "path",
    "tag",
    "label",
    "number",
    "amount",
    "date",
    "url",
    "email",
    "identifier",
    "name",
    "text",
)


class FactError(ValueError):
    """A text that is not one fact (a rules file's `facts` item)."""


@dataclass(frozen=True)
class Fact:
    """One fact: its kind, its normal form (`key`) and how it is written (`written`)."""

    kind: str
    key: str
    written: str = field(default="", compare=False)

    def __str__(self) -> str:
        return self.written or self.key

    @property
    def precision(self) -> tuple[bool, int]:
        """How precisely it is said: a location over its path, a longer path over a file's
        name (`src/cart.py:2` over `cart.py:2`)."""
        return self.kind == "location", len(self.key)

    def matches(self, other: Fact) -> bool:
        """Whether `other` states this fact (a path: `other` names it, or a location of it)."""
        if self.kind == "path" and other.kind in ("path", "location"):
            return _same_file(
                self.key, other.key.rpartition(":")[0] if other.kind == "location" else other.key
            )
        if self.kind != other.kind:
            return False
        if self.kind == "location":
            path, _, line = self.key.rpartition(":")
            other_path, _, other_line = other.key.rpartition(":")
            return line == other_line and _same_file(path, other_path)
        return self.key == other.key


def _same_file(one: str, other: str) -> bool:
    """A file name matches a path that ends with it; two paths must be the same."""
    if one == other:
        return True
    if "/" in one and "/" in other:
        return False
    shorter, longer = sorted((one, other), key=len)
    return longer.endswith("/" + shorter)


# --- the shapes --------------------------------------------------------------------------------


_PATH = (
    r"(?:[\w@~+-][\w.@~+-]*/)*[\w@~+-][\w.@~+-]*\.[A-Za-z][A-Za-z0-9]{0,9}"
    r"|(?:[\w.@~+-]+/)+[\w.@~+-]*\w"
)
_PATH_RE = re.compile(rf"(?<![\w/.:@-])(?:\./)?(?P<path>{_PATH})(?![\w/@-])")
_LOCATION_FORMS = [
    # src/cart.py:2 (:5 a column), src/cart.py#L2
    re.compile(rf"(?<![\w/.:@-])(?:\./)?(?P<path>{_PATH})(?::|#L)(?P<line>\d+)(?::\d+)?(?![\w])"),
    # src/cart.py, line 2 / src/cart.py (line 2) / src/cart.py at line 2 / src/cart.py line 2
    re.compile(
        rf"(?<![\w/.:@-])(?:\./)?(?P<path>{_PATH})[\s,:(—–-]*(?:(?:at|on|in)\s+)?"
        r"(?:line|ln\.?|l\.)\s*:?\s*(?P<line>\d+)\)?",
        re.I,
    ),
    # line 2 of src/cart.py / line 2 in the file src/cart.py
    re.compile(
        rf"(?<![\w-])(?:line|ln\.?)\s*:?\s*(?P<line>\d+)\s*[,:]?\s*(?:of|in)\s+(?:the\s+file\s+|file\s+)?"
        rf"(?:\./)?(?P<path>{_PATH})(?![\w/@-])",
        re.I,
    ),
]
_LINE_ALONE = re.compile(r"(?<![\w-])(?:line|ln\.?)\s*:?\s*(?P<line>\d+)\b", re.I)
_URL = re.compile(r"\bhttps?://[^\s<>()\[\]{}\"'`]+", re.I)
_EMAIL = re.compile(r"\b[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+\b")
_CODE = re.compile(r"`([^`\n]{1,120})`")
_QUOTED = re.compile(r"\"([^\"\n]{1,120})\"|“([^”\n]{1,120})”|(?<!\w)'([^'\n]{1,120})'(?!\w)")
_TAG_WORD = r"[A-Za-z][A-Za-z0-9]*(?:[-_.][A-Za-z0-9]+)*"
_TAG_FORMS = [
    re.compile(rf"\[(?P<tag>{_TAG_WORD})\]"),
    re.compile(rf"\((?P<tag>{_TAG_WORD})\)"),
    re.compile(rf"\brule\s+(?:id\s+)?[\"'`]?(?P<tag>{_TAG_WORD})\b[\"'`]?", re.I),
]
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_DATES = [
    re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b"),
    re.compile(
        rf"\b(?P<mn>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})\b", re.I
    ),
    re.compile(
        rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<mn>{_MONTH})\.?,?\s+(?P<y>\d{{4}})\b", re.I
    ),
]
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_AMOUNTS = [
    re.compile(rf"(?P<sign>[$€£¥])\s?(?P<n>{_NUMBER})(?!\w)"),
    re.compile(
        rf"(?<![\w.])(?P<n>{_NUMBER})\s?(?P<word>USD|EUR|GBP|JPY|dollars?|euros?|pounds|yen)\b",
        re.I,
    ),
]
_VERSION = re.compile(r"(?<![\w.])v?\d+(?:\.\d+){2,}(?![\w.]*\w)")
_NUMBER_RE = re.compile(rf"(?<![\w.,/:#-])-?(?P<n>{_NUMBER})(?P<pct>\s?%)?(?![\w]|\.\d|,\d)")
_NUMBER_WORD = re.compile(
    r"\b(?P<w>" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")(?:-(?P<u>one|two|"
    r"three|four|five|six|seven|eight|nine))?\s+(?P<next>[^\W\d_]+)",
    re.I,
)
_IDENTIFIERS = [
    re.compile(r"\b[A-Za-z_][\w.]*\w\(\)?"),  # call( / call()
    re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b"),  # snake_case, CONSTANT_CASE
    re.compile(r"\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\b"),  # camelCase
    re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b"),  # PascalCase, two humps or more
    re.compile(r"\b[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+\b"),  # dotted.names (parts of 2 or more)
]
_ACRONYM = re.compile(r"\b[A-Z]{2,}[0-9]*\b")
_NAME = re.compile(r"\b[A-Z][a-z]+(?:[-'][A-Za-z]+)?(?:\s+[A-Z][a-z]+(?:[-'][A-Za-z]+)?)*\b")
# what may stand before a sentence's first word: markup, a list's marker, an opening mark
_SENTENCE_START = re.compile(r"(?:[.!?;|>]\s*|\s[-–—]\s+|[\[\"'“*_#]\s*|\A\s*)$")
_FIELD = re.compile(r"^[*_`]*\s*:")  # `File:` `**File:**` `Severity :`
# a list item that is one capitalised word (`- Rust`, `- **Python**`)
_ONE_WORD = re.compile(r"[*_`\s]*[A-Z][a-z]+[*_`\s]*[.;,]?")
_ASCII_WORD = re.compile(r"[A-Za-z]+")
_LINE_WORDS = frozenset(("line", "lines", "ln", "l"))
_MARKUP = re.compile(r"\*\*|__|(?<!\w)\*(?=\w)|(?<=\w)\*(?!\w)")


# --- one segment -------------------------------------------------------------------------------


class _Scan:
    """The facts found so far in one segment, and which characters they took."""

    def __init__(self, text: str, common: frozenset[str]) -> None:
        self.text = text
        self.common = common
        self.taken = [False] * len(text)
        self.found: list[tuple[int, Fact]] = []
        # (the English words of the closed sets are looked up, not searched for: faster)
        self.words = [
            (m.start(), m.end(), m.group().casefold()) for m in _ASCII_WORD.finditer(text)
        ]
        self.folded = {word for _, _, word in self.words}

    def free(self, start: int, end: int) -> bool:
        return not any(self.taken[start:end])

    def take(self, start: int, end: int, fact: Fact | None) -> None:
        for i in range(start, end):
            self.taken[i] = True
        if fact is not None:
            self.found.append((start, fact))

    def each(self, pattern: re.Pattern[str]) -> Iterable[re.Match[str]]:
        for match in pattern.finditer(self.text):
            if match.end() > match.start() and self.free(match.start(), match.end()):
                yield match


def facts_of(
    segment: str,
    common: frozenset[str] | None = None,
    lower: frozenset[str] = frozenset(),
    *,
    listed: bool = False,
) -> list[Fact]:
    """The facts of one segment, in order, each once. `common`: the common words (else those of
    the segment's own language); `lower`: the words the whole text writes in lower case (a
    capitalised one of them is wording, not a name); `listed`: the segment is an item of a
    list of single words (`one_word_items`), so its one word starts no sentence."""
    common = common_words(segment) if common is None else common
    # (bold and emphasis marks out, the positions kept: `**File:**` reads as `  File:  `)
    plain = _MARKUP.sub(lambda m: " " * len(m.group()), segment)
    scan = _Scan(plain, common)
    _urls_and_emails(scan)
    _quoted(scan)
    _locations(scan)
    _dates_and_amounts(scan)
    _tags(scan)
    _paths(scan)
    _identifiers(scan)
    _numbers(scan)
    _labels(scan)
    _names(scan, lower, listed)
    scan.found.sort(key=lambda item: item[0])
    facts = list(dict.fromkeys(fact for _, fact in scan.found))
    if all(f.kind == "label" for f in facts):
        return []  # (a label is a fact only beside another: "High" alone is a word)
    return facts


def facts_in(text: str) -> list[Fact]:
    """Every fact of a whole text (each segment's, `recorder.checks.segments`), each once."""
    return list(_facts_in(text))


@functools.lru_cache(maxsize=4096)  # (learn reads the same texts again, run after run)
def _facts_in(text: str) -> tuple[Fact, ...]:
    common = common_words(text)
    lower = lower_words(text)
    cut = segments(text)
    listed = one_word_items(cut)
    found: dict[Fact, None] = {}
    for segment in cut:
        facts = facts_of(segment.text, common, lower, listed=segment.start in listed)
        found.update(dict.fromkeys(facts))
    return tuple(found)


def one_word_items(segments: Sequence[Segment]) -> frozenset[int]:
    """Where the list items that are one capitalised word each start, when a text has two or
    more of them (a list of names: `- Rust` `- Python`; a heading, one such line, is none)."""
    starts = [s.start for s in segments if s.kind == "item" and _ONE_WORD.fullmatch(s.text)]
    return frozenset(starts) if len(starts) >= 2 else frozenset()


def _urls_and_emails(scan: _Scan) -> None:
    if "://" not in scan.text and "@" not in scan.text:
        return
    for match in scan.each(_URL):
        url = match.group().rstrip(".,;:!?)")
        scheme, _, rest = url.partition("://")
        host, slash, path = rest.partition("/")
        key = f"{scheme.lower()}://{host.lower()}{slash}{path}".rstrip("/")
        scan.take(match.start(), match.start() + len(url), Fact("url", key, url))
    for match in scan.each(_EMAIL):
        scan.take(match.start(), match.end(), Fact("email", match.group().lower(), match.group()))


def _quoted(scan: _Scan) -> None:
    """Code spans and quoted strings: the fact they hold when they hold one whole (a path
    keeps its place: `` `cart.py`, line 2 `` is a location), a rule id (`` `todo` ``), else
    their text."""
    for pattern, code in ((_CODE, True), (_QUOTED, False)):
        for match in scan.each(pattern):
            group = next(
                g for g in range(1, (pattern.groups or 0) + 1) if match.group(g) is not None
            )
            inner = match.group(group).strip()
            start, end = match.start(group), match.end(group)
            if not inner:
                continue
            if _PATH_RE.fullmatch(inner) and _is_file(inner):
                # the marks out (spaces), the path left for the location forms
                text = scan.text
                marks = [(match.start(), start), (end, match.end())]
                for left, right in marks:
                    text = text[:left] + " " * (right - left) + text[right:]
                scan.text = text
                continue
            whole = _one_fact(inner, scan.common)
            if whole is not None and whole.kind not in ("name", "label", "number"):
                scan.take(match.start(), match.end(), whole)
            elif code and re.fullmatch(_TAG_WORD, inner) and len(inner) >= 2:
                scan.take(match.start(), match.end(), _tag(inner))  # (marked up: a rule id)
            elif len(inner) >= 2 and not _is_number(inner):
                key = " ".join(inner.split())
                scan.take(match.start(), match.end(), Fact("text", key, f'"{key}"'))


def _locations(scan: _Scan) -> None:
    if "." not in scan.text and "/" not in scan.text:
        return
    said_line = not _LINE_WORDS.isdisjoint(scan.folded)
    for pattern in _LOCATION_FORMS if said_line else _LOCATION_FORMS[:1]:
        for match in scan.each(pattern):
            path = match.group("path")
            if _is_file(path):
                scan.take(match.start(), match.end(), _location(path, match.group("line")))
    # a `line N` in a segment that names one file: a line of that file
    files = {
        m.group("path")
        for m in _PATH_RE.finditer(scan.text)
        if _is_file(m.group("path")) and scan.free(m.start(), m.end())
    }
    if len(files) == 1 and said_line:
        (path,) = files
        lines = list(scan.each(_LINE_ALONE))
        for match in lines:
            scan.take(match.start(), match.end(), _location(path, match.group("line")))
        if lines:
            for match in scan.each(_PATH_RE):
                scan.take(match.start(), match.end(), None)  # (said by its locations)


def _location(path: str, line: str) -> Fact:
    key = f"{_path_key(path)}:{int(line)}"
    return Fact("location", key, key)


def _path_key(path: str) -> str:
    return path.replace("\\", "/").removeprefix("./")


def _is_file(path: str) -> bool:
    """A file name with a known extension, or a path of three parts or more (`and/or` is
    wording)."""
    stem, dot, extension = path.rpartition("/")[2].rpartition(".")
    if dot and stem and extension.lower() in FILE_EXTENSIONS:
        return True
    return path.strip("/").count("/") >= 2


def _paths(scan: _Scan) -> None:
    for match in scan.each(_PATH_RE):
        path = match.group("path")
        if _is_file(path):
            key = _path_key(path)
            scan.take(match.start(), match.end(), Fact("path", key, key))


def _dates_and_amounts(scan: _Scan) -> None:
    months = not scan.folded.isdisjoint(MONTHS)
    for pattern in _DATES if months else _DATES[:1]:
        for match in scan.each(pattern):
            month = match.groupdict().get("m") or MONTHS[match.group("mn").casefold()]
            year, day = int(match.group("y")), int(match.group("d"))
            if 1 <= int(month) <= 12 and 1 <= day <= 31:
                key = f"{year:04d}-{int(month):02d}-{day:02d}"
                scan.take(match.start(), match.end(), Fact("date", key, key))
    if not any(sign in scan.text for sign in CURRENCY_SIGNS) and scan.folded.isdisjoint(
        CURRENCY_WORDS
    ):
        return
    for pattern in _AMOUNTS:
        for match in scan.each(pattern):
            sign = match.groupdict().get("sign")
            currency = CURRENCY_SIGNS[sign] if sign else CURRENCY_WORDS[match.group("word").lower()]
            value = float(match.group("n").replace(",", ""))
            key = f"{value:.2f} {currency}"
            scan.take(match.start(), match.end(), Fact("amount", key, key))


def _tag(word: str) -> Fact:
    key = word.casefold()
    return Fact("tag", key, f"[{key}]")


def _tags(scan: _Scan) -> None:
    for pattern in _TAG_FORMS:
        for match in scan.each(pattern):
            word = match.group("tag")
            folded = word.casefold()
            if folded in LABELS:
                label = LABELS[folded]
                scan.take(match.start(), match.end(), Fact("label", label, label))
            elif len(word) >= 2 and not _is_file(word) and not word.isdigit():
                if pattern is not _TAG_FORMS[0] and folded in scan.common:
                    continue  # "(see)", "rule is": wording ("[todo]" is marked up: a rule id)
                if pattern is _TAG_FORMS[1] and not _tag_shaped(word):
                    continue  # "(Python)": a parenthesis, not a rule id
                scan.take(match.start(), match.end(), _tag(word))


def _tag_shaped(word: str) -> bool:
    """A rule id in parentheses is in lower case (`(todo)`, `(debug-print)`; `(TODO)` is
    the word)."""
    return word.islower()


def _identifiers(scan: _Scan) -> None:
    versions = scan.text.count(".") >= 2 and any(c.isdigit() for c in scan.text)
    for match in scan.each(_VERSION) if versions else ():
        scan.take(match.start(), match.end(), Fact("identifier", match.group(), match.group()))
    for pattern in _IDENTIFIERS:
        for match in scan.each(pattern):
            word = match.group()
            key = word.removesuffix("()").removesuffix("(")
            if "." in key and (_is_file(key) or any(len(p) < 2 for p in key.split("."))):
                continue
            if key.casefold() in scan.common:
                continue
            call = key + "()" if word.endswith("(") or word.endswith("()") else key
            scan.take(match.start(), match.end(), Fact("identifier", key, call))


def _numbers(scan: _Scan) -> None:
    for match in scan.each(_NUMBER_RE):
        value = _number_key(match.group("n")) + ("%" if match.group("pct") else "")
        scan.take(match.start(), match.end(), Fact("number", value, value))
    if scan.folded.isdisjoint(NUMBER_WORDS):
        return
    for match in scan.each(_NUMBER_WORD):
        following = match.group("next").casefold()
        if (following in scan.common and len(following) <= 4) or following in NUMBER_WORDS:
            continue  # "one of", "one more": a pronoun, not a count ("three problems" is)
        count = NUMBER_WORDS[match.group("w").casefold()]
        if match.group("u"):
            count += NUMBER_WORDS[match.group("u").casefold()]
        scan.take(match.start(), match.start("next"), Fact("number", str(count), str(count)))


def _number_key(text: str) -> str:
    value = float(text.replace(",", ""))
    return str(int(value)) if value.is_integer() else repr(value)


def _is_number(text: str) -> bool:
    return bool(re.fullmatch(_NUMBER, text.strip()))


def _labels(scan: _Scan) -> None:
    for start, end, word in scan.words:
        label = LABELS.get(word)
        if label is not None and scan.free(start, end) and _whole_word(scan.text, start, end):
            scan.take(start, end, Fact("label", label, label))


def _whole_word(text: str, start: int, end: int) -> bool:
    """Not part of a longer word (`high` in `highlight` is no label: the ASCII scan cuts
    at `_` and digits too)."""
    return (start == 0 or not (text[start - 1].isalnum() or text[start - 1] in "_-")) and (
        end == len(text) or not (text[end].isalnum() or text[end] in "_-")
    )


def _names(scan: _Scan, lower: frozenset[str], listed: bool = False) -> None:
    text = scan.text
    for match in scan.each(_ACRONYM):
        word = match.group()
        if word.casefold() not in scan.common and not _FIELD.match(text[match.end() :]):
            scan.take(match.start(), match.end(), Fact("name", word.casefold(), word))
    for match in scan.each(_NAME):
        first = match.start()
        if not listed and (first == 0 or _SENTENCE_START.search(text[max(0, first - 4) : first])):
            continue  # a sentence's first words are wording ("The Rule", "Review Python")
        words = match.group().split()
        if len(words) == 1:
            after = text[match.end() :]
            if _wording(words[0], scan.common, lower) or _FIELD.match(after):
                continue  # a common word, or a field's label (`File:`)
            if _labels_a_fact(scan, match.end()):
                continue  # `File src/cart.py`, `Severity high`: a field's label
        elif all(_wording(word, scan.common, lower) for word in words):
            continue
        name = " ".join(words)
        scan.take(match.start(), match.end(), Fact("name", name.casefold(), name))


def _labels_a_fact(scan: _Scan, end: int) -> bool:
    """Whether a fact found already starts right after `end` (spaces and a mark between)."""
    rest = scan.text[end:]
    gap = len(rest) - len(rest.lstrip(" \t:=-"))
    return end + gap < len(scan.taken) and scan.taken[end + gap] and gap > 0


def _wording(word: str, common: frozenset[str], lower: frozenset[str]) -> bool:
    folded = word.casefold()
    return folded in common or folded in lower or folded in LABELS


# --- one written fact ----------------------------------------------------------------------------


def _one_fact(text: str, common: frozenset[str]) -> Fact | None:
    """The one fact `text` is whole, or None."""
    scan = _Scan(text, common)
    _urls_and_emails(scan)
    _locations(scan)
    _dates_and_amounts(scan)
    _tags(scan)
    _paths(scan)
    _identifiers(scan)
    _numbers(scan)
    found = [fact for _, fact in scan.found]
    if len(found) == 1 and all(scan.taken[i] or text[i].isspace() for i in range(len(text))):
        return found[0]
    return None


def parse_fact(text: str) -> Fact:
    """A fact as a rules file writes it (`src/cart.py:2`, `[todo]`, `3`, `high`, `Python`,
    `"quoted text"`), normalised as `facts_of` normalises it. Raises FactError."""
    stripped = text.strip()
    if not stripped:
        raise FactError("an empty fact")
    if len(stripped) >= 2 and stripped[0] == stripped[-1] == '"':
        key = " ".join(stripped[1:-1].split())
        if key:
            return Fact("text", key, f'"{key}"')
    folded = stripped.casefold()
    if folded in LABELS:
        label = LABELS[folded]
        return Fact("label", label, label)
    found = _one_fact(stripped, frozenset())
    if found is not None:
        return found
    if re.fullmatch(r"[^\W\d_][\w'-]*(?:\s+[^\W\d_][\w'-]*)*", stripped) and stripped[0].isupper():
        return Fact("name", " ".join(stripped.split()).casefold(), " ".join(stripped.split()))
    raise FactError(
        f"{text!r} is not one fact (a path, path:line, [rule], number, amount, date, URL,"
        ' email, identifier, label, Name or "quoted text")'
    )


def written_in(fact: Fact, text: str) -> bool:
    """Whether a name or a label is written in `text` as a word of its own, in any case and
    anywhere (a sentence's first word, a label alone too): what `facts_of` leaves to the
    wording is still there for a check that looks for it."""
    if fact.kind == "label":
        words = tuple(word for word, key in LABELS.items() if key == fact.key)
    elif fact.kind == "name":
        words = (str(fact),)
    else:
        return False
    pattern = r"(?<![\w-])(?:" + "|".join(re.escape(w) for w in words) + r")(?![\w-])"
    return re.search(pattern, text, re.I) is not None


def stated_in(fact: Fact, text: str, found: Sequence[Fact]) -> bool:
    """Whether `text`, whose facts are `found`, states `fact`."""
    return any(fact.matches(other) for other in found) or written_in(fact, text)


def describe(facts: Sequence[Fact]) -> str:
    """Facts as a report writes them: `src/cart.py:2 [todo]`."""
    return " ".join(str(fact) for fact in facts)
