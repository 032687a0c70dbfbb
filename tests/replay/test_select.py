"""`-k` expressions (pure; the run is in test_play_cli.py)."""

from __future__ import annotations

import pytest

from recorder.replay.keywords import Selection, SelectionError

CANCEL = ("transcripts/07-cancel-task.http", "CancelTask: cancel it")
GET = ("transcripts/07-cancel-task.http", "GetTask: the review is in progress")
STREAM = ("transcripts/04-streaming.http", "SendStreamingMessage: send a diff")
SEND = ("transcripts/02-message-reply.http", "SendMessage: ask which languages and tools")


@pytest.mark.parametrize(
    ("expression", "selected"),
    [
        ("", [CANCEL, GET, STREAM, SEND]),
        ("cancel", [CANCEL, GET]),  # the file name counts
        ("CancelTask", [CANCEL]),
        ("not cancel", [STREAM, SEND]),
        ("send and not stream", [SEND]),
        ("stream or gettask", [GET, STREAM]),
        ("not (stream or gettask)", [CANCEL, SEND]),
        ("not not stream", [STREAM]),
        ("cancel and gettask or stream", [GET, STREAM]),  # and binds tighter
        ('"review is in"', [GET]),
        ("'cancel it' or \"ask which\"", [CANCEL, SEND]),
        ('"and"', [SEND]),  # a keyword in quotes is a word ("languages")
        ("04-streaming.http", [STREAM]),
        ("transcripts/02-message-reply.http", [SEND]),
        ("NOT", []),  # keywords are lower case: "NOT" is a word
        ("GetTask: the review", [GET]),  # words side by side: one phrase, as before
        ("cancel it or send a", [CANCEL, STREAM]),
        ("the  review", []),  # the text between the words is kept
    ],
)
def test_an_expression_selects_by_file_and_title(
    expression: str, selected: list[tuple[str, str]]
) -> None:
    selection = Selection.parse(expression)
    chosen = [case for case in (CANCEL, GET, STREAM, SEND) if selection.matches(*case)]
    assert chosen == selected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("and", "at column 1: expected not, left parenthesis or a word; got and"),
        ("(cancel", "at column 8: expected right parenthesis; got the end"),
        ("cancel)", "at column 7: expected and, or or the end; got right parenthesis"),
        ('"cancel', 'at column 1: the quote " is not closed'),
        ("cancel | get", "at column 8: unexpected character '|'"),
        ("not", "at column 4: expected not, left parenthesis or a word; got the end"),
        (
            '"cancel" it',
            "at column 10: expected and, or or the end; got 'it'; a quoted phrase holds the whole"
            " phrase",
        ),
    ],
)
def test_a_bad_expression_names_itself_and_the_column(expression: str, message: str) -> None:
    with pytest.raises(SelectionError) as caught:
        Selection.parse(expression)
    assert str(caught.value) == f"bad expression {expression!r} {message}"
