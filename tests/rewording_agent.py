"""A rewording agent: the real kit behind a loopback proxy that answers as a language model
would, every answer worded anew (issue 33's test agent). Seeded: one `random.Random(seed)` per
instance, drawn once per reply in the order replies pass, so the same seed and the same
requests give the same wordings.

What it does to each answer of the kit (the texts of a message, a task's status message, an
artifact; never a task's `history`), the facts kept:

- the kit's text is read back into its meaning (a review's files and findings, the languages,
  the rules, the question for a file name, the help) and written again in one of five styles:
  a `list`, `markdown` (a heading, bold, a numbered list), `prose` (one sentence a finding,
  one paragraph), a `table` (a markdown table, one row a finding) or a `terse` one-liner
  (findings separated by "; "); opener, closing and a sentence of explanation a finding come
  and go, so the length varies three-fold and more;
- a finding's place in one of its common forms (`src/cart.py:2`, `line 2 of src/cart.py`,
  `` `cart.py`, line 2 ``, `src/cart.py (line 2)`), mostly one form an answer, sometimes
  mixed; its rule as `[todo]`, `` `todo` ``, `(todo)` or `rule todo`; counts as digits or
  words (`4`, `four`); a severity (each rule has one: `SEVERITIES`) in varying case (`low`,
  `Low`, `LOW`); the findings in another order;
- the answer of a single reply (a message, a task) comes as two text parts one time in three
  (cut at a line break, else a sentence's end: joined with a line break the parts give the
  text again); a streamed artifact (`artifactUpdate`) comes in 1-4 chunks, the first without
  `append`, the next with `append: true`, the last with `lastChunk: true`, cut at line breaks
  or sentence ends likewise.

`regression` (settable, a name of `REGRESSIONS`) breaks the answers it targets while the
rewording goes on: the meaning ones (an extra made-up finding, the finding count changed,
line numbers swapped between findings, the findings repeated as a looping model does, a
flipped severity, a negated finding, the wrong file ...) change what is said and keep the
tokens; the others change words, language or size (empty, a refusal, French, another answer,
a truncation, a dropped finding ...) or the structure (a failed task, a lost stream chunk).

`converse(url)` is an unscripted client of it (the a2a-sdk client, uuid ids, no recorder
header): the conversation whose answers `ANSWERS` names.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
import re
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
from a2a.helpers import get_message_text
from a2a.types import GetTaskRequest
from traffic import LIMIT, _bounded, _collect, _message, _send, _Session, _task_of

from recorder.kit import KitServer
from recorder.servers import ServerThread

__all__ = [
    "ANSWERS",
    "REGRESSIONS",
    "SEVERITIES",
    "Answer",
    "Regression",
    "RewordingAgent",
    "converse",
]

_HOP = {b"host", b"content-length", b"connection", b"transfer-encoding"}
_TLS = ssl.create_default_context()

SEVERITIES = {
    "todo": "low",
    "long-line": "low",
    "trailing-space": "low",
    "debug-print": "medium",
    "missing-tests": "medium",
    "hardcoded-secret": "high",
}
"""The severity the agent gives each rule's findings (a flipped one is a regression)."""

_FLIPPED = {"low": "high", "medium": "low", "high": "low"}
_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
_LANGUAGE_NAMES = ("Python", "JavaScript", "TypeScript", "Go", "Java", "Rust")
STYLES = ("list", "markdown", "prose", "table", "terse")


