"""The recording proxy at the ASGI level: httpx.ASGITransport on both sides, no sockets
(except a closed loopback port for "upstream down")."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request as StarletteRequest
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from recorder import load
from recorder.record.proxy import CONTROL_PATH, RecordingProxy, create_proxy_app
from recorder.servers import bind_socket

UPSTREAM = "http://localhost:41242"
TOKEN = "tok-Zq8rXb2Lw9"

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class FakeAgent:
    """A small upstream that remembers what it got."""

    def __init__(self) -> None:
        self.seen: list[StarletteRequest] = []
        self.bodies: list[bytes] = []
        self.app = Starlette(
            routes=[
                Route("/a2a/jsonrpc", self.jsonrpc, methods=["POST"]),
                Route("/.well-known/agent-card.json", self.card),
                Route("/a2a/rest/tasks/{id}", self.rest_task),
                Route("/a2a/rest/extendedAgentCard", self.rest_extended_card),
                Route("/other/.well-known/agent-card.json", self.not_json_card),
            ]
        )

    async def jsonrpc(self, request: StarletteRequest) -> Response:
        self.seen.append(request)
        body = await request.body()
        self.bodies.append(body)
        try:
            call = json.loads(body)
        except ValueError:
            return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": -32700}})
        if call.get("method") == "GetExtendedAgentCard":
            return JSONResponse({"jsonrpc": "2.0", "id": call["id"], "result": self._card()})
        if call.get("method") == "SendStreamingMessage":

            async def frames() -> AsyncIterator[bytes]:
                for n in range(3):
                    yield f'data: {{"jsonrpc":"2.0","id":1,"result":{{"n":{n}}}}}\r\n\r\n'.encode()

            return StreamingResponse(frames(), media_type="text/event-stream")
        echo = {"authorization": request.headers.get("authorization"), "params": call["params"]}
        return JSONResponse(
            {"jsonrpc": "2.0", "id": call.get("id"), "result": echo},
            headers={"Set-Cookie": "sid=cookie-Value-42; Path=/; HttpOnly", "X-Trace": "t1"},
        )

    def _card(self) -> dict[str, Any]:
        return {
            "name": "code-reviewer",
            "supportedInterfaces": [
                {"url": f"{UPSTREAM}/a2a/jsonrpc", "protocolBinding": "JSONRPC"},
                {"url": f"{UPSTREAM}/a2a/rest", "protocolBinding": "HTTP+JSON"},
            ],
        }

    async def card(self, request: StarletteRequest) -> Response:
        self.seen.append(request)
        if request.headers.get("if-none-match") == 'W/"agent-etag"':
            return Response(status_code=304, headers={"ETag": 'W/"agent-etag"'})
        return JSONResponse(self._card(), headers={"ETag": 'W/"agent-etag"'})

    async def rest_extended_card(self, request: StarletteRequest) -> Response:
        card = self._card()
        card["supportedInterfaces"].append(
            {"url": "http://elsewhere.example:41242/a2a/jsonrpc", "protocolBinding": "JSONRPC"}
        )
        return JSONResponse(card)

    async def not_json_card(self, request: StarletteRequest) -> Response:
        return Response(f"<card url='{UPSTREAM}/a2a/jsonrpc'>", media_type="application/json")

    async def rest_task(self, request: StarletteRequest) -> Response:
        self.seen.append(request)
        return JSONResponse({"id": request.path_params["id"], "q": str(request.url.query)})


@pytest.fixture
def agent() -> FakeAgent:
    return FakeAgent()


def make_proxy(agent: FakeAgent, out: Path, **options: Any) -> RecordingProxy:
    return create_proxy_app(
        UPSTREAM, out=out, transport=httpx.ASGITransport(app=agent.app), **options
    )


@asynccontextmanager
async def client_for(proxy: RecordingProxy) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the proxy; on leaving, the exchanges answered so far are on disk (they are
    written after their replies, by the proxy's writer)."""
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=proxy), base_url="http://127.0.0.1:41241"
    ) as client:
        yield client
    assert await proxy.flush(10.0)


def rpc(method: str, params: Any = None, id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}}


def all_text(out: Path) -> str:
    return "".join(p.read_text() for p in sorted(out.rglob("*")) if p.is_file())


