"""docs/live-traffic.md, run as written (issue 15): its commands, in order, in a copy of docs/.

The kit, the recorder and the page's a2a-sdk client run for real on free loopback ports (the
page's 41242 and 41241 become them). Recording the page's scenario from scratch gives a file
whose block `docs sync` writes and `docs check` then passes; recording it again (the page's
step 3) leaves that file byte for byte as it was, and so it does for the file committed with
the page: the page stays right.
"""

from __future__ import annotations

import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parent.parent.parent
PAGE = REPO / "docs" / "live-traffic.md"
EXAMPLE = Path("docs/examples/01-ask-and-review.http")
BIN = Path(sys.executable).parent
LIMIT = 30.0  # seconds, for every command and wait


def page_commands() -> list[str]:
    """The commands of the page's ```sh blocks, in order."""
    commands: list[str] = []
    inside = False
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            inside = not inside and line.strip() == "```sh"
            continue
        if inside and line.strip():
            commands.append(line.strip())
    return commands


def free_port() -> int:
    from recorder.servers import bind_socket

    sock = bind_socket("127.0.0.1", 0)
    try:
        return int(sock.getsockname()[1])
    finally:
        sock.close()


class Page:
    """The page's commands, run in `root` (a copy of docs/) with the kit and recorder on
    free ports."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.kit_port, self.proxy_port = free_port(), free_port()
        commands = page_commands()
        self.kit, self.record, self.client, self.sync, self.rerecord, self.check = commands

    def argv(self, command: str) -> list[str]:
        command = command.replace("41242", str(self.kit_port))
        command = command.replace("41241", str(self.proxy_port))
        words = shlex.split(command)
        if words[:2] == ["recorder", "record"] and "--listen" not in words:
            words += ["--listen", f"127.0.0.1:{self.proxy_port}"]  # the page's default, 41241
        # the gRPC ports next to those (the kit's card lists its gRPC interface, so the
        # recorder listens for gRPC): by default the HTTP port + 1, which may be another's here
        if words[:2] == ["recorder", "record"] and "--grpc-listen" not in words:
            words += ["--grpc-listen", "127.0.0.1:0"]
        if words[0] == "python":
            return [sys.executable, *words[1:]]
        return [str(BIN / words[0]), *words[1:]]

    def run(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(command),
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=LIMIT,
            check=False,
        )

    def start(self, command: str, url: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            self.argv(command),
            cwd=self.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + LIMIT
        while True:
            try:
                httpx.get(url, timeout=1)
                return process
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    process.kill()
                    output = process.communicate()[0]
                    raise AssertionError(f"{command} did not start: {output}") from None
                time.sleep(0.05)

    def record_with_client(self, command: str) -> str:
        """The recorder (`command`) while the page's client runs through it; then Ctrl-C."""
        recorder = self.start(command, f"http://127.0.0.1:{self.proxy_port}/_recorder/status")
        try:
            client = self.run(self.client)
            assert client.returncode == 0, client.stderr
            assert "Reviewed 1 file" in client.stdout, client.stdout
            recorder.send_signal(signal.SIGINT)
            out, _ = recorder.communicate(timeout=LIMIT)
        finally:
            if recorder.poll() is None:
                recorder.kill()
        assert recorder.returncode == 0, out
        return out


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copytree(REPO / "transcripts", tmp_path / "transcripts")  # docs/example.md's
    page = Page(tmp_path)
    card = f"http://127.0.0.1:{page.kit_port}/.well-known/agent-card.json"
    # its gRPC port any free one (the page's default, the HTTP port + 1, may be another's here):
    # the recorded card names it, and a re-recording pairs it with the committed one
    kit = page.start(page.kit + f" --port {page.kit_port} --grpc-port 0", card)
    try:
        yield page
    finally:
        kit.send_signal(signal.SIGINT)
        try:
            kit.communicate(timeout=LIMIT)
        finally:
            if kit.poll() is None:
                kit.kill()


def test_the_page_shows_the_flow_in_this_order() -> None:
    commands = page_commands()
    assert len(commands) == 6, commands
    assert commands[0] == "recorder kit"
    assert commands[1].startswith("recorder record ") and "--scenario ask-and-review" in commands[1]
    assert commands[2].startswith("python docs/ask_and_review.py ")
    assert commands[3] == "recorder docs sync docs/"
    assert commands[4] == commands[1] + " --mode replace"
    assert commands[5] == "recorder docs check docs/"
    assert re.search(r"<!-- recorder: examples/01-ask-and-review\.http#3 ", PAGE.read_text())


def _written(page: Page) -> list[str]:
    """What the example's folder holds besides the other examples' folder (calls/: the
    agent's own calls, docs/llm-without-a-model.md's)."""
    return [p.name for p in (page.root / EXAMPLE).parent.iterdir() if p.name != "calls"]


def test_the_page_from_scratch_then_recorded_again(page: Page) -> None:
    (page.root / EXAMPLE).unlink()
    out = page.record_with_client(page.record)
    line = r"recorded 200 +[\d.]+ ms  GetTask -> docs/examples/01-ask-and-review\.http"
    assert re.search(line, out), out
    assert _written(page) == [EXAMPLE.name]
    stale = page.run(page.check)
    assert stale.returncode == 1, stale.stdout + stale.stderr  # the new ids are not shown yet
    synced = page.run(page.sync)
    assert synced.returncode == 0 and "1 block updated" in synced.stdout, synced.stdout
    assert page.run(page.check).returncode == 0
    recorded = (page.root / EXAMPLE).read_bytes()
    out = page.record_with_client(page.rerecord)
    assert "docs/examples/01-ask-and-review.http recorded again in place (unchanged)" in out, out
    assert (page.root / EXAMPLE).read_bytes() == recorded
    assert _written(page) == [EXAMPLE.name]
    checked = page.run(page.check)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_recording_the_page_again_leaves_its_committed_example_as_it_is(page: Page) -> None:
    # the committed file as another client library's version recorded it: re-recording changes
    # its User-Agent lines (what this client sends now) and nothing else, whichever httpx is
    # installed (its User-Agent names its version)
    committed = (REPO / EXAMPLE).read_text(encoding="utf-8")
    agent = re.compile(r"^User-Agent: .*$", re.MULTILINE)
    assert agent.search(committed)
    (page.root / EXAMPLE).write_text(
        agent.sub("User-Agent: python-httpx/0.0.0", committed), encoding="utf-8"
    )
    page.record_with_client(page.rerecord)
    before = committed.split("\n")
    after = (page.root / EXAMPLE).read_text(encoding="utf-8").split("\n")
    assert len(after) == len(before)
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    sent = f"User-Agent: python-httpx/{httpx.__version__}"
    assert all(a.startswith("User-Agent: ") and b == sent for a, b in changed), changed
    assert sum(1 for line in after if line == sent) == len(agent.findall(committed))
    assert page.run(page.check).returncode == 0
