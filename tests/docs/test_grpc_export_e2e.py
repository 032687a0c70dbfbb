"""gRPC calls recorded from a real kit, exported, and run by the real clients against a FRESH
kit's gRPC port (issue 26): the `.http` export in httpyac (when `make tools` installed it in
`.tools/`), the bash export with grpcurl (on PATH, or in `.tools/bin` from `make tools`). Each
call must get the recorded status and outcome (the reply's kind and task state, a stream's
messages, the error's code and reason), and the ids must chain: the GetTask and CancelTask of
a task send the id the live SendMessage returned, not the recorded one."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recorder.bindings import grpc as binding
from recorder.cli import main
from recorder.disk.transcripts import load
from recorder.format.model import Exchange
from recorder.kit import KitServer, start_kit

ROOT = Path(__file__).resolve().parents[2]
HTTPYAC = ROOT / ".tools" / "node_modules" / ".bin" / "httpyac"
BASH = shutil.which("bash")
JQ = shutil.which("jq")
# grpcurl on PATH, else the one `make tools` put in .tools/bin
GRPCURL = shutil.which("grpcurl") or shutil.which("grpcurl", path=str(ROOT / ".tools" / "bin"))
PATH = os.pathsep.join([str(Path(GRPCURL).parent), os.environ["PATH"]]) if GRPCURL else ""
_MARK = re.compile(r"^### (\d+)\. .*\n", re.MULTILINE)
# the gRPC goldens (the planner's gRPC scenarios, recorded through the recorder from the kit)
METHODS = {
    "18-grpc-message-reply.http": ["SendMessage"],
    "19-grpc-streaming.http": ["SendStreamingMessage"],
    "20-grpc-get-task.http": ["SendMessage", "GetTask"],
    "21-grpc-cancel-task.http": ["SendMessage", "CancelTask"],
    "22-grpc-errors.http": ["GetTask"],
}

Outcome = tuple[Any, ...]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the shipped gRPC goldens, transcripts/18-22."""
    out = tmp_path_factory.mktemp("recorded")
    for name in METHODS:
        shutil.copy(ROOT / "transcripts" / name, out / name)
    calls = {p.name: [e.request.target.rsplit("/", 1)[1] for e in load(p)] for p in out.iterdir()}
    assert calls == METHODS
    return out


@pytest.fixture
def fresh_kit() -> Iterator[KitServer]:
    """A kit that has seen none of the recorded ids."""
    with start_kit(port=0, grpc_port=0) as kit:
        yield kit


def _summary(value: Any) -> Outcome:
    """A reply message's kind (`task`, `message`, `statusUpdate` …) and its task state."""
    if not isinstance(value, dict):
        return (type(value).__name__,)
    if "code" in value and "message" in value and len(value) <= 3:  # a google.rpc.Status
        reasons = tuple(_reason(d) for d in value.get("details") or [])
        return ("error", value["code"], reasons)
    kind = next(iter(value)) if len(value) == 1 else "task"
    inner = value[kind] if len(value) == 1 else value
    state = (inner.get("status") or {}).get("state") if isinstance(inner, dict) else None
    return (kind, state)


def _reason(detail: dict[str, Any]) -> Any:
    """An ErrorInfo detail's reason; grpcurl, which has no google.rpc proto, shows the
    detail's bytes as `@value`."""
    if "@value" in detail and detail.get("@type", "").endswith("google.rpc.ErrorInfo"):
        from google.rpc import error_details_pb2

        data = base64.b64decode(detail["@value"])
        return error_details_pb2.ErrorInfo.FromString(data).reason
    return detail.get("reason")


def recorded_outcome(exchange: Exchange) -> Outcome:
    response = exchange.response
    if response.events is not None:
        messages = [json.loads(e.data) for e in response.events if e.data is not None]
        return (response.status, tuple(_summary(m) for m in messages))
    return (response.status, _summary(json.loads(response.body)))


def _ids(exchanges: list[Exchange]) -> list[str | None]:
    """The task id each call's request sends (`id`), else the one its reply holds."""
    ids: list[str | None] = []
    for exchange in exchanges:
        sent = json.loads(exchange.request.body).get("id")
        if sent is None:
            reply = json.loads(exchange.response.body or b"{}")
            sent = (reply.get("task") or {}).get("id")
        ids.append(sent)
    return ids


