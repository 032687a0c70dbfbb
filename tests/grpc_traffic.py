"""gRPC calls made to the real kit with grpcio, kept as transcript exchanges (what the
recorder's gRPC listener writes: `recorder.bindings.grpc.request_of`/`response_of`), for the
player's, serve's and the docs' gRPC tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
from a2a.types import a2a_pb2
from google.protobuf import json_format

from recorder import Exchange, Transcript, dump
from recorder.bindings import grpc as binding

LIMIT = 20.0  # seconds, each call's deadline
VERSION = [("a2a-version", "1.0")]
DIFF = (
    "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,4 @@\n import os\n"
    "+# TODO: read the port from the config\n+print(os.getcwd())\n x = 1\n"
)
SLOW_DIFF = "please review slowly\n" + DIFF


def send_request(text: str, message_id: str, *, blocking: bool = True) -> Any:
    """A SendMessageRequest of a user's text."""
    return json_format.ParseDict(
        {
            "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]},
            "configuration": {"returnImmediately": not blocking},
        },
        a2a_pb2.SendMessageRequest(),
    )


class Calls:
    """Calls to the agent at `address`, each kept as an `Exchange` in `exchanges`."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.insecure_channel(address)
        self.exchanges: list[Exchange] = []

    def close(self) -> None:
        self.channel.close()

    def _stub(self, name: str) -> Any:
        make = (
            self.channel.unary_stream
            if binding.is_server_streaming(name)
            else self.channel.unary_unary
        )
        return make(
            binding.target_of(name),
            request_serializer=binding.message_type(name).SerializeToString,
            response_deserializer=binding.message_type(name, reply=True).FromString,
        )

    def keep(self, name: str, request: Any, call: Any, reply: Any, messages: Any) -> Exchange:
        code = call.code().value[0]
        response = binding.response_of(
            code,
            message=call.details() or "",
            initial=call.initial_metadata() or (),
            trailing=call.trailing_metadata() or (),
            reply=reply,
            messages=messages,
        )
        exchange = Exchange(binding.request_of(name, VERSION, request), response, title=name)
        self.exchanges.append(exchange)
        return exchange

    def unary(self, name: str, request: Any) -> Any:
        """A unary call; its reply message (None when it failed)."""
        stub = self._stub(name)
        try:
            reply, call = stub.with_call(request, metadata=VERSION, timeout=LIMIT)
        except grpc.RpcError as exc:
            self.keep(name, request, exc, None, None)
            return None
        self.keep(name, request, call, reply, None)
        return reply

    def stream(self, name: str, request: Any) -> list[Any]:
        """A server-streaming call read to its end; its messages."""
        call = self._stub(name)(request, metadata=VERSION, timeout=LIMIT)
        messages = list(_read(call))
        self.keep(name, request, call, None, messages)
        return messages

    def open_stream(self, name: str, request: Any) -> Any:
        """A server-streaming call left open (`next(call)` reads on; `finish` keeps it)."""
        return self._stub(name)(request, metadata=VERSION, timeout=LIMIT)

    def finish(self, name: str, request: Any, call: Any, read: list[Any]) -> Exchange:
        """Read the open `call` to its end (`read`: what was read of it before) and keep it,
        in the place it was opened at (`at`)."""
        messages = [*read, *_read(call)]
        return self.keep(name, request, call, None, messages)


def _read(call: Any) -> Iterator[Any]:
    try:
        yield from call
    except grpc.RpcError:
        return


def get_task(task_id: str) -> Any:
    return a2a_pb2.GetTaskRequest(id=task_id)


def write(path: Path, exchanges: list[Exchange]) -> Path:
    """The exchanges as a transcript file."""
    dump(Transcript(tuple(exchanges)), path)
    return path


def record_review(address: str, path: Path) -> Path:
    """A review over gRPC: a blocking SendMessage (the task), GetTask by its id, a streamed
    review, an unknown task (NOT_FOUND) and ListTasks of that context."""
    calls = Calls(address)
    try:
        task = calls.unary("SendMessage", send_request(DIFF, "m-1")).task
        calls.unary("GetTask", get_task(task.id))
        frames = calls.stream("SendStreamingMessage", send_request(DIFF, "m-2"))
        streamed = frames[0].task.id
        calls.unary("GetTask", get_task(streamed))
        calls.unary("GetTask", get_task("no-such-task"))
    finally:
        calls.close()
    return write(path, calls.exchanges)


def record_cancel_during_stream(address: str, path: Path) -> Path:
    """A slow review streamed, canceled by CancelTask while its stream is open (`@during`
    exchange 1 frame 2)."""
    calls = Calls(address)
    try:
        request = send_request(SLOW_DIFF, "m-slow")
        call = calls.open_stream("SendStreamingMessage", request)
        read = [next(call), next(call)]
        cancel = a2a_pb2.CancelTaskRequest(id=read[0].task.id)
        stub = calls._stub("CancelTask")
        reply, done = stub.with_call(cancel, metadata=VERSION, timeout=LIMIT)
        stream = calls.finish("SendStreamingMessage", request, call, read)
        canceled = calls.keep("CancelTask", cancel, done, reply, None)
        calls.exchanges[:] = [
            stream,
            Exchange(
                canceled.request,
                canceled.response,
                title="CancelTask",
                comments=("@during exchange 1 frame 2",),
            ),
        ]
    finally:
        calls.close()
    return write(path, calls.exchanges)


def record_card(base_url: str, path: Path) -> Path:
    """The agent card fetched over HTTP (what a client reads first: it lists the GRPC
    interface)."""
    import httpx

    from recorder.format.model import Request, Response

    reply = httpx.get(f"{base_url}/.well-known/agent-card.json", timeout=LIMIT)
    host = base_url.split("//", 1)[1]
    exchange = Exchange(
        Request("GET", "/.well-known/agent-card.json", [("Host", host)]),
        Response(
            reply.status_code,
            "OK",
            [("content-type", "application/json")],
            reply.content,
        ),
        title="the agent card",
    )
    return write(path, [exchange])
