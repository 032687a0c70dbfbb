"""Checks: assertions on a reply's value at one place, for answers whose wording varies.

An agent that answers through a language model words the same answer differently on every
run; the facts stay. A rules file's `checks` (see `recorder.checks.entries` for the key and
`recorder/default_rules.yaml` for its documentation) names such a place and the checks that
must hold there instead of equality. Each check is data (`Check`: a name and its options)
and one entry of one registry (`CHECKS`: name -> `CheckType`, which reads the options and
runs the check), after promptfoo's assertions: a run gives `Outcome(passed, reason)`, the
reason readable by a person (`"src/payments.py:12" not found`, `12 characters, expected at
least 80`).

    contains, contains_all   the text holds the string (each of the strings)
    contains_any             the text holds one of the strings at least
    facts                    the text states each fact, in any form (`recorder.checks.extract`)
    claims                   facts stated together, as findings, once (`recorder.checks.claims`)
    not_contains             the text holds none of the strings
    matches, not_matches     Python `re.search` finds (does not find) the expression
    length, lines            the number of characters (of lines) within {min, max}
    json                     the text parses as JSON (and validates against a JSON Schema)
    similar                  lexical similarity (rapidfuzz, 0..1) to the recorded value, or
                             by meaning: `{method: embedding, model: M, min: F}` (cosine of a
                             model's embeddings, `recorder.checks.embedding`)
    language                 the text's language (ISO 639-1), by py3langid when installed
    judge                    a Python callable or a command decides (`recorder.checks.judges`),
                             or a model: `{model: M}` (`recorder.checks.model_judge`)

A text check on a live value that is not a string fails with "expected text, got <type>";
`json` takes a value that is JSON already (an object at the place) as it is. Pure: no I/O,
but for `judge` (which runs the user's code) and `language` (an optional import).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from recorder.checks.base import (
    TEXT_OPTIONS,
    Check,
    CheckContext,
    CheckOptionError,
    CheckType,
    Outcome,
    Runner,
)
from recorder.checks.claims import check_claims, parse_claims
from recorder.checks.extract import FactError, describe, facts_in, parse_fact, stated_in
from recorder.checks.judges import CommandJudge, PythonJudge, judge_spec, run_judge
from recorder.checks.language import LANGUAGE_CODE, detect_language
from recorder.checks.lexicon import common_count

__all__ = [
    "CHECKS",
    "TEXT_OPTIONS",
    "Check",
    "CheckContext",
    "CheckOptionError",
    "CheckType",
    "Outcome",
    "run_check",
]


def run_check(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    """Run one check on the live value at a place (the recorded one for `similar`, `judge`).
    A check that cannot run on this value (JSON nested past Python's recursion limit) fails,
    saying why: a replay reports it, it does not stop."""
    try:
        return CHECKS[check.name].run(check, recorded, live, context)
    except (RecursionError, MemoryError) as exc:
        return Outcome(False, f"cannot check this value: {type(exc).__name__}")


# --- reading options ---------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object" if not isinstance(value, Mapping) else "a mapping"
    return type(value).__name__


def _strings(value: Any, *, one: bool = True) -> tuple[str, ...]:
    """A string or a non-empty list of non-empty strings."""
    if isinstance(value, str) and one:
        items: list[Any] = [value]
    elif isinstance(value, list) and value:
        items = value
    else:
        want = "a string or a list of strings" if one else "a list of strings"
        raise CheckOptionError(f"expected {want}, got {_type_name(value)}")
    for item in items:
        if not isinstance(item, str):
            raise CheckOptionError(f"expected strings, got {_type_name(item)} {item!r}")
        if not item:
            raise CheckOptionError("an empty string is in every text: give some text")
    return tuple(items)


def _regex(value: Any) -> str:
    if not isinstance(value, str):
        raise CheckOptionError(f"expected a regular expression, got {_type_name(value)}")
    try:
        re.compile(value)
    except (re.error, OverflowError, RecursionError) as exc:
        raise CheckOptionError(f"bad regular expression {value!r}: {exc}") from None
    return value


def _bounds(value: Any) -> tuple[int | None, int | None]:
    if not isinstance(value, Mapping):
        raise CheckOptionError(f"expected {{min: N, max: N}}, got {_type_name(value)}")
    unknown = sorted(str(k) for k in value if k not in ("min", "max"))
    if unknown:
        raise CheckOptionError(f"unknown option {unknown[0]!r} (options: min, max)")
    if not value:
        raise CheckOptionError("give min, max or both")
    bounds: list[int | None] = []
    for name in ("min", "max"):
        bound = value.get(name)
        if bound is not None and (not isinstance(bound, int) or isinstance(bound, bool)):
            raise CheckOptionError(f"{name}: expected a whole number, got {_type_name(bound)}")
        if bound is not None and bound < 0:
            raise CheckOptionError(f"{name}: expected 0 or more, got {bound}")
        bounds.append(bound)
    low, high = bounds
    if low is not None and high is not None and low > high:
        raise CheckOptionError(f"min {low} is more than max {high}")
    return low, high


def _fraction(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise CheckOptionError(f"{what}: expected a number from 0 to 1, got {_type_name(value)}")
    if not 0 <= value <= 1:
        raise CheckOptionError(f"{what}: expected a number from 0 to 1, got {value}")
    return float(value)


# --- the text checks ---------------------------------------------------------------------------


def _text(live: Any) -> str | Outcome:
    if isinstance(live, str):
        return live
    return Outcome(False, f"expected text, got {_type_name(live)}")


def _quoted(items: tuple[str, ...] | list[str]) -> str:
    return ", ".join(json.dumps(item, ensure_ascii=False) for item in items)


def _fold(check: Check, text: str) -> str:
    return text.casefold() if check.ignore_case else text


def _missing(check: Check, live: Any) -> list[str] | Outcome:
    text = _text(live)
    if isinstance(text, Outcome):
        return text
    folded = _fold(check, text)
    return [item for item in check.value if _fold(check, item) not in folded]


def _contains_all(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    missing = _missing(check, live)
    if isinstance(missing, Outcome):
        return missing
    if missing:
        return Outcome(False, f"{_quoted(missing)} not found")
    return Outcome(True)


def _contains_any(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    missing = _missing(check, live)
    if isinstance(missing, Outcome):
        return missing
    if len(missing) == len(check.value):
        return Outcome(False, f"none of {_quoted(missing)} found")
    return Outcome(True)


def _not_contains(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    missing = _missing(check, live)
    if isinstance(missing, Outcome):
        return missing
    found = [item for item in check.value if item not in missing]
    if found:
        return Outcome(False, f"{_quoted(found)} found")
    return Outcome(True)


def _compiled(check: Check) -> re.Pattern[str]:
    return re.compile(check.value, re.IGNORECASE if check.ignore_case else 0)


def _matches(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    text = _text(live)
    if isinstance(text, Outcome):
        return text
    if _compiled(check).search(text) is None:
        return Outcome(False, f"no match for {json.dumps(check.value, ensure_ascii=False)}")
    return Outcome(True)


def _not_matches(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    text = _text(live)
    if isinstance(text, Outcome):
        return text
    found = _compiled(check).search(text)
    if found is not None:
        pattern = json.dumps(check.value, ensure_ascii=False)
        return Outcome(False, f"{pattern} matches {json.dumps(found.group(), ensure_ascii=False)}")
    return Outcome(True)


def _within(count: int, unit: str, bounds: tuple[int | None, int | None]) -> Outcome:
    low, high = bounds
    noun = unit if count == 1 else unit + "s"
    if low is not None and count < low:
        return Outcome(False, f"{count} {noun}, expected at least {low}")
    if high is not None and count > high:
        return Outcome(False, f"{count} {noun}, expected at most {high}")
    return Outcome(True)


def _length(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    text = _text(live)
    if isinstance(text, Outcome):
        return text
    return _within(len(text), "character", check.value)


def _lines(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    text = _text(live)
    if isinstance(text, Outcome):
        return text
    return _within(len(text.splitlines()), "line", check.value)


# --- facts and claims ---------------------------------------------------------------------------


def _facts_options(value: Any) -> tuple[Any, ...]:
    try:
        return tuple(parse_fact(item) for item in _strings(value))
    except FactError as exc:
        raise CheckOptionError(str(exc)) from None


def _facts(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    text = _text(live)
    if isinstance(text, Outcome):
        return text
    found = facts_in(text)
    missing = [fact for fact in check.value if not stated_in(fact, text, found)]
    if not missing:
        return Outcome(True)
    reason = f"{_quoted([str(fact) for fact in missing])} not found"
    kinds = {fact.kind for fact in missing}
    expected = check.value
    others = [f for f in found if f.kind in kinds and not any(e.matches(f) for e in expected)]
    if others:
        reason += f"; found {_quoted([describe([fact]) for fact in others[:3]])}"
    return Outcome(False, reason)


def _claims_options(value: Any) -> Any:
    try:
        return parse_claims(value)
    except ValueError as exc:
        raise CheckOptionError(str(exc)) from None


def _claims(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    text = _text(live)
    if isinstance(text, Outcome):
        return text
    reasons = check_claims(check.value, text)
    return Outcome(not reasons, "; ".join(reasons))


# --- json --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JsonSchema:
    """A `json` check's schema, checked when read (`check_schema`) and where it came from."""

    schema: Any = field(hash=False)
    origin: str = "the schema"


def _json_options(value: Any) -> JsonSchema | None:
    if value is True:
        return None
    if not isinstance(value, Mapping):
        raise CheckOptionError(
            f"expected true, {{schema: ...}} or {{schema_file: FILE}}, got {_type_name(value)}"
        )
    unknown = sorted(str(k) for k in value if k not in ("schema", "schema_file"))
    if unknown:
        raise CheckOptionError(f"unknown option {unknown[0]!r} (options: schema, schema_file)")
    if len(value) != 1:
        raise CheckOptionError("give schema or schema_file, not both")
    if "schema_file" in value:
        # read by the rules loader (it knows the rules file's folder): a path here is a mistake
        raise CheckOptionError("schema_file must be read by the rules loader")
    return json_schema(value["schema"], "the schema")


def json_schema(schema: Any, origin: str) -> JsonSchema:
    """A JSON Schema checked with jsonschema's `check_schema`; CheckOptionError when bad."""
    import jsonschema  # (imported only when a rules file has a schema)

    if not isinstance(schema, Mapping | bool):
        raise CheckOptionError(f"{origin}: expected a JSON Schema object, got {_type_name(schema)}")
    try:
        validator = jsonschema.validators.validator_for(schema)
        validator.check_schema(schema)  # type: ignore[arg-type]  # (a bool is a schema too)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        at = f" (at {where})" if where else ""
        raise CheckOptionError(f"{origin} is not a valid JSON Schema: {exc.message}{at}") from None
    return JsonSchema(schema, origin)


def _json(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    if isinstance(live, str):
        try:
            value = json.loads(live)
        except ValueError as exc:
            return Outcome(False, f"not JSON: {exc}")
        except RecursionError:
            return Outcome(False, "not JSON this recorder can read: nested too deep")
    else:
        value = live  # a value that is JSON already (an object at the place)
    spec: JsonSchema | None = check.value
    if spec is None:
        return Outcome(True)
    import jsonschema
    import referencing.exceptions

    validator_class = jsonschema.validators.validator_for(spec.schema)
    try:
        errors = sorted(validator_class(spec.schema).iter_errors(value), key=lambda e: list(e.path))
    except referencing.exceptions.Unresolvable as exc:
        # (a $ref to another document: nothing is fetched, so it cannot be followed)
        return Outcome(False, f"{spec.origin} cannot be used: cannot resolve {exc.ref}")
    if errors:
        first = errors[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.path)
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return Outcome(False, f"does not match {spec.origin}: {first.message} at ${where}{more}")
    return Outcome(True)


# --- similar -------------------------------------------------------------------------------------

SIMILAR_METHODS = ("ratio", "partial_ratio", "token_sort_ratio", "token_set_ratio")


def _similar_options(value: Any) -> Any:
    if isinstance(value, Mapping) and value.get("method") == "embedding":
        from recorder.checks.embedding import embedding_spec

        return embedding_spec(value)
    if isinstance(value, Mapping):
        unknown = sorted(str(k) for k in value if k not in ("min", "method"))
        if unknown:
            raise CheckOptionError(f"unknown option {unknown[0]!r} (options: min, method)")
        if "min" not in value:
            raise CheckOptionError("give min, a number from 0 to 1")
        method = value.get("method", "token_set_ratio")
        if method not in SIMILAR_METHODS:
            raise CheckOptionError(
                f"method: expected one of {', '.join(SIMILAR_METHODS)} or embedding, got {method!r}"
            )
        return _fraction(value["min"], "min"), str(method)
    return _fraction(value, "similar"), "token_set_ratio"


def _similar(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    if not isinstance(check.value, tuple):
        from recorder.checks.embedding import run_embedding

        return run_embedding(check, recorded, live, context)
    text = _text(live)
    if isinstance(text, Outcome):
        return text
    if not isinstance(recorded, str):
        return Outcome(False, f"the recorded value is not text ({_type_name(recorded)})")
    from rapidfuzz import fuzz, utils

    least, method = check.value
    # (default_process: lower case, punctuation out, so wording decides, not commas)
    score = getattr(fuzz, method)(recorded, text, processor=utils.default_process) / 100
    if score < least:
        return Outcome(False, f"{score:.2f} < {least:.2f} ({method} to the recorded text)")
    return Outcome(True, f"{score:.2f}")


# --- language ------------------------------------------------------------------------------------


def _language_options(value: Any) -> str:
    if not isinstance(value, str) or not LANGUAGE_CODE.match(value):
        raise CheckOptionError(
            f"expected an ISO 639-1 language code such as en or fr, got {value!r}"
        )
    return value


def _language(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    text = _text(live)
    if isinstance(text, Outcome):
        return text
    found = detect_language(text)
    if found is None:
        return Outcome(False, f"no language found in the text, expected {check.value}")
    if found != check.value:
        expected, other = common_count(text, check.value), common_count(text, found)
        if expected > other:
            # a text of names and facts, few words of its language: the detector guesses
            # ("Languages: Java, Go, Rust" read as Latin); the common words tell
            return Outcome(True, f"{found} detected, but more common words of {check.value}")
        return Outcome(False, f"{found}, expected {check.value}")
    return Outcome(True)


# --- judge -------------------------------------------------------------------------------------


def _judge_options(value: Any) -> Any:
    if isinstance(value, Mapping) and "command" not in value:
        # (imported when a rules file has one: the model checks bring in httpx)
        from recorder.checks.model_judge import model_judge_spec

        return model_judge_spec(value)
    return judge_spec(value)


def _judge(check: Check, recorded: Any, live: Any, context: CheckContext) -> Outcome:
    if not isinstance(check.value, PythonJudge | CommandJudge):
        from recorder.checks.model_judge import run_model_judge

        return run_model_judge(check, recorded, live, context)
    return run_judge(check.value, recorded, live, context, check.where)


# --- the registry --------------------------------------------------------------------------------


def _check_type(
    name: str, parse: Callable[[Any], Any], run: Runner, summary: str, *, folds_case: bool = False
) -> tuple[str, CheckType]:
    return name, CheckType(name, parse, run, folds_case, summary)


CHECKS: Mapping[str, CheckType] = dict(
    [
        _check_type(
            "contains", _strings, _contains_all, "the text holds it (all)", folds_case=True
        ),
        _check_type(
            "contains_all", _strings, _contains_all, "the text holds each", folds_case=True
        ),
        _check_type(
            "contains_any", _strings, _contains_any, "the text holds one at least", folds_case=True
        ),
        _check_type(
            "not_contains", _strings, _not_contains, "the text holds none", folds_case=True
        ),
        _check_type("matches", _regex, _matches, "re.search finds it", folds_case=True),
        _check_type(
            "not_matches", _regex, _not_matches, "re.search does not find it", folds_case=True
        ),
        _check_type("facts", _facts_options, _facts, "the text states each fact, in any form"),
        _check_type("claims", _claims_options, _claims, "facts stated together, each once"),
        _check_type("length", _bounds, _length, "characters within min..max"),
        _check_type("lines", _bounds, _lines, "lines within min..max"),
        _check_type("json", _json_options, _json, "parses as JSON (and validates)"),
        _check_type("similar", _similar_options, _similar, "similar to the recorded text"),
        _check_type("language", _language_options, _language, "the text's language"),
        _check_type("judge", _judge_options, _judge, "your code or your model decides"),
    ]
)
"""Check name -> its type: the one registry (the rules loader and the player both read it)."""
