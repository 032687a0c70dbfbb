"""The recording proxy end to end on loopback: the proxy's own server (`ProxyServer`), real
uvicorn upstreams, the real kit, the real a2a-sdk client, small upstreams we control for the
failure cases."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from helpers import announced_address
from starlette.applications import Starlette
from starlette.requests import Request as StarletteRequest
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from recorder import load
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.servers import ServerThread, bind_socket

pytestmark = pytest.mark.e2e

LIMIT = 10.0  # seconds: the bound of every wait in this module


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll a condition (not a sleep standing in for one), bounded by LIMIT."""
    deadline = time.monotonic() + LIMIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


@contextmanager
def serve_proxy(upstream: str, out: Path, **options: Any) -> Iterator[ProxyServer]:
    proxy = create_proxy_app(upstream, out=out, **options)
    with ProxyServer(proxy) as server:
        yield server


class Gate:
    """A threading.Event an async upstream can wait on without blocking its loop."""

    def __init__(self) -> None:
        self.event = threading.Event()

    async def wait(self) -> None:
        await anyio.to_thread.run_sync(self.event.wait, LIMIT, abandon_on_cancel=True)

    def open(self) -> None:
        self.event.set()


class ControlledUpstream:
    """An upstream whose replies wait on gates the test opens."""

    def __init__(self) -> None:
        self.gate = Gate()
        self.stream_finished = threading.Event()
        self.stream_closed_early = threading.Event()
        self.slow_started = threading.Event()
        self.app = Starlette(
            routes=[
                Route("/stream", self.stream, methods=["POST"]),
                Route("/slow", self.slow, methods=["POST"]),
                Route("/fast", self.fast, methods=["POST"]),
            ]
        )

    async def stream(self, request: StarletteRequest) -> Response:
        async def frames() -> AsyncIterator[bytes]:
            try:
                yield b'data: {"n": 1}\n\n'
                await self.gate.wait()
                yield b'data: {"n": 2}\n\n'
                yield b'data: {"n": 3}\n\n'
                self.stream_finished.set()
            finally:
                if not self.stream_finished.is_set():
                    self.stream_closed_early.set()

        return StreamingResponse(frames(), media_type="text/event-stream")

    async def slow(self, request: StarletteRequest) -> Response:
        self.slow_started.set()
        await self.gate.wait()
        return JSONResponse({"late": True})

    async def fast(self, request: StarletteRequest) -> Response:
        body = await request.json()
        return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "result": {"ok": True}})


@pytest.fixture
def controlled() -> Iterator[tuple[ControlledUpstream, ServerThread]]:
    upstream = ControlledUpstream()
    with ServerThread(upstream.app) as server:
        try:
            yield upstream, server
        finally:
            upstream.gate.open()


def test_first_frame_reaches_the_client_before_the_upstream_finishes(
    controlled: tuple[ControlledUpstream, ServerThread], tmp_path: Path
) -> None:
    upstream, server = controlled
    with (
        serve_proxy(server.url, tmp_path) as proxy,
        httpx.Client(timeout=LIMIT) as client,
    ):
        with client.stream("POST", proxy.url + "/stream", json={}) as reply:
            lines = reply.iter_lines()
            assert next(lines) == 'data: {"n": 1}'
            # the upstream is still holding the stream open: nothing buffered it
            assert not upstream.stream_finished.is_set()
            assert list(tmp_path.glob("*.http")) == []
            upstream.gate.open()
            rest = [line for line in lines if line]
        assert rest == ['data: {"n": 2}', 'data: {"n": 3}']
    [path] = tmp_path.glob("*.http")
    [exchange] = load(path)
    assert exchange.response.events is not None
    assert [e.data for e in exchange.response.events] == ['{"n": 1}', '{"n": 2}', '{"n": 3}']
    assert not exchange.truncated


