"""`# @after`: a file that reads the state of the files it needs is answered within the
conversation that played them (pure: `recorder.serve` over transcripts made here, fed
`LiveRequest`s, no network)."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import pytest

from recorder.format.httpread import loads
from recorder.format.model import Transcript
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve import StandIn
from recorder.serve.book import Book, Found, NotFound
from recorder.serve.match import LiveRequest
from recorder.serve.replies import Renderer
from recorder.serve.steps import needed_files, prepare

RULES = PairingRules(DEFAULT_RULES)
CONTEXT = "72fd95fd-c91d-436a-bd86-19dac2548786"  # the recorded client's own contextId
TASK = "98301246-829a-4111-a9b3-33666339257e"  # the task the agent made in file 03
HEAD = "POST /a2a/jsonrpc HTTP/1.1\nHost: 127.0.0.1:41242\nA2A-Version: 1.0\n"
HEAD += "Content-Type: application/json\n\n"
HEADERS = [("A2A-Version", "1.0"), ("Content-Type", "application/json")]


def exchange(title: str, method: str, params: dict[str, Any], result: dict[str, Any]) -> str:
    request = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
    reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    return (
        f"### {title}\n{HEAD}{json.dumps(request, indent=2)}\n\n"
        f"HTTP/1.1 200 OK\nContent-Type: application/json\n\n{json.dumps(reply, indent=2)}\n"
    )


def task(state: str = "TASK_STATE_COMPLETED") -> dict[str, Any]:
    return {"id": TASK, "contextId": CONTEXT, "status": {"state": state}}


def transcripts() -> list[Transcript]:
    message = {"messageId": str(uuid.uuid4()), "contextId": CONTEXT, "role": "ROLE_USER"}
    message["parts"] = [{"text": "review this"}]  # type: ignore[assignment]
    files = {
        "03-send-message.http": (
            "",
            exchange("SendMessage", "SendMessage", {"message": message}, {"task": task()})
            + "\n"
            + exchange("GetTask", "GetTask", {"id": TASK}, task()),
        ),
        # the client's own contextId: a file of its own, reading 03's state
        "04-list-tasks.http": (
            "# @after 03-send-message.http\n",
            exchange("ListTasks", "ListTasks", {"contextId": CONTEXT}, {"tasks": [task()]}),
        ),
        # no filter at all: nothing in the request names a conversation
        "05-list-tasks.http": (
            "# @after 03-send-message.http\n",
            exchange("ListTasks", "ListTasks", {"pageSize": 7}, {"tasks": [task()]}),
        ),
    }
    return [
        loads(f"# recorder-format: 1\n{head}\n{body}", source=f"rec/{name}")
        for name, (head, body) in files.items()
    ]


def book(**options: Any) -> Book:
    loaded = transcripts()
    after = needed_files(loaded)
    return Book(prepare(loaded, RULES, after), RULES, after=after, **options)


def rpc_body(method: str, params: dict[str, Any]) -> bytes:
    request = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
    return json.dumps(request).encode()


def sent(context: str) -> bytes:
    """A client's SendMessage in its own context."""
    message = {"messageId": str(uuid.uuid4()), "contextId": context, "role": "ROLE_USER"}
    message["parts"] = [{"text": "review this"}]  # type: ignore[assignment]
    return rpc_body("SendMessage", {"message": message})


def live(body: bytes) -> LiveRequest:
    return LiveRequest("POST", "/a2a/jsonrpc", [("Host", "127.0.0.1:5555"), *HEADERS], body)


def rpc(method: str, params: dict[str, Any]) -> LiveRequest:
    return live(rpc_body(method, params))


def answer(served: Book, method: str, params: dict[str, Any]) -> tuple[Found, Any]:
    return answer_live(served, rpc(method, params))


def answer_live(served: Book, request: LiveRequest) -> tuple[Found, Any]:
    result = served.find(request)
    assert isinstance(result, Found), result
    body = Renderer(RULES, result.step, result.branch, result.rpc_id, "127.0.0.1:5555").body()
    return result, json.loads(body)["result"]


def send(served: Book, context: str) -> str:
    """A client's SendMessage in its own context: the task id it was handed."""
    found, result = answer_live(served, live(sent(context)))
    assert found.step.path == "rec/03-send-message.http"
    handed: str = result["task"]["id"]
    return handed


