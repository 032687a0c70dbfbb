"""recorder: record, replay and document A2A agent exchanges as `.http` transcripts.

The public API is what `__all__` lists; everything else is internal.
"""

from recorder.disk.transcripts import dump, load
from recorder.errors import ParseError, RecorderError, RulesError, UpstreamError
from recorder.format.httpfile import dumps, loads
from recorder.format.model import (
    CallTag,
    Exchange,
    Headers,
    Request,
    Response,
    SseEvent,
    Transcript,
)

__all__ = [
    "CallTag",
    "Exchange",
    "Headers",
    "ParseError",
    "RecorderError",
    "Request",
    "Response",
    "RulesError",
    "SseEvent",
    "Transcript",
    "UpstreamError",
    "dump",
    "dumps",
    "load",
    "loads",
]
