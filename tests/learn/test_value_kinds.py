"""The value kinds of the rules (`recorder.rules.kinds`): any value of the kind matches at a
generated place, by the walk and by the fast path; a value of another type still fails (no
network)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import as_wire

from recorder.format.model import Exchange, Request, Response
from recorder.replay.verdict.state import ReplayState
from recorder.rules.kinds import VALUE_KINDS, is_of_kind
from recorder.rules.ruleset import Rules

JSON = [("Content-Type", "application/json")]
REQUEST = Request("POST", "/a2a/jsonrpc", [("Host", "localhost:1"), *JSON], b"{}")


def verdict(rules: Rules, recorded: Any, live: Any, *, wire: bool = False) -> list[str]:
    golden = Exchange(REQUEST, Response(200, "OK", JSON, json.dumps(recorded).encode()))
    state = ReplayState(rules, recorded_base="http://localhost:1", live_base="http://127.0.0.1:2")
    response = Response(200, "OK", JSON, json.dumps(live).encode())
    mismatches = state.compare(golden, as_wire(response) if wire else response)
    return [f"{m.path}: {m.message}" for m in mismatches]


def at(value: Any) -> dict[str, Any]:
    return {"result": {"v": value, "w": "same"}}


GOOD_AND_BAD = {
    "integer": (1700000000, 1800000000, "1800000000"),
    "number": (1.5, 2, "2"),
    "text": ("the diff is fine", "looks good", 42),
    "hex": ("9f86d081884c7d65", "0a1b2c3d4e5f6071", "not hex!"),
    "base64": ("eyJ0IjoxfQ==", "eyJ0IjoyfQ==", "not base64 at all"),
    "hostname": ("worker-1.pool.internal", "worker-2.pool.internal", "worker 2"),
    "duration": ("1.5s", "250ms", "soon"),
}


def test_every_value_kind_is_tested() -> None:
    assert set(GOOD_AND_BAD) == set(VALUE_KINDS)


@pytest.mark.parametrize("kind", sorted(GOOD_AND_BAD))
@pytest.mark.parametrize("wire", [False, True])
def test_a_value_kind_at_a_generated_path_takes_any_value_of_it_and_no_other(
    kind: str, wire: bool
) -> None:
    recorded, other, wrong = GOOD_AND_BAD[kind]
    rules = Rules(generated_paths={"$.result.v": kind})
    assert verdict(rules, at(recorded), at(other), wire=wire) == []
    if isinstance(recorded, str) and isinstance(wrong, str):
        message = f"expected {VALUE_KINDS[kind]}, such as {recorded!r}"
    elif isinstance(recorded, str):
        message = ""  # a string against a number: a plain type mismatch
    else:
        message = f"expected {VALUE_KINDS[kind]}"
    assert verdict(rules, at(recorded), at(wrong), wire=wire) == [f"$.result.v: {message}"]
    # the neighbour is compared exactly
    assert verdict(rules, at(recorded), {"result": {"v": other, "w": "other"}}, wire=wire) == [
        "$.result.w: "
    ]


@pytest.mark.parametrize("wire", [False, True])
def test_a_string_value_kind_of_a_generated_field_is_checked_by_the_fast_path_too(
    wire: bool,
) -> None:
    rules = Rules(generated_fields={"trace": "hex"})
    recorded = {"result": {"trace": "9f86d081884c7d65"}}
    assert verdict(rules, recorded, {"result": {"trace": "0a1b2c3d4e5f6071"}}, wire=wire) == []
    assert verdict(rules, recorded, {"result": {"trace": "zz-not-hex"}}, wire=wire) == [
        "$.result.trace: expected any hex text, such as '9f86d081884c7d65'"
    ]


def test_a_missing_value_or_null_fails_a_value_kind() -> None:
    rules = Rules(generated_paths={"$.result.v": "integer"})
    assert verdict(rules, at(1), at(None)) == ["$.result.v: expected any integer"]
    assert verdict(rules, at(1), {"result": {"w": "same"}}) != []


def test_is_of_kind_edges() -> None:
    assert not is_of_kind("integer", True) and not is_of_kind("integer", 1.5)
    assert is_of_kind("number", 1) and not is_of_kind("number", False)
    assert is_of_kind("text", "") and not is_of_kind("text", None)
    assert not is_of_kind("hex", "9F86d0")  # one letter case
    assert is_of_kind("hostname", "api.example.com:8443")
    assert not is_of_kind("hostname", "worker3") and not is_of_kind("hostname", "123.456ms")
    assert is_of_kind("duration", "1m30.5s") and is_of_kind("duration", "PT1.5S")
    assert not is_of_kind("duration", "P") and not is_of_kind("duration", "PT")
    assert is_of_kind("base64", "ab-_") and not is_of_kind("base64", "ab+_")  # one alphabet
