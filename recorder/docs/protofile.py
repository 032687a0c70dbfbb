"""`a2a.proto` written beside an export whose gRPC calls load it (httpyac's `proto <`,
grpcurl's `-proto`): the text `recorder.bindings.grpc_proto` prints from the descriptor
recorder ships.

A file of that name that recorder did not write (its first line is not `PROTO_MARK`) is the
user's: it is never overwritten.
"""

from __future__ import annotations

from pathlib import Path

from recorder.bindings.grpc_proto import PROTO_FILE, PROTO_MARK, proto_text
from recorder.docs.export import ExportError
from recorder.docs.sync import write_text_file

__all__ = ["write_proto"]


def write_proto(folder: Path) -> Path:
    """Write `folder/a2a.proto` (the folder made when missing); its path. ExportError when a
    file there is not one recorder wrote, or it cannot be written."""
    path = folder / PROTO_FILE
    text = proto_text()
    try:
        with path.open(encoding="utf-8") as handle:
            first = handle.readline()
    except FileNotFoundError:
        first = None
    except (OSError, UnicodeDecodeError) as exc:
        raise ExportError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if first is not None and not first.startswith(PROTO_MARK):
        raise ExportError(
            f"{path} is not the a2a.proto recorder writes: the export would overwrite it"
            " (move it, or pass --proto DIR)"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if first is None or path.read_text(encoding="utf-8") != text:
            write_text_file(path, text)
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
