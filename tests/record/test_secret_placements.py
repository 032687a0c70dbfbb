"""Secrets on disk (issue 34, item 8): a table of 32 places a secret travels in, sent through
the real recorder with the default rules, in front of agents that echo what they get (an HTTP
one, a gRPC one) and of the real kit (its push deliveries to a loopback webhook). Not one
secret may be in any byte under the output folders: as sent, JSON-escaped, URL-encoded, in
base64 (a `-bin` header's value), or inside a file part's base64 bytes decoded.

6 of them reached the disk before: the `-bin` twin of a secret header, a password inside a
part's base64 `raw`, a `?token=` URL inside free text, a push URL's `user:password@` (kept in
clear, and made Basic auth to the webhook), its Basic auth, and a URL's credentials in text.
The only rule given is a header of the table's own (`X-Session-Key`): a header name says
nothing the recorder could know, so it must be named, as VCR.py's `filter_headers` needs."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import urllib.parse
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    AuthenticationInfo,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskPushNotificationConfig,
    a2a_pb2,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from recorder.kit import KitServer
from recorder.planner.webhook import Webhook
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.servers import ServerThread

pytestmark = pytest.mark.e2e

LIMIT = 20.0
SERVICE = "/lf.a2a.v1.A2AService/"

# place -> the secret (each distinct; what the client, or the agent, sends)
SECRETS = {
    # headers
    "Authorization bearer token": "bearer-Tok3n-a1b2c3d4",
    "Proxy-Authorization": "cHJveHk6cGFzc3dvcmQ0Mg==",
    "Cookie session": "sess-c00kie-5f6e7d",
    "X-API-Key header": "xapikey-Secret-99z",
    "a header of one's own, named in the rules": "session-key-77ab1c",
    "Set-Cookie from the agent": "agent-set-c00kie-8a9b",
    # query strings and forms
    "query api_key": "q-apikey-1a2b3c",
    "query access_token": "q-access-4d5e6f",
    "form password": "form-pass word+7a8b",
    # JSON members
    "JSON password (quote, non-ASCII)": 'hunter2"pässwörd-x',
    "JSON client_secret": "json-client-secret-3w4x",
    "a member named twice, the first": "twice-first-5k6l",
    "JSON inside a JSON string": "nested-json-pass-8m9n",
    "a URL with ?token= as a JSON string": "url-token-0p1q2r",
    "a ?token= URL inside free text": "text-url-token-3s4t",
    "a URL's credentials inside free text": "text-url-passw0rd-5u6v",
    "multipart password field": "multipart-pass-7w8x",
    "a password inside a part's base64 raw": "raw-part-pass-9y0z",
    "access_token the agent hands out": "agent-access-4h5i6j",
    "apiKey echoed in the agent's reply text": "echoed-apikey-1e2f3g",
    # push configs
    "push config token": "push-token-3m4n5o",
    "push config authentication.credentials": "push-cred-6p7q8r",
    "push URL secret path segment": "Xk29fLq83nVz0PwR7sT1",
    "push URL user:password@": "push-url-passw0rd-2a3b",
    # event streams
    "a secret member in an SSE frame": "sse-frame-token-4c5d",
    # gRPC
    "gRPC authorization metadata": "grpc-bearer-6e7f8g",
    "gRPC authorization-bin metadata, echoed": "grpc-bin-bearer-9h0i",
    "gRPC push config token (a message member)": "grpc-push-token-1j2k",
    "gRPC x-api-key trailer from the agent": "grpc-trailer-key-3l4m",
    # the kit's deliveries through the recorder's receiver
    "a delivery's X-A2A-Notification-Token": "delivery-token-5n6o",
    "a delivery's Authorization from credentials": "delivery-cred-7p8q",
    "a webhook URL's password, Basic auth of the agent's": "hook-url-passw0rd-9r0s",
}
S = SECRETS
BASIC = "a webhook URL's password, Basic auth of the agent's"


def test_the_table_has_32_distinct_places() -> None:
    assert len(SECRETS) == 32 == len(set(SECRETS.values()))


# ------------------------------------------------------------------ the HTTP agent: an echo


async def echo(request: Request) -> Response:
    raw = await request.body()
    kind = request.headers.get("content-type", "")
    body: Any = None
    if kind.startswith("application/json") and raw:
        body = json.loads(raw)
    elif kind.startswith("application/x-www-form-urlencoded"):
        body = dict(urllib.parse.parse_qsl(raw.decode()))
    elif raw:
        body = raw.decode("utf-8", "replace")
    reply: dict[str, Any] = {
        "headers": dict(request.headers),
        "query": dict(request.query_params),
        "body": body,
    }
    if isinstance(body, dict) and "apiKey" in body:
        reply["note"] = f"key {body['apiKey']} accepted"
    return JSONResponse(reply, headers={"X-Echo-Query": str(request.url.query)})


async def login(request: Request) -> Response:
    reply = JSONResponse({"access_token": S["access_token the agent hands out"]})
    reply.set_cookie("sid", S["Set-Cookie from the agent"], httponly=True)
    return reply


async def stream(request: Request) -> Response:
    frames = [
        {"statusUpdate": {"taskId": "t-1", "status": {"state": "TASK_STATE_WORKING"}}},
        {
            "artifactUpdate": {
                "taskId": "t-1",
                "metadata": {"token": S["a secret member in an SSE frame"]},
            }
        },
    ]

    async def lines() -> Any:
        for frame in frames:
            yield f"data: {json.dumps(frame)}\n\n".encode()

    return StreamingResponse(lines(), media_type="text/event-stream")


ECHO = Starlette(
    routes=[
        Route("/login", login, methods=["POST"]),
        Route("/stream", stream, methods=["POST"]),
        Route("/{path:path}", echo, methods=["GET", "POST"]),
    ]
)


def rpc(method: str, params: dict[str, Any], rpc_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}


def send_over_http(client: httpx.Client) -> None:
    client.post("/login", data={"user": "ada"})
    client.get(
        "/a2a/rest/extendedAgentCard",
        headers={
            "Authorization": f"Bearer {S['Authorization bearer token']}",
            "Proxy-Authorization": f"Basic {S['Proxy-Authorization']}",
            "Cookie": f"sid={S['Cookie session']}; theme=dark",
            "X-API-Key": S["X-API-Key header"],
            "X-Session-Key": S["a header of one's own, named in the rules"],
        },
    )
    client.get(
        "/a2a/rest/tasks",
        params={
            "api_key": S["query api_key"],
            "ACCESS_TOKEN": S["query access_token"],  # (any case)
        },
    )
    client.post("/oauth/token", data={"grant_type": "password", "password": S["form password"]})
    raw = base64.b64encode(
        json.dumps({"user": "ada", "password": S["a password inside a part's base64 raw"]}).encode()
    ).decode()
    in_text = S["a ?token= URL inside free text"]
    credentials = S["a URL's credentials inside free text"]
    # (a question before the URL: its `?` is not the query's)
    text = f"Done? Call https://hooks.example/cb?token={in_text} back."
    login_at = f"or log in at https://ada:{credentials}@files.example/in"
    message = {
        "messageId": "m-1",
        "role": "ROLE_USER",
        "parts": [
            {"text": text},
            {"text": login_at},
            {"raw": raw, "mediaType": "application/json"},
        ],
    }
    client.post("/a2a/jsonrpc", json=rpc("SendMessage", {"message": message}, 1))
    # JSON members; a member named twice is sent as text (a dict cannot hold it twice)
    nested = json.dumps(json.dumps({"password": S["JSON inside a JSON string"]}))
    twice = (
        '{"user": "ada", "password": "' + S["a member named twice, the first"] + '", '
        '"password": "second-not-secret-either-x", '
        '"client_secret": "' + S["JSON client_secret"] + '", '
        '"params": ' + nested + ", "
        '"callback": "https://h/cb?token=' + S["a URL with ?token= as a JSON string"] + '"}'
    )
    client.post("/account", content=twice, headers={"Content-Type": "application/json"})
    client.post("/account", json={"password": S["JSON password (quote, non-ASCII)"]})
    files = {"password": (None, S["multipart password field"]), "user": (None, "ada")}
    client.post("/upload", files=files)
    client.post(
        "/keys", json={"user": "ada", "apiKey": S["apiKey echoed in the agent's reply text"]}
    )
    config = {
        "taskId": "task-1",
        "id": "cfg-1",
        "url": f"https://hooks.example/services/{S['push URL secret path segment']}",
        "token": S["push config token"],
        "authentication": {
            "scheme": "Bearer",
            "credentials": S["push config authentication.credentials"],
        },
    }
    client.post("/a2a/jsonrpc", json=rpc("CreateTaskPushNotificationConfig", config, 2))
    with_credentials = {
        "taskId": "task-1",
        "id": "cfg-2",
        "url": f"https://hook:{S['push URL user:password@']}@hooks.example/in",
    }
    client.post("/a2a/jsonrpc", json=rpc("CreateTaskPushNotificationConfig", with_credentials, 3))
    client.post("/stream", json={"jsonrpc": "2.0", "id": 4, "method": "SendStreamingMessage"})


# ------------------------------------------------------------------ the gRPC agent: an echo


class GrpcEcho(grpc.GenericRpcHandler):
    """SendMessage answered with a message; its reply's metadata echoes the client's
    `authorization-bin`, its trailers carry an `x-api-key`; a push config echoed back."""

    def service(self, details: Any) -> Any:
        async def send(request: bytes, context: Any) -> bytes:
            echoed = [(k, v) for k, v in context.invocation_metadata() if k.endswith("-bin")]
            await context.send_initial_metadata(echoed)
            context.set_trailing_metadata(
                (("x-api-key", S["gRPC x-api-key trailer from the agent"]),)
            )
            message = a2a_pb2.Message(message_id="a-1", role=a2a_pb2.ROLE_AGENT)
            message.parts.add(text="ok")
            return a2a_pb2.SendMessageResponse(message=message).SerializeToString()

        async def create(request: bytes, context: Any) -> bytes:
            return request  # (the config echoed: its token in the reply too)

        if details.method == SERVICE + "SendMessage":
            return grpc.unary_unary_rpc_method_handler(send)
        if details.method == SERVICE + "CreateTaskPushNotificationConfig":
            return grpc.unary_unary_rpc_method_handler(create)
        return None


async def send_over_grpc(address: str) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        message = a2a_pb2.Message(message_id="m-9", role=a2a_pb2.ROLE_USER)
        message.parts.add(text="hello")
        bearer = f"Bearer {S['gRPC authorization metadata']}"
        bin_value = f"Bearer {S['gRPC authorization-bin metadata, echoed']}".encode()
        await channel.unary_unary(SERVICE + "SendMessage")(
            a2a_pb2.SendMessageRequest(message=message).SerializeToString(),
            metadata=(
                ("authorization", bearer),
                ("authorization-bin", bin_value),
                ("a2a-version", "1.0"),
            ),
            timeout=LIMIT,
        )
        config = a2a_pb2.TaskPushNotificationConfig(
            task_id="t-1",
            id="c-1",
            url="https://hooks.example/grpc",
            token=S["gRPC push config token (a message member)"],
        )
        await channel.unary_unary(SERVICE + "CreateTaskPushNotificationConfig")(
            config.SerializeToString(), metadata=(("a2a-version", "1.0"),), timeout=LIMIT
        )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, kit: KitServer) -> list[Path]:
    """Every place sent through a recorder with the default rules (and the table's own
    header named); the folders written."""
    rules = {**DEFAULT_RULES.secret_headers, "x-session-key": "X_SESSION_KEY"}
    http_out = tmp_path_factory.mktemp("http")

    async def grpc_echo() -> Any:
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((GrpcEcho(),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        return server, port

    with ServerThread(ECHO) as upstream:
        proxy = create_proxy_app(upstream.url, out=http_out, secret_headers=rules)
        with (
            ProxyServer(proxy) as server,
            httpx.Client(base_url=server.url, timeout=LIMIT) as client,
        ):
            send_over_http(client)

    grpc_out = tmp_path_factory.mktemp("grpc")

    async def through_the_listener() -> None:
        agent, port = await grpc_echo()
        proxy = create_proxy_app("http://127.0.0.1:9", out=grpc_out)
        proxy.store.prepare()
        listener = proxy.listen_grpc(port=0, upstream=f"127.0.0.1:{port}")
        await listener.start()
        try:
            await send_over_grpc(f"127.0.0.1:{listener.port}")
        finally:
            await listener.stop()
            await agent.stop(None)
            await proxy.aclose()

    asyncio.run(through_the_listener())
    push_out = tmp_path_factory.mktemp("push")
    with Webhook() as hook:
        proxy = create_proxy_app(kit.base_url, out=push_out, push_loopback=True)
        with ProxyServer(proxy) as server:
            asyncio.run(send_with_push(server.url, hook))
            hook.wait(3, LIMIT)  # SUBMITTED, WORKING, INPUT_REQUIRED (it asks for a file name)
        assert {d.headers["x-a2a-notification-token"] for d in hook.received} == {
            S["a delivery's X-A2A-Notification-Token"]
        }
        # the Authorization the agent made (from the credentials, or the URL's user:password)
        # reached the webhook through the recorder, which made none of its own
        assert all(
            d.headers["authorization"].split()[0] in ("Bearer", "Basic") for d in hook.received
        )
    return [http_out, grpc_out, push_out]


async def send_with_push(base_url: str, hook: Webhook) -> None:
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        card = await A2ACardResolver(http, base_url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        request = SendMessageRequest(
            message=Message(
                message_id="m-1",
                role=Role.ROLE_USER,
                parts=[Part(text="@@ -1 +1,2 @@\n def f():\n+    # FIXME\n")],
            )
        )
        request.configuration.task_push_notification_config.CopyFrom(
            TaskPushNotificationConfig(
                url=hook.url("/hook").replace("http://", f"http://hook:{S[BASIC]}@"),
                token=S["a delivery's X-A2A-Notification-Token"],
                authentication=AuthenticationInfo(
                    scheme="Bearer", credentials=S["a delivery's Authorization from credentials"]
                ),
            )
        )
        _ = [event async for event in client.send_message(request)]
        await client.close()


def written(folders: list[Path]) -> bytes:
    """Every byte under the folders, and every file part's base64 bytes decoded."""
    data = b"\n".join(p.read_bytes() for f in folders for p in sorted(f.rglob("*")) if p.is_file())
    decoded = []
    for raw in _raw_members(data):
        try:
            decoded.append(base64.b64decode(raw, validate=True))
        except ValueError:
            continue
    return data + b"\n" + b"\n".join(decoded)


