"""The incremental SSE decoder: the same frames however the stream is cut into chunks (a CRLF
split between two chunks included), and a long line in many chunks costs linear time."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder.format.sse import SseDecoder, parse_lossless

LINES = ["data: 1", "data: {}", "event: e", "id: 7", "retry: 10", ": c", "", "bogus: x", "x"]
streams = st.lists(
    st.tuples(st.sampled_from(LINES), st.sampled_from(["\n", "\r\n", "\r"])), max_size=12
).map(lambda parts: "".join(line + end for line, end in parts).encode())


def _decode(data: bytes, cuts: list[int]) -> tuple[bool, list[object], bytes]:
    decoder = SseDecoder()
    events: list[object] = []
    last = 0
    for cut in [*sorted({min(c, len(data)) for c in cuts}), len(data)]:
        events.extend(decoder.feed(data[last:cut]))
        last = cut
    return decoder.close(), events, decoder.raw


@settings(max_examples=300, deadline=None)
@given(streams, st.lists(st.integers(0, 200), max_size=8))
def test_any_chunking_gives_the_frames_of_the_whole(data: bytes, cuts: list[int]) -> None:
    whole = _decode(data, [])
    assert _decode(data, cuts) == whole
    assert _decode(data, list(range(len(data)))) == whole  # one byte at a time
    lossless, events, raw = whole
    assert raw == data
    parsed = parse_lossless(data)
    if lossless:
        assert parsed is not None and list(parsed) == events


@pytest.mark.timeout(10)
def test_a_long_line_in_many_chunks_is_linear() -> None:
    line = b"data: " + b"x" * 2_000_000  # quadratic before: 400 KB in 1 KB chunks took 28 s
    decoder = SseDecoder()
    for start in range(0, len(line), 1000):
        decoder.feed(line[start : start + 1000])
    assert [e.data for e in decoder.feed(b"\r")] == []
    assert [e.data for e in decoder.feed(b"\n\n")] == ["x" * 2_000_000]
    assert decoder.close()
