"""Input made to hurt the parser: pathological shapes parse in linear time (a timeout guards
each one: the quadratic header regex took minutes on 200 KB), and numbers past Python's
4,300-digit int() limit are parse errors at their line, not ValueErrors."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recorder import ParseError, loads

SIZE = 200_000
EXCHANGE = "GET / HTTP/1.1\n\nHTTP/1.1 200 OK\n"


def _with_bodies(content_type: str, body: str) -> str:
    return (
        f"### t\nPOST /x HTTP/1.1\nContent-Type: {content_type}\n\n{body}\n\n"
        f"HTTP/1.1 200 OK\nContent-Type: {content_type}\n\n{body}\n"
    )


SHAPES = {
    "header value of inner spaces": "###\nGET / HTTP/1.1\nX-A: a" + " " * SIZE + "b\n\n"
    "HTTP/1.1 200 OK\n",
    "header value of spaces and tabs": "###\nGET / HTTP/1.1\nX-A: a" + " \t" * (SIZE // 2) + "b\n\n"
    "HTTP/1.1 200 OK\n",
    "response header of inner spaces": "###\nGET / HTTP/1.1\n\nHTTP/1.1 200 OK\nX-A: a"
    + " " * SIZE
    + "b\n",
    "format marker of inner spaces": "# recorder-format:" + " " * SIZE + "1 x\n",
    "a long title": "### " + "t " * (SIZE // 2) + "\n" + EXCHANGE,
    "a long reason": "###\nGET / HTTP/1.1\n\nHTTP/1.1 200 " + "ok " * (SIZE // 3) + "\n",
    **{
        f"{shape} ({kind})": _with_bodies(kind, body)
        for kind in ("text/plain", "application/json", "text/event-stream")
        for shape, body in {
            "a body of one long line": "a" * SIZE,
            "a body of blank lines": "a" + "\n" * SIZE + "b",
            "a body of # lines": "x\n" + "#\n" * (SIZE // 2),
            "a body of CRs": "a" + "\r" * SIZE,
            "a body of CRLFs": "a" + "\r\n" * (SIZE // 2),
            "a body of HTTP/ lines": "x\n" + "HTTP/\n" * (SIZE // 6),
            "a body of data: lines": "data: " + "\ndata:" * (SIZE // 6),
        }.items()
    },
    "an escaped body of blank lines": "###\nGET / HTTP/1.1\n\n# recorder-body: escaped\n"
    + "\n" * SIZE
    + '"a"\n\nHTTP/1.1 200 OK\n',
    "many exchanges": ("###\n" + EXCHANGE) * (SIZE // 36),
}


@pytest.mark.timeout(10)
@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
def test_a_pathological_shape_parses_without_hanging(text: str) -> None:
    # (the figures are in bench/bench_parse_shapes.py; this only has to finish)
    try:
        loads(text, source="big.http")
    except ParseError as exc:  # some shapes are not valid (a lone CR): an error is fine too
        assert exc.line is not None


@pytest.mark.timeout(10)
def test_a_header_value_of_200_kb_of_spaces_parses_with_its_value() -> None:
    transcript = loads(SHAPES["header value of inner spaces"])
    assert transcript.exchanges[0].request.headers.get("X-A") == "a" + " " * SIZE + "b"


def test_a_header_value_keeps_inner_whitespace_and_drops_the_outer() -> None:
    text = "###\nGET / HTTP/1.1\nX-A: \t a \t b \t\nX-B:\nX-C:   \n\nHTTP/1.1 200 OK\n"
    headers = loads(text).exchanges[0].request.headers
    assert list(headers) == [("X-A", "a \t b"), ("X-B", ""), ("X-C", "")]


HUGE = "9" * 5000

HUGE_NUMBERS = [
    # (name, text, line, words)
    ("format version", f"# recorder-format: {HUGE}\n", 1, "unsupported transcript format version"),
    ("format version of zeros", f"# recorder-format: {'0' * 5000}2\n", 1, "version 2:"),
    (
        "@during exchange",
        f"### a\n{EXCHANGE}### b\n# @during exchange {HUGE} frame 1\n{EXCHANGE}",
        6,
        "no earlier exchange 999999999999… (5000 digits)",
    ),
    (
        "@during frame",
        f"### a\n{EXCHANGE}### b\n# @during exchange 1 frame {HUGE}\n{EXCHANGE}",
        6,
        "too large a frame number",
    ),
    ("a digit that is not ASCII", "# recorder-format: \u0661\n", 1, "needs a version number"),
    ("a superscript digit", "# recorder-format: \u00b2\n", 1, "needs a version number"),
]


@pytest.mark.parametrize(
    ("text", "line", "words"), [m[1:] for m in HUGE_NUMBERS], ids=[m[0] for m in HUGE_NUMBERS]
)
def test_a_huge_number_is_a_parse_error_at_its_line(text: str, line: int, words: str) -> None:
    with pytest.raises(ParseError) as info:
        loads(text, source="n.http")
    assert (info.value.path, info.value.line) == ("n.http", line)
    assert words in info.value.message
    assert len(str(info.value)) < 200  # the number is not printed whole


def test_a_version_with_leading_zeros_is_still_version_1() -> None:
    assert loads(f"# recorder-format: {'0' * 5000}1\n").format_version == 1
    assert loads("# recorder-format:   1  \n").format_version == 1
    # a marker of two words was always a comment, and stays one
    assert loads("# recorder-format: 1 x\n").comments == ("recorder-format: 1 x",)


# ------------------------------------------------------------------------------------- fuzz

NUMBERS = ["1", "2", "0", "01", HUGE, "0" * 5000 + "1", "\u0661", "\u00b2", "-1", ""]
fragments = st.one_of(
    st.sampled_from(
        [
            *("###", "### t", "GET / HTTP/1.1", "HTTP/1.1 200 OK", "", "X-A: 1", "data: 1"),
            *("Content-Type: text/event-stream", "Content-Type: application/json", "{", "}"),
            *("# recorder-body: escaped", "# recorder-body: base64", '"\\n"', "\r", "HTTP/"),
        ]
    ),
    st.sampled_from(NUMBERS).map(lambda n: f"# recorder-format: {n}"),
    st.tuples(st.sampled_from(NUMBERS), st.sampled_from(NUMBERS)).map(
        lambda p: f"# @during exchange {p[0]} frame {p[1]}"
    ),
    st.tuples(st.text(max_size=8), st.integers(0, 3000), st.text(max_size=8)).map(
        lambda p: f"X-B: {p[0]}{' ' * p[1]}{p[2]}"
    ),
    st.text(max_size=20),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(fragments, max_size=25).map("\n".join))
def test_text_parses_or_is_a_parse_error_at_a_line(text: str) -> None:
    try:
        loads(text, source="fuzz.http")
    except ParseError as exc:
        assert exc.path == "fuzz.http"
        assert exc.line is not None and 1 <= exc.line <= text.count("\n") + 2


def test_a_file_is_parsed_with_the_collector_as_the_process_has_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the garbage collector is the process's: a parse in one of --jobs' threads, or in the
    # user's process under the pytest plugin, never switches it
    import gc

    from recorder.format import httpread

    seen: list[bool] = []
    read_exchange = httpread._read_exchange

    def read(*args: object) -> object:
        seen.append(gc.isenabled())
        return read_exchange(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(httpread, "_read_exchange", read)
    assert len(loads(("###\n" + EXCHANGE + "\n") * 3).exchanges) == 3
    assert seen == [True, True, True]
