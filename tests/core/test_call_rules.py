"""The default rules know the generated values of an agent's own calls (a chat completion's
id, its system fingerprint, a tool call's id, the answer naming it, an MCP session header),
scoped to members no A2A object has: the shipped transcripts pair as they did."""

from __future__ import annotations

from pathlib import Path

from recorder.disk.transcripts import load
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import DEFAULT_RULES

REPO = Path(__file__).resolve().parent.parent.parent
CALL_MEMBERS = ('"choices"', '"function"', '"system_fingerprint"', '"tool_call_id"')


def test_a_completions_generated_values_are_known() -> None:
    pairing = PairingRules(DEFAULT_RULES)
    chunk = {
        "id": "chatcmpl-Zq8K2m4Xv7Lp9Rt3",
        "object": "chat.completion.chunk",
        "created": 1796424418,
        "system_fingerprint": "fp_0a1b2c3d4e",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {"index": 0, "id": "call_Hd5Fw1Ny6Jc0Ub2", "function": {"name": "f"}}
                    ]
                },
            }
        ],
    }
    found = {text for text, _ in pairing.generated_values(chunk)}
    assert found == {"chatcmpl-Zq8K2m4Xv7Lp9Rt3", "fp_0a1b2c3d4e", "call_Hd5Fw1Ny6Jc0Ub2"}
    answer = {"role": "tool", "tool_call_id": "call_Hd5Fw1Ny6Jc0Ub2", "content": "[]"}
    assert pairing.generated_values(answer) == [("call_Hd5Fw1Ny6Jc0Ub2", "id")]
    assert "mcp-session-id" in DEFAULT_RULES.ignored_headers


def test_an_a2a_object_with_an_id_is_compared_as_before() -> None:
    pairing = PairingRules(DEFAULT_RULES)
    card_skill = {"id": "review-diff", "name": "Review", "tags": ["code-review"]}
    assert pairing.generated_values(card_skill) == []
    for path in sorted((REPO / "transcripts").glob("*.http")):
        text = path.read_text()
        assert not any(member in text for member in CALL_MEMBERS), path.name
        assert load(path).exchanges  # (parsed: the goldens are untouched by the call rules)
