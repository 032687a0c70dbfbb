"""The recording writer's direct path (`recorder.record.proxy.direct`) writes what the general
path writes (pure, no network): for any exchange, the block made straight from its bytes is
`dumps_exchange` of the exchange the model builds, with the same operation and title, or
there is no block and the general path takes it (and raises the model's errors). Tricky
exchanges from a table and from hypothesis: header spellings and values, bodies of every kind
(JSON with floats, repeated keys, escapes; text that cannot be verbatim; bytes that are no
UTF-8), secrets in headers, queries and bodies, odd methods, targets, statuses, reasons and
descriptions. Each common case must take the direct path, so that these tests compare
something."""

from __future__ import annotations

import string
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder.format.httpfile import dumps_exchange, loads
from recorder.record.lineage import Lineage
from recorder.record.proxy import direct
from recorder.record.proxy.call import Call, CallRequest, Routing
from recorder.record.proxy.recording import Recording
from recorder.record.store.filetext import Block
from recorder.record.transport.upstream import UpstreamReply
from recorder.secrets.redact import Redactor

HOST = "upstream.test:9"
JSON = (b"content-type", b"application/json")
TEXT = (b"content-type", b"text/plain")
REQUEST = b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"parts":[]}}}'
REPLY = b'{"jsonrpc":"2.0","id":1,"result":{"id":"t-1","status":{"state":"TASK_STATE_WORKING"}}}'
REPLY_HEADERS = [(b"date", b"Mon, 30 Nov 2026 23:00:00 GMT"), (b"content-length", b"90"), JSON]


def _call(parts: dict[str, Any], recording: Recording) -> Call:
    call = Call(
        CallRequest(
            method=parts.get("method", "POST"),
            target=parts.get("target", "/a2a/jsonrpc"),
            headers=tuple(parts.get("headers", [JSON])),
            body=parts.get("body", REQUEST),
        )
    )
    call.description = parts.get("description")
    call.redactor = recording._redactor.fresh()
    call.routing = Routing(1, None)  # (not begun: a first exchange of no file)
    return call


def _upstream(parts: dict[str, Any]) -> UpstreamReply:
    kept = parts.get("kept", REPLY_HEADERS)
    status, reason = parts.get("status", 200), parts.get("reason", "OK")
    return UpstreamReply(status, reason, kept, None, None)  # type: ignore[arg-type]


def outcome(
    recording: Recording, parts: dict[str, Any], *, settled: bool = False
) -> tuple[Any, ...]:
    """(the text, operation, title, secrets seen, secrets sent), and the block or None, by the
    direct path as the writer takes it (`Recording._built`); `settled`: with the reply's body
    as the proxy read it when it learned its values (`Recording.settle`)."""
    call = _call(parts, recording)
    upstream = _upstream(parts)
    kept = list(parts.get("kept", REPLY_HEADERS))
    reply = parts.get("reply", REPLY)
    if settled:
        call.reply.parsed = Lineage().learn_body(reply, "file", frozenset())
    try:
        built = recording.builder.built(call, upstream, kept, reply)
    except ValueError as exc:
        return ("error", type(exc))
    assert call.reply.parsed is None or not isinstance(built, Block)  # (not held on)
    block = built.text if isinstance(built, Block) else None
    text = built.text if isinstance(built, Block) else dumps_exchange(built)
    assert call.recorded is not None
    seen, sent = call.redactor.seen, call.recorded.sent_secrets
    return (text, call.recorded.operation, call.recorded.title.strip(), seen, sent), block


def general(recording: Recording, parts: dict[str, Any]) -> tuple[Any, ...]:
    """The same by the model (`Builder.exchange`, then `dumps_exchange`)."""
    call = _call(parts, recording)
    kept = list(parts.get("kept", REPLY_HEADERS))
    try:
        exchange = recording.builder.exchange(
            call, _upstream(parts), kept, body=parts.get("reply", REPLY)
        )
    except ValueError as exc:
        return ("error", type(exc))
    text = dumps_exchange(exchange)
    # (the text reads back as the exchange: what the direct path writes is a transcript)
    assert loads("# recorder-format: 1\n\n" + text).exchanges == (exchange,)
    assert call.recorded is not None
    seen, sent = call.redactor.seen, call.recorded.sent_secrets
    return (text, call.recorded.operation, call.recorded.title.strip(), seen, sent)


