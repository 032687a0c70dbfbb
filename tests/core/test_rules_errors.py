"""A rules file that is not right is a RulesError naming `file:line`, whatever is wrong with it
(never a ValueError or a RecursionError from deep inside YAML), and every command that takes
`--rules` exits 2 with it (exit 1 reads as "mismatches" in CI)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recorder.cli import main
from recorder.errors import RulesError
from recorder.rules.ruleset import load_rules

HUGE = "9" * 5000
BOMB = (
    "ignored_paths: [[&a [x, x, x, x, x, x, x, x, x], &b [*a, *a, *a, *a, *a, *a, *a, *a, *a],"
    " &c [*b, *b, *b, *b, *b, *b, *b, *b, *b], &d [*c, *c, *c, *c, *c, *c, *c, *c, *c],"
    " &e [*d, *d, *d, *d, *d, *d, *d, *d, *d], &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]]]\n"
)

ESCAPED = [
    # (name, content, line, words): each raised ValueError, RecursionError or TypeError before
    ("!!int abc", "version: 1\nx: !!int abc\n", 2, "not valid YAML: cannot read the int 'abc'"),
    ("an empty !!int", "version: 1\nx: !!int\n", 2, "cannot read the int ''"),  # IndexError
    ("!!float", "version: 1\n\nignored_paths:\n  - !!float xyz\n", 4, "cannot read the float"),
    ("!!timestamp", "ignored_paths: [!!timestamp 2020-13-45]\n", 1, "cannot read the timestamp"),
    ("an int of 5,000 digits", f"version: {HUGE}\n", 1, "cannot read the int '999"),
    ("10,000 nested lists", "[" * 10_000 + "]" * 10_000 + "\n", 1, "nested deeper than 64"),
    ("10,000 nested maps", "a: " + "{a: " * 10_000 + "1" + "}" * 10_000 + "\n", 1, "nested"),
    ("two documents", "version: 1\n---\n", 2, "not valid YAML"),
    ("a scalar at the top", "\n\nhello\n", 3, "expected a mapping of rule keys at the top"),
    ("a list at the top", "- a\n- b\n", 1, "expected a mapping of rule keys at the top, got list"),
    ("a control character", "version: 1\n\x01\n", 2, "not valid YAML"),
    ("an index of 5,000 digits", f"ignored_paths: ['$.a[{HUGE}]']\n", 1, "too large"),
    ("a superscript index", "ignored_paths: ['$.a[\u00b2]']\n", 1, "expected [*], [N]"),
    ("a repetition past 2**32", "generated_shapes:\n  x: 'a{99999999999}'\n", 2, "too large"),
    ("10,000 nested groups", f"generated_shapes: {{x: '{'(' * 10_000}a{')' * 10_000}'}}", 1,
     "generated_shapes.x: bad regular expression"),
    ("an alias bomb", BOMB, 1, "ignored_paths: expected a list of strings, got list"),
    ("a key on a later line", "version: 1\n\ngenerated_fields:\n  taskId: 5\n", 4, "taskId"),
]  # fmt: skip


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("content", "line", "words"), [e[1:] for e in ESCAPED], ids=[e[0] for e in ESCAPED]
)
def test_a_bad_rules_file_is_a_rules_error_at_its_line(
    tmp_path: Path, content: str, line: int, words: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(RulesError) as caught:
        load_rules(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert words in message, message
    assert len(message) < 400, message  # a huge value is not printed whole


def test_bytes_that_are_not_utf8_name_their_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(b"version: 1\n\nignored_paths: ['\xff']\n")
    with pytest.raises(RulesError, match=rf"^{path}:3: the rules file is not UTF-8 text$"):
        load_rules(path)


# --------------------------------------------------------------------------------- the CLI

BAD = "version: 1\n\nx: !!int abc\n"


def _bad_rules(tmp_path: Path) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD, encoding="utf-8")
    return path


def test_play_exits_2_naming_the_rules_file_and_line(tmp_path: Path) -> None:
    rules = _bad_rules(tmp_path)
    transcript = tmp_path / "x.http"
    transcript.write_text("### x\nGET / HTTP/1.1\n\nHTTP/1.1 200 OK\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["play", "--rules", str(rules), str(transcript)])
    assert result.exit_code == 2, result.output
    assert f"recorder play: {rules}:3: not valid YAML: cannot read the int 'abc'" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("content", ["[" * 10_000, "- a\n", f"version: {HUGE}\n"])
def test_record_exits_2_naming_the_rules_file(tmp_path: Path, content: str) -> None:
    rules = tmp_path / "bad.yaml"
    rules.write_text(content, encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        ["record", "--upstream", "http://127.0.0.1:9", "--rules", str(rules), "--out", str(out)],
    )
    assert result.exit_code == 2, result.output
    assert f"recorder record: {rules}:1: " in result.output, result.output
    assert "Traceback" not in result.output


def test_record_names_the_file_and_line_of_int_abc(tmp_path: Path) -> None:
    rules = _bad_rules(tmp_path)
    result = CliRunner().invoke(
        main,
        ["record", "--upstream", "http://127.0.0.1:9", "--rules", str(rules), "--out", "o"],
    )
    assert result.exit_code == 2, result.output
    assert f"recorder record: {rules}:3: not valid YAML" in result.output, result.output


# ------------------------------------------------------------------------------------ fuzz

KEYS = ["version", "ignored_paths", "generated_fields", "generated_shapes", "secret_headers"]
SCALARS = ["1", "x", "$.a", "'$.a[0]'", "!!int abc", "!!float x", "!!binary a", HUGE, "null"]
SCALARS += ["[", "]", "{", "}", "&a", "*a", "*b", "<<", "? ", "- ", ":", "'", '"', "!!", "%"]
yamlish = st.lists(
    st.one_of(
        st.tuples(st.integers(0, 4), st.sampled_from(KEYS), st.sampled_from(SCALARS)).map(
            lambda t: " " * t[0] + f"{t[1]}: {t[2]}"
        ),
        st.tuples(st.integers(0, 4), st.sampled_from(SCALARS)).map(lambda t: " " * t[0] + t[1]),
        st.text(max_size=12),
    ),
    max_size=12,
).map("\n".join)


def _loads_or_names_the_file(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_bytes(data)
    try:
        load_rules(path)
    except RulesError as exc:
        assert str(exc).startswith(f"{path}"), str(exc)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(yamlish)
def test_yaml_ish_text_loads_or_is_a_rules_error(tmp_path: Path, text: str) -> None:
    _loads_or_names_the_file(tmp_path, text.encode("utf-8", errors="surrogatepass"))


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.binary(max_size=200))
def test_random_bytes_load_or_are_a_rules_error(tmp_path: Path, data: bytes) -> None:
    _loads_or_names_the_file(tmp_path, data)
