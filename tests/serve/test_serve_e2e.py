"""`recorder serve` end to end: the real a2a-sdk client against the stand-in, compared with the
same client against the real kit.

- The planner's 16 scenarios (`recorder.planner.scenarios`, what made `transcripts/`) run
  against the kit and against `recorder serve transcripts/` (the CLI, a subprocess); every
  reply the client got is the same once generated ids, times and loopback addresses are
  set aside (status, JSON-RPC results and errors, every stream frame).
- The unscripted client (`tests/traffic.py`: uuid4 message ids and JSON-RPC ids, no
  scenario header) recorded against the kit, then run against the stand-in of its own
  recording, sees what it saw against the kit; two such clients at once too.
- A request that matches nothing gets the error naming the closest exchange; `--strict` exits
  1; a busy port is one line; Ctrl-C is quick and quiet.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import TRANSCRIPTS, announced_address
from traffic import drive

from recorder.kit import KitServer, start_kit
from recorder.planner.scenarios import SCENARIOS, Session
from recorder.planner.webhook import Webhook
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve import NO_MATCH, StandIn, load_stand_in
from recorder.serve.server import server_options
from recorder.servers import ServerThread

pytestmark = pytest.mark.e2e

LIMIT = 20.0  # seconds, for every wait
RULES = PairingRules(DEFAULT_RULES)
_LOOPBACK = re.compile(r"//(?:localhost|127\.0\.0\.1)(?::[0-9]+)?")
# a card's GRPC interface: host and port, no scheme (as a gRPC channel dials it)
_GRPC_LOOPBACK = re.compile(r'"(?:localhost|127\.0\.0\.1):[0-9]+"')


# --------------------------------------------------------------------------- the CLI


@contextmanager
def recorder_serve(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`recorder serve ARGS --listen 127.0.0.1:0` in a subprocess, and its URL."""
    with subprocess.Popen(
        [sys.executable, "-c", "from recorder.cli import main; main()", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stderr is not None
            yield process, announced_address(process.stderr.readline())
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate(timeout=LIMIT)


def interrupt(process: subprocess.Popen[str]) -> tuple[str, float]:
    """Ctrl-C; the rest of stderr and how long the exit took."""
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=LIMIT)
    return err, time.monotonic() - started


# --------------------------------------------------------------------------- the planner


class _Tee(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, sink: bytearray) -> None:
        self.inner, self.sink = inner, sink

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.sink.extend(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class Capture(httpx.AsyncBaseTransport):
    """Keeps every request and reply a scenario's client sends and gets, streams as they go."""

    def __init__(self, inner: httpx.AsyncBaseTransport, log: list[dict[str, Any]]) -> None:
        self.inner, self.log = inner, log

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        body = bytearray()
        entry = {
            "request": (request.method, request.url.path, _rpc_method(request.content)),
            "status": response.status_code,
            "body": body,
        }
        self.log.append(entry)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Tee(response.stream, body),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def _rpc_method(content: bytes) -> str | None:
    try:
        value = json.loads(content)
    except ValueError:
        return None
    return value.get("method") if isinstance(value, dict) else None


def _normal(text: str) -> str:
    """Generated shapes and loopback addresses set aside."""
    text = _GRPC_LOOPBACK.sub('"loopback-grpc"', _LOOPBACK.sub("//loopback", text))
    assert RULES.shapes is not None
    return RULES.shapes.sub(lambda m: f"<{(m.lastgroup or 'k_?')[2:]}>", text)


def normalized(entry: dict[str, Any]) -> tuple[Any, ...]:
    text = _normal(bytes(entry["body"]).decode())
    frames = [line[5:] for line in text.splitlines() if line.startswith("data:")]
    try:
        body: Any = [json.loads(f) for f in frames] if frames else json.loads(text)
    except ValueError:
        body = text
    method, path, rpc_method = entry["request"]
    return (method, _normal(path), rpc_method), entry["status"], body


async def run_scenarios(url: str, token: str) -> list[dict[str, Any]]:
    """The planner's scenarios in order (as `python -m recorder.planner` runs them), each
    client's traffic captured."""
    log: list[dict[str, Any]] = []
    card = None
    with Webhook() as hook:  # the push scenario's: the stand-in delivers to it as the kit does
        for scenario in SCENARIOS:
            session = Session(scenario.name, url, token=token, card=card)
            session.webhook = hook
            session.ids._inner = Capture(session.ids._inner, log)  # the planner's own transport
            try:
                await asyncio.wait_for(scenario.run(session), LIMIT)
            finally:
                await session.aclose()
            card = session.card
    return log


@pytest.fixture
def grpc_kit() -> Iterator[KitServer]:
    """The kit as `recorder kit` runs it: its card lists its gRPC interface (the stand-in's
    lists its own, since the goldens hold gRPC calls)."""
    with start_kit(grpc_port=0) as server:
        yield server


def test_the_planners_scenarios_get_from_the_stand_in_what_they_get_from_the_kit(
    grpc_kit: KitServer, tmp_path: Path
) -> None:
    kit = grpc_kit
    from_kit = asyncio.run(run_scenarios(kit.url, kit.token))
    report = tmp_path / "report.json"
    with recorder_serve(
        str(TRANSCRIPTS), "--listen", "127.0.0.1:0", "--strict", "--json-report", str(report)
    ) as (process, url):
        from_stand_in = asyncio.run(run_scenarios(url, "any-token-will-do"))
        err, took = interrupt(process)
    assert len(from_kit) == len(from_stand_in) == 45
    for kit_entry, served in zip(from_kit, from_stand_in, strict=True):
        assert normalized(served) == normalized(kit_entry)
    # message, task, stream frames, input-required, cancel while subscribed, push configs,
    # the extended card with a token, every error, push deliveries: all 45 answered, none
    # unmatched
    assert process.returncode == 0, err
    assert "stopped; 45 requests answered, 0 unmatched" in err
    assert "Traceback" not in err and took < 5
    # the closing report: every request answered from the recording; what the scenarios
    # did not ask for (the gRPC goldens: this client speaks HTTP) left unused, by name
    summary = json.loads(report.read_text())["summary"]
    assert summary["requests"] == 45 and summary["unmatched"] == 0
    unused = json.loads(report.read_text())["unused"]
    assert summary["unused"] == len(unused) == 7
    assert {Path(u["exchange"]).name.split(":")[0] for u in unused} == {
        f"{n}-grpc-{name}.http"
        for n, name in [
            (18, "message-reply"),
            (19, "streaming"),
            (20, "get-task"),
            (21, "cancel-task"),
            (22, "errors"),
        ]
    }
    assert f"{summary['unused']} unused; 0 unmatched" in err


# --------------------------------------------------------------------------- unscripted


@dataclass(frozen=True)
class Recording:
    binding: str
    folder: Path
    seen: dict[str, Any]


@pytest.fixture(scope="module", params=["JSONRPC", "HTTP+JSON"], ids=["jsonrpc", "rest"])
def recording(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, kit: KitServer
) -> Recording:
    binding: str = request.param
    out = tmp_path_factory.mktemp("serve-traffic") / "rec"
    # (the conversation's webhook is on loopback: local work, said so)
    proxy = create_proxy_app(kit.url, out=out, push_loopback=True)
    with ProxyServer(proxy) as server:
        seen = drive(server.url, token=kit.token, binding=binding)
    return Recording(binding, out, seen)


def same_as_recorded(seen: dict[str, Any], recorded: dict[str, Any], url: str) -> None:
    assert seen["interface_url"].startswith(url + "/")
    assert {k: v for k, v in seen.items() if k != "interface_url"} == {
        k: v for k, v in recorded.items() if k != "interface_url"
    }


def test_an_unscripted_client_passes_unchanged_against_its_own_recording(
    recording: Recording,
) -> None:
    stand_in = load_stand_in([str(recording.folder)], DEFAULT_RULES)
    with ServerThread(stand_in, **server_options()) as server:
        seen = drive(server.url, token="another-token", binding=recording.binding)
    assert stand_in.problems == []
    same_as_recorded(seen, recording.seen, server.url)
    assert stand_in.matched == stand_in.exchanges


def run_two_at_once(stand_in: StandIn, binding: str) -> tuple[list[dict[str, Any]], str]:
    results: list[dict[str, Any]] = [{}, {}]
    with ServerThread(stand_in, **server_options()) as server:

        def client(number: int) -> None:
            results[number] = drive(server.url, token="t", binding=binding)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(LIMIT * 3)
            assert not thread.is_alive()
    return results, server.url


@pytest.mark.parametrize("fresh_ids", [False, True], ids=["recorded-ids", "fresh-ids"])
def test_two_clients_at_once_each_get_their_own_conversation(
    recording: Recording, fresh_ids: bool
) -> None:
    alone = load_stand_in([str(recording.folder)], DEFAULT_RULES)
    with ServerThread(alone, **server_options()) as server:
        drive(server.url, token="t", binding=recording.binding)
    handed_out_alone = set(alone.book.owner)
    stand_in = load_stand_in([str(recording.folder)], DEFAULT_RULES, fresh_ids=fresh_ids)
    results, url = run_two_at_once(stand_in, recording.binding)
    assert stand_in.problems == []
    for seen in results:
        same_as_recorded(seen, recording.seen, url)
    # every id went to one client only: twice as many as one client was handed
    assert len(stand_in.book.owner) == 2 * len(handed_out_alone)
    shared = handed_out_alone & set(stand_in.book.owner)
    assert not shared if fresh_ids else shared  # recorded ids are kept where they are free


# --------------------------------------------------------------------------- no match


def test_an_unmatched_request_gets_an_error_naming_the_closest_exchange() -> None:
    from a2a.client import A2ACardResolver, A2AClientError, ClientConfig, ClientFactory
    from a2a.helpers import new_text_message
    from a2a.types import Role, SendMessageRequest

    with recorder_serve(str(TRANSCRIPTS), "--listen", "127.0.0.1:0", "--strict") as (process, url):

        async def ask() -> str:
            async with httpx.AsyncClient(timeout=LIMIT, headers={"A2A-Version": "1.0"}) as http:
                card = await A2ACardResolver(http, url).get_agent_card()
                config = ClientConfig(
                    httpx_client=http, streaming=False, supported_protocol_bindings=["JSONRPC"]
                )
                client = ClientFactory(config).create(card)
                message = new_text_message("Do you review COBOL?", role=Role.ROLE_USER)
                try:
                    async for _ in client.send_message(SendMessageRequest(message=message)):
                        pass
                except A2AClientError as error:
                    return str(error)
                finally:
                    await client.close()
            return "no error"

        said = asyncio.run(ask())
        rest = httpx.get(
            f"{url}/a2a/rest/tasks/nope", headers={"A2A-Version": "1.0"}, timeout=LIMIT
        )
        raw = httpx.post(
            f"{url}/a2a/jsonrpc",
            json={"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": 1}},
            headers={"A2A-Version": "1.0"},
            timeout=LIMIT,
        ).json()
        err, _ = interrupt(process)
    assert f"JSON-RPC Error {NO_MATCH}" in said
    assert "closest: " in said and "02-message-reply.http:3 (SendMessage: ask which" in said
    assert '$.params.message.parts[0].text: recorded "What languages can you review?"' in said
    # A2A 1.0's error shapes: a google.rpc.Status for HTTP+JSON, error.data an array of
    # typed details for JSON-RPC (ErrorInfo: the closest exchange; BadRequest: what differs)
    assert rest.status_code == 404
    status = rest.json()["error"]
    assert (status["code"], status["status"]) == (404, "NOT_FOUND")
    assert "no recorded exchange matches GET /a2a/rest/tasks/nope" in status["message"]
    info = status["details"][0]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert (info["reason"], info["domain"]) == ("NO_RECORDED_MATCH", "recorder")
    assert "16-rest-tasks.http" in info["metadata"]["closest"]
    assert raw["id"] == 7 and raw["error"]["code"] == NO_MATCH
    info, bad = raw["error"]["data"]
    assert info["metadata"]["title"].startswith("GetTask")
    assert bad["@type"] == "type.googleapis.com/google.rpc.BadRequest"
    assert "$.params.id" in [violation["field"] for violation in bad["fieldViolations"]]
    assert "$.params.id" in raw["error"]["message"]
    # the same lines in the stand-in's log; --strict: exit 1 at shutdown
    assert err.count("recorder serve: no recorded exchange matches") == 3
    assert "recorder serve: 3 requests matched no recorded exchange" in err
    assert process.returncode == 1


def test_a_busy_port_is_one_line_and_exit_2() -> None:
    with recorder_serve(str(TRANSCRIPTS), "--listen", "127.0.0.1:0") as (process, url):
        port = url.rsplit(":", 1)[1]
        busy = subprocess.run(
            [
                sys.executable,
                "-c",
                "from recorder.cli import main; main()",
                "serve",
                str(TRANSCRIPTS),
                "--listen",
                f"127.0.0.1:{port}",
            ],
            capture_output=True,
            text=True,
            timeout=LIMIT,
        )
        interrupt(process)
    assert busy.returncode == 2
    assert busy.stderr == (
        f"recorder serve: cannot listen on 127.0.0.1:{port}: address already in use\n"
    )


def test_ctrl_c_with_a_stream_held_for_during_is_quick_and_quiet() -> None:
    # 08-subscribe's stream waits after its first frame for the CancelTask that never comes
    with recorder_serve(str(TRANSCRIPTS), "--listen", "127.0.0.1:0", "--during-wait", "60") as (
        process,
        url,
    ):
        headers = {"A2A-Version": "1.0"}
        start = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {
                "message": {
                    "messageId": "m-1",
                    "role": "ROLE_USER",
                    "parts": [{"text": SLOW_DIFF}],
                },
                "configuration": {"returnImmediately": True},
            },
        }
        task = httpx.post(f"{url}/a2a/jsonrpc", json=start, headers=headers, timeout=LIMIT)
        task_id = task.json()["result"]["task"]["id"]
        frames: list[str] = []
        subscribe = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "SubscribeToTask",
            "params": {"id": task_id},
        }
        with httpx.stream(
            "POST",
            f"{url}/a2a/jsonrpc",
            json=subscribe,
            headers={**headers, "Accept": "text/event-stream", "Cache-Control": "no-store"},
            timeout=LIMIT,
        ) as reply:
            lines = reply.iter_lines()
            for line in lines:
                if line.startswith("data:"):
                    frames.append(line)
                    break
            err, took = interrupt(process)
    assert len(frames) == 1 and "TASK_STATE_WORKING" in frames[0]
    assert process.returncode == 0, err
    assert "Traceback" not in err and "ERROR" not in err
    assert took < 3


