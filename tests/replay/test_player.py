"""The player (`recorder.replay.player`): planning, placeholders, and replay against the real kit.

The end-to-end tests record their own small golden transcripts from a real kit started for the
module (`record_goldens`), then replay them against other, freshly started kits: ids and
timestamps differ on every run, so a clean replay shows that aliasing and carry-forward work
end to end. The shipped `transcripts/` (when present) are replayed five times in a row.
"""

from __future__ import annotations

import dataclasses
import io
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import httpx
import pytest
from helpers import closed_port, edit, start_test_kit, stream_that_never_ends

from recorder.disk.transcripts import dump
from recorder.errors import RecorderError, UpstreamError
from recorder.format.httpfile import dumps, loads
from recorder.format.model import Exchange, Headers, Request, Response, Transcript
from recorder.kit import KitServer, start_kit
from recorder.replay.plan import PlanItem, TranscriptErrors, load_transcripts, parse_shard, plan
from recorder.replay.reports.results import ExchangeResult, PlayResult, TranscriptResult
from recorder.replay.reports.terminal import TerminalReport
from recorder.replay.run import play
from recorder.replay.send import agent_base_url, recorded_base_url
from recorder.replay.variables import MissingVariableError, fill_placeholders, missing_variables
from recorder.replay.verdict.diff import Mismatch
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.servers import ServerThread

REPO = Path(__file__).resolve().parent.parent.parent
SHIPPED = REPO / "transcripts"


# --------------------------------------------------------------------------- golden transcripts


def mismatch_paths(result: PlayResult) -> list[tuple[str, int, int | None, str]]:
    """(file name, exchange number, frame, path) of every mismatch."""
    return [
        (Path(t.path).name, e.number, m.frame, m.path)
        for t in result.transcripts
        for e in t.exchanges
        for m in e.mismatches
    ]


# --------------------------------------------------------------------------- pure parts


def test_parse_shard_accepts_k_of_n_and_rejects_the_rest() -> None:
    assert parse_shard("2/5") == (2, 5)
    assert parse_shard(" 1 / 1 ") == (1, 1)
    for bad in ("0/3", "4/3", "1", "a/b", "1/0"):
        with pytest.raises(ValueError):
            parse_shard(bad)


def _transcript(*titles: str) -> Transcript:
    from factories import make_exchange

    return Transcript(tuple(make_exchange(title=t) for t in titles))


def test_plan_selects_files_and_plays_the_prefix_of_the_last_match() -> None:
    transcripts = [
        ("t/01-a.http", _transcript("SendMessage", "GetTask", "CancelTask")),
        ("t/02-b.http", _transcript("SendMessage")),
    ]
    everything = plan(transcripts)
    assert [(i.path, sorted(i.selected), i.play_count) for i in everything] == [
        ("t/01-a.http", [0, 1, 2], 3),
        ("t/02-b.http", [0], 1),
    ]
    # "gettask" matches the second exchange of the first file only (case-insensitive); the
    # first exchange is played as setup, the third is not needed
    (item,) = plan(transcripts, pattern="gettask")
    assert (item.path, sorted(item.selected), item.play_count) == ("t/01-a.http", [1], 2)
    # the file name is part of what -k matches
    assert [i.path for i in plan(transcripts, pattern="02-b")] == ["t/02-b.http"]
    assert plan(transcripts, pattern="nothing matches") == []


def test_shards_split_the_sorted_files_without_overlap() -> None:
    transcripts = [(f"t/{n:02d}.http", _transcript("x")) for n in range(7)]
    shards = [[i.path for i in plan(transcripts, shard=(k, 3))] for k in (1, 2, 3)]
    assert shards == [
        ["t/00.http", "t/03.http", "t/06.http"],
        ["t/01.http", "t/04.http"],
        ["t/02.http", "t/05.http"],
    ]


def test_placeholders_are_filled_in_target_headers_and_json_body() -> None:
    request = Request(
        "POST",
        "/a2a/{{TENANT}}/jsonrpc",
        Headers([("Content-Type", "application/json"), ("Authorization", "Bearer {{A2A_TOKEN}}")]),
        b'{"apiKey": "{{API_KEY}}"}',
    )
    filled = fill_placeholders(
        request, {"TENANT": "acme", "A2A_TOKEN": "s3cret", "API_KEY": 'quote " and \\ slash'}
    )
    assert filled.target == "/a2a/acme/jsonrpc"
    assert filled.headers.get("Authorization") == "Bearer s3cret"
    # JSON-escaped inside the string it stands in
    assert filled.json == {"apiKey": 'quote " and \\ slash'}


def test_a_placeholder_in_a_form_body_is_filled_percent_encoded() -> None:
    form = Headers([("Content-Type", "application/x-www-form-urlencoded")])
    request = Request("POST", "/login", form, b"user=ann&password={{PASSWORD}}")
    filled = fill_placeholders(request, {"PASSWORD": "s=cret &1"})
    assert filled.body == b"user=ann&password=s%3Dcret+%261"


def test_a_placeholder_value_is_percent_encoded_in_the_target() -> None:
    request = Request("GET", "/tasks?tenant={{TENANT}}")
    assert fill_placeholders(request, {"TENANT": "a b/c"}).target == "/tasks?tenant=a%20b/c"