def test_client_disconnect_closes_upstream_and_keeps_a_truncated_exchange(
    controlled: tuple[ControlledUpstream, ServerThread], tmp_path: Path
) -> None:
    upstream, server = controlled
    with serve_proxy(server.url, tmp_path, stream_grace=0.2) as proxy:
        with (
            httpx.Client(timeout=LIMIT) as client,
            client.stream("POST", proxy.url + "/stream", json={}) as reply,
        ):
            assert next(reply.iter_lines()) == 'data: {"n": 1}'
        # leaving the block closes the connection mid-stream; the upstream does not end
        # within the grace time, so the proxy closes it
        assert upstream.stream_closed_early.wait(LIMIT), "the upstream stream was not closed"
        wait_until(lambda: len(list(tmp_path.glob("*.http"))) == 1, "the truncated exchange")
        [exchange] = load(next(tmp_path.glob("*.http")))
        assert exchange.truncated
        assert exchange.response.events is not None
        assert [e.data for e in exchange.response.events] == ['{"n": 1}']
        # and it keeps serving
        with httpx.Client(timeout=LIMIT) as client:
            assert client.post(proxy.url + "/fast", json={"id": 9}).status_code == 200


def test_slow_upstream_gives_504_and_the_proxy_keeps_serving(
    controlled: tuple[ControlledUpstream, ServerThread], tmp_path: Path
) -> None:
    _, server = controlled
    timeout = httpx.Timeout(LIMIT, read=0.3)
    with (
        serve_proxy(server.url, tmp_path, timeout=timeout) as proxy,
        httpx.Client(timeout=LIMIT) as client,
    ):
        reply = client.post(proxy.url + "/slow", json={})
        assert reply.status_code == 504
        assert reply.json()["error"]["upstream"] == server.url
        assert server.url in reply.json()["error"]["message"]
        assert client.post(proxy.url + "/fast", json={"id": 1}).status_code == 200
    assert [p.name for p in tmp_path.glob("*.http")] == ["01-post-fast.http"]


