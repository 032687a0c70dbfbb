"""`httpfile.splice`: an update rewrites the exchanges it changed and keeps every other line."""

from __future__ import annotations

import dataclasses

import pytest

from recorder.format.httpfile import dumps, loads, splice
from recorder.format.model import Response

# exchange 1's request is written by hand (one line of JSON, a comment): not the canonical layout
TEXT = """# recorder-format: 1
# a note at the top

### one
# hand-written
POST /a2a/jsonrpc HTTP/1.1
Content-Type: application/json

{"jsonrpc": "2.0", "id": 1, "method": "A", "params": {"x": [1, 2]}}

HTTP/1.1 200 OK
Content-Type: application/json

{
  "n": 1
}


### two
GET /b HTTP/1.1

HTTP/1.1 200 OK
Content-Type: text/plain

two

### three
GET /c HTTP/1.1

HTTP/1.1 200 OK
Content-Type: text/plain

three
"""


def reply(text: str) -> Response:
    return Response(200, "OK", {"Content-Type": "text/plain"}, text.encode())


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("changed", [[1], [2], [1, 2], [0]])
def test_only_the_changed_exchanges_are_written_anew(newline: str, changed: list[int]) -> None:
    text = TEXT.replace("\n", newline)
    transcript = loads(text)
    replaced = {
        i: dataclasses.replace(transcript.exchanges[i], response=reply(f"new {i}")) for i in changed
    }
    new = splice(text, transcript, replaced)
    assert new is not None
    expected = tuple(replaced.get(i, e) for i, e in enumerate(transcript.exchanges))
    assert loads(new).exchanges == expected
    if newline == "\r\n":  # the new blocks take the file's line ending
        assert new.count("\n") == new.count("\r\n")
    old_lines, new_lines = text.split(newline), new.split(newline)
    assert new_lines[:3] == old_lines[:3]  # the head
    if 0 not in changed:
        # the hand-written request stays as it was written, not in the canonical layout
        assert '{"jsonrpc": "2.0", "id": 1, "method": "A", "params": {"x": [1, 2]}}' in new_lines
        assert "# hand-written" in new_lines
        assert new_lines[3:17] == old_lines[3:17]
    else:
        assert new != dumps(transcript).replace("\n", newline)


def test_a_file_that_changed_since_it_was_read_gives_none() -> None:
    transcript = loads(TEXT)
    replaced = {1: dataclasses.replace(transcript.exchanges[1], response=reply("new"))}
    assert splice(TEXT.replace("### three", "### drei"), transcript, replaced) is None
    assert splice(TEXT.replace("### two\n", ""), transcript, replaced) is None
    assert splice(TEXT, transcript, {}) is None
