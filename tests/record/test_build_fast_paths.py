"""The fast paths of building a recorded exchange give what the slow ones give (pure, no
network): the canonical JSON of a body (`_canonical_json`, one orjson pass, against
`_canonical_json_general` and against Python's `json` alone), the redaction's pre-check on
lowercased bytes (against the case-blind search it replaces), `Headers` look-ups and checks
(against a linear scan, and the checks of a name seen before), and the remembered
Content-Type tests. Tricky inputs from a table and from hypothesis: non-ASCII and invisible
characters, big integers, floats, repeated keys, invalid JSON, form bodies, secrets."""

from __future__ import annotations

import json
import re
import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonref import canonical_layout

from recorder.format.httpfile import _body_lines, _verbatim_safe, dumps_exchange, loads
from recorder.format.jsonbody import _canonical_json, _canonical_json_general, plain_json
from recorder.format.model import (
    _JSON_MEDIA_TYPE,
    Headers,
    Request,
    is_event_stream,
    is_json_media_type,
    media_type,
)
from recorder.record.proxy.call import Call, CallRequest, Routing
from recorder.record.proxy.recording import Recording
from recorder.record.transport.upstream import UpstreamReply
from recorder.secrets.redact import DEFAULT_SECRET_FIELDS, Redactor


def reference_canonical(body: bytes) -> bytes:
    """What the model's canonical JSON body is: the body's own tokens laid out with a
    2-space indent, every scalar as it came, the invisible characters escaped; the body as
    it came when Python's `json` does not read it as UTF-8 JSON (`tests/jsonref.py`)."""
    return canonical_layout(body)


def assert_same_canonical(body: bytes) -> None:
    fast = _canonical_json(body)
    general = _canonical_json_general(body)
    assert fast[0] == general[0] == reference_canonical(body)
    assert repr(fast[1]) == repr(general[1])  # (repr: NaN != NaN)
    assert fast[2] == general[2]


UUID = "3f2b8c1e-9a4d-4e7f-8b6a-1c2d3e4f5a6b"
TRICKY_BODIES = [
    b"",
    b"{}",
    b"[]",
    b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m"}}}',
    b'{"jsonrpc": "2.0", "id": 1, "result": {"id": "' + UUID.encode() + b'"}}',
    b'{\n  "a": 1,\n  "b": [\n    true,\n    null\n  ]\n}',  # canonical already
    b'{\n    "a": 1\n}',  # another indent
    b'{"a":1,"a":2}',
    b'{"a": 1, "a": 2}',
    b'{"a":{"b":1,"b":1}}',
    b'{"a": {"b": 1, "b": 1}}',
    b'{"a" : 1, "a" : 2}',
    b'{\n  "a": 1,\n  "a": 1\n}',
    b'{"a": {"b": 1}, "b": 2}',  # the same key in two objects: no repeat
    b'{"a": ":x", "b": "  :"}',  # strings that start with a colon
    b'{"a": ":x", "a": ":x"}',
    b'{"x": "\\"a\\": 1", "x": 2}',  # an escaped quote before a colon
    b'{"a": [{"k": 1}, {"k": 2}], "n": {"k": {"k": null}}}',
    b'{"x":1.50,"y":1e2,"z":-0.0}',
    b'{"t":1e-7,"u":1e16,"v":0.1}',
    b'{"n":18446744073709551615}',
    b'{"n":18446744073709551616}',
    b'{"n":-9223372036854775809}',
    b'{"n":123456789012345678901234567890}',
    b'{"v":NaN,"w":Infinity,"x":-Infinity}',
    b'{"s":"\\ud800"}',
    b'{"s":"\\ud83d\\ude00"}',
    '{"s":"caf\u00e9 \u2028 \u2029 \x7f \x85 \u00a0 ✓"}'.encode(),
    b'{"s":"\x7f"}',
    b'{"s":"a\\u007fb","t":"\\u2028"}',
    b'{"s":"\\"quoted\\" \\\\ \\/ \\n \\t"}',
    b"\xef\xbb\xbf{}",
    '{"a": "b"}'.encode("utf-16"),
    b'{"broken": "x"',
    b'{"a":1,}',
    b"not json",
    b"\xff\xfe\x00",
    b'"just a string"',
    b"42",
    b"4.5",
    b"null",
    b"[" * 600 + b"]" * 600,
    b"[" * 1100 + b"]" * 1100,
    b'  {"a":1}  ',
    b'{"a":1}\r\n',
    b"api_key=abc&x=1",
]


