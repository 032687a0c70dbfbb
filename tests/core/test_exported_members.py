"""The public API is exactly what recorder/__init__.py exports (httpx's practice)."""

from __future__ import annotations

import recorder


def test_public_api_is_pinned() -> None:
    assert recorder.__all__ == [
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
    for name in recorder.__all__:
        assert getattr(recorder, name).__module__.startswith("recorder.")


def test_parse_error_is_a_recorder_error() -> None:
    assert issubclass(recorder.ParseError, recorder.RecorderError)