def _export(folder: Path, target: str, kit: KitServer, out: Path) -> list[Path]:
    result = CliRunner().invoke(
        main,
        ["export", str(folder), "--to", target, "--grpc-agent", kit.grpc_address, "-o", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert (out / "a2a.proto").is_file()  # beside the exports, which load it
    return sorted(out.glob("*.sh" if target == "curl" else "*.http"))


def _check(recorded: Path, name: str, live: list[Outcome], sent: list[Any]) -> None:
    """The live outcomes are the recorded ones; a later call sent the live task id."""
    exchanges = list(load(recorded / name))
    assert live == [recorded_outcome(e) for e in exchanges], name
    if len(exchanges) == 2:  # SendMessage, then GetTask / CancelTask of its task
        first, second = sent
        assert first["task"]["id"] == second["id"], name  # the live id, chained
        assert first["task"]["id"] != _ids(exchanges)[0], name  # not the recorded one


@pytest.mark.e2e
@pytest.mark.skipif(not HTTPYAC.exists(), reason="httpyac not installed in .tools/ (make tools)")
def test_grpc_calls_exported_to_http_run_in_httpyac_against_a_fresh_kit(
    recorded: Path, fresh_kit: KitServer, tmp_path: Path
) -> None:
    files = _export(recorded, "http", fresh_kit, tmp_path)
    assert [p.name for p in files] == sorted(METHODS)
    for path in files:
        completed = subprocess.run(
            [str(HTTPYAC), "send", str(path), "--all", "--json"],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=False,
            cwd=tmp_path,
        )
        assert completed.returncode == 0, f"{path.name}: {completed.stderr}"
        items = json.loads(completed.stdout)["requests"]
        live: list[Outcome] = []
        sent: list[Any] = []
        for item in items:
            response = item["response"]
            body = json.loads(response["body"])
            if response["statusCode"] != 0:  # grpc-js's error: code, details, metadata
                body = json.loads(binding.status_json(_Failed(body)))
            if isinstance(body, dict) and "responses" in body:  # a server stream's messages
                messages = [json.loads(r["body"]) for r in body["responses"]]
                live.append((response["statusCode"], tuple(_summary(m) for m in messages)))
            else:
                live.append((response["statusCode"], _summary(body)))
            sent.append(body if len(sent) == 0 else json.loads(response["request"]["body"]))
        _check(recorded, path.with_suffix(".http").name, live, sent)


class _Failed:
    """A failed call as httpyac shows it (grpc-js's ServiceError), read as grpcio's."""

    def __init__(self, error: dict[str, Any]) -> None:
        self.error = error

    def code(self) -> int:
        return int(self.error["code"])

    def details(self) -> str:
        return str(self.error.get("details") or "")

    def trailing_metadata(self) -> list[tuple[str, str]]:
        metadata = self.error.get("metadata") or {}
        return [(name, value) for name, values in metadata.items() for value in values]


def _json_values(text: str) -> list[Any]:
    """The JSON values one after another in `text` (grpcurl prints a stream's messages so)."""
    decoder = json.JSONDecoder()
    values, position = [], 0
    text = text.strip()
    while position < len(text):
        value, position = decoder.raw_decode(text, position)
        values.append(value)
        while position < len(text) and text[position].isspace():
            position += 1
    return values


@pytest.mark.e2e
@pytest.mark.skipif(None in (BASH, JQ, GRPCURL), reason="needs bash, jq and grpcurl (make tools)")
def test_grpc_calls_exported_to_a_script_run_with_grpcurl_against_a_fresh_kit(
    recorded: Path, fresh_kit: KitServer, tmp_path: Path
) -> None:
    scripts = _export(recorded, "curl", fresh_kit, tmp_path)
    assert [p.with_suffix(".http").name for p in scripts] == sorted(METHODS)
    for script in scripts:
        assert BASH is not None
        completed = subprocess.run(
            [BASH, str(script)],
            env={"PATH": PATH},
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=False,
            cwd=tmp_path / "..",  # PROTO_DIR is the script's folder, not the working one
        )
        assert completed.returncode == 0, f"{script.name}: {completed.stderr}"
        marks = list(_MARK.finditer(completed.stdout))
        live: list[Outcome] = []
        sent: list[Any] = []
        for mark, after in zip(marks, [*marks[1:], None], strict=True):
            chunk = completed.stdout[mark.end() : after.start() if after else None]
            status_line, _, body = chunk.partition("\n\n")
            code = int(status_line.split(" ")[1])
            values = _json_values(body)
            method = METHODS[script.with_suffix(".http").name][len(live)]
            if method == "SendStreamingMessage":
                live.append((code, tuple(_summary(v) for v in values)))
            else:
                assert len(values) == 1, chunk
                live.append((code, _summary(values[0])))
            sent.append(values[0])
        # the second call's request is not printed: its reply names the task it acted on
        if len(sent) == 2:
            sent[1] = {"id": sent[1].get("id")}
        _check(recorded, script.with_suffix(".http").name, live, sent)


@pytest.mark.e2e
@pytest.mark.skipif(None in (BASH, JQ, GRPCURL), reason="needs bash, jq and grpcurl (make tools)")
def test_a_cancel_recorded_during_a_grpc_stream_is_sent_while_the_script_holds_it_open(
    tmp_path: Path,
) -> None:
    from grpc_traffic import record_cancel_during_stream

    with start_kit(port=0, grpc_port=0) as kit:
        source = record_cancel_during_stream(kit.grpc_address, tmp_path / "01-cancel.http")
    assert "# @during exchange 1 frame 2" in source.read_text()
    script = tmp_path / "out" / "01-cancel.sh"
    with start_kit(port=0, grpc_port=0) as fresh:
        result = CliRunner().invoke(
            main,
            ["export", str(source), "--to", "curl", "--grpc-agent", fresh.grpc_address],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
        script.parent.mkdir()
        script.write_text(result.stdout)
        assert "await_frames 1 2 grpc_frames" in result.stdout
        assert BASH is not None
        # the proto in the script's folder, or PROTO_DIR (here: the export's --proto)
        proto = CliRunner().invoke(
            main, ["export", str(source), "--to", "curl", "--proto", str(script.parent)]
        )
        assert proto.exit_code == 0, proto.output
        completed = subprocess.run(
            [BASH, str(script)],
            env={"PATH": PATH},
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    assert completed.returncode == 0, completed.stderr
    # the cancel's reply first (sent while the stream was open), then the stream, ended by it
    marks = [m.group(1) for m in _MARK.finditer(completed.stdout)]
    assert marks == ["2", "1"]
    chunks = _MARK.split(completed.stdout)
    cancel = _json_values(chunks[2].partition("\n\n")[2])
    stream = _json_values(chunks[4].partition("\n\n")[2])
    assert chunks[2].startswith("GRPC 0 OK") and chunks[4].startswith("GRPC 0 OK")
    assert cancel[0]["status"]["state"] == "TASK_STATE_CANCELED"
    assert cancel[0]["id"] == stream[0]["task"]["id"]  # the live task id, from message 1
    assert stream[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
