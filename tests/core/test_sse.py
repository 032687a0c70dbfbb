"""SSE: lossless parsing, canonical serialization, the incremental decoder."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder.format.sse import SseDecoder, SseEvent, parse_lossless, serialize

SDK_STREAM = (
    b'data: {"result": {"task": {"id": "a0872fce"}}, "id": 4, "jsonrpc": "2.0"}\r\n\r\n'
    b": ping - 2026-11-29 18:29:00.123456+00:00\r\n\r\n"
    b'event: error\r\ndata: {"error": {"code": -32603}}\r\n\r\n'
)
SDK_EVENTS = (
    SseEvent(data='{"result": {"task": {"id": "a0872fce"}}, "id": 4, "jsonrpc": "2.0"}'),
    SseEvent(comments=("ping - 2026-11-29 18:29:00.123456+00:00",)),
    SseEvent(data='{"error": {"code": -32603}}', event="error"),
)


def test_parses_the_sdk_stream_with_crlf() -> None:
    assert parse_lossless(SDK_STREAM) == SDK_EVENTS


@pytest.mark.parametrize("newline", [b"\n", b"\r", b"\r\n"])
def test_every_line_ending_gives_the_same_events(newline: bytes) -> None:
    assert parse_lossless(SDK_STREAM.replace(b"\r\n", newline)) == SDK_EVENTS


def test_serialize_is_canonical_lf_and_fixed_field_order() -> None:
    event = SseEvent(data="a\nb", event="e", id="1", retry=10, comments=("c",))
    assert serialize([event]) == b": c\nevent: e\nid: 1\nretry: 10\ndata: a\ndata: b\n\n"
    assert parse_lossless(serialize([event])) == (event,)


@pytest.mark.parametrize(
    "body",
    [
        b"data: x\n",  # the last frame is not finished
        b"foo: bar\n\n",  # unknown field
        b"event: a\nevent: b\ndata: x\n\n",  # repeated event
        b"retry: soon\n\n",  # non-numeric retry
        b"\xef\xbb\xbfdata: x\n\n",  # byte-order mark
        b"data: \xff\n\n",  # not UTF-8
    ],
)
def test_streams_that_would_lose_something_are_not_parsed(body: bytes) -> None:
    assert parse_lossless(body) is None


def test_data_without_space_and_empty_data() -> None:
    assert parse_lossless(b"data:x\ndata\n\n") == (SseEvent(data="x\n"),)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(SDK_STREAM) - 1), max_size=8))
def test_decoder_gives_the_same_events_however_the_bytes_are_chunked(cuts: list[int]) -> None:
    points = [0, *sorted(set(cuts)), len(SDK_STREAM)]
    decoder = SseDecoder()
    seen: list[SseEvent] = []
    for start, end in itertools.pairwise(points):
        seen.extend(decoder.feed(SDK_STREAM[start:end]))
    assert decoder.close()
    assert tuple(seen) == SDK_EVENTS
    assert decoder.raw == SDK_STREAM


def test_decoder_reports_each_frame_as_soon_as_its_blank_line_arrives() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: 1\r\n") == []
    assert decoder.feed(b"\r") == [SseEvent(data="1")]
    assert decoder.feed(b"\ndata: 2\n\n") == [SseEvent(data="2")]


def test_decoder_keeps_raw_bytes_of_a_stream_that_is_not_lossless() -> None:
    decoder = SseDecoder()
    decoder.feed(b"data: 1\n\nwhat: 2\n\n")
    assert not decoder.close()
    assert decoder.raw == b"data: 1\n\nwhat: 2\n\n"


def test_decoder_close_flags_an_unfinished_frame() -> None:
    decoder = SseDecoder()
    decoder.feed(b"data: 1\n\ndata: 2")
    assert not decoder.close()


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"data": "a\rb"}, {"event": "a\nb"}, {"id": "a\0"}, {"retry": -1}, {"comments": ("a\n",)}],
)
def test_events_that_cannot_be_written_are_rejected(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        SseEvent(**kwargs)  # type: ignore[arg-type]
