"""`recorder kit --vary`: the kit's answers worded anew on every reply, the facts kept.

A model-backed agent answers the same request with other words each time: another order,
other sentence frames, synonyms, an opener or a closing remark. `Wording` does the same with
the kit's answers, so that an LLM-backed agent's testing (`recorder learn` proposing checks,
`recorder play --trials`) can be shown and tested without a model. What never changes: the
file names, `path:line`, the rule tags (`[todo]`), the numbers, the language names, the
TODO/FIXME word, the quoted marker, a review's findings one per line in a list (its bullet
varies); and the ids, states and structure of every reply (only
texts are worded).

Each call draws from one `random.Random`: with a seed, the same sequence of wordings every
time the kit starts (a reproducible test), without one a fresh sequence. The executor calls
it on the event loop's thread only, one reply at a time.
"""

from __future__ import annotations

import random
import re

from recorder.kit.review import LANGUAGES, MAX_LINE_LENGTH, RULES, SLOW_MARKER, Comment, Review

__all__ = ["Wording"]

_OPENERS = (
    "",
    "",
    "Here is my review.",
    "Thanks for the diff!",
    "I had a look at your change.",
    "Sure, here is what I found.",
)
_CLOSINGS = (
    "",
    "",
    "Hope this helps!",
    "Happy to look again after the fixes.",
    "Let me know if anything is unclear.",
)
_SUMMARIES = (
    "Reviewed {files}: {comments}.",
    "I went through {files} and have {comments}.",
    "{comments} in {files}.",
    "Looked at {files}; {comments} to address.",
    "Your change touches {files}, and I left {comments}.",
)
_COMMENT_NOUNS = ("comment", "remark", "finding", "note")
_CLEAN = (
    "Reviewed {files}: no comments. Looks good to me.",
    "I went through {files} and found nothing to flag.",
    "{files} reviewed: all clear, nice work.",
    "No findings in {files}. Looks good!",
)
# one finding per line, always in a list (the format holds; its bullet and order vary)
_FINDINGS = (
    "- {where}: [{rule}] {message}",
    "- [{rule}] at {where}: {message}",
    "* {where} [{rule}]: {message}",
    "{number}. {where} - [{rule}] {message}",
    "- {where}: {message} [{rule}]",
)
_MESSAGES: dict[str, tuple[str, ...]] = {
    "todo": (
        "{word} left in added code.",
        "a {word} is still in the new code.",
        "the added code keeps a {word}.",
        "{word} comment left behind in the added lines.",
    ),
    "long-line": (
        "line is {length} characters long (limit {limit}).",
        "{length} characters on this line; the limit is {limit}.",
        "too long: {length} characters, over the {limit} limit.",
    ),
    "debug-print": (
        "debugging statement in {language} code: remove it or use logging.",
        "a {language} debugging statement; prefer logging.",
        "drop this {language} debugging call, or log instead.",
    ),
    "trailing-space": (
        "line ends with whitespace.",
        "trailing whitespace at the end of the line.",
        "there is a trailing space or tab here.",
    ),
    "hardcoded-secret": (
        "string literal assigned to a secret: read it from the environment.",
        "a hardcoded secret; load it from the environment instead.",
        "secret value in the source: take it from the environment.",
    ),
    "missing-tests": (
        "{sources} changed but no test file did: add or update tests.",
        "no test file changed alongside {sources}: please add tests.",
        "{sources} changed without tests; add some.",
    ),
}
_LANGUAGE_ANSWERS = (
    "I can review {names}. Send me a unified diff and I will comment on the added lines.",
    "Languages I review: {names}. Paste a unified diff and I will comment on what it adds.",
    "I know {names}; send a unified diff to get comments on its added lines.",
    "Supported: {names}. Share a unified diff and I will look at the added lines.",
)
_RULES_INTROS = (
    "I check the added lines of a unified diff for:",
    "These are the checks I run on the added lines of a diff:",
    "When you send a unified diff, I look at its added lines for:",
)
_BULLETS = ("- ", "* ", "• ")
_HELP = (
    "I am code-reviewer. Ask me which languages I can review, ask which rules I check, or "
    "send a unified diff as text and I will review it.",
    "code-reviewer here: send a unified diff as text for a review, or ask me about the "
    "languages I know or the rules I check.",
    "Hi! I review unified diffs sent as text. You can also ask which languages I review or "
    "which rules I check.",
)
_SLOW = (
    ' Add "{marker}" to the message for a review that stays in progress until you cancel it.',
    ' With "{marker}" in the message, the review stays in progress until you cancel it.',
    ' For a review that waits until you cancel it, write "{marker}" in the message.',
)
_ASK_FILE = (
    "This diff has no file name header (no '--- a/...' / '+++ b/...' lines). Which file is "
    "it for? Reply with its path, e.g. src/app.py.",
    "Which file is this diff for? It has no '--- a/...' / '+++ b/...' header. Reply with "
    "its path, e.g. src/app.py.",
    "I cannot tell the file: the diff carries no '--- a/...' / '+++ b/...' header. Please "
    "reply with its path (e.g. src/app.py).",
)
_TODO_WORD = re.compile(r"\b(TODO|FIXME|XXX)\b")
_NUMBERS = re.compile(r"\d+")
_LANGUAGE = re.compile(r"in (\w+) code")


