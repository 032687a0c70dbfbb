"""A gRPC call as the HTTP/2 exchange it travels in (gRPC's PROTOCOL-HTTP2 spec): what a HAR
file holds of one (`recorder export --to har`, `recorder import`).

    request   POST /lf.a2a.v1.A2AService/<Method>
              content-type: application/grpc, te: trailers, the call's metadata
              body: its message, length-prefixed (1 byte: compressed, 4: length, big-endian)
    reply     200, content-type: application/grpc, the initial metadata
              body: the reply's messages, each length-prefixed
    trailers  grpc-status, grpc-message (percent-encoded), grpc-status-details-bin (base64),
              the trailing metadata; a call that ends before any message may send them as
              its headers (Trailers-Only)

The messages are protobuf, made from and read back to the transcript's ProtoJSON by
`recorder.bindings.grpc` (the SDK's messages, imported lazily). Compressed messages are not
read (ValueError). Pure: no sockets; grpcio is never imported.
"""

from __future__ import annotations

import base64
import struct
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from recorder.bindings import grpc
from recorder.format.model import Exchange, Request, Response, media_type

__all__ = [
    "CONTENT_TYPE",
    "HttpCall",
    "call_from_http",
    "call_to_http",
    "frame",
    "is_grpc_content",
    "unframe",
]

CONTENT_TYPE = "application/grpc"
# what gRPC libraries send themselves on every call, and HTTP/2's own: not a call's metadata
_TRANSPORT = frozenset(
    {
        "content-type",
        "te",
        "user-agent",
        "grpc-accept-encoding",
        "grpc-encoding",
        "grpc-timeout",
        "content-length",
        "date",
        "server",
        "host",
    }
)
_STATUS_KEYS = frozenset({"grpc-status", grpc.GRPC_MESSAGE, grpc.STATUS_DETAILS_BIN})
_PREFIX = struct.Struct(">BI")  # compressed flag, length


@dataclass(frozen=True)
class HttpCall:
    """A call's HTTP/2 parts: its path, the request's headers and body, the reply's headers,
    body and trailers (header values as text; `-bin` values in base64)."""

    path: str
    request_headers: tuple[tuple[str, str], ...]
    request_body: bytes
    response_headers: tuple[tuple[str, str], ...]
    response_body: bytes
    trailers: tuple[tuple[str, str], ...]


def is_grpc_content(content_type: str | None) -> bool:
    """Whether a Content-Type is gRPC's (`application/grpc`, `application/grpc+proto`)."""
    found = media_type(content_type)
    return found == CONTENT_TYPE or found.startswith(CONTENT_TYPE + "+")


def frame(messages: Iterable[bytes]) -> bytes:
    """Messages as the length-prefixed stream of an HTTP/2 body (uncompressed)."""
    return b"".join(_PREFIX.pack(0, len(message)) + message for message in messages)


def unframe(data: bytes) -> list[bytes]:
    """The messages of a length-prefixed body; ValueError when it is not one (or holds a
    compressed message)."""
    messages = []
    position = 0
    while position < len(data):
        if len(data) - position < _PREFIX.size:
            raise ValueError(f"a message prefix cut short at byte {position}")
        compressed, length = _PREFIX.unpack_from(data, position)
        position += _PREFIX.size
        if compressed:
            raise ValueError("a compressed message (grpc-encoding): not read")
        if len(data) - position < length:
            raise ValueError(f"a message of {length} bytes cut short at byte {position}")
        messages.append(data[position : position + length])
        position += length
    return messages


