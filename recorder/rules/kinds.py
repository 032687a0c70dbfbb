"""Value kinds: the loose kinds a rule may give a place, each "any value of this kind".

A `generated_paths` (or `generated_fields`) entry whose kind is one of these says what the value
at that place is, not what it equals: `$.result.metadata.epoch: integer` accepts any integer
there, and still fails a string, a float, null or a missing member. They are what
`recorder learn` proposes for noise that is no id and no time: epoch numbers, durations,
counters, host names, random tokens, page cursors, a model's sampled text.

- `integer`: a JSON integer (not true/false, not 1.5);
- `number`: a JSON number, integer or not;
- `text`: any JSON string (the empty one too): a type check only;
- `hex`: a string of hex digits, all of one letter case (`9f86d081`);
- `base64`: a string of the base64 or base64url alphabet, padded or not (`eyJ0IjoxfQ==`);
- `hostname`: a DNS host name with at least one dot, whose last label starts with a letter,
  optionally `:port` (`worker-3.local`, `api.example.com:8443`);
- `duration`: a duration written as text: `1.5s`, `250ms`, `1m30s`, or ISO 8601 `PT1.5S`.

Design: a value kind is loose (rule 3 of `recorder.rules.pairing`): recorded and live values need
not pair one to one; any live value of the kind matches. The first pairing of a string kind is kept
for carry-forward (a random session token the client sends back later is sent live). A kind
named here that a rules file also declares under `generated_shapes` is the file's shape
instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["VALUE_KINDS", "describe_kind", "is_of_kind"]

_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]+|[A-Za-z0-9_-]+)={0,2}")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_TOP = r"[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"  # a top label starts with a letter
_HOSTNAME = re.compile(rf"(?=[^:]{{1,253}}(?::|$))(?:{_LABEL}\.)+{_TOP}(?::[0-9]{{1,5}})?")
_DURATION = re.compile(
    r"(?:[0-9]+(?:\.[0-9]+)?(?:ns|us|µs|ms|s|m|h))+"
    r"|P(?=[0-9T])(?:[0-9]+D)?(?:T(?=[0-9])(?:[0-9]+H)?(?:[0-9]+M)?(?:[0-9]+(?:\.[0-9]+)?S)?)?"
)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(pattern: re.Pattern[str] | None) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        return isinstance(value, str) and (pattern is None or pattern.fullmatch(value) is not None)

    return check


_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "integer": (_integer, "any integer"),
    "number": (_number, "any number"),
    "text": (_text(None), "any text"),
    "hex": (_text(_HEX), "any hex text"),
    "base64": (_text(_BASE64), "any base64 text"),
    "hostname": (_text(_HOSTNAME), "any host name"),
    "duration": (_text(_DURATION), "any duration"),
}

VALUE_KINDS: Mapping[str, str] = MappingProxyType({k: v[1] for k, v in _CHECKS.items()})
"""Value kind -> what it accepts, in words (`integer` -> `any integer`)."""


def is_of_kind(kind: str, value: Any) -> bool:
    """Whether `value` (a parsed JSON value) is of the value kind `kind` (one of VALUE_KINDS)."""
    return _CHECKS[kind][0](value)


def describe_kind(kind: str) -> str:
    """`integer` -> `any integer`."""
    return VALUE_KINDS.get(kind, f"a {kind} value")
