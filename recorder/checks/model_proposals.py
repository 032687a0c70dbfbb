"""What `recorder learn` proposes with a model, beside what held in every wording
(`recorder.checks.facts`), at a place whose prose varied between live runs:

- `similar: {method: embedding, model: M, min: F}` (`--embedding-model M`): the floor below the
  lowest cosine seen between the embeddings of any two texts at the place (the recording and
  every live run), by their spread (0.05 at least), rounded down to 0.01, as the lexical
  floor is learned; the embeddings asked of the endpoint, cached as the check's are;
- a model judge, `judge: {model: M}`, where the facts alone are weak: a prose answer (twelve
  words or more) whose fact checks hold fewer than three facts, or only facts `learn` marked
  weak. It is live only when an endpoint is configured and `--judge-model M` names the
  model; else it is written commented out (`# - judge: …`), for the user to name a model and
  set an endpoint: a regression that keeps every fact (a finding declared harmless, advice
  turned wrong) is then caught by meaning.

`ModelProposer` is handed to the learner as one more source of checks (the learner calls it
with the texts of each place and the checks the facts proposed there); it never raises: an
endpoint that fails is a note, and nothing is proposed from it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from recorder.checks.embedding import cosine, embeddings_of
from recorder.checks.facts import Check, Texts
from recorder.checks.model_session import ModelEndpointError, ModelSession
from recorder.checks.openai_compat import (
    EndpointError,
    EndpointSettings,
    ModelCallError,
    resolve_endpoint,
)

__all__ = ["ModelProposer", "facts_are_weak", "learn_with_models"]

_PROSE_WORDS = 12
_ENOUGH_FACTS = 3
_FACT_CHECKS = ("contains", "contains_all", "facts", "claims")
_LEAST_MARGIN = 0.05
_PLACEHOLDER = "YOUR-MODEL"


def facts_are_weak(texts: Sequence[str], proposed: Sequence[Check]) -> bool:
    """Whether `texts` are prose whose facts (`proposed`'s fact checks) say little: fewer
    than three facts held, or only ones marked weak."""
    words = sorted(len(text.split()) for text in texts)
    if not words or words[len(words) // 2] < _PROSE_WORDS:
        return False
    facts = [c for c in proposed if c.name in _FACT_CHECKS]
    held = sum(len(c.value) if isinstance(c.value, list) else 1 for c in facts)
    return held < _ENOUGH_FACTS or all("weak" in c.seen for c in facts)


@dataclass(frozen=True)
class ModelProposer:
    """The model checks `learn` proposes (see the module docstring). `session`: where the
    endpoint is (None: none is configured); `rules_file`: where the cache goes (beside it)."""

    judge_model: str | None = None
    embedding_model: str | None = None
    session: ModelSession | None = None
    rules_file: str | None = None

    def __call__(
        self, places: Sequence[Texts], proposed: Sequence[Check]
    ) -> tuple[list[Check], list[str]]:
        """(the checks, the notes) for one place's texts, beside `proposed`."""
        texts = [t for place in places for t in (*place.lives, place.recorded) if t is not None]
        checks: list[Check] = []
        notes: list[str] = []
        if self.embedding_model is not None and self.session is not None:
            found = self._embedding_floor(places)
            if isinstance(found, str):
                notes.append(found)
            elif found is not None:
                checks.append(found)
        if facts_are_weak(texts, proposed):
            checks.append(self._judge())
        return checks, notes

    def _judge(self) -> Check:
        live = self.judge_model is not None and self.session is not None and not self.session.skip
        seen = "the facts alone are weak here: a model judges the meaning"
        if live:
            return Check("judge", {"model": self.judge_model}, seen)
        why = (
            "name your model and set its endpoint (OPENAI_BASE_URL, OPENAI_API_KEY), then uncomment"
            if self.judge_model is None
            else "set its endpoint (OPENAI_BASE_URL, OPENAI_API_KEY), then uncomment"
        )
        return Check(
            "judge", {"model": self.judge_model or _PLACEHOLDER}, f"{seen}: {why}", commented=True
        )

    def _embedding_floor(self, places: Sequence[Texts]) -> Check | str | None:
        """The `similar` check by meaning, a note saying why there is none, or None."""
        assert self.session is not None and self.embedding_model is not None
        model = self.embedding_model
        groups = [
            list(dict.fromkeys([*p.lives, *([p.recorded] if p.recorded is not None else [])]))
            for p in places
        ]
        distinct = list(dict.fromkeys(text for group in groups for text in group))
        if not any(len(group) > 1 for group in groups):
            return None
        try:
            client = self.session.client(EndpointSettings())
            asked = embeddings_of(
                self.session, client, model, distinct, self.session.cache(self.rules_file)
            )
            vectors = {
                text: future.result()["embedding"]
                for text, future in zip(distinct, asked, strict=True)
            }
            scores = [
                cosine(vectors[first], vectors[second])
                for group in groups
                for first, second in combinations(group, 2)
            ]
        except (EndpointError, ModelCallError, ValueError) as exc:
            return f"no embedding floor learned ({model}): {exc}"
        lowest, spread = min(scores), max(scores) - min(scores)
        floor = math.floor((lowest - max(spread, _LEAST_MARGIN)) * 100 + 1e-9) / 100
        if floor <= 0:
            return f"no embedding floor learned ({model}): the texts are too far apart"
        seen = f"lowest seen {lowest:.2f} (cosine of {model} embeddings)"
        return Check("similar", {"method": "embedding", "model": model, "min": floor}, seen)


def learn_with_models(
    environ: Mapping[str, str],
    *,
    judge_model: str | None = None,
    embedding_model: str | None = None,
    rules_file: str | None = None,
) -> ModelProposer:
    """The proposer of a `learn` (`--judge-model`, `--embedding-model`): its session is one
    when an endpoint is configured in `environ` (the caller closes it). ModelEndpointError
    when an embedding floor is asked for and no endpoint is set: it cannot be learned."""
    try:
        resolve_endpoint(EndpointSettings(), environ)
    except EndpointError as exc:
        if embedding_model is not None:
            raise ModelEndpointError(f"--embedding-model {embedding_model}: {exc}") from None
        return ModelProposer(judge_model, None, None, rules_file)
    return ModelProposer(judge_model, embedding_model, ModelSession(environ), rules_file)
