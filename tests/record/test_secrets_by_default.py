"""Secrets by default (issue 13, item 4): 21 secrets of every kind sent through the real
recorder, with no rules file, in front of an upstream that echoes what it gets; not one of them
may be in any byte under the output folder, as sent or JSON-escaped."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
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
from recorder.rules.ruleset import load_rules
from recorder.servers import ServerThread

pytestmark = pytest.mark.e2e

LIMIT = 10.0  # seconds: every request and wait of this module

# kind -> the secret (each distinct; what the client, or the agent, sends)
SECRETS = {
    "Authorization bearer token": "bearer-Tok3n-a1b2c3d4",
    "X-API-Key header": "xapikey-Secret-99z",
    "Cookie session": "sess-c00kie-5f6e7d",
    "Proxy-Authorization": "cHJveHk6cGFzc3dvcmQ0Mg==",
    "Set-Cookie from the agent": "agent-set-c00kie-8a9b",
    "query api_key": "q-apikey-1a2b3c",
    "query access_token": "q-access-4d5e6f",
    "query TOKEN (upper case)": "q-token-7g8h9i",
    "query apikey": "q-apikey2-0j1k2l",
    "push config token": "push-token-3m4n5o",
    "push config authentication.credentials": "push-cred-6p7q8r",
    "SendMessage push config token": "send-push-token-9s0t",
    "SendMessage push config credentials": "send-push-cred-1u2v",
    "JSON password (quote, non-ASCII)": 'hunter2"pässwörd-x',
    "JSON client_secret": "json-client-secret-3w4x",
    "JSON Secret (capitalized)": "json-secret-5y6z",
    "form password": "form-pass word+7a8b",
    "form refresh_token": "form-refresh-9c0d",
    "a 5-character token": "k9Zq2",
    "apiKey echoed in the agent's reply text": "echoed-apikey-1e2f3g",
    "access_token the agent hands out": "agent-access-4h5i6j",
}


def echo_values(request: Request, body: Any) -> list[str]:
    """Every string the request carried, each as a whole value: what a careless agent echoes."""
    values = [*request.query_params.values()]
    stack = [body]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            values.append(item)
    return values


async def echo(request: Request) -> Response:
    raw = await request.body()
    content_type = request.headers.get("content-type", "")
    body: Any
    if content_type.startswith("application/x-www-form-urlencoded"):
        body = dict(urllib.parse.parse_qsl(raw.decode()))
    elif raw:
        body = json.loads(raw)
    else:
        body = None
    reply: dict[str, Any] = {
        "headers": dict(request.headers),
        "query": dict(request.query_params),
        "body": body,
        "values": echo_values(request, body),
    }
    if isinstance(body, dict) and "apiKey" in body:
        reply["note"] = f"key {body['apiKey']} accepted for {body.get('user')}"
    headers = {f"X-Echo-{n}": v for n, v in enumerate(request.query_params.values())}
    return JSONResponse(reply, headers=headers)


async def login(request: Request) -> Response:
    reply = JSONResponse(
        {"access_token": SECRETS["access_token the agent hands out"], "token_type": "Bearer"}
    )
    reply.set_cookie("sid", SECRETS["Set-Cookie from the agent"], httponly=True)
    return reply


UPSTREAM = Starlette(
    routes=[
        Route("/login", login, methods=["POST"]),
        Route("/{path:path}", echo, methods=["GET", "POST"]),
    ]
)


def rpc(method: str, params: dict[str, Any], rpc_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}


def send_every_secret(client: httpx.Client) -> None:
    s = SECRETS
    # the agent hands out a token and a cookie; the client then uses the token
    client.post("/login", data={"user": "ada"})
    headers = {
        "Authorization": f"Bearer {s['Authorization bearer token']}",
        "X-API-Key": s["X-API-Key header"],
        "Cookie": f"sid={s['Cookie session']}; theme=dark",
        "Proxy-Authorization": f"Basic {s['Proxy-Authorization']}",
    }
    client.get("/a2a/rest/extendedAgentCard", headers=headers)
    client.get(
        "/a2a/rest/tasks",
        params={
            "api_key": s["query api_key"],
            "access_token": s["query access_token"],
            "TOKEN": s["query TOKEN (upper case)"],
            "apikey": s["query apikey"],
        },
    )
    client.get("/a2a/rest/tasks", params={"token": s["a 5-character token"], "pageSize": "2"})
    client.post(
        "/a2a/jsonrpc",
        json=rpc(
            "CreateTaskPushNotificationConfig",
            {
                "taskId": "task-1",
                "url": "http://127.0.0.1:9/hook",
                "token": s["push config token"],
                "authentication": {
                    "scheme": "Bearer",
                    "credentials": s["push config authentication.credentials"],
                },
            },
            1,
        ),
    )
    client.post(
        "/a2a/jsonrpc",
        json=rpc(
            "CreateTaskPushNotificationConfig",
            {"taskId": "task-2", "url": "http://127.0.0.1:9/h", "token": s["a 5-character token"]},
            2,
        ),
    )
    client.post(
        "/a2a/jsonrpc",
        json=rpc(
            "SendMessage",
            {
                "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
                "configuration": {
                    "taskPushNotificationConfig": {
                        "url": "http://127.0.0.1:9/hook",
                        "token": s["SendMessage push config token"],
                        "authentication": {
                            "scheme": "Bearer",
                            "credentials": s["SendMessage push config credentials"],
                        },
                    }
                },
            },
            3,
        ),
        headers={"Authorization": f"Bearer {s['access_token the agent hands out']}"},
    )
    client.post(
        "/account",
        json={
            "user": "ada",
            "password": s["JSON password (quote, non-ASCII)"],
            "client_secret": s["JSON client_secret"],
            "Secret": s["JSON Secret (capitalized)"],
        },
    )
    client.post(
        "/oauth/token",
        data={
            "grant_type": "refresh_token",
            "password": s["form password"],
            "refresh_token": s["form refresh_token"],
        },
    )
    client.post(
        "/keys", json={"user": "ada", "apiKey": s["apiKey echoed in the agent's reply text"]}
    )


@contextmanager
def recorder_in_front_of_echo(out: Path, **options: Any) -> Iterator[httpx.Client]:
    with ServerThread(UPSTREAM) as upstream:
        # (its push configs name loopback webhooks: local work, said so)
        proxy = create_proxy_app(upstream.url, out=out, push_loopback=True, **options)
        with (
            ProxyServer(proxy) as server,
            httpx.Client(base_url=server.url, timeout=LIMIT) as client,
        ):
            yield client
    # (both servers stopped: every exchange written)


def spellings(secret: str) -> list[bytes]:
    """The secret as sent and as JSON writes it escaped (ASCII-only, and not)."""
    return [
        secret.encode(),
        json.dumps(secret)[1:-1].encode(),
        json.dumps(secret, ensure_ascii=False)[1:-1].encode(),
        urllib.parse.quote_plus(secret).encode(),
    ]


def written_bytes(out: Path) -> bytes:
    return b"\n".join(path.read_bytes() for path in sorted(out.rglob("*")) if path.is_file())


def test_the_table_has_21_distinct_secrets() -> None:
    assert len(SECRETS) == 21 == len(set(SECRETS.values()))


@pytest.mark.parametrize("kind", list(SECRETS))
def test_no_secret_reaches_the_disk_without_a_rules_file(
    kind: str, recorded_without_rules: bytes
) -> None:
    for spelled in spellings(SECRETS[kind]):
        assert spelled not in recorded_without_rules, (kind, spelled)


@pytest.fixture(scope="module")
def recorded_without_rules(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    out = tmp_path_factory.mktemp("secrets")
    with recorder_in_front_of_echo(out) as client:
        send_every_secret(client)
    data = written_bytes(out)
    # every exchange was recorded (an exchange that failed to record would leak nothing)
    assert data.count(b"\n### ") + data.startswith(b"### ") == 10, data.decode()
    return data


def test_the_recorded_places_hold_placeholders(tmp_path: Path) -> None:
    with recorder_in_front_of_echo(tmp_path) as client:
        send_every_secret(client)
    exchanges = [e for path in sorted(tmp_path.glob("*.http")) for e in load(path)]
    push = next(e for e in exchanges if b"task-1" in e.request.body).request.json
    assert push["params"]["token"] == "{{TOKEN}}"
    assert push["params"]["authentication"] == {
        "scheme": "Bearer",
        "credentials": "{{CREDENTIALS}}",
    }
    # the 5-character token: its own place, and where the agent echoed it whole
    short = next(e for e in exchanges if b"task-2" in e.request.body)
    assert short.request.json["params"]["token"] == "{{TOKEN}}"
    assert "{{TOKEN}}" in short.response.json["values"]
    form = next(e for e in exchanges if e.request.target == "/oauth/token")
    assert form.request.body == (
        b"grant_type=refresh_token&password={{PASSWORD}}&refresh_token={{REFRESH_TOKEN}}"
    )
    query = next(e for e in exchanges if "pageSize" in e.request.target)
    assert query.request.target == "/a2a/rest/tasks?token={{TOKEN}}&pageSize=2"
    assert query.response.headers.get("X-Echo-0") == "{{TOKEN}}"


def test_a_rules_file_that_removes_a_default_name_leaves_that_field_in_clear(
    tmp_path: Path,
) -> None:
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text("secret_fields: {token: null}\n")
    rules = load_rules(rules_file)
    out = tmp_path / "out"
    out.mkdir()
    with recorder_in_front_of_echo(
        out, secret_headers=rules.secret_headers, secret_fields=rules.secret_fields
    ) as client:
        client.post(
            "/a2a/jsonrpc",
            json=rpc(
                "CreateTaskPushNotificationConfig",
                {
                    "taskId": "task-1",
                    "url": "http://127.0.0.1:9/hook",
                    "token": "plain-verification-token",
                    "authentication": {"scheme": "Bearer", "credentials": "still-secret-cred"},
                },
                1,
            ),
        )
    [path] = out.glob("*.http")
    [exchange] = load(path)
    params = exchange.request.json["params"]
    assert params["token"] == "plain-verification-token"  # removed by the rules: in clear
    assert params["authentication"]["credentials"] == "{{CREDENTIALS}}"  # the others stay
    assert b"still-secret-cred" not in written_bytes(out)