def test_a_placeholder_value_that_cannot_be_a_header_value_is_a_clear_error() -> None:
    request = Request("GET", "/", Headers([("Authorization", "Bearer {{A2A_TOKEN}}")]))
    with pytest.raises(RecorderError) as caught:
        fill_placeholders(request, {"A2A_TOKEN": "two\nlines"}, path="t/x.http", line=3)
    assert str(caught.value) == (
        "t/x.http:3: a placeholder's value cannot be sent: "
        "header Authorization has a line break or NUL in its value"
    )


def test_a_request_without_placeholders_is_returned_unchanged() -> None:
    from factories import make_request

    request = make_request()
    assert fill_placeholders(request, {}) is request


def test_a_missing_variable_names_itself_and_the_file_and_line() -> None:
    text = (
        "# recorder-format: 1\n\n"
        "### GetExtendedAgentCard\n"
        "POST /a2a/jsonrpc HTTP/1.1\n"
        "Authorization: Bearer {{A2A_TOKEN}}\n\n"
        "HTTP/1.1 200 OK\n"
    )
    transcript = loads(text, source="t/04-cards.http")
    items = plan([("t/04-cards.http", transcript)])
    error = missing_variables(items, {})
    assert isinstance(error, MissingVariableError)
    assert str(error) == (
        "t/04-cards.http:3: the variable A2A_TOKEN is not set (the request uses"
        " {{A2A_TOKEN}} in Authorization, a credential the agent checks: no stand-in is made"
        " up); set it in the environment, with --var A2A_TOKEN=VALUE or in an --env-file, and"
        " run again"
    )
    assert missing_variables(items, {"A2A_TOKEN": "x"}) is None


def test_agent_urls_keep_scheme_host_port_and_prefix() -> None:
    assert agent_base_url("http://127.0.0.1:41242/") == "http://127.0.0.1:41242"
    assert agent_base_url("https://agent.example/prefix/") == "https://agent.example/prefix"
    assert agent_base_url("http://[::1]:8080") == "http://[::1]:8080"
    for bad in ("ftp://x", "localhost:41242", "http://"):
        with pytest.raises(ValueError):
            agent_base_url(bad)


def test_the_recorded_address_comes_from_the_host_header() -> None:
    from factories import make_exchange, make_request

    request = make_request(headers=Headers([("Host", "localhost:41242")]))
    assert recorded_base_url(Transcript((make_exchange(request=request),))) == (
        "http://localhost:41242"
    )
    assert recorded_base_url(Transcript((make_exchange(),))) is None


def test_every_broken_transcript_is_reported_with_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "01-ok.http").write_text(
        "### x\nGET / HTTP/1.1\n\nHTTP/1.1 200 OK\n", encoding="utf-8"
    )
    (tmp_path / "02-bad.http").write_text("### x\nGET / HTTP/1.1\n\n", encoding="utf-8")
    (tmp_path / "03-empty.http").write_text("# recorder-format: 1\n", encoding="utf-8")
    with pytest.raises(TranscriptErrors) as caught:
        load_transcripts([tmp_path])
    assert [str(e) for e in caught.value.errors] == [
        f'{tmp_path}/02-bad.http:4: expected a status line such as "HTTP/1.1 200 OK" after '
        "the request body (the request starts at line 2)",
        f"{tmp_path}/03-empty.http:2: no exchanges: a transcript holds at least one",
    ]


# --------------------------------------------------------------------------- end to end


@pytest.mark.e2e
def test_goldens_replay_cleanly_against_a_freshly_started_kit(goldens: Path) -> None:
    result = play([goldens], environ={}, start_agent=start_test_kit)
    assert mismatch_paths(result) == []
    assert [(Path(t.path).name, len(t.exchanges)) for t in result.transcripts] == [
        ("01-languages.http", 1),
        ("02-review.http", 2),
        ("03-streaming.http", 1),
        ("04-cards.http", 2),
        ("05-errors.http", 1),
        ("06-subscribe.http", 3),
    ]
    assert (result.exchange_count, result.passed_count, result.failed_count) == (10, 10, 0)


