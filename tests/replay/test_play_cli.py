"""`recorder play` through click's CliRunner: exact output and exit codes, against the real kit."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import closed_port, edit, stream_that_never_ends

from recorder import loads
from recorder.cli import main
from recorder.kit import KitServer, start_kit

pytestmark = pytest.mark.e2e


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, ["play", *args], env=env, catch_exceptions=False)


PASSING = [
    "transcripts/01-languages.http  ✓ 1 exchange",
    "transcripts/02-review.http     ✓ 2 exchanges",
    "transcripts/03-streaming.http  ✓ 1 exchange",
    "transcripts/04-cards.http      ✓ 2 exchanges",
    "transcripts/05-errors.http     ✓ 1 exchange",
    "transcripts/06-subscribe.http  ✓ 3 exchanges",
]


def test_all_transcripts_pass_against_the_agent(goldens_here: Path, kit: KitServer) -> None:
    result = run("transcripts", "--agent", kit.base_url, env={"A2A_TOKEN": kit.token})
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        *PASSING,
        "6 transcripts, 10 exchanges: 10 passed, 0 failed",
    ]
    assert result.stderr == ""


def test_without_agent_the_player_starts_the_kit_and_uses_its_token(goldens_here: Path) -> None:
    # what `make demo` runs: no agent, no A2A_TOKEN in the environment
    result = run("transcripts")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "6 transcripts, 10 exchanges: 10 passed, 0 failed"


def test_a_mismatch_is_reported_with_file_exchange_path_values_and_exit_1(
    goldens_here: Path, kit: KitServer
) -> None:
    edit(
        goldens_here / "02-review.http",
        '"state": "TASK_STATE_COMPLETED"',
        '"state": "TASK_STATE_FAILED"',
    )
    result = run("transcripts", "--agent", kit.base_url, env={"A2A_TOKEN": kit.token})
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == [
        PASSING[0],
        "transcripts/02-review.http     ✗ exchange 1 (SendMessage: review a diff):",
        '    $.result.task.status.state: expected "TASK_STATE_FAILED", got "TASK_STATE_COMPLETED"',
        *PASSING[2:],
        "failing exchanges:",
        "  ✗ transcripts/02-review.http#1 (SendMessage: review a diff): "
        '$.result.task.status.state: expected "TASK_STATE_FAILED", got "TASK_STATE_COMPLETED"',
        "6 transcripts, 10 exchanges: 9 passed, 1 failed",
    ]


def test_a_mismatch_in_an_sse_frame_names_the_frame(goldens_here: Path, kit: KitServer) -> None:
    edit(
        goldens_here / "03-streaming.http",
        '"state": "TASK_STATE_WORKING"',
        '"state": "TASK_STATE_FAILED"',
    )
    result = run("transcripts/03-streaming.http", "--agent", kit.base_url)
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == [
        "transcripts/03-streaming.http  ✗ exchange 1 "
        "(SendStreamingMessage: review a diff as a stream), frame 2:",
        '    $.result.statusUpdate.status.state: expected "TASK_STATE_FAILED", '
        'got "TASK_STATE_WORKING"',
        "failing exchanges:",
        "  ✗ transcripts/03-streaming.http#1 (SendStreamingMessage: review a diff as a stream): "
        'frame 2: $.result.statusUpdate.status.state: expected "TASK_STATE_FAILED", '
        'got "TASK_STATE_WORKING"',
        "1 transcript, 1 exchange: 0 passed, 1 failed",
    ]


def test_an_unreachable_agent_is_one_line_and_exit_2(goldens_here: Path) -> None:
    with closed_port() as port:
        result = run("transcripts", "--agent", f"http://127.0.0.1:{port}", env={"A2A_TOKEN": "x"})
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"recorder play: cannot reach the agent at http://127.0.0.1:{port}: connection refused\n"
    )


def test_a_transcript_that_does_not_parse_is_named_with_its_line_and_exit_2(
    goldens_here: Path, kit: KitServer
) -> None:
    (goldens_here / "06-broken.http").write_text("### broken\nPOST /a2a/jsonrpc HTTP/1.1\n")
    result = run("transcripts", "--agent", kit.base_url)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "recorder play: transcripts/06-broken.http:3: expected a status line such as "
        '"HTTP/1.1 200 OK" after the request body (the request starts at line 2)\n'
    )


def test_an_unset_credential_variable_fails_only_the_exchange_that_sends_it(
    goldens_here: Path, kit: KitServer
) -> None:
    # no A2A_TOKEN, and an agent the player did not start (so no token of its own): the
    # exchange that sends `Authorization: Bearer {{A2A_TOKEN}}` fails, naming the variable and
    # its file:line; every other exchange, of that file and the others, plays and passes
    result = run("transcripts", "--agent", kit.base_url)
    assert result.exit_code == 2, result.output
    line = next(
        n
        for n, text in enumerate((goldens_here / "04-cards.http").read_text().splitlines(), start=1)
        if text.startswith("### GetExtendedAgentCard")
    )
    lines = result.stdout.splitlines()
    assert [n for n in lines if "✓" in n] == [n for n in PASSING if "04-cards" not in n]
    [failed] = [n for n in lines if n.startswith("transcripts/04-cards")]
    assert "✗ exchange 2 (GetExtendedAgentCard" in failed
    assert (
        f"    error: transcripts/04-cards.http:{line}: the variable A2A_TOKEN is not"
        " set (the request uses {{A2A_TOKEN}} in Authorization, a credential the agent checks:"
        " no stand-in is made up); set it in the environment, with --var A2A_TOKEN=VALUE or in"
        " an --env-file, and run again"
    ) in lines
    assert lines[-1] == "6 transcripts, 10 exchanges: 9 passed, 0 failed, 1 error"
    assert result.stderr == ""


def test_k_takes_an_expression_as_pytest_does(goldens_here: Path, kit: KitServer) -> None:
    # "review" is in 01's title (reviewer), in 02's file name, in 03's title; "card" in 04's
    # titles; 05 has neither; 06 is left out by name
    result = run(
        "transcripts",
        "--agent",
        kit.base_url,
        "-k",
        "(review or CARD) and not subscribe",
        env={"A2A_TOKEN": kit.token},
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "transcripts/01-languages.http  ✓ 1 exchange",
        "transcripts/02-review.http     ✓ 2 exchanges",
        "transcripts/03-streaming.http  ✓ 1 exchange",
        "transcripts/04-cards.http      ✓ 2 exchanges",
        "4 transcripts, 6 exchanges: 6 passed, 0 failed",
    ]
    phrase = run("transcripts", "--agent", kit.base_url, "-k", "review a diff and not stream")
    assert phrase.stdout.splitlines() == [
        "transcripts/02-review.http  ✓ 1 exchange",
        "1 transcript, 1 exchange: 1 passed, 0 failed",
    ]


def test_k_selects_exchanges_by_file_and_title(goldens_here: Path, kit: KitServer) -> None:
    result = run("transcripts", "--agent", kit.base_url, "-k", "gettask")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "transcripts/02-review.http  ✓ 1 exchange",
        "transcripts/05-errors.http  ✓ 1 exchange",
        "2 transcripts, 2 exchanges: 2 passed, 0 failed",
    ]


def test_shard_and_jobs_split_the_files(goldens_here: Path, kit: KitServer) -> None:
    env = {"A2A_TOKEN": kit.token}
    first = run("transcripts", "--agent", kit.base_url, "--shard", "1/2", "--jobs", "2", env=env)
    second = run("transcripts", "--agent", kit.base_url, "--shard", "2/2", env=env)
    assert (first.exit_code, second.exit_code) == (0, 0)
    assert first.stdout.splitlines()[:-1] == [
        "transcripts/01-languages.http  ✓ 1 exchange",
        "transcripts/03-streaming.http  ✓ 1 exchange",
        "transcripts/05-errors.http     ✓ 1 exchange",
    ]
    assert second.stdout.splitlines()[:-1] == [
        "transcripts/02-review.http     ✓ 2 exchanges",
        "transcripts/04-cards.http      ✓ 2 exchanges",
        "transcripts/06-subscribe.http  ✓ 3 exchanges",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shard", "3/2"], "expected 1 <= K <= N in K/N, got '3/2'"),
        (["--agent", "localhost:41242"], "expected an http:// or https:// URL"),
        (["--jobs", "0"], "0 is not in the range x>=1"),
        (["--junit-xml", "no-such-folder/report.xml"], "folder of no-such-folder/report.xml"),
        (
            ["--junit-xml", "transcripts/01-languages.http"],
            "transcripts/01-languages.http is a transcript: the report would overwrite it",
        ),
        (["--timeout", "inf"], "inf is not in the range 0<x<=86400"),
        (
            ["-k", "not cancel and"],
            "Invalid value for '-k': bad expression 'not cancel and' at column 15: expected not,"
            " left parenthesis or a word; got the end",
        ),
        (
            ["-k", "(review"],
            "bad expression '(review' at column 8: expected right parenthesis; got the end",
        ),
    ],
)
def test_usage_errors_exit_2(goldens_here: Path, args: list[str], message: str) -> None:
    result = run("transcripts", *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_junit_xml_has_one_testcase_per_exchange(goldens_here: Path, kit: KitServer) -> None:
    edit(goldens_here / "05-errors.http", '"code": -32001', '"code": -32002')
    result = run(
        "transcripts",
        "--agent",
        kit.base_url,
        "--junit-xml",
        "report.xml",
        env={"A2A_TOKEN": kit.token},
    )
    assert result.exit_code == 1
    root = ET.parse("report.xml").getroot()
    assert (root.tag, root.get("tests"), root.get("failures")) == ("testsuites", "10", "1")
    cases = [(c.get("classname"), c.get("name")) for c in root.iter("testcase")]
    assert cases[:3] == [
        ("transcripts/01-languages.http", "01 SendMessage: ask which languages the reviewer knows"),
        ("transcripts/02-review.http", "01 SendMessage: review a diff"),
        ("transcripts/02-review.http", "02 GetTask: the review task"),
    ]
    (failed,) = [c for c in root.iter("testcase") if c.find("failure") is not None]
    failure = failed.find("failure")
    assert failure is not None
    assert failed.get("name") == "01 GetTask: a task that does not exist"
    assert failure.text == (
        "transcripts/05-errors.http: exchange 1 (GetTask: a task that does not exist):\n"
        "    $.error.code: expected -32002, got -32001\n"
    )


def test_update_without_a_change_leaves_the_files_byte_identical(
    goldens_here: Path, kit: KitServer
) -> None:
    before = {p.name: p.read_bytes() for p in goldens_here.iterdir()}
    result = run("transcripts", "--agent", kit.base_url, "--update", env={"A2A_TOKEN": kit.token})
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == (
        "6 transcripts, 10 exchanges: 10 passed, 0 failed; 0 transcripts updated"
    )
    assert {p.name: p.read_bytes() for p in goldens_here.iterdir()} == before
    assert not any(name.endswith(".tmp") for name in os.listdir(goldens_here))


def test_an_exchange_without_reply_is_an_error_the_run_goes_on_and_junit_says_so(
    goldens_here: Path, kit: KitServer
) -> None:
    # exchange 2's stream never ends (no CancelTask): an error after 1 s; exchange 3 needs its
    # ids and is not played; the other files are played; exit 2 (connection-level error)
    path = goldens_here / "06-subscribe.http"
    stream_that_never_ends(path, after=2)
    result = run(
        "transcripts",
        "--agent",
        kit.base_url,
        "--timeout",
        "1",
        "--junit-xml",
        "report.xml",
        env={"A2A_TOKEN": kit.token},
    )
    assert result.exit_code == 2, result.output
    lines = result.stdout.splitlines()
    assert lines[:5] == PASSING[:5]
    assert lines[5] == (
        "transcripts/06-subscribe.http  ✗ exchange 2 (SubscribeToTask: follow the slow review):"
    )
    assert lines[6] in (
        f"    error: the agent at {kit.base_url} did not answer within 1 s (POST /a2a/jsonrpc)",
        f"    error: the event stream that the agent at {kit.base_url} sent for"
        " POST /a2a/jsonrpc did not end within 1 s",
    )
    assert lines[7:9] == [
        "                               ✗ exchanges 3-4: not played: exchange 2 got no reply",
        "failing exchanges:",
    ]
    assert lines[9] == (
        "  ✗ transcripts/06-subscribe.http#2 (SubscribeToTask: follow the slow review): "
        + lines[6].removeprefix("    ")
    )
    assert lines[10:] == ["6 transcripts, 11 exchanges: 8 passed, 0 failed, 1 error, 2 not played"]
    root = ET.parse("report.xml").getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "11",
        "0",
        "1",
        "2",
    )
    cases = [c for c in root.iter("testcase") if c.get("classname") == str(path)]
    assert [[child.tag for child in case] for case in cases] == [
        [],
        ["error"],
        ["skipped"],
        ["skipped"],
    ]


def test_control_characters_in_a_title_are_shown_escaped_and_junit_stays_xml(
    goldens_here: Path, kit: KitServer
) -> None:
    path = goldens_here / "05-errors.http"
    edit(path, "### GetTask: a task that does not exist", "### GetTask \x1b[31mred\x0b & <x>")
    edit(path, '"code": -32001', '"code": -32002')
    result = run(
        str(path), "--agent", kit.base_url, "--junit-xml", "report.xml", env={"A2A_TOKEN": "x"}
    )
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[0] == (
        "transcripts/05-errors.http  ✗ exchange 1 (GetTask \\x1b[31mred\\x0b & <x>):"
    )
    [case] = ET.parse("report.xml").getroot().iter("testcase")
    assert case.get("name") == "01 GetTask \\u001b[31mred\\u000b & <x>"


def test_update_leaves_a_file_whose_requests_carried_unpaired_recorded_ids(
    goldens_here: Path,
) -> None:
    # a comment line before `###` belongs to the reply body above it: exchange 1's recorded
    # body is no JSON any more, its task id is never paired, and exchange 2 asks the agent
    # about the recorded task. The note says so, and --update does not write the agent's
    # "task not found" into the golden file.
    path = goldens_here / "02-review.http"
    edit(path, "### GetTask: the review task", "# read it back\n\n### GetTask: the review task")
    before = path.read_bytes()
    task_id = loads(before.decode()).exchanges[1].request.json["params"]["id"]
    with start_kit() as fresh:  # an agent that never saw the recorded task
        result = run(
            "transcripts", "--agent", fresh.base_url, "--update", env={"A2A_TOKEN": fresh.token}
        )
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[1] == "transcripts/02-review.http     ✗ exchange 1 (SendMessage: review a diff):"
    assert lines[2].startswith("    body: expected ")
    assert lines[3] == "                               ✗ exchange 2 (GetTask: the review task):"
    notes = [line for line in lines if line.startswith("    note: ")]
    assert notes == [
        f"    note: the request carries {task_id} as recorded: it comes from the recorded reply"
        " of exchange 1, and no live reply paired it"
    ]
    assert (
        "    not updated: exchange 2 sent a recorded id that no live reply paired; fix the"
        " exchange before it, or record this scenario again"
    ) in lines
    assert lines[-1] == (
        "6 transcripts, 10 exchanges: 8 passed, 2 failed; 0 transcripts updated, 1 not updated"
    )
    assert path.read_bytes() == before


@pytest.mark.serial  # Ctrl-C timed: run alone
def test_ctrl_c_stops_parallel_jobs_at_once_with_exit_130(tmp_path: Path) -> None:
    # six files of eight exchanges against an agent that takes 20 s per reply, two jobs: Ctrl-C
    # while the first replies are on their way ends the run at once (no waiting for them, and
    # no other exchange started)
    import signal
    import subprocess
    import sys
    import threading
    import time

    from starlette.applications import Starlette
    from starlette.requests import Request as StarletteRequest
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from recorder import Exchange, Request, Response, Transcript, dump
    from recorder.servers import ServerThread

    arrived = threading.Event()

    async def slow(request: StarletteRequest) -> JSONResponse:
        import asyncio

        arrived.set()
        await asyncio.sleep(20)
        return JSONResponse({"ok": True})

    request = Request("POST", "/slow", {"Host": "localhost:41242"}, b"{}")
    reply = Response(200, "OK", {"Content-Type": "application/json"}, b'{"ok": true}')
    for n in range(6):
        exchanges = tuple(Exchange(request, reply, title=f"slow {k}") for k in range(8))
        dump(Transcript(exchanges), tmp_path / f"{n:02d}-slow.http")
    app = Starlette(routes=[Route("/slow", slow, methods=["POST"])])
    command = [sys.executable, "-c", "from recorder.cli import main; main()", "play"]
    # (its own stop cuts the replies still sleeping, rather than waiting for them)
    with ServerThread(app, timeout_graceful_shutdown=0) as server:
        process = subprocess.Popen(
            [*command, str(tmp_path), "--agent", server.url, "-j", "2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # Ctrl-C as a terminal gives it: a suite started in the background by a shell
            # (`make test &`) hands its children SIGINT ignored, and Python then leaves it so
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            # the first request in flight: Ctrl-C then, not after a guess of the start-up time
            # (a loaded machine had not started the player 1.5 s in)
            assert arrived.wait(30)
            process.send_signal(signal.SIGINT)
            started = time.monotonic()
            _, stderr = process.communicate(timeout=20)
            stopped_after = time.monotonic() - started
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    assert process.returncode == 130, stderr
    assert stderr.endswith("recorder play: interrupted\n"), stderr
    assert "Traceback" not in stderr
    # not the 20 s of the replies in flight, nor the rest (minutes); room for a loaded machine
    assert stopped_after < 8


def test_an_empty_shard_is_no_error_but_a_selection_that_matches_nothing_is(
    goldens_here: Path, kit: KitServer
) -> None:
    env = {"A2A_TOKEN": kit.token}
    args = ["transcripts", "--agent", kit.base_url, "-k", "GetTask: the review"]
    empty = run(*args, "--shard", "1/2", "--junit-xml", "report.xml", env=env)
    assert empty.exit_code == 0, empty.output
    assert (
        empty.stderr
        == "recorder play: shard 1/2 has nothing to play (1 file to play in all shards)\n"
    )
    assert ET.parse("report.xml").getroot().get("tests") == "0"
    other = run(*args, "--shard", "2/2", env=env)
    assert other.exit_code == 0
    assert other.stdout.splitlines()[-1] == "1 transcript, 1 exchange: 1 passed, 0 failed"
    nothing = run("transcripts", "--agent", kit.base_url, "-k", "no such title", "--shard", "1/2")
    assert nothing.exit_code == 2


def test_a_run_that_stops_before_any_verdict_leaves_a_junit_report_saying_why(
    goldens_here: Path,
) -> None:
    Path("report.xml").write_text("<testsuites tests='10'/>")  # the last run's report
    with closed_port() as port:
        result = run(
            "transcripts",
            "--agent",
            f"http://127.0.0.1:{port}",
            "--junit-xml",
            "report.xml",
            env={"A2A_TOKEN": "x"},
        )
    assert result.exit_code == 2
    [error] = ET.parse("report.xml").getroot().iter("error")
    assert error.get("message") == (
        f"cannot reach the agent at http://127.0.0.1:{port}: connection refused"
    )


def test_a_file_named_twice_is_played_once(goldens_here: Path, kit: KitServer) -> None:
    env = {"A2A_TOKEN": kit.token}
    result = run(
        "transcripts",
        "./transcripts/01-languages.http",
        "--agent",
        kit.base_url,
        env=env,
    )
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "6 transcripts, 10 exchanges: 10 passed, 0 failed"


def test_a_setup_exchange_without_reply_is_reported_under_k(
    goldens_here: Path, kit: KitServer
) -> None:
    # -k selects exchange 3 only; exchange 2, played as setup for its ids, gets no reply: it
    # is reported (with its error) and the run exits 2, not 1 with a bare "not played"
    stream_that_never_ends(goldens_here / "06-subscribe.http", title="again")
    result = run(
        "transcripts",
        "--agent",
        kit.base_url,
        "--timeout",
        "1",
        "-k",
        "again",
        "--update",
        env={"A2A_TOKEN": kit.token},
    )
    assert result.exit_code == 2, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "transcripts/06-subscribe.http  ✗ exchange 2 (SubscribeToTask: follow the slow review):"
    )
    assert lines[1].startswith("    error: the ")
    assert lines[2:5] == [
        "                               ✗ exchange 3: not played: exchange 2 got no reply",
        "    not updated: exchange 2 got no reply",
        "failing exchanges:",
    ]
    assert lines[5].startswith("  ✗ transcripts/06-subscribe.http#2 (SubscribeToTask: ")
    assert lines[6:] == [
        "1 transcript, 2 exchanges: 0 passed, 0 failed, 1 error, 1 not played;"
        " 0 transcripts updated, 1 not updated",
    ]
