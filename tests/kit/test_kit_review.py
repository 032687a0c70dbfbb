"""The code-reviewer's pure rules (recorder.kit.review): intents, diff parsing, review comments."""

from __future__ import annotations

import pytest

from recorder.kit.review import (
    LANGUAGES,
    MAX_LINE_LENGTH,
    RULES,
    Comment,
    FileDiff,
    Intent,
    Review,
    classify,
    format_review,
    help_text,
    is_plausible_file_name,
    is_slow,
    is_test_file,
    language_of,
    languages_text,
    parse_unified_diff,
    review_diff,
    rules_text,
)

PY_DIFF = """\
diff --git a/src/app.py b/src/app.py
--- a/src/app.py
+++ b/src/app.py
@@ -1,3 +1,5 @@
 import os
+# TODO: read the port from the config
+print(os.getcwd())
 x = 1
-y = 2
+y = 3
"""

HEADERLESS = """\
@@ -1,2 +1,3 @@
 import os
+# FIXME later
 x = 1
"""


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("What languages can you review?", Intent.LANGUAGES),
        ("which LANGUAGE do you know", Intent.LANGUAGES),
        ("Which rules do you check?", Intent.RULES),
        ("hello", Intent.HELP),
        ("", Intent.HELP),
        ("languages? here is my diff\n" + PY_DIFF, Intent.REVIEW),
        (HEADERLESS, Intent.REVIEW),
        ("@@ not a hunk header", Intent.HELP),
    ],
)
def test_classify_picks_the_intent_in_the_documented_order(text: str, intent: Intent) -> None:
    assert classify(text) is intent


def test_slow_marker_is_found_in_any_case() -> None:
    assert is_slow("Please Review Slowly\n" + PY_DIFF)
    assert not is_slow(PY_DIFF)
    assert not is_slow("slow")


def test_parse_git_diff_numbers_added_lines_in_the_new_file() -> None:
    assert parse_unified_diff(PY_DIFF) == (
        FileDiff(
            "src/app.py",
            ((2, "# TODO: read the port from the config"), (3, "print(os.getcwd())"), (5, "y = 3")),
        ),
    )


def test_parse_plain_unified_diff_with_several_files_and_hunks() -> None:
    text = (
        "--- a/a.go\t2024-01-01\n+++ b/a.go\t2024-01-02\n"
        "@@ -10,2 +10,3 @@ func main() {\n ctx\n+fmt.Println(x)\n ctx\n"
        "@@ -40 +41 @@\n-old\n+new\n"
        "--- a/tests/test_b.py\n+++ b/tests/test_b.py\n@@ -0,0 +1 @@\n+def test(): pass\n"
    )
    assert parse_unified_diff(text) == (
        FileDiff("a.go", ((11, "fmt.Println(x)"), (41, "new"))),
        FileDiff("tests/test_b.py", ((1, "def test(): pass"),)),
    )


def test_parse_headerless_hunk_has_no_path() -> None:
    assert parse_unified_diff(HEADERLESS) == (FileDiff(None, ((2, "# FIXME later"),)),)


def test_parse_new_and_deleted_files() -> None:
    text = (
        "--- /dev/null\n+++ b/new.rs\n@@ -0,0 +1 @@\n+dbg!(x);\n"
        "--- a/gone.js\n+++ /dev/null\n@@ -1 +0,0 @@\n-console.log(1)\n"
    )
    assert parse_unified_diff(text) == (
        FileDiff("new.rs", ((1, "dbg!(x);"),)),
        FileDiff("gone.js", ()),
    )


def test_parse_stops_a_hunk_at_prose_and_ignores_no_newline_marker() -> None:
    text = "@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\nThanks!\n+not a line"
    assert parse_unified_diff(text) == (FileDiff(None, ((1, "b"),)),)


def test_parse_keeps_removed_and_added_comment_lines_that_look_like_a_file_header() -> None:
    # a removed "-- old" and an added "++ new" line (SQL comments) inside a hunk, then a
    # real second file: only a header pair followed by a hunk header starts a file
    text = (
        "--- a/db/schema.sql\n+++ b/db/schema.sql\n@@ -1,2 +1,2 @@\n"
        "--- old comment\n+++ TODO new comment\n select 1;\n"
        "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-x\n+y\n"
    )
    assert parse_unified_diff(text) == (
        FileDiff("db/schema.sql", ((1, "++ TODO new comment"),)),
        FileDiff("app.py", ((1, "y"),)),
    )


def test_parse_text_without_diff_gives_no_files() -> None:
    assert parse_unified_diff("just words\n--- not a header") == ()