async def test_forwards_the_request_and_records_it(agent: FakeAgent, tmp_path: Path) -> None:
    proxy = make_proxy(agent, tmp_path)
    async with client_for(proxy) as client:
        reply = await client.post(
            "/a2a/jsonrpc?x=1",
            json=rpc("GetTask", {"id": "t-1"}),
            headers={
                "A2A-Version": "1.0",
                "Connection": "keep-alive, X-Hop",
                "X-Hop": "dropped",
                "Keep-Alive": "timeout=5",
                "X-Kept": "kept",
            },
        )
    assert reply.status_code == 200
    assert reply.json()["result"]["params"] == {"id": "t-1"}
    seen = agent.seen[0]
    assert seen.url.path == "/a2a/jsonrpc" and seen.url.query == "x=1"
    assert seen.headers["host"] == "localhost:41242"
    assert seen.headers["a2a-version"] == "1.0" and seen.headers["x-kept"] == "kept"
    for name in ("x-hop", "keep-alive", "connection", "accept-encoding"):
        assert name not in seen.headers
    assert json.loads(agent.bodies[0]) == rpc("GetTask", {"id": "t-1"})

    [path] = tmp_path.glob("*.http")
    assert path.name == "01-get-task.http"
    [exchange] = load(path)
    assert exchange.title == "GetTask"
    request = exchange.request
    assert (request.method, request.target) == ("POST", "/a2a/jsonrpc?x=1")
    assert request.headers.names()[0] == "Host"
    assert request.headers.get("Host") == "localhost:41242"
    assert "A2A-Version" in request.headers.names()  # conventional case
    assert "Content-Length" not in request.headers and "X-Hop" not in request.headers
    assert request.json == rpc("GetTask", {"id": "t-1"})
    response = exchange.response
    assert (response.status, response.reason) == (200, "OK")
    assert "Content-Length" not in response.headers
    assert response.headers.get("X-Trace") == "t1"
    assert response.json["result"]["params"] == {"id": "t-1"}


async def test_secrets_never_reach_the_disk(agent: FakeAgent, tmp_path: Path) -> None:
    # (its push config names a loopback webhook: local work, said so)
    proxy = make_proxy(agent, tmp_path, secret_fields={"token": "PUSH_TOKEN"}, push_loopback=True)
    async with client_for(proxy) as client:
        reply = await client.post(
            "/a2a/jsonrpc",
            json=rpc(
                "CreateTaskPushNotificationConfig",
                {"url": "http://127.0.0.1:9/h", "token": "push-Secret-77"},
            ),
            headers={
                "Authorization": f"Bearer {TOKEN}",
                "Cookie": "sid=cookie-Value-42",
                "X-API-Key": "apikey-Secret-99",
            },
        )
    # the client and the agent get the real values
    assert reply.json()["result"]["authorization"] == f"Bearer {TOKEN}"
    assert reply.headers["set-cookie"].startswith("sid=cookie-Value-42")
    assert json.loads(agent.bodies[0])["params"]["token"] == "push-Secret-77"
    text = all_text(tmp_path)
    for secret in (TOKEN, "cookie-Value-42", "apikey-Secret-99", "push-Secret-77"):
        assert secret not in text
    [exchange] = load(next(tmp_path.glob("*.http")))
    assert exchange.request.headers.get("Authorization") == "Bearer {{A2A_TOKEN}}"
    assert exchange.request.headers.get("X-API-Key") == "{{X_API_KEY}}"
    assert exchange.request.json["params"]["token"] == "{{PUSH_TOKEN}}"
    assert exchange.response.headers.get("Set-Cookie") == "sid={{SET_COOKIE}}; Path=/; HttpOnly"
    # the agent echoed the token in its body: scrubbed too
    assert exchange.response.json["result"]["authorization"] == "Bearer {{A2A_TOKEN}}"


async def test_scenario_header_groups_exchanges_and_is_not_forwarded(
    agent: FakeAgent, tmp_path: Path
) -> None:
    proxy = make_proxy(agent, tmp_path)
    async with client_for(proxy) as client:
        for n in (1, 2):
            await client.post(
                "/a2a/jsonrpc",
                json=rpc("GetTask", id=n),
                headers={"Recorder-Scenario": "get-and-list", "Recorder-Title": f"call {n}"},
            )
        await client.post("/a2a/jsonrpc", json=rpc("ListTasks", id=3))
    assert all("recorder-scenario" not in r.headers for r in agent.seen)
    assert all("recorder-title" not in r.headers for r in agent.seen)
    names = sorted(p.name for p in tmp_path.glob("*.http"))
    assert names == ["01-get-and-list.http", "02-list-tasks.http"]
    transcript = load(tmp_path / "01-get-and-list.http")
    assert [e.title for e in transcript] == ["GetTask: call 1", "GetTask: call 2"]


