"""The model judge: `judge: {model: NAME}`, a model of the user's own decides whether the live
answer says what the recorded one said.

    - judge: {model: llama3.2}                          # the default rubric
    - judge: {model: gpt-4o-mini, votes: 3, rubric: "The answer must not tell the user to
               keep a key in the source code."}

Options: `model` (required), `rubric` (what passes; the default below compares the two
answers' meaning), `votes` (k: judged k times, passing by majority, a tie failing; 1 by
default), `self_check` (true by default), `base_url`, `api_key_env` (where the model is:
`recorder.checks.openai_compat`), `timeout` (seconds per request, 60 by default).

The model is sent (`judge_messages`) the rubric and, each in a tag of its own, the request's
text (what the user asked: the text parts of its message, else its JSON), the recorded answer
and the live one; it is asked for one JSON object and nothing else,
`{"pass": bool, "reason": str, "differences": [str]}`, which is read strictly
(`parse_verdict`: exactly those three members, of those types; a reply fenced as a single
```json block, or after a `<think>` block of a reasoning model, is read too). Anything else is
an error of the check naming its rules file's line and what came back (shortened).

Stability: each of the k votes is asked apart (its number is its seed). The recorded answer
judged against itself, with as many votes, is the self-check, asked once per place and run
(and then cached): a judge that fails it is **unstable**, a verdict of its own in the reports
(a failed check whose reason says so, counted apart), never a pass and never a silent flake.
The agreement of the votes (the share that sided with the majority) is in the reports.

Every vote is an answer of the session (`recorder.checks.model_session`): asked once, cached
on disk by (model name, messages, vote number), never asked again for unchanged answers.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from recorder.checks.base import Check, CheckContext, CheckOptionError, Outcome
from recorder.checks.model_session import Asked, ModelSession, default_session
from recorder.checks.model_usage import Judgment
from recorder.checks.openai_compat import (
    ENDPOINT_OPTIONS,
    EndpointError,
    EndpointSettings,
    ModelCallError,
    ModelClient,
    Usage,
    read_endpoint,
)
from recorder.checks.verdict_cache import cache_key

__all__ = [
    "DEFAULT_RUBRIC",
    "MAX_VOTES",
    "ModelJudge",
    "Verdict",
    "VerdictError",
    "judge_messages",
    "model_judge_spec",
    "parse_verdict",
    "request_text",
    "run_model_judge",
    "verdict_of",
]

DEFAULT_RUBRIC = (
    "You are given a request sent to an AI agent, the answer the agent gave when it was "
    "recorded (known to be right), and the answer it gives now (live). The wording may differ "
    "freely: order, phrasing, format, length. The live answer passes when it makes the same "
    "claims as the recorded one (every fact, finding, number, name, file and line, verdict), "
    "contradicts none of them, and adds no claim the recorded answer does not make (nothing "
    "made up). Name each difference in meaning; a difference of wording alone is none."
)
_CONTRACT = (
    "Reply with one JSON object and nothing else:\n"
    '{"pass": true or false, "reason": "why, in one sentence", '
    '"differences": ["each difference in meaning, in a few words"]}\n'
    '"differences" is an empty list when there is none.'
)
_PROMPT_VERSION = 1
"""Part of every cache key: a change of the prompt's words must not reuse old verdicts."""
DEFAULT_TIMEOUT = 60.0
MAX_VOTES = 25
_OPTIONS = ("model", "rubric", "votes", "self_check", "timeout", *ENDPOINT_OPTIONS)
_REQUEST_CHARACTERS = 4000
_SHOWN = 200  # characters of a reply that is not a verdict, in the error


_ANYWHERE = EndpointSettings()  # (from the environment)


@dataclass(frozen=True)
class ModelJudge:
    """A `judge: {model: …}` check's options (see the module docstring); `session` is where it
    asks (bound by the run: `recorder.checks.model_session.bind_model_checks`)."""

    model: str
    rubric: str | None = None
    votes: int = 1
    self_check: bool = True
    endpoint: EndpointSettings = _ANYWHERE
    timeout: float = DEFAULT_TIMEOUT
    session: ModelSession | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        """How reports name it: `judge model llama3.2`."""
        return f"model {self.model}"


