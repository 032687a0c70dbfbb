"""The recorder's fast paths give what the slow ones gave (pure, no network): request values
from a request's parts, the generated-values walk without `generated_paths`, JSON read by
orjson, the redaction's pre-check, and the model's canonical JSON read by orjson."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from recorder.format.model import Headers, Request, Response, canonical_json_body
from recorder.jsonpath import PathMatcher
from recorder.record.lineage import Lineage
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.secrets.redact import Redactor

UUID = "3f2b8c1e-9a4d-4e7f-8b6a-1c2d3e4f5a6b"
BODIES = [
    b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1"}}}',
    b'{"id": "task-' + UUID.encode() + b'", "when": "2026-11-30T10:00:00Z", "n": -1}',
    b'{"text": "a \\"quoted\\" ' + UUID.encode() + b'", "e": "\\u00e9\\/x"}',
    '{"text": "caf\u00e9 \u2028' + UUID + '"}',
    '{"t": "\x7f' + UUID + '"}',
    b'{"broken": "' + UUID.encode() + b'"',  # not JSON
    b"[" + b",".join(b'"%d-' % n + UUID.encode() + b'"' for n in range(5)) + b"]",
    b'{"a":1,"a":"' + UUID.encode() + b'"}',
    b"",
]


@pytest.mark.parametrize("body", BODIES)
@pytest.mark.parametrize("content_type", ["application/json", "text/plain", None])
@pytest.mark.parametrize("target", ["/a2a/jsonrpc", f"/tasks/{UUID}:cancel?x=a%2Bb&y=c+d"])
def test_request_values_from_parts_are_those_of_the_model(
    body: bytes | str, content_type: str | None, target: str
) -> None:
    raw = body.encode() if isinstance(body, str) else body
    headers = [("X-Trace", f"t-{UUID}"), ("Host", "h"), ("Content-Length", "9")]
    if content_type is not None:
        headers.append(("Content-Type", content_type))
    lineage = Lineage()
    expected = lineage.request_values(Request("POST", target, Headers(headers), raw))
    assert lineage.values_of(target, headers, raw, content_type) == expected


def _tree(depth: int, rng: random.Random) -> Any:
    names = ["id", "contextId", "taskId", "status", "messageId", "timestamp", "x", "parts"]
    roll = rng.random()
    if depth > 4 or roll < 0.3:
        return rng.choice(
            [
                str(uuid.UUID(int=rng.getrandbits(128))),
                f"t-{uuid.UUID(int=rng.getrandbits(128))}",
                "2026-01-02T03:04:05Z",
                "",
                "plain",
                5,
                None,
            ]
        )
    if roll < 0.65:
        return {rng.choice(names): _tree(depth + 1, rng) for _ in range(rng.randint(0, 5))}
    return [_tree(depth + 1, rng) for _ in range(rng.randint(0, 4))]


def test_the_generated_values_walk_without_paths_is_the_general_one() -> None:
    fast = PairingRules(DEFAULT_RULES)
    general = PairingRules(DEFAULT_RULES)
    general.generated_paths = PathMatcher(["$.never.there"])  # forces the path-aware walk
    rng = random.Random(13)
    found = 0
    for _ in range(500):
        value = _tree(0, rng)
        values = fast.generated_values(value)
        assert values == general.generated_values(value)
        found += len(values)
    assert found > 100  # the trees did hold generated values


def test_the_generated_values_walk_survives_deep_nesting() -> None:
    deep: list[Any] = [UUID]
    for _ in range(5000):
        deep = [deep]
    assert PairingRules(DEFAULT_RULES).generated_values(deep) == [(UUID, "id")]


@pytest.mark.parametrize(
    "body",
    [
        b'{"TOKEN": "s3cr3t-value"}',
        b'{"Api_Key": "s3cr3t-value"}',
        b'{"to\\u006ben": "s3cr3t-value"}',  # the name spelled with an escape
        '{"note": "caf\u00e9", "password": "s3cr3t-value"}'.encode(),
    ],
)
def test_a_secret_member_is_redacted_however_its_name_is_written(body: bytes) -> None:
    redactor = Redactor()
    redacted = redactor.redact_body(body, "application/json")
    assert b"s3cr3t-value" not in redacted
    assert "s3cr3t-value" in redactor.seen


def test_a_body_that_names_no_secret_comes_back_as_it_is() -> None:
    body = b'{"tokens": 3, "text": "the token is a word here", "id": "' + UUID.encode() + b'"}'
    redactor = Redactor()
    assert redactor.redact_body(body, "application/json") is body
    assert redactor.seen == {}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"a":1,"b":[true,null]}', b'{\n  "a": 1,\n  "b": [\n    true,\n    null\n  ]\n}'),
        (b'{"x":1.50,"y":1e2}', b'{\n  "x": 1.50,\n  "y": 1e2\n}'),  # numbers as they came
        (b'{"f":-0.0,"i":-0}', b'{\n  "f": -0.0,\n  "i": -0\n}'),
        (b'{"n":123456789012345678901234567890}', b'{\n  "n": 123456789012345678901234567890\n}'),
        (b'{"a":1,"a":2}', b'{\n  "a": 1,\n  "a": 2\n}'),  # a repeated key: both kept
        (b'{"v":NaN}', b'{\n  "v": NaN\n}'),
        (b"\xef\xbb\xbf{}", b"\xef\xbb\xbf{}"),  # a byte order mark: not JSON to the model
        (b'{"s":"\\ud800"}', b'{\n  "s": "\\ud800"\n}'),  # a lone surrogate: its escape kept
    ],
)
def test_the_canonical_json_of_bodies_orjson_reads_or_refuses(body: bytes, expected: bytes) -> None:
    # (every scalar as it came: tests/jsonref.py)
    assert canonical_json_body(body) == expected
    response = Response(200, "OK", Headers([("Content-Type", "application/json")]), body)
    assert response.body == expected