@pytest.mark.parametrize("body", TRICKY_BODIES)
def test_the_canonical_json_fast_path_gives_what_the_general_one_gives(body: bytes) -> None:
    assert_same_canonical(body)


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
    | st.sampled_from(["\x7f", "\u2028", "\x85", "é", "token", "###", "HTTP/1.1 200"])
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(string.ascii_letters + "é_", max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
_LAYOUTS = [
    {"separators": (",", ":"), "ensure_ascii": False},
    {"separators": (",", ":"), "ensure_ascii": True},
    {"ensure_ascii": False},
    {"indent": 2, "ensure_ascii": False},
    {"indent": 4},
]


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.sampled_from(range(len(_LAYOUTS))), st.booleans())
def test_the_canonical_json_fast_path_agrees_on_any_json(
    value: Any, layout: int, repeat_a_key: bool
) -> None:
    body = json.dumps(value, **_LAYOUTS[layout]).encode()
    if repeat_a_key and body.startswith(b"{") and body != b"{}":
        body = b'{"k":1,"k":2,' + body[1:]
    assert_same_canonical(body)


def test_the_requests_body_is_the_reference_canonical_body() -> None:
    headers = Headers([("Content-Type", "application/json")])
    for body in TRICKY_BODIES:
        assert Request("POST", "/a2a", headers, body).body == reference_canonical(body)


# ------------------------------------------------------------------ redaction pre-check


def case_blind_may_name(redactor: Redactor, body: bytes) -> bool:
    """The pre-check as it was: a case-blind search of the quoted names in the bytes."""
    if not body.isascii() or b"\\" in body:
        return True
    names = b"|".join(re.escape(name.encode()) for name in redactor.fields)
    return re.search(b'"(?:' + names + b')"', body, re.IGNORECASE) is not None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ['"token"', '"TOKEN"', '"Api_Key"', '"passWord"', '"tokens"', '"x"', "token", ":"]
        )
        | st.text(string.printable, max_size=8),
        max_size=8,
    )
)
def test_the_secret_name_pre_check_finds_what_the_case_blind_search_finds(
    parts: list[str],
) -> None:
    body = "".join(parts).encode()
    redactor = Redactor()
    assert redactor._may_name_a_field(body) == case_blind_may_name(redactor, body)


_KEYS = st.sampled_from(
    ["token", "TOKEN", "Api_Key", "api_\u212aey", "tök", "tøken", "id", "text", "\u0130d", "é"]
)
_MEMBERS = st.recursive(
    st.text(st.sampled_from("aé✓\u212a tok"), max_size=6) | st.integers(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(_MEMBERS, st.booleans(), st.sampled_from(["utf-8", "utf-16", "utf-16-le", "utf-32"]))
def test_a_body_the_pre_check_passes_holds_no_secret_member(
    value: Any, ensure_ascii: bool, encoding: str
) -> None:
    # any language, escapes or not, any encoding `json` reads: when the pre-check says no
    # secret name is there, parsing and walking the body finds none either
    body = json.dumps(value, ensure_ascii=ensure_ascii).encode(encoding)
    redactor = Redactor()
    full = redactor._redact_json_body(body)
    if not Redactor()._may_name_a_field(body):
        assert full is body
        assert redactor.seen == {}


@pytest.mark.parametrize(
    "body",
    [
        '{"api_\u212aey": "k-123456"}'.encode(),  # KELVIN SIGN: lowercases to "k"
        '{"TOKEN": "tok-123456", "note": "caf\u00e9 ✓"}'.encode(),
        '{"token": "tok-123456"}'.encode("utf-16"),
        '{"token": "tok-123456"}'.encode("utf-16-le"),  # (no byte order mark)
        b'{"to\\u006ben": "tok-123456"}',
    ],
)
def test_a_secret_member_in_any_spelling_passes_the_pre_check(body: bytes) -> None:
    redactor = Redactor()
    assert redactor._may_name_a_field(body)
    redacted = redactor.redact_body(body, "application/json")
    assert b"123456" not in redacted and redactor.seen


def test_the_pre_check_follows_names_changed_after_the_redactor_was_made() -> None:
    redactor = Redactor()
    body = b'{"SessionKey": "abc"}'
    assert not redactor._may_name_a_field(body)
    redactor.fields = {"SessionKey": "SESSION_KEY"}  # (not normalized: any case still)
    assert redactor._may_name_a_field(body)
    assert redactor.fresh()._may_name_a_field(body)


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'{"Password": "hunter2-long"}', "application/json"),
        (b'{"outer": {"API_KEY": "k-123456"}}', None),
        (b'{"token": "tok-123456", "token": "tok-654321"}', "application/json"),
        (b'{"note": "password is not a member"}', "application/json"),
        (b"password=hunter2-long&x=1", "application/x-www-form-urlencoded"),
        (b'{"Token": "tok-123456",}', "application/json"),  # does not parse: by its text
    ],
)
def test_secrets_in_bodies_are_still_redacted(body: bytes, content_type: str | None) -> None:
    redactor = Redactor()
    redacted = redactor.redact_body(body, content_type)
    for secret in (b"hunter2-long", b"k-123456", b"tok-123456", b"tok-654321"):
        assert secret not in redacted
    assert bool(redactor.seen) == (b"not a member" not in body)