async def test_control_endpoint_names_the_scenario(agent: FakeAgent, tmp_path: Path) -> None:
    proxy = make_proxy(agent, tmp_path)
    async with client_for(proxy) as client:
        started = await client.post(CONTROL_PATH, json={"name": "Message Reply"})
        # (a name that is not its own slug ends with a hash of itself: one file per name)
        slug = "message-reply-" + hashlib.sha256(b"Message Reply").hexdigest()[:8]
        assert started.json() == {"scenario": "Message Reply", "slug": slug}
        assert (await client.get(CONTROL_PATH)).json() == {"scenario": "Message Reply"}
        await client.post("/a2a/jsonrpc", json=rpc("SendMessage", id=1))
        await client.post("/a2a/jsonrpc", json=rpc("GetTask", id=2))
        assert (await client.delete(CONTROL_PATH)).json() == {"ended": "Message Reply"}
        await client.post("/a2a/jsonrpc", json=rpc("GetTask", id=3))
        bad = await client.post(CONTROL_PATH, content=b"{nope")
        assert bad.status_code == 400 and "name" in bad.json()["error"]["message"]
    assert len(agent.seen) == 3  # the control calls never reach the agent
    assert sorted(p.name for p in tmp_path.glob("*.http")) == [
        f"01-{slug}.http",
        "02-get-task.http",
    ]
    assert len(load(tmp_path / f"01-{slug}.http")) == 2


@pytest.mark.parametrize("name", ["..", "/", "../../x", "a/../../b"])
async def test_scenario_names_cannot_leave_the_out_folder(
    agent: FakeAgent, tmp_path: Path, name: str
) -> None:
    out = tmp_path / "out"
    proxy = make_proxy(agent, out)
    async with client_for(proxy) as client:
        reply = await client.post(
            "/a2a/jsonrpc", json=rpc("GetTask"), headers={"Recorder-Scenario": name}
        )
    # (the process's hidden temporary folder aside)
    files = [p for p in tmp_path.rglob("*") if p.is_file() and ".recorder-tmp" not in p.parts]
    if reply.status_code == 400:
        assert files == [] and agent.seen == []
    else:
        assert reply.status_code == 200
        assert [p.parent for p in files] == [out]
        assert ".." not in files[0].name


