"""The recorder never delivers where the agent would not (issue 34, item 2), end to end: the
real kit, the recorder's own server and a loopback webhook that every spelling below reaches.

Webhooks the kit refuses (`0.0.0.0`, `127.1`, `2130706433`), a `file:` URL and the recorder's
own `/a2a/jsonrpc` got deliveries through the recorder (or were attempted) while the kit,
directly, sent none: each such registration is now refused by the recorder with its own A2A
error, reaches neither the agent nor a transcript, and the webhook gets nothing of them. An
agent that screens push URLs refuses the recorder's loopback receiver: `push_receiver` gives
it an address it accepts."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
)
from starlette.applications import Starlette

from recorder import load
from recorder.kit import KitServer
from recorder.kit.card import JSONRPC_PATH, build_public_card
from recorder.kit.executor import CodeReviewerExecutor
from recorder.planner.webhook import Webhook
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.call import Call, CallRequest, Routing
from recorder.record.proxy.server import ProxyServer, listening_socket
from recorder.secrets.redact import Redactor
from recorder.servers import ServerThread, bind_socket

pytestmark = pytest.mark.e2e

LIMIT = 20.0
ASKS = "@@ -1,2 +1,3 @@\n def total(items):\n+    # FIXME: handle it\n     return sum(items)\n"


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll a condition (not a sleep standing in for one), bounded by LIMIT."""
    deadline = time.monotonic() + LIMIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def rpc(method: str, params: dict[str, Any], rpc_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}