# ------------------------------------------------------------------ headers


def scan_get(pairs: list[tuple[str, str]], name: str) -> str | None:
    for n, v in pairs:
        if n.lower() == name.lower():
            return v.strip()
    return None


_NAMES = st.sampled_from(["Content-Type", "content-type", "CONTENT-TYPE", "Host", "X-A", "x-a"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_NAMES, st.text("ab ;/", max_size=5)), max_size=6), _NAMES)
def test_headers_look_ups_are_those_of_a_scan(pairs: list[tuple[str, str]], name: str) -> None:
    headers = Headers(pairs)
    scanned = scan_get(pairs, name)
    assert headers.get(name) == scanned
    assert headers.get(name, "none") == ("none" if scanned is None else scanned)
    assert (name in headers) == (scanned is not None)


@pytest.mark.parametrize(
    "pairs",
    [
        [("Bad Name", "x")],
        [("#Comment", "x")],
        [("", "x")],
        [("Content-Type", "a\r\nInjected: 1")],
        [("Content-Type", "a\0")],
        [("X-Ok", "1"), ("Ok\n", "x")],
    ],
)
def test_headers_checks_hold_for_names_seen_before(pairs: list[tuple[str, str]]) -> None:
    Headers([("Content-Type", "application/json"), ("X-Ok", "1")])  # seen, and valid
    with pytest.raises(ValueError):
        Headers(pairs)


@pytest.mark.parametrize(
    "parts",
    [
        {"method": "GET\n"},
        {"method": "POST", "target": "/a2a\n"},
        {"method": "POST", "target": "/a2a", "http_version": "HTTP/1.1\n"},
    ],
)
def test_a_request_line_part_ending_in_a_line_break_is_refused(parts: dict[str, str]) -> None:
    # (a `$` in the checks matched before a final line break: the file's line would end early)
    with pytest.raises(ValueError):
        Request(**{"target": "/", **parts})


def test_headers_keep_case_and_strip_values() -> None:
    headers = Headers([("content-TYPE", "  text/plain "), ("Content-Type", "second")])
    assert list(headers) == [("content-TYPE", "text/plain"), ("Content-Type", "second")]
    assert headers.get("CONTENT-type") == "text/plain"
    assert headers.get_all("content-type") == ["text/plain", "second"]
    assert "Content-Type" in headers and "Host" not in headers and 3 not in headers


# ------------------------------------------------------------------ media types


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "",
        "application/json",
        "Application/JSON; charset=utf-8",
        "application/a2a+json",
        "application/jsonx",
        "text/event-stream",
        " TEXT/Event-Stream ;x=1",
        "text/plain",
    ],
)
def test_remembered_media_type_tests_are_the_regular_ones(content_type: str | None) -> None:
    for _ in range(2):  # the first call and the remembered one
        assert is_json_media_type(content_type) == (
            _JSON_MEDIA_TYPE.match(media_type(content_type)) is not None
        )
        assert is_event_stream(content_type) == (media_type(content_type) == "text/event-stream")


# ------------------------------------------------------------------ the whole exchange


async def _no_chunks() -> Any:
    yield b""


async def _no_close() -> None:
    return None


