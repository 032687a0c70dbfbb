"""A gRPC call's metadata as the recorder's gRPC listener passes it on
(`recorder.record.grpc_proxy`): what goes on to the agent (the client's own: the recorder's
keys and what gRPC libraries add themselves left out), what comes back to the client, and
what gRPC cannot send at all (`unsendable`: a client on raw HTTP/2 can send it; grpcio
refuses to send it on, and a call made with it would never end). Pure: grpcio is not
imported here.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "SCENARIO_KEY",
    "TITLE_KEY",
    "TRANSPORT_KEYS",
    "Metadata",
    "metadata_pairs",
    "raw",
    "sendable",
    "to_forward",
    "unsendable",
]

Metadata = list[tuple[str, "str | bytes"]]

SCENARIO_KEY = "recorder-scenario"
TITLE_KEY = "recorder-title"
# what the client's gRPC library adds to every call (not the client's metadata, and what the
# recorder's own channel to the agent sends again itself)
TRANSPORT_KEYS = frozenset({"user-agent", "te", "content-type", "grpc-accept-encoding"})


def metadata_pairs(metadata: Any) -> Metadata:
    """A call's metadata (grpc's tuples of metadatums, or None) as pairs."""
    return [(str(key), value) for key, value in (metadata or ())]


def to_forward(metadata: Metadata) -> Metadata:
    """The metadata that goes on to the agent: the client's own (the recorder's, and what
    the client's gRPC library adds and the recorder's channel adds again, left out)."""
    return [
        (k, v)
        for k, v in metadata
        if k not in (SCENARIO_KEY, TITLE_KEY) and k not in TRANSPORT_KEYS and k[:1] != ":"
    ]


def raw(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8")


# gRPC's metadata keys (its PROTOCOL-HTTP2 spec: `1*( %x30-39 / %x61-7A / "_" / "-" / ".")`)
_KEY = re.compile(r"[0-9a-z_.\-]+")


def unsendable(metadata: Metadata) -> str | None:
    """Why `metadata` cannot be sent on by gRPC (None: it can): a key gRPC does not allow,
    or a value of a key not ending in `-bin` that is not printable ASCII (gRPC's spec:
    `ASCII-Value -> 1*( %x20-%x7E )`; grpcio refuses to send it, and a call made with it
    never ends). A client's gRPC library never sends these; raw HTTP/2 can."""
    for key, value in metadata:
        if key[:1] == ":" or key in TRANSPORT_KEYS:
            continue
        if not _KEY.fullmatch(key):
            return f"the metadata key {key!r} is not one gRPC allows (0-9 a-z _ - .)"
        if key.endswith("-bin") or isinstance(value, bytes):
            continue
        if value.isascii() and value.isprintable():
            continue
        if "\x00" in value:
            what = "a NUL"
        elif "\r" in value or "\n" in value:
            what = "a line break (CR or LF)"
        elif not value.isascii():
            what = "a character that is not ASCII"
        else:
            what = "a control character"
        return (
            f"the value of the metadata {key!r} holds {what}: gRPC metadata values are "
            "printable ASCII (a binary value goes under a key ending in -bin)"
        )
    return None


def sendable(metadata: Any) -> tuple[tuple[str, str | bytes], ...]:
    """Metadata to pass on to the client (the status entries grpc sets itself left out)."""
    return tuple(
        (k, v)
        for k, v in metadata_pairs(metadata)
        if k not in ("grpc-status", "grpc-message") and not k.startswith(":")
    )
