"""A gRPC call over raw HTTP/2 (the `h2` library, header validation off): what no gRPC
library sends, such as metadata values holding a NUL, a line break or non-ASCII bytes."""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.events


@dataclass
class RawReply:
    """What came back: the response headers, the data, the trailers, and whether the call
    ended within the time allowed."""

    headers: dict[bytes, bytes] = field(default_factory=dict)
    data: bytes = b""
    trailers: dict[bytes, bytes] = field(default_factory=dict)
    ended: bool = False

    @property
    def status(self) -> int | None:
        """The grpc-status (in the trailers, or in the headers of a call with no message)."""
        value = self.trailers.get(b"grpc-status", self.headers.get(b"grpc-status"))
        return None if value is None else int(value)

    @property
    def message(self) -> str:
        value = self.trailers.get(b"grpc-message", self.headers.get(b"grpc-message", b""))
        # (grpc percent-encodes the message)
        from urllib.parse import unquote

        return unquote(value.decode("ascii"))


def raw_call(
    address: str,
    path: str,
    message: bytes,
    metadata: list[tuple[bytes, bytes]],
    *,
    limit: float,
) -> RawReply:
    """Send one unary gRPC call to `address` (`host:port`) and read its reply for at most
    `limit` seconds (blocking: run it in a thread beside an event loop)."""
    host, port = address.rsplit(":", 1)
    config = h2.config.H2Configuration(
        client_side=True,
        validate_outbound_headers=False,
        normalize_outbound_headers=False,
        validate_inbound_headers=False,
    )
    connection = h2.connection.H2Connection(config=config)
    reply = RawReply()
    deadline = time.monotonic() + limit
    with socket.create_connection((host, int(port)), timeout=limit) as sock:
        connection.initiate_connection()
        stream = connection.get_next_available_stream_id()
        headers = [
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":path", path.encode()),
            (b":authority", address.encode()),
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
            *metadata,
        ]
        connection.send_headers(stream, headers)
        framed = b"\x00" + struct.pack(">I", len(message)) + message
        connection.send_data(stream, framed, end_stream=True)
        sock.sendall(connection.data_to_send())
        while not reply.ended and (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            try:
                data = sock.recv(65536)
            except TimeoutError:
                break
            if not data:
                break
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    reply.headers = dict(event.headers)
                elif isinstance(event, h2.events.DataReceived):
                    reply.data += event.data
                    connection.acknowledge_received_data(event.flow_controlled_length, stream)
                elif isinstance(event, h2.events.TrailersReceived):
                    reply.trailers = dict(event.headers)
                elif isinstance(event, h2.events.StreamEnded | h2.events.StreamReset):
                    reply.ended = True
            sock.sendall(connection.data_to_send())
    return reply