def _raw_members(data: bytes) -> list[str]:
    return re.findall(r'"(?:raw|bytes)"\s*:\s*"([A-Za-z0-9+/=]+)"', data.decode("utf-8", "replace"))


def spellings(secret: str) -> list[bytes]:
    """The secret as sent, as JSON writes it escaped, URL-encoded, and in base64 (alone, and
    as the `Bearer ` value a `-bin` header holds)."""
    return [
        secret.encode(),
        json.dumps(secret)[1:-1].encode(),
        json.dumps(secret, ensure_ascii=False)[1:-1].encode(),
        urllib.parse.quote_plus(secret).encode(),
        urllib.parse.quote(secret).encode(),
        base64.b64encode(secret.encode()),
        base64.b64encode(f"Bearer {secret}".encode()),
    ]


@pytest.mark.parametrize("place", list(SECRETS))
def test_no_secret_reaches_the_disk_with_the_default_rules(
    place: str, recorded: list[Path]
) -> None:
    data = written(recorded)
    for spelled in spellings(SECRETS[place]):
        assert spelled not in data, (place, spelled)


def test_every_place_was_recorded(recorded: list[Path]) -> None:
    # (a secret that was never recorded would leak nothing: each exchange is there)
    http_out, grpc_out, push_out = recorded
    text = "".join(p.read_text() for p in sorted(http_out.glob("*.http")))
    assert text.count("\n### ") + text.startswith("### ") == 12
    for placeholder in (
        "{{A2A_TOKEN}}",
        "{{X_SESSION_KEY}}",
        "{{SET_COOKIE}}",
        "{{URL_CREDENTIALS}}",
        "{{PUSH_URL_SECRET}}",
        "{{TOKEN}}",
        "{{CREDENTIALS}}",
        "{{PASSWORD}}",
    ):
        assert placeholder in text, placeholder
    grpc_text = "".join(p.read_text() for p in grpc_out.glob("*.http"))
    assert "authorization-bin: {{AUTHORIZATION_BIN}}" in grpc_text
    assert "x-api-key: {{X_API_KEY}}" in grpc_text
    push_text = "".join(p.read_text() for p in push_out.glob("*.http"))
    assert "# @push config" in push_text and "X-A2A-Notification-Token: {{TOKEN}}" in push_text
