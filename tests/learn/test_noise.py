"""`recorder.rules.noise.propose`: one test per kind of proposal, and what is never proposed
(pure)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from recorder.format.model import Response
from recorder.format.sse import SseEvent
from recorder.rules.noise import Proposal, Replies, classify, propose
from recorder.rules.ruleset import DEFAULT_RULES, Rules


def reply(body: Any, headers: tuple[tuple[str, str], ...] = ()) -> Response:
    return Response(
        status=200,
        reason="OK",
        headers=[("Content-Type", "application/json"), *headers],
        body=json.dumps(body).encode(),
    )


def learned(
    recorded: Any, *lives: Any, rules: Rules = DEFAULT_RULES
) -> set[tuple[str, str, str | None]]:
    found = propose(
        [Replies("f.http exchange 1", reply(recorded), tuple(reply(v) for v in lives))], rules
    )
    return {(p.key, p.target, p.kind) for p in found.rules}


def one(value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "result": {"stable": "x", "v": value}}


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ((1700000000123, 1700000000456), "integer"),
        ((0.0123, 3), "number"),
        (("9f86d081884c7d65", "0a1b2c3d4e5f6071"), "hex"),
        (("1.5s", "250ms"), "duration"),
        (("PT1.5S", "PT2S"), "duration"),
        (("worker-1.pool.internal", "worker-2.pool.internal"), "hostname"),
        (("eyJ0IjoxNzAwfQ==", "eyJ0IjoxODAwfQ=="), "base64"),
        (("Fine.", "LGTM!"), "text"),  # one word: a value kind (prose gets checks)
    ],
)
def test_a_value_that_differs_between_live_runs_gets_its_value_kind(
    values: tuple[Any, Any], kind: str
) -> None:
    assert learned(one(values[0]), one(values[0]), one(values[1])) == {
        ("generated_paths", "$.result.v", kind)
    }


def test_values_of_several_types_are_ignored_at_their_place_only() -> None:
    assert learned(one(1), one(1), one("one")) == {("ignored_paths", "$.result.v", None)}
    assert learned(one(1), one(1), one(None)) == {("ignored_paths", "$.result.v", None)}


def test_a_member_that_comes_and_goes_is_ignored_and_an_array_item_member_is_named_with_star() -> (
    None
):
    a = {"result": {"items": [{"name": "a", "n": 1}, {"name": "b"}]}}
    b = {"result": {"items": [{"name": "a"}, {"name": "b"}]}}
    assert learned(a, a, b) == {("ignored_paths", "$.result.items[*].n", None)}


def test_an_array_item_member_that_differs_is_learned_narrowly_not_the_array() -> None:
    a = {"result": {"items": [{"name": "a", "seq": 1}, {"name": "b", "seq": 2}]}}
    b = {"result": {"items": [{"name": "a", "seq": 7}, {"name": "b", "seq": 9}]}}
    assert learned(a, a, b) == {("generated_paths", "$.result.items[*].seq", "integer")}


def test_an_array_of_another_length_is_ignored() -> None:
    assert learned(one([1]), one([1]), one([1, 2])) == {("ignored_paths", "$.result.v", None)}


def test_an_object_against_a_list_is_ignored() -> None:
    assert learned(one({}), one({}), one([])) == {("ignored_paths", "$.result.v", None)}


def test_an_array_in_another_order_is_unordered() -> None:
    assert learned(one([1, 2, 3]), one([1, 2, 3]), one([3, 1, 2])) == {
        ("unordered_paths", "$.result.v", None)
    }


def test_items_in_another_order_that_also_differ_inside_are_learned_item_by_item() -> None:
    a = one([{"k": "a", "t": 1}, {"k": "b", "t": 2}])
    b = one([{"k": "b", "t": 5}, {"k": "a", "t": 6}])
    # not the same items in another order (the replay pairs unordered items by their whole
    # content, which differs here): the members are learned item by item, the order kept
    assert learned(a, a, b) == {
        ("generated_paths", "$.result.v[*].k", "text"),
        ("generated_paths", "$.result.v[*].t", "integer"),
    }


def test_a_header_that_differs_is_ignored() -> None:
    a = reply(one(1), (("X-Served-By", "a1"),))
    b = reply(one(1), (("X-Served-By", "b2"),))
    found = propose([Replies("f.http exchange 1", a, (a, b))], DEFAULT_RULES)
    assert [(p.key, p.target) for p in found.rules] == [("ignored_headers", "x-served-by")]
    assert found.rules[0].samples  # the values seen are in the comment


def test_nothing_is_proposed_for_a_place_stable_between_live_runs() -> None:
    # it differs from the recording: a likely regression, reported by the verification run
    assert learned(one(1), one(2), one(2)) == set()


def test_nothing_is_proposed_for_what_the_rules_absorb() -> None:
    a = {"result": {"id": "0f02a5c4-8b7e-4c2a-9f3e-1a2b3c4d5e6f", "contextId": "c-1"}}
    b = {"result": {"id": "1e13b6d5-9c8f-4d3b-8a4f-2b3c4d5e6f70", "contextId": "c-2"}}
    assert learned(a, a, b) == set()  # a uuid shape, and contextId a generated member
    text_a = one("Task 0f02a5c4-8b7e-4c2a-9f3e-1a2b3c4d5e6f is done")
    text_b = one("Task 1e13b6d5-9c8f-4d3b-8a4f-2b3c4d5e6f70 is done")
    assert learned(text_a, text_a, text_b) == set()  # a shape inside a text
    ignored = Rules(ignored_paths=("$.result.v",))
    assert learned(one(1), one(1), one("x"), rules=ignored) == set()
    kinds = Rules(generated_paths={"$.result.v": "integer"})
    assert learned(one(1), one(1), one(2), rules=kinds) == set()


def test_secret_members_are_never_learned_from() -> None:
    a = {"result": {"token": "abcdef123456", "n": 1}}
    b = {"result": {"token": "zyxwvu987654", "n": 1}}
    assert learned(a, a, b) == set()


def test_a_kind_is_chosen_over_every_exchange_that_has_the_place() -> None:
    # a number in one exchange, a text in another: no kind holds both, so the place is ignored
    first = Replies("f.http exchange 1", reply(one(1)), (reply(one(1)), reply(one(2))))
    second = Replies("f.http exchange 2", reply(one("a")), (reply(one("a")), reply(one("a"))))
    found = propose([first, second], DEFAULT_RULES)
    assert [(p.key, p.target) for p in found.rules] == [("ignored_paths", "$.result.v")]
    assert found.rules[0].where == ("f.http exchange 1",)


def test_rules_under_an_ignored_place_are_not_proposed() -> None:
    a = one({"x": 1, "y": [1, 2]})
    b = one({"x": 2, "y": [2, 1], "z": 1})
    c = one([1])
    found = propose(
        [
            Replies("f.http exchange 1", reply(a), (reply(a), reply(b))),
            Replies("f.http exchange 2", reply(a), (reply(a), reply(c))),
        ],
        DEFAULT_RULES,
    )
    assert [(p.key, p.target) for p in found.rules] == [("ignored_paths", "$.result.v")]


def test_event_streams_are_learned_frame_by_frame() -> None:
    def stream(*data: Any) -> Response:
        return Response(
            status=200,
            reason="OK",
            headers=[("Content-Type", "text/event-stream")],
            events=tuple(SseEvent(data=json.dumps(d)) for d in data),
        )

    a = stream(one(1), {"result": {"w": "s"}})
    b = stream(one(2), {"result": {"w": "s"}})
    found = propose([Replies("f.http exchange 1", a, (a, b))], DEFAULT_RULES)
    assert [(p.key, p.target, p.kind) for p in found.rules] == [
        ("generated_paths", "$.result.v", "integer")
    ]
    assert found.rules[0].where == ("f.http exchange 1 frame 1",)
    shorter = stream(one(1))
    notes = propose([Replies("f.http exchange 1", a, (a, shorter))], DEFAULT_RULES)
    assert notes.rules == []
    assert notes.notes == [
        "f.http exchange 1: the number of frames differs between live runs (2, 1)"
    ]


def test_a_status_that_differs_is_a_note_not_a_rule() -> None:
    a = reply(one(1))
    b = Response(
        status=500, reason="Oops", headers=[("Content-Type", "application/json")], body=b"{}"
    )
    found = propose([Replies("f.http exchange 1", a, (a, b))], DEFAULT_RULES)
    assert found.rules == [] and "status differs" in found.notes[0]


def test_classify_picks_the_narrowest_kind_of_all_values() -> None:
    assert classify([1, 2]) == "integer"
    assert classify([1, 2.5]) == "number"
    assert classify([True, False]) is None  # booleans are no numbers
    assert classify(["approved", "rejected"]) == "text"  # words are no base64 tokens
    assert classify(["abc", "1.5s"]) == "text"
    assert classify(["cafe", "beef"]) == "text"  # hex words shorter than 8 are text


def test_rule_text_is_one_line_of_yaml() -> None:
    assert Proposal("generated_paths", "$.a[*].b", "integer", "", ()).rule_text() == (
        'generated_paths: {"$.a[*].b": integer}'
    )
    assert Proposal("ignored_paths", "$.a", None, "", ()).rule_text() == (
        'ignored_paths: {add: ["$.a"]}'
    )


def test_a_value_that_recurs_at_the_same_places_in_every_run_is_an_id() -> None:
    def file(ticket_1: str, ticket_2: str, trace: str) -> list[dict[str, Any]]:
        return [
            {"result": {"ticket": ticket_1, "trace": trace}},
            {"result": {"ticket": ticket_1, "trace": trace + "0"}},
            {"result": {"ticket": ticket_2}},
        ]

    runs = [file("aaaa1111", "bbbb2222", "c0ffee01"), file("cccc3333", "dddd4444", "c0ffee02")]
    replies = [
        Replies(
            f"f.http exchange {n + 1}",
            reply(runs[0][n]),
            (reply(runs[0][n]), reply(runs[1][n])),
            "f.http",
        )
        for n in range(3)
    ]
    found = {(p.key, p.target, p.kind) for p in propose(replies, DEFAULT_RULES).rules}
    assert found == {
        ("generated_paths", "$.result.ticket", "id"),  # recurs in exchanges 1 and 2
        ("generated_paths", "$.result.trace", "hex"),  # never named again
    }
    # a value that recurs in one run and not in the other is no id: a loose kind
    other = [file("aaaa1111", "bbbb2222", "c0ffee01"), file("cccc3333", "cccc3333", "c0ffee02")]
    other[1][1]["result"]["ticket"] = "eeee5555"
    replies = [
        Replies(
            f"f.http exchange {n + 1}",
            reply(other[0][n]),
            (reply(other[0][n]), reply(other[1][n])),
            "f.http",
        )
        for n in range(3)
    ]
    found = {(p.key, p.target, p.kind) for p in propose(replies, DEFAULT_RULES).rules}
    assert ("generated_paths", "$.result.ticket", "hex") in found
