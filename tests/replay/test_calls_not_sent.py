"""A call the agent made (`# @call`) is never sent by the player, and counts as no exchange
of the client's (the stand-ins that answer and compare calls build on this)."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers import start_test_kit

from recorder.replay.run import play

REPO = Path(__file__).resolve().parent.parent.parent
CALL = """
### model: POST /a2a/jsonrpc
# @call model exchange 1
POST /a2a/jsonrpc HTTP/1.1
Host: 127.0.0.1:9
Content-Type: application/json

{"jsonrpc": "2.0", "id": 7, "method": "NoSuchMethod", "params": {}}

HTTP/1.1 200 OK
Content-Type: application/json

{"jsonrpc": "2.0", "id": 7, "result": {"ok": true}}
"""


def test_a_call_block_is_not_sent_to_the_agent_nor_reported(tmp_path: Path) -> None:
    path = tmp_path / "02-message-reply.http"
    shutil.copy(REPO / "transcripts" / "02-message-reply.http", path)
    text = path.read_text().replace(
        "# recorder-format: 1\n",
        "# recorder-format: 1\n# @downstream model http://127.0.0.1:9\n",
        1,
    )
    path.write_text(text + CALL)
    with start_test_kit() as kit:
        # (sent, the call would reach the kit, whose answer, a JSON-RPC error for an unknown
        # method, mismatches the recorded result); the calls let through to the agent's
        # downstreams: nothing stands in for them, so the kit's not calling is no mismatch
        result = play([path], agent=kit.url, live_downstreams=True)
    assert result.exchange_count == 1
    assert result.passed_count == 1
    [transcript] = result.transcripts
    assert [e.number for e in transcript.exchanges] == [1]


def test_a_call_between_two_exchanges_is_passed_over_and_the_next_one_played(
    tmp_path: Path,
) -> None:
    # a conversation's later turn after a call of its first: the player steps over the call's
    # block to reach it (failed after the merge of main: the call's note was given twice)
    path = tmp_path / "06-get-and-list-tasks.http"
    text = (REPO / "transcripts" / path.name).read_text()
    head, first, rest = text.split("\n###", 2)
    text = f"{head}\n###{first}{CALL.lstrip(chr(10))}\n###{rest}".replace(
        "# recorder-format: 1\n",
        "# recorder-format: 1\n# @downstream model http://127.0.0.1:9\n",
        1,
    )
    path.write_text(text)
    exchanges = text.count("\n###") - 1  # (the call's block is none of the client's)
    assert exchanges >= 2
    with start_test_kit() as kit:
        result = play([path], agent=kit.url, live_downstreams=True)
    assert result.exchange_count == exchanges
    assert result.passed_count == exchanges, [
        (e.number, e.error, e.mismatches) for t in result.transcripts for e in t.exchanges
    ]
    [transcript] = result.transcripts
    assert [e.number for e in transcript.exchanges] == [1, *range(3, exchanges + 2)]
