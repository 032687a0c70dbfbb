"""The `recorder_stand_in` pytest fixture (entry point `recorder-serve`): used here directly on
the goldens, and through pytester for its marker, its ini option and its strictness."""

from __future__ import annotations

import shutil

import httpx
import pytest
from helpers import TRANSCRIPTS

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.e2e

QUESTION = {
    "jsonrpc": "2.0",
    "id": "q-1",
    "method": "SendMessage",
    "params": {
        "message": {
            "messageId": "any-id",
            "role": "ROLE_USER",
            "parts": [{"text": "What languages can you review?"}],
        },
        "configuration": {},
    },
}


def test_the_fixture_serves_the_goldens_on_a_free_port(recorder_stand_in: str) -> None:
    card = httpx.get(
        f"{recorder_stand_in}/.well-known/agent-card.json",
        headers={"A2A-Version": "1.0"},
        timeout=10,
    ).json()
    assert card["supportedInterfaces"][0]["url"] == f"{recorder_stand_in}/a2a/jsonrpc"


def _project(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(TRANSCRIPTS, pytester.path / "goldens")
    pytester.makeini("[pytest]\nrecorder_stand_in_transcripts = goldens/02-message-reply.http\n")
    return pytester


def test_a_client_test_passes_and_an_unmatched_request_fails_it(pytester: pytest.Pytester) -> None:
    project = _project(pytester)
    project.makepyfile(
        test_client=f"""
        import httpx, pytest

        QUESTION = {QUESTION!r}
        HEADERS = {{"A2A-Version": "1.0"}}

        def test_asks(recorder_stand_in):
            reply = httpx.post(recorder_stand_in + "/a2a/jsonrpc", json=QUESTION, headers=HEADERS)
            assert reply.json()["id"] == "q-1"
            assert "Python" in reply.json()["result"]["message"]["parts"][0]["text"]

        def test_asks_something_else(recorder_stand_in):
            other = dict(QUESTION, method="GetTask", params={{"id": "x"}})
            reply = httpx.post(recorder_stand_in + "/a2a/jsonrpc", json=other, headers=HEADERS)
            assert reply.json()["error"]["code"] == -32099

        @pytest.mark.recorder_stand_in("goldens/11-errors.http", strict=False)
        def test_not_strict(recorder_stand_in):
            other = dict(QUESTION, method="GetTask", params={{"id": "x"}})
            reply = httpx.post(recorder_stand_in + "/a2a/jsonrpc", json=other, headers=HEADERS)
            assert "11-errors.http" in reply.json()["error"]["data"][0]["metadata"]["closest"]
        """
    )
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*recorder_stand_in: 1 request(s) matched no recorded exchange:",
            "*no recorded exchange matches POST /a2a/jsonrpc GetTask; closest: *02-message-reply*",
        ]
    )
