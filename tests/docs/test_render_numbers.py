"""render shows every JSON number as the transcript writes it (issue 32): a stream's frames too.

A reply body was read keeping each number's text, but a `data:` line of an SSE stream was read
with `json.loads` and written back from Python's floats: `12345678901234567.89` shown as
`1.2345678901234568e+16`, `-0` as `0`, `1E5` as `100000.0`, `1.50` as `1.5`, 31 digits of pi
as 16, `1e400` as `Infinity` (which no JSON text says): the guide then showed what the agent
never sent.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from recorder.cli import main
from recorder.disk.transcripts import load
from recorder.docs.frames import cut_data_line
from recorder.docs.render import RenderOptions, render_exchange

NUMBERS = (
    "12345678901234567.89",
    "-0",
    "1E5",
    "1.50",
    "3.141592653589793238462643383279",
    "1e400",
)
FRAME = (
    '{"jsonrpc": "2.0", "id": 1, "result": {"artifactUpdate": {"taskId": "t-1", "artifact": '
    '{"artifactId": "a-1", "parts": [{"data": {"amounts": [' + ", ".join(NUMBERS) + "]}}]}}}}"
)
TRANSCRIPT = f"""\
# recorder-format: 1

### SendStreamingMessage: numbers in a stream
POST /a2a/jsonrpc HTTP/1.1
Host: localhost:41242
Accept: text/event-stream
Content-Type: application/json

{{
  "jsonrpc": "2.0",
  "id": 1,
  "method": "SendStreamingMessage",
  "params": {{
    "message": {{
      "messageId": "m-1",
      "role": "ROLE_USER",
      "parts": [
        {{
          "text": "add them up"
        }}
      ]
    }}
  }}
}}

HTTP/1.1 200 OK
Content-Type: text/event-stream

data: {FRAME}

data: {FRAME}

"""


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "numbers.http"
    path.write_text(TRANSCRIPT, encoding="utf-8")
    return path


def _shows_each_number_as_written(text: str) -> None:
    assert "[" + ", ".join(NUMBERS) + "]" in text, text
    for wrong in ("1.2345678901234568e+16", "100000.0", "Infinity", "3.141592653589793]"):
        assert wrong not in text, text


def test_render_full_shows_a_frames_numbers_as_written(transcript: Path) -> None:
    result = CliRunner().invoke(main, ["render", str(transcript), "--full"])
    assert result.exit_code == 0, result.output
    _shows_each_number_as_written(result.stdout)


def test_a_picked_member_of_a_frame_past_the_budget_keeps_its_numbers(transcript: Path) -> None:
    # the second frame is past a budget of a few lines: it is shown for its picked parts
    (exchange,) = load(transcript).exchanges
    shown = render_exchange(exchange, RenderOptions(max_lines=3, width=400))
    assert shown.count("data: ") == 2, shown
    _shows_each_number_as_written(shown)


def test_a_cut_data_line_keeps_its_numbers() -> None:
    shown = cut_data_line('{"id": 1, "result": {"values": [-0, 1E5, 1.50], "more": "x"}}', 50)
    assert shown.startswith('{"id": 1, "result": {"values": [-0, 1E5, 1.50]'), shown
    whole = cut_data_line(FRAME, 10**6)
    _shows_each_number_as_written(whole)
