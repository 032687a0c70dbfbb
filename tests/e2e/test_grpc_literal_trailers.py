"""A literal `{{name}}` in a gRPC call's trailing metadata (a template an agent of our own
sends back; a stream's failure message quoting one) goes through the real recorder's gRPC
listener to the client unchanged, is written escaped (`\\{\\{name\\}\\}`: no variable), replays
clean against the same agent, is served to a grpcio client as the agent sent it, and is shown
as sent by `recorder render`."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc
from helpers import CLI, announced_address, cli_process, closed_port

from recorder.bindings import grpc as binding
from recorder.checking import check_paths
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.replay.run import play

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

LIMIT = 20.0
TRAILER = ("x-template", "Hello {{user_name}}")
FAILURE = "task {{task_id}} cannot be watched"
VERSION = (("a2a-version", "1.0"),)


def task(task_id: str) -> a2a_pb2.Task:
    status = a2a_pb2.TaskStatus(state=a2a_pb2.TASK_STATE_WORKING)
    return a2a_pb2.Task(id=task_id, context_id="ctx-1", status=status)


def get_task(data: bytes, context: grpc.ServicerContext) -> bytes:
    request = a2a_pb2.GetTaskRequest.FromString(data)
    context.set_trailing_metadata((TRAILER,))
    return task(request.id).SerializeToString()


def subscribe(data: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
    request = a2a_pb2.SubscribeToTaskRequest.FromString(data)
    yield a2a_pb2.StreamResponse(task=task(request.id)).SerializeToString()
    context.set_trailing_metadata((TRAILER,))
    context.set_code(grpc.StatusCode.FAILED_PRECONDITION)
    context.set_details(FAILURE)


@contextmanager
def agent() -> Iterator[str]:
    """A gRPC agent of our own (lf.a2a.v1.A2AService's GetTask and SubscribeToTask): its
    address."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handlers = {
        "GetTask": grpc.unary_unary_rpc_method_handler(get_task),
        "SubscribeToTask": grpc.unary_stream_rpc_method_handler(subscribe),
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(binding.SERVICE, handlers),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(None)


def calls(address: str) -> dict[str, Any]:
    """GetTask and SubscribeToTask by a grpcio client: what it got."""
    seen: dict[str, Any] = {}
    with grpc.insecure_channel(address) as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        reply, call = stub.GetTask.with_call(
            a2a_pb2.GetTaskRequest(id="t-1"), metadata=VERSION, timeout=LIMIT
        )
        seen["task"] = reply.id
        seen["get trailers"] = [tuple(m) for m in call.trailing_metadata() or ()]
        stream = stub.SubscribeToTask(
            a2a_pb2.SubscribeToTaskRequest(id="t-1"), metadata=VERSION, timeout=LIMIT
        )
        seen["frames"] = 0
        with pytest.raises(grpc.RpcError):
            for _ in stream:
                seen["frames"] += 1
        seen["code"] = stream.code()
        seen["details"] = stream.details()
        seen["stream trailers"] = [
            tuple(m) for m in stream.trailing_metadata() or () if m[0] == TRAILER[0]
        ]
    return seen


@pytest.fixture(scope="module")
def recorded(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, str, dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("grpc-literals")
    with agent() as address, closed_port() as nothing:
        direct = calls(address)
        proxy = create_proxy_app(f"http://127.0.0.1:{nothing}", out=folder)
        listener = proxy.listen_grpc(port=0, upstream=address)
        with ProxyServer(proxy):
            through = calls(f"127.0.0.1:{listener.port}")
        assert through == direct  # the client gets what the agent sent
        yield folder, address, direct


def test_the_literal_is_written_escaped_and_the_folder_checks(
    recorded: tuple[Path, str, dict[str, Any]],
) -> None:
    folder, _, seen = recorded
    assert seen["get trailers"] == [TRAILER] and seen["stream trailers"] == [TRAILER]
    assert (seen["frames"], seen["code"], seen["details"]) == (
        1,
        grpc.StatusCode.FAILED_PRECONDITION,
        FAILURE,
    )
    text = "".join(path.read_text() for path in sorted(folder.glob("*.http")))
    assert text.count("x-template: Hello \\{\\{user_name\\}\\}") == 2
    assert "grpc-message: task \\{\\{task_id\\}\\} cannot be watched" in text
    assert "{{user_name}}" not in text.replace("\\{\\{user_name\\}\\}", "")
    assert check_paths([folder])[1] == []


def test_the_literal_replays_clean_against_the_agent(
    recorded: tuple[Path, str, dict[str, Any]],
) -> None:
    folder, address, _ = recorded
    with closed_port() as nothing:
        result = play([folder], agent=f"http://127.0.0.1:{nothing}", grpc_agent=address)
    problems = [
        (m.path, m.expected, m.actual)
        for t in result.transcripts
        for e in t.exchanges
        for m in e.mismatches
    ]
    errors = [e.error for t in result.transcripts for e in t.exchanges if e.error]
    assert (problems, errors) == ([], [])
    assert result.passed_count == result.exchange_count == 2


def test_the_stand_in_serves_the_literal_as_the_agent_sent_it(
    recorded: tuple[Path, str, dict[str, Any]],
) -> None:
    folder, _, seen = recorded
    args = ("serve", str(folder), "--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0")
    with cli_process(*args, limit=LIMIT) as process:
        assert process.stderr is not None
        announced_address(process.stderr.readline())  # (the HTTP line first)
        served = calls(announced_address(process.stderr.readline()))
    assert served == seen


def test_render_shows_the_trailers_as_sent(recorded: tuple[Path, str, dict[str, Any]]) -> None:
    folder, _, _ = recorded
    shown = ""
    for path in sorted(folder.glob("*.http")):
        rendered = subprocess.run(
            [*CLI, "render", str(path), "--full"],
            capture_output=True,
            text=True,
            timeout=LIMIT,
            check=False,
        )
        assert rendered.returncode == 0, rendered.stderr
        shown += rendered.stdout
    assert shown.count("x-template: Hello {{user_name}}") == 2
    assert "\\{\\{" not in shown
