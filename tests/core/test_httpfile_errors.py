"""Malformed input: the exact line reported and what the message says was expected there."""

from __future__ import annotations

from pathlib import Path

import pytest

from recorder import ParseError, load, loads

REQUEST = "POST /a2a/jsonrpc HTTP/1.1\nContent-Type: application/json\n\n{}\n\n"

EXCHANGE = "GET / HTTP/1.1\n\nHTTP/1.1 200 OK\n\n"

GRPC_CALL = "GRPC /lf.a2a.v1.A2AService/GetTask\n\n{}\n\n"

MALFORMED = [
    # (name, text, line, words the message must contain)
    (
        "a gRPC call answered by an HTTP status line",
        "### a\n" + GRPC_CALL + "HTTP/1.1 200 OK\n",
        1,
        "the request and the reply are of different bindings",
    ),
    ("a gRPC status past 16", "### a\n" + GRPC_CALL + "GRPC 17 NOPE\n", 6, "expected 0 to 16"),
    (
        "a trailer line that is not one",
        "### a\n" + GRPC_CALL + "GRPC 0 OK\n\n{}\n\n# @trailers\nx-a: 1\nnot a trailer\n",
        12,
        'expected a trailer line such as "x-request-id: 7" after "# @trailers"',
    ),
    (
        "@during names a later exchange",
        "### a\n" + EXCHANGE + "### b\n# @during exchange 5 frame 1\n" + EXCHANGE,
        7,
        "@during exchange 5: no earlier exchange 5 (this is exchange 2)",
    ),
    (
        "@during names its own exchange",
        "### a\n# @during exchange 1 frame 1\n" + EXCHANGE,
        2,
        "no earlier exchange 1 (this is exchange 1)",
    ),
    (
        "@during misspelt",
        "### a\n" + EXCHANGE + "### b\n# @during exchange two\n" + EXCHANGE,
        7,
        'a @during tag reads "@during exchange N frame K", got "@during exchange two"',
    ),
    (
        "@after names a path",
        "# recorder-format: 1\n# @after ../02-a.http\n### a\n" + EXCHANGE,
        2,
        'a @after tag names a transcript of the same folder, such as "@after',
    ),
    (
        "@after names two files",
        "# @after 02-a.http 03-b.http\n### a\n" + EXCHANGE,
        1,
        'got "@after 02-a.http 03-b.http"',
    ),
    (
        "@after inside an exchange",
        "### a\n# @after 02-a.http\n" + EXCHANGE,
        2,
        "a @after tag belongs to the file: put it in the head",
    ),
    (
        "request before any ###",
        "# recorder-format: 1\nPOST / HTTP/1.1\n",
        2,
        'expected "###"',
    ),
    ("junk before any ###", "hello\n", 1, 'expected "###" to start an exchange'),
    (
        "unknown format version",
        "# recorder-format: 2\n### x\n",
        1,
        "unsupported transcript format version 2",
    ),
    ("marker without number", "# recorder-format: one\n", 1, "needs a version number"),
    ("### then nothing", "### x\n", 2, "expected a request line"),
    ("### then ###", "### x\n### y\nGET / HTTP/1.1\n\nHTTP/1.1 200 OK\n", 2, "after the"),
    (
        "not a request line",
        "### x\nPOST\n\nHTTP/1.1 200 OK\n",
        2,
        'expected a request line such as "POST /a2a/jsonrpc HTTP/1.1", got "POST"',
    ),
    (
        "bad header line",
        "### x\nGET / HTTP/1.1\nHost localhost\n\nHTTP/1.1 200 OK\n",
        3,
        'expected a header line such as "Content-Type: application/json"',
    ),
    (
        "folded header",
        "### x\nGET / HTTP/1.1\nX-A: 1\n  2\n\nHTTP/1.1 200 OK\n",
        4,
        "obsolete line folding",
    ),
    (
        "no response at the end of the file",
        "### x\n" + REQUEST,
        7,
        'expected a status line such as "HTTP/1.1 200 OK" after the request body',
    ),
    (
        "no response before the next ###",
        "### x\n" + REQUEST + "### y\n",
        7,
        "(the request starts at line 2)",
    ),
    (
        "status code out of range",
        "### x\nGET / HTTP/1.1\n\nHTTP/1.1 099 Low\n",
        4,
        "invalid status code 099",
    ),
    (
        "bad header in the response",
        "### x\nGET / HTTP/1.1\n\nHTTP/1.1 200 OK\nnot a header\n",
        5,
        "expected a header line",
    ),
    (
        "unknown SSE field",
        "### x\nGET / HTTP/1.1\n\nHTTP/1.1 200 OK\nContent-Type: text/event-stream\n\n"
        "data: 1\n\nbogus: 2\n",
        9,
        "unknown SSE field 'bogus'",
    ),
    (
        "non-numeric SSE retry",
        "### x\nGET / HTTP/1.1\n\nHTTP/1.1 200 OK\nContent-Type: text/event-stream\n\n"
        "retry: soon\n",
        7,
        "retry must be digits",
    ),
    (
        "bad base64",
        "### x\nGET / HTTP/1.1\n\nHTTP/1.1 200 OK\n\n# recorder-body: base64\n@@@@\n",
        7,
        "base64",
    ),
    (
        "escaped body that is not a JSON string",
        "### x\nGET / HTTP/1.1\n\nHTTP/1.1 200 OK\n\n# recorder-body: escaped\n[1]\n",
        7,
        "must be a JSON string",
    ),
    (
        "unknown body encoding",
        "### x\nPOST / HTTP/1.1\n\n# recorder-body: gzip\nxx\n\nHTTP/1.1 200 OK\n",
        4,
        "unknown body encoding 'gzip'",
    ),
    ("lone CR in a file comment", "# a\rb\n### x\n", 1, "carriage return (CR) alone"),
    (
        "lone CR in an exchange comment",
        "### x\n# a\rb\nGET / HTTP/1.1\n\nHTTP/1.1 200 OK\n",
        2,
        "a comment holds a carriage return",
    ),
    ("lone CR in a title", "### a\rb\n", 1, "a title holds a carriage return"),
    (
        "invalid header name in the model",
        "### x\nGET / HTTP/1.1\nX-Ok: 1\n\nHTTP/1.1 200 OK\nContent-Type: text/event-stream\n"
        "\n: c\nevent: a\nevent: b\n",
        10,
        "second 'event' line",
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "words"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_malformed_input_names_the_line_and_what_was_expected(
    text: str, line: int, words: str
) -> None:
    with pytest.raises(ParseError) as info:
        loads(text, source="t/11-errors.http")
    error = info.value
    assert (error.path, error.line) == ("t/11-errors.http", line), str(error)
    assert words in error.message
    assert str(error).startswith(f"t/11-errors.http:{line}: ")


@pytest.mark.parametrize(
    ("text", "line", "words"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_crlf_input_reports_the_same_lines(text: str, line: int, words: str) -> None:
    with pytest.raises(ParseError) as info:
        loads(text.replace("\n", "\r\n"))
    assert info.value.line == line


def test_a_file_that_is_not_utf8_names_the_line_of_the_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "bad.http"
    path.write_bytes(b"### x\nGET / HTTP/1.1\n\nHTTP/1.1 200 OK\n\n\xff\xfe\n")
    with pytest.raises(ParseError) as info:
        load(path)
    assert (info.value.path, info.value.line) == (str(path), 6)
    assert "not UTF-8" in info.value.message


def test_a_missing_file_is_a_parse_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="cannot read the file"):
        load(tmp_path / "nope.http")


def test_parse_error_survives_pickling() -> None:
    import pickle

    error = ParseError("boom", path="a.http", line=3)
    again = pickle.loads(pickle.dumps(error))
    assert (again.message, again.path, again.line, str(again)) == (
        "boom",
        "a.http",
        3,
        "a.http:3: boom",
    )
