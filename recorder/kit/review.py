"""The code-reviewer's decisions, as pure functions: what a message asks for, and the review.

No I/O, no clock, no randomness: the same text always gives the same intent and the same
review comments, in the same order. The executor (`recorder.kit.executor`) turns these values
into A2A events.

What a user message means (`classify`), checked in this order:

1. It carries a unified diff (at least one hunk header `@@ -a,b +c,d @@`) -> a review task.
   - The diff names no file (no `+++ b/path`, `--- a/path` or `diff --git` header) ->
     the task asks for the file name (INPUT_REQUIRED); the reply, e.g. `src/app.py`,
     completes it.
   - The text contains the marker `please review slowly` (any case) -> a *slow* review:
     the task stays WORKING until it is canceled or `SLOW_REVIEW_SECONDS` pass, so that
     CancelTask and SubscribeToTask can be shown.
2. It asks about languages (the word "language(s)") -> a direct message listing them.
3. It asks about the rules (the word "rule(s)") -> a direct message listing the rules.
4. Anything else -> a direct message saying what the agent can do.

The review rules (`review_diff`), applied to the *added* lines of each file:

    todo             the line contains TODO, FIXME or XXX
    long-line        the line is longer than MAX_LINE_LENGTH (100) characters
    debug-print      a debugging statement for the file's language (print(, console.log(,
                     System.out.println, fmt.Println, println!/dbg!, breakpoint(), debugger)
    trailing-space   the line ends with a space or a tab
    hardcoded-secret an assignment of a string literal to password/secret/api_key/token
    missing-tests    (once per diff) a source file changed and no test file did

Comments are ordered by file (as they appear in the diff), then line, then rule (the order
above); `missing-tests` comes last.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "LANGUAGES",
    "MAX_LINE_LENGTH",
    "RULES",
    "SLOW_MARKER",
    "Comment",
    "FileDiff",
    "Intent",
    "Review",
    "classify",
    "format_review",
    "help_text",
    "is_plausible_file_name",
    "is_slow",
    "is_test_file",
    "language_of",
    "languages_text",
    "parse_unified_diff",
    "review_diff",
    "rules_text",
]

MAX_LINE_LENGTH = 100
SLOW_MARKER = "please review slowly"

# language name -> file name extensions, in the order the agent lists them
LANGUAGES: dict[str, tuple[str, ...]] = {
    "Python": (".py",),
    "JavaScript": (".js", ".mjs", ".cjs", ".jsx"),
    "TypeScript": (".ts", ".tsx"),
    "Go": (".go",),
    "Java": (".java",),
    "Rust": (".rs",),
}

# rule id -> one-line description, in the order comments are sorted
RULES: dict[str, str] = {
    "todo": "TODO, FIXME or XXX left in added code",
    "long-line": f"added line longer than {MAX_LINE_LENGTH} characters",
    "debug-print": "debugging statement left in added code",
    "trailing-space": "added line ends with whitespace",
    "hardcoded-secret": "string literal assigned to a password, secret, API key or token",
    "missing-tests": "source files changed but no test file did",
}

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_GIT_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)")
_TODO = re.compile(r"\b(TODO|FIXME|XXX)\b")
_SECRET = re.compile(r"""(?i)\b(password|passwd|secret|api_?key|token)\b\s*[:=]\s*["'][^"']+["']""")
_DEBUG_BY_LANGUAGE: dict[str, re.Pattern[str]] = {
    "Python": re.compile(r"(^|[^\w.])(print\(|breakpoint\(\)|pdb\.set_trace\()"),
    "JavaScript": re.compile(r"\bconsole\.(log|debug)\(|\bdebugger\b"),
    "TypeScript": re.compile(r"\bconsole\.(log|debug)\(|\bdebugger\b"),
    "Go": re.compile(r"\bfmt\.Print(ln|f)?\("),
    "Java": re.compile(r"\bSystem\.(out|err)\.print(ln)?\(|\.printStackTrace\(\)"),
    "Rust": re.compile(r"\b(println!|dbg!|eprintln!)\("),
}
_TEST_FILE = re.compile(
    r"(^|/)(tests?|__tests__|spec)/"
    r"|(^|/)test_[^/]*$"
    r"|_test\.(py|go|rs)$"
    r"|(Test|Tests)\.java$"
    r"|\.(test|spec)\.(js|mjs|cjs|jsx|ts|tsx)$"
)
_LANGUAGE_WORD = re.compile(r"(?i)\blanguages?\b")
_RULE_WORD = re.compile(r"(?i)\brules?\b")


class Intent(Enum):
    """What a user message asks the agent for."""

    REVIEW = "review"
    LANGUAGES = "languages"
    RULES = "rules"
    HELP = "help"


@dataclass(frozen=True)
class FileDiff:
    """The added lines of one file in a unified diff: (new line number, text) pairs."""

    path: str | None
    added: tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class Comment:
    """One review comment. `line` is None for comments about the whole diff."""

    path: str | None
    line: int | None
    rule: str
    message: str

    @property
    def where(self) -> str:
        """`path:line`, or `diff` for a comment about the whole diff."""
        return f"{self.path}:{self.line}" if self.line is not None else "diff"


@dataclass(frozen=True)
class Review:
    """The outcome of reviewing one diff."""

    files: tuple[str, ...]
    comments: tuple[Comment, ...]


def classify(text: str) -> Intent:
    """The intent of a user message's text (see the module docstring for the order)."""
    if any(_HUNK.match(line) for line in text.splitlines()):
        return Intent.REVIEW
    if _LANGUAGE_WORD.search(text):
        return Intent.LANGUAGES
    if _RULE_WORD.search(text):
        return Intent.RULES
    return Intent.HELP


