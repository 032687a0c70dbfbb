"""The player's stand-ins on loopback (`recorder.replay.standin`): a real HTTP client calls
them as an agent would, the files' recorded calls answer, and each exchange's calls are
judged when it settles (`recorder.replay.filecalls`)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest
from calltexts import ask, held_stream, model_call, tool_call, transcript

from recorder.errors import RecorderError
from recorder.format.model import Transcript
from recorder.replay.filecalls import FileCalls
from recorder.replay.standin import StandIns, parse_place, places_of
from recorder.replay.verdict.state import ReplayState
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES

RULES = PairingRules(DEFAULT_RULES)


class File:
    """One file's side of a replay, as the player drives it: open, settle."""

    def __init__(self, stand_ins: StandIns, text: Transcript, path: str = "01-review.http"):
        self.state = ReplayState(DEFAULT_RULES, recorded_base=None, live_base="http://x:1")
        state = self.state
        self.calls = FileCalls(path, text, RULES, lambda: state.mapping)
        stand_ins.stand_in_for([text])
        stand_ins.join(self.calls)

    def settle(self, index: int = 0) -> list[str]:
        return [str(m) for m in self.calls.settle(index, self.state).mismatches]


@pytest.fixture
def stand_ins() -> Iterator[StandIns]:
    with StandIns(RULES, {"model": ("127.0.0.1", 0), "tools": ("127.0.0.1", 0)}) as made:
        yield made


def url(stand_ins: StandIns, name: str, path: str) -> str:
    return stand_ins.addresses[name][0] + path


def chat(stand_ins: StandIns, client: httpx.Client, prompt: str) -> list[str]:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": prompt}]}
    with client.stream("POST", url(stand_ins, "model", "/v1/chat/completions"), json=body) as reply:
        assert reply.status_code == 200
        assert reply.headers["transfer-encoding"] == "chunked"
        return [line for line in reply.iter_lines() if line]


def lint(stand_ins: StandIns, client: httpx.Client, path: str) -> httpx.Response:
    request = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "lint", "arguments": {"path": path}},
    }
    return client.post(url(stand_ins, "tools", "/mcp"), json=request)


def test_the_recorded_calls_answer_and_the_same_calls_pass(stand_ins: StandIns) -> None:
    file = File(
        stand_ins,
        transcript(ask("review a.py"), tool_call("a.py"), model_call("review a.py", ["Two", "!"])),
    )
    file.calls.open(0)
    with httpx.Client() as client:
        tool = lint(stand_ins, client, "a.py")
        assert tool.json()["result"]["content"][0]["text"] == "ok"
        assert tool.headers["mcp-session-id"] == "s-1"
        frames = chat(stand_ins, client, "review a.py")
    assert frames == [
        'data: {"choices": [{"delta": {"content": "Two"}}]}',
        'data: {"choices": [{"delta": {"content": "!"}}]}',
        "data: [DONE]",
    ]
    assert file.settle() == []


def test_a_changed_prompt_is_a_mismatch_at_its_call(stand_ins: StandIns) -> None:
    file = File(
        stand_ins, transcript(ask("a"), tool_call("a.py"), model_call("review a.py", ["ok"]))
    )
    file.calls.open(0)
    with httpx.Client() as client:
        lint(stand_ins, client, "a.py")
        # still answered as recorded: the agent goes on as it did
        assert chat(stand_ins, client, "Review a.py please")[0].startswith("data: {")
    assert file.settle() == [
        'call 2 (model) $.messages[0].content: expected "review a.py", got "Review a.py please"'
    ]


def test_another_argument_a_dropped_call_and_an_extra_call(stand_ins: StandIns) -> None:
    file = File(
        stand_ins,
        transcript(ask("a"), tool_call("a.py"), model_call("review a.py", ["ok"])),
    )
    file.calls.open(0)
    with httpx.Client() as client:
        assert lint(stand_ins, client, "b.py").status_code == 200  # another argument
        extra = lint(stand_ins, client, "c.py")  # no recorded call of tools waits
    assert extra.status_code == 500
    assert extra.headers["x-should-retry"] == "false"
    assert "recorder play's stand-in for tools" in extra.json()["error"]["message"]
    assert file.settle() == [
        'call 1 (tools) $.params.arguments.path: expected "a.py", got "b.py"',
        "call 2 (model): not made",
        "an extra call (tools): POST /mcp",
    ]