# --- the meaning of the kit's texts ---------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One review comment: where (path and line; no path: the whole diff), its rule, its
    severity and the facts of its message (the TODO word, the language, the sources ...)."""

    path: str | None
    line: int | None
    rule: str
    severity: str
    word: str = "TODO"
    language: str = ""
    sources: str = ""
    numbers: tuple[str, ...] = ()
    negated: bool = False


@dataclass(frozen=True)
class Review:
    files: int
    findings: tuple[Finding, ...]
    stated: int | None = None
    """The count the answer states (None: the number of findings)."""
    repeated: bool = False


_KIT_REVIEW = re.compile(r"Reviewed (\d+) files?: (\d+) comments?\.")
_KIT_CLEAN = re.compile(r"Reviewed (\d+) files?: no comments\. Looks good to me\.")
_KIT_FINDING = re.compile(r"(?P<where>\S+): \[(?P<rule>[\w-]+)\] (?P<message>.*)")
_KIT_LANGUAGES = "I can review "
_KIT_RULES = "I check the added lines of a unified diff for:"
_KIT_ASK = "This diff has no file name header"
_KIT_HELP = "I am code-reviewer."


def _read_review(text: str) -> Review | None:
    lines = text.split("\n")
    clean = _KIT_CLEAN.fullmatch(lines[0])
    if clean:
        return Review(int(clean.group(1)), ())
    head = _KIT_REVIEW.fullmatch(lines[0])
    if not head:
        return None
    findings = []
    for line in lines[1:]:
        found = _KIT_FINDING.fullmatch(line)
        if not found:
            return None
        where, rule, message = found.group("where", "rule", "message")
        path, line_number = None, None
        if where != "diff":
            path, _, number = where.rpartition(":")
            line_number = int(number)
        word = re.search(r"\b(TODO|FIXME|XXX)\b", message)
        language = re.search(r"in (\w+) code", message)
        findings.append(
            Finding(
                path,
                line_number,
                rule,
                SEVERITIES.get(rule, "low"),
                word=word.group(1) if word else "TODO",
                language=language.group(1) if language else "",
                sources=message.split(" changed", 1)[0] if rule == "missing-tests" else "",
                numbers=tuple(re.findall(r"\d+", message)),
            )
        )
    return Review(int(head.group(1)), tuple(findings))


# --- the wording ----------------------------------------------------------------------------

_MESSAGES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # rule -> (ways to say it, ways to say the opposite: a negated finding)
    "todo": (
        (
            "a {word} is left in the added code",
            "the new code still carries a {word}",
            "{word} comment left behind in the added lines",
            "there is an open {word} here",
        ),
        (
            "no {word} is left in the added code",
            "the new code carries no {word}",
            "there is not a {word} here any more",
        ),
    ),
    "debug-print": (
        (
            "a {language} debugging statement; use logging instead",
            "{language} debug output left in: remove it",
            "debugging call in {language} code, better to log",
            "this {language} print is debugging output",
        ),
        (
            "no {language} debugging statement is left",
            "this {language} code has no debugging output",
            "there is not a {language} debugging call here",
        ),
    ),
    "trailing-space": (
        (
            "the line ends with whitespace",
            "trailing whitespace at the end of the line",
            "a trailing space or tab is left here",
        ),
        (
            "the line does not end with whitespace",
            "no trailing whitespace at the end of the line",
        ),
    ),
    "long-line": (
        (
            "the line is {n0} characters long, over the {n1} limit",
            "{n0} characters on one line (limit {n1})",
        ),
        (
            "the line is not over the {n1} limit",
            "no line is longer than {n1} characters",
        ),
    ),
    "hardcoded-secret": (
        (
            "a secret is written in the source: read it from the environment",
            "hardcoded secret; load it from the environment",
        ),
        (
            "no secret is written in the source",
            "there is no hardcoded secret here",
        ),
    ),
    "missing-tests": (
        (
            "{sources} changed but no test file did",
            "no test changed alongside {sources}: please add tests",
            "{sources} changed without tests",
        ),
        (
            "{sources} changed and its tests are not missing",
            "no tests are missing for {sources}",
        ),
    ),
}
_WHY = {
    "todo": "Open TODOs tend to be forgotten once merged.",
    "debug-print": "Debug output ends up in production logs.",
    "trailing-space": "Editors and diffs show it as noise.",
    "long-line": "Long lines are hard to read in review.",
    "hardcoded-secret": "Secrets in the source leak with it.",
    "missing-tests": "Untested changes break silently later.",
}
_OPENERS = (
    "Here is my review.",
    "Thanks for the diff!",
    "I had a look at your change.",
    "Sure, here is what I found.",
    "Happy to help with this one.",
)
_CLOSINGS = (
    "Hope this helps!",
    "Happy to look again after the fixes.",
    "Let me know if anything is unclear.",
    "Ping me when it is updated.",
)
_NOUNS = ("finding", "issue", "comment", "note", "problem")
_DIFF_PLACES = ("the diff", "the diff as a whole", "the whole diff", "overall")


def _count(n: int, form: str, *, start: bool = False) -> str:
    text = str(n) if form == "digits" or n >= len(_WORDS) else _WORDS[n]
    return text[0].upper() + text[1:] if start else text


def _plural(n: int, noun: str) -> str:
    return noun if n == 1 else noun + "s"


class _Voice:
    """The choices of one answer: style, forms, case, length (drawn from the agent's random)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.style = rng.choice(STYLES)
        self.place_form = rng.randrange(4)
        self.mixed_places = rng.random() < 0.2
        self.rule_form = rng.randrange(4)
        self.count_form = rng.choice(("digits", "words"))
        self.case = rng.choice(("lower", "title", "upper"))
        self.verbose = rng.random() < 0.4
        self.opener = rng.choice(_OPENERS) if rng.random() < 0.5 else ""
        self.closing = rng.choice(_CLOSINGS) if rng.random() < 0.4 else ""
        self.noun = rng.choice(_NOUNS)

    def place(self, finding: Finding) -> str:
        if finding.path is None:
            return self.rng.choice(_DIFF_PLACES)
        path, line = finding.path, finding.line
        form = self.rng.randrange(4) if self.mixed_places else self.place_form
        if form == 0:
            return f"{path}:{line}"
        if form == 1:
            return f"line {line} of {path}"
        if form == 2:
            return f"`{path.rsplit('/', 1)[-1]}`, line {line}"
        return f"{path} (line {line})"

    def rule(self, rule: str) -> str:
        return (f"[{rule}]", f"`{rule}`", f"({rule})", f"rule {rule}")[self.rule_form]

    def severity(self, severity: str) -> str:
        if self.case == "title":
            return severity.title()
        return severity.upper() if self.case == "upper" else severity

    def message(self, finding: Finding) -> str:
        sayings, negations = _MESSAGES.get(finding.rule, (("{rule}",), ("no {rule}",)))
        numbers = (*finding.numbers, "", "")
        return self.rng.choice(negations if finding.negated else sayings).format(
            word=finding.word,
            language=finding.language or "Python",
            sources=finding.sources,
            rule=finding.rule,
            n0=numbers[0],
            n1=numbers[1],
        )

    def wrap(self, body: str) -> str:
        """`body` with the opener and closing of this answer (a terse one says none)."""
        if self.style == "terse":
            return body
        glue = "\n\n" if "\n" in body else " "
        parts = [p for p in (self.opener, body, self.closing) if p]
        return glue.join(parts)


def _review_text(voice: _Voice, review: Review) -> str:
    rng = voice.rng
    findings = list(review.findings)
    rng.shuffle(findings)
    if review.repeated:
        findings = findings + findings  # a looping model says it all again
    files = review.files
    files_text = f"{_count(files, voice.count_form)} {_plural(files, 'file')}"
    stated = len(review.findings) if review.stated is None else review.stated
    noun = _plural(stated, voice.noun)
    if not review.findings:
        clean = rng.choice(
            (
                f"No {voice.noun}s in {files_text}: looks good to me.",
                f"I went through {files_text} and found nothing to flag.",
                f"{files_text[0].upper() + files_text[1:]} reviewed: all clear.",
            )
        )
        return voice.wrap(clean)
    count = _count(stated, voice.count_form)
    style = voice.style
    if style == "terse":
        items = "; ".join(
            f"{voice.place(f)} {voice.rule(f.rule)} {voice.severity(f.severity)}"
            + (f" ({_short(f)})" if _short(f) else "")
            + (" (not an issue)" if f.negated else "")
            for f in findings
        )
        return f"{_count(stated, voice.count_form, start=True)} {noun}: {items}."
    why = voice.verbose
    if style == "prose":
        sentences = [
            rng.choice(
                (
                    f"I reviewed {files_text} and found {count} {noun}.",
                    f"Your change touches {files_text}, and I have {count} {noun}.",
                )
            )
        ]
        for n, f in enumerate(findings):
            lead = ("First", "Next", "Also", "Then", "Besides")[min(n, 4)]
            sentences.append(
                f"{lead}, at {voice.place(f)}, {voice.message(f)} ({voice.rule(f.rule)}, "
                f"{voice.severity(f.severity)} severity)."
                + (f" {_WHY.get(f.rule, '')}" if why else "")
            )
        return voice.wrap(" ".join(sentences))
    if style == "table":
        rows = [
            f"{count[0].upper() + count[1:]} {noun} in {files_text}:",
            "",
            "| Where | Rule | Severity | Note |",
            "|---|---|---|---|",
        ]
        rows += [
            f"| {voice.place(f)} | {voice.rule(f.rule)} | {voice.severity(f.severity)} | "
            f"{voice.message(f)}{'. ' + _WHY.get(f.rule, '') if why else ''} |"
            for f in findings
        ]
        return voice.wrap("\n".join(rows))
    if style == "markdown":
        lines = [
            rng.choice(("## Review", "### Code review", "## Findings")),
            "",
            f"**{count} {noun}** in {files_text}.",
            "",
        ]
        lines += [
            f"{n}. **{voice.place(f)}** {voice.rule(f.rule)}, {voice.severity(f.severity)}: "
            f"{voice.message(f)}.{' ' + _WHY.get(f.rule, '') if why else ''}"
            for n, f in enumerate(findings, start=1)
        ]
        return voice.wrap("\n".join(lines))
    bullet = rng.choice(("- ", "* ", "• "))
    lines = [
        rng.choice(
            (
                f"Reviewed {files_text}: {count} {noun}.",
                f"{count[0].upper() + count[1:]} {noun} in {files_text}:",
                f"I went through {files_text} and have {count} {noun}.",
            )
        )
    ]
    lines += [
        f"{bullet}{voice.place(f)}: {voice.rule(f.rule)} {voice.message(f)} "
        f"(severity: {voice.severity(f.severity)}).{' ' + _WHY.get(f.rule, '') if why else ''}"
        for f in findings
    ]
    return voice.wrap("\n".join(lines))


def _short(finding: Finding) -> str:
    """The fact a terse answer keeps of a finding's message (its word, language, sources)."""
    if finding.rule == "todo":
        return finding.word
    if finding.rule == "debug-print":
        return finding.language
    if finding.rule == "missing-tests":
        return finding.sources
    if finding.rule == "long-line" and finding.numbers:
        return f"{finding.numbers[0]} chars"
    return ""


def _languages_text(voice: _Voice, names: list[str]) -> str:
    rng = voice.rng
    names = list(names)
    rng.shuffle(names)
    style = voice.style
    if style in ("list", "markdown", "table"):
        bullet = "- " if style != "markdown" else rng.choice(("- ", "* "))
        head = rng.choice(("I can review these languages:", "Languages I review:"))
        items = [f"{bullet}{f'**{n}**' if style == 'markdown' else n}" for n in names]
        tail = "Send me a unified diff and I will comment on the added lines."
        return voice.wrap("\n".join([head, *items, "", tail]))
    listed = rng.choice(
        (
            f"{', '.join(names[:-1])} and {names[-1]}",
            ", ".join(names),
            f"{', '.join(names[:-1])}, and {names[-1]}",
        )
    )
    if style == "terse":
        return f"Languages: {listed}."
    return voice.wrap(
        rng.choice(
            (
                f"I can review {listed}. Send me a unified diff and I will comment on the "
                "added lines.",
                f"Supported: {listed}. Share a unified diff and I will look at what it adds.",
                f"I know {listed}; paste a unified diff to get comments on its added lines.",
            )
        )
    )


def _rules_text(voice: _Voice, rules: list[tuple[str, str]]) -> str:
    rng = voice.rng
    rules = list(rules)
    rng.shuffle(rules)
    if voice.style == "terse":
        return "Rules: " + "; ".join(
            f"{voice.rule(r)} ({voice.severity(SEVERITIES.get(r, 'low'))})" for r, _ in rules
        )
    if voice.style == "table":
        rows = ["| Rule | Severity | What |", "|---|---|---|"]
        rows += [
            f"| {voice.rule(r)} | {voice.severity(SEVERITIES.get(r, 'low'))} | {d} |"
            for r, d in rules
        ]
        return voice.wrap("\n".join(["I check added lines for:", "", *rows]))
    bullet = rng.choice(("- ", "* ", "1. "))
    head = rng.choice(
        (
            "I check the added lines of a unified diff for:",
            "These are the checks I run on the added lines of a diff:",
            "When you send a diff, I look at its added lines for:",
        )
    )
    items = [
        f"{bullet}{voice.rule(r)}: {d} ({voice.severity(SEVERITIES.get(r, 'low'))})"
        for r, d in rules
    ]
    return voice.wrap("\n".join([head, *items]))


def _ask_text(voice: _Voice) -> str:
    rng = voice.rng
    header = rng.choice(("'--- a/...' / '+++ b/...'", "`--- a/...` / `+++ b/...`"))
    example = rng.choice(("src/app.py", "`src/app.py`"))
    text = rng.choice(
        (
            f"This diff has no file name header ({header} lines). Which file is it for? "
            f"Reply with its path, e.g. {example}.",
            f"Which file is this diff for? It has no {header} header. Reply with its path, "
            f"for example {example}.",
            f"I cannot tell the file: the diff carries no {header} header. Please reply "
            f"with its path (e.g. {example}).",
        )
    )
    return text if voice.style == "terse" else voice.wrap(text)


def _help_text(voice: _Voice) -> str:
    return voice.wrap(
        voice.rng.choice(
            (
                "I review unified diffs sent as text. Ask me which languages I review or "
                "which rules I check.",
                "code-reviewer here: send a unified diff for a review, or ask about the "
                "languages I know or the rules I check.",
            )
        )
    )


# --- the regressions ------------------------------------------------------------------------

FRENCH = (
    "J'ai relu {files} fichier(s) : {count} remarques.\n{items}\nN'hésitez pas à revenir vers "
    "moi après les corrections."
)


@dataclass(frozen=True)
class Regression:
    """A regression injected on purpose: its `name`, the answers it breaks (`target`: a kind
    of `ANSWERS`), `kind` (meaning, words or structure) and what it does."""

    name: str
    target: str
    kind: str
    what: str


REGRESSIONS = {
    r.name: r
    for r in (
        # meaning: the tokens stay, what is said changes
        Regression("extra-finding", "review", "meaning", "a made-up finding added"),
        Regression("count-changed", "review", "meaning", "the finding count stated one more"),
        Regression("lines-swapped", "review", "meaning", "two findings' line numbers swapped"),
        Regression("repeated", "review", "meaning", "the findings said twice (a looping model)"),
        Regression("severity-flipped", "review", "meaning", "a finding's severity flipped"),
        Regression("negated", "review", "meaning", "a finding said in the negative"),
        Regression("wrong-file", "review", "meaning", "the findings put in another file"),
        Regression("wrong-rule", "review", "meaning", "a finding tagged with another rule"),
        Regression("lines-off", "review", "meaning", "every line number off by 7"),
        Regression("wrong-language-named", "review", "meaning", "Python named as Java"),
        Regression("clean-review", "review", "meaning", "no finding: looks good"),
        # words, language, size
        Regression("dropped-fact", "review", "words", "a finding left out (the count too)"),
        Regression("file-names-dropped", "review", "words", "places without their file"),
        Regression("empty", "review", "words", "an empty answer"),
        Regression("refusal", "review", "words", "a refusal"),
        Regression("french", "review", "words", "the review in French"),
        Regression("other-answer", "review", "words", "the answer to another question"),
        Regression("truncated", "review", "words", "the answer cut in half"),
        Regression("error-as-answer", "review", "words", "an error message as the answer"),
        Regression("as-an-ai", "review", "words", "'as an AI' instead of a review"),
        Regression("language-left-out", "languages", "words", "a language left out"),
        Regression("rule-left-out", "rules", "words", "a rule left out"),
        Regression("question-not-asked", "ask", "words", "no question for the file name"),
        # structure
        Regression("task-failed", "review", "structure", "the review task ends FAILED"),
        Regression("chunk-lost", "stream", "structure", "a streamed review loses a chunk"),
    )
}


def _broken_review(name: str, review: Review) -> Review:
    findings = list(review.findings)
    if not findings:
        return review
    first = findings[0]
    if name == "extra-finding":
        path = next((f.path for f in findings if f.path), "src/app.py")
        lines = {f.line for f in findings if f.line is not None}
        made_up = Finding(path, max(lines, default=1) + 9, "hardcoded-secret", "high")
        return replace(review, findings=(*findings, made_up))
    if name == "count-changed":
        return replace(review, stated=len(findings) + 1)
    if name == "lines-swapped":
        placed = [n for n, f in enumerate(findings) if f.line is not None]
        pairs = [(a, b) for a in placed for b in placed if findings[a].line != findings[b].line]
        if pairs:
            a, b = pairs[0]
            line_a, line_b = findings[a].line, findings[b].line
            findings[a] = replace(findings[a], line=line_b)
            findings[b] = replace(findings[b], line=line_a)
        return replace(review, findings=tuple(findings))
    if name == "repeated":
        return replace(review, repeated=True)
    if name == "severity-flipped":
        findings[0] = replace(first, severity=_FLIPPED[first.severity])
        return replace(review, findings=tuple(findings))
    if name == "negated":
        findings[0] = replace(first, negated=True)
        return replace(review, findings=tuple(findings))
    if name == "wrong-file":

        def moved(path: str) -> str:
            return path.replace("cart", "card").replace("stats", "state").replace("orders", "order")

        return replace(
            review,
            findings=tuple(
                replace(f, path=moved(f.path) if f.path else None, sources=moved(f.sources))
                for f in findings
            ),
        )
    if name == "wrong-rule":
        findings[0] = replace(first, rule="long-line" if first.rule != "long-line" else "todo")
        return replace(review, findings=tuple(findings))
    if name == "lines-off":
        return replace(
            review,
            findings=tuple(
                replace(f, line=f.line + 7) if f.line is not None else f for f in findings
            ),
        )
    if name == "wrong-language-named":
        return replace(
            review,
            findings=tuple(
                replace(f, language="Java") if f.language == "Python" else f for f in findings
            ),
        )
    if name == "clean-review":
        return replace(review, findings=())
    if name == "dropped-fact":
        return replace(review, findings=tuple(findings[1:]))
    return review


def _broken_text(name: str, text: str, review: Review, voice: _Voice) -> str:
    if name == "empty":
        return ""
    if name == "refusal":
        return "I'm sorry, but I can't help with that request."
    if name == "french":
        items = "\n".join(
            f"- {f.path}:{f.line} : [{f.rule}] " if f.path else f"- diff : [{f.rule}] "
            for f in review.findings
        )
        items = "\n".join(
            line + "une remarque à corriger avant la fusion." for line in items.split("\n")
        )
        return FRENCH.format(files=review.files, count=len(review.findings), items=items)
    if name == "other-answer":
        return _languages_text(voice, list(_LANGUAGE_NAMES))
    if name == "truncated":
        return text[: len(text) // 2]
    if name == "error-as-answer":
        return "Error: the model provider timed out (request 7f3a9c). Please try again later."
    if name == "as-an-ai":
        return "As an AI language model, I cannot run code, but the diff looks fine to me."
    if name == "file-names-dropped":
        for f in review.findings:
            if f.path:
                name_only = f.path.rsplit("/", 1)[-1]
                text = text.replace(f.path, "the file").replace(f"`{name_only}`", "the file")
        return text
    return text


# --- the proxy ------------------------------------------------------------------------------


class RewordingAgent:
    """The kit behind a rewording proxy on a free loopback port (see the module docstring):
    `.url`, `.base_url`, `.token`; `regression` settable (a name of `REGRESSIONS`, or None)."""

    def __init__(self, kit: KitServer, seed: int, regression: str | None = None) -> None:
        if regression is not None and regression not in REGRESSIONS:
            raise ValueError(f"no regression {regression!r}; known: {', '.join(REGRESSIONS)}")
        self.kit = kit
        self.token = kit.token
        self.seed = seed
        self.regression = regression
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._server: ServerThread | None = None  # (bound when entered: `reword` needs none)

    @property
    def url(self) -> str:
        assert self._server is not None, "the agent is not started (use it as a context manager)"
        return self._server.url

    @property
    def base_url(self) -> str:
        return self.url

    def __enter__(self) -> RewordingAgent:
        self._server = ServerThread(self._app, interface="asgi3").start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.stop()

    # --- the answers --------------------------------------------------------------------------

    def reword(self, text: str) -> str:
        """The kit's `text` worded anew (and broken, when the regression targets it)."""
        with self._lock:
            return self._reword(text)

    def _reword(self, text: str) -> str:
        voice = _Voice(self._random)
        broken = REGRESSIONS.get(self.regression or "")
        review = _read_review(text)
        if review is not None:
            targeted = broken is not None and broken.target == "review"
            if targeted and broken is not None:
                review = _broken_review(broken.name, review)
            worded = _review_text(voice, review)
            if targeted and broken is not None:
                worded = _broken_text(broken.name, worded, review, voice)
            return worded
        if text.startswith(_KIT_LANGUAGES):
            names = list(_LANGUAGE_NAMES)
            if broken is not None and broken.name == "language-left-out":
                names.remove("Rust")
            return _languages_text(voice, names)
        if text.startswith(_KIT_RULES):
            rules = [
                tuple(line[2:].split(": ", 1)) for line in text.split("\n")[1:] if ": " in line
            ]
            if broken is not None and broken.name == "rule-left-out":
                rules = [r for r in rules if r[0] != "debug-print"]
            return _rules_text(voice, [(r[0], r[1]) for r in rules])
        if text.startswith(_KIT_ASK):
            if broken is not None and broken.name == "question-not-asked":
                return "Reviewing your diff now."
            return _ask_text(voice)
        if text.startswith(_KIT_HELP):
            return _help_text(voice)
        return text

    def _pieces(self, text: str, most: int, least: int = 1) -> list[str]:
        """`text` cut into `least` to `most` pieces at line breaks (else sentence ends), the
        breaks dropped: joined with a line break they give the text again (fewer pieces when
        it has fewer lines). Two at most: one time in three; more: as many each count."""
        with self._lock:
            if most > 2:
                wanted = self._random.randint(least, most)
            else:
                wanted = self._random.choice((1, 1, 2)) if least < 2 else 2
        lines = text.split("\n")
        if len(lines) < 2:
            lines = re.split(r"(?<=[.;:])\n?\s(?=\S)", text)
        if wanted == 1 or len(lines) < 2:
            return [text]
        wanted = min(wanted, len(lines))
        size = len(lines) / wanted
        cuts = sorted({max(1, round(size * n)) for n in range(1, wanted)})
        pieces, start = [], 0
        for cut in [*cuts, len(lines)]:
            if cut > start:
                pieces.append("\n".join(lines[start:cut]))
                start = cut
        return pieces

    def _parts(self, parts: list[Any], *, stream: bool) -> list[Any]:
        """A message's or artifact's parts: its text parts reworded and cut in one or two."""
        texts = [p for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if not texts:
            return parts
        worded = self.reword("\n".join(p["text"] for p in texts))
        pieces = [worded] if stream else self._pieces(worded, 2)
        first = parts.index(texts[0])
        rest = [p for p in parts if p not in texts]
        made = [{**texts[0], "text": piece} for piece in pieces]
        return [*rest[:first], *made, *rest[first:]]

    def _edit(self, value: Any, *, stream: bool = False) -> None:
        """Every message and artifact of a reply reworded in place (a task's history left)."""
        if isinstance(value, dict):
            if isinstance(value.get("parts"), list):
                value["parts"] = self._parts(value["parts"], stream=stream)
            for name, item in value.items():
                if name not in ("history", "parts"):
                    self._edit(item, stream=stream)
            failed = self.regression == "task-failed"
            status = value.get("status")
            if (
                failed
                and isinstance(status, dict)
                and status.get("state") == "TASK_STATE_COMPLETED"
            ):
                status["state"] = "TASK_STATE_FAILED"
        elif isinstance(value, list):
            for item in value:
                self._edit(item, stream=stream)

    def _frames(self, value: Any) -> list[Any]:
        """One frame's value as the frames it becomes: an artifact in 1-4 chunks."""
        holder = value.get("result", value) if isinstance(value, dict) else None
        update = holder.get("artifactUpdate") if isinstance(holder, dict) else None
        if not isinstance(update, dict) or not isinstance(update.get("artifact"), dict):
            self._edit(value)
            return [value]
        artifact = update["artifact"]
        self._edit(artifact, stream=True)
        parts = artifact.get("parts", [])
        texts = [p for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if len(texts) != 1:
            return [value]
        lost = self.regression == "chunk-lost"
        pieces = self._pieces(texts[0]["text"], 4, 2 if lost else 1)
        if lost and len(pieces) > 1:
            pieces = [*pieces[:-2], pieces[-1]]  # the one before the last lost
        frames = []
        for n, piece in enumerate(pieces):
            frame = copy.deepcopy(value)
            chunk = (frame.get("result", frame))["artifactUpdate"]
            chunk["artifact"]["parts"] = [{**texts[0], "text": piece}]
            if n > 0:
                chunk["append"] = True
            if n == len(pieces) - 1 and len(pieces) > 1:
                chunk["lastChunk"] = True
            frames.append(frame)
        return frames

    def _json(self, data: bytes) -> bytes:
        try:
            value = json.loads(data)
        except ValueError:
            return data
        self._edit(value)
        text = json.dumps(value)
        # the card names the kit: it names this agent (the recorder rewrites its own upstream)
        return text.replace(self.kit.base_url, self.url).encode()

    def _event(self, event: bytes) -> bytes:
        lines = event.split(b"\n")
        data = [line[5:].lstrip() for line in lines if line.startswith(b"data:")]
        if len(data) != 1:
            return event + b"\n\n"
        try:
            value = json.loads(data[0])
        except ValueError:
            return event + b"\n\n"
        others = [line for line in lines if line and not line.startswith(b"data:")]
        out = b""
        for frame in self._frames(value):
            out += b"\n".join([*others, b"data: " + json.dumps(frame).encode()]) + b"\n\n"
        return out

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP]
        target = scope["raw_path"].decode() + (
            "?" + scope["query_string"].decode() if scope["query_string"] else ""
        )
        # (one TLS context for every client: making one per request costs 0.2 s under load;
        # the kit is plain HTTP on loopback, it is never used)
        async with httpx.AsyncClient(timeout=30, verify=_TLS) as client:
            request = client.build_request(
                scope["method"], self.kit.url + target, headers=headers, content=body
            )
            reply = await client.send(request, stream=True)
            try:
                await self._relay(reply, send)
            finally:
                await reply.aclose()

    async def _relay(self, reply: httpx.Response, send: Any) -> None:
        out = [
            (k.encode(), v.encode())
            for k, v in reply.headers.multi_items()
            if k.encode().lower() not in _HOP and k.lower() != "content-encoding"
        ]
        start = {"type": "http.response.start", "status": reply.status_code, "headers": out}
        if "json" in reply.headers.get("content-type", ""):
            data = self._json(await reply.aread())
            out.append((b"content-length", str(len(data)).encode()))
            await send(start)
            await send({"type": "http.response.body", "body": data})
            return
        await send(start)
        pending = b""
        async for chunk in reply.aiter_raw():
            # each whole event (up to a blank line) as it comes, reworded, chunked
            pending += chunk.replace(b"\r\n", b"\n")
            *events, pending = pending.split(b"\n\n")
            if events:
                data = b"".join(self._event(e) for e in events if e.strip())
                await send({"type": "http.response.body", "body": data, "more_body": True})
        await send({"type": "http.response.body", "body": pending})


# --- an unscripted client, and the answers of its conversation -------------------------------

REVIEW_DIFF = (
    "--- a/src/cart.py\n"
    "+++ b/src/cart.py\n"
    "@@ -1,3 +1,6 @@\n"
    " def total(items):\n"
    "+    # TODO: apply discounts\n"
    "     subtotal = sum(items)\n"
    "+    print(subtotal)\n"
    "+    return subtotal \n"
    "     return 0\n"
)
"""Four findings: src/cart.py:2 [todo], :4 [debug-print], :5 [trailing-space], the diff's
[missing-tests]."""
STREAM_DIFF = (
    "--- a/src/orders.go\n"
    "+++ b/src/orders.go\n"
    "@@ -3,2 +3,5 @@ func Place(o Order) error {\n"
    " \tif o.Total <= 0 {\n"
    '+\t\tfmt.Println("bad total")\n'
    " \t\treturn ErrTotal\n"
    "+\t}\n"
    "+\t// FIXME: retry on timeout\n"
)
"""Three findings: src/orders.go:4 [debug-print] (Go), :7 [todo] (FIXME), [missing-tests]."""
UNNAMED_DIFF = (
    "@@ -1,2 +1,3 @@\n def mean(xs):\n+    # XXX: empty list\n     return sum(xs) / len(xs)\n"
)
FILE_NAME = "src/stats.py"


@dataclass(frozen=True)
class Answer:
    """An answer of `converse`'s conversation: the kind of answer it is (a regression's
    `target`), what its file's first request sends (to find the file), the exchange in that
    file (1-based) and the path of its text."""

    name: str
    kind: str
    needle: str
    exchange: int
    path: str


ANSWERS = (
    Answer("languages", "languages", "Which languages", 1, "$.result.message.parts[*].text"),
    Answer("rules", "rules", "Which rules", 1, "$.result.message.parts[*].text"),
    Answer("review", "review", "src/cart.py", 1, "$.result.task.artifacts[*].parts[*].text"),
    Answer("get-task", "review", "src/cart.py", 2, "$.result.artifacts[*].parts[*].text"),
    Answer(
        "stream", "review stream", "src/orders.go", 1, "$.result.task.artifacts[*].parts[*].text"
    ),
    Answer("ask", "ask", "def mean", 1, "$.result.task.status.message.parts[*].text"),
    Answer("answered", "review", "def mean", 2, "$.result.task.artifacts[*].parts[*].text"),
)
"""The answers of `converse`. The stream's path is its assembled task's (the artifact as the
client assembles it from its chunks)."""


async def _converse(base_url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    session = _Session(base_url, "JSONRPC")
    try:
        await session.fetch_card()
        client = session.client(streaming=False)
        for key, question in (
            ("languages", "Which languages do you review?"),
            ("rules", "Which rules do you check?"),
        ):
            events = await _collect(client.send_message(_send(_message(question))))
            seen[key] = get_message_text(events[0].message) if events else ""
        review = _task_of(await _collect(client.send_message(_send(_message(REVIEW_DIFF)))))
        seen["review"] = [get_message_text(a) for a in review.artifacts]  # type: ignore[arg-type]
        got = await _bounded(client.get_task(GetTaskRequest(id=review.id)))
        seen["get-task"] = len(got.artifacts)
        streaming = session.client(streaming=True)
        seen["stream"] = len(await _collect(streaming.send_message(_send(_message(STREAM_DIFF)))))
        asking = _task_of(await _collect(client.send_message(_send(_message(UNNAMED_DIFF)))))
        seen["ask"] = asking.status.state
        answer = _message(FILE_NAME, task_id=asking.id, context_id=asking.context_id)
        answered = _task_of(await _collect(client.send_message(_send(answer))))
        seen["answered"] = answered.status.state
    finally:
        await session.aclose()
    return seen


def converse(base_url: str) -> dict[str, Any]:
    """The conversation of `ANSWERS` against `base_url`, by the a2a-sdk client (JSON-RPC):
    two questions, a review and its GetTask, a streamed review, a review that asks for its
    file name and the answer to it. Returns what the client saw."""
    result: dict[str, Any] = asyncio.run(_converse(base_url))
    return result


def stream_frames(url: str, text: str) -> list[Any]:
    """The frames' JSON values of a SendStreamingMessage of `text` to `url` (raw JSON-RPC)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}]}},
    }
    headers = {"A2A-Version": "1.0", "Accept": "text/event-stream"}
    reply = httpx.post(f"{url}/a2a/jsonrpc", json=body, headers=headers, timeout=LIMIT)
    return [json.loads(line[5:]) for line in reply.text.splitlines() if line.startswith("data:")]


def texts_of(value: Any) -> Iterator[str]:
    """Every text of a message's or artifact's parts in a reply (a task's history left)."""
    if isinstance(value, dict):
        for part in value.get("parts", []) if isinstance(value.get("parts"), list) else []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield part["text"]
        for name, item in value.items():
            if name not in ("history", "parts"):
                yield from texts_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts_of(item)
