"""Secrets in less obvious places (issue 24, item 5), through the real recorder in front of an
upstream that echoes what it gets: a secret member named twice, a token in a URL inside a JSON
string, a multipart form field, JSON inside a JSON string, a push callback URL's secret path
segment. Not one of them may be in any byte under the output folder; the places hold
placeholders the player fills."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from recorder import load
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.replay.variables import fill_placeholders, stand_ins, unset_variable
from recorder.rules.ruleset import DEFAULT_RULES, rules_from_text
from recorder.secrets.redact import Redactor
from recorder.servers import ServerThread

pytestmark = pytest.mark.e2e

LIMIT = 10.0  # seconds: every request of this module

SECRETS = {
    "first of a member named twice": "dup-first-S1a9",
    "second of a member named twice": "dup-second-S2b8",
    "token in a URL in a JSON string": "url-tok-c7d6e5",
    "multipart form field": "multi-pass-f4g3",
    "JSON inside a JSON string": "inner-json-pw-h2i1",
    "push callback URL path segment": "Xk29fLq83nVz0PwR7sT1",
}


def spellings(secret: str) -> list[bytes]:
    """The secret as sent, JSON-escaped and percent-encoded."""
    return [
        secret.encode(),
        json.dumps(secret)[1:-1].encode(),
        urllib.parse.quote_plus(secret).encode(),
    ]


def written_bytes(out: Path) -> bytes:
    return b"\n".join(path.read_bytes() for path in sorted(out.rglob("*")) if path.is_file())


async def raw_echo(request: Request) -> Response:
    """The request body, whole, as a JSON string: what a careless agent echoes."""
    raw = await request.body()
    return JSONResponse({"received": raw.decode("utf-8", "replace")})


UPSTREAM = Starlette(routes=[Route("/{path:path}", raw_echo, methods=["GET", "POST"])])


def send_hidden_secrets(client: httpx.Client) -> None:
    s = SECRETS
    first, second = s["first of a member named twice"], s["second of a member named twice"]
    twice = f'{{"user": "ada", "password": "{first}", "password": "{second}"}}'.encode()
    client.post("/account", content=twice, headers={"Content-Type": "application/json"})
    client.post(
        "/a2a/jsonrpc",
        json={"callback": f"https://h.example/cb?token={s['token in a URL in a JSON string']}&x=1"},
    )
    client.post(
        "/upload",
        data={"user": "ada", "password": s["multipart form field"]},
        files={"file": ("a.txt", b"plain text", "text/plain")},
    )
    client.post(
        "/a2a/jsonrpc",
        json={"params": json.dumps({"password": s["JSON inside a JSON string"], "n": 1})},
    )
    client.post(
        "/a2a/jsonrpc",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "CreateTaskPushNotificationConfig",
            "params": {
                "taskId": "task-1",
                "url": f"https://hooks.example/services/{s['push callback URL path segment']}",
            },
        },
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hidden")
    with ServerThread(UPSTREAM) as upstream:
        proxy = create_proxy_app(upstream.url, out=out)
        with (
            ProxyServer(proxy) as server,
            httpx.Client(base_url=server.url, timeout=LIMIT) as client,
        ):
            send_hidden_secrets(client)
    return out


@pytest.mark.parametrize("kind", list(SECRETS))
def test_no_hidden_secret_reaches_the_disk(kind: str, recorded: Path) -> None:
    data = written_bytes(recorded)
    assert data.count(b"### ") == 5, data.decode()  # every exchange was recorded
    for spelled in spellings(SECRETS[kind]):
        assert spelled not in data, (kind, spelled)


def test_the_hidden_places_hold_placeholders(recorded: Path) -> None:
    exchanges = [e for path in sorted(recorded.glob("*.http")) for e in load(path)]
    bodies = [e.request.body.decode() for e in exchanges]
    assert any("token={{TOKEN}}&x=1" in body for body in bodies)
    assert any('name="password"\r\n\r\n{{PASSWORD}}\r\n' in body for body in bodies)
    assert any('\\"password\\": \\"{{PASSWORD}}\\"' in body for body in bodies)
    push = next(e for e in exchanges if b"task-1" in e.request.body)
    assert push.request.json["params"]["url"] == (
        "https://hooks.example/services/{{PUSH_URL_SECRET}}"
    )


def test_both_members_named_twice_are_redacted() -> None:
    redactor = Redactor()
    body = redactor.redact_body(
        b'{"password": "first-one", "n": {"password": 1234567, "password": "x"}, '
        b'"password": "second-one"}',
        "application/json",
    )
    assert body == (
        b'{"password": "{{PASSWORD}}", "n": {"password": "{{PASSWORD}}", '
        b'"password": "{{PASSWORD}}"}, "password": "{{PASSWORD}}"}'
    )
    assert {"first-one", "second-one", "1234567", "x"} <= set(redactor.seen)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://h/cb/aB3dE5fG7hJ9kL1mN3pQ/x", "https://h/cb/{{PUSH_URL_SECRET}}/x"),
        # an id (a UUID), a word, a short key: no secret
        ("https://h/cb/0168f9fa-2c16-42bd-9694-4436a58c317f", None),
        ("https://h/notifications/webhook-receiver", None),
        ("https://h/cb/a1b2c3", None),
    ],
)
def test_a_push_url_loses_its_secret_looking_segments(url: str, expected: str | None) -> None:
    redacted = Redactor().redact_json_value({"taskId": "t", "url": url})
    assert redacted["url"] == (expected or url)


def test_a_rules_file_names_more_url_fields() -> None:
    rules = rules_from_text("secret_url_fields: {callbackUrl: CALLBACK_SECRET}\n", "r.yaml")
    redactor = Redactor(url_fields=rules.secret_url_fields)
    value = {"hook": {"callbackUrl": "https://h/in/aB3dE5fG7hJ9kL1mN3pQ"}}
    assert redactor.redact_json_value(value) == {
        "hook": {"callbackUrl": "https://h/in/{{CALLBACK_SECRET}}"}
    }
    # (an agent card's url, with no push config around it, is kept)
    card = {"name": "a", "url": "https://h/a2a/aB3dE5fG7hJ9kL1mN3pQ"}
    assert redactor.redact_json_value(card) == card


def test_the_player_fills_the_push_url_placeholder_with_a_stand_in(recorded: Path) -> None:
    path = next(p for p in sorted(recorded.glob("*.http")) if b"task-1" in p.read_bytes())
    transcript = load(path)
    made_up = stand_ins(transcript, {}, DEFAULT_RULES)
    assert "PUSH_URL_SECRET" in made_up
    request = transcript.exchanges[0].request
    assert unset_variable(request, {}, DEFAULT_RULES, path="f", line=1, stand_ins=made_up) is None
    filled = fill_placeholders(request, made_up)
    url: Any = filled.json["params"]["url"]
    assert url == f"https://hooks.example/services/{made_up['PUSH_URL_SECRET']}"


async def json_echo(request: Request) -> Response:
    """The request's JSON body as the reply's: an agent that echoes a push config."""
    return JSONResponse(json.loads(await request.body()))


def test_a_recorded_push_url_secret_replays_with_a_stand_in(tmp_path: Path) -> None:
    from recorder.replay.run import play

    secret = SECRETS["push callback URL path segment"]
    push = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "CreateTaskPushNotificationConfig",
        "params": {"taskId": "task-1", "url": f"https://hooks.example/services/{secret}"},
    }
    echo_app = Starlette(routes=[Route("/{path:path}", json_echo, methods=["POST"])])
    with ServerThread(echo_app) as upstream:
        proxy = create_proxy_app(upstream.url, out=tmp_path)
        with ProxyServer(proxy) as server:
            assert httpx.post(f"{server.url}/a2a/jsonrpc", json=push, timeout=LIMIT).json() == push
        [path] = tmp_path.glob("*.http")
        assert secret not in path.read_text(encoding="utf-8")
        assert "{{PUSH_URL_SECRET}}" in path.read_text(encoding="utf-8")
        result = play([path], agent=upstream.url, environ={})
    assert result.passed, [e.mismatches for t in result.transcripts for e in t.exchanges]
