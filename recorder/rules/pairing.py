"""Pairing: which values are generated, and the one-to-one mapping of recorded and live ones.

The pure core of aliasing, usable without a replay (`recorder.replay.verdict.state.ReplayState` is
one user; grouping exchanges by id lineage, a stand-in agent and noise learning are others): what
`Rules` call generated (`PairingRules`) and the mapping that pairs recorded generated values with
live ones and numbers their aliases (`AliasMap`).

The rules of pairing, numbered as the replay's comparison numbers them (rules 5-9 are the
replay's own: see `recorder.replay.verdict.state`):

1. A string is *generated* when it sits at a generated member (`rules.generated_fields`, a
   `generated_fields_beside` member beside one of its siblings, a `generated_paths` place) or,
   as a whole or in part, matches a generated shape (UUID, RFC 3339 time). An empty string is
   never generated.
2. A value the client sent itself is never generated: every string of the recorded request (body,
   path segments, query values, header values) and every shape inside them that is not a value
   learned from an earlier reply is a *client value*, for the rest of the transcript. Client
   values are compared exactly (the JSON-RPC `id`, the user's `messageId`).
3. A recorded generated value and the live value in the same place are *paired*. For strict
   kinds (ids) pairs must form a one-to-one mapping across the whole transcript: a recorded
   value already paired with another live value, or a live value already paired with another
   recorded value, is a mismatch at that path (a reply that names the wrong task). For loose
   kinds (`rules.loose_kinds`, timestamps, and the value kinds of `recorder.rules.kinds`: `integer`,
   `hex`, `text` ...) any value of the kind matches; the first pairing is kept for carry-forward
   and bless.
4. Aliases are numbered by first appearance of the recorded value in the transcript, per kind:
   `<id:1>`, `<time:1>`. Reports show aliases, and the real values in the message.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import unquote

from recorder.format.model import Request
from recorder.jsonpath import PathMatcher, State
from recorder.rules.kinds import VALUE_KINDS, describe_kind, is_of_kind
from recorder.rules.ruleset import Rules

__all__ = ["JSON_STRING", "AliasMap", "PairingRules", "one_to_one_conflict", "string_value"]

JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
"""A JSON string literal, escapes included."""
_NOT_SCANNED = frozenset({"host", "content-length"})
# `shape_matches`: texts this long are searched around their dashes only, in windows reaching
# this far before a dash and after the last dash of a run (default shapes only)
_WINDOWED = 4096
_BEFORE, _AFTER = 64, 128

# the default shapes (uuid, RFC 3339 time): every match holds a "-" and no '"'
_DEFAULT_SHAPES: dict[str, str] = {
    "id": (
        "[0-9a-fA-F](?<![0-9A-Za-z].)[0-9a-fA-F]{7}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}"
        "-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![0-9A-Za-z])"
    ),
    "time": (
        "[0-9](?<![0-9].)[0-9]{3}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}"
        "(?:\\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})(?![0-9])"
    ),
}


def string_value(token: str) -> str | None:
    """The value of a JSON string token (`"a\\"b"` -> `a"b`), or None when it is no valid JSON
    string (a bad escape, a raw control character: a body that is not JSON)."""
    if "\\" not in token:
        return token[1:-1]
    try:
        value: str = json.loads(token)
    except ValueError:
        return None
    return value


@dataclasses.dataclass(frozen=True)
class _Compiled:
    """What pairing derives from its rules, computed once per rules value."""

    shapes: re.Pattern[str] | None
    tokens: re.Pattern[str] | None
    compact_tokens: re.Pattern[str] | None
    fields: dict[str, str]
    beside: dict[str, frozenset[str]]
    kinds: list[tuple[str, list[int], bool]]
    """(kind, the split columns of its values, whether one is a generated member's)."""
    value_columns: list[tuple[int, str, bool]]
    """(split column, kind, whether it holds a generated member's value), in group order."""
    dashed: bool
    """Whether the shapes are the defaults, whose every match holds a "-" and no '"' or '\\'."""


@functools.lru_cache(maxsize=16)
def _compile(rules: Rules) -> _Compiled:
    tokens = rules.token_pattern
    value_columns: dict[str, list[int]] = {}
    field_columns: set[int] = set()
    if tokens is not None:
        for name, index in sorted(tokens.groupindex.items(), key=lambda item: item[1]):
            if name.startswith(("f_", "s_")):
                value_columns.setdefault(name[2:], []).append(index)
            if name.startswith("f_"):
                field_columns.add(index)
    return _Compiled(
        shapes=rules.shape_pattern,
        tokens=tokens,
        compact_tokens=rules.compact_token_pattern,
        fields=dict(rules.generated_fields),
        beside={name: frozenset(s) for name, s in rules.generated_fields_beside.items()},
        kinds=[
            (kind, columns, not field_columns.isdisjoint(columns))
            for kind, columns in value_columns.items()
        ],
        value_columns=sorted(
            (column, kind, column in field_columns)
            for kind, columns in value_columns.items()
            for column in columns
        ),
        dashed=all(
            _DEFAULT_SHAPES.get(kind) == regex for kind, regex in rules.generated_shapes.items()
        ),
    )


class PairingRules:
    """Rules 1 and 2 as `Rules` say them: which strings are generated, what a request carries.

    Immutable; the compiled forms are shared by every instance built from equal rules. The
    attributes are read by the replay's rooms (bound once, outside their loops).
    """

    def __init__(self, rules: Rules) -> None:
        compiled = _compile(rules)
        self.rules = rules
        self.shapes = compiled.shapes
        """One regex for every shape (`match.lastgroup` is `k_<kind>`), or None."""
        self.value_kinds = frozenset(VALUE_KINDS.keys() - rules.generated_shapes.keys())
        """The value kinds (`recorder.rules.kinds`) these rules use as such: any value of the
        kind."""
        self.loose = rules.loose_kinds | self.value_kinds
        self.fields = compiled.fields
        self.beside = compiled.beside
        self.generated_paths: PathMatcher = rules.generated_matcher
        self.tokens = compiled.tokens
        """`Rules.token_pattern`: a member's whole string value that is generated."""
        self.compact_tokens = compiled.compact_tokens
        self.token_kinds = compiled.kinds
        self.value_columns = compiled.value_columns
        self.dashed = compiled.dashed

    def shape_kind(self, value: str) -> str | None:
        """The kind of the shape `value` is wholly of (rule 1), or None."""
        if self.shapes is None:
            return None
        match = self.shapes.fullmatch(value)
        if match is None or match.lastgroup is None:
            return None
        return match.lastgroup[2:]

    def field_kind(self, name: str | int, siblings: dict[str, Any]) -> str | None:
        """The kind of a generated member `name` of an object with members `siblings` (rule 1:
        `generated_fields`, or `generated_fields_beside` with one of its siblings there), or
        None (an array index is never a generated member)."""
        if not isinstance(name, str):
            return None
        kind = self.fields.get(name)
        if kind is not None:
            return kind
        beside = self.beside.get(name)
        if beside is not None and not beside.isdisjoint(siblings):
            return "id"
        return None

    def request_values(self, request: Request) -> frozenset[str]:
        """Rule 2: every string a recorded request carries (JSON strings, path segments, query
        values, header values but Host and Content-Length) and every shape inside them."""
        return self.values_of(request.target, request.headers, request.body, request.is_json)

    def values_of(
        self,
        target: str,
        headers: Iterable[tuple[str, str]],
        body: bytes,
        is_json: bool,
    ) -> frozenset[str]:
        """`request_values` of a request given by its parts: its target, headers, body (as
        recorded: a JSON body in the model's canonical form) and whether it is JSON."""
        values: set[str] = set()
        body_text = ""
        if body:
            try:
                body_text = body.decode("utf-8")
            except UnicodeDecodeError:
                body_text = ""
            if is_json:
                tokens = JSON_STRING.findall(body_text)
                if "\\" in body_text:
                    # a string that is no valid JSON string counts as the text it holds
                    values.update([string_value(token) or token[1:-1] for token in tokens])
                else:
                    values.update([token[1:-1] for token in tokens])
                # when every shape holds a "-" and no '"' (the defaults), and every "-" of the
                # body is inside a string, the shapes are in the strings that hold one (each
                # keeps its quotes, so a match sees the same characters around it as in the body)
                if self.dashed:
                    dashed = [token for token in tokens if "-" in token]
                    if sum(token.count("-") for token in dashed) == body_text.count("-"):
                        body_text = "\n".join(dashed)
            else:
                values.add(body_text)
        if "%" in target or "+" in target:
            path, _, query = target.partition("?")
            parts = [unquote(segment) for segment in path.split("/")]
            if query:
                for item in query.split("&"):
                    parts.extend(unquote(part.replace("+", " ")) for part in item.split("=", 1))
        else:
            parts = target.replace("?", "/").replace("&", "/").replace("=", "/").split("/")
        # AIP-136 custom methods: /tasks/{id}:cancel
        parts.extend([segment.partition(":")[0] for segment in parts if ":" in segment])
        parts.extend([value for name, value in headers if name.lower() not in _NOT_SCANNED])
        values.update(parts)
        if self.shapes is not None:
            # one pass over everything; a line break cannot sit inside a shape match, and the
            # default shapes (uuid, RFC 3339 time) hold a "-": nothing to look at without one
            dashed_parts = [part for part in parts if "-" in part] if self.dashed else parts
            if dashed_parts or body_text:
                everything = body_text + "\n" + "\n".join(dashed_parts)
                values.update([match.group() for match in self.shape_matches(everything)])
        values.discard("")
        return frozenset(values)

    def shape_matches(self, text: str) -> Iterator[re.Match[str]]:
        """The generated shapes in `text`, as `shapes.finditer` finds them, in order.

        A long text with the default shapes, each of which holds a "-", is searched only
        around its dashes: a regex tried at every position of a 1 MB text costs ~30 ms, a
        look at the few places that can hold a match almost nothing. A window starts well
        before a run of dashes (a uuid's first dash is 8 characters in) and ends well after
        (its last part is 12 characters, a time's tail under 30); a match that ends at a
        window's edge, where the lookahead could not see on, is not taken.
        """
        shapes = self.shapes
        if shapes is None:
            return
        if not self.dashed or len(text) < _WINDOWED:
            if not self.dashed or "-" in text:
                yield from shapes.finditer(text)
            return
        size = len(text)
        find = text.find
        dash = find("-")
        while dash != -1:
            start, end = max(0, dash - _BEFORE), dash + _AFTER
            dash = find("-", dash + 1)
            while dash != -1 and dash - _BEFORE <= end:
                end, dash = dash + _AFTER, find("-", dash + 1)
            end = min(size, end)
            for match in shapes.finditer(text, start, end):
                if match.end() < end or end == size:
                    yield match

    def generated_values(self, value: Any) -> list[tuple[str, str]]:
        """Rule 1 over a parsed JSON tree: every (string, kind) it calls generated, in document
        order (members in order, an object's before what they hold), each pair once.

        A non-empty string at a generated member (by name, beside a sibling, or at a
        `generated_paths` place; an array's items take the array's kind) is generated as a
        whole; in any other string, each shape match is. The places the replay's walk skips
        (`ignored_paths`, secret members) and client values (rule 2) are not this rule's
        business: they are listed too.
        """
        found: dict[tuple[str, str], None] = {}
        shapes = self.shapes
        paths = self.generated_paths
        if not paths:
            try:
                self._walk(value, None, found)
                return list(found)
            except RecursionError:  # nested deeper than the recursion allows: the loop below
                found.clear()
        generated_path_kind = self.rules.generated_path_kind
        field_kind = self.field_kind
        # (value, its keys, its kind, its generated_paths state); children pushed reversed
        stack: list[tuple[Any, tuple[str | int, ...], str | None, State]] = [
            (value, (), None, paths.start())
        ]
        while stack:
            item, keys, kind, state = stack.pop()
            if state and paths.matches(state):
                kind = generated_path_kind(keys) or kind
            if isinstance(item, str):
                if not item:
                    continue
                if kind is not None:
                    found.setdefault((item, kind), None)
                elif shapes is not None:
                    for match in self.shape_matches(item):
                        if match.lastgroup is not None:
                            found.setdefault((match.group(), match.lastgroup[2:]), None)
            elif isinstance(item, dict):
                stack.extend(
                    (member, (*keys, name), field_kind(name, item), paths.step(state, name))
                    for name, member in reversed(item.items())
                )
            elif isinstance(item, list):
                stack.extend(
                    (member, (*keys, index), kind, paths.step(state, index))
                    for index, member in reversed(list(enumerate(item)))
                )
        return list(found)

    def _walk(self, item: Any, kind: str | None, found: dict[tuple[str, str], None]) -> None:
        """`generated_values` without `generated_paths` (the common case): the same values
        in the same order, by a plain recursion (no path state, no keys per node)."""
        if isinstance(item, str):
            if not item:
                return
            if kind is not None:
                found.setdefault((item, kind), None)
            elif self.shapes is not None and (not self.dashed or "-" in item):
                for match in self.shape_matches(item):
                    if match.lastgroup is not None:
                        found.setdefault((match.group(), match.lastgroup[2:]), None)
        elif isinstance(item, dict):
            fields = self.fields
            beside = self.beside
            walk = self._walk
            for name, member in item.items():
                if isinstance(member, str | dict | list):
                    member_kind = fields.get(name)
                    if member_kind is None:
                        near = beside.get(name)
                        if near is not None and not near.isdisjoint(item):
                            member_kind = "id"
                    walk(member, member_kind, found)
        elif isinstance(item, list):
            walk = self._walk
            for member in item:
                if isinstance(member, str | dict | list):
                    walk(member, kind, found)


class AliasMap:
    """Rules 3 and 4: the one-to-one mapping of recorded (golden) and live generated values,
    loose for `rules.loose_kinds`, and the aliases of recorded values, numbered lazily.

    The containers are public and shared, never replaced: the replay's rooms bind them once and
    read and update them in place (`golden_to_live` and `live_to_golden` always together).
    """

    def __init__(self, rules: PairingRules) -> None:
        self._loose = rules.loose
        self._value_kinds = rules.value_kinds
        self._shape_kind = rules.shape_kind
        # rule 3: the mapping, both ways
        self.golden_to_live: dict[str, str] = {}
        self.live_to_golden: dict[str, str] = {}
        self.seen: dict[str, str] = {}
        """Recorded value -> kind, in order of first sight (rule 4 numbers in this order)."""
        self.client: set[str] = set()
        """Rule 2: the client's own values, compared exactly."""
        self.literal_danger: set[str] = set()
        """Learned non-identity values that are no shape: a text comparison must see them pair."""
        self._alias: dict[str, str] = {}
        self._counters: dict[str, int] = {}
        self._numbered = 0

    @property
    def mapping(self) -> dict[str, str]:
        """Recorded generated value -> live value, as learned so far (a copy)."""
        return dict(self.golden_to_live)

    def alias(self, golden: str, kind: str) -> str:
        """The alias of a recorded generated value, numbered by first sight per kind (rule 4)."""
        self.seen.setdefault(golden, kind)
        return self.alias_of(golden) or f"<{kind}:?>"

    def alias_of(self, golden: str) -> str | None:
        """The alias of a value already seen, or None. Numbers are given lazily, in seen order."""
        alias = self._alias.get(golden)
        if alias is None and golden in self.seen:
            # the values seen since the last numbering, taken from the end: skipping the first
            # ones would cost a pass over all those already numbered each time a value is new
            # (quadratic over a reply of thousands of ids)
            fresh = list(
                itertools.islice(reversed(self.seen.items()), len(self.seen) - self._numbered)
            )
            for value, kind in reversed(fresh):
                number = self._counters.get(kind, 0) + 1
                self._counters[kind] = number
                self._alias[value] = f"<{kind}:{number}>"
            self._numbered = len(self.seen)
            alias = self._alias.get(golden)
        return alias

    def live_alias(self, live: str, kind: str) -> str:
        """The alias of the recorded value a live value is paired with, or the live value."""
        golden = self.live_to_golden.get(live)
        if golden is not None:
            return self.alias(golden, kind)
        return live

    def adopt(self, other: AliasMap) -> None:
        """Take the pairs and the client values `other` learned (the state of another file
        this one reads: `@after`), where they do not contradict a pair already here."""
        for golden, live in other.golden_to_live.items():
            if golden in self.golden_to_live or live in self.live_to_golden:
                continue
            self.golden_to_live[golden] = live
            self.live_to_golden[live] = golden
            self.seen.setdefault(golden, other.seen.get(golden, "id"))
        self.client |= other.client
        self.literal_danger |= other.literal_danger

    def pair(self, golden: str, live: str, kind: str) -> str | None:
        """Pair a recorded and a live generated value (rule 3). None, or why they do not pair."""
        if kind in self._loose:
            if kind in self._value_kinds and not is_of_kind(kind, live):
                return f"expected {describe_kind(kind)}, such as {golden!r}"
            golden_kind = self._shape_kind(golden)
            if golden_kind is not None and self._shape_kind(live) != golden_kind:
                return f"expected a {kind} value such as {golden!r}"
            if golden not in self.golden_to_live and live not in self.live_to_golden:
                self.golden_to_live[golden] = live
                self.live_to_golden[live] = golden
            self.alias(golden, kind)
            return None
        self.alias(golden, kind)
        if not live:
            return f"expected a generated value (recorded {golden}), got an empty string"
        if live in self.client and live != golden:
            return (
                f"the reply names {live}, a value the client sent, where the recording has {golden}"
            )
        mapped = self.golden_to_live.get(golden)
        if mapped is not None:
            if mapped == live:
                return None
            other = self.live_to_golden.get(live)
            known = None if other is None else (self.alias(other, kind), other)
            return one_to_one_conflict(golden, mapped, live, known)
        other = self.live_to_golden.get(live)
        if other is not None and other != golden:
            return one_to_one_conflict(golden, None, live, (self.alias(other, kind), other))
        self.golden_to_live[golden] = live
        self.live_to_golden[live] = golden
        if golden != live and self._shape_kind(golden) is None:
            self.literal_danger.update((golden, live))
        return None


def one_to_one_conflict(
    recorded: str, mapped: str | None, live: str, other: tuple[str, str] | None
) -> str:
    """Why `recorded` and `live` do not pair one to one (rule 3): `recorded` is already live
    `mapped` (None: not yet paired), and `live` already stands for `other` = (its alias, its
    recorded value), if it does."""
    if mapped is None:
        assert other is not None
        return (
            f"live {live} already stands for {other[0]} (recorded {other[1]}),"
            f" but here the recording has {recorded}"
        )
    message = f"recorded {recorded} is live {mapped}, but the reply names {live}"
    if other is not None:
        message += f", which is {other[0]} (recorded {other[1]})"
    return message