def test_review_applies_each_rule_in_order() -> None:
    long_line = "x = '" + "a" * MAX_LINE_LENGTH + "'"
    files = (
        FileDiff(
            "src/app.py",
            (
                (3, "print('TODO')  "),
                (7, long_line),
                (9, 'API_KEY = "abc123"'),
                (10, "fine = 1"),
            ),
        ),
    )
    review = review_diff(files)
    assert review == Review(
        ("src/app.py",),
        (
            Comment("src/app.py", 3, "todo", "TODO left in added code."),
            Comment(
                "src/app.py",
                3,
                "debug-print",
                "debugging statement in Python code: remove it or use logging.",
            ),
            Comment("src/app.py", 3, "trailing-space", "line ends with whitespace."),
            Comment(
                "src/app.py",
                7,
                "long-line",
                f"line is {len(long_line)} characters long (limit {MAX_LINE_LENGTH}).",
            ),
            Comment(
                "src/app.py",
                9,
                "hardcoded-secret",
                "string literal assigned to a secret: read it from the environment.",
            ),
            Comment(
                None,
                None,
                "missing-tests",
                "src/app.py changed but no test file did: add or update tests.",
            ),
        ),
    )


def test_line_of_exactly_the_limit_is_not_long() -> None:
    files = (FileDiff("notes.txt", ((1, "a" * MAX_LINE_LENGTH),)),)
    assert review_diff(files).comments == ()


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("a.js", "console.log(x)"),
        ("a.tsx", "debugger;"),
        ("a.go", 'fmt.Printf("%v", x)'),
        ("A.java", "System.out.println(x);"),
        ("a.rs", 'println!("{}", x);'),
        ("a.py", "breakpoint()"),
    ],
)
def test_debug_print_is_recognised_per_language(path: str, line: str) -> None:
    rules = [c.rule for c in review_diff((FileDiff(path, ((1, line),)),)).comments]
    assert "debug-print" in rules


def test_debug_print_of_another_language_is_not_flagged() -> None:
    # `print(` is Python's; in a Go file it is not a debugging statement of Go.
    files = (FileDiff("a.go", ((1, "print(x)"),)), FileDiff("a_test.go", ()))
    assert review_diff(files).comments == ()


def test_method_named_print_is_not_a_python_debug_print() -> None:
    files = (FileDiff("a.py", ((1, "report.print(x)"),)), FileDiff("tests/test_a.py", ()))
    assert review_diff(files).comments == ()


@pytest.mark.parametrize(
    "path",
    [
        "tests/test_app.py",
        "test_app.py",
        "pkg/app_test.go",
        "src/AppTest.java",
        "web/app.test.ts",
        "web/app.spec.js",
        "web/__tests__/x.js",
    ],
)
def test_changed_test_file_silences_missing_tests(path: str) -> None:
    assert is_test_file(path)
    files = (FileDiff("src/app.py", ()), FileDiff(path, ()))
    assert review_diff(files).comments == ()


def test_missing_tests_needs_a_source_file_in_a_reviewed_language() -> None:
    assert review_diff((FileDiff("README.md", ((1, "hello"),)),)).comments == ()


def test_format_review_lists_comments_with_place_and_rule() -> None:
    text = format_review(review_diff(parse_unified_diff(PY_DIFF)))
    assert text == (
        "Reviewed 1 file: 3 comments.\n"
        "src/app.py:2: [todo] TODO left in added code.\n"
        "src/app.py:3: [debug-print] debugging statement in Python code: "
        "remove it or use logging.\n"
        "diff: [missing-tests] src/app.py changed but no test file did: add or update tests."
    )


def test_format_review_without_comments() -> None:
    review = Review(("a.py", "tests/test_a.py"), ())
    assert format_review(review) == "Reviewed 2 files: no comments. Looks good to me."


@pytest.mark.parametrize(
    ("text", "plausible"),
    [("src/app.py", True), ("  app.py\n", True), ("", False), ("two words", False)],
)
def test_is_plausible_file_name(text: str, plausible: bool) -> None:
    assert is_plausible_file_name(text) is plausible


def test_language_of_uses_the_extension() -> None:
    assert language_of("x/y.tsx") == "TypeScript"
    assert language_of("Makefile") is None
    assert language_of(None) is None


def test_reply_texts_name_every_language_and_rule() -> None:
    assert all(language in languages_text() for language in LANGUAGES)
    assert all(f"- {rule}:" in rules_text() for rule in RULES)
    assert "please review slowly" in help_text()
