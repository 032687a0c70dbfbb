"""Held-out gRPC traffic: the `@a2a-js/sdk` client on its gRPC transport (`@grpc/grpc-js`,
under `node`, when present and installable with npm), not the SDK the recorder was built with.

`js_grpc_client.mjs` takes the card's GRPC interface and asks a question, reviews a diff,
reads the task back, streams a review, cancels a slow review while its stream is open, and
asks for a task that does not exist. Through `recorder record` it sees what it sees from the
kit directly; what was recorded checks, replays clean on a fresh kit, and `recorder serve`
of it gives the same client the same again.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from grpc_sdk_traffic import grpc_calls, serving
from helpers import recorder_process

from recorder.checking import check_paths
from recorder.kit import start_kit
from recorder.replay.player import play

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

LIMIT = 30.0  # seconds, for one client run and for a process to stop
INSTALL_LIMIT = 180.0  # seconds: npm install, once per cache folder
CLIENT = Path(__file__).parent / "js_grpc_client.mjs"
PACKAGES = ("@a2a-js/sdk@^1.3", "@grpc/grpc-js@^1.11", "@bufbuild/protobuf@^2.10")

Client = Callable[[str], dict[str, Any]]


@pytest.fixture(scope="module")
def js_client() -> Client:
    """Runs `js_grpc_client.mjs` with node against an agent's URL (skips without node, npm or
    the packages)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed")
    default = Path.home() / ".cache" / "recorder-tests" / "js-sdk-grpc"
    folder = Path(os.environ.get("RECORDER_JS_GRPC_DIR", default))
    if not (folder / "node_modules" / "@grpc" / "grpc-js").is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        try:
            install = [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund"]
            subprocess.run(
                [*install, *PACKAGES], check=True, capture_output=True, timeout=INSTALL_LIMIT
            )
        except (subprocess.SubprocessError, OSError) as error:
            pytest.skip(f"@a2a-js/sdk with @grpc/grpc-js could not be installed: {error}")
    script = folder / CLIENT.name  # node finds the packages from the script's folder
    shutil.copy(CLIENT, script)

    def run(url: str) -> dict[str, Any]:
        done = subprocess.run(
            [node, str(script), url], capture_output=True, text=True, timeout=LIMIT
        )
        assert done.returncode == 0, done.stderr
        seen: dict[str, Any] = json.loads(done.stdout)
        return seen

    return run


def test_the_js_sdks_grpc_client_is_recorded_replayed_and_served(
    js_client: Client, tmp_path: Path
) -> None:
    with start_kit(port=0, grpc_port=0) as kit:
        direct = js_client(kit.url)
    # what the kit gives it (so that a client that got nothing cannot pass)
    assert direct["question"][0] == "message" and "Python" in direct["question"][1][0]
    assert direct["stream"][-1] == ["statusUpdate", 3]  # TASK_STATE_COMPLETED
    assert direct["canceled"] == 5 and direct["slow"][-1] == ["statusUpdate", 5]  # CANCELED
    assert direct["missing"] == "GrpcTaskNotFoundError"
    folder = tmp_path / "recorded"
    with (
        start_kit(port=0, grpc_port=0) as kit,
        recorder_process("--upstream", kit.url, "--out", str(folder)) as (process, url),
    ):
        through = js_client(url)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=LIMIT)
    assert process.returncode == 0, stderr
    assert through == direct  # the recorder changed nothing of what the client got
    calls = sorted(m for methods in grpc_calls(folder).values() for m in methods)
    two = ["SendMessage", "GetTask", "SendStreamingMessage"]
    assert calls == sorted([*two, *two, "CancelTask"])
    assert check_paths([folder])[1] == []
    for _ in range(2):  # on fresh kits, that never saw the recorded ids
        with start_kit(port=0, grpc_port=0) as fresh:
            result = play([folder], agent=fresh.url)
        errors = [e.error for t in result.transcripts for e in t.exchanges if e.error]
        mismatches = [m.path for t in result.transcripts for e in t.exchanges for m in e.mismatches]
        assert (errors, mismatches) == ([], [])
    with serving(folder) as (served, served_url):
        again = js_client(served_url)
        served.send_signal(signal.SIGINT)
        _, err = served.communicate(timeout=LIMIT)
    assert again == direct
    assert "0 unmatched" in err, err
