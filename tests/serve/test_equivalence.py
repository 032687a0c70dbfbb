"""Which recorded request a live one is (pure, no network): the best of every candidate, and
requests that differ only as ProtoJSON, A2A 0.3 vs 1.0 spellings or header case and order.

Recordings are built here, one exchange per transcript unless a test says otherwise; live
requests are written as each SDK sends them.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from typing import Any

import pytest
from factories import make_exchange, make_request, make_response

from recorder import Headers, Transcript
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.serve.book import Book, Found, NotFound
from recorder.serve.match import LiveRequest, is_default, random_template
from recorder.serve.replies import Renderer
from recorder.serve.spelling import modern
from recorder.serve.steps import prepare

RULES = PairingRules(DEFAULT_RULES)
V1 = [("Content-Type", "application/json"), ("A2A-Version", "1.0")]


def exchange(request: dict[str, Any], result: Any, *, headers: Any = None, title: str = "") -> Any:
    return make_exchange(
        request=make_request(body=json.dumps(request).encode(), headers=Headers(headers or V1)),
        response=make_response(
            body=json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "result": result}).encode()
        ),
        title=title or str(request.get("method")),
    )


def book(*files: list[Any]) -> Book:
    transcripts = [
        Transcript(exchanges=tuple(exchanges), source=f"{n + 1:02d}-file.http")
        for n, exchanges in enumerate(files)
    ]
    return Book(prepare(transcripts, RULES), RULES)


def send(message: dict[str, Any], **params: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": str(uuid.uuid4()),
        "method": "SendMessage",
        "params": {"message": message, **params},
    }


def live(body: dict[str, Any], headers: list[tuple[str, str]] | None = None) -> LiveRequest:
    return LiveRequest("POST", "/a2a/jsonrpc", headers or V1, json.dumps(body).encode())


def found(result: Found | NotFound) -> Found:
    assert isinstance(result, Found), result
    return result


def answer(result: Found) -> Any:
    return json.loads(Renderer(RULES, result.step, result.branch, result.rpc_id, None).body())


def user(message_id: str, text: str = "go", **more: Any) -> dict[str, Any]:
    return {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}], **more}


# --------------------------------------------------------------------------- best match


def test_an_exact_message_id_beats_one_that_only_pairs() -> None:
    # five requests that differ only by their messageId, each answered differently
    ids = [f"{kind}-{uuid.uuid4().hex[:8]}" for kind in ("text", "file", "data", "bare", "both")]
    served = book(*[[exchange(send(user(i)), {"answer": i})] for i in ids])
    for message_id in reversed(ids):
        assert answer(found(served.find(live(send(user(message_id))))))["result"] == {
            "answer": message_id
        }


def test_a_new_id_of_the_same_pattern_beats_another_pattern() -> None:
    served = book(
        [exchange(send(user("text-1a2b3c4d")), "text")],
        [exchange(send(user("file-5e6f7a8b")), "file")],
    )
    for kind in ("file", "text"):
        got = found(served.find(live(send(user(f"{kind}-{uuid.uuid4().hex[:8]}")))))
        assert answer(got)["result"] == kind


def test_repeated_identical_requests_each_open_their_own_transcript_in_order() -> None:
    files = [[exchange(send(user("m-1")), {"number": n})] for n in range(3)]
    served = book(*files)
    numbers = [
        answer(found(served.find(live(send(user(str(uuid.uuid4())))))))["result"]["number"]
        for _ in range(3)
    ]
    assert numbers == [0, 1, 2]
    # and a fourth goes round again (the least opened first)
    again = found(served.find(live(send(user("m-4")))))
    assert answer(again)["result"]["number"] == 0


def test_a_tie_between_different_replies_is_noted_with_both() -> None:
    served = book(
        [exchange(send(user("m-1")), "one")], [exchange(send(user("m-1"), metadata={}), "two")]
    )
    result = found(served.find(live(send(user("m-9")))))
    assert answer(result)["result"] == "one"
    assert [(t.chosen.path, t.other.path, t.same_reply) for t in served.ties] == [
        ("01-file.http", "02-file.http", False)
    ]


def _task_reply(rpc_id: Any, message_id: str, task: str, context: str, text: str) -> Any:
    """A SendMessage recorded with JSON-RPC id `rpc_id`, answered with task `task`."""
    request = {**send(user(message_id)), "id": rpc_id}
    result = {
        "task": {
            "id": task,
            "contextId": context,
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2025-01-02T03:04:05Z"},
            "history": [user(message_id)],
            "artifacts": [{"artifactId": f"a-{task}", "parts": [{"text": text}]}],
        }
    }
    return exchange(request, result)


def test_a_tie_between_replies_alike_but_for_their_ids_is_a_harmless_one() -> None:
    # recorded by two runs of one suite: its JSON-RPC ids, its messageIds and the agent's
    # task ids (no uuids) differ, the answer does not: a tie the conversation cannot tell
    one = _task_reply(1, "m-1", "task-17", "ctx-17", "looks good")
    other = _task_reply("req-2", "m-2", "task-42", "ctx-42", "looks good")
    served = book([one], [other])
    result = found(served.find(live(send(user("m-9")))))
    assert answer(result)["result"]["task"]["id"] == "task-17"
    assert [(t.chosen.path, t.other.path, t.same_reply) for t in served.ties] == [
        ("01-file.http", "02-file.http", True)
    ]
    # the same ids, another answer: their replies differ
    third = _task_reply(1, "m-1", "task-17", "ctx-17", "one finding")
    served = book([one], [third])
    found(served.find(live(send(user("m-9")))))
    assert [t.same_reply for t in served.ties] == [False]
    # a reply whose id is not its request's: that id is the answer's, compared as it is
    moved = _task_reply(1, "m-1", "task-17", "ctx-17", "looks good")
    body = {**json.loads(moved.response.body), "id": 99}
    moved = replace(moved, response=replace(moved.response, body=json.dumps(body).encode()))
    served = book([one], [moved])
    found(served.find(live(send(user("m-9")))))
    assert [t.same_reply for t in served.ties] == [False]


def test_the_stand_in_notes_a_harmless_tie_only_under_verbose(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # what `recorder serve` prints without -v is a warning; -v shows the info lines
    import asyncio

    import httpx

    from recorder.serve import StandIn

    recorded = [
        _task_reply(1, "m-1", "task-17", "ctx-17", "looks good"),
        _task_reply(2, "m-2", "task-42", "ctx-42", "looks good"),
    ]
    transcripts = [
        Transcript(exchanges=(one,), source=f"{n}.http") for n, one in enumerate(recorded)
    ]
    stand_in = StandIn(transcripts, DEFAULT_RULES)

    async def ask() -> None:
        transport = httpx.ASGITransport(app=stand_in)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:5") as http:
            for _ in range(2):
                reply = await http.post(
                    "/a2a/jsonrpc", json=send(user(str(uuid.uuid4()))), headers=dict(V1)
                )
                assert reply.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"

    with caplog.at_level("INFO", logger="recorder.serve"):
        asyncio.run(ask())
    ties = [r for r in caplog.records if "match the request as well" in r.getMessage()]
    assert [(r.levelname, r.getMessage().rpartition("; ")[2]) for r in ties] == [
        ("INFO", "their replies are alike"),
        ("INFO", "their replies are alike"),
    ]
    assert stand_in.ties == []


def test_the_closest_hint_ranks_by_the_same_score() -> None:
    # the same request recorded with other texts four times, and once with the live
    # request's configuration: that one is closest, though it comes last
    config = {"historyLength": 3, "acceptedOutputModes": ["text/plain"]}
    files = [[exchange(send(user("m", f"text {n}")), n)] for n in range(4)]
    files.append([exchange(send(user("m", "text 9"), configuration=config), 9)])
    served = book(*files)
    missed = served.find(live(send(user("m", "text 5"), configuration=config)))
    assert isinstance(missed, NotFound) and missed.closest is not None
    assert missed.closest.path == "05-file.http"
    assert missed.differences == ['$.params.message.parts[0].text: recorded "text 9", got "text 5"']


# --------------------------------------------------------------------------- client values


@pytest.mark.parametrize(
    ("value", "template"),
    [
        ("tck-nonexistent-err-test-af33c277", "tck-nonexistent-err-test-\0"),
        ("run_20261201_1733070000", "run_\0_\0"),
        ("req.9f8e7d6c5b", "req.\0"),
        ("push-afaeddef", "push-\0"),  # a random hex run with no digit in it
        ("tck-defaced", None),  # (a word of hex letters, shorter than a random run)
        ("tck-nonexistent-err-test", None),
        ("base64", None),
        ("v1beta1", None),
        ("What languages can you review?", None),
    ],
)
def test_a_random_part_is_told_by_its_shape(value: str, template: str | None) -> None:
    assert random_template(value) == template


def test_a_client_id_with_a_random_suffix_pairs_and_is_echoed() -> None:
    recorded_id = "tck-nonexistent-err-test-af33c277"
    error = {"code": -32001, "message": f"Task {recorded_id} not found"}
    request = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": recorded_id}}
    step = make_exchange(
        request=make_request(body=json.dumps(request).encode()),
        response=make_response(
            body=json.dumps({"jsonrpc": "2.0", "id": 1, "error": error}).encode()
        ),
    )
    served = book([step])
    new_id = "tck-nonexistent-err-test-6e3f1958"
    result = found(served.find(live(dict(request, params={"id": new_id}))))
    assert answer(result)["error"]["message"] == f"Task {new_id} not found"
    # another pattern is another request
    other = served.find(live(dict(request, params={"id": "tck-other-6e3f1958"})))
    assert isinstance(other, NotFound)


# --------------------------------------------------------------------------- equivalence


def test_absent_empty_and_default_members_are_the_same_in_protojson() -> None:
    # as an SDK that writes every member sends it, and as one that leaves defaults out
    full = send(
        {
            "messageId": "m-1",
            "contextId": "",
            "taskId": "",
            "role": "ROLE_USER",
            "parts": [{"text": "go", "mediaType": "", "filename": "", "metadata": {}}],
            "metadata": {},
            "extensions": [],
            "referenceTaskIds": [],
        },
        configuration={"acceptedOutputModes": [], "historyLength": 0, "returnImmediately": False},
        metadata={},
        tenant="",
    )
    lean = send(user("m-2"))
    for recorded, sent in ((full, lean), (lean, full)):
        served = book([exchange(recorded, "ok")])
        assert answer(found(served.find(live(sent))))["result"] == "ok"
    assert all(is_default(v) for v in (None, "", 0, 0.0, False, [], {}, "ROLE_UNSPECIFIED"))
    assert is_default({"a": None, "b": {"c": ""}})
    assert not any(is_default(v) for v in ("x", 1, True, [0], {"a": 1}))
    # a member that is not at its default still counts
    served = book([exchange(lean, "ok")])
    assert isinstance(served.find(live(send(user("m-3"), metadata={"a": 1}))), NotFound)


def test_a_0_3_request_matches_a_1_0_recording_and_back() -> None:
    legacy = {
        "jsonrpc": "2.0",
        "id": "c1",
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "messageId": "m-1",
                "role": "user",
                "parts": [
                    {"kind": "text", "text": "go"},
                    {"kind": "file", "file": {"uri": "https://x/a.txt", "mimeType": "text/plain"}},
                ],
            },
            "configuration": {"blocking": True},
        },
    }
    current = send(
        {
            "messageId": "m-2",
            "role": "ROLE_USER",
            "parts": [{"text": "go"}, {"url": "https://x/a.txt", "mediaType": "text/plain"}],
        },
        configuration={"returnImmediately": False},
    )
    assert modern(legacy)[0]["params"]["message"] == {
        **current["params"]["message"],
        "messageId": "m-1",
    }
    for recorded, sent in ((current, legacy), (legacy, current)):
        served = book([exchange(recorded, "ok")])
        assert answer(found(served.find(live(sent))))["result"] == "ok"
    # the client's own spelling wins where both are recorded
    both = book([exchange(current, "1.0")], [exchange(legacy, "0.3")])
    assert answer(found(both.find(live(legacy))))["result"] == "0.3"


def test_header_case_order_and_the_legacy_extensions_name_do_not_matter() -> None:
    headers = [*V1, ("A2A-Extensions", "https://x/a, https://x/b")]
    served = book([exchange(send(user("m-1")), "ok", headers=headers)])
    for sent in (
        [
            ("content-type", "application/json"),
            ("a2a-version", "1.0"),
            ("a2a-extensions", "https://x/b, https://x/a"),
        ],
        [*V1, ("X-A2A-Extensions", "https://x/b"), ("X-A2A-Extensions", "https://x/a")],
    ):
        served = book([exchange(send(user("m-1")), "ok", headers=headers)])
        assert answer(found(served.find(live(send(user("m-2")), sent))))["result"] == "ok"
    assert isinstance(served.find(live(send(user("m-3")), V1)), NotFound)


def test_a2a_version_chooses_the_card() -> None:
    def card(version: str | None) -> Any:
        headers = [("Accept", "*/*")] + ([("A2A-Version", version)] if version else [])
        body = {"protocolVersion": version or "0.3"}
        return make_exchange(
            request=make_request(
                method="GET",
                target="/.well-known/agent-card.json",
                headers=Headers(headers),
                body=b"",
            ),
            response=make_response(body=json.dumps(body).encode()),
            title="GetAgentCard",
        )

    for order in ((None, "1.0"), ("1.0", None)):
        served = book(*[[card(version)] for version in order])
        for version in (None, "1.0", None, "1.0"):
            sent = [("Accept", "*/*")] + ([("A2A-Version", version)] if version else [])
            request = LiveRequest("GET", "/.well-known/agent-card.json", sent, b"")
            assert answer(found(served.find(request)))["protocolVersion"] == (version or "0.3")


def test_an_agent_that_did_not_know_the_other_spelling_is_not_taken_as_knowing_it() -> None:
    legacy = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "messageId": "m-1",
                "role": "user",
                "parts": [{"kind": "text", "text": "go"}],
            }
        },
    }
    refused = make_exchange(
        request=make_request(body=json.dumps(legacy).encode()),
        response=make_response(
            body=json.dumps(
                {"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "Not found"}}
            ).encode()
        ),
    )
    served = book([refused])
    assert isinstance(served.find(live(send(user("m-2")))), NotFound)
    assert answer(found(served.find(live(legacy))))["error"]["code"] == -32601


def test_the_stand_in_warns_once_of_a_tie_between_different_replies(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import asyncio

    import httpx

    from recorder.serve import StandIn

    transcripts = [
        Transcript(exchanges=(exchange(send(user("m-1")), answer),), source=f"{answer}.http")
        for answer in ("one", "two")
    ]
    stand_in = StandIn(transcripts, DEFAULT_RULES)

    async def ask() -> list[Any]:
        transport = httpx.ASGITransport(app=stand_in)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:5") as http:
            replies = [
                await http.post(
                    "/a2a/jsonrpc", json=send(user(str(uuid.uuid4()))), headers=dict(V1)
                )
                for _ in range(3)
            ]
        return [reply.json()["result"] for reply in replies]

    with caplog.at_level("WARNING", logger="recorder.serve"):
        # alike in all but their reply: the transcript opened the fewest times answers
        assert asyncio.run(ask()) == ["one", "two", "one"]
    warned = [
        r.getMessage() for r in caplog.records if "match the request as well" in r.getMessage()
    ]
    assert warned == [
        "one.http #1 and two.http #1 match the request as well; one.http #1 answers "
        "(first among equals); their replies differ",
        "two.http #1 and one.http #1 match the request as well; two.http #1 answers "
        "(first among equals); their replies differ",
    ]
    assert len(stand_in.ties) == 2
