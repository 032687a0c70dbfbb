"""Any valid JSON text, through the real `recorder record`, `check`, `play` and `serve` (issue
32): hypothesis writes the texts (numbers of every sign, size and exponent, string escapes,
lone surrogates, invisible characters, a member named twice, a literal `{{x}}`), a client sends
each inside a JSON-RPC call, and an agent of our own (a loopback server) answers it back.

What must hold: the client gets the agent's bytes; the transcript says every number as it was
written and every string's value; `check` passes; `play` against the agent passes with no
variable set; `serve` answers each number as the agent wrote it and each string's value (a
member named twice once, with the value a client reads).
(tests/e2e/test_lexemes_e2e.py does the issue's own cases, the export and a mismatch.)"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from core.test_json_lexemes import json_texts
from helpers import CLI, announced_address, recorder_process
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from jsonref import tokens

from recorder.disk.transcripts import load

# three examples, each four commands (as slow as a loaded machine makes a process's start)
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]
LIMIT = 30.0
_ID = re.compile(rb'"id"\s*:\s*(\d+)')  # (the envelope's id comes before `params`)


def call(number: int, text: str) -> bytes:
    # (`call N`: two calls whose texts say one number, `-0` and `0E5`, are one request but
    # for the client's JSON-RPC id, which serve takes as the client's own: a tie)
    return (
        f'{{"jsonrpc":"2.0","id":{number},"method":"SendMessage",'
        f'"params":{{"call":"call {number}","v":{text}}}}}'
    ).encode()


def answer(number: int, text: str) -> bytes:
    return f'{{"jsonrpc":"2.0","id":{number},"result":{{"v":{text}}}}}'.encode()


def meaning(text: str) -> list[str]:
    """Each scalar of a JSON text in order: a number's lexeme, a string's value (its escapes
    aside: the file writes invisible characters and a literal `{{` escaped), true/false/null."""
    found = []
    for token in tokens(text):
        if token in ("{", "}", "[", "]", ",", ":"):
            continue
        found.append(repr(json.loads(token)) if token.startswith('"') else token)
    return found


def read_as_clients_do(text: str) -> object:
    """The value a client reads (a member named twice: its last value), each number as its
    text: serve answers a reply it fills anew (the client's JSON-RPC id), so a member named
    twice is answered once."""
    return json.loads(text, parse_float=lambda n: ("number", n), parse_int=lambda n: ("number", n))


class Agent:
    """Answers each call with the answer made for its id, and keeps the bodies it got."""

    def __init__(self, answers: dict[int, bytes]) -> None:
        self.got: list[bytes] = []
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                agent.got.append(body)
                found = _ID.search(body)
                reply = answers.get(int(found.group(1))) if found else None
                self.send_response(200 if reply is not None else 400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply or b"")))
                self.end_headers()
                self.wfile.write(reply or b"")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    @contextlib.contextmanager
    def running(self) -> Iterator[Agent]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.server.shutdown()
            self.server.server_close()
            thread.join(LIMIT)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=LIMIT * 2, check=False
    )


def record(upstream: str, out: Path, calls: list[bytes]) -> list[bytes]:
    got = []
    headers = {"Content-Type": "application/json", "Recorder-Scenario": "fuzz"}
    with (
        recorder_process("--upstream", upstream, "--out", str(out), limit=LIMIT) as (process, url),
        httpx.Client(timeout=LIMIT) as http,
    ):
        for body in calls:
            got.append(http.post(url + "/a2a/jsonrpc", content=body, headers=headers).content)
        for _ in range(200):  # the writer catches up (bounded)
            if http.get(url + "/_recorder/status").json().get("recorded") == len(calls):
                break
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, err
    return got


def served(out: Path, calls: list[bytes]) -> list[bytes]:
    with subprocess.Popen(
        [*CLI, "serve", str(out), "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as serving:
        try:
            assert serving.stderr is not None
            url = announced_address(serving.stderr.readline())
            headers = {"Content-Type": "application/json"}
            with httpx.Client(timeout=LIMIT) as http:
                replies = [
                    http.post(url + "/a2a/jsonrpc", content=body, headers=headers) for body in calls
                ]
        finally:
            serving.send_signal(signal.SIGINT)
            serving.communicate(timeout=LIMIT)
    for reply in replies:
        assert reply.status_code == 200, reply.text
    return [reply.content for reply in replies]


@settings(
    max_examples=3,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],  # (no shrinking: each example runs four CLIs)
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(json_texts(), min_size=8, max_size=8))
def test_any_json_text_goes_through_record_check_play_and_serve(texts: list[str]) -> None:
    calls = [call(n, text) for n, text in enumerate(texts, start=1)]
    answers = {n: answer(n, text) for n, text in enumerate(texts, start=1)}
    with tempfile.TemporaryDirectory() as tmp, Agent(answers).running() as agent:
        out = Path(tmp) / "out"
        got = record(agent.url, out, calls)
        assert got == [answers[n] for n in range(1, len(texts) + 1)]
        (path,) = sorted(out.glob("*.http"))
        exchanges = load(path).exchanges
        assert len(exchanges) == len(texts)
        for exchange, body, reply in zip(exchanges, calls, got, strict=True):
            assert meaning(exchange.request.body.decode()) == meaning(body.decode())
            assert meaning(exchange.response.body.decode()) == meaning(reply.decode())

        checked = run("check", str(out))
        assert checked.returncode == 0, checked.stdout + checked.stderr

        agent.got.clear()
        played = run("play", str(out), "--agent", agent.url)
        assert played.returncode == 0, played.stdout + played.stderr
        assert [meaning(sent.decode()) for sent in agent.got] == [
            meaning(body.decode()) for body in calls
        ]

        for reply, recorded in zip(served(out, calls), got, strict=True):
            assert read_as_clients_do(reply.decode()) == read_as_clients_do(recorded.decode())