def send(text: str, n: int, task: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "messageId": f"m-{n}",
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    if task is not None:
        message["taskId"], message["contextId"] = task["id"], task["contextId"]
    return rpc("SendMessage", {"message": message}, n)


@contextlib.contextmanager
def recording(kit: KitServer, out: Path, **options: Any) -> Iterator[tuple[Any, httpx.Client]]:
    proxy = create_proxy_app(kit.base_url, out=out, **options)
    with (
        ProxyServer(proxy) as server,
        httpx.Client(base_url=server.url, timeout=LIMIT, headers={"A2A-Version": "1.0"}) as client,
    ):
        yield proxy, client


def test_webhooks_the_agent_would_not_deliver_to_are_refused_by_the_recorder(
    kit: KitServer, tmp_path: Path
) -> None:
    with Webhook() as hook, recording(kit, tmp_path, push_loopback=True) as (_, client):
        port = hook.port
        own = client.base_url.port
        refused = {
            "/unspecified": f"http://0.0.0.0:{port}/unspecified",
            "/short": f"http://127.1:{port}/short",
            "/number": f"http://2130706433:{port}/number",
            "/file": "file:///etc/passwd",
            "/own": f"http://127.0.0.1:{own}/a2a/jsonrpc",
        }
        task = client.post("/a2a/jsonrpc", json=send(ASKS, 1)).json()["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        errors = []
        for n, url in enumerate(refused.values(), 10):
            # (each its own id: a config of the same id would take the place of the last)
            params = {"taskId": task["id"], "id": f"cfg-{n}", "url": url, "token": f"tk-{n}"}
            reply = client.post(
                "/a2a/jsonrpc", json=rpc("CreateTaskPushNotificationConfig", params, n)
            )
            assert reply.status_code == 200
            errors.append(reply.json())
        # the same refusal on HTTP+JSON, in its shape
        rest = client.post(
            f"/a2a/rest/tasks/{task['id']}/pushNotificationConfigs",
            json={"taskId": task["id"], "id": "cfg-rest", "url": f"http://0.0.0.0:{port}/rest"},
        )
        # a webhook it does deliver to, registered last: its COMPLETED delivery is the last
        good = client.post(
            "/a2a/jsonrpc",
            json=rpc(
                "CreateTaskPushNotificationConfig",
                {"taskId": task["id"], "url": hook.url("/good")},
                20,
            ),
        )
        assert good.json()["result"]["url"] == hook.url("/good")
        done = client.post("/a2a/jsonrpc", json=send("src/totals.py", 30, task)).json()
        assert done["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        hook.wait(1, LIMIT)
        wait_until(
            lambda: any(d.state == "TASK_STATE_COMPLETED" for d in hook.received),
            "the good webhook's COMPLETED delivery",
        )
        status = client.get("/_recorder/status").json()
    for error, n in zip(errors, range(10, 15), strict=True):
        assert error["id"] == n
        assert error["error"]["code"] == -32602
        assert error["error"]["message"].startswith(
            "Invalid push notification URL: the recorder does not deliver there: "
        )
        assert error["error"]["data"][0]["metadata"] == {"refusedBy": "recorder"}
    assert "own address" in errors[-1]["error"]["message"]
    assert rest.status_code == 400
    assert rest.json()["error"]["status"] == "INVALID_ARGUMENT"
    # not one delivery aimed at a refused webhook reached it
    assert {d.path for d in hook.received} == {"/good"}
    assert status["push_refused"] == 6
    # the refusals are the recorder's: no transcript holds them, nor a delivery the recorder's
    # own /a2a/jsonrpc got
    texts = "".join(path.read_text() for path in tmp_path.glob("*.http"))
    for url in (*refused.values(), "/rest"):
        assert url not in texts
    assert "statusUpdate" not in "".join(
        json.dumps(e.request.json)
        for path in tmp_path.glob("*.http")
        for e in load(path).exchanges
        if e.push_config is None and e.request.target == "/a2a/jsonrpc"
    )


def test_a_loopback_webhook_needs_the_option_for_local_work(kit: KitServer, tmp_path: Path) -> None:
    with Webhook() as hook, recording(kit, tmp_path) as (_, client):
        message = send(ASKS, 1)
        message["params"]["configuration"] = {
            "taskPushNotificationConfig": {"url": hook.url("/hook"), "token": "tk"}
        }
        reply = client.post("/a2a/jsonrpc", json=message).json()
    assert reply["error"]["code"] == -32602
    assert "--push-loopback" in reply["error"]["message"]
    assert hook.received == []
    # the SendMessage never reached the agent: no task was made, nothing recorded
    assert list(tmp_path.glob("*.http")) == []


@contextlib.contextmanager
def agent_that_screens(accepts: Callable[[str], bool]) -> Iterator[str]:
    """An a2a-sdk agent (the kit's executor and card) that screens push URLs with `accepts`,
    as the SDK's `push_url_validator` does (at registration and before each delivery)."""

    async def validator(url: str) -> bool:
        return accepts(url)

    sock = bind_socket("127.0.0.1", 0)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    card = build_public_card(base)
    store = InMemoryPushNotificationConfigStore()
    # (no keep-alive: no connection of the agent's outlives its delivery, nor its loop)
    client = httpx.AsyncClient(
        timeout=5.0, trust_env=False, limits=httpx.Limits(max_keepalive_connections=0)
    )
    handler = DefaultRequestHandler(
        agent_executor=CodeReviewerExecutor(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        push_config_store=store,
        push_sender=BasePushNotificationSender(client, store, push_url_validator=validator),
        push_url_validator=validator,
    )
    app = Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, rpc_url=JSONRPC_PATH),
        ]
    )
    with ServerThread(app, sock=sock):
        yield base


def test_an_agent_that_screens_push_urls_is_recorded_through_an_advertised_receiver(
    tmp_path: Path,
) -> None:
    listen = listening_socket("127.0.0.1", 0)
    port = listen.getsockname()[1]
    # the address the agent accepts (here `localhost`: in real use a public one, a tunnel to
    # the recorder's listener), which the recorder's own loopback receiver is not
    advertised = f"http://localhost:{port}"
    with (
        Webhook() as hook,
        agent_that_screens(lambda url: url.startswith(advertised + "/_recorder/push/")) as agent,
    ):
        for receiver in (None, advertised):
            out = tmp_path / ("advertised" if receiver else "default")
            proxy = create_proxy_app(agent, out=out, push_loopback=True, push_receiver=receiver)
            sock = listen if receiver else listening_socket("127.0.0.1", 0)
            with (
                ProxyServer(proxy, sock=sock) as server,
                httpx.Client(
                    base_url=server.url, timeout=LIMIT, headers={"A2A-Version": "1.0"}
                ) as client,
            ):
                message = send(ASKS, 1)
                message["params"]["configuration"] = {
                    "taskPushNotificationConfig": {"url": hook.url(f"/{out.name}"), "token": "tk"}
                }
                reply = client.post("/a2a/jsonrpc", json=message).json()
                if receiver is None:
                    # the agent's own refusal of the recorder's loopback receiver
                    assert reply["error"]["code"] == -32602, reply
                    assert reply["error"]["message"] == "Invalid push notification URL", reply
                    continue
                assert reply["result"]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
                hook.wait(1, LIMIT)
                wait_until(partial(lambda p: p.recorded >= 2, proxy), "the delivery recorded")
    assert {d.path for d in hook.received} == {"/advertised"}
    assert {d.headers["x-a2a-notification-token"] for d in hook.received} == {"tk"}
    [path] = (tmp_path / "advertised").glob("*.http")
    deliveries = [e for e in load(path).exchanges if e.push_config == 1]
    assert deliveries and all(e.request.target == "/advertised" for e in deliveries)


def test_a_grpc_registered_webhook_the_recorder_refuses_never_reaches_the_agent(
    tmp_path: Path,
) -> None:
    # (the gRPC listener asks `PushRoom.refusal` first, to answer the client; whatever it
    # does, `point` never hands the agent a webhook the recorder would not deliver to)
    proxy = create_proxy_app("http://127.0.0.1:9", out=tmp_path)
    proxy.push.listening("127.0.0.1", 41999)
    call = Call(
        CallRequest(
            method="GRPC",
            target="/lf.a2a.v1.A2AService/CreateTaskPushNotificationConfig",
            headers=(),
            body=b"{}",
        )
    )
    call.routing, call.redactor = Routing(proxy.store.begin(), None), Redactor()
    body = {"taskId": "t-1", "url": "http://169.254.169.254/latest/meta-data", "token": "tk"}
    reason = proxy.push.refusal(call.request.method, call.request.target, body)
    assert reason is not None and "not a public address" in reason
    assert proxy.push.point(call, body)
    receiver = httpx.URL(body["url"])
    assert str(receiver).startswith("http://127.0.0.1:41999/_recorder/push/")

    async def deliver() -> httpx.Response:
        transport = httpx.ASGITransport(app=proxy)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:41999") as c:
            return await c.post(receiver.path, json={"statusUpdate": {}})

    answer = asyncio.run(deliver())
    assert answer.status_code == 410
    assert "its webhook was refused" in answer.json()["error"]["message"]
    assert list(tmp_path.glob("*.http")) == []


def test_over_grpc_a_refused_webhook_is_invalid_argument_and_a_deleted_config_ends(
    kit: KitServer, tmp_path: Path
) -> None:
    import grpc
    from a2a.types import a2a_pb2
    from google.protobuf import empty_pb2

    service = "/lf.a2a.v1.A2AService/"
    proxy = create_proxy_app(kit.base_url, out=tmp_path, push_loopback=True)
    listener = proxy.listen_grpc(port=0, upstream=kit.grpc_address)
    with (
        Webhook() as hook,
        ProxyServer(proxy),
        grpc.insecure_channel(f"127.0.0.1:{listener.port}") as channel,
    ):
        version = (("a2a-version", "1.0"),)

        def call(method: str, message: Any, reply: Any) -> Any:
            return channel.unary_unary(
                service + method,
                request_serializer=type(message).SerializeToString,
                response_deserializer=reply.FromString,
            )(message, metadata=version, timeout=LIMIT)

        ask = a2a_pb2.SendMessageRequest()
        ask.message.message_id, ask.message.role = "m-1", a2a_pb2.ROLE_USER
        ask.message.parts.add(text=ASKS)
        task = call("SendMessage", ask, a2a_pb2.SendMessageResponse).task
        refused = a2a_pb2.TaskPushNotificationConfig(
            task_id=task.id, id="cfg-0", url=f"http://0.0.0.0:{hook.port}/x"
        )
        with pytest.raises(grpc.RpcError) as raised:
            call("CreateTaskPushNotificationConfig", refused, a2a_pb2.TaskPushNotificationConfig)
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert raised.value.details().startswith(
            "Invalid push notification URL: the recorder does not deliver there: "
        )
        good = a2a_pb2.TaskPushNotificationConfig(
            task_id=task.id, id="cfg-1", url=hook.url("/hook"), token="tk"
        )
        created = call("CreateTaskPushNotificationConfig", good, a2a_pb2.TaskPushNotificationConfig)
        assert created.url == hook.url("/hook")
        listed = httpx.post(
            kit.base_url + "/a2a/jsonrpc",
            json=rpc("ListTaskPushNotificationConfigs", {"taskId": task.id}, 9),
            headers={"A2A-Version": "1.0"},
            timeout=LIMIT,
        ).json()["result"]["configs"]
        assert [c["id"] for c in listed] == ["cfg-1"]  # (the refused one never got there)
        receiver = listed[0]["url"]
        delete = a2a_pb2.DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="cfg-1")
        call("DeleteTaskPushNotificationConfig", delete, empty_pb2.Empty)
        late = httpx.post(receiver, json={}, headers={"X-A2A-Notification-Token": "tk"})
        assert late.status_code == 410
    assert hook.received == []
    assert proxy.status()["push_refused"] == 2  # the registration, the late delivery