def model_judge_spec(value: Mapping[str, Any]) -> ModelJudge:
    """A `judge: {model: …}` mapping read; CheckOptionError says what is wrong."""
    unknown = sorted(str(k) for k in value if k not in _OPTIONS)
    try:
        endpoint = read_endpoint(value)
    except EndpointError as exc:
        raise CheckOptionError(str(exc)) from None
    if unknown:
        raise CheckOptionError(f"unknown option {unknown[0]!r} (options: {', '.join(_OPTIONS)})")
    model = value.get("model")
    if not isinstance(model, str) or not model.strip():
        raise CheckOptionError("model: expected the model's name, such as llama3.2 or gpt-4o-mini")
    rubric = value.get("rubric")
    if rubric is not None and (not isinstance(rubric, str) or not rubric.strip()):
        raise CheckOptionError("rubric: expected text saying what passes")
    votes = value.get("votes", 1)
    if isinstance(votes, bool) or not isinstance(votes, int) or not 1 <= votes <= MAX_VOTES:
        raise CheckOptionError(f"votes: expected a whole number from 1 to {MAX_VOTES}")
    self_check = value.get("self_check", True)
    if not isinstance(self_check, bool):
        raise CheckOptionError("self_check: expected true or false")
    return ModelJudge(
        model.strip(),
        rubric,
        votes,
        self_check,
        endpoint,
        _timeout(value.get("timeout", DEFAULT_TIMEOUT)),
    )


