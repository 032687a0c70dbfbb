"""The stand-in matches a recorded literal `{{name}}` (a template in a reviewed diff, escaped
in the transcript: `recorder.format.literals`) as the text it is, and a placeholder (a secret
the recorder took out) as any value: in a JSON body, a body that is no JSON, the target and
an A2A header. The recorded requests are written by the recorder's own redactor."""

from __future__ import annotations

import json
from typing import Any

from factories import make_exchange, make_response

from recorder import Headers, Request, Transcript
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.secrets.redact import Redactor
from recorder.serve.book import Book, Found, NotFound
from recorder.serve.match import LiveRequest
from recorder.serve.replies import Renderer
from recorder.serve.steps import prepare

RULES = PairingRules(DEFAULT_RULES)
JSON = ("Content-Type", "application/json")
TEXT = ("Content-Type", "text/plain")
LITERAL = "Hello {{user_name}}"


def recorded(request: Request) -> Request:
    """The request as the recorder writes it: secrets as placeholders, literals escaped."""
    redactor = Redactor()
    headers = redactor.redact_headers(request.headers)
    return Request(
        request.method,
        redactor.redact_target(request.target),
        headers,
        redactor.redact_body(request.body, headers.get("Content-Type")),
    )


def book(
    request: Request,
    reply: bytes = b'{"jsonrpc": "2.0", "id": 1, "result": {}}',
    *,
    redact: bool = True,
) -> Book:
    """The stand-in's book of one exchange: `request` as the recorder writes it (`redact`),
    else as given (a transcript's text)."""
    written = recorded(request) if redact else request
    exchange = make_exchange(request=written, response=make_response(body=reply))
    transcripts = [Transcript(exchanges=(exchange,), source="01-literal.http")]
    return Book(prepare(transcripts, RULES), RULES)


def send(text: str, token: str = "tok-123456") -> bytes:
    message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}]}
    params = {"message": message, "token": token}
    return json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    ).encode()


def ask(served: Book, body: bytes, *headers: tuple[str, str], target: str = "/a2a/jsonrpc") -> Any:
    return served.find(LiveRequest("POST", target, [JSON, *headers], body))


def test_a_literal_in_a_json_body_matches_only_itself() -> None:
    served = book(Request("POST", "/a2a/jsonrpc", Headers([JSON]), send(LITERAL)))
    assert b"\\u007b{user_name}}" in served.files[0][0].exchange.request.body  # (as recorded)
    assert isinstance(ask(served, send(LITERAL)), Found)
    refused = ask(
        book(Request("POST", "/a2a/jsonrpc", Headers([JSON]), send(LITERAL))), send("Hello Bob")
    )
    assert isinstance(refused, NotFound)
    assert refused.differences == [
        '$.params.message.parts[0].text: recorded "Hello {{user_name}}", got "Hello Bob"'
    ]


def test_a_secret_placeholder_beside_a_literal_still_matches_any_value() -> None:
    served = book(Request("POST", "/a2a/jsonrpc", Headers([JSON]), send(LITERAL)))
    assert b'"{{TOKEN}}"' in served.files[0][0].exchange.request.body  # the redactor's own
    assert isinstance(ask(served, send(LITERAL, token="another-token-42")), Found)


def test_a_literal_beside_a_placeholder_in_one_string_matches_only_itself() -> None:
    # (the text as a transcript holds it: a secret the agent echoed, and a literal)
    text = send("{{TOKEN}}: {{user_name}} asked", token="{{TOKEN}}")
    text = text.replace(b": {{user_name}}", b": \\u007b{user_name}}")
    request = Request("POST", "/a2a/jsonrpc", Headers([JSON]), text)
    assert isinstance(ask(book(request, redact=False), send("t0k: {{user_name}} asked")), Found)
    refused = ask(book(request, redact=False), send("t0k: Bob asked"))
    assert isinstance(refused, NotFound)