def test_a_stream_whose_transcript_cannot_be_written_still_reaches_its_client_whole(
    controlled: tuple[ControlledUpstream, ServerThread],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    upstream, server = controlled
    out = tmp_path / "out"
    upstream.gate.open()
    with serve_proxy(server.url, out) as proxy:
        out.rmdir()
        out.write_text("a file where the folder was")
        with (
            caplog.at_level(logging.ERROR, logger="recorder.record.proxy"),
            httpx.Client(timeout=LIMIT) as client,
        ):
            with client.stream("POST", proxy.url + "/stream", json={}) as reply:
                lines = [line for line in reply.iter_lines() if line]
            assert lines == ['data: {"n": 1}', 'data: {"n": 2}', 'data: {"n": 3}']
            wait_until(lambda: "could not write the transcript" in caplog.text, "the error")
            status = client.get(proxy.url + "/_recorder/status").json()
    assert status["failed"] == 1 and status["recorded"] == 0
    assert str(out) in caplog.text


def test_fifty_concurrent_clients_one_exchange_each(
    controlled: tuple[ControlledUpstream, ServerThread], tmp_path: Path
) -> None:
    _, server = controlled

    async def run(url: str) -> list[int]:
        async def one(n: int) -> int:
            headers = {"Recorder-Scenario": f"group {n % 4}"} if n % 2 else {}
            async with httpx.AsyncClient(timeout=LIMIT) as client:
                reply = await client.post(
                    url + "/fast", json={"jsonrpc": "2.0", "id": n}, headers=headers
                )
                return int(reply.json()["id"])

        return list(await asyncio.gather(*(one(n) for n in range(50))))

    with serve_proxy(server.url, tmp_path) as proxy:
        assert sorted(asyncio.run(run(proxy.url))) == list(range(50))
    files = sorted(tmp_path.glob("*.http"))
    ids = [e.request.json["id"] for f in files for e in load(f)]
    assert sorted(ids) == list(range(50))  # exactly one recorded exchange per request
    assert len(files) == 25 + 2  # 25 unnamed, odd n fall in "group 1" and "group 3"
    numbers = sorted(int(f.name.split("-")[0]) for f in files)
    assert numbers == list(range(1, 28))
    assert sorted(tmp_path.iterdir()) == files  # no temporary file left behind


# --------------------------------------------------------------------------- the real kit


def test_sdk_client_sends_every_call_through_the_proxy(tmp_path: Path) -> None:
    from a2a.client import ClientConfig, create_client
    from a2a.types import (
        CancelTaskRequest,
        GetTaskRequest,
        ListTasksRequest,
        Message,
        Part,
        Role,
        SendMessageRequest,
        SubscribeToTaskRequest,
    )

    from recorder.kit import start_kit

    diff = "--- a/app.py\n+++ b/app.py\n@@ -1,1 +1,2 @@\n x = 1\n+print(x)  # TODO\n"
    slow = diff + "please review slowly\n"

    def message(text: str, n: int) -> SendMessageRequest:
        return SendMessageRequest(
            message=Message(message_id=f"m-{n}", role=Role.ROLE_USER, parts=[Part(text=text)])
        )

    async def conversation(proxy_url: str) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        http = httpx.AsyncClient(timeout=LIMIT, headers={"Recorder-Scenario": "sdk"})
        client = await create_client(proxy_url, client_config=ClientConfig(httpx_client=http))
        try:
            events = [e async for e in client.send_message(message(diff, 1))]
            seen["stream"] = [e.WhichOneof("payload") for e in events]
            task_id = events[0].task.id
            context_id = events[0].task.context_id
            task = await client.get_task(GetTaskRequest(id=task_id))
            seen["state"] = task.status.state
            listed = await client.list_tasks(ListTasksRequest(context_id=context_id))
            seen["listed"] = [t.id for t in listed.tasks] == [task_id]
            # a slow review: subscribe, then cancel it while the subscription is open
            slow_events = client.send_message(message(slow, 2))
            first = await anext(slow_events)
            slow_id = first.task.id
            await slow_events.aclose()
            subscription = client.subscribe(SubscribeToTaskRequest(id=slow_id))
            sub_first = await anext(subscription)
            seen["sub_first"] = sub_first.WhichOneof("payload")
            canceled = await client.cancel_task(CancelTaskRequest(id=slow_id))
            seen["canceled"] = canceled.status.state
            seen["sub_rest"] = [e.WhichOneof("payload") async for e in subscription]
        finally:
            await client.close()
            await http.aclose()
        return seen

    with (
        start_kit(slow_review_seconds=LIMIT) as kit,
        serve_proxy(kit.base_url, tmp_path) as proxy,
    ):
        seen = asyncio.run(conversation(proxy.url))

    assert seen["stream"][0] == "task" and seen["stream"][-1] == "status_update"
    assert seen["listed"] is True
    assert seen["sub_first"] == "task"
    files = sorted(tmp_path.glob("*.http"))
    assert [f.name for f in files] == ["01-sdk.http"]
    titles = [e.title for e in load(files[0])]
    # every call went through the proxy, not only the card fetch
    assert titles == [
        "GetAgentCard",
        "SendStreamingMessage",
        "GetTask",
        "ListTasks",
        "SendStreamingMessage",
        "SubscribeToTask",
        "CancelTask",
    ]
    transcript = load(files[0])
    card = transcript.exchanges[0].response.json
    # the transcript keeps the card as the agent sent it
    assert card["supportedInterfaces"][0]["url"] == f"{kit.base_url}/a2a/jsonrpc"
    stream = transcript.exchanges[1].response
    assert stream.events is not None and len(stream.events) == len(seen["stream"])
    assert transcript.exchanges[1].request.headers.get("A2A-Version") == "1.0"


def test_cli_prints_where_it_listens_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    upstream = ControlledUpstream()
    with ServerThread(upstream.app) as server:
        command = [
            sys.executable,
            "-c",
            "from recorder.cli import main; main()",
            "record",
            "--upstream",
            server.url,
            "--listen",
            "127.0.0.1:0",
            "--out",
            str(tmp_path / "out"),
        ]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        ) as process:
            try:
                assert process.stderr is not None
                first = process.stderr.readline()
                assert first.startswith("recorder record: listening on http://127.0.0.1:")
                assert server.url in first
                url = announced_address(first)
                second = process.stderr.readline()
                assert str(tmp_path / "out") in second
                with httpx.Client(timeout=LIMIT) as client:
                    for n in range(3):
                        reply = client.post(url + "/fast", json={"jsonrpc": "2.0", "id": n})
                        assert reply.status_code == 200
                process.send_signal(signal.SIGINT)
                out, err = process.communicate(timeout=LIMIT)
            finally:
                if process.poll() is None:
                    process.kill()
        assert process.returncode == 0, err
        assert "recorder record: stopped; 3 exchanges recorded in 3 files" in err
        assert out == ""
        files = sorted((tmp_path / "out").iterdir())
        # the three transcripts, and no temporary file or folder is left
        assert [f.suffix for f in files] == [".http"] * 3