async def test_card_is_rewritten_for_the_client_only(agent: FakeAgent, tmp_path: Path) -> None:
    proxy = make_proxy(agent, tmp_path)
    async with client_for(proxy) as client:
        reply = await client.get(
            "/.well-known/agent-card.json", headers={"If-None-Match": 'W/"agent-etag"'}
        )
        assert reply.status_code == 200  # the agent's validator is not the client's
        urls = [i["url"] for i in reply.json()["supportedInterfaces"]]
        assert urls == ["http://127.0.0.1:41241/a2a/jsonrpc", "http://127.0.0.1:41241/a2a/rest"]
        assert int(reply.headers["content-length"]) == len(reply.content)
        etag = reply.headers["etag"]
        assert etag != 'W/"agent-etag"'
        again = await client.get("/.well-known/agent-card.json", headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b""
    assert "if-none-match" not in agent.seen[0].headers
    transcript = load(next(tmp_path.glob("*.http")))
    card = transcript.exchanges[0].response.json
    assert card["supportedInterfaces"][0]["url"] == f"{UPSTREAM}/a2a/jsonrpc"
    assert transcript.exchanges[0].title == "GetAgentCard"


async def test_extended_card_over_jsonrpc_is_rewritten(agent: FakeAgent, tmp_path: Path) -> None:
    proxy = make_proxy(agent, tmp_path)
    async with client_for(proxy) as client:
        reply = await client.post(
            "/a2a/jsonrpc",
            json=rpc("GetExtendedAgentCard"),
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
    result = reply.json()["result"]
    assert result["supportedInterfaces"][0]["url"] == "http://127.0.0.1:41241/a2a/jsonrpc"
    recorded = load(next(tmp_path.glob("*.http"))).exchanges[0]
    assert recorded.response.json["result"]["supportedInterfaces"][0]["url"].startswith(UPSTREAM)
    assert TOKEN not in all_text(tmp_path)


async def test_event_stream_is_recorded_as_frames(agent: FakeAgent, tmp_path: Path) -> None:
    proxy = make_proxy(agent, tmp_path)
    async with client_for(proxy) as client:
        reply = await client.post("/a2a/jsonrpc", json=rpc("SendStreamingMessage"))
    assert reply.text.count("data: ") == 3
    exchange = load(next(tmp_path.glob("*.http"))).exchanges[0]
    assert exchange.response.events is not None
    assert [json.loads(e.data or "")["result"]["n"] for e in exchange.response.events] == [0, 1, 2]
    assert not exchange.truncated


async def test_rest_route_and_query(agent: FakeAgent, tmp_path: Path) -> None:
    proxy = make_proxy(agent, tmp_path)
    async with client_for(proxy) as client:
        reply = await client.get("/a2a/rest/tasks/t%201?historyLength=2&a=%20b")
    assert reply.json()["q"] == "historyLength=2&a=%20b"
    [path] = tmp_path.glob("*.http")
    assert path.name == "01-get-task.http"
    assert load(path).exchanges[0].request.target == "/a2a/rest/tasks/t%201?historyLength=2&a=%20b"


async def test_malformed_body_is_forwarded_and_recorded(agent: FakeAgent, tmp_path: Path) -> None:
    proxy = make_proxy(agent, tmp_path)
    async with client_for(proxy) as client:
        reply = await client.post(
            "/a2a/jsonrpc",
            content=b'{"jsonrpc":"2.0","id":7,"method":',
            headers={"Content-Type": "application/json"},
        )
    assert reply.json()["error"]["code"] == -32700
    exchange = load(next(tmp_path.glob("*.http"))).exchanges[0]
    assert exchange.request.body == b'{"jsonrpc":"2.0","id":7,"method":'
    assert exchange.title == "POST /a2a/jsonrpc"


async def test_upstream_down_gives_502_naming_it(tmp_path: Path) -> None:
    sock = bind_socket()  # bound, then closed: a loopback port nobody listens on
    port = sock.getsockname()[1]
    sock.close()
    upstream = f"http://127.0.0.1:{port}"
    proxy = create_proxy_app(upstream, out=tmp_path)
    async with client_for(proxy) as client:
        for _ in range(50):  # and it keeps serving, failure after failure
            reply = await client.post("/a2a/jsonrpc", json=rpc("GetTask"))
            assert reply.status_code == 502
            error = reply.json()["error"]
            assert error["upstream"] == upstream and upstream in error["message"]
    await proxy.aclose()
    assert list(tmp_path.iterdir()) == []  # the proxy's own error is not the agent's reply


async def test_a_failed_write_changes_nothing_the_client_gets_and_is_counted(
    agent: FakeAgent, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "out"
    proxy = make_proxy(agent, out)
    direct = httpx.AsyncClient(transport=httpx.ASGITransport(app=agent.app), base_url=UPSTREAM)
    async with direct, client_for(proxy) as client:
        expected = await direct.post("/a2a/jsonrpc", json=rpc("GetTask"))
        first = await client.post("/a2a/jsonrpc", json=rpc("GetTask"))
        assert await proxy.flush(10.0)
        out.rename(tmp_path / "moved")  # mid-run: a file where the folder was
        out.write_text("a file where the folder should be")
        with caplog.at_level(logging.ERROR, logger="recorder.record.proxy"):
            reply = await client.post("/a2a/jsonrpc", json=rpc("GetTask"))
            assert await proxy.flush(10.0)
        status = (await client.get("/_recorder/status")).json()
    for got in (first, reply):
        assert (got.status_code, got.content) == (200, expected.content)
    assert "could not write the transcript of POST /a2a/jsonrpc" in caplog.text
    assert "Not a directory" in caplog.text or "File exists" in caplog.text
    assert status["recorded"] == 1 and status["failed"] == 1 and status["pending"] == 0
    assert status["out"] == str(out)
    assert "Not a directory" in status["last_error"] or "File exists" in status["last_error"]
    assert proxy.not_recorded == 1


async def test_a_store_whose_write_raises_reaches_the_log_and_the_status_not_the_client(
    agent: FakeAgent, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    proxy = make_proxy(agent, tmp_path)

    def broken_write(*args: Any, **kwargs: Any) -> Path:
        raise OSError(28, "No space left on device")

    proxy.store.write = broken_write  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, logger="recorder.record.proxy"):
        async with client_for(proxy) as client:
            replies = [
                await client.post("/a2a/jsonrpc", json=rpc("GetTask", id=n)) for n in range(3)
            ]
            assert await proxy.flush(10.0)
            status = (await client.get("/_recorder/status")).json()
    assert [r.status_code for r in replies] == [200, 200, 200]
    assert [r.json()["id"] for r in replies] == [0, 1, 2]
    assert caplog.text.count("No space left on device") == 3
    assert status == {
        "recorded": 0,
        "failed": 3,
        "kept": 0,
        "pending": 0,
        "out": str(tmp_path),
        "last_error": "No space left on device",
        "push_refused": 0,
    }


async def test_replies_go_out_before_their_recording(agent: FakeAgent, tmp_path: Path) -> None:
    proxy = make_proxy(agent, tmp_path)
    release = threading.Event()
    writes_done: list[Path] = []
    real_write = proxy.store.write

    def blocked_write(*args: Any, **kwargs: Any) -> Path:
        release.wait(5.0)  # bounded: on a proxy that records first, the reply waits this long
        path = real_write(*args, **kwargs)
        writes_done.append(path)
        return path

    proxy.store.write = blocked_write  # type: ignore[method-assign]
    try:
        async with client_for(proxy) as client:
            started = time.monotonic()
            reply = await client.post("/a2a/jsonrpc", json=rpc("GetTask"))
            waited = time.monotonic() - started
            assert reply.status_code == 200
            assert writes_done == [] and waited < 4.0  # the write is still blocked
            status = (await client.get("/_recorder/status")).json()
            assert (status["pending"], status["recorded"]) == (1, 0)
            release.set()
        assert len(writes_done) == 1 and proxy.status()["pending"] == 0
    finally:
        release.set()
        await proxy.aclose()


async def test_recordings_land_in_request_order_when_replies_finish_out_of_order(
    tmp_path: Path,
) -> None:
    arrived, release = asyncio.Event(), asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        if scope["path"] == "/first":
            arrived.set()
            await release.wait()
        body = scope["path"].encode()
        headers = [(b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    proxy = create_proxy_app(UPSTREAM, out=tmp_path, transport=httpx.ASGITransport(app=app))
    scenario = {"Recorder-Scenario": "order"}
    async with client_for(proxy) as client:
        first = asyncio.ensure_future(client.get("/first", headers=scenario))
        await asyncio.wait_for(arrived.wait(), 10)
        for n in range(5):  # each answered, and handed to the writer, before the first
            assert (await client.get(f"/later-{n}", headers=scenario)).status_code == 200
        release.set()
        assert (await asyncio.wait_for(first, 10)).text == "/first"
    await proxy.aclose()
    [path] = tmp_path.glob("*.http")
    targets = [e.request.target for e in load(path)]
    assert targets == ["/first"] + [f"/later-{n}" for n in range(5)]


async def test_shutdown_counts_a_recording_still_pending_as_not_recorded(
    agent: FakeAgent, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    proxy = make_proxy(agent, tmp_path, drain_timeout=0.2)
    release = threading.Event()
    real_write = proxy.store.write

    def blocked_write(*args: Any, **kwargs: Any) -> Path:
        release.wait(5.0)
        return real_write(*args, **kwargs)

    proxy.store.write = blocked_write  # type: ignore[method-assign]
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=proxy), base_url="http://127.0.0.1:41241"
        ) as client:
            assert (await client.post("/a2a/jsonrpc", json=rpc("GetTask"))).status_code == 200
        with caplog.at_level(logging.ERROR, logger="recorder.record.proxy"):
            started = time.monotonic()
            await proxy.aclose()
        assert time.monotonic() - started < 2.0  # bounded by drain_timeout
    finally:
        release.set()
    assert proxy.status()["failed"] == 1 and proxy.status()["pending"] == 0
    assert "1 exchanges were still waiting to be written" in caplog.text


async def test_upstream_cookies_are_not_replayed_to_other_requests(
    agent: FakeAgent, tmp_path: Path
) -> None:
    proxy = make_proxy(agent, tmp_path)
    async with client_for(proxy) as first, client_for(proxy) as second:
        reply = await first.post("/a2a/jsonrpc", json=rpc("GetTask"))
        assert "sid=cookie-Value-42" in reply.headers["set-cookie"]
        second.cookies.clear()
        await second.post("/a2a/jsonrpc", json=rpc("GetTask", id=2))
    assert "cookie" not in agent.seen[1].headers  # the proxy keeps no cookie jar


async def test_replies_without_a_body_keep_their_framing(tmp_path: Path) -> None:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        status = 204 if scope["path"] == "/empty" else 200
        headers = [(b"content-length", b"42")] if scope["method"] == "HEAD" else []
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    proxy = create_proxy_app(UPSTREAM, out=tmp_path, transport=httpx.ASGITransport(app=app))
    async with client_for(proxy) as client:
        head = await client.head("/thing")
        empty = await client.delete("/empty")
    assert head.status_code == 200 and head.headers["content-length"] == "42"
    assert empty.status_code == 204 and "content-length" not in empty.headers
    assert len(list(tmp_path.glob("*.http"))) == 2


async def test_logs_name_the_request_without_its_secret_query_values(
    agent: FakeAgent, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sock = bind_socket()  # a closed loopback port: upstream down
    port = sock.getsockname()[1]
    sock.close()
    down = create_proxy_app(f"http://127.0.0.1:{port}", out=tmp_path, secret_fields=["api_key"])
    unwritable = tmp_path / "file"
    unwritable.write_text("a file where the folder should be")
    broken = make_proxy(agent, unwritable, secret_fields=["api_key"])
    with caplog.at_level(logging.INFO, logger="recorder.record.proxy"):
        for proxy, status in ((down, 502), (broken, 200)):
            async with client_for(proxy) as client:
                reply = await client.post("/a2a/jsonrpc?api_key=key-Vq3Zt8", json=rpc("GetTask"))
            assert reply.status_code == status
            await proxy.aclose()
    assert "could not write the transcript" in caplog.text and "failed" in caplog.text
    assert "api_key={{API_KEY}}" in caplog.text
    assert "key-Vq3Zt8" not in caplog.text


async def test_a_request_in_flight_when_its_scenario_ends_stays_in_its_file(
    tmp_path: Path,
) -> None:
    arrived, release = asyncio.Event(), asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["path"] == "/slow":
            arrived.set()
            await release.wait()
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    proxy = create_proxy_app(UPSTREAM, out=tmp_path, transport=httpx.ASGITransport(app=app))
    async with client_for(proxy) as client:
        await client.post(CONTROL_PATH, json={"name": "s"})
        await client.get("/fast")
        slow = asyncio.ensure_future(client.get("/slow"))
        await asyncio.wait_for(arrived.wait(), 10)
        await client.delete(CONTROL_PATH)
        await client.get("/other")
        release.set()
        assert (await asyncio.wait_for(slow, 10)).status_code == 204
    names = sorted(p.name for p in tmp_path.glob("*.http"))
    assert names == ["01-s.http", "02-get-other.http"]
    assert [e.title for e in load(tmp_path / "01-s.http")] == ["GET /fast", "GET /slow"]


async def test_a_request_body_over_the_limit_gets_413_and_is_not_forwarded(
    agent: FakeAgent, tmp_path: Path
) -> None:
    proxy = make_proxy(agent, tmp_path, max_body=1000)

    async def chunks() -> AsyncIterator[bytes]:  # chunked: no Content-Length to go by
        for _ in range(5):
            yield b"x" * 300

    async with client_for(proxy) as client:
        reply = await client.post("/a2a/jsonrpc", content=chunks())
        assert reply.status_code == 413
        assert reply.json()["error"]["upstream"] == UPSTREAM
        assert "1000 bytes" in reply.json()["error"]["message"]
        ok = await client.post("/a2a/jsonrpc", content=b"y" * 1000)  # at the limit: forwarded
    assert ok.status_code == 200
    assert agent.bodies == [b"y" * 1000]
    assert len(list(tmp_path.glob("*.http"))) == 1


def test_credentials_in_the_upstream_url_are_refused_without_echoing_them(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValueError, match="credentials") as raised:
        create_proxy_app("http://agent:pw-Xk39q@127.0.0.1:41242", out=tmp_path)
    assert "pw-Xk39q" not in str(raised.value)


async def test_echoed_secrets_never_reach_any_written_byte(tmp_path: Path) -> None:
    """The agent echoes what it got into an SSE frame, an error body and a cookie; the client
    sends secrets in headers, a cookie among others, a query parameter and a JSON field."""
    token, sid, key, field = "tok-Hq7Zp2", "sid-Jr5Wm9", "key-Vb8Nc4", "fld-Tz6Ys1"

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        message = await receive()
        echo = json.dumps(
            {
                "headers": {k.decode(): v.decode() for k, v in scope["headers"]},
                "query": scope["query_string"].decode(),
                "body": message.get("body", b"").decode(),
                "sid": sid,
            }
        ).encode()
        stream = scope["path"] == "/stream"
        headers = [(b"content-type", b"text/event-stream" if stream else b"application/json")]
        headers.append((b"set-cookie", f"sid={sid}; Path=/".encode()))
        status = 200 if stream else 401
        await send({"type": "http.response.start", "status": status, "headers": headers})
        body = b"data: " + echo + b"\n\n" if stream else echo
        await send({"type": "http.response.body", "body": body})

    proxy = create_proxy_app(
        UPSTREAM,
        out=tmp_path,
        transport=httpx.ASGITransport(app=app),
        secret_fields=["api_key", "credentials"],
    )
    async with client_for(proxy) as client:
        for path in ("/stream", "/error"):
            await client.post(
                f"{path}?a=1&api_key={key}",
                json={"credentials": field},
                headers={
                    "Authorization": f"Bearer {token}",
                    "Cookie": f"theme=dark; sid={sid}",
                    "X-API-Key": key,
                },
            )
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert written.count(b"### POST") == 2
    for secret in (token, sid, key, field):
        assert secret.encode() not in written, secret


async def test_extended_card_over_rest_rewrites_only_the_upstream_urls(
    agent: FakeAgent, tmp_path: Path
) -> None:
    proxy = make_proxy(agent, tmp_path)
    async with client_for(proxy) as client:
        reply = await client.get("/a2a/rest/extendedAgentCard")
        broken = await client.get("/other/.well-known/agent-card.json")
    urls = [i["url"] for i in reply.json()["supportedInterfaces"]]
    assert urls == [
        "http://127.0.0.1:41241/a2a/jsonrpc",
        "http://127.0.0.1:41241/a2a/rest",
        "http://elsewhere.example:41242/a2a/jsonrpc",  # not the upstream: left alone
    ]
    assert broken.text == f"<card url='{UPSTREAM}/a2a/jsonrpc'>"  # not JSON: as it came
    titles = sorted(e.title for p in tmp_path.glob("*.http") for e in load(p))
    assert titles == ["GetAgentCard", "GetExtendedAgentCard"]


async def test_a_request_cancelled_before_its_reply_is_recorded_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    arrived = asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        arrived.set()
        await asyncio.Event().wait()  # never answers

    proxy = create_proxy_app(UPSTREAM, out=tmp_path, transport=httpx.ASGITransport(app=app))
    async with client_for(proxy) as client:
        with caplog.at_level(logging.WARNING, logger="recorder.record.proxy"):
            pending = asyncio.ensure_future(client.get("/hang?x=1"))
            await asyncio.wait_for(arrived.wait(), 10)
            pending.cancel()  # as uvicorn cancels it when its shutdown grace period runs out
            with pytest.raises(asyncio.CancelledError):
                await pending
        assert "GET /hang?x=1 was cancelled before its reply was recorded" in caplog.text
        await proxy.aclose()  # (the files the store opened ahead go with it)
        assert list(tmp_path.iterdir()) == []


async def test_a_card_too_large_to_rewrite_passes_as_it_came_and_the_log_says_so(
    agent: FakeAgent, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    proxy = RecordingProxy(
        UPSTREAM, out=tmp_path, transport=httpx.ASGITransport(app=agent.app), buffer_limit=10
    )
    async with client_for(proxy) as client:
        with caplog.at_level(logging.WARNING, logger="recorder.record.proxy"):
            reply = await client.get("/.well-known/agent-card.json")
    assert reply.json() == agent._card()  # the agent's URLs: not rewritten
    assert "passed through without pointing its URLs at the proxy" in caplog.text


async def test_a_utf8_scenario_name_is_read_as_utf8(agent: FakeAgent, tmp_path: Path) -> None:
    proxy = make_proxy(agent, tmp_path)
    async with client_for(proxy) as client:
        await client.post(
            "/a2a/jsonrpc",
            json=rpc("GetTask"),
            headers={
                b"Recorder-Scenario": "Überprüfung".encode(),
                b"Recorder-Title": "für alle".encode(),
            },
        )
    [path] = tmp_path.glob("*.http")
    # not Latin-1 mojibake (01-a-berpra-fung-...); the hash is of the name read as UTF-8
    digest = hashlib.sha256("Überprüfung".encode()).hexdigest()[:8]
    assert path.name == f"01-uberprufung-{digest}.http"
    assert load(path).exchanges[0].title == "GetTask: für alle"


async def test_a_token_an_earlier_reply_gave_is_scrubbed_once_the_client_sends_it(
    tmp_path: Path,
) -> None:
    token = "tok-Gf5Hs2Kd"

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = json.dumps({"access": token}).encode()
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    proxy = create_proxy_app(UPSTREAM, out=tmp_path, transport=httpx.ASGITransport(app=app))
    async with client_for(proxy) as client:
        await client.post("/login")  # the agent's reply holds the token: not known as one yet
        await client.get("/me", headers={"Authorization": f"Bearer {token}"})
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert written.count(b"{{A2A_TOKEN}}") == 3  # login reply, the header, the echo
    assert token.encode() not in written


async def test_a_stream_that_ends_inside_a_frame_keeps_its_whole_frames_as_truncated(
    tmp_path: Path,
) -> None:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b'data: {"i": 0}\n\n', "more_body": True})
        await send({"type": "http.response.body", "body": b'data: {"i": 1'})

    proxy = create_proxy_app(UPSTREAM, out=tmp_path, transport=httpx.ASGITransport(app=app))
    async with client_for(proxy) as client:
        reply = await client.post("/a2a/jsonrpc", json=rpc("SendStreamingMessage"))
    assert reply.content == b'data: {"i": 0}\n\ndata: {"i": 1'  # passed on as it came
    exchange = load(next(tmp_path.glob("*.http"))).exchanges[0]
    assert exchange.truncated
    assert exchange.response.events is not None
    assert [e.data for e in exchange.response.events] == ['{"i": 0}']


async def test_under_another_asgi_server_the_lifespan_prepares_the_folder_and_closes(
    tmp_path: Path,
) -> None:
    """`recorder record` serves the proxy itself; another ASGI server runs its lifespan:
    startup makes the folder (or fails, saying why), shutdown closes the proxy."""

    async def lifespan(proxy: RecordingProxy) -> list[dict[str, Any]]:
        incoming = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return next(incoming)

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await proxy({"type": "lifespan"}, receive, send)
        return sent

    out = tmp_path / "out"
    sent = await lifespan(create_proxy_app(UPSTREAM, out=out))
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert out.is_dir()

    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    [failed] = await lifespan(create_proxy_app(UPSTREAM, out=blocked))
    assert failed["type"] == "lifespan.startup.failed"
    assert str(blocked) in failed["message"]


def _chunked_card_app(card: dict[str, Any]) -> Any:
    """An agent that sends its card in chunks without a Content-Length (as Node's http does
    for a body written in parts)."""
    body = json.dumps(card).encode()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for start in range(0, len(body), 64):
            chunk = body[start : start + 64]
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    return app


async def test_a_card_sent_chunked_is_rewritten_and_recorded(tmp_path: Path) -> None:
    card = {
        "name": "chunked",
        "supportedInterfaces": [
            {"url": f"{UPSTREAM}/a2a/jsonrpc", "protocolBinding": "JSONRPC"},
            {"url": f"{UPSTREAM}/a2a/rest", "protocolBinding": "HTTP+JSON"},
        ],
    }
    transport = httpx.ASGITransport(app=_chunked_card_app(card))
    proxy = create_proxy_app(UPSTREAM, out=tmp_path, transport=transport)
    async with client_for(proxy) as client:
        reply = await client.get("/.well-known/agent-card.json")
    assert reply.status_code == 200
    urls = [i["url"] for i in reply.json()["supportedInterfaces"]]
    assert urls == ["http://127.0.0.1:41241/a2a/jsonrpc", "http://127.0.0.1:41241/a2a/rest"]
    await proxy.aclose()
    [path] = tmp_path.glob("*.http")
    assert load(path).exchanges[0].response.json == card  # recorded as the agent sent it


async def test_a_chunked_card_over_the_limit_passes_as_it_came_and_is_recorded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    card = {"name": "chunked", "supportedInterfaces": [{"url": f"{UPSTREAM}/a2a/jsonrpc"}]}
    transport = httpx.ASGITransport(app=_chunked_card_app(card))
    proxy = create_proxy_app(UPSTREAM, out=tmp_path, transport=transport, buffer_limit=70)
    async with client_for(proxy) as client:
        with caplog.at_level(logging.WARNING, logger="recorder.record.proxy"):
            reply = await client.get("/.well-known/agent-card.json")
    assert reply.json() == card  # the agent's URLs: not rewritten, nothing lost
    assert "passed through without pointing its URLs at the proxy" in caplog.text
    await proxy.aclose()
    [path] = tmp_path.glob("*.http")
    assert load(path).exchanges[0].response.json == card
