"""`play --update` with checks keeps every number of the live reply as the agent wrote it
(issue 32): where a checked text passed, the recorded text is put back into the live reply,
which was read with `json.loads` and written back from Python's floats, so the file then said
`1.2345678901234568e+16` where the agent sent `12345678901234567.89` (`-0` as `0`, `1E5` as
`100000.0`, `1.50` as `1.5`, `1e400` as `Infinity`, which is no JSON)."""

from __future__ import annotations

import pytest
from factories import make_response

from recorder.format.jsonvalue import JsonNumber, dumps, loads
from recorder.format.model import Headers
from recorder.format.sse import SseEvent
from recorder.replay.verdict.checked import keep_recorded

NUMBERS = "[12345678901234567.89, -0, 1E5, 1.50, 3.141592653589793238462643383279, 1e400]"
LIVE = '{"result": {"text": "reworded", "amounts": ' + NUMBERS + "}}"
PASSED = [(None, ("result", "text"), "as recorded")]


def test_a_reply_keeps_its_numbers_where_a_text_is_put_back() -> None:
    kept = keep_recorded(make_response(body=LIVE.encode()), PASSED)
    text = dumps(loads(kept.body))  # (its layout aside: a body is laid out when it is made)
    assert '"as recorded"' in text, text
    assert NUMBERS in text, text


def test_a_frame_keeps_its_numbers_where_a_text_is_put_back() -> None:
    live = make_response(
        headers=Headers([("Content-Type", "text/event-stream")]),
        body=b"",
        events=(SseEvent(data=LIVE),),
    )
    kept = keep_recorded(live, [(1, ("result", "text"), "as recorded")])
    (event,) = kept.events or ()
    assert event.data is not None
    assert '"as recorded"' in event.data, event.data
    assert NUMBERS in event.data, event.data


@pytest.mark.parametrize("recorded", ["12345678901234567.89", "-0", "1E5"])
def test_a_recorded_number_put_back_is_written_as_it_was_recorded(recorded: str) -> None:
    # the player reads the recorded side's numbers as JsonNumbers: a checked number put back
    body = b'{"result": {"n": 7}}'
    kept = keep_recorded(make_response(body=body), [(None, ("result", "n"), JsonNumber(recorded))])
    assert dumps(loads(kept.body)) == '{"result": {"n": ' + recorded + "}}"