def test_cli_exits_1_at_ctrl_c_with_a_summary_when_an_exchange_was_not_recorded(
    tmp_path: Path,
) -> None:
    """The folder becomes a file mid-run: the client still gets the agent's reply, the log
    names the failed write, and Ctrl-C ends with the count on stderr and exit status 1."""
    upstream = ControlledUpstream()
    out = tmp_path / "out"
    with ServerThread(upstream.app) as server:
        command = [sys.executable, "-c", "from recorder.cli import main; main()", "record"]
        command += ["--upstream", server.url, "--listen", "127.0.0.1:0", "--out", str(out)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        ) as process:
            try:
                assert process.stderr is not None
                url = announced_address(process.stderr.readline())
                with httpx.Client(timeout=LIMIT) as client:
                    first = client.post(url + "/fast", json={"jsonrpc": "2.0", "id": 1})
                    assert first.status_code == 200
                    wait_until(lambda: len(list(out.glob("*.http"))) == 1, "the first file")
                    out.rename(tmp_path / "moved")
                    out.write_text("a file where the folder was")
                    second = client.post(url + "/fast", json={"jsonrpc": "2.0", "id": 2})
                    assert second.status_code == 200
                    assert second.json() == {"jsonrpc": "2.0", "id": 2, "result": {"ok": True}}
                    wait_until(
                        lambda: client.get(url + "/_recorder/status").json()["failed"] == 1,
                        "the failed write to be counted",
                    )
                process.send_signal(signal.SIGINT)
                _, err = process.communicate(timeout=LIMIT)
            finally:
                if process.poll() is None:
                    process.kill()
    assert process.returncode == 1, err
    assert "could not write the transcript of POST /fast" in err
    assert "recorder record: 1 exchange recorded, 1 not recorded (see above)" in err
    assert "Traceback" not in err


def test_ctrl_c_ends_an_open_stream_at_once_and_keeps_it_truncated(tmp_path: Path) -> None:
    """An endless stream (the gate stays shut) must not hold Ctrl-C for the server's 5 s grace
    period and then be cancelled with a traceback: it is recorded as truncated and closed."""
    upstream = ControlledUpstream()
    out = tmp_path / "out"
    with ServerThread(upstream.app) as server:
        command = [sys.executable, "-c", "from recorder.cli import main; main()", "record"]
        command += ["--upstream", server.url, "--listen", "127.0.0.1:0", "--out", str(out)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        ) as process:
            try:
                assert process.stderr is not None
                url = announced_address(process.stderr.readline())
                with (
                    httpx.Client(timeout=LIMIT) as client,
                    client.stream("POST", url + "/stream", json={}) as reply,
                ):
                    lines = reply.iter_lines()
                    assert next(lines) == 'data: {"n": 1}'
                    process.send_signal(signal.SIGINT)
                    started = time.monotonic()
                    with pytest.raises(httpx.RemoteProtocolError):
                        list(lines)  # cut short, not a clean end of the stream
                    _, err = process.communicate(timeout=LIMIT)
                    stopped = time.monotonic() - started
            finally:
                if process.poll() is None:
                    process.kill()
                upstream.gate.open()
    assert process.returncode == 0, err
    assert stopped < 4.0, f"Ctrl-C took {stopped:.1f} s with a stream open"
    assert "Traceback" not in err and "was destroyed" not in err, err
    assert "the proxy shut down during POST /stream" in err
    [exchange] = load(next(out.glob("*.http")))
    assert exchange.truncated
    assert [e.data for e in exchange.response.events or ()] == ['{"n": 1}']