def is_slow(text: str) -> bool:
    """Whether the message asks for a slow review (the `SLOW_MARKER`, any case)."""
    return SLOW_MARKER in text.lower()


def _strip_prefix(path: str) -> str:
    path = path.split("\t", 1)[0].strip()
    if path.startswith(("a/", "b/")):
        return path[2:]
    return path


def parse_unified_diff(text: str) -> tuple[FileDiff, ...]:
    """The files of a unified diff with their added lines.

    A file header is `diff --git a/X b/Y`, or a `--- X` line directly followed by `+++ Y`.
    A hunk that comes before any file header belongs to a FileDiff whose `path` is None.
    Deleted files (`+++ /dev/null`) keep their old path and have no added lines.
    """
    files: list[FileDiff] = []
    path: str | None = None
    added: list[tuple[int, str]] = []
    open_file = False  # a FileDiff is being collected
    has_hunk = False  # ... and it has a hunk already
    in_hunk = False
    new_line = 0

    def start(new_path: str | None) -> None:
        nonlocal path, added, open_file, has_hunk
        if open_file:
            files.append(FileDiff(path, tuple(added)))
        path, added, open_file, has_hunk = new_path, [], True, False

    lines = text.splitlines()
    for index, line in enumerate(lines):
        git = _GIT_HEADER.match(line)
        if git:
            start(git.group(2))
            in_hunk = False
            continue
        following = lines[index + 1] if index + 1 < len(lines) else ""
        after_pair = lines[index + 2] if index + 2 < len(lines) else ""
        # Inside a hunk, a `--- x` + `+++ y` pair is a file header only when a hunk header
        # follows it; otherwise it is a removed `-- x` and an added `++ y` (SQL, Lua or
        # Haskell comments). Hunk line counts would tell too, but hand-written diffs get
        # them wrong.
        content = in_hunk and not _HUNK.match(after_pair)
        if line.startswith("--- ") and following.startswith("+++ ") and not content:
            old, new = _strip_prefix(line[4:]), _strip_prefix(following[4:])
            header_path = old if new == "/dev/null" else new
            if open_file and not has_hunk:
                path = header_path  # the `--- / +++` pair after `diff --git`
            else:
                start(header_path)
            in_hunk = False
            continue
        if line.startswith("+++ ") and not in_hunk:
            continue  # the second line of a header pair
        hunk = _HUNK.match(line)
        if hunk:
            if not open_file:
                start(None)
            has_hunk, in_hunk, new_line = True, True, int(hunk.group(1))
            continue
        if not in_hunk:
            continue
        if line.startswith("+"):
            added.append((new_line, line[1:]))
            new_line += 1
        elif line.startswith(" ") or line == "":
            new_line += 1
        elif not line.startswith(("-", "\\")):
            in_hunk = False  # anything else ends the hunk (e.g. prose after the diff)
    if open_file:
        files.append(FileDiff(path, tuple(added)))
    return tuple(files)


