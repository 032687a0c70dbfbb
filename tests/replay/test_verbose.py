"""`-v`'s diff of the normalized replies (pure: lines in, lines out; the run is in
test_play_options.py)."""

from __future__ import annotations

from recorder.replay.reports.verbose import reply_diff


def _stream(states: list[str]) -> list[str]:
    lines = ["HTTP/1.1 200 OK"]
    for number, state in enumerate(states, start=1):
        lines += [
            f"frame {number}:",
            "    {",
            f'      "state": "{state}",',
            '      "n": 1',
            "    }",
        ]
    return lines


def test_a_diff_has_three_lines_of_context_and_names_the_frame_of_each_hunk() -> None:
    recorded = _stream(["SUBMITTED", "WORKING", "WORKING", "COMPLETED"])
    live = _stream(["SUBMITTED", "WORKING", "WORKING", "FAILED"])
    assert reply_diff(recorded, live) == [
        "--- recorded reply (normalized)",
        "+++ live reply (normalized)",
        "@@ -16,6 +16,6 @@ frame 4:",
        "     }",
        " frame 4:",
        "     {",
        '-      "state": "COMPLETED",',
        '+      "state": "FAILED",',
        '       "n": 1',
        "     }",
    ]


def test_a_change_in_the_middle_of_a_stream_names_its_frame() -> None:
    recorded = _stream(["SUBMITTED", "WORKING", "WORKING", "COMPLETED"])
    live = _stream(["SUBMITTED", "FAILED", "WORKING", "COMPLETED"])
    assert reply_diff(recorded, live)[2] == "@@ -6,7 +6,7 @@ frame 2:"


def test_a_hunk_before_any_frame_is_not_named() -> None:
    diff = reply_diff(["HTTP/1.1 200 OK", "{}"], ["HTTP/1.1 500 Internal Server Error", "{}"])
    assert diff[2] == "@@ -1,2 +1,2 @@"


def test_replies_whose_normalized_texts_are_the_same_say_so() -> None:
    assert reply_diff(["a"], ["a"]) == [
        "the normalized replies are the same text: the mismatch is in what they do not show"
    ]


def test_a_number_is_shown_as_it_was_written_on_each_side() -> None:
    # 12345678901234567.89 and .88 are one float: read as floats, the diff had no line to show
    from factories import make_exchange, make_response

    from recorder.replay.reports.verbose import verbose_lines
    from recorder.replay.verdict.state import ReplayState
    from recorder.rules.ruleset import DEFAULT_RULES

    def reply(amount: str) -> bytes:
        return b'{"jsonrpc": "2.0", "id": 1, "result": {"total": ' + amount.encode() + b"}}"

    golden = make_exchange(response=make_response(body=reply("12345678901234567.89")))
    live = make_response(body=reply("12345678901234567.88"))
    state = ReplayState(
        DEFAULT_RULES, recorded_base="http://localhost:41242", live_base="http://localhost:41242"
    )
    lines = verbose_lines(state, golden, live, {})
    assert '-    "total": 12345678901234567.89' in lines, lines
    assert '+    "total": 12345678901234567.88' in lines, lines
    whole = verbose_lines(state, golden, make_response(body=reply("-0")), {}, whole=True)
    assert '        "total": -0' in whole, whole