class Wording:
    """The kit's answers in a new wording per call (see the module docstring)."""

    def __init__(self, seed: int | None = None) -> None:
        self._random = random.Random(seed)

    def _pick(self, choices: tuple[str, ...]) -> str:
        return self._random.choice(choices)

    def review(self, result: Review) -> str:
        """The review's text: summary, findings in another order, opener and closing."""
        files = len(result.files)
        file_count = f"{files} file" if files == 1 else f"{files} files"
        if not result.comments:
            body = [self._pick(_CLEAN).format(files=file_count)]
            body[0] = body[0][0].upper() + body[0][1:]
        else:
            count = len(result.comments)
            noun = self._pick(_COMMENT_NOUNS)
            comments = f"{count} {noun}" if count == 1 else f"{count} {noun}s"
            summary = self._pick(_SUMMARIES).format(files=file_count, comments=comments)
            frame = self._pick(_FINDINGS)
            findings = list(result.comments)
            self._random.shuffle(findings)
            body = [summary]
            body += [
                frame.format(
                    number=number,
                    where=comment.where,
                    rule=comment.rule,
                    message=self._message(comment),
                )
                for number, comment in enumerate(findings, start=1)
            ]
        opener, closing = self._pick(_OPENERS), self._pick(_CLOSINGS)
        if opener:
            glue = self._pick((" ", "\n"))
            body[0] = opener + glue + body[0]
        if closing:
            body.append(closing)
        return "\n".join(body)

    def _message(self, comment: Comment) -> str:
        """A comment's message reworded, its facts (the word, the numbers, the language, the
        files) taken from the kit's own message."""
        choices = _MESSAGES.get(comment.rule)
        if choices is None:
            return comment.message
        word = _TODO_WORD.search(comment.message)
        numbers = _NUMBERS.findall(comment.message)
        language = _LANGUAGE.search(comment.message)
        return self._pick(choices).format(
            word=word.group(1) if word else "TODO",
            length=numbers[0] if numbers else "",
            limit=numbers[1] if len(numbers) > 1 else MAX_LINE_LENGTH,
            language=language.group(1) if language else "",
            sources=comment.message.split(" changed", 1)[0],
        )

    def languages(self) -> str:
        names = list(LANGUAGES)
        self._random.shuffle(names)
        listed = self._pick(
            (
                f"{', '.join(names[:-1])} and {names[-1]}",
                ", ".join(names),
                f"{', '.join(names[:-1])}, and {names[-1]}",
            )
        )
        return self._pick(_LANGUAGE_ANSWERS).format(names=listed)

    def rules(self) -> str:
        rules = list(RULES.items())
        self._random.shuffle(rules)
        bullet = self._pick(_BULLETS)
        lines = [self._pick(_RULES_INTROS)]
        lines += [f"{bullet}{rule}: {description}" for rule, description in rules]
        return "\n".join(lines)

    def help(self) -> str:
        return self._pick(_HELP) + self._pick(_SLOW).format(marker=SLOW_MARKER)

    def ask_file_name(self) -> str:
        return self._pick(_ASK_FILE)