def language_of(path: str | None) -> str | None:
    """The reviewed language of a file name, from its extension, or None."""
    if path is None:
        return None
    for language, extensions in LANGUAGES.items():
        if path.endswith(extensions):
            return language
    return None


def is_test_file(path: str) -> bool:
    return _TEST_FILE.search(path) is not None


def review_diff(files: tuple[FileDiff, ...]) -> Review:
    """Review comments for the added lines of `files`, in a stable order."""
    comments: list[Comment] = []
    for diff in files:
        language = language_of(diff.path)
        debug = _DEBUG_BY_LANGUAGE.get(language) if language else None
        for number, text in diff.added:
            todo = _TODO.search(text)
            if todo:
                comments.append(
                    Comment(diff.path, number, "todo", f"{todo.group(1)} left in added code.")
                )
            if len(text) > MAX_LINE_LENGTH:
                comments.append(
                    Comment(
                        diff.path,
                        number,
                        "long-line",
                        f"line is {len(text)} characters long (limit {MAX_LINE_LENGTH}).",
                    )
                )
            if debug is not None and debug.search(text):
                comments.append(
                    Comment(
                        diff.path,
                        number,
                        "debug-print",
                        f"debugging statement in {language} code: remove it or use logging.",
                    )
                )
            if text != text.rstrip(" \t"):
                comments.append(
                    Comment(diff.path, number, "trailing-space", "line ends with whitespace.")
                )
            if _SECRET.search(text):
                comments.append(
                    Comment(
                        diff.path,
                        number,
                        "hardcoded-secret",
                        "string literal assigned to a secret: read it from the environment.",
                    )
                )
    paths = [diff.path for diff in files if diff.path is not None]
    sources = [p for p in paths if language_of(p) is not None and not is_test_file(p)]
    if sources and not any(is_test_file(p) for p in paths):
        comments.append(
            Comment(
                None,
                None,
                "missing-tests",
                f"{', '.join(sources)} changed but no test file did: add or update tests.",
            )
        )
    return Review(tuple(paths), tuple(comments))


def format_review(review: Review) -> str:
    """The review as the text a person reads (one line per comment)."""
    files = len(review.files)
    noun = "file" if files == 1 else "files"
    if not review.comments:
        return f"Reviewed {files} {noun}: no comments. Looks good to me."
    count = len(review.comments)
    lines = [f"Reviewed {files} {noun}: {count} comment{'s' if count != 1 else ''}."]
    for comment in review.comments:
        lines.append(f"{comment.where}: [{comment.rule}] {comment.message}")
    return "\n".join(lines)


def is_plausible_file_name(text: str) -> bool:
    """Whether a reply looks like a single file path (one word, no diff, not too long)."""
    name = text.strip()
    return bool(name) and len(name) <= 255 and not any(c.isspace() for c in name)


def languages_text() -> str:
    names = list(LANGUAGES)
    return (
        f"I can review {', '.join(names[:-1])} and {names[-1]}. "
        "Send me a unified diff and I will comment on the added lines."
    )


def rules_text() -> str:
    lines = ["I check the added lines of a unified diff for:"]
    lines += [f"- {rule}: {description}" for rule, description in RULES.items()]
    return "\n".join(lines)


def help_text() -> str:
    return (
        "I am code-reviewer. Ask me which languages I can review, ask which rules I check, "
        "or send a unified diff as text and I will review it. "
        f'Add "{SLOW_MARKER}" to the message for a review that stays in progress until '
        "you cancel it."
    )
