"""Matching and answering without a network: `recorder.serve` over the 16 goldens, fed
`LiveRequest`s built here (the pure rooms: match, steps, book, render)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers import TRANSCRIPTS

from recorder import load
from recorder.disk.transcripts import find_transcripts
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve.book import Book, Found, NotFound
from recorder.serve.match import LiveRequest
from recorder.serve.replies import Renderer, pacing
from recorder.serve.steps import prepare

RULES = PairingRules(DEFAULT_RULES)


def goldens_book(**options: Any) -> Book:
    transcripts = [load(path) for path in find_transcripts([TRANSCRIPTS])]
    return Book(prepare(transcripts, RULES), RULES, **options)


def rpc(
    method: str, params: dict[str, Any], *, version: str | None = "1.0", **headers: str
) -> LiveRequest:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
    )
    sent = [("Host", "127.0.0.1:5555"), ("Content-Type", "application/json")]
    if version is not None:
        sent.append(("A2A-Version", version))
    sent.extend(headers.items())
    return LiveRequest("POST", "/a2a/jsonrpc", sent, body.encode())


def golden_params(file: str, exchange: int) -> dict[str, Any]:
    transcript = load(TRANSCRIPTS / file)
    value: dict[str, Any] = json.loads(transcript.exchanges[exchange].request.body)
    params: dict[str, Any] = value.get("params", value)  # HTTP+JSON: the whole body
    return params


def user_message(file: str, exchange: int) -> dict[str, Any]:
    """The golden request's params, with a uuid4 messageId as an SDK user's client makes."""
    params = golden_params(file, exchange)
    params["message"]["messageId"] = str(uuid.uuid4())
    return params


def found(result: Found | NotFound) -> Found:
    assert isinstance(result, Found), result
    return result


def reply(result: Found, host: str = "127.0.0.1:5555") -> Any:
    return json.loads(Renderer(RULES, result.step, result.branch, result.rpc_id, host).body())


def test_a_client_message_id_and_json_rpc_id_match_any_and_are_echoed() -> None:
    book = goldens_book()
    live = rpc("SendMessage", user_message("07-cancel-task.http", 0))
    result = found(book.find(live))
    assert (Path(result.step.path).name, result.step.index) == ("07-cancel-task.http", 0)
    body = reply(result)
    sent = json.loads(live.body)
    assert body["id"] == sent["id"]
    assert (
        body["result"]["task"]["history"][0]["messageId"] == sent["params"]["message"]["messageId"]
    )


def test_the_same_get_task_answers_in_recorded_order_before_and_after_the_cancel() -> None:
    book = goldens_book()
    started = reply(found(book.find(rpc("SendMessage", user_message("07-cancel-task.http", 0)))))
    task_id = started["result"]["task"]["id"]
    states = []
    for method in ("GetTask", "CancelTask"):
        result = found(book.find(rpc(method, {"id": task_id})))
        states.append(reply(result)["result"]["status"]["state"])
    assert states == ["TASK_STATE_WORKING", "TASK_STATE_CANCELED"]
    # the conversation's GetTask was used: a second one has no recorded answer left
    again = book.find(rpc("GetTask", {"id": task_id}))
    assert isinstance(again, NotFound)
    assert again.closest is not None and again.closest.title.startswith("GetTask")


def test_a_request_opening_several_transcripts_keeps_them_until_one_is_chosen() -> None:
    # the same SendMessage (the payments diff) opens 03, 06, 09 and 11: the first answers,
    # and a GetTask of its task, which only 06 recorded, is answered by 06 for the same task
    book = goldens_book()
    first = found(book.find(rpc("SendMessage", user_message("06-get-and-list-tasks.http", 0))))
    assert Path(first.step.path).name == "03-review-task.http"
    assert len(first.conversation.branches) == 4
    task = reply(first)["result"]["task"]
    second = found(book.find(rpc("GetTask", {"id": task["id"], "historyLength": 1})))
    assert Path(second.step.path).name == "06-get-and-list-tasks.http"
    got = reply(second)["result"]
    assert (got["id"], got["contextId"]) == (task["id"], task["contextId"])
    listed = found(book.find(rpc("ListTasks", {"contextId": task["contextId"]})))
    assert [t["id"] for t in reply(listed)["result"]["tasks"]] == [task["id"]]


def test_ids_are_as_recorded_unless_taken_or_fresh() -> None:
    recorded = json.loads(load(TRANSCRIPTS / "07-cancel-task.http").exchanges[0].response.body)
    recorded_id = recorded["result"]["task"]["id"]
    book = goldens_book()
    ids = [
        reply(found(book.find(rpc("SendMessage", user_message("07-cancel-task.http", 0)))))[
            "result"
        ]["task"]["id"]
        for _ in range(2)
    ]
    assert ids[0] == recorded_id
    assert ids[1] != recorded_id and uuid.UUID(ids[1])
    fresh = goldens_book(fresh=True)
    live = reply(found(fresh.find(rpc("SendMessage", user_message("07-cancel-task.http", 0)))))
    assert live["result"]["task"]["id"] != recorded_id


def test_service_headers_choose_the_answer() -> None:
    book = goldens_book()
    unversioned = user_message("11-errors.http", 1)
    without = found(book.find(rpc("SendMessage", unversioned, version=None)))
    assert (Path(without.step.path).name, without.step.index) == ("11-errors.http", 1)
    assert reply(without)["error"]["code"] == -32009
    # the same body with the header is another request: 02's (whose empty "configuration"
    # is ProtoJSON's default, the same as none), answered with a result
    versioned_too = found(book.find(rpc("SendMessage", unversioned, version="1.0")))
    assert Path(versioned_too.step.path).name == "02-message-reply.http"
    assert "result" in reply(versioned_too)
    versioned = user_message("12-service-parameters.http", 2)
    newer = found(book.find(rpc("SendMessage", versioned, version="2.0")))
    assert (Path(newer.step.path).name, newer.step.index) == ("12-service-parameters.http", 2)
    assert reply(newer)["error"]["code"] == -32009
    accepted = found(book.find(rpc("SendMessage", versioned, version="1.1")))
    assert (Path(accepted.step.path).name, accepted.step.index) == ("12-service-parameters.http", 1)
    assert "result" in reply(accepted)


def test_a_secret_placeholder_matches_any_token_and_no_token_is_not_a_token() -> None:
    book = goldens_book()
    refused = found(book.find(rpc("GetExtendedAgentCard", {})))
    assert refused.step.exchange.response.status == 401
    granted = found(book.find(rpc("GetExtendedAgentCard", {}, Authorization="Bearer anything")))
    assert granted.step.exchange.response.status == 200
    card = reply(granted, host="127.0.0.1:5555")["result"]
    assert {i["url"] for i in card["supportedInterfaces"]} == {
        "http://127.0.0.1:5555/a2a/jsonrpc",
        "http://127.0.0.1:5555/a2a/rest",
    }


def test_an_unknown_task_id_is_a_client_value_but_a_handed_out_one_is_not() -> None:
    book = goldens_book()
    unknown = found(book.find(rpc("GetTask", {"id": str(uuid.uuid4())})))
    assert reply(unknown)["error"]["code"] == -32001
    started = reply(found(book.find(rpc("SendMessage", user_message("07-cancel-task.http", 0)))))
    task_id = started["result"]["task"]["id"]
    # ListTasks was never recorded for 07's task: no answer, and not 11's TASK_NOT_FOUND
    result = book.find(rpc("ListTasks", {"contextId": started["result"]["task"]["contextId"]}))
    assert isinstance(result, NotFound)
    assert found(book.find(rpc("GetTask", {"id": task_id}))).step.index == 1


def test_no_match_names_the_closest_request_and_the_paths_that_differ() -> None:
    book = goldens_book()
    params = user_message("02-message-reply.http", 0)
    params["message"]["parts"][0]["text"] = "Do you review COBOL?"
    result = book.find(rpc("SendMessage", params))
    assert isinstance(result, NotFound)
    assert result.closest is not None
    assert Path(result.closest.path).name == "02-message-reply.http"
    assert result.differences == [
        '$.params.message.parts[0].text: recorded "What languages can you review?", '
        'got "Do you review COBOL?"'
    ]


def test_a_rest_path_carries_the_handed_out_id() -> None:
    book = goldens_book()
    created = found(
        book.find(
            LiveRequest(
                "POST",
                "/a2a/rest/message:send",
                [("A2A-Version", "1.0"), ("Content-Type", "application/json")],
                json.dumps(user_message("16-rest-tasks.http", 0)).encode(),
            )
        )
    )
    task_id = reply(created)["task"]["id"]
    get = LiveRequest(
        "GET", f"/a2a/rest/tasks/{task_id}?historyLength=1", [("A2A-Version", "1.0")], b""
    )
    result = found(book.find(get))
    assert (Path(result.step.path).name, result.step.index) == ("16-rest-tasks.http", 1)
    other = LiveRequest(
        "GET", f"/a2a/rest/tasks/{task_id}?historyLength=2", [("A2A-Version", "1.0")], b""
    )
    missing = book.find(other)
    assert isinstance(missing, NotFound)
    assert any("historyLength" in d or "target" in d for d in missing.differences), missing


def test_during_links_and_pacing_come_from_the_recording() -> None:
    transcripts = [load(TRANSCRIPTS / "08-subscribe.http"), load(TRANSCRIPTS / "04-streaming.http")]
    subscribe, streaming = prepare(transcripts, RULES)
    assert subscribe[1].waited == {1: [2]} and subscribe[2].during == (1, 1)
    waits = pacing(streaming[0], RULES, limit=5.0)
    assert len(waits) == len(streaming[0].exchange.response.events or ())
    assert waits[0] == 0.0 and all(0.0 <= wait <= 5.0 for wait in waits)


@pytest.mark.parametrize("spelling", ["localhost", "127.0.0.1"])
def test_card_urls_in_any_loopback_spelling_point_at_the_stand_in(spelling: str) -> None:
    book = goldens_book()
    card = LiveRequest(
        "GET",
        "/.well-known/agent-card.json",
        [("Host", f"{spelling}:7001"), ("A2A-Version", "1.0")],
        b"",
    )
    result = found(book.find(card))
    body = reply(result, host=f"{spelling}:7001")
    assert body["supportedInterfaces"][0]["url"] == f"http://{spelling}:7001/a2a/jsonrpc"
    assert body["provider"]["url"] == f"http://{spelling}:7001"
