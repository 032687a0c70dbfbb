"""Helpers the test modules share: golden transcripts recorded from a real kit, edits, ports.

On `sys.path` through `pythonpath = ["tests"]` (pyproject.toml), so any test imports
`from helpers import ...`; object factories live beside it in `factories.py`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from recorder.disk.transcripts import dump
from recorder.format.httpfile import dumps, loads
from recorder.format.model import Exchange, Headers, Request, Response, Transcript
from recorder.kit import KitServer, start_kit
from recorder.replay.send import make_transport, send_raw
from recorder.replay.variables import fill_placeholders
from recorder.replay.verdict.state import LiveReply

REPO = Path(__file__).resolve().parent.parent
TRANSCRIPTS = REPO / "transcripts"
FIXTURES = REPO / "tests" / "fixtures"

DIFF = (
    "diff --git a/src/app.py b/src/app.py\n"
    "--- a/src/app.py\n"
    "+++ b/src/app.py\n"
    "@@ -1,2 +1,3 @@\n"
    " import os\n"
    "+print('debug')  # TODO remove\n"
    " x = 1\n"
)


def start_test_kit(*, grpc: bool = False, **options: Any) -> KitServer:
    """The kit on a free loopback port, as the player's `start_agent` calls it and as
    `recorder play` starts it: its gRPC binding on another free port, listed in its card (the
    goldens' cards list it). (`grpc`, a played file holds a gRPC call: served either way.)"""
    return start_kit(grpc_port=0, **options)


def rpc(rpc_id: int, method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}).encode()