def call_to_http(exchange: Exchange) -> HttpCall:
    """The HTTP/2 parts of a recorded call (RecorderError without the SDK's messages;
    ValueError for a message that is not its method's)."""
    request, response = exchange.request, exchange.response
    name = grpc.method_of(request.target)
    if name is None:
        raise ValueError(f"{request.target}: not a method of {grpc.SERVICE}")
    message = grpc.to_message(name, request.body).SerializeToString()
    request_headers = (("content-type", CONTENT_TYPE), ("te", "trailers"), *request.headers)
    if response.events is not None:
        replies = [
            grpc.to_message(name, event.data, reply=True).SerializeToString()
            for event in response.events
            if event.data is not None
        ]
    elif response.status == 0:
        replies = [grpc.to_message(name, response.body, reply=True).SerializeToString()]
    else:
        replies = []
    status = grpc.call_status(response)
    trailers: list[tuple[str, str]] = [("grpc-status", str(response.status))]
    if status.get("message"):
        trailers.append((grpc.GRPC_MESSAGE, _percent(str(status["message"]))))
    for key, value in grpc.reply_trailing(response):
        text = base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value
        trailers.append((key, text))
    return HttpCall(
        path=request.target,
        request_headers=request_headers,
        request_body=frame([message]),
        response_headers=(("content-type", CONTENT_TYPE), *response.headers),
        response_body=frame(replies),
        trailers=tuple(trailers),
    )


def call_from_http(
    path: str,
    request_headers: Sequence[tuple[str, str]],
    request_body: bytes,
    response_headers: Sequence[tuple[str, str]],
    response_body: bytes,
    trailers: Sequence[tuple[str, str]],
) -> tuple[Request, Response]:
    """A call in the transcript model from its HTTP/2 parts. The status is the trailers'
    `grpc-status` (or the headers', Trailers-Only). ValueError naming what is wrong: no
    status, framing, a message that is not its method's; RecorderError without the SDK."""
    name = grpc.method_of(path)
    if name is None:
        raise ValueError(f"{path}: not a method of {grpc.SERVICE}")
    ending = [*trailers, *((k, v) for k, v in response_headers if k.lower() in _STATUS_KEYS)]
    status_text = next((v for k, v in ending if k.lower() == "grpc-status"), None)
    if status_text is None or not status_text.strip().isdigit():
        raise ValueError(
            "the reply holds no grpc-status (a HAR keeps no trailers unless its producer "
            "wrote them: `_trailers`)"
        )
    code = int(status_text)
    if code > 16:
        raise ValueError(f"grpc-status {code}: not a gRPC status code (0 to 16)")
    sent = unframe(request_body)
    if len(sent) != 1:
        raise ValueError(f"the request holds {len(sent)} messages: a call sends one")
    message = grpc.to_json(grpc.message_type(name).FromString(sent[0]))
    metadata = [(k.lower(), v) for k, v in request_headers if _is_metadata(k)]
    reply_type = grpc.message_type(name, reply=True)
    replies = [grpc.to_json(reply_type.FromString(data)) for data in unframe(response_body)]
    trailing: list[tuple[str, str | bytes]] = []
    for key, value in ending:
        folded = key.lower()
        if folded == "grpc-status":
            continue
        if folded == grpc.GRPC_MESSAGE:
            value = urllib.parse.unquote(value)
        trailing.append((folded, grpc.metadata_of([(folded, value)])[0][1]))
    message_text = next((str(v) for k, v in trailing if k == grpc.GRPC_MESSAGE), "")
    initial = [(k.lower(), v) for k, v in response_headers if _is_metadata(k)]
    streaming = grpc.is_server_streaming(name)
    response = grpc.response_of(
        code,
        message=message_text,
        initial=initial,
        trailing=[(k, v) for k, v in trailing if k != grpc.GRPC_MESSAGE],
        reply=replies[0] if replies and not streaming else None,
        messages=replies if streaming else None,
    )
    return grpc.request_of(name, metadata, message), response


def _is_metadata(key: str) -> bool:
    folded = key.lower()
    return not folded.startswith(":") and folded not in _TRANSPORT and folded not in _STATUS_KEYS


def _percent(text: str) -> str:
    """grpc-message's percent-encoding (the spec's: bytes outside 0x20-0x7E and `%`)."""
    return "".join(
        chr(byte) if 0x20 <= byte <= 0x7E and byte != 0x25 else f"%{byte:02X}"
        for byte in text.encode("utf-8")
    )
