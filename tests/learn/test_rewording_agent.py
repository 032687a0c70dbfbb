"""The rewording agent of the tests (`tests/rewording_agent.py`) does what its docstring says:
the same seed gives the same wordings, the forms and styles vary, the facts stay, a stream's
artifact comes in chunks that assemble to the answer, and each regression breaks its answer.
(Its use, learning and trials against it, is tests/e2e/test_reworded_trials.py.)"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rewording_agent import (
    ANSWERS,
    REGRESSIONS,
    REVIEW_DIFF,
    STREAM_DIFF,
    RewordingAgent,
    converse,
    stream_frames,
)

from recorder import load
from recorder.kit import KitServer, review, start_kit
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer

KIT_REVIEW = review.format_review(review.review_diff(review.parse_unified_diff(REVIEW_DIFF)))


class _NoKit:
    """Enough of a kit for `RewordingAgent.reword` (no server started)."""

    token = "t"
    base_url = "http://localhost:1"
    url = "http://127.0.0.1:1"


def _words(seed: int, count: int = 40, regression: str | None = None) -> list[str]:
    agent = RewordingAgent(_NoKit(), seed, regression)  # type: ignore[arg-type]
    return [agent.reword(KIT_REVIEW) for _ in range(count)]


def test_the_same_seed_gives_the_same_wordings_and_another_seed_others() -> None:
    assert _words(7) == _words(7)
    assert _words(7) != _words(8)


def test_the_facts_come_in_their_several_forms_and_styles() -> None:
    texts = _words(3, 60)
    joined = "\n".join(texts)
    for form in (
        "src/cart.py:2",
        "line 2 of src/cart.py",
        "`cart.py`, line 2",
        "src/cart.py (line 2)",
    ):
        assert form in joined, form
    for rule in ("[todo]", "`todo`", "(todo)", "rule todo"):
        assert rule in joined, rule
    assert re.search(r"\bfour\b", joined, re.I) and re.search(r"\b4 \w+s\b", joined)
    assert {"low", "Low", "LOW"} <= set(re.findall(r"\b(low|Low|LOW)\b", joined))
    assert any(t.startswith("|") or "\n| " in t for t in texts)  # a table
    assert any("\n" not in t for t in texts)  # a one-liner
    assert any(re.search(r"(?m)^\d\. \*\*", t) for t in texts)  # markdown
    lengths = sorted(len(t) for t in texts)
    assert lengths[-1] >= 3 * lengths[0], lengths


def test_there_are_twenty_regressions_or_more_the_meaning_ones_among_them() -> None:
    assert len(REGRESSIONS) >= 20
    meaning = {name for name, r in REGRESSIONS.items() if r.kind == "meaning"}
    assert {
        "extra-finding",
        "count-changed",
        "lines-swapped",
        "repeated",
        "severity-flipped",
        "negated",
        "wrong-file",
    } <= meaning
    with pytest.raises(ValueError, match="no regression 'nope'"):
        RewordingAgent(_NoKit(), 1, "nope")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "sign"),
    [
        ("extra-finding", "hardcoded-secret"),
        ("severity-flipped", "high"),
        ("wrong-file", "card.py"),
        ("lines-off", "9"),
        ("empty", None),
    ],
)
def test_a_regression_changes_the_answer_it_targets(name: str, sign: str | None) -> None:
    broken = _words(11, 10, name)
    if sign is None:
        assert broken == [""] * 10
    else:
        assert all(sign in text.lower() or sign in text for text in broken), broken


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, KitServer]]:
    out = tmp_path_factory.mktemp("reworded")
    with start_kit(grpc_port=None) as kit, RewordingAgent(kit, seed=4) as agent:
        with ProxyServer(create_proxy_app(agent.url, out=out)) as server:
            seen = converse(server.url)
        assert seen["answered"] and seen["ask"]
        yield out, kit


def _file(folder: Path, needle: str) -> Path:
    for path in sorted(folder.glob("*.http")):
        if needle.encode() in load(path).exchanges[0].request.body:
            return path
    raise AssertionError(needle)


def _frames(path: Path) -> list[Any]:
    events = load(path).exchanges[0].response.events or ()
    return [json.loads(e.data) for e in events if e.data]


def test_an_unscripted_client_through_the_recorder_records_every_answer(
    recorded: tuple[Path, KitServer],
) -> None:
    folder, kit = recorded
    for answer in ANSWERS:
        transcript = load(_file(folder, answer.needle))
        assert len(transcript.exchanges) >= answer.exchange, answer
    # the card names the agent (as the recorder rewrote it), never the kit behind it: the
    # client's calls went through the rewording
    card = load(folder / "01-get-agent-card.http").exchanges[0].response.body.decode()
    assert f":{kit.port}/" not in card


def test_a_streamed_artifact_comes_in_chunks_that_assemble_to_the_answer() -> None:
    with start_kit(grpc_port=None) as kit:
        counts = set()
        for seed in range(6):
            with RewordingAgent(kit, seed=seed) as agent:
                frames = stream_frames(agent.url, STREAM_DIFF)
            chunks = [
                f["result"]["artifactUpdate"] for f in frames if "artifactUpdate" in f["result"]
            ]
            counts.add(len(chunks))
            assert "append" not in chunks[0]
            assert all(c.get("append") is True for c in chunks[1:])
            if len(chunks) > 1:
                assert chunks[-1]["lastChunk"] is True
            text = "\n".join(p["text"] for c in chunks for p in c["artifact"]["parts"])
            assert "orders.go" in text and "debug-print" in text
        assert len(counts) > 1, counts
