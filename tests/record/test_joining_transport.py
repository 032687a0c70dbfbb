"""`server.JoiningTransport`: a client connection's small writes made in one pass of the event
loop leave in one send (a reply's head and body: one syscall, one packet), a lone write at the
end of the pass it was made in, in order, and nothing held is lost at close."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from recorder.record.proxy.server import JoiningTransport

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Wire:
    """A transport that keeps each write it is given (and how it was closed)."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.closing = False
        self.buffered = 0

    def write(self, data: bytes) -> None:
        assert not self.closing, "written after close"
        self.sent.append(bytes(data))

    def close(self) -> None:
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 5) if name == "peername" else default


def joined() -> tuple[JoiningTransport, Wire]:
    wire = Wire()
    transport = JoiningTransport(cast(asyncio.Transport, wire), asyncio.get_running_loop())
    return transport, wire


async def next_pass() -> None:
    await asyncio.sleep(0)
    await asyncio.sleep(0)


async def test_a_head_and_body_written_in_one_pass_leave_in_one_send() -> None:
    transport, wire = joined()
    transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    transport.write(b"{}")
    assert wire.sent == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]
    await next_pass()
    assert len(wire.sent) == 1  # nothing sent twice


async def test_a_lone_write_leaves_at_the_end_of_its_pass() -> None:
    transport, wire = joined()
    transport.write(b"data: 1\n\n")
    assert wire.sent == []
    assert transport.get_write_buffer_size() == len(b"data: 1\n\n")
    await next_pass()
    assert wire.sent == [b"data: 1\n\n"]
    transport.write(b"data: 2\n\n")  # a later frame: held again, for its own pass
    await next_pass()
    assert wire.sent == [b"data: 1\n\n", b"data: 2\n\n"]


async def test_a_large_write_is_not_held_and_keeps_the_order() -> None:
    transport, wire = joined()
    big = b"x" * (JoiningTransport.HOLD_LIMIT + 1)
    transport.write(big)
    assert wire.sent == [big]
    transport.write(b"head")
    transport.write(big)  # joined behind what was held: order kept
    assert wire.sent == [big, b"head" + big]


async def test_close_sends_what_is_held_first() -> None:
    transport, wire = joined()
    transport.write(b"HTTP/1.1 408 Request Timeout\r\n\r\n")
    transport.close()
    assert wire.sent == [b"HTTP/1.1 408 Request Timeout\r\n\r\n"] and wire.closing
    await next_pass()
    assert len(wire.sent) == 1


async def test_a_write_held_when_the_connection_closes_under_it_is_dropped() -> None:
    transport, wire = joined()
    transport.write(b"late")
    wire.closing = True  # the client went away before the pass ended
    await next_pass()
    assert wire.sent == []


async def test_everything_else_is_the_transports() -> None:
    transport, _ = joined()
    assert transport.get_extra_info("peername") == ("127.0.0.1", 5)
    assert transport.is_closing() is False
