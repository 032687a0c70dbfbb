"""The model judge and embedding similarity (`judge: {model: …}`, `similar: {method: embedding}`)
as the player runs them (`run_check`), bound to a session (`recorder.checks.model_session`) on a
scripted model server of our own on loopback: the request sent, strict reading of the
verdict, votes and their agreement, the unstable judge, the cache, the bound on requests in
flight, --no-judge, and errors that name the rules file's line."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from model_server import ModelServer, Reply, answers_in, facts_judge

from recorder.checks.model_judge import DEFAULT_RUBRIC, VerdictError, parse_verdict
from recorder.checks.model_rules import bind_model_checks, start_session
from recorder.checks.model_session import ModelEndpointError, ModelSession
from recorder.checks.model_usage import usage_json, usage_lines
from recorder.checks.openai_compat import RetryPolicy
from recorder.checks.vocabulary import Check, CheckContext, Outcome, run_check
from recorder.errors import RulesError
from recorder.rules.ruleset import load_rules

KEY = "sk-test-Hk3mQ9pL2xV7cR4w"
RECORDED = "Reviewed 1 file: src/cart.py:2 has a TODO [todo]."
REWORDED = "One finding. [todo] at src/cart.py:2: a TODO is left."
WRONG = "One finding. [todo] at src/cart.py:7: a TODO is left."
REQUEST = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "SendMessage",
    "params": {"message": {"role": "ROLE_USER", "parts": [{"text": "Review my diff"}]}},
}
CONTEXT = CheckContext("01-review.http", 3, "SendMessage", "$.result.text", None, REQUEST)

_sessions: list[ModelSession] = []


@pytest.fixture(autouse=True)
def _close_sessions() -> Iterator[None]:
    yield
    while _sessions:
        _sessions.pop().close()


def session_of(server: ModelServer | None, **options: Any) -> ModelSession:
    environ = {"OPENAI_API_KEY": KEY}
    if server is not None:
        environ["OPENAI_BASE_URL"] = server.base_url
    options.setdefault("retry", RetryPolicy(retries=1, backoff=0.001, max_wait=0.01))
    made = ModelSession(environ, **options)
    _sessions.append(made)
    return made


def checks_of(folder: Path, item: str, session: ModelSession) -> list[Check]:
    """The checks of a rules file in `folder` whose one entry asserts `item` (line 4)."""
    path = folder / "rules.yaml"
    path.write_text(f'checks:\n  - path: "$.result.text"\n    assert:\n      - {item}\n')
    entries = bind_model_checks(load_rules(str(path)).checks, session)
    return list(entries[0].checks)


def judged(check: Check, live: str, recorded: str = RECORDED) -> Outcome:
    return run_check(check, recorded, live, CONTEXT)


def self_judged(body: dict[str, Any]) -> bool:
    recorded, live = answers_in(body)
    return recorded == live


# --- the verdict, read strictly ------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        '{"pass": true, "reason": "same", "differences": []}',
        '  {"pass": true, "reason": "same", "differences": []}\n',
        '```json\n{"pass": true, "reason": "same", "differences": []}\n```',
        '<think>they agree</think>\n{"pass": true, "reason": "same", "differences": []}',
    ],
)
def test_a_verdict_is_read(reply: str) -> None:
    verdict = parse_verdict(reply)
    assert verdict.passed and verdict.reason == "same" and verdict.differences == ()


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("Yes, the live answer passes.", "not JSON"),
        ('{"pass": true}', "no 'reason', 'differences'"),
        ('{"pass": "yes", "reason": "", "differences": []}', '"pass" is not true or false'),
        ('{"pass": true, "reason": 1, "differences": []}', '"reason" is not a string'),
        ('{"pass": true, "reason": "", "differences": "none"}', '"differences" is not a list'),
        ('{"pass": true, "reason": "", "differences": [], "score": 5}', "not asked for: 'score'"),
        ('[{"pass": true, "reason": "", "differences": []}]', "a JSON list, not an object"),
        ('{"pass": true, "reason": "", "differences": []} and more', "not JSON"),
        (
            'Here it is:\n```json\n{"pass": true, "reason": "", "differences": []}\n```',
            "not JSON",
        ),
    ],
)
def test_anything_else_is_not_a_verdict(reply: str, problem: str) -> None:
    with pytest.raises(VerdictError) as caught:
        parse_verdict(reply)
    assert problem in caught.value.problem


# --- the rules file ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "problem"),
    [
        (f"judge: {{model: m, api_key: {KEY}}}", "a key is never written in a rules file"),
        ("judge: {model: m, rubrik: be kind}", "unknown option 'rubrik'"),
        ("judge: {rubric: be kind}", "model: expected the model's name"),
        ("judge: {model: m, votes: 0}", "votes: expected a whole number from 1 to 25"),
        ("judge: {model: m, self_check: maybe}", "self_check: expected true or false"),
        ("judge: {model: m, timeout: 0}", "timeout: expected seconds"),
        ("similar: {method: embedding, min: 0.8}", "model: expected the embedding model's name"),
        ("similar: {method: embedding, model: e, min: 2}", "min: expected a cosine similarity"),
    ],
)
def test_bad_options_are_an_error_at_the_rules_files_line(
    item: str, problem: str, tmp_path: Path
) -> None:
    with pytest.raises(RulesError) as caught:
        checks_of(tmp_path, item, session_of(None))
    message = str(caught.value)
    assert f"{tmp_path / 'rules.yaml'}:4" in message and problem in message
    assert KEY not in message


def test_a_run_without_an_endpoint_is_a_usage_error_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    (tmp_path / "rules.yaml").write_text(
        'checks:\n  - path: "$..text"\n    assert:\n      - contains: a\n'
        "      - judge: {model: llama3.2}\n"
    )
    rules = load_rules(str(tmp_path / "rules.yaml"))
    with pytest.raises(ModelEndpointError) as caught:
        start_session(rules.checks, environ={})
    assert str(caught.value).startswith(f"{tmp_path / 'rules.yaml'}:5: judge model llama3.2:")
    assert "no model endpoint" in str(caught.value)
    skipping = start_session(rules.checks, skip=True, environ={})
    assert skipping is not None and skipping.skip
    none = start_session(load_rules(None).checks, environ={})
    assert none is None  # (no model check: no session)


# --- what the judge sends and decides ------------------------------------------------------------


def test_the_request_holds_the_rubric_the_question_and_both_answers(tmp_path: Path) -> None:
    with ModelServer() as server:
        session = session_of(server)
        (check,) = checks_of(tmp_path, "judge: {model: m1, self_check: false}", session)
        outcome = judged(check, REWORDED)
        (check,) = checks_of(
            tmp_path,
            'judge: {model: m1, rubric: "Never advise keeping a key in the code."}',
            session,
        )
        judged(check, REWORDED)
    assert outcome == Outcome(True, "1/1 votes pass")
    default, custom = server.requests[0]["body"], server.requests[1]["body"]
    system, user = default["messages"]
    assert system["role"] == "system" and system["content"].startswith(DEFAULT_RUBRIC)
    assert '{"pass": true or false, "reason"' in system["content"]
    assert user["content"] == (
        '<request operation="SendMessage">\nReview my diff\n</request>\n\n'
        f"<recorded_answer>\n{RECORDED}\n</recorded_answer>\n\n"
        f"<live_answer>\n{REWORDED}\n</live_answer>"
    )
    assert default["model"] == "m1" and default["temperature"] == 0 and default["seed"] == 0
    assert custom["messages"][0]["content"].startswith("Never advise keeping a key in the code.")
    assert DEFAULT_RUBRIC not in custom["messages"][0]["content"]


def test_a_changed_meaning_fails_with_the_differences_named(tmp_path: Path) -> None:
    with ModelServer() as server:
        (check,) = checks_of(tmp_path, "judge: {model: m1}", session_of(server))
        outcome = judged(check, WRONG)
    assert not outcome.passed
    assert outcome.reason == (
        "the judge says no: the facts differ; differences: src/cart.py:2 is missing; "
        "src/cart.py:7 is made up"
    )
    assert check.label == "judge model m1"


def test_votes_pass_by_majority_and_the_agreement_is_reported(tmp_path: Path) -> None:
    def flaky(body: dict[str, Any]) -> dict[str, Any]:
        verdict = facts_judge(body)
        if not self_judged(body) and body["seed"] == 1:
            verdict = {"pass": False, "reason": "hmm", "differences": ["tone"]}
        return verdict

    with ModelServer(judge=flaky) as server:
        session = session_of(server)
        (check,) = checks_of(tmp_path, "judge: {model: m1, votes: 3}", session)
        outcome = judged(check, REWORDED)
    assert outcome == Outcome(True, "2/3 votes pass")
    assert server.count() == 6  # 3 votes, and 3 for the self-check
    (judgment,) = session.usage().judgments
    assert (judgment.votes, judgment.passed_votes, judgment.verdict) == (3, 2, "passed")
    assert round(judgment.agreement, 2) == 0.67 and judgment.self_check == (3, 3)
    line = usage_lines(session.usage())[0]
    assert line.startswith("model judge: 1 verdict: 1 passed, 0 failed; votes unanimous in 0 of 1")
    assert "(least 2/3: 01-review.http#3 $.result.text)" in line
    assert usage_json(session.usage())["judgments"][0]["agreement"] == 0.667


def test_a_tie_fails(tmp_path: Path) -> None:
    def split(body: dict[str, Any]) -> dict[str, Any]:
        passed = self_judged(body) or body["seed"] == 0
        return {"pass": passed, "reason": "split", "differences": []}

    with ModelServer(judge=split) as server:
        (check,) = checks_of(tmp_path, "judge: {model: m1, votes: 2}", session_of(server))
        assert judged(check, REWORDED) == Outcome(
            False, "the judge says no (1/2 votes pass): split"
        )


def test_a_judge_that_fails_the_recorded_answer_against_itself_is_unstable(
    tmp_path: Path,
) -> None:
    def unsteady(body: dict[str, Any]) -> dict[str, Any]:
        if self_judged(body) and body["seed"] == 2:
            return {"pass": False, "reason": "the wording differs", "differences": []}
        return facts_judge(body)

    with ModelServer(judge=unsteady) as server:
        session = session_of(server)
        (check,) = checks_of(tmp_path, "judge: {model: m1, votes: 3}", session)
        outcome = judged(check, REWORDED)
        again = judged(check, REWORDED.replace("One finding", "A single finding"))
    assert not outcome.passed
    assert outcome.reason == (
        'unstable judge: it failed the recorded answer against itself in 1 of 3 votes ("the '
        'wording differs"); its verdict here (pass, 3/3 votes pass) cannot be trusted'
    )
    assert not again.passed and again.reason.startswith("unstable judge")
    # the self-check is asked once per place: 3 votes, then 3 for each live answer
    assert sum(self_judged(r["body"]) for r in server.requests) == 3
    assert server.count() == 9
    usage = session.usage()
    assert usage.count("unstable") == 2 and usage.count("passed") == 0
    lines = usage_lines(usage)
    assert lines[0].startswith("model judge: 2 verdicts: 0 passed, 0 failed, 2 unstable")
    assert lines[1] == f"  unstable: 01-review.http#3 $.result.text ({tmp_path}/rules.yaml:4)"
    assert usage_json(usage)["verdicts"]["unstable"] == 2


def test_an_answer_identical_to_the_recording_is_its_own_self_check(tmp_path: Path) -> None:
    with ModelServer() as server:
        (check,) = checks_of(tmp_path, "judge: {model: m1, votes: 3}", session_of(server))
        assert judged(check, RECORDED).passed
    assert server.count() == 3


def test_a_reply_that_is_not_the_verdict_is_an_error_naming_the_line_and_what_came_back(
    tmp_path: Path,
) -> None:
    chatty = "Sure! Looking at both answers, I think the live one passes. " * 10
    with ModelServer(judge=lambda body: chatty) as server:
        session = session_of(server)
        (check,) = checks_of(tmp_path, "judge: {model: m1, self_check: false}", session)
        outcome = judged(check, REWORDED)
        judged(check, REWORDED)
    assert not outcome.passed
    head = (
        "error: the judge answered something other than the JSON verdict asked for "
        f'({tmp_path}/rules.yaml:4): not JSON; got "Sure! Looking at both answers'
    )
    assert outcome.reason.startswith(head)
    assert outcome.reason.endswith('…"') and len(outcome.reason) < len(head) + 200
    assert server.count() == 2  # (not kept: asked again)
    assert session.usage().count("error") == 2


def test_a_model_that_cannot_be_reached_is_an_error_naming_the_line(tmp_path: Path) -> None:
    script = [Reply(500, {"error": {"message": "boom"}}) for _ in range(5)]
    with ModelServer(script=script) as server:
        (check,) = checks_of(tmp_path, "judge: {model: m1}", session_of(server))
        outcome = judged(check, REWORDED)
    assert not outcome.passed
    assert outcome.reason.startswith(f"error: POST {server.base_url}/chat/completions: HTTP 500")
    assert outcome.reason.endswith(f"(after 2 requests) ({tmp_path}/rules.yaml:4)")


def test_no_judge_skips_and_counts_and_sends_nothing(tmp_path: Path) -> None:
    with ModelServer() as server:
        session = session_of(server, skip=True)
        checks = [
            *checks_of(tmp_path, "judge: {model: m1}", session),
            *checks_of(tmp_path, "similar: {method: embedding, model: e1, min: 0.9}", session),
        ]
        outcomes = [judged(check, WRONG) for check in checks]
    assert outcomes == [Outcome(True, "skipped (--no-judge)")] * 2
    assert server.requests == []
    usage = session.usage()
    assert usage.skipped == 2 and usage.judgments == ()
    assert usage_lines(usage) == ["model checks: 2 skipped (--no-judge): not judged, not passed"]
    assert usage_json(usage)["skipped"] == 2


# --- the cache -----------------------------------------------------------------------------------


def test_a_second_run_pays_nothing_for_unchanged_answers(tmp_path: Path) -> None:
    with ModelServer() as server:
        first = session_of(server)
        (check,) = checks_of(tmp_path, "judge: {model: m1, votes: 3}", first)
        assert judged(check, REWORDED).passed
        assert not judged(check, WRONG).passed
        asked = server.count()
        first.close()
        second = session_of(server)  # (a new run: nothing in memory)
        (check,) = checks_of(tmp_path, "judge: {model: m1, votes: 3}", second)
        assert judged(check, REWORDED).passed
        outcome = judged(check, WRONG)
    assert asked == 9 and server.count() == asked  # 0 requests the second time
    assert outcome.reason.startswith("the judge says no (0/3 votes pass): the facts differ")
    usage = second.usage()
    assert usage.requests == 0 and usage.cached == 12  # 9 answers, 3 asked twice in the run
    cache = tmp_path / ".recorder-cache"
    assert (cache / ".gitignore").read_text().endswith("*\n")
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172")
    entries = list(cache.rglob("*.json"))
    assert len(entries) == 9
    for entry in entries:
        answer = json.loads(entry.read_text())
        assert set(answer) == {"pass", "reason", "differences"}
        assert RECORDED not in entry.read_text()  # (the answer only, not what was judged)


def test_the_cache_key_is_the_model_name_not_the_endpoint(tmp_path: Path) -> None:
    with ModelServer() as one, ModelServer() as other:
        (check,) = checks_of(tmp_path, "judge: {model: m1}", session_of(one))
        judged(check, REWORDED)
        (check,) = checks_of(tmp_path, "judge: {model: m1}", session_of(other))
        judged(check, REWORDED)
        (check,) = checks_of(tmp_path, "judge: {model: m2}", session_of(other))
        judged(check, REWORDED)
    assert one.count() == 2 and other.count() == 2  # m1 asked once, m2 once


def test_an_entry_edited_by_hand_is_asked_again(tmp_path: Path) -> None:
    with ModelServer() as server:
        (check,) = checks_of(tmp_path, "judge: {model: m1, self_check: false}", session_of(server))
        judged(check, REWORDED)
        (entry,) = (tmp_path / ".recorder-cache").rglob("*.json")
        entry.write_text('{"pass": "maybe"}')
        (check,) = checks_of(tmp_path, "judge: {model: m1, self_check: false}", session_of(server))
        assert judged(check, REWORDED).passed
    assert server.count() == 2
    assert json.loads(entry.read_text())["pass"] is True


def test_the_key_is_never_on_disk_nor_in_what_the_checks_say_nor_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # (httpx and httpcore log every request at DEBUG)
    with ModelServer(key=KEY) as server:
        session = session_of(server)
        (check,) = checks_of(tmp_path, "judge: {model: m1, votes: 3}", session)
        outcomes = [judged(check, REWORDED), judged(check, WRONG)]
    with ModelServer(key="another") as wrong:  # (a 401 that echoes the key sent)
        (check,) = checks_of(tmp_path, "judge: {model: m2}", session_of(wrong))
        outcomes.append(judged(check, REWORDED))
    assert outcomes[2].reason.startswith("error: POST") and "Bearer ***" in outcomes[2].reason
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
    said = json.dumps([list(o) for o in outcomes]) + json.dumps(usage_json(session.usage()))
    assert KEY not in said
    assert "HTTP Request: POST" in caplog.text and KEY not in caplog.text
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path


# --- bounded -------------------------------------------------------------------------------------


@pytest.mark.parametrize("bound", [2, 4])
def test_requests_in_flight_are_bounded_whatever_the_jobs(bound: int, tmp_path: Path) -> None:
    # 4 files played at once (--jobs 4), 8 answers: the server holds each request until
    # `bound` are in flight, so it sees the bound exactly (more if the bound does not hold)
    lives = [REWORDED.replace("One finding", f"Finding {n}") for n in range(8)]
    with ModelServer(hold=bound) as server:
        session = session_of(server, concurrency=bound)
        (check,) = checks_of(tmp_path, "judge: {model: m1, self_check: false}", session)
        with ThreadPoolExecutor(4) as jobs:
            outcomes = list(jobs.map(lambda live: judged(check, live), lives))
    assert all(o.passed for o in outcomes)
    assert server.count() == 8
    assert server.max_in_flight == bound


def test_one_answer_asked_by_many_places_at_once_is_asked_once(tmp_path: Path) -> None:
    with ModelServer() as server:
        session = session_of(server)
        (check,) = checks_of(tmp_path, "judge: {model: m1, self_check: false}", session)
        with ThreadPoolExecutor(4) as jobs:
            outcomes = list(jobs.map(lambda _: judged(check, REWORDED), range(8)))
    assert all(o.passed for o in outcomes)
    assert server.count() == 1
    assert session.usage().cached == 7


# --- embedding similarity ------------------------------------------------------------------------


def test_embedding_similarity_passes_a_paraphrase_and_fails_another_answer(
    tmp_path: Path,
) -> None:
    item = "similar: {method: embedding, model: nomic-embed-text, min: 0.6}"
    with ModelServer() as server:
        session = session_of(server)
        (check,) = checks_of(tmp_path, item, session)
        close = judged(check, "Reviewed one file: src/cart.py:2 has a TODO [todo].")
        far = judged(check, "I cannot help with that request, sorry.")
        judged(check, REWORDED)
    assert close.passed and float(close.reason) > 0.9
    assert not far.passed
    assert far.reason.endswith(
        "< 0.60 (cosine of nomic-embed-text embeddings to the recorded text)"
    )
    # the recorded text's embedding asked once, then one per live answer
    assert server.count("/v1/embeddings") == 4
    assert [r["body"]["model"] for r in server.requests] == ["nomic-embed-text"] * 4
    assert session.usage().embeddings == 3


def test_embeddings_are_cached_on_disk(tmp_path: Path) -> None:
    item = "similar: {method: embedding, model: e1, min: 0.5}"
    with ModelServer() as server:
        (check,) = checks_of(tmp_path, item, session_of(server))
        judged(check, REWORDED)
        (check,) = checks_of(tmp_path, item, session_of(server))
        assert judged(check, REWORDED).passed
    assert server.count("/v1/embeddings") == 2


def test_an_embedding_endpoint_that_fails_is_an_error_naming_the_line(tmp_path: Path) -> None:
    reply = Reply(body={"data": [], "usage": {}})
    with ModelServer(script=[reply, reply]) as server:
        item = "similar: {method: embedding, model: e1, min: 0.5}"
        (check,) = checks_of(tmp_path, item, session_of(server))
        outcome = judged(check, REWORDED)
    assert not outcome.passed
    assert outcome.reason.startswith("error: expected 1 embeddings in data[], got []")
    assert outcome.reason.endswith(f"({tmp_path}/rules.yaml:4)")


def test_a_check_bound_to_no_session_asks_where_the_environment_says_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (a library caller's rules, never bound: the process's own session, which reads the
    # environment at each request, not once)
    path = tmp_path / "rules.yaml"
    path.write_text('checks:\n  - path: "$.result.text"\n    assert:\n      - judge: {model: m}\n')
    (check,) = load_rules(str(path)).checks[0].checks
    with ModelServer() as first, ModelServer() as second:
        for server, live in ((first, REWORDED), (second, WRONG)):
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
            judged(check, live)
    assert first.count() == 2 and second.count() == 1  # (the self-check was cached)


def test_an_answer_that_failed_is_never_counted_as_from_the_cache(tmp_path: Path) -> None:
    # four places ask the same answer at once, while it is being asked: it fails for all
    with ModelServer(judge=lambda body: "no verdict here", delay=0.3) as server:
        session = session_of(server)
        (check,) = checks_of(tmp_path, "judge: {model: m1, self_check: false}", session)
        with ThreadPoolExecutor(4) as jobs:
            outcomes = list(jobs.map(lambda _: judged(check, REWORDED), range(4)))
    assert all(o.reason.startswith("error: the judge answered something other") for o in outcomes)
    assert server.count() < 4  # (asked at once: the in-flight answer was shared)
    assert session.usage().cached == 0