SLOW_DIFF = (
    "please review slowly\n--- a/src/report.py\n+++ b/src/report.py\n"
    "@@ -1,1 +1,2 @@\n import csv\n+import json\n"
)


def _held(stand_in: StandIn, count: int) -> bool:
    """Whether `count` replies are held for @during, within LIMIT seconds (polled)."""
    deadline = time.monotonic() + LIMIT
    while time.monotonic() < deadline:
        if stand_in.holding == count:
            return True
        time.sleep(0.01)
    return stand_in.holding == count


def test_a_during_hold_ends_when_its_client_leaves() -> None:
    # 08-subscribe's stream waits after its first frame for the CancelTask; the client
    # leaves instead: the awaited request will not come, and the hold does not wait 60 s
    stand_in = load_stand_in(
        [str(TRANSCRIPTS / "08-subscribe.http")], DEFAULT_RULES, during_wait=60
    )
    headers = {"A2A-Version": "1.0"}
    with ServerThread(stand_in, **server_options()) as server:
        url = server.url
        start = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {
                "message": {
                    "messageId": "m-1",
                    "role": "ROLE_USER",
                    "parts": [{"text": SLOW_DIFF}],
                },
                "configuration": {"returnImmediately": True},
            },
        }
        task = httpx.post(f"{url}/a2a/jsonrpc", json=start, headers=headers, timeout=LIMIT)
        subscribe = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "SubscribeToTask",
            "params": {"id": task.json()["result"]["task"]["id"]},
        }
        with httpx.stream(
            "POST",
            f"{url}/a2a/jsonrpc",
            json=subscribe,
            headers={**headers, "Accept": "text/event-stream"},
            timeout=LIMIT,
        ) as reply:
            lines = reply.iter_lines()  # kept: an iterator let go of closes the stream
            for line in lines:
                if line.startswith("data:"):
                    break
            assert _held(stand_in, 1)
            reply.close()  # the client leaves the stream
            # the hold ends long before --during-wait
            assert _held(stand_in, 0)
    assert stand_in.problems == []
