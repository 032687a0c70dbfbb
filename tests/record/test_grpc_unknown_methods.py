"""gRPC methods that are not A2A's, through the recorder's listener (issue 34, item 9): each
is forwarded and named once in the log, up to a bound; a client calling ever new names grew
the set of names warned about (and the log) without end."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest

from recorder.record.proxy import create_proxy_app

pytestmark = pytest.mark.timeout(120)

NAMED = 64  # the bound: methods named one by one
CALLS = 300


async def echo(request: bytes, context: Any) -> bytes:
    return request


class Anything(grpc.GenericRpcHandler):
    def service(self, details: Any) -> Any:
        return grpc.unary_unary_rpc_method_handler(echo)


async def call_unknown_methods(tmp_path: Path) -> list[bytes]:
    agent = grpc.aio.server()
    agent.add_generic_rpc_handlers((Anything(),))
    port = agent.add_insecure_port("127.0.0.1:0")
    await agent.start()
    proxy = create_proxy_app("http://127.0.0.1:9", out=tmp_path)
    proxy.store.prepare()
    listener = proxy.listen_grpc(port=0, upstream=f"127.0.0.1:{port}")
    await listener.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{listener.port}") as channel:
            return [
                await channel.unary_unary(f"/other.Service/Method{n}")(b"x%d" % n, timeout=20)
                for n in range(CALLS)
            ]
    finally:
        await listener.stop()
        await agent.stop(None)
        await proxy.aclose()


def test_methods_that_are_not_a2as_are_forwarded_and_named_up_to_a_bound(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="recorder.record.grpc_proxy"):
        answers = asyncio.run(call_unknown_methods(tmp_path))
    assert answers == [b"x%d" % n for n in range(CALLS)]  # every call forwarded
    lines = [r.getMessage() for r in caplog.records if "not an A2A method" in r.getMessage()]
    assert len(lines) == NAMED + 1  # one a method, then one for the rest
    assert [n for n, line in enumerate(lines) if "no more are named" in line] == [NAMED]
    assert not list(tmp_path.glob("*.http"))  # none recorded
