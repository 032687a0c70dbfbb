"""serve delivers the recorded push notifications to the live client's webhook
(`recorder.serve.deliveries`): the live task's ids, the live config's token, in order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pushtraffic import DIFF, Webhook, push_request, sdk_send, write_push_transcript

from recorder.kit import KitServer
from recorder.rules import DEFAULT_RULES
from recorder.serve import load_stand_in
from recorder.serve.server import server_options
from recorder.servers import ServerThread

GOLDENS = Path(__file__).parents[2] / "transcripts"


@pytest.fixture(scope="module")
def push_file(kit: KitServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_push_transcript(kit.url, tmp_path_factory.mktemp("push") / "01-push.http")


@pytest.mark.parametrize("fresh_ids", [False, True], ids=["recorded-ids", "fresh-ids"])
def test_serve_delivers_to_the_clients_webhook_with_its_token(
    push_file: Path, fresh_ids: bool
) -> None:
    files = [str(GOLDENS / "01-agent-card.http"), str(push_file)]
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
