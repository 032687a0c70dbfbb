"""The model checks of a run's rules: which they are, whether each has an endpoint to use (a
usage error before anything is sent when not), and the rules' checks bound to the run's
`ModelSession` (`recorder.checks.model_session`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import replace

from recorder.checks.base import Check
from recorder.checks.entries import CheckEntry
from recorder.checks.model_session import DEFAULT_CONCURRENCY, ModelEndpointError, ModelSession
from recorder.checks.openai_compat import EndpointError, resolve_endpoint

__all__ = ["bind_model_checks", "endpoint_problems", "model_checks", "start_session"]


def _is_model_check(check: Check) -> bool:
    return hasattr(check.value, "endpoint") and hasattr(check.value, "session")


def model_checks(entries: Iterable[CheckEntry]) -> list[Check]:
    """The checks among `entries` that ask a model (a model judge, embedding similarity)."""
    return [check for entry in entries for check in entry.checks if _is_model_check(check)]


def endpoint_problems(entries: Iterable[CheckEntry], environ: Mapping[str, str]) -> list[str]:
    """`rules.yaml:12: judge model M: no model endpoint: …` for each model check with no
    endpoint to use in `environ` (the first of each kind of problem)."""
    problems: dict[str, str] = {}
    for check in model_checks(entries):
        try:
            resolve_endpoint(check.value.endpoint, environ)
        except EndpointError as exc:
            problems.setdefault(str(exc), f"{check.where}: {check.label}: {exc}")
    return list(problems.values())


def bind_model_checks(
    entries: tuple[CheckEntry, ...], session: ModelSession
) -> tuple[CheckEntry, ...]:
    """`entries` with their model checks bound to `session` (the others as they are)."""

    def bound(entry: CheckEntry) -> CheckEntry:
        if not any(_is_model_check(check) for check in entry.checks):
            return entry
        checks = tuple(
            replace(check, value=replace(check.value, session=session))
            if _is_model_check(check)
            else check
            for check in entry.checks
        )
        return replace(entry, checks=checks)

    return tuple(bound(entry) for entry in entries)


def start_session(
    entries: Iterable[CheckEntry],
    *,
    skip: bool = False,
    concurrency: int = DEFAULT_CONCURRENCY,
    environ: Mapping[str, str] | None = None,
) -> ModelSession | None:
    """The session of a run whose rules hold `entries`: None when no check asks a model.
    ModelEndpointError (a usage error naming the rules file's line) when one has no endpoint
    to use and the run does not `skip` them: said before anything is sent."""
    entries = list(entries)
    if not model_checks(entries):
        return None
    environ = dict(os.environ if environ is None else environ)
    if not skip:
        problems = endpoint_problems(entries, environ)
        if problems:
            raise ModelEndpointError("\n".join(problems))
    return ModelSession(environ, skip=skip, concurrency=concurrency)