@pytest.mark.e2e
def test_the_replay_sends_the_live_ids_and_the_live_token(goldens: Path) -> None:
    """Carry-forward end to end: GetTask must name the task the live SendMessage created."""
    seen: list[tuple[str, bytes]] = []
    with start_kit(token="another-token") as kit:
        original = httpx.HTTPTransport.handle_request

        def spy(self: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
            seen.append((request.headers.get("authorization", ""), request.read()))
            return original(self, request)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(httpx.HTTPTransport, "handle_request", spy)
            result = play(
                [goldens / "02-review.http", goldens / "04-cards.http"],
                agent=kit.base_url,
                environ={"A2A_TOKEN": "another-token"},
            )
    assert mismatch_paths(result) == []
    golden_task_id = (
        loads((goldens / "02-review.http").read_text()).exchanges[1].request.json["params"]["id"]
    )
    sent_task_id = json.loads(seen[1][1])["params"]["id"]
    assert sent_task_id != golden_task_id
    assert seen[3][0] == "Bearer another-token"


@pytest.mark.e2e
@pytest.mark.skipif(
    not any(SHIPPED.glob("*.http")), reason="transcripts/ has no recorded transcripts yet"
)
def test_shipped_transcripts_replay_cleanly_five_times_in_a_row() -> None:
    for _ in range(5):
        result = play([SHIPPED], environ={}, start_agent=start_test_kit)
        assert mismatch_paths(result) == []
        assert result.exchange_count > 0


SEEDED_FAULTS = [
    pytest.param(
        "02-review.http",
        '"state": "TASK_STATE_COMPLETED"',
        '"state": "TASK_STATE_FAILED"',
        ("02-review.http", 1, None, "$.result.task.status.state"),
        id="task-state",
    ),
    pytest.param(
        "05-errors.http",
        '"code": -32001',
        '"code": -32002',
        ("05-errors.http", 1, None, "$.error.code"),
        id="error-code",
    ),
    pytest.param(
        "01-languages.http",
        "I can review Python",
        "I can review COBOL",
        ("01-languages.http", 1, None, "$.result.message.parts[0].text"),
        id="text",
    ),
    pytest.param(
        "03-streaming.http",
        '"state": "TASK_STATE_WORKING"',
        '"state": "TASK_STATE_SUBMITTED"',
        ("03-streaming.http", 1, 2, "$.result.statusUpdate.status.state"),
        id="sse-frame-state",
    ),
]


@pytest.mark.e2e
@pytest.mark.parametrize(("name", "old", "new", "expected"), SEEDED_FAULTS)
def test_a_seeded_fault_gives_exactly_its_mismatch(
    goldens: Path, kit: KitServer, name: str, old: str, new: str, expected: tuple[Any, ...]
) -> None:
    edit(goldens / name, old, new)
    result = play([goldens], agent=kit.base_url, environ={"A2A_TOKEN": kit.token})
    assert mismatch_paths(result) == [expected]
    assert not result.passed


@pytest.mark.e2e
def test_update_without_a_behaviour_change_leaves_every_file_byte_identical(
    goldens: Path, kit: KitServer
) -> None:
    before = {p.name: p.read_bytes() for p in goldens.iterdir()}
    result = play([goldens], agent=kit.base_url, environ={"A2A_TOKEN": kit.token}, update=True)
    assert result.passed
    assert not any(t.updated for t in result.transcripts)
    assert {p.name: p.read_bytes() for p in goldens.iterdir()} == before


@pytest.mark.e2e
def test_update_rewrites_a_wrong_golden_back_to_the_live_behaviour(
    goldens: Path, kit: KitServer
) -> None:
    path = goldens / "02-review.http"
    original = path.read_bytes()
    edit(path, '"state": "TASK_STATE_COMPLETED"', '"state": "TASK_STATE_FAILED"')
    result = play([goldens], agent=kit.base_url, environ={"A2A_TOKEN": kit.token}, update=True)
    assert [t.updated for t in result.transcripts] == [False, True, False, False, False, False]
    # the golden ids are kept: the file is the original one again, byte for byte
    assert path.read_bytes() == original
    again = play([goldens], agent=kit.base_url, environ={"A2A_TOKEN": kit.token})
    assert again.passed


@pytest.mark.e2e
def test_one_update_puts_back_a_value_that_only_a_later_exchange_pairs(
    goldens: Path, kit: KitServer
) -> None:
    # exchange 1's golden reply lost its artifactId; the live one has it, and only exchange 2
    # (GetTask) pairs it with the golden id: one update must write the golden id back, so that
    # the file is the original again and the next play passes
    path = goldens / "02-review.http"
    original = path.read_text()
    lines = original.splitlines(keepends=True)
    first = next(n for n, line in enumerate(lines) if '"artifactId"' in line)
    path.write_text("".join(lines[:first] + lines[first + 1 :]))
    environ = {"A2A_TOKEN": kit.token}
    result = play([path], agent=kit.base_url, environ=environ, update=True)
    assert mismatch_paths(result) == [
        ("02-review.http", 1, None, "$.result.task.artifacts[0].artifactId")
    ]
    assert path.read_text() == original
    assert play([path], agent=kit.base_url, environ=environ).passed


@pytest.mark.e2e
def test_parallel_jobs_give_the_same_verdicts_in_name_order(goldens: Path, kit: KitServer) -> None:
    edit(goldens / "05-errors.http", '"code": -32001', '"code": -32002')
    environ = {"A2A_TOKEN": kit.token}
    serial = play([goldens], agent=kit.base_url, environ=environ)
    parallel = play([goldens], agent=kit.base_url, environ=environ, jobs=3)
    assert (
        mismatch_paths(parallel)
        == mismatch_paths(serial)
        == [("05-errors.http", 1, None, "$.error.code")]
    )
    assert [t.path for t in parallel.transcripts] == [t.path for t in serial.transcripts]


@pytest.mark.e2e
def test_k_plays_the_setup_exchanges_but_reports_only_the_match(
    goldens: Path, kit: KitServer
) -> None:
    result = play(
        [goldens], agent=kit.base_url, environ={"A2A_TOKEN": kit.token}, pattern="GetTask: the"
    )
    ((path, numbers),) = [
        (Path(t.path).name, [e.number for e in t.exchanges]) for t in result.transcripts
    ]
    assert (path, numbers) == ("02-review.http", [2])
    assert result.passed  # the GetTask got the live task id from the SendMessage played first


@pytest.mark.e2e
def test_an_unreachable_agent_is_one_clear_error(goldens: Path) -> None:
    with closed_port() as port, pytest.raises(UpstreamError) as caught:
        play([goldens], agent=f"http://127.0.0.1:{port}", environ={"A2A_TOKEN": "x"})
    assert (
        str(caught.value)
        == f"cannot reach the agent at http://127.0.0.1:{port}: connection refused"
    )


@pytest.mark.e2e
def test_a_transcript_recorded_truncated_compares_only_the_recorded_frames(
    goldens: Path, kit: KitServer
) -> None:
    path = goldens / "03-streaming.http"
    transcript = loads(path.read_text())
    exchange = transcript.exchanges[0]
    assert exchange.response.events is not None
    kept = exchange.response.events[:2]
    from dataclasses import replace

    short = replace(exchange, truncated=True, response=replace(exchange.response, events=kept))
    path.write_text(dumps(replace(transcript, exchanges=(short,))))
    result = play([path], agent=kit.base_url, environ={})
    assert mismatch_paths(result) == []


@pytest.mark.e2e
def test_an_exchange_tagged_during_a_stream_is_sent_while_the_stream_is_open(
    goldens: Path,
) -> None:
    """`# @during exchange 2 frame 1`: the CancelTask goes out while SubscribeToTask streams.

    Without the tag the player reads the stream to its end first: the slow review (2 s here)
    completes on its own, the stream ends COMPLETED and the cancel comes too late.
    """
    path = goldens / "06-subscribe.http"
    # the status message names the review's duration, which differs on this kit
    rules = dataclasses.replace(
        DEFAULT_RULES, ignored_paths=("$..status.message.parts", "$..history[*].parts")
    )
    with start_kit(slow_review_seconds=2) as kit:
        tagged = play([path], agent=kit.base_url, environ={}, rules=rules)
        edit(path, "# @during exchange 2 frame 1\n", "")
        untagged = play([path], agent=kit.base_url, environ={}, rules=rules)
    assert mismatch_paths(tagged) == []
    assert ("06-subscribe.http", 3, None, "$.error") in mismatch_paths(untagged)


# --------------------------------------------------------------------------- the terminal report


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _results() -> tuple[list[PlanItem], list[TranscriptResult]]:
    transcript = _transcript("SendMessage", "GetTask")
    items = [PlanItem("t/01-a.http", transcript, frozenset({0, 1}), 2)]
    failed = ExchangeResult(
        2,
        "GetTask",
        9,
        (
            Mismatch("$.result.status.state", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED", 3),
            Mismatch("$.result.id", "<id:1>", "<id:2>", 4),
        ),
    )
    return items, [TranscriptResult("t/01-a.http", (ExchangeResult(1, "SendMessage", 3), failed))]


def test_on_a_terminal_the_report_has_colour_and_a_progress_line_it_erases(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    items, (result,) = _results()
    terminal = _Terminal()
    report = TerminalReport(terminal, progress_after=0, progress_stream=terminal)
    report.started(items)
    report.exchange_done(items[0], result.exchanges[0])
    report.transcript_done(result)
    output = terminal.getvalue()
    erase = "\r" + " " * len("[1/2] t/01-a.http") + "\r"
    assert output.startswith("[1/2] t/01-a.http" + erase)
    assert "\x1b[31m" in output  # red mark of the failure
    assert click.unstyle(output.split(erase)[-1]).splitlines() == [
        "t/01-a.http  ✗ exchange 2 (GetTask):",
        '    frame 3: $.result.status.state: expected "TASK_STATE_COMPLETED", '
        'got "TASK_STATE_FAILED"',
        '    frame 4: $.result.id: expected "<id:1>", got "<id:2>"',
    ]


def test_off_a_terminal_the_report_is_plain_without_progress() -> None:
    items, (result,) = _results()
    stream = io.StringIO()
    report = TerminalReport(stream, progress_after=0, progress_stream=stream)
    report.started(items)
    report.exchange_done(items[0], result.exchanges[0])
    report.transcript_done(result)
    report.summary(PlayResult((result,)))
    assert stream.getvalue() == (
        "t/01-a.http  ✗ exchange 2 (GetTask):\n"
        '    frame 3: $.result.status.state: expected "TASK_STATE_COMPLETED", '
        'got "TASK_STATE_FAILED"\n'
        '    frame 4: $.result.id: expected "<id:1>", got "<id:2>"\n'
        "failing exchanges:\n"
        '  ✗ t/01-a.http#2 (GetTask): frame 3: $.result.status.state: expected "TASK_STATE_'
        'COMPLETED", got "TASK_STATE_FAILED" (and 1 more)\n'
        "1 transcript, 2 exchanges: 1 passed, 1 failed\n"
    )


@pytest.mark.e2e
def test_an_unreachable_agent_stops_parallel_jobs_with_the_same_one_error(goldens: Path) -> None:
    with closed_port() as port, pytest.raises(UpstreamError) as caught:
        play([goldens], agent=f"http://127.0.0.1:{port}", environ={"A2A_TOKEN": "x"}, jobs=3)
    expected = f"cannot reach the agent at http://127.0.0.1:{port}: connection refused"
    assert str(caught.value) == expected


@pytest.mark.e2e
def test_a_stream_that_does_not_end_in_time_is_an_error_not_a_hang(
    goldens: Path, kit: KitServer
) -> None:
    # the slow review streams until it is canceled (30 s); without the CancelTask nothing ends
    # it. The exchange gets the error, the rest of its file is not played (it would need that
    # reply), and the other files are played as usual.
    stream_that_never_ends(goldens / "06-subscribe.http")
    result = play([goldens], agent=kit.base_url, environ={"A2A_TOKEN": kit.token}, timeout=1)
    [subscribe] = [t for t in result.transcripts if t.path.endswith("06-subscribe.http")]
    first_result, second_result, third_result = subscribe.exchanges
    assert first_result.passed
    # no frame for 1 s (the read timeout) or frames until the deadline: both say so in one line
    assert second_result.error in (
        f"the agent at {kit.base_url} did not answer within 1 s (POST /a2a/jsonrpc)",
        f"the event stream that the agent at {kit.base_url} sent for POST /a2a/jsonrpc "
        "did not end within 1 s",
    )
    assert (third_result.played, third_result.error) == (
        False,
        "not played: exchange 2 got no reply",
    )
    assert (result.error_count, result.not_played_count, result.failed_count) == (1, 1, 0)
    assert result.passed_count == result.exchange_count - 2


def test_update_writes_no_secret_to_the_disk(tmp_path: Path) -> None:
    # an agent whose reply now holds a secret member (named by the rules) and echoes the token
    # it was sent: the updated golden file holds the placeholders, never the values
    from starlette.applications import Starlette
    from starlette.requests import Request as StarletteRequest
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from recorder.rules.ruleset import Rules
    from recorder.servers import ServerThread

    async def reply(request: StarletteRequest) -> JSONResponse:
        token = request.headers["authorization"].removeprefix("Bearer ")
        team = request.headers["x-team"]
        return JSONResponse(
            {"apiKey": "BODYSECRET999", "note": f"you sent {token}", "team": team, "n": 2}
        )

    app = Starlette(routes=[Route("/a2a/jsonrpc", reply, methods=["POST"])])
    path = tmp_path / "01-secret.http"
    dump(
        Transcript(
            (
                Exchange(
                    Request(
                        "POST",
                        "/a2a/jsonrpc",
                        {
                            "Host": "localhost:41242",
                            "Authorization": "Bearer {{A2A_TOKEN}}",
                            "X-Team": "{{TEAM}}",
                            "Content-Type": "application/json",
                        },
                        b'{"jsonrpc": "2.0", "id": 1, "method": "GetSecret"}',
                    ),
                    Response(200, "OK", {"Content-Type": "application/json"}, b'{"n": 1}'),
                    title="GetSecret for the reviewers",
                ),
            )
        ),
        path,
    )
    rules = dataclasses.replace(DEFAULT_RULES, secret_fields={"apiKey": "API_KEY"})
    assert isinstance(rules, Rules)
    with ServerThread(app) as server:
        result = play(
            [path],
            agent=server.url,
            rules=rules,
            environ={"A2A_TOKEN": "tok-SECRET-42", "TEAM": "reviewers"},
            update=True,
        )
    assert [t.updated for t in result.transcripts] == [True]
    text = path.read_text()
    assert "BODYSECRET999" not in text and "tok-SECRET-42" not in text
    [exchange] = loads(text).exchanges
    assert exchange.response.json == {
        "apiKey": "{{API_KEY}}",
        "note": "you sent {{A2A_TOKEN}}",
        "team": "reviewers",  # {{TEAM}} names no secret: its value is no secret either
        "n": 2,
    }
    assert exchange.title == "GetSecret for the reviewers"
    # and the file replays: the echoed token is compared as the value of {{A2A_TOKEN}}, the
    # secret member for presence
    with ServerThread(app) as server:
        again = play(
            [path],
            agent=server.url,
            rules=rules,
            environ={"A2A_TOKEN": "tok-SECRET-42", "TEAM": "reviewers"},
        )
    assert again.passed, mismatch_paths(again)


@pytest.mark.e2e
def test_update_keeps_a_crlf_file_and_its_hand_written_lines(goldens: Path, kit: KitServer) -> None:
    # a golden file kept with CRLF line endings, one request written by hand on one line: the
    # update rewrites the reply that changed, in CRLF, and leaves every other line as it was
    path = goldens / "02-review.http"
    transcript = loads(path.read_text())
    request = transcript.exchanges[1].request
    one_line = json.dumps(request.json, separators=(",", ":"))
    text = path.read_text().replace(request.body.decode(), one_line)
    original = text.replace("\n", "\r\n").encode()
    edited = original.replace(b'"TASK_STATE_COMPLETED"', b'"TASK_STATE_FAILED"', 1)
    assert edited != original
    path.write_bytes(edited)
    result = play([path], agent=kit.base_url, environ={"A2A_TOKEN": kit.token}, update=True)
    assert [t.updated for t in result.transcripts] == [True]
    assert path.read_bytes() == original


def _one_exchange(path: Path, headers: dict[str, str], reply: Response) -> None:
    request = Request("POST", "/a2a/jsonrpc", {"Host": "localhost:41242", **headers}, b"{}")
    dump(Transcript((Exchange(request, reply, title="one"),)), path)


def test_non_ascii_header_values_are_sent_as_their_octets(tmp_path: Path) -> None:
    # a recorded value beyond ASCII (sent as UTF-8, as the recorder read it:
    # `recorder.format.model.header_text`), one an earlier recorder wrote as Latin-1 text of UTF-8
    # bytes (sent as those bytes), and a placeholder filled with characters beyond Latin-1
    # (sent as UTF-8): sent, not a UnicodeEncodeError
    from starlette.applications import Starlette
    from starlette.requests import Request as StarletteRequest
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from recorder.servers import ServerThread

    async def echo(request: StarletteRequest) -> JSONResponse:
        raw = dict(request.headers.raw)
        return JSONResponse(
            {
                "note": raw[b"x-note"].hex(),
                "old": raw[b"x-old"].hex(),
                "auth": raw[b"authorization"].hex(),
            },
        )

    expected = {
        "note": "café".encode().hex(),
        "old": "café".encode().hex(),
        "auth": "Bearer tökén€".encode().hex(),
    }
    path = tmp_path / "01-headers.http"
    json_type = {"Content-Type": "application/json"}
    reply = Response(200, "OK", json_type, json.dumps(expected).encode())
    headers = {"X-Note": "café", "X-Old": "cafÃ©", "Authorization": "Bearer {{A2A_TOKEN}}"}
    _one_exchange(path, headers, reply)
    with ServerThread(Starlette(routes=[Route("/a2a/jsonrpc", echo, methods=["POST"])])) as server:
        result = play([path], agent=server.url, environ={"A2A_TOKEN": "tökén€"})
    assert result.passed, mismatch_paths(result)


def test_a_reply_that_cannot_be_decoded_is_that_exchanges_error(tmp_path: Path) -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request as StarletteRequest
    from starlette.responses import Response as StarletteResponse
    from starlette.routing import Route

    from recorder.servers import ServerThread

    async def broken(request: StarletteRequest) -> StarletteResponse:
        return StarletteResponse(b"not gzip at all", headers={"Content-Encoding": "gzip"})

    path = tmp_path / "01-gzip.http"
    _one_exchange(path, {}, Response(200, "OK", {"Content-Type": "text/plain"}, b"hello"))
    app = Starlette(routes=[Route("/a2a/jsonrpc", broken, methods=["POST"])])
    with ServerThread(app) as server:
        result = play([path], agent=server.url, environ={})
    [exchange] = result.transcripts[0].exchanges
    assert exchange.error is not None
    assert exchange.error.startswith(
        f"the reply of the agent at {server.url} (POST /a2a/jsonrpc) cannot be decoded as its"
        " Content-Encoding says: "
    )
    assert result.error_count == 1


@pytest.mark.e2e
def test_the_address_the_kit_prints_replays_cleanly(goldens: Path, kit: KitServer) -> None:
    # `recorder kit` prints http://127.0.0.1:PORT; its card says http://localhost:PORT
    agent = f"http://127.0.0.1:{kit.port}"
    result = play([goldens], agent=agent, environ={"A2A_TOKEN": kit.token})
    assert result.passed, mismatch_paths(result)


def test_exchanges_not_played_are_one_line_with_their_numbers() -> None:
    from recorder.replay.reports.results import ExchangeResult, TranscriptResult
    from recorder.replay.reports.terminal import transcript_lines

    why = "not played: exchange 3 got no reply"
    result = TranscriptResult(
        "t.http",
        (
            ExchangeResult(3, "Get", 9, error="the agent did not answer within 1 s"),
            *(ExchangeResult(n, "", None, error=why, played=False) for n in (4, 5, 6, 8)),
        ),
    )
    assert transcript_lines(result) == [
        "t.http  ✗ exchange 3 (Get):",
        "    error: the agent did not answer within 1 s",
        "        ✗ exchanges 4-6, 8: not played: exchange 3 got no reply",
    ]


def test_a_body_that_trickles_in_is_cut_at_the_timeout(tmp_path: Path) -> None:
    # a byte every 0.3 s: each read is quick, the whole reply is not
    import asyncio

    from starlette.applications import Starlette
    from starlette.requests import Request as StarletteRequest
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    from recorder.servers import ServerThread

    async def trickle(request: StarletteRequest) -> StreamingResponse:
        async def body() -> Any:
            for byte in b'{"a": "slow reply"}':
                yield bytes([byte])
                await asyncio.sleep(0.3)

        return StreamingResponse(body(), media_type="application/json")

    path = tmp_path / "01-trickle.http"
    _one_exchange(path, {}, Response(200, "OK", {"Content-Type": "application/json"}, b"{}"))
    app = Starlette(routes=[Route("/a2a/jsonrpc", trickle, methods=["POST"])])
    with ServerThread(app) as server:
        started = time.monotonic()
        result = play([path], agent=server.url, environ={}, timeout=1)
        took = time.monotonic() - started
    [exchange] = result.transcripts[0].exchanges
    assert exchange.error == (
        f"the reply that the agent at {server.url} sent for POST /a2a/jsonrpc did not end"
        " within 1 s"
    )
    assert took < 3


def test_a_content_encoding_recorder_cannot_decode_is_that_exchanges_error(
    tmp_path: Path,
) -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request as StarletteRequest
    from starlette.responses import Response as StarletteResponse
    from starlette.routing import Route

    from recorder.servers import ServerThread

    async def compressed(request: StarletteRequest) -> StarletteResponse:
        return StarletteResponse(b"\x1f\x9d\x90", headers={"Content-Encoding": "compress"})

    path = tmp_path / "01-compress.http"
    _one_exchange(path, {}, Response(200, "OK", {"Content-Type": "text/plain"}, b"hello"))
    app = Starlette(routes=[Route("/a2a/jsonrpc", compressed, methods=["POST"])])
    with ServerThread(app) as server:
        result = play([path], agent=server.url, environ={}, update=True)
    [transcript] = result.transcripts
    assert transcript.exchanges[0].error == (
        f"the reply of the agent at {server.url} (POST /a2a/jsonrpc) has Content-Encoding:"
        " compress, which recorder cannot decode"
    )
    assert not transcript.updated


def test_a_report_prints_no_secret(tmp_path: Path) -> None:
    # a new secret member and a new member that echoes the token: reported, with placeholders
    from starlette.applications import Starlette
    from starlette.requests import Request as StarletteRequest
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from recorder.replay.reports.terminal import junit_xml, transcript_lines
    from recorder.servers import ServerThread

    async def reply(request: StarletteRequest) -> JSONResponse:
        token = request.headers["authorization"].removeprefix("Bearer ")
        return JSONResponse(
            {"n": 1, "apiKey": "sk-live-SUPERSECRET", "note": f"token {token} here"}
        )

    path = tmp_path / "01-key.http"
    golden = Response(200, "OK", {"Content-Type": "application/json"}, b'{"n": 1}')
    _one_exchange(path, {"Authorization": "Bearer {{A2A_TOKEN}}"}, golden)
    rules = dataclasses.replace(DEFAULT_RULES, secret_fields={"apiKey": "API_KEY"})
    app = Starlette(routes=[Route("/a2a/jsonrpc", reply, methods=["POST"])])
    with ServerThread(app) as server:
        result = play([path], agent=server.url, rules=rules, environ={"A2A_TOKEN": "tok-SECRET-42"})
    [exchange] = result.transcripts[0].exchanges
    assert [(m.path, m.actual) for m in exchange.mismatches] == [
        ("$.apiKey", "{{API_KEY}}"),
        ("$.note", "token {{A2A_TOKEN}} here"),
    ]
    shown = "\n".join(transcript_lines(result.transcripts[0])) + junit_xml(result)
    assert "SUPERSECRET" not in shown and "tok-SECRET-42" not in shown


# --- secrets and placeholders in replies ---------------------------------------------------


def _agent(answer: Callable[[Any], Any]) -> Any:
    """A one-route agent (POST /a2a/jsonrpc) whose reply `answer(request)` builds."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    async def route(request: Any) -> Any:
        await request.body()
        return answer(request)

    return Starlette(routes=[Route("/a2a/jsonrpc", route, methods=["POST", "GET"])])


def test_update_scrubs_every_spelling_of_a_secret(tmp_path: Path) -> None:
    # a secret with a quote, a backslash and a line break (JSON writes it escaped), a token
    # sent through a placeholder the rules do not name but in a secret header, and a token
    # beyond Latin-1 echoed in a header (read back as Latin-1): none reaches the file
    from starlette.responses import JSONResponse

    key = 'line1-secret\nline2 "q" \\ back'
    token = "ghp_geheim€-token-42"

    def answer(request: Any) -> Any:
        auth = request.headers["authorization"].removeprefix("Bearer ")
        raw = dict(request.headers.raw)[b"authorization"].removeprefix(b"Bearer ")
        return JSONResponse(
            {"note": f"key {key} accepted", "who": auth[:4]},
            headers={"X-Echo": raw.decode("latin-1")},
        )

    path = tmp_path / "01-keys.http"
    request = Request(
        "POST",
        "/a2a/jsonrpc",
        {
            "Host": "localhost:41242",
            "Authorization": "Bearer {{GITHUB_TOKEN}}",
            "Content-Type": "application/json",
        },
        b'{"apiKey": "{{APIKEY}}"}',
    )
    golden = Response(200, "OK", {"Content-Type": "application/json"}, b'{"who": "ghp_"}')
    dump(Transcript((Exchange(request, golden, title="keys"),)), path)
    rules = dataclasses.replace(DEFAULT_RULES, secret_fields={"apiKey": "APIKEY"})
    environ = {"APIKEY": key, "GITHUB_TOKEN": token}
    with ServerThread(_agent(answer)) as server:
        result = play([path], agent=server.url, rules=rules, environ=environ, update=True)
        assert [t.updated for t in result.transcripts] == [True]
        text = path.read_text()
        for spelling in (key, json.dumps(key)[1:-1], token, token.encode().decode("latin-1")):
            assert spelling not in text
        assert '"note": "key {{APIKEY}} accepted"' in text
        assert "x-echo: {{GITHUB_TOKEN}}" in text  # as Starlette writes the name
        again = play([path], agent=server.url, rules=rules, environ=environ)
    assert again.passed, mismatch_paths(again)


def test_a_secret_query_parameter_is_kept_out_of_an_error_line(tmp_path: Path) -> None:
    import asyncio

    from starlette.responses import JSONResponse

    async def never(request: Any) -> Any:
        await asyncio.sleep(3)
        return JSONResponse({})

    from starlette.applications import Starlette
    from starlette.routing import Route

    app = Starlette(routes=[Route("/slow", never, methods=["GET"])])
    path = tmp_path / "01-slow.http"
    request = Request("GET", "/slow?api_key={{QKEY}}", {"Host": "localhost:41242"})
    dump(Transcript((Exchange(request, Response(200, "OK"), title="slow"),)), path)
    rules = dataclasses.replace(DEFAULT_RULES, secret_fields={"api_key": "QKEY"})
    with ServerThread(app) as server:
        result = play(
            [path], agent=server.url, rules=rules, environ={"QKEY": "qk-SECRET-9"}, timeout=1
        )
    [exchange] = result.transcripts[0].exchanges
    assert exchange.error is not None and "{{QKEY}}" in exchange.error
    assert "qk-SECRET-9" not in exchange.error


@pytest.mark.parametrize(
    ("recorded", "live", "environ", "passes"),
    [
        # a secret the agent made and echoed, recorded as its placeholder: any text there
        ("key {{APIKEY}} accepted", "key gen-secret-2 accepted", {}, True),
        ("key {{APIKEY}} accepted", "key gen-secret-2 refused", {}, False),
        # set: compared as its value
        ("key {{APIKEY}} accepted", "key k-123456 accepted", {"APIKEY": "k-123456"}, True),
        ("key {{APIKEY}} accepted", "key other-1 accepted", {"APIKEY": "k-123456"}, False),
        # the agent's own {{...}} text, no placeholder of this file: compared as it is
        ("Dear {{USER}}, hello", "Dear {{USER}}, hello", {"USER": "alice"}, True),
        ("Dear {{USER}}, hello", "Dear alice, hello", {"USER": "alice"}, False),
    ],
)
def test_placeholders_in_a_recorded_reply(
    tmp_path: Path, recorded: str, live: str, environ: dict[str, str], passes: bool
) -> None:
    from starlette.responses import JSONResponse

    path = tmp_path / "01-note.http"
    body = json.dumps({"note": recorded}).encode()
    _one_exchange(path, {}, Response(200, "OK", {"Content-Type": "application/json"}, body))
    rules = dataclasses.replace(DEFAULT_RULES, secret_fields={"apiKey": "APIKEY"})
    with ServerThread(_agent(lambda request: JSONResponse({"note": live}))) as server:
        result = play([path], agent=server.url, rules=rules, environ=environ)
    assert result.passed is passes, mismatch_paths(result)
    shown = "\n".join(str(m) for t in result.transcripts for e in t.exchanges for m in e.mismatches)
    assert "k-123456" not in shown


def test_placeholders_in_text_frames_and_frame_ids_are_filled_as_text(tmp_path: Path) -> None:
    from starlette.responses import Response as StarletteResponse

    token = 'tok"en\\x-42'
    stream = f"id: {token}\ndata: plain text with {token}\n\n".encode()

    def answer(request: Any) -> Any:
        return StarletteResponse(stream, media_type="text/event-stream")

    path = tmp_path / "01-frames.http"
    recorded = b"id: {{A2A_TOKEN}}\ndata: plain text with {{A2A_TOKEN}}\n\n"
    reply = Response(200, "OK", {"Content-Type": "text/event-stream"}, recorded)
    _one_exchange(path, {}, reply)
    with ServerThread(_agent(answer)) as server:
        result = play([path], agent=server.url, environ={"A2A_TOKEN": token})
    assert result.passed, mismatch_paths(result)


def test_update_leaves_a_file_edited_while_it_was_played(tmp_path: Path) -> None:
    from starlette.responses import JSONResponse

    path = tmp_path / "01-edited.http"
    _one_exchange(path, {}, Response(200, "OK", {"Content-Type": "application/json"}, b"{}"))

    def answer(request: Any) -> Any:
        path.write_text(path.read_text().replace("### one", "### one, renamed"))
        return JSONResponse({"changed": True})

    with ServerThread(_agent(answer)) as server:
        result = play([path], agent=server.url, environ={}, update=True)
    [transcript] = result.transcripts
    assert not transcript.updated
    assert transcript.not_updated == "the file changed while it was played (run the update again)"
    assert "### one, renamed" in path.read_text()


def test_a_secret_in_a_member_name_or_a_variable_that_is_no_utf8(tmp_path: Path) -> None:
    from starlette.responses import JSONResponse

    path = tmp_path / "01-keyed.http"
    body = b'{"byToken": {"{{A2A_TOKEN}}": 1}}'
    reply = Response(200, "OK", {"Content-Type": "application/json"}, body)
    _one_exchange(path, {"Authorization": "Bearer {{A2A_TOKEN}}"}, reply)
    token = "tok-abc-defghi"

    def answer(request: Any) -> Any:
        return JSONResponse({"byToken": {token: 2}})

    with ServerThread(_agent(answer)) as server:
        result = play([path], agent=server.url, environ={"A2A_TOKEN": token})
        [mismatch] = result.transcripts[0].exchanges[0].mismatches
        assert token not in str(mismatch)
        # a variable holding bytes that are no UTF-8 (os.environ's surrogate escapes)
        odd = play([path], agent=server.url, environ={"A2A_TOKEN": "tok\udcffabcdef"})
    assert not odd.passed


def test_a_request_recorder_cannot_send_is_that_exchanges_error(tmp_path: Path) -> None:
    # `OPTIONS *` (asterisk-form) is valid HTTP the recorder may have recorded
    path = tmp_path / "01-options.http"
    request = Request("OPTIONS", "*", {"Host": "localhost:41242"})
    dump(Transcript((Exchange(request, Response(200, "OK"), title="options"),)), path)
    with closed_port() as port:
        result = play([path], agent=f"http://127.0.0.1:{port}", environ={})
    [exchange] = result.transcripts[0].exchanges
    assert exchange.error is not None
    assert exchange.error.startswith("cannot send OPTIONS *: ")
    assert result.error_count == 1
