"""What `learn` proposes with a model (`recorder.checks.model_proposals`): an embedding floor from
the live runs, and a model judge where an answer's facts alone are weak, live only when an
endpoint is configured, else commented out; through `noise.propose` and the rules file it
writes (which reads back), and through `recorder learn` against the real kit behind a proxy
that words one answer anew each run with no fact in it. The model is a scripted server of our
own on loopback."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from model_server import ModelServer, embedding
from wordy_agent import IGNORE_SERVED_BY, WordyAgent, reword

from recorder.checks.embedding import cosine
from recorder.checks.facts import Check, Texts, learn_facts
from recorder.checks.model_proposals import ModelProposer, facts_are_weak, learn_with_models
from recorder.checks.model_session import ModelEndpointError, ModelSession
from recorder.cli import main
from recorder.format.model import Response
from recorder.learn.rulesfile import render
from recorder.rules.noise import Replies, propose
from recorder.rules.ruleset import DEFAULT_RULES, rules_from_text

VAGUE = (
    "I had a careful look at what you sent and, overall, it reads well and does what it says.",
    "Looked it over: the change is tidy, it does what it means to, and I see nothing to fix.",
    "Nothing stands out to me here; the change reads cleanly and looks ready to go in as is.",
    "All good from my side. The change is small and clear, and it seems to do its job well.",
    "This looks fine to me: clear, focused, and I would be happy to see it merged as it is.",
)
FACTUAL = (
    "src/app.py:2 [todo] and src/app.py:3 [debug-print] and diff [missing-tests], three notes.",
    "Three notes: [todo] at src/app.py:2, [debug-print] at src/app.py:3, [missing-tests] at diff.",
)

_sessions: list[ModelSession] = []


@pytest.fixture(autouse=True)
def _close_sessions() -> Iterator[None]:
    yield
    while _sessions:
        _sessions.pop().close()


def session_of(server: ModelServer) -> ModelSession:
    made = ModelSession({"OPENAI_BASE_URL": server.base_url})
    _sessions.append(made)
    return made


def places(texts: tuple[str, ...]) -> list[Texts]:
    return [Texts(texts[0], texts[1:])]


def test_vague_prose_has_weak_facts_and_a_review_full_of_facts_does_not() -> None:
    vague = list(VAGUE)
    assert facts_are_weak(vague, learn_facts(places(VAGUE)).checks)
    assert not facts_are_weak(list(FACTUAL), learn_facts(places(FACTUAL)).checks)
    assert not facts_are_weak(["Fine.", "OK, looks good."], [])  # (too short to be prose)
    weak = [Check("contains_all", ["src/a.py:2", "[todo]", "x"], "in all runs; weak: short")]
    assert facts_are_weak(vague, weak)


def test_without_an_endpoint_the_judge_is_proposed_commented_out() -> None:
    checks, notes = ModelProposer()(places(VAGUE), learn_facts(places(VAGUE)).checks)
    (judge,) = checks
    assert judge.commented and judge.value == {"model": "YOUR-MODEL"}
    assert "name your model and set its endpoint (OPENAI_BASE_URL" in judge.seen
    named, _ = ModelProposer(judge_model="llama3.2")(places(VAGUE), [])
    assert named[0].commented and named[0].value == {"model": "llama3.2"}
    assert notes == []


def test_with_an_endpoint_the_judge_is_live_and_the_embedding_floor_is_learned(
    tmp_path: Path,
) -> None:
    with ModelServer() as server:
        rules_file = str(tmp_path / "rules.yaml")
        proposer = ModelProposer("llama3.2", "nomic-embed-text", session_of(server), rules_file)
        checks, notes = proposer(places(VAGUE), learn_facts(places(VAGUE)).checks)
        asked = server.count("/v1/embeddings")
    similar, judge = checks
    assert not judge.commented and judge.value == {"model": "llama3.2"}
    vectors = [embedding(text) for text in VAGUE]
    scores = [cosine(a, b) for n, a in enumerate(vectors) for b in vectors[n + 1 :]]
    lowest, spread = min(scores), max(scores) - min(scores)
    assert similar.value == {
        "method": "embedding",
        "model": "nomic-embed-text",
        "min": int((lowest - max(spread, 0.05)) * 100) / 100,
    }
    assert similar.seen == f"lowest seen {lowest:.2f} (cosine of nomic-embed-text embeddings)"
    assert asked == len(VAGUE) and notes == []


def test_an_endpoint_that_fails_is_a_note_not_a_crash(tmp_path: Path) -> None:
    with ModelServer(key="wanted") as server:
        proposer = ModelProposer(None, "e1", session_of(server), str(tmp_path / "r.yaml"))
        checks, notes = proposer(places(FACTUAL), learn_facts(places(FACTUAL)).checks)
    assert checks == []
    assert notes[0].startswith("no embedding floor learned (e1): POST ")
    assert "HTTP 401" in notes[0]


def test_an_embedding_floor_without_an_endpoint_is_a_usage_error() -> None:
    with pytest.raises(ModelEndpointError, match="--embedding-model e1: no model endpoint"):
        learn_with_models({}, embedding_model="e1")
    assert learn_with_models({}, judge_model="m").session is None


def artifact(text: str) -> Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"task": {"artifacts": [{"parts": [{"text": text}]}]}},
    }
    return Response(200, "OK", [("Content-Type", "application/json")], json.dumps(body).encode())


def test_the_rules_file_holds_the_commented_judge_and_reads_back_without_it(
    tmp_path: Path,
) -> None:
    with ModelServer() as server:
        with_model = ModelProposer("m1", "e1", session_of(server), str(tmp_path / "r.yaml"))
        for proposer in (ModelProposer(), with_model):
            replies = [
                Replies(
                    "t/01-a.http exchange 2",
                    artifact(VAGUE[0]),
                    tuple(map(artifact, VAGUE[1:])),
                    "t/01-a.http",
                    2,
                )
            ]
            text = render(propose(replies, DEFAULT_RULES, more_checks=proposer).rules, ["x"])
            rules = rules_from_text(text, "learned.yaml")
            names = [c.name for c in rules.checks[0].checks]
            if proposer.session is None:
                assert '    # - judge: {model: "YOUR-MODEL"}  # the facts alone are weak' in text
                assert "judge" not in names and "similar" in names  # (the lexical one)
            else:
                assert '    - judge: {model: "m1"}  # the facts alone are weak here' in text
                assert '    - similar: {method: "embedding", model: "e1", min: 0.' in text
                assert names[-2:] == ["similar", "judge"]
                assert yaml.safe_load(text)["checks"][0]["assert"][-1] == {"judge": {"model": "m1"}}


# --- recorder learn, end to end ----------------------------------------------------------------

EMBED = ("--embedding-model", "e1")

REPO = Path(__file__).resolve().parent.parent.parent


@pytest.mark.e2e
def test_recorder_learn_proposes_the_model_checks(tmp_path: Path) -> None:
    from recorder.kit import start_kit

    folder = tmp_path / "llm"
    folder.mkdir()
    # the recording without its card fetch (the proxy's card names the kit: not this test's)
    text = (REPO / "docs" / "llm" / "01-llm-review.http").read_text()
    head, _, rest = text.partition("### GetAgentCard")
    (folder / "01-llm-review.http").write_text(head + "###" + rest.partition("###")[2])
    (tmp_path / "base.yaml").write_text(IGNORE_SERVED_BY)
    pick = random.Random(3)

    def vague(text: str) -> str:
        return pick.choice(VAGUE)

    with ModelServer() as server, start_kit(vary=True, seed=9) as kit, WordyAgent(kit) as agent:
        # the languages' answer (exchange 2) worded anew each run, with no fact in it
        agent.rewrite = reword(vague, only="")
        agent.rewrite = _only_messages(agent.rewrite)
        env = {"A2A_TOKEN": kit.token, "OPENAI_API_KEY": ""}
        common = [
            "learn",
            str(folder),
            "--agent",
            agent.url,
            "--rules",
            str(tmp_path / "base.yaml"),
        ]
        without = CliRunner().invoke(
            main,
            [*common, "-o", str(tmp_path / "plain.yaml")],
            env={**env, "OPENAI_BASE_URL": ""},
        )
        refused = CliRunner().invoke(
            main,
            [*common, "-o", str(tmp_path / "x.yaml"), "--embedding-model", "e1"],
            env={**env, "OPENAI_BASE_URL": ""},
        )
        with ModelServer() as unnamed:  # (an endpoint, but no model named: commented out)
            commented = CliRunner().invoke(
                main,
                [*common, "-o", str(tmp_path / "commented.yaml")],
                env={**env, "OPENAI_BASE_URL": unnamed.base_url},
            )
        live = CliRunner().invoke(
            main,
            [*common, "-o", str(tmp_path / "model.yaml"), "--judge-model", "m1", *EMBED],
            env={**env, "OPENAI_BASE_URL": server.base_url},
        )
    assert refused.exit_code == 2 and "--embedding-model e1: no model endpoint" in refused.stderr
    assert without.exit_code == 0, without.output
    plain = (tmp_path / "plain.yaml").read_text()
    assert '# - judge: {model: "YOUR-MODEL"}' in plain and "embedding" not in plain
    assert "YOUR-MODEL" not in without.output  # (a commented check is no rule learned)
    assert commented.exit_code == 0, commented.output
    assert '# - judge: {model: "YOUR-MODEL"}' in (tmp_path / "commented.yaml").read_text()
    assert unnamed.requests == []  # (a commented check is never run, held-out runs included)
    assert live.exit_code == 0, live.output
    learned = (tmp_path / "model.yaml").read_text()
    entries = {e["in"]: e for e in yaml.safe_load(learned)["checks"]}
    languages = entries["01-llm-review.http#1"]["assert"]
    assert {"judge": {"model": "m1"}} in languages
    assert any(
        isinstance(item.get("similar"), dict) and item["similar"]["method"] == "embedding"
        for item in languages
    )
    # the review keeps its facts: no judge proposed there
    review = entries["01-llm-review.http#2"]["assert"]
    assert not any("judge" in item for item in review)
    assert server.count() > 0  # (the verification run asked the judge)


def _only_messages(rewrite: Any) -> Any:
    def edit(value: dict[str, Any]) -> None:
        result = value.get("result")
        if isinstance(result, dict) and "message" in result:
            rewrite(result)

    return edit


def test_a_band_widened_on_a_held_out_run_keeps_both_similarity_checks() -> None:
    # (a lexical `similar` and one by meaning share a name; widening the length band of
    # their entry rebuilt its checks by name, and one of the two was lost)
    from recorder.learn.run import HeldOut, HeldOutFailure, _adjust
    from recorder.replay.verdict.diff import Mismatch
    from recorder.rules.noise import Proposal, Proposals

    path, scope = "$.result.message.parts[*].text", "02-ask.http#1"

    def entry(*checks: Check) -> Proposal:
        return Proposal("checks", path, None, "varies", ("f exchange 1",), (), 1, scope, checks)

    lexical = Check("similar", 0.4, "lowest seen 0.62 (token_set_ratio)")
    meaning = Check("similar", {"method": "embedding", "model": "e", "min": 0.8}, "lowest 0.9")
    final = entry(Check("length", {"min": 30, "max": 400}, "seen 40..300"), lexical, meaning)
    without = entry(Check("length", {"min": 35, "max": 380}, "seen 44..300"), lexical, meaning)
    mismatch = Mismatch(path.replace("[*]", "[0]"), "", "Languages: Go, Rust.", check="length")
    held = HeldOut(5, 50, (HeldOutFailure(1, "f exchange 1", scope, (mismatch,)),))
    adjusted, _ = _adjust(Proposals([final]), held, [Proposals([without])])
    (proposal,) = adjusted.rules
    assert [c.name for c in proposal.checks] == ["length", "similar", "similar"]
    assert proposal.checks[1:] == (lexical, meaning)
    assert proposal.checks[0].value == {"min": 15, "max": 400}
