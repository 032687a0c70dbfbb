"""Grouping unscripted traffic by id lineage (`recorder.record.lineage`): pure, no network."""

from __future__ import annotations

import json
import uuid
from typing import Any

from recorder.format.model import Headers, Request
from recorder.record.lineage import MAX_SCANNED_BODY, Lineage

A, B, C = ("#conversation", 1), ("#conversation", 2), ("#conversation", 3)


def rpc(method: str, params: dict[str, Any]) -> Request:
    """A JSON-RPC request as an SDK sends it: a uuid4 id, no recorder header."""
    body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
    return Request(
        "POST",
        "/a2a/jsonrpc",
        Headers([("Content-Type", "application/json")]),
        json.dumps(body).encode(),
    )


def send(text: str, **message: Any) -> Request:
    return rpc(
        "SendMessage",
        {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", **message}},
    )


def task_reply(request: Request, task: str, context: str) -> bytes:
    rpc_id = request.json["id"]
    message_id = request.json["params"].get("message", {}).get("messageId", "m")
    result = {
        "task": {
            "id": task,
            "contextId": context,
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-30T10:00:00.5Z"},
            "history": [{"messageId": message_id, "role": "ROLE_USER", "taskId": task}],
            "artifacts": [{"artifactId": str(uuid.uuid4()), "parts": [{"text": "ok"}]}],
        }
    }
    return json.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": result}).encode()


def exchange(lineage: Lineage, request: Request, key: Any, reply: bytes) -> Any:
    """What the recorder does: the request's file by lineage (else `key`), then its reply
    learned with that file as home. Returns the file."""
    values = lineage.request_values(request)
    home = lineage.home_of(values) or key
    lineage.learn_body(reply, home, values)
    return home


def test_interleaved_conversations_each_find_their_own_file() -> None:
    lineage = Lineage()
    t1, c1, t2, c2 = (str(uuid.uuid4()) for _ in range(4))
    first, second = send("review"), send("review")
    assert exchange(lineage, first, A, task_reply(first, t1, c1)) == A
    assert exchange(lineage, second, B, task_reply(second, t2, c2)) == B
    get2, get1 = rpc("GetTask", {"id": t2}), rpc("GetTask", {"id": t1})
    assert exchange(lineage, get2, C, task_reply(get2, t2, c2)) == B
    assert exchange(lineage, get1, C, task_reply(get1, t1, c1)) == A
    assert lineage.home_of(lineage.request_values(rpc("ListTasks", {"contextId": c2}))) == B


def test_a_context_shared_by_two_tasks_keeps_both_in_one_file() -> None:
    lineage = Lineage()
    t1, t2, context = (str(uuid.uuid4()) for _ in range(3))
    first = send("review")
    exchange(lineage, first, A, task_reply(first, t1, context))
    # a second task in the same context: the request carries the context, the reply a new task
    second = send("another review", contextId=context)
    assert exchange(lineage, second, B, task_reply(second, t2, context)) == A
    assert lineage.home_of(lineage.request_values(rpc("CancelTask", {"id": t2}))) == A


def test_an_id_first_seen_in_a_stream_frame_has_a_home_before_the_stream_ends() -> None:
    lineage = Lineage()
    stream = rpc("SendStreamingMessage", {"message": {"messageId": "m-1", "role": "ROLE_USER"}})
    task = str(uuid.uuid4())
    frame = {"jsonrpc": "2.0", "id": stream.json["id"], "result": {"task": {"id": task}}}
    lineage.learn_body(json.dumps(frame).encode(), A, lineage.request_values(stream))
    assert lineage.home_of(lineage.request_values(rpc("CancelTask", {"id": task}))) == A


def test_a_reply_that_names_ids_of_two_earlier_files_moves_neither() -> None:
    lineage = Lineage()
    t1, c1, t2, c2 = (str(uuid.uuid4()) for _ in range(4))
    for request, key, task, context in ((send("a"), A, t1, c1), (send("b"), B, t2, c2)):
        exchange(lineage, request, key, task_reply(request, task, context))
    listing = rpc("ListTasks", {})
    tasks = [{"id": t1, "contextId": c1}, {"id": t2, "contextId": c2}]
    reply = {"jsonrpc": "2.0", "id": listing.json["id"], "result": {"tasks": tasks}}
    assert exchange(lineage, listing, C, json.dumps(reply).encode()) == C
    assert lineage.home_of(lineage.request_values(rpc("GetTask", {"id": t1}))) == A
    assert lineage.home_of(lineage.request_values(rpc("GetTask", {"id": t2}))) == B


def test_the_clients_own_values_and_timestamps_have_no_home() -> None:
    lineage = Lineage()
    request = send("review")
    exchange(lineage, request, A, task_reply(request, str(uuid.uuid4()), str(uuid.uuid4())))
    # the JSON-RPC id and the messageId came from the client: echoed, they name no file
    echo = rpc("GetTask", {"id": request.json["id"]})
    assert lineage.home_of(lineage.request_values(echo)) is None
    message = request.json["params"]["message"]["messageId"]
    assert lineage.home_of(lineage.request_values(rpc("GetTask", {"id": message}))) is None
    at = rpc("ListTasks", {"statusTimestampAfter": "2026-11-30T10:00:00.5Z"})
    assert lineage.home_of(lineage.request_values(at)) is None


def test_a_request_naming_two_files_joins_the_same_one_every_time() -> None:
    lineage = Lineage()
    t1, t2 = str(uuid.uuid4()), str(uuid.uuid4())
    lineage.learn({"task": {"id": t1}}, A, frozenset())
    lineage.learn({"task": {"id": t2}}, B, frozenset())
    both = lineage.request_values(rpc("GetTask", {"id": t1, "metadata": {"other": t2}}))
    assert lineage.home_of(both) == (A if t1 < t2 else B)


def test_bodies_that_are_no_json_or_too_large_are_not_read() -> None:
    lineage = Lineage()
    task = str(uuid.uuid4())
    lineage.learn_body(f"task {task} started".encode(), A, frozenset())
    lineage.learn_body(b'{"task": {"id": "' + task.encode() + b'"} ', A, frozenset())
    padding = b" " * MAX_SCANNED_BODY
    lineage.learn_body(b'{"task": {"id": "' + task.encode() + b'"}}' + padding, A, frozenset())
    assert len(lineage) == 0
    lineage.learn_body(b'  {"task": {"id": "' + task.encode() + b'"}}', A, frozenset())
    assert lineage.home_of({task}) == A


def test_a_client_value_reused_by_two_conversations_ties_them_not() -> None:
    # a test suite that sends the same messageId in every test: the first test's GetTask
    # echoes it in the task history (its request did not carry it), and the second test's
    # first request carries it again
    lineage = Lineage()
    first = send("review", messageId="msg-1")
    t1, c1 = str(uuid.uuid4()), str(uuid.uuid4())
    assert exchange(lineage, first, A, task_reply(first, t1, c1)) == A
    get = rpc("GetTask", {"id": t1})
    history = {"jsonrpc": "2.0", "id": get.json["id"], "result": {"id": t1, "contextId": c1}}
    history["result"]["history"] = [{"messageId": "msg-1", "role": "ROLE_USER", "taskId": t1}]
    assert exchange(lineage, get, C, json.dumps(history).encode()) == A
    second = send("another review", messageId="msg-1")
    assert exchange(lineage, second, B, task_reply(second, *(str(uuid.uuid4()) for _ in "tc"))) == B


def test_a_client_value_echoed_in_another_files_stream_frame_has_no_home() -> None:
    lineage = Lineage()
    chosen = "ctx-chosen-by-the-client"
    lineage.values_of(
        "/a2a/rest/message:send",
        [("Content-Type", "application/json")],
        json.dumps({"message": {"messageId": "m-1", "contextId": chosen}}).encode(),
        "application/json",
    )
    frame = {"result": {"statusUpdate": {"taskId": str(uuid.uuid4()), "contextId": chosen}}}
    lineage.learn_body(json.dumps(frame).encode(), A, frozenset())
    assert lineage.home_of({chosen}) is None
    assert len(lineage) == 1  # the task id the agent made


def test_a_listing_and_a_request_naming_two_files_need_the_other_files() -> None:
    lineage = Lineage()
    t1, c1, t2, c2 = (str(uuid.uuid4()) for _ in range(4))
    for request, key, task, context in ((send("a"), A, t1, c1), (send("b"), B, t2, c2)):
        exchange(lineage, request, key, task_reply(request, task, context))
    listing = rpc("ListTasks", {})
    tasks = [{"id": t1, "contextId": c1}, {"id": t2, "contextId": c2}]
    reply = {"jsonrpc": "2.0", "id": listing.json["id"], "result": {"tasks": tasks}}
    assert exchange(lineage, listing, C, json.dumps(reply).encode()) == C
    assert lineage.needs(C) == {A, B}
    assert lineage.needs(A) == lineage.needs(B) == frozenset()
    # a request that carries ids of two files joins one and needs the other
    both = lineage.request_values(rpc("GetTask", {"id": t1, "metadata": {"other": t2}}))
    joined = lineage.home_of(both)
    lineage.note_request(both, joined)
    assert lineage.needs(joined) == {B if joined == A else A}
