"""Property tests: both round-trip directions, and a fuzz run of the parser."""

from __future__ import annotations

import contextlib
import json
import string
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recorder import (
    CallTag,
    Exchange,
    Headers,
    ParseError,
    Request,
    Response,
    SseEvent,
    Transcript,
    dumps,
    loads,
)

TCHAR = string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~"
one_line = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=40
)


def _not_an_after_tag(comment: str) -> bool:
    """A comment whose first word is `@after` (or `@downstream`) is read as the file's
    `@after NAME.http` tag (one naming no such file is an error,
    tests/core/test_after_tags.py), or its `@downstream NAME URL`: not a comment."""
    return comment.split(maxsplit=1)[:1] not in (["@after"], ["@downstream"])


methods = st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,9}", fullmatch=True)
targets = st.one_of(
    st.from_regex(r"/[!-~]{0,40}", fullmatch=True),
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")),
        min_size=1,
        max_size=30,
    ).map(lambda s: "/" + s),
)
header_names = st.text(alphabet=TCHAR, min_size=1, max_size=20).filter(lambda n: n[0] != "#")
header_values = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\0"),
    max_size=40,
)
other_headers = st.lists(
    st.tuples(header_names, header_values).filter(lambda h: h[0].lower() != "content-type"),
    max_size=4,
)
json_keys = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.text(st.characters(blacklist_categories=("Cs",)), max_size=8), children, max_size=4
        )
    ),
    max_leaves=12,
)
text_bodies = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)
no_cr = st.characters(blacklist_categories=("Cs",), blacklist_characters="\r")
sse_events = (
    st.fixed_dictionaries(
        {
            "data": st.none()
            | st.text(
                st.characters(blacklist_categories=("Cs",), blacklist_characters="\r"), max_size=40
            ),
            "event": st.none() | one_line,
            "id": st.none() | one_line.filter(lambda s: "\0" not in s),
            "retry": st.none() | st.integers(min_value=0, max_value=10**6),
            "comments": st.lists(one_line, max_size=2).map(tuple),
        }
    )
    .filter(lambda kw: any(v not in (None, ()) for v in kw.values()))
    .map(lambda kw: SseEvent(**kw))
)


@st.composite
def bodies(draw: st.DrawFn, *, response: bool) -> tuple[list[tuple[str, str]], dict[str, object]]:
    """(content-type headers, keyword arguments for the body)."""
    kinds = ["none", "json", "text", "binary", "bad-json"]
    if response:
        kinds += ["sse", "raw-sse"]
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return [], {}
    if kind == "json":
        ctype = draw(st.sampled_from(["application/json", "application/a2a+json"]))
        return [("Content-Type", ctype)], {"body": json.dumps(draw(json_values)).encode()}
    if kind == "bad-json":
        return [("Content-Type", "application/json")], {"body": draw(text_bodies).encode()}
    if kind == "text":
        return [("Content-Type", "text/plain")], {"body": draw(text_bodies).encode()}
    if kind == "binary":
        return [("Content-Type", "application/octet-stream")], {
            "body": draw(st.binary(max_size=300))
        }
    if kind == "sse":
        events = draw(st.lists(sse_events, max_size=5))
        return [("Content-Type", "text/event-stream")], {"events": tuple(events)}
    return [("Content-Type", "text/event-stream")], {"body": draw(st.binary(max_size=100))}


# (filtered strategies built once, here: hypothesis reads a filter's source each time one is
# built, which inside the composites below was most of the property tests' time)
reasons = one_line.filter(lambda s: "\0" not in s)
exchange_comments = one_line.filter(
    lambda s: (
        s.strip() != "@truncated"
        and not s.strip().startswith("@during")
        and s.split(maxsplit=1)[:1] not in (["@push"], ["@call"])
        and _not_an_after_tag(s)  # (a file's tag: an error in an exchange)
    )
)


@st.composite
def exchanges(draw: st.DrawFn) -> Exchange:
    req_type, req_body = draw(bodies(response=False))
    res_type, res_body = draw(bodies(response=True))
    request = Request(
        method=draw(methods),
        target=draw(targets),
        headers=Headers(draw(other_headers) + req_type),
        http_version=draw(st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/2"])),
        **req_body,  # type: ignore[arg-type]
    )
    response = Response(
        status=draw(st.integers(min_value=100, max_value=599)),
        reason=draw(reasons),
        headers=Headers(req_type[:0] + res_type + draw(other_headers)),
        **res_body,  # type: ignore[arg-type]
    )
    # tags are read as tags: "@truncated" sets `truncated`, a "@during" must name an earlier
    # exchange (tests/test_httpfile_errors.py)
    comments = draw(st.lists(exchange_comments, max_size=2))
    return Exchange(
        request=request,
        response=response,
        title=draw(one_line),
        comments=tuple(comments),
        truncated=draw(st.booleans()),
    )


metadata_names = st.text(
    alphabet=string.ascii_lowercase + string.digits + "-_.", min_size=1, max_size=16
)
metadata = st.lists(st.tuples(metadata_names, header_values), max_size=3)
grpc_targets = st.one_of(
    st.sampled_from(
        [
            "/lf.a2a.v1.A2AService/SendMessage",
            "/lf.a2a.v1.A2AService/SendStreamingMessage",
            "/lf.a2a.v1.A2AService/GetTask",
        ]
    ),
    targets,
)


@st.composite
def grpc_exchanges(draw: st.DrawFn) -> Exchange:
    """A gRPC call: its metadata, a JSON (or any) message, a status 0-16, a reply message or
    status, or a stream's frames, and trailing metadata (the `# @trailers` block)."""
    request_body = draw(
        st.one_of(
            st.builds(lambda v: json.dumps(v).encode(), json_values),
            text_bodies.map(str.encode),
            st.binary(max_size=60),
        )
    )
    request = Request(
        method="GRPC",
        target=draw(grpc_targets),
        headers=Headers(draw(metadata)),
        body=request_body,
        http_version="",
    )
    kind = draw(st.sampled_from(["json", "text", "binary", "frames", "none"]))
    content: dict[str, object] = {}
    if kind == "json":
        content["body"] = json.dumps(draw(json_values)).encode()
    elif kind == "text":  # a hand-edited body: "data: x", "# @trailers" … must stay the body
        lines = st.sampled_from(["data: x", "# @trailers", ": c", "GRPC 0 OK", "{"]) | one_line
        content["body"] = "\n".join(draw(st.lists(lines, min_size=1, max_size=4))).encode()
    elif kind == "binary":
        content["body"] = draw(st.binary(min_size=1, max_size=60))
    elif kind == "frames":
        content["events"] = tuple(draw(st.lists(sse_events, max_size=4)))
    response = Response(
        status=draw(st.integers(min_value=0, max_value=16)),
        reason=draw(reasons),
        headers=Headers(draw(metadata)),
        http_version="GRPC",
        trailers=Headers(draw(metadata)),
        **content,  # type: ignore[arg-type]
    )
    return Exchange(request=request, response=response, title=draw(one_line))


downstream_names = st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,8}", fullmatch=True)