def test_cli_rejects_a_bad_listen_address(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from recorder.cli import main

    result = CliRunner().invoke(
        main, ["record", "--upstream", "http://127.0.0.1:9", "--listen", "nope", "--out", "x"]
    )
    assert result.exit_code == 2
    assert "HOST:PORT" in result.output


def test_secret_values_never_reach_any_written_byte(tmp_path: Path) -> None:
    from recorder.kit import start_kit

    token = "kit-secret-token-8c1f"
    with (
        start_kit(token=token) as kit,
        serve_proxy(kit.base_url, tmp_path) as proxy,
        httpx.Client(timeout=LIMIT) as client,
    ):
        for headers in (
            {"Authorization": f"Bearer {token}", "Cookie": f"session={token}"},
            {"Authorization": "Bearer wrong-token-1234", "X-API-Key": token},
        ):
            client.post(
                proxy.url + "/a2a/jsonrpc",
                json={"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard"},
                headers={"A2A-Version": "1.0", **headers},
            )
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert written  # something was recorded
    assert token.encode() not in written
    assert b"wrong-token-1234" not in written
    assert b"Bearer {{A2A_TOKEN}}" in written


def test_planner_records_every_scenario_through_the_proxy(tmp_path: Path) -> None:
    from recorder.planner.run import PLANNED, record_scenarios

    paths = record_scenarios(tmp_path, kit_port=0)
    assert [p.name for p in paths][:2] == ["01-agent-card.http", "02-message-reply.http"]
    assert paths[10].name == "11-errors.http"
    assert len(paths) == len(PLANNED)
    assert paths[-1].name == "22-grpc-errors.http"  # the gRPC scenarios after the HTTP ones
    [reply] = load(paths[1])
    assert reply.request.json["params"]["message"]["parts"][0]["text"] == (
        "What languages can you review?"
    )
    assert "message" in reply.response.json["result"]  # a message, no task
    legacy = load(paths[10]).exchanges[2]
    assert legacy.request.json["method"] == "message/send"
    assert legacy.response.json["error"]["code"] == -32601
    # the client-chosen values are stable: ids 1, 2, 3 ... and messageIds by scenario
    errors = load(paths[10])
    assert [e.request.json["id"] for e in errors if e.request.json] == [1, 2, 3, 5, 6, 7, 8]
    # the CancelTask of the subscribe scenario went out while the stream was open
    subscribe = load(paths[7])
    assert [e.comments for e in subscribe] == [(), (), ("@during exchange 2 frame 1",)]
    written = b"".join(p.read_bytes() for p in paths)
    assert b"kit-demo-token" not in written and b"Bearer {{A2A_TOKEN}}" in written


def test_cli_rejects_a_bad_rules_file(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from recorder.cli import main

    rules = tmp_path / "rules.yaml"
    rules.write_text("secret_headers: [unclosed\n")
    result = CliRunner().invoke(
        main,
        ["record", "--upstream", "http://127.0.0.1:9", "--rules", str(rules), "--out", "x"],
    )
    assert result.exit_code == 2
    assert str(rules) in result.output


# --------------------------------------------------------------------------- upstream connections


class RawUpstream:
    """A bare HTTP/1.1 server on a loopback socket (one thread per connection), for what a
    framework will not do: close a kept-alive connection right after a reply, break off a
    body. Counts the connections it accepted.

    Paths: `/keep` answers and keeps the connection; `/drop` answers with a complete reply
    (no `Connection: close`) and then closes the connection, as an upstream whose keep-alive
    timeout ran out does; `/short` promises 100 bytes, sends 10 and closes; `/big?n=BYTES`
    answers a chunked body of n bytes; `/empty` answers 204. HEAD gets a Content-Length and
    no body."""

    def __init__(self) -> None:
        self.sock = bind_socket()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> RawUpstream:
        self._acceptor.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() (Linux)
        self.sock.close()
        self._acceptor.join(LIMIT)
        for thread in self._threads:
            thread.join(LIMIT)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(LIMIT)
        buffer = b""
        with conn:
            for _ in range(100):  # bounded: requests per connection
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                target = lines[0].split(" ")[1]
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                while len(buffer) < length:
                    data = conn.recv(65536)
                    if not data:
                        return  # the proxy went away mid-body (recv would say b"" forever)
                    buffer += data
                buffer = buffer[length:]
                path, _, query = target.partition("?")
                if lines[0].startswith("HEAD "):
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n")
                    continue
                if path == "/empty":
                    conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
                    continue
                if path == "/short":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
                    return
                if path == "/big":
                    size = int(query.removeprefix("n="))
                    conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                    chunk = bytes(range(256)) * 256  # 64 KiB
                    sent = 0
                    while sent < size:
                        part = chunk[: size - sent]
                        conn.sendall(b"%x\r\n%s\r\n" % (len(part), part))
                        sent += len(part)
                    conn.sendall(b"0\r\n\r\n")
                    continue
                body = b'{"path": "' + path.encode() + b'"}'
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                if path == "/drop":
                    return


def raw_exchange(url: str, request: bytes) -> bytes:
    """Send raw bytes to a loopback server; everything it answers until it closes."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=LIMIT) as conn:
        conn.sendall(request)
        reply = b""
        for _ in range(1000):  # bounded: reads until the server closes
            data = conn.recv(65536)
            if not data:
                break
            reply += data
        return reply


def test_bad_requests_get_400_and_the_proxy_keeps_serving(tmp_path: Path) -> None:
    query = "a=%2b+&b=&&c=" + "x" * 8000  # long, and passed byte for byte
    bad = [
        b"\x00\x01GARBAGE\r\n\r\n",
        b"GET /caf\xe9 HTTP/1.1\r\nHost: x\r\n\r\n",  # not a valid request-target
        b"GET /x HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n\r\n",
        b"GET /x HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
        b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n",
    ]
    with RawUpstream() as upstream, serve_proxy(upstream.url, tmp_path) as proxy:
        for request in bad:
            reply = raw_exchange(proxy.url, request)
            assert reply.startswith(b"HTTP/1.1 400 "), (request, reply[:100])
        good = raw_exchange(
            proxy.url,
            f"GET /keep?{query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(),
        )
        assert good.startswith(b"HTTP/1.1 200 ") and good.endswith(b'{"path": "/keep"}')
    [path] = tmp_path.glob("*.http")  # only the good one reached the agent
    assert load(path).exchanges[0].request.target == f"/keep?{query}"
    assert upstream.connections == 1


def test_upstream_connections_are_kept_and_replaced_when_the_upstream_closes_them(
    tmp_path: Path,
) -> None:
    with (
        RawUpstream() as upstream,
        serve_proxy(upstream.url, tmp_path) as proxy,
        httpx.Client(timeout=LIMIT) as client,
    ):
        for _ in range(3):
            assert client.get(proxy.url + "/keep").json() == {"path": "/keep"}
        assert upstream.connections == 1  # one kept-alive connection served all three
        assert client.get(proxy.url + "/drop").json() == {"path": "/drop"}
        # the upstream closed that connection after its reply: the next request gets a new one
        assert client.get(proxy.url + "/keep").json() == {"path": "/keep"}
        assert upstream.connections == 2
    assert len(list(tmp_path.glob("*.http"))) == 5


def test_upstream_that_breaks_off_a_body_gives_502_and_a_fresh_connection_next(
    tmp_path: Path,
) -> None:
    with (
        RawUpstream() as upstream,
        serve_proxy(upstream.url, tmp_path) as proxy,
        httpx.Client(timeout=LIMIT) as client,
    ):
        reply = client.get(proxy.url + "/short")
        assert reply.status_code == 502
        assert "broke off" in reply.json()["error"]["message"]
        assert client.get(proxy.url + "/keep").status_code == 200
        assert upstream.connections == 2
    assert [p.name for p in tmp_path.glob("*.http")] == ["01-get-keep.http"]


def test_large_streamed_body_passes_whole(tmp_path: Path) -> None:
    # more than the proxy's upstream connection buffers before it pauses reading, in chunks
    # larger than one socket read
    size = 5 * 1024 * 1024 + 123
    expected = (bytes(range(256)) * 256 * 81)[:size]
    with (
        RawUpstream() as upstream,
        serve_proxy(upstream.url, tmp_path) as proxy,
        httpx.Client(timeout=LIMIT) as client,
        client.stream("GET", f"{proxy.url}/big?n={size}") as reply,
    ):
        assert reply.read() == expected
    [path] = tmp_path.glob("*.http")
    assert load(path).exchanges[0].response.body == expected


def test_replies_without_a_body_keep_their_framing_on_upstream_connections(
    tmp_path: Path,
) -> None:
    with (
        RawUpstream() as upstream,
        serve_proxy(upstream.url, tmp_path) as proxy,
        httpx.Client(timeout=LIMIT) as client,
    ):
        for _ in range(2):  # and the connection stays usable after each
            head = client.head(proxy.url + "/thing")
            assert head.status_code == 200 and head.headers["content-length"] == "42"
            empty = client.delete(proxy.url + "/empty")
            assert empty.status_code == 204 and "content-length" not in empty.headers
        assert client.get(proxy.url + "/keep").json() == {"path": "/keep"}
        assert upstream.connections == 1
    assert len(list(tmp_path.glob("*.http"))) == 5


def test_cli_leaves_no_log_handler_behind(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from recorder.cli import main

    before = list(logging.getLogger("recorder.record.proxy").handlers)
    for _ in range(2):
        result = CliRunner().invoke(main, ["record", "--upstream", "ftp://x", "--out", "x"])
        assert result.exit_code == 2 and "http" in result.output
    assert logging.getLogger("recorder.record.proxy").handlers == before
