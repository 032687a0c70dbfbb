"""A literal `{{name}}` a client sent (a template inside a reviewed diff) is written escaped,
never read as a placeholder: the recorder escapes it (`\\u007b{` in JSON, httpyac's
`\\{\\{...\\}\\}` elsewhere), its own placeholders stay placeholders; the player sends the
literal and asks for no variable; the exports write it so that no dialect runs or fills it."""

from __future__ import annotations

import json
import shlex

import pytest
from factories import make_exchange
from hypothesis import given
from hypothesis import strategies as st

from recorder.docs.curlscript import export_curl
from recorder.docs.export import ExportError, curl_command, export_http
from recorder.format.literals import (
    PLACEHOLDER,
    escape_json_text,
    escape_text,
    json_templates,
    literal_text,
    template,
)
from recorder.format.model import Headers, Request, Response, SseEvent
from recorder.replay.variables import (
    fill_placeholders,
    fill_reply_placeholders,
    request_placeholders,
    unset_variable,
)
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.secrets.redact import Redactor

JSON = ("Content-Type", "application/json")
TEMPLATE = "Hello {{user_name}}, see {{ ticket_id }}"


def recorded(request: Request) -> Request:
    """The request as the recorder writes it (a fresh redactor: secrets and literals)."""
    redactor = Redactor()
    headers = redactor.redact_headers(request.headers)
    return Request(
        request.method,
        redactor.redact_target(request.target),
        headers,
        redactor.redact_body(request.body, headers.get("Content-Type")),
    )


def wire_request() -> Request:
    body = {"message": {"parts": [{"text": TEMPLATE}]}, "token": "tok-123456"}
    return Request(
        "POST",
        "/a2a/jsonrpc?q={{user_name}}",
        Headers([("Host", "h:1"), JSON, ("X-Template", TEMPLATE), ("Authorization", "Bearer s3")]),
        json.dumps(body).encode(),
    )


def test_the_recorder_escapes_a_literal_and_keeps_its_own_placeholders() -> None:
    request = recorded(wire_request())
    text = request.body.decode()
    assert "\\u007b{user_name}}" in text and "\\u007b{ ticket_id }}" in text
    assert '"{{TOKEN}}"' in text  # the redactor's own placeholder
    assert request.json["message"]["parts"][0]["text"] == TEMPLATE  # the same string
    escaped = "Hello \\{\\{user_name\\}\\}, see \\{\\{ ticket_id \\}\\}"
    assert request.headers.get("X-Template") == escaped
    assert request.headers.get("Authorization") == "Bearer {{A2A_TOKEN}}"
    assert request.target == "/a2a/jsonrpc?q=\\{\\{user_name\\}\\}"
    assert sorted(request_placeholders(request)) == ["A2A_TOKEN", "TOKEN"]


def test_the_player_sends_the_literal_and_needs_no_variable_for_it() -> None:
    request = recorded(wire_request())
    variables = {"A2A_TOKEN": "live-token", "TOKEN": "t"}
    assert unset_variable(request, variables, DEFAULT_RULES, path="f.http", line=1) is None
    sent = fill_placeholders(request, variables)
    assert sent.headers.get("X-Template") == TEMPLATE
    assert sent.headers.get("Authorization") == "Bearer live-token"
    assert sent.target == "/a2a/jsonrpc?q={{user_name}}"
    assert json.loads(sent.body)["message"]["parts"][0]["text"] == TEMPLATE
    # without the variables: only the real placeholders are asked for
    missing = unset_variable(request, {}, DEFAULT_RULES, path="f.http", line=1)
    assert missing is not None and missing.name == "A2A_TOKEN"


def test_a_recorded_reply_with_a_literal_compares_as_it_was_sent() -> None:
    redactor = Redactor()
    wire = Response(
        200,
        headers=Headers([("Content-Type", "text/event-stream"), ("X-Echo", "{{user_name}}")]),
        events=(SseEvent(data='{"text": "{{user_name}}"}'), SseEvent(data="plain {{user_name}}")),
    )
    reply = redactor.redact_response(wire)
    assert reply.headers.get("X-Echo") == "\\{\\{user_name\\}\\}"
    assert [e.data for e in reply.events or ()] == [
        '{"text": "\\u007b{user_name}}"}',
        "plain \\{\\{user_name\\}\\}",
    ]
    expected = fill_reply_placeholders(reply, {}, ())
    assert expected.headers.get("X-Echo") == "{{user_name}}"
    assert [e.data for e in expected.events or ()] == [
        '{"text": "\\u007b{user_name}}"}',  # JSON: the same string as the live one
        "plain {{user_name}}",
    ]


def test_a_redacted_body_written_anew_keeps_its_literals_escaped() -> None:
    body = b'{"token": "tok-123456", "note": "{{user_name}}", "url": "https://h/cb?token=abc"}'
    redacted = Redactor().redact_body(body, "application/json").decode()
    assert "tok-123456" not in redacted and '"{{TOKEN}}"' in redacted
    assert "\\u007b{user_name}}" in redacted and "?token={{TOKEN}}" in redacted


@given(st.text(st.sampled_from("{}\\ ab_1"), max_size=30))
def test_escaping_text_reads_back_and_leaves_no_placeholder(text: str) -> None:
    if "\\{\\{" in text:
        return  # (httpyac's escape spelled by the sender itself: read back as the literal)
    escaped = escape_text(text)
    assert PLACEHOLDER.search(escaped) is None
    assert literal_text(escaped) == text