def listed(result: Any) -> list[tuple[str, str]]:
    return [(item["id"], item["contextId"]) for item in result["tasks"]]


def test_an_after_tag_names_served_files_whose_ids_count_as_handed_out() -> None:
    loaded = transcripts()
    assert needed_files(loaded) == [(), (0,), (0,)]
    steps = prepare(loaded, RULES)
    # the task 03 handed out: the file that reads it hands it out again (as 03's, when the
    # conversation played 03); the contextId 03's client sent stays the client's
    for listing in (steps[1][0], steps[2][0]):
        assert [value for value, _ in listing.hands_out] == [TASK]
        assert not listing.needs  # (nothing 03 handed out is in the request: it starts)


@pytest.mark.parametrize("fresh", [False, True], ids=["recorded-ids", "fresh-ids"])
def test_a_listing_filtered_by_the_clients_context_lists_the_task_its_conversation_got(
    fresh: bool,
) -> None:
    served = book(fresh=fresh)
    mine, other = str(uuid.uuid4()), str(uuid.uuid4())
    first = send(served, mine)
    second = send(served, other)  # another client, the same scenario: another task id
    assert first != second
    found, result = answer(served, "ListTasks", {"contextId": mine})
    assert found.step.path == "rec/04-list-tasks.http"
    assert listed(result) == [(first, mine)]
    # the conversation goes on where 03 was: its GetTask still answers, of its own task
    found_again, got = answer(served, "GetTask", {"id": first})
    assert found_again.conversation is found.conversation
    assert (found_again.step.path, got["id"]) == ("rec/03-send-message.http", first)
    # the other client's listing is of its own task (the 04 of the first one is used)
    _, theirs = answer(served, "ListTasks", {"contextId": other})
    assert listed(theirs) == [(second, other)]


def test_a_listing_that_names_no_conversation_joins_the_one_that_played_its_need_last() -> None:
    served = book(fresh=True)
    first = send(served, str(uuid.uuid4()))
    later = str(uuid.uuid4())
    second = send(served, later)
    found, result = answer(served, "ListTasks", {"pageSize": 7})
    assert found.step.path == "rec/05-list-tasks.http"
    assert listed(result) == [(second, later)]
    # the choice between the two conversations is named, not silent
    assert [tie.conversations for tie in served.ties] == [
        (found.conversation.number, found.conversation.number - 1)
    ]
    assert first not in json.dumps(result)


def test_with_no_conversation_that_played_its_need_the_file_answers_on_its_own() -> None:
    served = book()
    found, result = answer(served, "ListTasks", {"pageSize": 7})
    assert found.step.path == "rec/05-list-tasks.http"
    assert listed(result) == [(TASK, CONTEXT)]
    assert served.ties == []
    # the same request again: a conversation of its own too (nothing to read the state of)
    again, other = answer(served, "ListTasks", {"pageSize": 7})
    assert again.conversation is not found.conversation
    assert listed(other)[0][0] != TASK  # (TASK is the first one's)


def test_a_listing_matches_nothing_when_no_recorded_listing_is_like_it() -> None:
    served = book()
    send(served, str(uuid.uuid4()))
    assert isinstance(served.find(rpc("ListTasks", {"pageSize": 8})), NotFound)


def test_the_stand_in_warns_which_conversation_a_listing_joined(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stand_in = StandIn(transcripts(), DEFAULT_RULES)

    async def ask() -> list[Any]:
        transport = httpx.ASGITransport(app=stand_in)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:5") as http:
            requests = [sent(str(uuid.uuid4())), sent(str(uuid.uuid4()))]
            requests.append(rpc_body("ListTasks", {"pageSize": 7}))
            replies = []
            for request in requests:
                reply = await http.post("/a2a/jsonrpc", content=request, headers=dict(HEADERS))
                replies.append(reply.json()["result"])
        return replies

    with caplog.at_level("WARNING", logger="recorder.serve"):
        first, second, listing = asyncio.run(ask())
    assert [item["id"] for item in listing["tasks"]] == [second["task"]["id"]]
    assert first["task"]["id"] != second["task"]["id"]
    assert stand_in.ties == [
        "rec/05-list-tasks.http:4: conversations 2 and 1 both played a file it needs (@after)"
        " and match the request as well; conversation 2 answers (it played it last)"
    ]
    assert [r.getMessage() for r in caplog.records] == stand_in.ties
