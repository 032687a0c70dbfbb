"""`recorder check` and `recorder render` under a bounded fuzz (issue 24, item 7; issue 34,
item 9): no input gives a traceback (a lone CR gave one: `read_text` turned it into a line
break the parser had not seen; a `# @after` tag naming a file over 255 bytes gave another),
every problem is told at `file:line`, and what the recorder writes passes, a reply cut short
(`@truncated`, its JSON unfinished) included."""

from __future__ import annotations

import json
import re
from pathlib import Path

import helpers
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recorder.checking import check_paths
from recorder.cli import main
from recorder.format.httpfile import dumps
from recorder.format.model import Exchange, Headers, Request, Response, SseEvent, Transcript

GOLDEN = sorted(helpers.TRANSCRIPTS.glob("*.http"))
SEEDS = [path.read_bytes() for path in GOLDEN[:6]] + [
    path.read_bytes() for path in GOLDEN if "grpc" in path.name or "push" in path.name
]

# what a mutation inserts: the format's own lines and the bytes that broke it
PIECES = [
    b"\r",
    b"\r\n",
    b"\n",
    b"\x00",
    b"\xff",
    b"\xc3",
    b"###",
    b"\n### t\n",
    b"# @truncated\n",
    b"# @during exchange 1 frame 1\n",
    b"# @during exchange 9 frame 99999999999999999999999\n",
    b"# recorder-body: base64\n",
    b"# recorder-body: escaped\n",
    b"\nHTTP/1.1 200 OK\n",
    b"Content-Type: application/json\n",
    b"Content-Type: text/event-stream\n",
    b"data: {\n",
    b'{"a": ',
    b"NaN",
    b"[" * 50,
    "\ufeff".encode(),
    "\u2028".encode(),
    b"# @after " + b"x" * 300 + b".http\n",
    b"# @after 01-fuzz.http\n",
    b"# @after 02-missing.http\n",
    b"# @push config 1\n",
    b"# @push config 99\n",
    b"GRPC /lf.a2a.v1.A2AService/GetTask\n",
    b"\nGRPC 0 OK\n",
    b"# @trailers\n",
    b"# recorder-format: 2\n",
]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A golden transcript with a few bytes inserted, deleted or repeated."""
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        at = draw(st.integers(min_value=0, max_value=len(data)))
        kind = draw(st.sampled_from(["insert", "delete", "repeat", "head", "cut"]))
        if kind == "head":  # a file-level tag's place: after the format marker
            at = data.find(b"\n") + 1
            data[at:at] = draw(st.sampled_from(PIECES))
        elif kind == "cut":  # the file's first lines only (its head, part of an exchange)
            del data[at:]
        elif kind == "insert":
            data[at:at] = draw(st.one_of(st.sampled_from(PIECES), st.binary(max_size=8)))
        elif kind == "delete":
            del data[at : at + draw(st.integers(min_value=1, max_value=40))]
        else:
            data[at:at] = data[at : at + draw(st.integers(min_value=1, max_value=200))]
    return bytes(data)


def assert_checked(path: Path, data: bytes) -> None:
    """Both checks answer with problems at lines of the file, never an exception."""
    lines = data.count(b"\n") + data.count(b"\r") + 2
    for canonical in (False, True):
        count, problems = check_paths([path], canonical=canonical)
        assert count == 1
        for problem in problems:
            assert problem.path == str(path)
            assert problem.line is not None and 1 <= problem.line <= lines, problem


def assert_rendered(path: Path) -> None:
    """`recorder render` prints the file, or says at `file:line` why it cannot, never a
    traceback (an exchange number past the last is a usage error of its own)."""
    runner = CliRunner()
    for reference in (str(path), f"{path}#2"):
        result = runner.invoke(main, ["render", reference])
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            result.exception
        )
        if result.exit_code == 0:
            continue
        assert result.exit_code == 2, result.output
        said = result.stderr.removeprefix("recorder render: ")
        if re.fullmatch(re.escape(str(path)) + r" has \d+ exchanges?: there is no #2\n", said):
            continue
        assert re.match(re.escape(str(path)) + r":\d+: ", said), said


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(mutated())
def test_check_answers_any_mutated_transcript_without_a_traceback(
    tmp_path: Path, data: bytes
) -> None:
    path = tmp_path / "01-fuzz.http"
    path.write_bytes(data)
    assert_checked(path, data)
    assert_rendered(path)


def test_a_lone_cr_is_a_problem_at_its_line_not_a_traceback(tmp_path: Path) -> None:
    seed = SEEDS[1]
    runner = CliRunner()
    for at in range(0, len(seed), max(1, len(seed) // 200)):  # (about 200 places)
        data = seed[:at] + b"\r" + seed[at:]
        path = tmp_path / "cr.http"
        path.write_bytes(data)
        assert_checked(path, data)
    result = runner.invoke(main, ["check", str(path)])
    assert result.exit_code in (0, 2), result.output
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)
JSON = Headers([("Content-Type", "application/json")])


@st.composite
def recorded_exchanges(draw: st.DrawFn) -> Exchange:
    """An exchange as the recorder writes it: JSON bodies, event streams, and replies cut
    short (`truncated`: a JSON body that ends where the upstream broke off)."""
    request = Request(
        method="POST",
        target="/a2a/jsonrpc",
        headers=JSON,
        body=json.dumps(draw(json_values)).encode(),
    )
    kind = draw(st.sampled_from(["json", "cut", "stream"]))
    truncated = kind == "cut" or (kind == "stream" and draw(st.booleans()))
    if kind == "stream":
        frames = draw(st.lists(json_values, max_size=3))
        response = Response(
            status=200,
            reason="OK",
            headers=Headers([("Content-Type", "text/event-stream")]),
            events=tuple(SseEvent(json.dumps(frame)) for frame in frames),
        )
    else:
        text = json.dumps(draw(json_values), indent=2).encode()
        if kind == "cut":
            text = text[: draw(st.integers(min_value=1, max_value=max(1, len(text) - 1)))]
        response = Response(status=200, reason="OK", headers=JSON, body=text)
    return Exchange(request=request, response=response, title="t", truncated=truncated)


@settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(recorded_exchanges(), min_size=1, max_size=4))
def test_what_the_recorder_writes_passes_the_check(
    tmp_path: Path, exchanges: list[Exchange]
) -> None:
    path = tmp_path / "01-recorded.http"
    path.write_text(dumps(Transcript(exchanges=tuple(exchanges))), encoding="utf-8")
    assert check_paths([path], canonical=True) == (1, [])
