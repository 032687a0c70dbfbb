"""Similarity by meaning: `similar: {method: embedding, model: NAME, min: 0.8}`, the cosine of
the embeddings of the recorded text and the live one, on an OpenAI-compatible `/embeddings`
endpoint (`recorder.checks.openai_compat`: `base_url`, `api_key_env`, `timeout` as for the
model judge).

The lexical `similar` scores 1.0 whenever one text's words hold the other's; an embedding
model scores what the texts mean (a paraphrase high, a contradiction or another answer lower).
Each text's embedding is an answer of the session (`recorder.checks.model_session`): the
recorded text's is asked once per run, and every embedding is cached on disk by (model
name, text), so a re-run pays nothing for unchanged answers.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from recorder.checks.base import Check, CheckContext, CheckOptionError, Outcome
from recorder.checks.model_session import Asked, ModelSession, default_session
from recorder.checks.openai_compat import (
    ENDPOINT_OPTIONS,
    EndpointError,
    EndpointSettings,
    ModelCallError,
    ModelClient,
    Usage,
    read_endpoint,
)
from recorder.checks.verdict_cache import VerdictCache, cache_key

__all__ = [
    "EmbeddingSimilarity",
    "cosine",
    "embedding_spec",
    "embeddings_of",
    "run_embedding",
]

DEFAULT_TIMEOUT = 60.0
_OPTIONS = ("method", "model", "min", "timeout", *ENDPOINT_OPTIONS)
_ANYWHERE = EndpointSettings()  # (from the environment)


@dataclass(frozen=True)
class EmbeddingSimilarity:
    """A `similar: {method: embedding, …}` check's options; `session` as a model judge's."""

    model: str
    least: float
    endpoint: EndpointSettings = _ANYWHERE
    timeout: float = DEFAULT_TIMEOUT
    session: ModelSession | None = field(default=None, compare=False, repr=False)


def embedding_spec(value: Mapping[str, Any]) -> EmbeddingSimilarity:
    """A `similar: {method: embedding, model: NAME, min: F}` mapping read; CheckOptionError."""
    try:
        endpoint = read_endpoint(value)
    except EndpointError as exc:
        raise CheckOptionError(str(exc)) from None
    unknown = sorted(str(k) for k in value if k not in _OPTIONS)
    if unknown:
        raise CheckOptionError(f"unknown option {unknown[0]!r} (options: {', '.join(_OPTIONS)})")
    model = value.get("model")
    if not isinstance(model, str) or not model.strip():
        raise CheckOptionError(
            "model: expected the embedding model's name, such as nomic-embed-text or "
            "text-embedding-3-small"
        )
    least = value.get("min")
    if isinstance(least, bool) or not isinstance(least, int | float) or not -1 <= least <= 1:
        raise CheckOptionError("min: expected a cosine similarity from -1 to 1, such as 0.8")
    timeout = value.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 3600:
        raise CheckOptionError("timeout: expected seconds, more than 0 and at most 3600")
    return EmbeddingSimilarity(model.strip(), float(least), endpoint, float(timeout))


def cosine(first: Sequence[float], second: Sequence[float]) -> float:
    """The cosine similarity of two vectors (ValueError: not the same length, or a zero one)."""
    if len(first) != len(second):
        raise ValueError(f"vectors of {len(first)} and {len(second)} numbers")
    norms = math.sqrt(math.fsum(x * x for x in first)) * math.sqrt(math.fsum(y * y for y in second))
    if not norms:
        raise ValueError("a vector of zeros")
    return math.fsum(x * y for x, y in zip(first, second, strict=True)) / norms


def embeddings_of(
    session: ModelSession,
    client: ModelClient,
    model: str,
    texts: Sequence[str],
    cache: VerdictCache | None,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Asked]:
    """One answer (`{"embedding": [...]}`) per text, asked of the session (cached)."""
    return [
        session.ask(
            cache_key({"kind": "embedding", "model": model, "text": text}),
            cache,
            functools.partial(_embed, client, model, text, timeout),
            valid=_is_embedding,
        )
        for text in texts
    ]


def run_embedding(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    """Run an embedding `similar` check at one place (see the module docstring)."""
    spec: EmbeddingSimilarity = check.value
    session = spec.session or default_session()
    if session.skip:
        session.note_skipped()
        return Outcome(True, "skipped (--no-judge)")
    if not isinstance(live, str):
        return Outcome(False, f"expected text, got {type(live).__name__}")
    if not isinstance(recorded, str):
        return Outcome(False, f"the recorded value is not text ({type(recorded).__name__})")
    try:
        client = session.client(spec.endpoint)
    except EndpointError as exc:
        return Outcome(False, f"error: {exc} ({check.where})")
    asked = embeddings_of(
        session, client, spec.model, [recorded, live], session.cache(check.source), spec.timeout
    )
    try:
        first, second = (future.result()["embedding"] for future in asked)
        score = cosine(first, second)
    except ModelCallError as exc:
        return Outcome(False, f"error: {exc} ({check.where})")
    except ValueError as exc:
        return Outcome(False, f"error: the embeddings of {spec.model}: {exc} ({check.where})")
    session.note_embedding()
    if score < spec.least:
        return Outcome(
            False,
            f"{score:.2f} < {spec.least:.2f} (cosine of {spec.model} embeddings to the "
            "recorded text)",
        )
    return Outcome(True, f"{score:.2f}")


def _embed(
    client: ModelClient, model: str, text: str, timeout: float
) -> tuple[dict[str, Any], Usage]:
    found = client.embed(model, [text], timeout=timeout)
    return {"embedding": list(found.vectors[0])}, found.usage


def _is_embedding(answer: dict[str, Any]) -> bool:
    vector = answer.get("embedding")
    return (
        isinstance(vector, list)
        and bool(vector)
        and all(isinstance(x, int | float) and not isinstance(x, bool) for x in vector)
    )