def user_message(message_id: str, text: str) -> dict[str, Any]:
    return {"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}}


class GoldenRecorder:
    """Sends requests to a kit and keeps each exchange as the recording proxy would."""

    def __init__(self, kit: KitServer, transport: httpx.BaseTransport) -> None:
        self.kit = kit
        self.transport = transport
        self.host = kit.base_url.removeprefix("http://")

    def exchange(
        self,
        title: str,
        body: bytes | None,
        *,
        method: str = "POST",
        target: str = "/a2a/jsonrpc",
        stream: bool = False,
        secret: bool = False,
        comments: tuple[str, ...] = (),
        on_frames: Callable[[int], None] | None = None,
    ) -> Exchange:
        headers = [("Host", self.host)]
        if body is not None:
            headers.append(("Content-Type", "application/json"))
        headers.append(("A2A-Version", "1.0"))
        if stream:
            headers.append(("Accept", "text/event-stream"))
        if secret:
            headers.append(("Authorization", "Bearer {{A2A_TOKEN}}"))
        golden_request = Request(method, target, Headers(headers), body or b"")
        live_request = fill_placeholders(golden_request, {"A2A_TOKEN": self.kit.token})
        live = send_raw(self.transport, self.kit.url, live_request, on_frames=on_frames)
        response = live.response
        return Exchange(golden_request, response, title=title, comments=comments)

    def overlapping(self, task_id: str) -> list[Exchange]:
        """SubscribeToTask, and a CancelTask sent once the stream's first frame has arrived."""
        first_frame = threading.Event()
        subscribed: list[Exchange] = []

        def subscribe() -> None:
            subscribed.append(
                self.exchange(
                    "SubscribeToTask: follow the slow review",
                    rpc(2, "SubscribeToTask", {"id": task_id}),
                    stream=True,
                    on_frames=lambda frames: first_frame.set() if frames >= 1 else None,
                )
            )

        thread = threading.Thread(target=subscribe)
        thread.start()
        assert first_frame.wait(10), "no first frame on the SubscribeToTask stream"
        cancel = self.exchange(
            "CancelTask: cancel it while the stream is open",
            rpc(3, "CancelTask", {"id": task_id}),
            comments=("@during exchange 2 frame 1",),
        )
        thread.join(10)
        return [*subscribed, cancel]


def record_goldens(kit: KitServer, folder: Path) -> list[Path]:
    """Record six small transcripts from `kit` into `folder`; return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    with make_transport() as transport:
        rec = GoldenRecorder(kit, transport)
        files: dict[str, list[Exchange]] = {}
        files["01-languages.http"] = [
            rec.exchange(
                "SendMessage: ask which languages the reviewer knows",
                rpc(1, "SendMessage", user_message("msg-1", "Which languages do you review?")),
            )
        ]
        send_review = rec.exchange(
            "SendMessage: review a diff",
            rpc(1, "SendMessage", user_message("msg-2", DIFF)),
        )
        task_id = send_review.response.json["result"]["task"]["id"]
        files["02-review.http"] = [
            send_review,
            rec.exchange("GetTask: the review task", rpc(2, "GetTask", {"id": task_id})),
        ]
        files["03-streaming.http"] = [
            rec.exchange(
                "SendStreamingMessage: review a diff as a stream",
                rpc(1, "SendStreamingMessage", user_message("msg-3", DIFF)),
                stream=True,
            )
        ]
        files["04-cards.http"] = [
            rec.exchange("Agent card", None, method="GET", target="/.well-known/agent-card.json"),
            rec.exchange(
                "GetExtendedAgentCard: with the bearer token",
                rpc(1, "GetExtendedAgentCard", {}),
                secret=True,
            ),
        ]
        files["05-errors.http"] = [
            rec.exchange(
                "GetTask: a task that does not exist",
                rpc(1, "GetTask", {"id": "00000000-0000-4000-8000-000000000000"}),
            )
        ]
        slow = rec.exchange(
            "SendMessage: start a slow review without waiting",
            rpc(
                1,
                "SendMessage",
                {
                    **user_message("msg-6", "please review slowly\n" + DIFF),
                    "configuration": {"returnImmediately": True},
                },
            ),
        )
        files["06-subscribe.http"] = [
            slow,
            *rec.overlapping(slow.response.json["result"]["task"]["id"]),
        ]
    paths = []
    for name, exchanges in files.items():
        path = folder / name
        dump(Transcript(tuple(exchanges), comments=("recorded by tests/helpers.py",)), path)
        paths.append(path)
    return paths


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections: bound (so no one else takes it), not listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    assert text.count(old) >= count, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, count))


def stream_that_never_ends(path: Path, *, after: int = 1, title: str = "") -> None:
    """06-subscribe.http without its CancelTask: exchange 2's stream of the slow review runs
    for 30 s. `after` copies of exchange 1 follow it (titled `title` when given)."""
    transcript = loads(path.read_text())
    first, second = transcript.exchanges[:2]
    later = dataclasses.replace(first, title=title) if title else first
    exchanges = (first, second, *([later] * after))
    path.write_text(dumps(dataclasses.replace(transcript, exchanges=exchanges)))


def as_wire(response: Response, *, spaced: bool = False) -> LiveReply:
    """The reply as an agent sends it: a JSON body compact (as Starlette writes it), or
    `spaced` (as `json.dumps` writes it by default)."""
    body = response.body
    if response.is_json and response.json is not None:
        separators = (", ", ": ") if spaced else (",", ":")
        body = json.dumps(response.json, ensure_ascii=False, separators=separators).encode()
    # a gRPC reply as the player reads it: its version, its stream's messages, its trailers
    return LiveReply(
        response.status,
        response.reason,
        response.headers,
        body,
        response.http_version,
        events=response.events if response.is_grpc else None,
        trailers=response.trailers,
    )


CLI = [sys.executable, "-c", "from recorder.cli import main; main()"]


@contextlib.contextmanager
def cli_process(*args: str, limit: float = 10.0) -> Iterator[subprocess.Popen[str]]:
    """`recorder ARGS` in a child process (stdout and stderr piped, as text); killed on leaving
    when it has not ended."""
    with subprocess.Popen(
        [*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate(timeout=limit)


def wait_until_serving(
    url: str, path: str = "/.well-known/agent-card.json", limit: float = 10.0
) -> None:
    """Until `url + path` answers (any status), for at most `limit` seconds."""
    deadline = time.monotonic() + limit
    while True:
        try:
            httpx.get(url + path, timeout=1)
            return
        except httpx.HTTPError:
            assert time.monotonic() < deadline, f"nothing serves {url}"
            time.sleep(0.05)


_ANNOUNCED = re.compile(
    r"(?:listening on|\bon|^\s*gRPC)\s+"
    r"(?P<address>(?:https?://)?(?:\[[0-9A-Fa-f:.]+\]|[\w.-]+):[0-9]+)"
)


def announced_address(line: str) -> str:
    """Where a server started on a port chosen for it (port 0) listens, from the line it says
    so in (each binds its socket first, then says where): `recorder record: listening on
    http://127.0.0.1:PORT, forwarding to …`, `code-reviewer listening on http://…`,
    `recorder serve`'s `serving … on http://…`, a gRPC listener's `… on 127.0.0.1:PORT`, the
    kit's `  gRPC        127.0.0.1:PORT` row. One reading for every test: by its pattern,
    not by a word's position."""
    found = _ANNOUNCED.search(line)
    assert found, f"no address in {line!r}"
    return found["address"]


@contextlib.contextmanager
def recorder_process(
    *args: str, limit: float = 10.0
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`recorder record --listen 127.0.0.1:0 ARGS` serving: (the process, its URL, read from
    the first line it prints)."""
    with cli_process("record", "--listen", "127.0.0.1:0", *args, limit=limit) as process:
        assert process.stderr is not None
        url = announced_address(process.stderr.readline())
        wait_until_serving(url, "/_recorder/status", limit)
        yield process, url


def downstream_listeners(process: subprocess.Popen[str], count: int) -> dict[str, str]:
    """The URLs of the `count` downstream listeners `recorder record --downstream NAME=…`
    prints next (`downstream NAME: URL -> UPSTREAM`), by name."""
    assert process.stderr is not None
    listeners = {}
    for _ in range(count):
        line = process.stderr.readline()
        found = re.search(r"downstream (\w+): (http://\S+) -> (\S+)", line)
        assert found is not None, line
        listeners[found.group(1)] = found.group(2)
    return listeners


JS_SDK = Path(__file__).resolve().parent.parent / ".tools" / "js"


def js_sdk_folder(*, grpc: bool = False) -> tuple[str, Path]:
    """(node, the folder where `@a2a-js/sdk` is installed: the Makefile's `tools` step puts it
    in `.tools/js`, or RECORDER_JS_SDK_DIR names one); skips the test without them (the tests
    install nothing: no network beyond loopback). `grpc`: `@grpc/grpc-js` is needed too."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    folder = Path(os.environ.get("RECORDER_JS_SDK_DIR", JS_SDK))
    needed = ["@a2a-js/sdk", *(["@grpc/grpc-js", "@bufbuild/protobuf"] if grpc else [])]
    missing = [name for name in needed if not (folder / "node_modules" / name).is_dir()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed in {folder} (make tools)")
    return node, folder