def assert_same(parts: dict[str, Any], recording: Recording | None = None) -> bool:
    """The direct path and the general one agree on `parts`, three times (the second time with
    the header lines remembered, the third with the reply read when its values were learned);
    True when the direct path made the block."""
    recording = recording or Recording(None, Redactor(), HOST)  # type: ignore[arg-type]
    expected = general(recording, parts)
    taken = []
    for settled in (False, False, True):
        found = outcome(recording, parts, settled=settled)
        if expected[0] == "error":
            assert found == expected
            taken.append(False)
            continue
        result, block = found
        assert result == expected
        taken.append(block is not None)
    assert taken[0] == taken[1] == taken[2]
    return taken[0]


# exchanges the direct path takes
COMMON: list[dict[str, Any]] = [
    {},
    {"description": "line\nbreak"},  # (folded by `split`)
    {"body": b'{"method":"x","TOKEN":null}'},  # (a secret name, no value: nothing to take)
    {"description": "  read   the\treview  back "},
    {"description": "   "},
    {"target": "/a2a/jsonrpc?trace=1&x=a%2Bb"},
    {"method": "GET", "target": "/.well-known/agent-card.json", "headers": [], "body": b""},
    {"method": "GET", "target": "/v1/tasks/t-1", "headers": [(b"accept", b"*/*")], "body": b""},
    {"headers": [(b"content-type", b"application/json; charset=utf-8")]},
    {"headers": [(b"Content-Type", b"application/a2a+json"), (b"X-Custom", b"Kept")]},
    {"headers": [JSON, (b"content-type", b"text/plain")]},  # the first one counts
    {"headers": [(b"content-type", b"text/plain"), JSON]},
    {"headers": [JSON, (b"etag", b'"x"'), (b"a2a-version", b"1.0"), (b"x-empty", b"")]},
    {"headers": [JSON, (b"x-spaced", b"  value with spaces  "), (b"content-length", b"87")]},
    {"headers": [JSON, (b"x-latin", "caf\u00e9".encode("latin-1"))]},
    {"headers": [JSON, (b"x-utf8", "caf\u00e9 \u2713".encode())]},
    {"body": b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t"}}'},
    {"body": b'{\n  "jsonrpc": "2.0",\n  "id": 1,\n  "method": "GetTask"\n}'},
    {"body": '{"method":"SendMessage","text":"caf\u00e9 \u2028 \x7f ✓"}'.encode()},
    {"body": b'{"method":"SendMessage","n":1.50,"m":1e-7}'},
    {"body": b'{"method":"SendMessage","n":123456789012345678901234567890}'},
    {"body": b'{"method":"SendMessage","method":"GetTask"}'},
    {"body": b'{"method":"Send\\nMessage"}'},
    {"body": b'{"s":"\\ud800"}'},
    {"body": b'{"method":"SendMessage","x":"\\u0000"}'},
    {"body": b"[1, 2, 3]", "method": "PUT"},
    {"body": b"", "headers": [JSON]},
    {"headers": [(b"content-type", b"text/plain")], "body": b'{"a":1}'},
    {"headers": [(b"content-type", b"text/plain")], "body": b"###\nHTTP/1.1 200 OK\n"},
    {"headers": [(b"content-type", b"text/plain")], "body": b"line\r\nwith cr"},
    {"headers": [(b"content-type", b"text/plain")], "body": b"# recorder-body: escaped"},
    {"headers": [(b"content-type", b"text/plain")], "body": b"\xff\xfe\x00 bytes"},
    {"headers": [], "body": "\x7f\u2028 \t tabs and DEL".encode()},
    {"reply": b'{"jsonrpc":"2.0","result":{"v":0.1,"w":1e16}}'},
    {"reply": b"plain text reply\n", "kept": [(b"content-type", b"text/plain")]},
    {"reply": b"", "kept": [], "status": 204, "reason": "No Content"},
    {"reply": b"<html>###</html>", "kept": [(b"content-type", b"text/html")]},
    {"reply": b"\x00\x01\x02", "kept": [(b"content-type", b"application/octet-stream")]},
    {"reply": REPLY, "kept": [JSON, (b"content-length", b"90"), (b"Content-Length", b"90")]},
    {"reply": REPLY, "kept": [JSON, (b"x-request-id", b"r-1"), (b"server", b"uvicorn")]},
    {"status": 404, "reason": "  Not Found  "},
    {"status": 500, "reason": ""},
    {"status": 299, "reason": "Whatever It Says"},
    {"method": "DELETE", "target": "/v1/tasks/t-1/pushNotificationConfigs/c-1", "body": b""},
    # secret headers: their placeholders, their values remembered for the scrub
    {"headers": [JSON, (b"authorization", b"Bearer tok-1234567")]},
    {"headers": [JSON, (b"Authorization", b"Bearer tok-1234567")]},
    {"headers": [JSON, (b"x-api-key", b"k-1234567")]},
    {"headers": [JSON, (b"cookie", b"sid=abc123456; theme=dark")]},
    {"kept": [JSON, (b"set-cookie", b"sid=abc123456; Path=/")]},
    {"headers": [JSON, (b"authorization", b"Bearer")]},  # (a scheme alone: no secret)
    {"headers": [JSON, (b"authorization", b"tok-1234567")]},  # (no scheme: all secret)
    {"headers": [JSON, (b"authorization", b"  Bearer   tok-1234567  ")]},
    {"headers": [JSON, (b"x-api-key", b"")]},
    {"headers": [JSON, (b"x-api-key", b"{{X_API_KEY}}")]},
    {
        "headers": [TEXT, (b"x-api-key", b"k-1"), (b"x-api-key", b"k-2")],
        "body": "caf\u00e9".encode(),
    },
    {"headers": [JSON, (b"x-api-key", b"k-1234567")], "body": b'{"echo": "k-1234567"}'},
    {"kept": [JSON, (b"set-cookie", b"a=1"), (b"set-cookie", b"b=2; HttpOnly")]},
    # (a method name with a line break names no operation: the title is `POST /a2a/jsonrpc`)
    {"body": b'{"method":"SendMessage\\n"}'},
]
# exchanges it leaves to the general path: secrets, event streams, what the model refuses,
# bodies under a JSON type that are no UTF-8 JSON, uncommon methods
UNCOMMON: list[dict[str, Any]] = [
    # (what the attempt took out before it gave up is not left in the call's redactor)
    {"headers": [JSON, (b"x-api-key", b"k-1234567")], "reply": b'{"token": "t-1234567"}'},
    {"headers": [JSON, (b"x-api-key", b"k-1234567")], "target": "/a?api_key=k-7654321"},
    {
        "headers": [(b"content-type", b"application/octet-stream"), (b"x-api-key", b"k-1234567")],
        "body": b"\xffk-1234567\xfe",  # (bytes that are no text: the secret taken out of them)
    },
    {"body": '{"a": "b"}'.encode("utf-16")},
    {"body": b'{"broken": '},
    {"body": b"not json at all"},
    {"body": b"###\nHTTP/1.1 200 OK\n"},
    {"body": b"line\r\nwith cr"},
    {"body": b"\xff\xfe\x00 bytes"},
    {"body": b"# recorder-body: escaped"},
    {"method": "BREW", "target": "/pot"},
    {"target": "/a2a/jsonrpc?api_key=k-1234567"},
    {"body": b'{"method":"SetTaskPushNotificationConfig","token":"tok-1234567"}'},
    {"body": b'{"method":"x","to\\u006ben":"tok-1234567"}'},
    {
        "body": b"password=hunter2-long&x=1",
        "headers": [(b"content-type", b"application/x-www-form-urlencoded")],
    },
    {"reply": b'{"result":{"credentials":"c-1234567"}}'},
    # secrets in less obvious places (issue 24): a member named twice, a URL's query inside a
    # string, JSON inside a string, a push config's url, a multipart form field
    {"body": b'{"password":"first-123456","password":"second-123456"}'},
    {"body": b'{"callback":"https://h/cb?token=t-1234567&x=1"}'},
    {"body": b'{"params":"{\\"password\\": \\"p-1234567\\"}"}'},
    {"body": b'{"taskId":"t","url":"https://h/cb/aB3dE5fG7hJ9kL1mN3pQ"}'},
    {
        "body": b'--b\r\nContent-Disposition: form-data; name="password"\r\n\r\n'
        b"p-1234567\r\n--b--\r\n",
        "headers": [(b"content-type", b"multipart/form-data; boundary=b")],
    },
    {"reply": b"data: {}\n\n", "kept": [(b"content-type", b"text/event-stream")]},
    {"headers": [JSON, (b"bad name", b"x")]},
    {"headers": [JSON, (b"#comment", b"x")]},
    {"headers": [JSON, (b"x-broken", b"a\r\nInjected: 1")]},
    {"headers": [JSON, (b"x-nul", b"a\x00b")]},
    {"kept": [JSON, (b"x-broken", b"a\nb")]},
    {"method": "GET\n"},
    {"method": "B REW"},
    {"target": "/a2a jsonrpc"},
    {"target": "/a2a\n"},
    {"target": ""},
    {"status": 42},
    {"status": 1000},
    {"reason": "OK\r\nInjected: 1"},
    {"reason": "O\x00K"},
    # a literal that reads as a placeholder: the redactor escapes it (`recorder.format.literals`)
    {"body": b'{"text":"Hello {{user_name}}"}'},
    {"reply": b'{"echo":"{{user_name}}"}'},
    {"headers": [JSON, (b"x-template", b"{{user_name}}")]},
    {"target": "/a2a/jsonrpc?q={{user_name}}"},
]


@pytest.mark.parametrize("parts", COMMON, ids=range(len(COMMON)))
def test_a_common_exchange_takes_the_direct_path_to_the_same_text(parts: dict[str, Any]) -> None:
    assert assert_same(parts), "a common exchange takes the direct path"


@pytest.mark.parametrize("parts", UNCOMMON, ids=range(len(UNCOMMON)))
def test_an_uncommon_exchange_gets_what_the_general_path_gives(parts: dict[str, Any]) -> None:
    assert not assert_same(parts), "an uncommon exchange takes the general path"


def test_a_secret_header_value_is_not_remembered() -> None:
    recording = Recording(None, Redactor(), HOST)  # type: ignore[arg-type]
    secret = (b"authorization", b"Bearer tok-1234567")
    assert assert_same({"headers": [JSON, secret]}, recording)
    remembered = recording.builder.direct._request_lines
    assert secret not in remembered
    assert all(b"tok-1234567" not in value for _, value in remembered)


def test_the_secret_names_of_the_rules_are_those_of_the_direct_path() -> None:
    redactor = Redactor(headers={"x-session": "SESSION"}, fields={"pin": "PIN"})
    recording = Recording(None, redactor, HOST)  # type: ignore[arg-type]
    found = outcome(recording, {"headers": [JSON, (b"X-Session", b"s-1234567")]})
    assert "X-Session: {{SESSION}}" in found[0][0] and found[1] is not None
    assert assert_same({"headers": [JSON, (b"X-Session", b"s-1234567")]}, recording)
    assert not assert_same({"body": b'{"method":"x","PIN":"1234"}'}, recording)
    # names the rules left out are no secret here: common
    assert assert_same({"headers": [JSON, (b"authorization", b"Bearer t-1234567")]}, recording)
    assert assert_same({"body": b'{"method":"x","token":"t-1234567"}'}, recording)


def test_a_call_with_other_secret_names_takes_the_general_path() -> None:
    recording = Recording(None, Redactor(), HOST)  # type: ignore[arg-type]
    call = _call({"headers": [JSON, (b"x-session", b"s-1234567")]}, recording)
    call.redactor = Redactor(headers={"x-session": "SESSION"})
    built = recording.builder.built(call, _upstream({}), list(REPLY_HEADERS), REPLY)
    assert not isinstance(built, Block)
    assert built.request.headers.get("X-Session") == "{{SESSION}}"


def test_a_call_whose_redactor_saw_secrets_already_takes_the_general_path() -> None:
    recording = Recording(None, Redactor(), HOST)  # type: ignore[arg-type]
    call = _call({"target": "/a?api_key=k-1234567"}, recording)
    assert call.shown == "POST /a?api_key={{API_KEY}}"  # (a log line: the value is seen)
    built = recording.builder.built(call, _upstream({}), list(REPLY_HEADERS), REPLY)
    assert not isinstance(built, Block)
    assert built.request.target == "/a?api_key={{API_KEY}}"
    assert call.redactor.seen == {"k-1234567": "API_KEY"}


def test_a_secret_host_header_takes_the_general_path() -> None:
    recording = Recording(None, Redactor(headers={"host": "HOST"}), HOST)  # type: ignore[arg-type]
    assert not assert_same({}, recording)


def test_an_exchange_during_another_or_with_its_request_built_takes_the_general_path() -> None:
    recording = Recording(None, Redactor(), HOST)  # type: ignore[arg-type]
    call = _call({}, recording)
    call.routing = Routing(1, None, during=(1, 0))
    built = recording.builder.built(call, _upstream({}), list(REPLY_HEADERS), REPLY)
    assert not isinstance(built, Block)
    call = _call({}, recording)
    recording.builder.recorded(call)
    built = recording.builder.built(call, _upstream({}), list(REPLY_HEADERS), REPLY)
    assert not isinstance(built, Block)


def test_remembered_lines_are_let_go_past_their_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(direct, "_MAX_LINES", 3)
    recording = Recording(None, Redactor(), HOST)  # type: ignore[arg-type]
    for n in range(6):
        parts = {"headers": [JSON, (b"x-request-id", b"r-%d" % n)]}
        assert assert_same(parts, recording)
        assert len(recording.builder.direct._request_lines) <= 3


_NAMES = st.sampled_from(
    [
        *(b"content-type", b"Content-Type", b"accept", b"etag", b"x-a", b"X-A"),
        *(b"authorization", b"content-length", b"set-cookie", b"bad name", b"te"),
    ]
)
_VALUES = st.sampled_from(
    [
        *(b"application/json", b"text/plain", b"text/event-stream", b"", b"  x  ", b"a\rb"),
        *(b"application/x-www-form-urlencoded", b"Bearer", b"caf\xc3\xa9", b"\xe9", b"90"),
    ]
)
_BODIES = st.sampled_from(
    [
        *(REQUEST, REPLY, b"", b"{}", b'{"token":"t-1234567"}', b'{"n":1.5}', b"###", b"a=1"),
        *(b'{"a": 1, "a": 2}', b"\xff", b"data: x\n\n", b'"\\u2028"', b"x\r\n", b"[1,2]"),
    ]
) | st.text(string.printable + "é\x7f\u2028", max_size=12).map(str.encode)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {
            "method": st.sampled_from(["POST", "GET", "PUT", "BREW", "get"]),
            "target": st.sampled_from(["/a2a/jsonrpc", "/t?x=1", "/t?token=abc123456", "/"]),
            "headers": st.lists(st.tuples(_NAMES, _VALUES), max_size=4),
            "body": _BODIES,
            "description": st.none() | st.text(string.printable, max_size=8),
            "kept": st.lists(st.tuples(_NAMES, _VALUES), max_size=4),
            "reply": _BODIES,
            "status": st.sampled_from([200, 201, 404, 500, 99, 1000]),
            "reason": st.sampled_from(["OK", "", " Spaced ", "A\nB"]),
        }
    )
)
def test_the_direct_path_agrees_on_any_exchange(parts: dict[str, Any]) -> None:
    assert_same(parts)


def test_a_reply_read_when_its_values_were_learned_is_not_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the writer builds the block from the value `settle` read (a 1 MiB reply took ~0.5 ms
    # of held GIL to read again)
    recording = Recording(None, Redactor(), HOST)  # type: ignore[arg-type]
    call = _call({}, recording)
    call.reply.parsed = Lineage().learn_body(REPLY, "file", frozenset())
    assert call.reply.parsed is not None
    read: list[bytes] = []
    loads_bytes = orjson.loads

    def counting(data: bytes | str) -> Any:
        read.append(data if isinstance(data, bytes) else data.encode())
        return loads_bytes(data)

    monkeypatch.setattr(orjson, "loads", counting)
    built = recording.builder.built(call, _upstream({}), list(REPLY_HEADERS), REPLY)
    assert isinstance(built, Block)
    assert REPLY not in read
    assert call.reply.parsed is None  # (let go once read)