def _timeout(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3600:
        raise CheckOptionError("timeout: expected seconds, more than 0 and at most 3600")
    return float(value)


# --- what the model is sent -------------------------------------------------------------------


def judge_messages(
    rubric: str | None, request: str, recorded: str, live: str, operation: str = ""
) -> list[dict[str, str]]:
    """The chat messages of one vote: the rubric and the answer's contract, then the data."""
    system = f"{rubric or DEFAULT_RUBRIC}\n\n{_CONTRACT}"
    asked = f' operation="{_attribute(operation)}"' if operation else ""
    user = (
        f"<request{asked}>\n{request}\n</request>\n\n"
        f"<recorded_answer>\n{recorded}\n</recorded_answer>\n\n"
        f"<live_answer>\n{live}\n</live_answer>"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _attribute(text: str) -> str:
    return re.sub(r'["<>\n]', " ", text)


def request_text(request: Any) -> str:
    """What the user asked: the text parts of the request's message (JSON-RPC `params.message`,
    or `message` of the HTTP+JSON and gRPC bindings), else the request's JSON, shortened."""
    if request is None:
        return ""
    message = None
    if isinstance(request, Mapping):
        params = request.get("params")
        holder = params if isinstance(params, Mapping) else request
        message = holder.get("message") or holder.get("request")
    parts = message.get("parts") if isinstance(message, Mapping) else None
    if isinstance(parts, list):
        texts = [
            p["text"] for p in parts if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        ]
        if texts:
            return "\n".join(texts)
    text = request if isinstance(request, str) else _json(request)
    return text if len(text) <= _REQUEST_CHARACTERS else text[: _REQUEST_CHARACTERS - 1] + "…"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else _json(value)


# --- what the model answers ---------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """One vote: whether the live answer passes, why, and the differences in meaning named."""

    passed: bool
    reason: str
    differences: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"pass": self.passed, "reason": self.reason, "differences": list(self.differences)}


class VerdictError(ValueError):
    """A reply that is not the verdict asked for: `problem` says what is wrong, `reply` is it."""

    def __init__(self, problem: str, reply: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.reply = reply
        self.usage = Usage()


_FENCED = re.compile(r"\A```(?:json|JSON)?[ \t]*\n(.*)\n```\Z", re.DOTALL)
_THINKING = re.compile(r"\A<think>.*?</think>\s*", re.DOTALL)


def parse_verdict(text: str) -> Verdict:
    """The verdict in a model's reply, read strictly (see the module docstring)."""
    body = _THINKING.sub("", text.strip(), count=1).strip()
    fenced = _FENCED.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        value = json.loads(body)
    except ValueError:
        raise VerdictError("not JSON", text) from None
    return verdict_of(value, text)


def verdict_of(value: Any, reply: str = "") -> Verdict:
    """The verdict a JSON value holds; VerdictError (naming `reply`) when it holds none."""
    if not isinstance(value, dict):
        raise VerdictError(f"a JSON {type(value).__name__}, not an object", reply)
    unknown = sorted(str(k) for k in value if k not in ("pass", "reason", "differences"))
    missing = [k for k in ("pass", "reason", "differences") if k not in value]
    if missing:
        raise VerdictError(f"no {', '.join(repr(k) for k in missing)}", reply)
    if unknown:
        raise VerdictError(f"a member not asked for: {unknown[0]!r}", reply)
    if not isinstance(value["pass"], bool):
        raise VerdictError('"pass" is not true or false', reply)
    if not isinstance(value["reason"], str):
        raise VerdictError('"reason" is not a string', reply)
    differences = value["differences"]
    if not isinstance(differences, list) or not all(isinstance(d, str) for d in differences):
        raise VerdictError('"differences" is not a list of strings', reply)
    return Verdict(value["pass"], value["reason"], tuple(differences))


def _is_verdict(answer: dict[str, Any]) -> bool:
    try:
        verdict_of(answer)
    except VerdictError:
        return False
    return True


# --- the check ----------------------------------------------------------------------------------


def run_model_judge(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    """Run a model judge at one place (see the module docstring)."""
    spec: ModelJudge = check.value
    session = spec.session or default_session()
    if session.skip:
        session.note_skipped()
        return Outcome(True, "skipped (--no-judge)")
    place = _place(context)
    try:
        client = session.client(spec.endpoint)
    except EndpointError as exc:
        return _error(session, check, place, f"{exc} ({check.where})")
    cache = session.cache(check.source)
    request = request_text(context.request)
    recorded_text, live_text = _as_text(recorded), _as_text(live)

    def votes(answer: str) -> list[Asked]:
        messages = judge_messages(spec.rubric, request, recorded_text, answer, context.title)
        return [
            session.ask(
                _key(spec.model, messages, vote),
                cache,
                functools.partial(_vote, client, spec, messages, vote),
                valid=_is_verdict,
            )
            for vote in range(spec.votes)
        ]

    live_votes = votes(live_text)
    same = live_text == recorded_text
    self_votes = live_votes if same else votes(recorded_text) if spec.self_check else []
    try:
        verdicts = [verdict_of(f.result()) for f in live_votes]
        self_verdicts = [verdict_of(f.result()) for f in self_votes]
    except VerdictError as exc:
        return _error(
            session,
            check,
            place,
            f"the judge answered something other than the JSON verdict asked for "
            f"({check.where}): {exc.problem}; got {_shown(client.scrub(exc.reply))}",
        )
    except ModelCallError as exc:
        return _error(session, check, place, f"{exc} ({check.where})")
    return _decide(
        session, check, spec, place, verdicts, self_verdicts if spec.self_check else None
    )


def _decide(
    session: ModelSession,
    check: Check,
    spec: ModelJudge,
    place: str,
    verdicts: Sequence[Verdict],
    self_verdicts: Sequence[Verdict] | None,
) -> Outcome:
    """The majority of `verdicts`, unless the self-check failed: the judge is unstable."""
    passed = sum(v.passed for v in verdicts)
    held = passed * 2 > len(verdicts)
    tally = f"{passed}/{len(verdicts)} votes pass"
    self_check = None
    if self_verdicts is not None:
        self_check = (len(self_verdicts), sum(v.passed for v in self_verdicts))
    judgment = Judgment(place, check.where, spec.model, len(verdicts), passed, "", self_check)
    if self_check is not None and self_check[1] < self_check[0]:
        failed = next(v for v in self_verdicts or () if not v.passed)
        here = ("pass" if held else "fail") + (f", {tally}" if len(verdicts) > 1 else "")
        reason = (
            f"unstable judge: it failed the recorded answer against itself in "
            f"{self_check[0] - self_check[1]} of {self_check[0]} votes ({_shown(failed.reason)}); "
            f"its verdict here ({here}) cannot be trusted"
        )
        session.note_judgment(replace(judgment, verdict="unstable", reason=reason))
        return Outcome(False, reason)
    if held:
        session.note_judgment(replace(judgment, verdict="passed"))
        return Outcome(True, tally)
    failed = next(v for v in verdicts if not v.passed)
    reason = "the judge says no" + (f" ({tally})" if len(verdicts) > 1 else "")
    reason += f": {failed.reason}"
    if failed.differences:
        reason += "; differences: " + "; ".join(failed.differences)
    session.note_judgment(replace(judgment, verdict="failed", reason=reason))
    return Outcome(False, reason)


def _error(session: ModelSession, check: Check, place: str, problem: str) -> Outcome:
    spec: ModelJudge = check.value
    reason = f"error: {problem}"
    session.note_judgment(Judgment(place, check.where, spec.model, 0, 0, "error", None, reason))
    return Outcome(False, reason)


def _key(model: str, messages: list[dict[str, str]], vote: int) -> str:
    return cache_key(
        {
            "kind": "judge",
            "prompt": _PROMPT_VERSION,
            "model": model,
            "messages": messages,
            "vote": vote,
            "temperature": 0,
        }
    )


def _vote(
    client: ModelClient, spec: ModelJudge, messages: list[dict[str, str]], vote: int
) -> tuple[dict[str, Any], Usage]:
    answer = client.chat(spec.model, messages, seed=vote, timeout=spec.timeout)
    try:
        verdict = parse_verdict(answer.content)
    except VerdictError as exc:
        exc.usage = answer.usage  # (it cost what it cost)
        raise
    return verdict.as_json(), answer.usage


def _place(context: CheckContext) -> str:
    where = f"{context.file}#{context.exchange}" if context.exchange else context.file
    frame = f" frame {context.frame}" if context.frame is not None else ""
    return f"{where} {context.path}{frame}".strip()


def _shown(text: str) -> str:
    text = " ".join(text.split())
    return json.dumps(text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…", ensure_ascii=False)
