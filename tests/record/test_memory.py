"""What a long streamed body costs the recorder (issue 13, item 5): its copy is spooled to an
anonymous temporary file as it streams, and its base64 text is built without a string per
line. The peak RSS figures are bench/bench_memory.py's (registered in tests/test_benches.py)."""

from __future__ import annotations

import base64
import os

import pytest

from recorder.format.httpfile import _base64_text, dumps_exchange, loads
from recorder.format.model import Exchange, Headers, Request, Response
from recorder.record.proxy.relay import BodySpool


def test_a_long_body_is_spooled_to_a_file_and_read_back_whole() -> None:
    spool = BodySpool(spool_at=1000)
    chunks = [os.urandom(n) for n in (10, 500, 600, 4096, 1)]
    for chunk in chunks:
        spool.add(chunk)
    assert spool._file is not None and spool._chunks == []  # nothing held in memory
    assert spool.read() == b"".join(chunks)
    assert spool._file is None


def test_a_short_body_stays_in_memory() -> None:
    spool = BodySpool(spool_at=1000)
    spool.add(b"abc")
    spool.add(b"def")
    assert spool._file is None
    assert spool.read() == b"abcdef"
    spool.close()


@pytest.mark.parametrize("size", [1, 56, 57, 58, 57 * 16384 - 1, 57 * 16384, 57 * 16384 * 2 + 5])
def test_base64_text_is_the_76_character_layout(size: int) -> None:
    body = os.urandom(size)
    encoded = base64.b64encode(body).decode("ascii")
    assert _base64_text(body) == "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))


def test_a_binary_body_round_trips_through_the_text() -> None:
    body = bytes(range(256)) * 5000
    exchange = Exchange(
        request=Request("GET", "/big", Headers([("Host", "agent")])),
        response=Response(
            status=200,
            reason="OK",
            headers=Headers([("Content-Type", "application/octet-stream")]),
            body=body,
        ),
    )
    text = "# recorder-format: 1\n\n" + dumps_exchange(exchange)
    assert loads(text).exchanges[0].response.body == body