@st.composite
def pushed(draw: st.DrawFn) -> tuple[Exchange, ...]:
    """Exchanges, some of them deliveries (`@push config N`) naming an earlier one, some of
    them calls (`@call NAME exchange N [frame K] [ambiguous]`) naming an earlier exchange
    of the client's."""
    found = draw(st.lists(st.one_of(exchanges(), grpc_exchanges()), max_size=5))
    made: list[Exchange] = []
    for index, exchange in enumerate(found):
        clients = [n for n, e in enumerate(made, 1) if not e.sent_by_agent]
        kind = draw(st.sampled_from(["plain", "push", "call"]))
        if kind == "push" and index and not exchange.request.is_grpc:
            exchange = replace(exchange, push_config=draw(st.integers(1, index)))
        elif kind == "call" and clients and not exchange.request.is_grpc:
            tag = CallTag(
                draw(downstream_names),
                draw(st.sampled_from(clients)),
                draw(st.none() | st.integers(1, 10**6)),
                draw(st.booleans()),
            )
            exchange = replace(exchange, call=tag)
        made.append(exchange)
    return tuple(made)


downstream_tags = st.builds(
    "@downstream {} {}".format,
    downstream_names,
    st.from_regex(r"https?://[!-~]{1,30}", fullmatch=True),
)
transcripts = st.builds(
    Transcript,
    exchanges=pushed(),
    comments=st.lists(one_line.filter(_not_an_after_tag) | downstream_tags, max_size=3).map(tuple),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transcripts)
def test_loads_of_dumps_is_identity(transcript: Transcript) -> None:
    text = dumps(transcript)
    assert loads(text) == transcript


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transcripts)
def test_dumps_of_loads_is_identity_on_canonical_text(transcript: Transcript) -> None:
    canonical = dumps(transcript)
    assert dumps(loads(canonical)) == canonical
    crlf = canonical.replace("\n", "\r\n")
    assert dumps(loads(crlf)) == canonical


# --------------------------------------------------------------------------- fuzz

FRAGMENTS = [
    "###",
    "### title",
    "# comment",
    "# @truncated",
    "# recorder-format: 1",
    "# recorder-format: 2",
    "# recorder-body: base64",
    "# recorder-body: escaped",
    "# recorder-body: zip",
    "POST /a2a/jsonrpc HTTP/1.1",
    "GRPC /lf.a2a.v1.A2AService/SendMessage",
    "GRPC 0 OK",
    "GRPC 5 NOT_FOUND",
    "GRPC 99 Bad",
    "GRPC x",
    "# @trailers",
    "x-trailer: 1",
    "# @call model exchange 1",
    "# @call model exchange 1 frame 2 ambiguous",
    "# @call model exchange 9",
    "# @downstream model http://127.0.0.1:9/v1",
    "# @downstream",
    "GET / HTTP/9.9",
    "GET",
    "HTTP/1.1 200 OK",
    "HTTP/1.1 099 Low",
    "HTTP/1.1 2000",
    "Content-Type: application/json",
    "Content-Type: text/event-stream",
    "Bad Header",
    " folded",
    "",
    "{",
    '  "a": 1',
    "}",
    "data: {}",
    "event: error",
    "id: 1",
    "retry: x",
    "retry: 10",
    ": ping",
    "bogus: field",
    '"escaped\\n"',
    "AAAA",
    "A=A=",
    "\ufeff",
    "\x00",
    "\r",
]
fuzz_lines = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=20)), max_size=30).map(
    "\n".join
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fuzz_lines)
def test_the_parser_raises_nothing_but_parse_error(text: str) -> None:
    try:
        transcript = loads(text, source="fuzz.http")
    except ParseError as exc:
        assert exc.path == "fuzz.http"
        assert exc.line is None or 1 <= exc.line <= text.count("\n") + 2
        return
    # whatever parses, the writer writes, and that is a fixed point
    canonical = dumps(transcript)
    assert loads(canonical) == transcript
    assert dumps(loads(canonical)) == canonical


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_break_the_parser(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    with contextlib.suppress(ParseError):
        loads(text)
