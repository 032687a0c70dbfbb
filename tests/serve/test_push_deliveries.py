"""serve delivers the recorded push notifications to the live client's webhook
(`recorder.serve.deliveries`): the live task's ids, the live config's token, in order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import TRANSCRIPTS
from pushtraffic import DIFF, Webhook, push_request, sdk_send, write_push_transcript

from recorder.kit import KitServer
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve import load_stand_in
from recorder.serve.server import server_options
from recorder.servers import ServerThread


@pytest.fixture(scope="module")
def push_file(kit: KitServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_push_transcript(kit.url, tmp_path_factory.mktemp("push") / "01-push.http")


@pytest.mark.parametrize("fresh_ids", [False, True], ids=["recorded-ids", "fresh-ids"])
def test_serve_delivers_to_the_clients_webhook_with_its_token(
    push_file: Path, fresh_ids: bool
) -> None:
    files = [str(TRANSCRIPTS / "01-agent-card.http"), str(push_file)]
    stand_in = load_stand_in(files, DEFAULT_RULES, fresh_ids=fresh_ids)
    hook = Webhook()
    try:
        with ServerThread(stand_in, **server_options()) as server:
            task, _ = sdk_send(server.url, push_request(DIFF, hook.url, "live-token-9"))
            got = hook.wait(4)
            assert stand_in.deliveries.wait_idle(10.0)
    finally:
        hook.close()
    assert stand_in.problems == []
    assert [path for path, _, _ in got] == ["/hook"] * 4
    assert [headers["X-A2A-Notification-Token"] for _, headers, _ in got] == ["live-token-9"] * 4
    bodies = [json.loads(body) for _, _, body in got]
    assert [next(iter(body)) for body in bodies] == [
        "task",
        "statusUpdate",
        "artifactUpdate",
        "statusUpdate",
    ]
    assert bodies[0]["task"]["id"] == task.id
    assert {body[kind]["taskId"] for body in bodies[1:] for kind in body} == {task.id}
    assert bodies[3]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert stand_in.deliveries.delivered == 4


def test_the_planners_push_scenario_passes_against_the_served_golden() -> None:
    # the scenario checks it all itself: the updates reach its webhook's path, in order, with
    # its token, up to INPUT_REQUIRED after the first SendMessage and COMPLETED after the answer
    import asyncio

    from recorder.planner.scenarios import Session, push_notifications
    from recorder.planner.webhook import Webhook as PlannerWebhook

    files = [
        str(TRANSCRIPTS / "01-agent-card.http"),
        str(TRANSCRIPTS / "17-push-notifications.http"),
    ]
    stand_in = load_stand_in(files, DEFAULT_RULES)
    with PlannerWebhook() as hook, ServerThread(stand_in, **server_options()) as server:

        async def run() -> None:
            session = Session("push-notifications", server.url, token="t", card=None)
            session.webhook = hook
            try:
                session.card = await session.fetch_card()
                await asyncio.wait_for(push_notifications(session), 30)
            finally:
                await session.aclose()

        asyncio.run(run())
        assert stand_in.deliveries.wait_idle(10.0)
    assert stand_in.problems == []
    recorded = sum(1 for step in stand_in.steps[1] if step.exchange.push_config is not None)
    assert stand_in.deliveries.delivered == recorded > 0


def test_a_body_that_is_no_json_is_matched_against_a_push_config_request_as_it_is() -> None:
    # the live body's NOT_JSON marker stays itself (a copy of it read as a JSON value: a 500)
    from recorder.format.jsonbody import NOT_JSON
    from recorder.format.model import Request
    from recorder.serve.webhooks import without_urls

    request = Request("POST", "/a2a/jsonrpc")
    assert without_urls(NOT_JSON, request) is NOT_JSON
    body = {"jsonrpc": "2.0", "method": "CreateTaskPushNotificationConfig", "params": {"url": "u"}}
    assert without_urls(body, request)["params"]["url"] == ""
    assert body["params"]["url"] == "u"


def test_serve_delivers_nowhere_the_recorder_would_not_and_invents_no_basic_auth(
    push_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # (issue 34, item 2: a link-local address is the cloud's metadata service; a URL's
    # credentials were turned into Basic auth the recorded deliveries never had)
    files = [str(TRANSCRIPTS / "01-agent-card.http"), str(push_file)]
    hook = Webhook()
    try:
        stand_in = load_stand_in(files, DEFAULT_RULES)
        with ServerThread(stand_in, **server_options()) as server:
            sdk_send(server.url, push_request(DIFF, "http://169.254.169.254/latest", "tk"))
            assert stand_in.deliveries.wait_idle(10.0)
        assert stand_in.deliveries.delivered == 0 and stand_in.deliveries.failed == 4
        assert "169.254.169.254 is not a public address" in caplog.text
        stand_in = load_stand_in(files, DEFAULT_RULES)
        with ServerThread(stand_in, **server_options()) as server:
            with_credentials = hook.url.replace("http://", "http://ann:pa55@")
            sdk_send(server.url, push_request(DIFF, with_credentials, "tk"))
            got = hook.wait(4)
            assert stand_in.deliveries.wait_idle(10.0)
    finally:
        hook.close()
    assert [headers.get("Authorization") for _, headers, _ in got] == [None] * 4
