"""What went over the wire is what the transcript says, through the real `recorder record`:
numbers a float cannot hold (`12345678901234567.89`, 31 digits of pi, `1e400`) and numbers
a float writes otherwise (`-0`, `1E5`), string escapes, and a literal `{{user_name}}` (a
template in a reviewed diff) in the body and in a header. An agent of our own (a loopback
server) answers raw bytes; then `recorder check` passes, `recorder play` against the same
agent passes (and fails on a number that one float holds alike), `recorder serve` answers
the same lexemes, and the curl export sends the literal and asks for no variable.

Also: recorded data is never code in an export (issue 34). Requests carrying a JavaScript
`{{ ... }}` for httpyac, `$(...)`, backticks, quotes and line breaks are recorded from the
real kit agent, exported, and run for real (httpyac where it is installed, bash): no marker
file is made, and the literal text reached the agent (its reply quotes the message)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from helpers import CLI, DIFF, recorder_process
from jsonref import tokens

from recorder.disk.transcripts import load
from recorder.format.jsonbody import loads as json_loads
from recorder.kit.serve import KitServer

LIMIT = 30.0
PI_31 = "3.141592653589793238462643383279"
NUMBERS = ["12345678901234567.89", PI_31, "-0", "1E5", "1e400", "1.50", "123456789012345678901"]
TEMPLATE = "Hello {{user_name}}, caf\\u00e9 \\/ done"
REQUEST = (
    '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"n":['
    + ",".join(NUMBERS)
    + '],"text":"'
    + TEMPLATE
    + '"}}'
).encode()


def reply(numbers: list[str]) -> bytes:
    return (
        '{"jsonrpc":"2.0","id":1,"result":{"n":['
        + ",".join(numbers)
        + '],"echo":"'
        + TEMPLATE
        + '","d":{"a":1,"a":2}}}'
    ).encode()


class Agent:
    """A loopback agent answering the same raw bytes to every POST, and keeping what it got."""

    def __init__(self) -> None:
        self.answer = reply(NUMBERS)
        self.got: list[tuple[dict[str, str], bytes]] = []
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                agent.got.append((dict(self.headers.items()), self.rfile.read(length)))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(agent.answer)))
                self.end_headers()
                self.wfile.write(agent.answer)

            def do_GET(self) -> None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

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


def scalars(text: str) -> list[str]:
    return [t for t in tokens(text) if t not in ("{", "}", "[", "]", ",", ":")]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=LIMIT * 2, env=env, check=False
    )


def record(upstream: str, out: Path, requests: list[tuple[bytes, dict[str, str]]]) -> list[bytes]:
    """`recorder record` in front of `upstream`, each request sent by a raw client; the
    bodies the client got."""
    got: list[bytes] = []
    args = ("--upstream", upstream, "--out", str(out))
    with (
        recorder_process(*args, limit=LIMIT) as (process, url),
        httpx.Client(timeout=LIMIT) as http,
    ):
        for body, headers in requests:
            answer = http.post(url + "/a2a/jsonrpc", content=body, headers=headers)
            assert answer.status_code == 200
            got.append(answer.content)
        with contextlib.suppress(httpx.HTTPError):
            for _ in range(200):  # the writer catches up (bounded)
                status = http.get(url + "/_recorder/status").json()
                if status.get("recorded") == len(requests):
                    break
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, err
    return got


def test_numbers_escapes_and_a_literal_go_through_record_check_play_serve_and_export(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    headers = {
        "Content-Type": "application/json",
        "Recorder-Scenario": "numbers",
        "X-Template": "{{user_name}}",
    }
    with Agent().running() as agent:
        (got,) = record(agent.url, out, [(REQUEST, headers)])
        assert got == agent.answer  # the client gets the agent's bytes
        (path,) = sorted(out.glob("*.http"))
        (exchange,) = load(path).exchanges
        # the transcript says what went over the wire: every lexeme of both bodies
        recorded_reply = exchange.response.body.decode()
        assert scalars(recorded_reply) == [
            s.replace('"Hello {{', '"Hello \\u007b{') for s in scalars(agent.answer.decode())
        ]
        assert (
            scalars(exchange.request.body.decode())[-1]
            == '"Hello \\u007b{user_name}}, caf\\u00e9 \\/ done"'
        )
        assert [t for t in scalars(exchange.request.body.decode()) if t in NUMBERS] == NUMBERS
        assert exchange.request.headers.get("X-Template") == "\\{\\{user_name\\}\\}"
        assert recorded_reply.count('"a":') == 2  # a member named twice, both kept
        assert exchange.response.json == json_loads(agent.answer)

        checked = run("check", str(out))
        assert checked.returncode == 0, checked.stdout + checked.stderr

        agent.got.clear()
        env = {k: v for k, v in os.environ.items() if k != "user_name"}
        played = run("play", str(out), "--agent", agent.url, env=env)
        assert played.returncode == 0, played.stdout + played.stderr
        sent_headers, sent = agent.got[-1]
        assert sent_headers.get("X-Template") == "{{user_name}}"
        assert json_loads(sent) == json_loads(REQUEST)

        # a number one float holds alike (…88 and …89): a mismatch, not a pass
        agent.answer = reply(["12345678901234567.88", *NUMBERS[1:]])
        played = run("play", str(out), "--agent", agent.url, env=env)
        assert played.returncode == 1, played.stdout + played.stderr
        assert "$.result.n[0]" in played.stdout
        assert "12345678901234567.89" in played.stdout and "12345678901234567.88" in played.stdout
        agent.answer = reply(NUMBERS)

        # the stand-in answers the recorded lexemes to the same request
        with subprocess.Popen(
            [*CLI, "serve", str(out), "--listen", "127.0.0.1:0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as serving:
            try:
                assert serving.stderr is not None
                found = re.search(r"on (http://\S+) ", serving.stderr.readline())
                assert found
                served = httpx.post(
                    found.group(1) + "/a2a/jsonrpc", content=REQUEST, headers=headers, timeout=LIMIT
                )
            finally:
                serving.send_signal(signal.SIGINT)
                serving.communicate(timeout=LIMIT)
        assert served.status_code == 200, served.text
        numbers = json_loads(served.content)["result"]["n"]
        assert [str(n) for n in numbers] == NUMBERS
        assert [t for t in scalars(served.text) if t in NUMBERS] == NUMBERS
        assert json_loads(served.content)["result"]["echo"] == json.loads(f'"{TEMPLATE}"')

        # the curl export sends the literal and asks for no variable
        script = tmp_path / "numbers.sh"
        exported = run("export", str(path), "--to", "curl", "--agent", agent.url, "-o", str(script))
        assert exported.returncode == 0, exported.stderr
        agent.got.clear()
        ran = subprocess.run(
            ["bash", str(script)],
            capture_output=True,
            text=True,
            timeout=LIMIT,
            env=env,
            check=False,
        )
        assert ran.returncode == 0, ran.stderr
        sent_headers, sent = agent.got[-1]
        assert sent_headers.get("X-Template") == "{{user_name}}"
        assert json_loads(sent) == json_loads(REQUEST)


# ------------------------------------------------------------------ exports never run data

MARKER = "recorder-export-ran"
HTTPYAC = Path(__file__).resolve().parents[2] / ".tools" / "node_modules" / ".bin" / "httpyac"


def injections(marker: Path) -> list[str]:
    """Diffs (the kit's task then quotes the message in its history) whose added line holds
    what a dialect would run."""
    lines = [
        "{{ require('fs').writeFileSync('" + str(marker) + "-js', 'x') }}",
        "{{user_name}} and {{ process.exit(3) }}",
        "$(touch " + str(marker) + "-sub)",
        "`touch " + str(marker) + "-tick`",
        "it's ' quoted; touch " + str(marker) + "-quote",
        "two\nlines; touch " + str(marker) + "-line",
    ]
    return [DIFF + "+# " + line + "\n" for line in lines]


def send_message(number: int, text: str) -> bytes:
    message = {"messageId": f"m-{number}", "role": "ROLE_USER", "parts": [{"text": text}]}
    rpc = {"jsonrpc": "2.0", "id": number, "method": "SendMessage", "params": {"message": message}}
    return json.dumps(rpc).encode()


def recorded_injections(kit: KitServer, tmp_path: Path) -> tuple[Path, list[str]]:
    marker = tmp_path / MARKER
    texts = injections(marker)
    headers = {
        "Content-Type": "application/json",
        "A2A-Version": "1.0",
        "Recorder-Scenario": "injections",
        "X-Note": "{{ require('fs').writeFileSync('" + str(marker) + "-header', 'x') }}",
    }
    out = tmp_path / "out"
    requests = [(send_message(n, text), headers) for n, text in enumerate(texts, start=1)]
    for answer in record(kit.base_url, out, requests):
        assert b'"error"' not in answer
    (path,) = sorted(out.glob("*.http"))
    return path, texts


def assert_nothing_ran(tmp_path: Path) -> None:
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(MARKER)) == []


def test_the_bash_export_runs_no_recorded_text(kit: KitServer, tmp_path: Path) -> None:
    path, texts = recorded_injections(kit, tmp_path)
    script = tmp_path / "injections.sh"
    exported = run("export", str(path), "--to", "curl", "--agent", kit.base_url, "-o", str(script))
    assert exported.returncode == 0, exported.stderr
    env = {k: v for k, v in os.environ.items() if k != "user_name"}
    ran = subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, timeout=LIMIT, env=env, check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert_nothing_ran(tmp_path)
    for text in texts:  # the kit's replies hold the message as it was sent
        assert json.dumps(text)[1:-1] in ran.stdout


@pytest.mark.skipif(not HTTPYAC.exists(), reason="httpyac is not installed (make tools)")
def test_the_httpyac_export_runs_no_recorded_text(kit: KitServer, tmp_path: Path) -> None:
    path, texts = recorded_injections(kit, tmp_path)
    exported_file = tmp_path / "injections.http"
    exported = run(
        "export", str(path), "--to", "http", "--agent", kit.base_url, "-o", str(exported_file)
    )
    assert exported.returncode == 0, exported.stderr
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    ran = subprocess.run(
        [str(HTTPYAC), "send", str(exported_file), "--all", "-o", "body"],
        capture_output=True,
        text=True,
        timeout=LIMIT * 2,
        cwd=tmp_path,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert_nothing_ran(tmp_path)
    for text in texts:
        assert json.dumps(text)[1:-1] in ran.stdout, ran.stdout[-2000:]
