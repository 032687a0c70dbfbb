"""Placeholders whose variable is unset (issue 13, "Secrets by default"): a secret gets a
stand-in the player makes up, a credential header fails only the exchanges that send it."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from recorder.format.httpfile import loads
from recorder.kit import KitServer, start_kit
from recorder.replay.reports.results import PlayResult
from recorder.replay.run import play
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.servers import ServerThread

REPO = Path(__file__).resolve().parent.parent.parent
SHIPPED = REPO / "transcripts"
PUSH = SHIPPED / "09-push-notification-configs.http"


def outcomes(result: PlayResult) -> list[tuple[str, int, str | None]]:
    """(file, exchange, error or the first mismatch's path) of each exchange that did not pass."""
    return [
        (
            Path(t.path).name,
            e.number,
            e.error if e.error is not None else e.mismatches[0].path,
        )
        for t in result.transcripts
        for e in t.exchanges
        if not e.passed
    ]


class Spy:
    """The requests the player sends (method, target, headers, body)."""

    def __init__(self) -> None:
        self.sent: list[httpx.Request] = []

    def __enter__(self) -> Spy:
        original = httpx.HTTPTransport.handle_request
        sent = self.sent

        def spy(transport: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
            request.read()
            sent.append(request)
            return original(transport, request)

        self._patch = pytest.MonkeyPatch()
        self._patch.setattr(httpx.HTTPTransport, "handle_request", spy)
        return self

    def __exit__(self, *exc: object) -> None:
        self._patch.undo()


# --------------------------------------------------------------------------- the shipped files


@pytest.mark.e2e
def test_the_shipped_push_config_transcript_holds_a_placeholder_and_replays_with_no_variable() -> (
    None
):
    text = PUSH.read_text(encoding="utf-8")
    assert "planner-verification" not in text
    assert text.count('"token": "{{TOKEN}}"') == 4
    with Spy() as spy:
        result = play([PUSH], environ={}, start_agent=start_kit)
    assert outcomes(result) == []
    assert result.exchange_count == 6
    [create] = [r for r in spy.sent if b"CreateTaskPushNotificationConfig" in r.content]
    token = json.loads(create.content)["params"]["token"]
    # made up by the player, the same for the name throughout the run
    assert token.startswith("recorder-stand-in-TOKEN-")


@pytest.fixture(scope="module")
def kit() -> Iterator[KitServer]:
    with start_kit(grpc_port=0) as server:  # as `recorder kit`: gRPC listed in its card
        yield server


@pytest.mark.e2e
def test_an_unset_a2a_token_fails_only_the_exchange_that_sends_it(kit: KitServer) -> None:
    # an agent the player did not start: nothing fills {{A2A_TOKEN}}
    result = play([SHIPPED], agent=kit.base_url, grpc_agent=kit.grpc_address, environ={})
    card = SHIPPED / "10-extended-card.http"
    [(number, line)] = [
        (n, e.line)
        for n, e in enumerate(loads(card.read_text()).exchanges, start=1)
        if "{{A2A_TOKEN}}" in (e.request.headers.get("Authorization") or "")
    ]
    assert outcomes(result) == [
        (
            "10-extended-card.http",
            number,
            f"{card}:{line}: the variable A2A_TOKEN is not set (the request uses"
            " {{A2A_TOKEN}} in Authorization, a credential the agent checks: no stand-in is made"
            " up);"
            " set it in the environment, with --var A2A_TOKEN=VALUE or in an --env-file,"
            " and run again",
        )
    ]
    assert len(result.transcripts) == len(list(SHIPPED.glob("*.http")))
    assert result.passed_count == result.exchange_count - 1
    assert result.error_count == 1


# --------------------------------------------------------------------------- an echoing agent


async def echo(request: Request) -> Response:
    body = await request.json()
    reply = {"got": body.get("token"), "version": body.get("version", 1)}
    if "user" in body:
        reply["user"] = body["user"]
    return JSONResponse(reply)


@pytest.fixture(scope="module")
def echo_agent() -> Iterator[ServerThread]:
    with ServerThread(Starlette(routes=[Route("/echo", echo, methods=["POST"])])) as server:
        yield server


def exchange(title: str, headers: str, request: str, reply: str) -> str:
    return (
        f"### {title}\nPOST /echo HTTP/1.1\nHost: localhost:41242\n{headers}"
        f"Content-Type: application/json\n\n{request}\n\n"
        f"HTTP/1.1 200 OK\nContent-Type: application/json\n\n{reply}\n\n"
    )


def write(path: Path, *exchanges: str) -> Path:
    path.write_text("# recorder-format: 1\n\n" + "".join(exchanges), encoding="utf-8")
    return path


ECHO_TOKEN = exchange(
    "echo the token", "", '{"token": "{{TOKEN}}"}', '{"got": "{{TOKEN}}", "version": 1}'
)


def test_a_secret_placeholder_gets_one_stand_in_per_run_and_compares_as_the_placeholder(
    echo_agent: ServerThread, tmp_path: Path
) -> None:
    first = write(tmp_path / "01-a.http", ECHO_TOKEN)
    second = write(tmp_path / "02-b.http", ECHO_TOKEN)
    with Spy() as spy:
        result = play([first, second], agent=echo_agent.url, environ={})
    assert outcomes(result) == []
    sent = {json.loads(r.content)["token"] for r in spy.sent}
    [stand_in] = sent
    assert stand_in.startswith("recorder-stand-in-TOKEN-")
    # a set variable wins over the stand-in
    with Spy() as spy:
        assert play([first], agent=echo_agent.url, environ={"TOKEN": "real-one"}).passed
    assert json.loads(spy.sent[0].content)["token"] == "real-one"


def test_update_writes_an_echoed_stand_in_back_as_its_placeholder(
    echo_agent: ServerThread, tmp_path: Path
) -> None:
    path = write(
        tmp_path / "01-a.http",
        exchange(
            "echo",
            "",
            '{"token": "{{TOKEN}}", "version": 2}',
            '{"got": "{{TOKEN}}", "version": 1}',
        ),
    )
    result = play([path], agent=echo_agent.url, environ={}, update=True)
    assert result.transcripts[0].updated
    text = path.read_text(encoding="utf-8")
    assert "recorder-stand-in" not in text
    assert '"got": "{{TOKEN}}"' in text and '"version": 2' in text


def test_update_scrubs_no_value_of_a_secret_name_the_file_does_not_use(
    echo_agent: ServerThread, tmp_path: Path
) -> None:
    # PASSWORD set in the environment for something else: not this file's secret
    path = write(
        tmp_path / "01-a.http",
        exchange(
            "echo",
            "",
            '{"user": "ada", "version": 2}',
            '{"got": null, "version": 1, "user": "ada"}',
        ),
    )
    result = play([path], agent=echo_agent.url, environ={"PASSWORD": "ada"}, update=True)
    assert result.transcripts[0].updated
    text = path.read_text(encoding="utf-8")
    assert '"user": "ada"' in text and "{{PASSWORD}}" not in text


def test_an_unset_credential_or_plain_variable_fails_only_its_exchanges(
    echo_agent: ServerThread, tmp_path: Path
) -> None:
    rules = dataclasses.replace(DEFAULT_RULES, secret_headers={"x-my-token": "MY_TOKEN"})
    path = write(
        tmp_path / "01-a.http",
        ECHO_TOKEN,
        exchange("own header", "X-My-Token: {{MY_TOKEN}}\n", "{}", '{"got": null, "version": 1}'),
        exchange("cookie", "Cookie: {{COOKIE}}\n", "{}", '{"got": null, "version": 1}'),
        exchange("plain", "", '{"user": "{{USER_ID}}"}', '{"got": null, "version": 1}'),
        ECHO_TOKEN,
    )
    result = play([path], agent=echo_agent.url, environ={}, rules=rules)
    failed = outcomes(result)
    assert [(number, error) for _, number, error in failed] == [
        (
            2,
            f"{path}:{line_of(path, 'own header')}: the variable MY_TOKEN is not set"
            " (the request uses {{MY_TOKEN}} in X-My-Token, a credential the agent checks: no"
            " stand-in is made up);"
            " set it in the environment, with --var MY_TOKEN=VALUE or in an --env-file,"
            " and run again",
        ),
        (
            3,
            f"{path}:{line_of(path, 'cookie')}: the variable COOKIE is not set"
            " (the request uses {{COOKIE}} in Cookie, a credential the agent checks: no"
            " stand-in is made up);"
            " set it in the environment, with --var COOKIE=VALUE or in an --env-file,"
            " and run again",
        ),
        (
            4,
            f"{path}:{line_of(path, 'plain')}: the variable USER_ID is not set"
            " (the request uses {{USER_ID}});"
            " set it in the environment, with --var USER_ID=VALUE or in an --env-file,"
            " and run again",
        ),
    ]
    assert result.passed_count == 2  # the first and the last: the file went on


def line_of(path: Path, title: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(n for n, text in enumerate(lines, start=1) if text.startswith(f"### {title}"))