def test_an_extra_calls_secret_query_parameter_is_not_reported(stand_ins: StandIns) -> None:
    file = File(stand_ins, transcript(ask("a"), model_call("review a.py", ["ok"])))
    file.calls.open(0)
    with httpx.Client() as client:
        chat(stand_ins, client, "review a.py")
        extra = client.post(url(stand_ins, "model", "/v1/models?key=sk-live-0123456789"))
    assert extra.status_code == 500
    assert file.settle() == ["an extra call (model): POST /v1/models?key={{KEY}}"]


def test_two_files_open_at_once_get_their_own_calls(stand_ins: StandIns) -> None:
    # --jobs: both files' exchanges are open; each call goes to the file it matches
    first = File(stand_ins, transcript(ask("a"), model_call("review a.py", ["A"])), "01-a.http")
    second = File(stand_ins, transcript(ask("b"), model_call("review b.py", ["B"])), "02-b.http")
    first.calls.open(0)
    second.calls.open(0)
    with httpx.Client() as client:
        assert "B" in chat(stand_ins, client, "review b.py")[0]
        assert "A" in chat(stand_ins, client, "review a.py")[0]
    assert first.settle() == []
    assert second.settle() == []


def test_a_call_while_no_exchange_is_open_is_refused_and_counted(stand_ins: StandIns) -> None:
    File(stand_ins, transcript(ask("a"), tool_call("a.py")))
    with httpx.Client() as client:
        assert lint(stand_ins, client, "a.py").status_code == 500
    assert stand_ins.strays == ["tools: POST /mcp"]


def test_a_call_made_after_its_exchange_settled_is_answered_and_reported_late(
    stand_ins: StandIns,
) -> None:
    file = File(stand_ins, transcript(ask("a"), tool_call("a.py"), ask("b")))
    file.calls.open(0)
    assert file.settle(0) == ["call 1 (tools): not made"]
    file.calls.open(2)
    with httpx.Client() as client:
        assert lint(stand_ins, client, "a.py").json()["result"]["content"][0]["text"] == "ok"
    assert file.settle(2) == [
        "an extra call (tools): POST /mcp (made late: call 1 (tools) of exchange 1)"
    ]


def test_a_stream_recorded_open_is_held_open(stand_ins: StandIns) -> None:
    # an MCP client's GET stream, which the agent kept open while it worked: answered with
    # its frames, then held open (ended, the client would open it again: an extra call)
    file = File(stand_ins, transcript(ask("a"), held_stream()))
    file.calls.open(0)
    lines: list[str] = []
    with (
        httpx.Client(timeout=httpx.Timeout(30, read=1.0)) as client,
        client.stream(
            "GET", url(stand_ins, "tools", "/mcp"), headers={"Accept": "text/event-stream"}
        ) as reply,
        pytest.raises(httpx.ReadTimeout),
    ):  # (an end would come at once)
        for line in reply.iter_lines():
            lines.append(line)
    assert lines[0] == ": ping"
    assert file.settle() == []


def test_the_recorded_hosts_are_the_default_places_and_an_override_wins() -> None:
    text = transcript(ask("a"), tool_call("a.py"), model_call("x", ["y"]))
    assert [(p.name, p.host, p.port) for p in places_of([text], {})] == [
        ("model", "127.0.0.1", 41260),
        ("tools", "127.0.0.1", 41261),
    ]
    assert [(p.name, p.host, p.port) for p in places_of([text], {"model": ("0.0.0.0", 5)})] == [
        ("model", "0.0.0.0", 5),
        ("tools", "127.0.0.1", 41261),
    ]


def test_a_place_taken_is_an_error_naming_the_downstream() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with (
            StandIns(RULES, {"tools": ("127.0.0.1", port)}) as stand_ins,
            pytest.raises(RecorderError, match=rf"cannot stand in for tools at 127.0.0.1:{port}"),
        ):
            stand_ins.stand_in_for([transcript(ask("a"), tool_call("a.py"))])


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("model@41260", ("model", "127.0.0.1", 41260)),
        ("model@0.0.0.0:0", ("model", "0.0.0.0", 0)),
        ("tools@[::1]:41261", ("tools", "::1", 41261)),
    ],
)
def test_a_downstream_place_is_read(text: str, place: tuple[str, str, int]) -> None:
    assert parse_place(text) == place


@pytest.mark.parametrize("text", ["model", "@41260", "model@", "1model@5", "model@99999"])
def test_a_bad_downstream_place_says_what_is_expected(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected|name"):
        parse_place(text)
