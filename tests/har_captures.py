"""HAR files made by real producers of the kit's traffic, for `recorder import` (issue 38).

- `capture_mitmdump`: the a2a-sdk client (JSON-RPC and HTTP+JSON, streaming and not, the
  extended card with the kit's demo bearer token, a task that does not exist) through
  mitmproxy's `mitmdump` as an HTTP proxy, with its HAR export (`--set hardump=`).
- `capture_playwright`: a page in Debian's Chromium, driven by Playwright (playwright-core,
  never a downloaded browser), fetching from the kit (`fixtures/har/playwright_capture.cjs`),
  with Playwright's HAR recorder (`recordHar`).

Each returns None, with the reason in `missing`, when its tool is not here: the tests that
run them skip; the files they made once are committed in `fixtures/har/` (`python
tests/har_captures.py` makes them again), so the import is tested without either tool.

Every wait is bounded; every address is on loopback.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from a2a.client import A2ACardResolver, ClientCallContext, ClientConfig, ClientFactory
from a2a.helpers import new_text_message
from a2a.types import GetExtendedAgentCardRequest, GetTaskRequest, Role, SendMessageRequest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "har"
PLAYWRIGHT_SCRIPT = FIXTURES / "playwright_capture.cjs"
LIMIT = 30.0  # seconds: the bound of every call and every wait
TOKEN = "kit-demo-token"  # the kit's documented demo token (`recorder kit --token`)
UNKNOWN_TASK = "00000000-0000-4000-8000-000000000000"
DIFF = "--- a/x.py\n+++ b/x.py\n@@ -1,1 +1,2 @@\n x = 1\n+print(x)  # TODO\n"


def mitmdump() -> str | None:
    """mitmproxy's `mitmdump` ($MITMDUMP, else on PATH), or None."""
    return os.environ.get("MITMDUMP") or shutil.which("mitmdump")


def playwright_core() -> Path | None:
    """A node_modules folder holding playwright-core ($PLAYWRIGHT_NODE_MODULES, else the
    repository's `.tools/browser/node_modules`), or None."""
    for raw in (os.environ.get("PLAYWRIGHT_NODE_MODULES"), REPO / ".tools/browser/node_modules"):
        if raw and (Path(raw) / "playwright-core").is_dir():
            return Path(raw)
    return None


def chromium() -> str | None:
    return os.environ.get("CHROMIUM") or shutil.which("chromium")


def missing(tool: str) -> str | None:
    """Why `tool` ("mitmdump", "playwright") cannot run here, or None."""
    if tool == "mitmdump":
        return None if mitmdump() else "mitmdump is not installed (pip install mitmproxy)"
    if shutil.which("node") is None:
        return "node is not installed"
    if playwright_core() is None:
        return "playwright-core is not installed (.tools/browser: npm install playwright-core)"
    if chromium() is None:
        return "no Chromium (Debian's chromium package; Playwright's own is never downloaded)"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + LIMIT
    while True:
        assert process.poll() is None, "mitmdump ended before it listened"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "mitmdump did not listen"
            time.sleep(0.05)


def capture_mitmdump(agent: str, out: Path) -> Path:
    """The a2a-sdk client's traffic to `agent` through mitmdump, as mitmdump's HAR."""
    tool = mitmdump()
    assert tool is not None, missing("mitmdump")
    port = _free_port()
    command = [tool, "--mode", "regular", "--listen-host", "127.0.0.1"]
    command += ["--listen-port", str(port), "--set", f"hardump={out}", "-q"]
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as process:
        try:
            _wait_for_port(port, process)
            asyncio.run(_sdk_client(agent, f"http://127.0.0.1:{port}"))
        finally:
            process.send_signal(signal.SIGINT)  # (mitmdump writes the HAR as it stops)
            try:
                process.communicate(timeout=LIMIT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
    assert out.is_file(), "mitmdump wrote no HAR"
    return out


async def _sdk_client(agent: str, proxy: str) -> None:
    """The SDK client's calls: a question and a review, sent plain and streamed, over
    JSON-RPC and HTTP+JSON, the task read back by the id the agent gave, a task that does
    not exist, and the extended card with the bearer token."""
    transport = httpx.AsyncHTTPTransport(proxy=proxy)
    async with httpx.AsyncClient(mounts={"http://": transport}, timeout=LIMIT) as http:
        http.headers["A2A-Version"] = "1.0"
        card = await A2ACardResolver(http, agent).get_agent_card()
        for binding, streaming in (("JSONRPC", False), ("JSONRPC", True), ("HTTP+JSON", True)):
            config = ClientConfig(
                httpx_client=http, streaming=streaming, supported_protocol_bindings=[binding]
            )
            client = ClientFactory(config).create(card)
            for text in ("What languages can you review?", DIFF):
                message = new_text_message(text, role=Role.ROLE_USER)
                task_id = ""
                async for event in client.send_message(SendMessageRequest(message=message)):
                    if event.HasField("task"):
                        task_id = event.task.id
                if task_id:
                    await client.get_task(GetTaskRequest(id=task_id))
            if binding == "HTTP+JSON":
                try:
                    await client.get_task(GetTaskRequest(id=UNKNOWN_TASK))
                except Exception as error:  # (the SDK's TaskNotFoundError: what is wanted)
                    assert type(error).__name__ == "TaskNotFoundError", error
            if not streaming:
                auth = ClientCallContext(service_parameters={"Authorization": f"Bearer {TOKEN}"})
                await client.get_extended_agent_card(GetExtendedAgentCardRequest(), context=auth)


def capture_playwright(agent: str, out: Path) -> Path:
    """A page's fetches from `agent` in Chromium, as Playwright's HAR."""
    modules = playwright_core()
    browser = chromium()
    assert modules is not None and browser is not None, missing("playwright")
    environment = {**os.environ, "NODE_PATH": str(modules), "CHROMIUM": browser}
    subprocess.run(
        ["node", str(PLAYWRIGHT_SCRIPT), agent, str(out)],
        env=environment,
        check=True,
        timeout=LIMIT * 2,
        stdout=subprocess.DEVNULL,
    )
    assert out.is_file(), "Playwright wrote no HAR"
    return out


def main() -> None:
    """Make the committed captures again, from a fresh kit."""
    from recorder.kit import start_kit

    with start_kit() as kit:  # (as `recorder play` starts it: its card lists gRPC)
        for name, capture, tool in (
            ("mitmdump.har", capture_mitmdump, "mitmdump"),
            ("playwright.har", capture_playwright, "playwright"),
        ):
            why = missing(tool)
            if why is not None:
                print(f"skipped {name}: {why}", file=sys.stderr)
                continue
            capture(kit.base_url, FIXTURES / name)
            print(f"wrote {FIXTURES / name}", file=sys.stderr)


if __name__ == "__main__":
    main()