@pytest.mark.parametrize("body", [b for b in TRICKY_BODIES if len(b) < 1000])
def test_a_recorded_exchange_holds_the_reference_bodies_and_reads_back(body: bytes) -> None:
    recording = Recording(None, Redactor(), "upstream:9")  # type: ignore[arg-type]
    call = Call(
        CallRequest(
            method="POST",
            target="/a2a/jsonrpc",
            headers=((b"content-type", b"application/json"), (b"x-api-key", b"key-1234567")),
            body=body,
        )
    )
    call.redactor = Redactor()
    call.routing = Routing(1, None)
    kept = [(b"content-type", b"application/json"), (b"content-length", b"9")]
    upstream = UpstreamReply(200, "OK", kept, _no_chunks(), _no_close)  # type: ignore[arg-type]
    exchange = recording.builder.exchange(call, upstream, kept, body=body)
    assert exchange.request.headers.get("X-API-Key") == "{{X_API_KEY}}"
    assert "Content-Length" not in exchange.response.headers
    # no secret member in these bodies but `api_key=` in a body that is no JSON (kept)
    assert exchange.request.body == reference_canonical(body)
    assert exchange.response.body == reference_canonical(body)
    text = "# recorder-format: 1\n\n" + dumps_exchange(exchange)
    assert loads(text).exchanges == (exchange,)


# ------------------------------------------------------------------ the direct path's JSON


def assert_plain_is_canonical(body: bytes, names: dict[str, str], depth: int = 500) -> bool:
    """`plain_json` gives what `_canonical_json` gives, on a body the redactor leaves as it
    is, and a text that is verbatim in a file; with names found before (`known`) too. True
    when it gave a text."""
    found = plain_json(body, names, depth)
    known: set[str] = set()
    twice = [plain_json(body, names, depth, known) for _ in range(2)]
    assert twice[0] == twice[1] == found
    if found is None:
        return False
    text, value = found
    canonical, expected, strict = _canonical_json(body)
    assert text == canonical and repr(value) == repr(expected) and strict
    redactor = Redactor(fields=names)
    assert redactor.redact_body(body, "application/json") is body and not redactor.seen
    assert _body_lines(text, raw_stream=False) == [text.decode()]
    assert _verbatim_safe(text.decode())
    return True


@pytest.mark.parametrize("body", TRICKY_BODIES)
def test_the_plain_json_of_a_body_is_its_canonical_json(body: bytes) -> None:
    assert_plain_is_canonical(body, dict(DEFAULT_SECRET_FIELDS))


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.sampled_from(range(len(_LAYOUTS))), _MEMBERS)
def test_the_plain_json_agrees_on_any_json(value: Any, layout: int, member: Any) -> None:
    for item in (value, member, [value, {"x": member}]):
        body = json.dumps(item, **_LAYOUTS[layout]).encode()
        assert_plain_is_canonical(body, dict(DEFAULT_SECRET_FIELDS))
        assert_plain_is_canonical(body, {"id": "ID", "tök": "TOK"})


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc":"2.0","id":1,"result":{"id":"t-1","parts":[{"text":"hi"}]}}',
        b'{\n  "a": [\n    1,\n    "###"\n  ]\n}',
        '{"s":"caf\u00e9 \u2028 \x7f ✓","n":-12}'.encode(),
        b'[{"a":{"b":{"c":[]}}},"HTTP/1.1 200 OK"]',
    ],
)
def test_a_common_body_has_a_plain_json(body: bytes) -> None:
    assert assert_plain_is_canonical(body, dict(DEFAULT_SECRET_FIELDS))


@pytest.mark.parametrize(
    "body",
    [
        b'{"token":"t-1"}',
        b'{"a":{"Api_Key":null}}',
        '{"api_\u212aey":"k"}'.encode(),  # KELVIN SIGN: lowercases to "k"
        b'[{"PASSWORD":1}]',
        b'{"n":1.5}',
        b'{"a":[1,2,{"b":1e5}]}',
        b'{"a":1,"a":2}',
        b'{"n":123456789012345678901234567890}',
        b'{"s":"\\ud800"}',
        b"not json",
        b"",
    ],
)
def test_a_body_with_a_secret_name_or_a_float_has_none(body: bytes) -> None:
    assert plain_json(body, dict(DEFAULT_SECRET_FIELDS), 500) is None
    known = {"a", "n", "s"}  # (names found before: a secret one is still found)
    assert plain_json(body, dict(DEFAULT_SECRET_FIELDS), 500, known) is None


def test_a_body_nested_deeper_than_told_has_none() -> None:
    deep = b"[" * 40 + b"{}" + b"]" * 40
    assert plain_json(deep, {}, 41) is not None
    assert plain_json(deep, {}, 40) is None
    wide = json.dumps([[{"a": [1]}] for _ in range(30)]).encode()  # many, not deep
    assert plain_json(wide, {}, 4) is not None
    assert plain_json(wide, {}, 3) is None