def test_a_literal_in_a_body_that_is_no_json_is_compared_as_sent() -> None:
    body = f"{LITERAL}, not JSON".encode()
    served = book(Request("POST", "/notes", Headers([TEXT]), body), reply=b"ok")
    assert b"\\{\\{user_name\\}\\}" in served.files[0][0].exchange.request.body  # (as recorded)
    found = served.find(LiveRequest("POST", "/notes", [TEXT], body))
    assert isinstance(found, Found), found
    other = book(Request("POST", "/notes", Headers([TEXT]), body), reply=b"ok")
    assert isinstance(
        other.find(LiveRequest("POST", "/notes", [TEXT], b"Hello Bob, not JSON")), NotFound
    )


def test_a_literal_in_a_malformed_json_call_is_compared_as_sent() -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"text": "{{x}}"'
    served = book(Request("POST", "/a2a/jsonrpc", Headers([JSON]), body))
    assert isinstance(ask(served, body), Found)
    other = book(Request("POST", "/a2a/jsonrpc", Headers([JSON]), body))
    assert isinstance(ask(other, body.replace(b"{{x}}", b"abc")), NotFound)


def test_a_literal_in_the_target_matches_only_itself() -> None:
    target = "/a2a/rest/tasks/{{task_id}}"
    get = Request("GET", target, Headers([JSON]), b"")
    served = book(get)
    assert "\\{\\{task_id\\}\\}" in served.files[0][0].exchange.request.target
    assert isinstance(served.find(LiveRequest("GET", target, [JSON], b"")), Found)
    other = book(get)
    assert isinstance(other.find(LiveRequest("GET", "/a2a/rest/tasks/t-9", [JSON], b"")), NotFound)
    # a brace the client percent-encoded is no placeholder either
    encoded = book(Request("GET", "/a2a/rest/tasks/%7B%7Btask_id%7D%7D", Headers([JSON]), b""))
    assert isinstance(
        encoded.find(LiveRequest("GET", "/a2a/rest/tasks/t-9", [JSON], b"")), NotFound
    )


def test_a_literal_in_an_a2a_header_matches_only_itself() -> None:
    extension = ("A2A-Extensions", "https://example.com/ext/{{version}}")
    request = Request("POST", "/a2a/jsonrpc", Headers([JSON, extension]), send("hi"))
    assert isinstance(ask(book(request), send("hi"), extension), Found)
    other = ("A2A-Extensions", "https://example.com/ext/v2")
    assert isinstance(ask(book(request), send("hi"), other), NotFound)


def test_a_secret_placeholder_in_a_header_matches_any_value_and_is_echoed() -> None:
    bearer = ("Authorization", "Bearer s3cr3t-t0ken-value")
    request = Request("POST", "/a2a/jsonrpc", Headers([JSON, bearer]), send("hi"))
    # (the reply as a transcript holds it: the agent echoed the token, and a literal alike)
    reply = b'{"jsonrpc": "2.0", "id": 1, "result": {"seen": "{{A2A_TOKEN}}", '
    reply += b'"text": "\\u007b{A2A_TOKEN}} is a template"}}'
    served = book(request, reply)
    assert served.files[0][0].exchange.request.headers.get("Authorization") == (
        "Bearer {{A2A_TOKEN}}"
    )
    found = ask(served, send("hi"), ("Authorization", "Bearer an0ther-value"))
    assert isinstance(found, Found), found
    body = json.loads(Renderer(RULES, found.step, found.branch, found.rpc_id, None).body())
    assert body["result"] == {"seen": "an0ther-value", "text": "{{A2A_TOKEN}} is a template"}


def test_a_literal_in_a_reply_that_is_no_json_is_served_as_sent_beside_a_placeholder() -> None:
    bearer = ("Authorization", "Bearer s3cr3t-t0ken-value")
    request = Request("POST", "/notes", Headers([TEXT, bearer]), b"note")
    reply = b"token {{A2A_TOKEN}}; \\{\\{A2A_TOKEN\\}\\} is a template"
    served = book(request, reply)
    found = served.find(
        LiveRequest("POST", "/notes", [TEXT, ("Authorization", "Bearer live-1")], b"note")
    )
    assert isinstance(found, Found), found
    renderer = Renderer(RULES, found.step, found.branch, found.rpc_id, None)
    assert renderer.body() == b"token live-1; {{A2A_TOKEN}} is a template"