@given(st.text(st.sampled_from('{}\\" ab_1é'), max_size=20))
def test_escaping_json_text_keeps_its_meaning_and_leaves_no_placeholder(text: str) -> None:
    document = json.dumps({"s": text}, ensure_ascii=False)
    escaped = escape_json_text(document)
    assert PLACEHOLDER.search(escaped) is None
    assert json.loads(escaped) == {"s": text}


@given(
    st.text(st.sampled_from('{}\\" ab_é'), max_size=12),
    st.text(st.sampled_from('{}\\" ab_é'), max_size=12),
    st.text(st.sampled_from("xyz:/ ~é"), min_size=1, max_size=8),
)
def test_a_placeholder_is_read_where_it_stands_and_a_literal_is_none(
    before: str, after: str, secret: str
) -> None:
    # a JSON string as the recorder writes one: what the client sent, literals escaped, with
    # a placeholder where a secret was (`keep`)
    sent = before + "{{ TOKEN }}" + after
    document = escape_json_text(json.dumps({"s": sent}, ensure_ascii=False), keep={"TOKEN"})
    (held,) = json_templates(document).values()
    assert held.value == sent == json.loads(document)["s"]
    assert "{{ TOKEN }}" in held.placeholders
    assert held.pattern.fullmatch(before + secret + after) is not None
    # the same text without the placeholder's place: the literals alone, no template
    assert json_templates(escape_json_text(json.dumps({"s": before + after}))) == {}
    text = escape_text(before + after)
    assert template(text) is None
    escaped = escape_text(sent, keep={"TOKEN"})
    outside = template(escaped)
    assert outside is not None and outside.value == literal_text(escaped)
    if "\\{\\{" not in before + after:  # (else the sender spelled httpyac's escape itself)
        assert outside.pattern.fullmatch(before + secret + after) is not None


# ------------------------------------------------------------------ exports

INJECTIONS = [
    "{{ require('fs').writeFileSync('/tmp/recorder-pwned', 'x') }}",
    "{{user_name}}",
    "$(touch /tmp/recorder-pwned)",
    "`touch /tmp/recorder-pwned`",
    "it's ' quoted \" twice",
    "line one\nline two",
    "{{$processEnv HOME}}",
    "{ {{TOKEN}}",
]


def injected(text: str) -> Request:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"text": text}}
    return recorded(
        Request(
            "POST",
            "/a2a/jsonrpc",
            Headers([("Host", "h:1"), JSON, ("Authorization", "Bearer s3")]),
            json.dumps(body).encode(),
        )
    )


@pytest.mark.parametrize("text", INJECTIONS)
def test_the_http_export_writes_recorded_text_so_that_no_client_reads_a_variable(
    text: str,
) -> None:
    exported = export_http([make_exchange(request=injected(text))])
    block = exported.split("\n\n", 1)[1]  # (after the head)
    placeholders = {m.group(1) for m in PLACEHOLDER.finditer(block)}
    assert placeholders == {"host", "A2A_TOKEN"}
    assert "{{" not in block.replace("{{host}}", "").replace("{{A2A_TOKEN}}", "")
    json_text = block.split("\n\n", 1)[1]
    assert json.loads(json_text)["params"]["text"] == text


@pytest.mark.parametrize("text", INJECTIONS)
def test_the_curl_export_quotes_recorded_text_and_asks_only_for_secrets(text: str) -> None:
    command = curl_command(injected(text))
    words = shlex.split(command.replace("\\\n", " "))
    data = words[words.index("--data-binary") + 1]
    assert json.loads(data)["params"]["text"] == text
    script = export_curl([make_exchange(request=injected(text))])
    assert "Set first: A2A_TOKEN." in script
    assert "user_name" not in script.split("set -euo pipefail")[0]


def test_a_header_with_a_literal_is_written_as_httpyac_escapes_it_or_refused() -> None:
    request = recorded(
        Request("GET", "/a?x={{a}}", Headers([("Host", "h:1"), ("X-T", "{{user_name}} {{ x }}")]))
    )
    exported = export_http([make_exchange(request=request)])
    assert "GET {{host}}/a?x=%7B%7Ba%7D%7D HTTP/1.1" in exported
    assert "X-T: \\{\\{user_name\\}\\} \\{\\{ x \\}\\}" in exported
    bad = Request("GET", "/", Headers([("Host", "h:1"), ("X-T", "{{a}b}}")]))
    with pytest.raises(ExportError, match="would read as a variable"):
        export_http([make_exchange(request=bad)])


def test_render_shows_the_literal_and_the_numbers_as_they_went_over_the_wire() -> None:
    from recorder.docs.render import RenderOptions, render_exchange

    request = recorded(
        Request(
            "POST",
            "/a2a/jsonrpc",
            Headers([("Host", "h:1"), JSON, ("X-Template", "{{user_name}}")]),
            b'{"n": 12345678901234567.89, "z": -0, "text": "Hello {{user_name}}"}',
        )
    )
    shown = render_exchange(
        make_exchange(request=request), RenderOptions(headers=("Content-Type", "X-Template"))
    )
    assert "X-Template: {{user_name}}" in shown
    assert '"text": "Hello {{user_name}}"' in shown
    assert '"n": 12345678901234567.89' in shown and '"z": -0' in shown
