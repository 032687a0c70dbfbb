"""The fast path: two reply texts equal but for generated values that pair (rules 1-5).

The bodies of both replies (the pretty JSON the model holds, or the serialized SSE frames) are
split by one regex (`Rules.token_pattern`) into the text between generated values and those
values: a member's whole string value that is generated (by its name or its shape). A live
JSON reply given as it came over the wire (`LiveReply`, what the player passes) is not
pretty-printed for this: compact JSON is split as it came (`Rules.compact_token_pattern`)
against the recorded value written compactly, any other layout is parsed and both sides are
written on one line; its `Response` is built only when the fast path cannot decide.
When the text between is identical and the values pair under rule 3, the reply matches and no
tree is walked; the pairs are checked as sets, not one by one. Anything else (another key
order, compact spacing, an ignored place that differs, a generated value inside a longer
string or as an array item that differs) falls back to the walk (`recorder.replay.verdict.walk`),
which decides.

The fast path says "equal" only where the walk would, with one documented exception: a shape
that is not a member's whole value (inside a longer string, or an array item) and is identical
on both sides is taken as literal text, where the walk would also check that the mapping
pairs it with itself. That needs a live agent to emit a recorded uuid it was never sent. A
non-shape value the walk would alias (an `id` "task-1" beside a contextId) is checked against
the learned values before the fast path may pass.

Rule 5 (`recorder.replay.verdict.strings.Addresses`): only a recorded text that holds an address
paired with another live one (the recorded base, as a card holds it) is searched for addresses,
which are then cut out of both texts and must pair; otherwise addresses are text, and any that
differ send the reply to the walk. The one exception, as for shapes above: an address that is not
the recorded side of such a pair (or is written in unusual letter case, `LocalHost:41242`),
identical on both sides, is taken as literal text, where the walk would also pair it with
itself. That needs a recording that names a port the live agent happens to use for another
address, or an address whose first pairing is to itself and a later one to another.

The rules are numbered in `recorder.rules.pairing` (1-4) and `recorder.replay.verdict.strings` (5).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Collection, Iterable
from operator import eq, itemgetter
from typing import Any

import orjson

from recorder.format import sse
from recorder.format.jsonbody import NOT_JSON, dumps, read_json
from recorder.format.model import Response, SseEvent
from recorder.replay.verdict.live import EMPTY, body_value
from recorder.replay.verdict.strings import Addresses
from recorder.rules.kinds import is_of_kind
from recorder.rules.pairing import AliasMap, PairingRules

__all__ = ["FastPath"]

_SMALL = 24  # up to this many values in a reply, the fast path pairs them in one plain loop
_BULK = 16  # from this many values on, check shapes with one regex call over them all
# the line breaks and indentation of the model's pretty JSON (never inside a string of valid
# JSON, where a raw line break is not allowed)
_LAYOUT = re.compile("\n *")
# what the model's pretty JSON writes as \uXXXX escapes (DEL, C1 controls, U+2028, U+2029)
_INVISIBLE = re.compile("[\x7f-\x9f\u2028\u2029]")


def _disagree(pairs: dict[str, str], known: dict[str, str]) -> bool:
    """Whether `pairs` maps a value `known` already maps to something else."""
    return any(known[key] != pairs[key] for key in pairs.keys() & known.keys())


_ONE_LINE = json.JSONEncoder(ensure_ascii=False, separators=(",", ": "))


def _one_line_text(value: Any, numbers: bool = False) -> str:
    """`value` as the model's pretty JSON would be with its line breaks and indentation taken
    out: `{"a": [1,2],"b": "c"}` (C encoder; non-ASCII kept, the same characters escaped).
    `numbers`: the value holds `JsonNumber`s, written as their text (the C encoder would
    write the nearest float, which a recorded text may read as, the value differing)."""
    text = dumps(value, separators=(",", ": ")) if numbers else _ONE_LINE.encode(value)
    if text.isascii():
        return text.replace("\x7f", "\\u007f") if "\x7f" in text else text
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _looks_compact(body: bytes) -> bool:
    """Whether a JSON body seems written without spaces (`{"a":1}`): which way to try first."""
    head = body[:256]
    return b'":' in head and b'": ' not in head and b"\n" not in head


def _golden_one_line(message: Response) -> str:
    """The one-line text (see `_one_line_text`) of a recorded body known to be JSON. The model
    holds a JSON body pretty-printed, and a line break cannot sit inside a string of valid
    JSON, so taking the layout out is enough; a body the model kept as it came (duplicate
    keys, another layout) gives another text, which only sends the comparison the slow way."""
    return _LAYOUT.sub("", message.body.decode("utf-8", errors="replace"))


def _golden_compact(message: Response, value: Any) -> str:
    """A recorded JSON body written without spaces, as agents send JSON: by orjson (~10x
    faster than `json`'s C encoder) when the model says the value is strict JSON, else (a NaN
    orjson would write as null, a `JsonNumber`, written as its text) by `jsonbody.dumps`.
    orjson spells some floats' exponents otherwise (`1.5e-7`, not `1.5e-07`): such a reply
    only goes the slow way."""
    if message.json_is_strict:
        try:
            return orjson.dumps(value).decode()
        except orjson.JSONEncodeError:  # e.g. an integer past 64 bits
            pass
    return dumps(value, separators=(",", ":"))


class FastPath:
    """The fast path (see the module docstring): pairs learned into `aliases` only when a
    whole reply passes."""

    def __init__(self, rules: PairingRules, aliases: AliasMap, addresses: Addresses) -> None:
        self._generated_shapes = rules.rules.generated_shapes
        self._shape_kind = rules.shape_kind
        self._loose = rules.loose
        self._value_kinds = rules.value_kinds
        self._tokens = rules.tokens
        self._compact_tokens = rules.compact_tokens
        self._token_kinds = rules.token_kinds
        self._value_columns = rules.value_columns
        self._dashed = rules.dashed
        self._addresses = addresses
        self._client = aliases.client
        self._seen = aliases.seen
        self._golden_to_live = aliases.golden_to_live
        self._live_to_golden = aliases.live_to_golden
        self._literal_danger = aliases.literal_danger
        self._line_patterns: dict[str | None, re.Pattern[str]] = {}

    def matches_wire(self, expected: Response, live_body: bytes) -> bool:
        """The fast path (see the module docstring) on a JSON body as it came over the wire,
        without pretty-printing the live reply. A compact body (as Starlette sends JSON) is
        read as it is, against the recorded value written compactly: no parse of the live
        reply at all (text equal but for generated strings is JSON of the same shape). Any
        other layout: the live reply parsed and both written on one line (`_one_line_text`)."""
        if not expected.body or not live_body:
            return False
        golden_value = body_value(expected)
        if golden_value is NOT_JSON or golden_value is EMPTY:
            return False  # e.g. a line break inside a string: the walk decides
        # (read as it came only with the default shapes: a rules file's own shape might match
        # a backslash or a quote, which would let text that is no JSON through)
        if self._dashed and _looks_compact(live_body):
            try:
                live_text = live_body.decode("utf-8")
            except UnicodeDecodeError:
                live_text = None
            if live_text is not None and self.matches_text(
                _golden_compact(expected, golden_value), live_text, compact=True
            ):
                return True
        try:
            live_value, numbers = read_json(live_body)
        except (ValueError, RecursionError):
            return False
        return self.matches_text(_golden_one_line(expected), _one_line_text(live_value, numbers))

    def matches(self, expected: bytes, actual: bytes) -> bool:
        """True when two bodies are the same text but for generated values that pair (rules 1-5).

        One regex pass over each text finds the generated values (a generated member's string,
        a shape); the text between them must be identical and the values must pair under rule 3.
        Pairs are learned only when the whole body passes. False means "walk the trees": the
        walk decides (key order, ignored paths, error messages) and explains.
        """
        try:
            expected_text = expected.decode("utf-8")
            actual_text = actual.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return self.matches_text(expected_text, actual_text)

    def matches_text(self, expected: str, actual: str, *, compact: bool = False) -> bool:
        """`matches` on text; `compact` when both are JSON written without spaces."""
        addresses: list[tuple[str, str]] = []
        for needle in self._addresses.moved_needles:
            if needle in expected:
                # rule 5: the addresses as NULs, which cannot appear raw in JSON text (and a
                # text holding one is no JSON: the walk says so)
                if "\0" in expected or "\0" in actual:
                    return False
                expected, golden_addresses = self._cut_addresses(expected)
                actual, live_addresses = self._cut_addresses(actual)
                if len(golden_addresses) != len(live_addresses):
                    return False
                addresses = list(zip(golden_addresses, live_addresses, strict=True))
                if not self._addresses.would_pair(addresses):
                    return False
                break
        tokens = self._compact_tokens if compact else self._tokens
        if tokens is None:
            if expected != actual:
                return False
            self._learn_addresses(addresses)
            return True
        danger = self._literal_danger
        if danger:
            # a learned id that is no shape (e.g. "task-1" -> "task-7") must not hide in text the
            # fast path treats as literal (an `id` member): let the walk see it
            if len(danger) > 64:
                return False
            for value in danger:
                quoted = f'"{value}"'
                if quoted in expected or quoted in actual:
                    return False
        expected_parts = tokens.split(expected)
        actual_parts = tokens.split(actual)
        if len(expected_parts) != len(actual_parts):
            return False
        stride = tokens.groups + 1
        # the text between the values (member names included) is equal
        if expected_parts[0::stride] != actual_parts[0::stride]:
            return False
        if addresses and sum(part.count("\0") for part in expected_parts[0::stride]) != len(
            addresses
        ):
            return False  # an address inside a generated value: the walk decides
        if len(expected_parts) <= _SMALL * stride:
            matched = self._pair_few(expected_parts, actual_parts, stride)
        else:
            matched = self._pair_many(expected_parts, actual_parts, stride)
        if matched:
            self._learn_addresses(addresses)
        return matched

    def _cut_addresses(self, text: str) -> tuple[str, list[str]]:
        """`text` with each address (rule 5) as a NUL, and those addresses in order."""
        spans = self._addresses.spans(text)
        if not spans:
            return text, []
        out: list[str] = []
        last = 0
        for start, end, _ in spans:
            out.append(text[last:start])
            last = end
        out.append(text[last:])
        return "\0".join(out), [address for _, _, address in spans]

    def _learn_addresses(self, pairs: list[tuple[str, str]]) -> None:
        pair = self._addresses.pair
        for golden, live in pairs:
            pair(golden, live)

    def _pair_many(self, expected_parts: list[Any], actual_parts: list[Any], stride: int) -> bool:
        """The fast path's pairing (rules 2 and 3) for a reply with many values: column by
        column, as sets."""
        client = self._client
        golden_to_live = self._golden_to_live
        live_to_golden = self._live_to_golden
        learn: list[tuple[list[list[str | None]], str]] = []
        strict_forward: dict[str, str] = {}
        strict_backward: dict[str, str] = {}
        loose_pairs: list[dict[str, str]] = []
        field_pairs: list[dict[str, str]] = []
        for kind, columns, from_field in self._token_kinds:
            golden_columns = [expected_parts[c::stride] for c in columns]
            goldens, lives = golden_columns[0], actual_parts[columns[0] :: stride]
            if len(columns) > 1:
                goldens = list(itertools.chain.from_iterable(golden_columns))
                lives = list(
                    itertools.chain.from_iterable(actual_parts[c::stride] for c in columns)
                )
            # set operations, not a loop per value: these replies can hold thousands of ids.
            # The distinct (recorded, live) pairs are the items of one dict when each recorded
            # value meets one live value (the common case, and rule 3's): no set of a tuple per
            # pair, thousands of containers the garbage collector would pass over again and again
            forward: dict[Any, Any] = dict(zip(goldens, lives, strict=True))
            distinct: Collection[tuple[Any, Any]]
            if all(map(eq, map(forward.__getitem__, goldens), lives)):
                if None in forward and forward[None] is None:
                    del forward[None]  # rows another alternative (kind) matched on both sides
                distinct = forward.items()
                forward = dict(distinct)  # (a copy: `distinct` stays as it is while this shrinks)
            else:  # a recorded value met several live ones (a loose kind may): the pairs as a set
                distinct = set(zip(goldens, lives, strict=True))
                distinct.discard((None, None))
                forward = dict(distinct)
            if not distinct:
                continue
            backward: dict[Any, Any] = dict(
                zip(map(itemgetter(1), distinct), map(itemgetter(0), distinct), strict=True)
            )
            if None in forward or None in backward:
                return False  # another alternative (kind) matched on one side
            # rule 2: client values and "" are compared exactly
            literal = forward.keys() & client
            if "" in forward:
                literal.add("")
            if literal:
                if any(golden in literal and live != golden for golden, live in distinct):
                    return False
                for golden in literal:
                    del forward[golden]
                    del backward[golden]
            if "" in backward or not client.isdisjoint(backward):
                return False  # an empty or client-sent live value: let the walk explain
            if kind in self._loose:
                if kind in self._value_kinds and not all(
                    is_of_kind(kind, live) for live in backward
                ):
                    return False  # not of its value kind: let the walk explain
                # a recorded value of a shape (a timestamp) must meet a live value of it
                if from_field and not (
                    len(forward) > _BULK
                    and self._all_of_shape(forward, kind)
                    and self._all_of_shape(backward, kind)
                ):
                    shape_kind = self._shape_kind
                    for golden, live in distinct:
                        if golden not in literal:
                            golden_kind = shape_kind(golden)
                            if golden_kind is not None and shape_kind(live) != golden_kind:
                                return False
                loose_pairs.append(forward)
            else:
                # rule 3: one to one, within this reply and with what earlier replies taught
                if len(forward) != len(backward) or len(forward) + len(literal) != len(distinct):
                    return False
                if (
                    _disagree(forward, golden_to_live)
                    or _disagree(backward, live_to_golden)
                    or _disagree(forward, strict_forward)
                    or _disagree(backward, strict_backward)
                ):
                    return False
                strict_forward.update(forward)
                strict_backward.update(backward)
                if from_field:
                    field_pairs.append(forward)
            learn.append((golden_columns, kind))
        # the reply matches: learn
        for golden_columns, kind in learn:
            # rule 4: aliases follow first appearance; merge the columns only for new values
            values: set[str | None] = set().union(*golden_columns)
            values -= self._seen.keys()
            values.discard(None)
            values.discard("")
            values -= client
            if not values:
                continue
            # row by row the one value that is there (each row matched one alternative), in
            # order; None (another alternative) and "" (never generated) left out
            rows: Iterable[str | None] = golden_columns[0]
            if len(golden_columns) > 1:
                rows = itertools.chain.from_iterable(zip(*golden_columns, strict=True))
            ordered: dict[str, None] = dict.fromkeys(filter(None, rows))
            for unwanted in ordered.keys() & client:
                del ordered[unwanted]
            # positions of values seen before do not move; new ones go last, in order
            self._seen.update(dict.fromkeys(ordered, kind))
        for forward in field_pairs:
            # learned values that are no shape may hide where the fast path reads literal text
            changed = [g for g in forward.keys() - golden_to_live.keys() if forward[g] != g]
            if changed and not (len(changed) > _BULK and self._all_of_shape(changed, None)):
                for golden in changed:
                    if self._shape_kind(golden) is None:
                        self._literal_danger.update((golden, forward[golden]))
        golden_to_live.update(strict_forward)
        live_to_golden.update(strict_backward)
        for forward in loose_pairs:
            for golden, live in forward.items():
                if golden not in golden_to_live and live not in live_to_golden:
                    golden_to_live[golden] = live
                    live_to_golden[live] = golden
        return True

    def _pair_few(self, expected: list[Any], actual: list[Any], stride: int) -> bool:
        """The fast path's pairing (rules 2 and 3) for a reply with few values: one loop."""
        client = self._client
        golden_to_live = self._golden_to_live
        live_to_golden = self._live_to_golden
        forward: dict[str, str] = {}
        backward: dict[str, str] = {}
        seen: list[tuple[str, str]] = []
        loose_pairs: list[tuple[str, str]] = []
        field_pairs: list[tuple[str, str]] = []
        for base in range(0, len(expected) - 1, stride):
            golden = live = None
            kind = ""
            from_field = False
            for column, column_kind, column_is_field in self._value_columns:
                golden = expected[base + column]
                live = actual[base + column]
                if golden is not None or live is not None:
                    kind, from_field = column_kind, column_is_field
                    break
            if golden is None or live is None:
                return False  # another alternative (kind) matched on one side
            if not golden or golden in client:
                if golden != live:
                    return False  # rule 2: compared exactly
                continue
            if not live or live in client:
                return False  # an empty or client-sent live value: let the walk explain
            seen.append((golden, kind))
            if kind in self._loose:
                if kind in self._value_kinds and not is_of_kind(kind, live):
                    return False
                if from_field:
                    golden_kind = self._shape_kind(golden)
                    if golden_kind is not None and self._shape_kind(live) != golden_kind:
                        return False
                loose_pairs.append((golden, live))
                continue
            mapped = golden_to_live.get(golden) or forward.get(golden)
            if mapped is not None and mapped != live:
                return False
            back = live_to_golden.get(live) or backward.get(live)
            if back is not None and back != golden:
                return False
            forward[golden] = live
            backward[live] = golden
            if from_field and golden != live and golden not in golden_to_live:
                field_pairs.append((golden, live))
        # the reply matches: learn
        for golden, kind in seen:
            self._seen.setdefault(golden, kind)
        for golden, live in field_pairs:
            if self._shape_kind(golden) is None:
                self._literal_danger.update((golden, live))
        golden_to_live.update(forward)
        live_to_golden.update(backward)
        for golden, live in loose_pairs:
            if golden not in golden_to_live and live not in live_to_golden:
                golden_to_live[golden] = live
                live_to_golden[live] = golden
        return True

    def _all_of_shape(self, values: Iterable[str], kind: str | None) -> bool:
        """Whether every value is wholly of the shape `kind` (any shape for None): one call."""
        pattern = self._line_patterns.get(kind)
        if pattern is None:
            shapes = self._generated_shapes
            choices = [shapes[kind]] if kind is not None else list(shapes.values())
            if not choices or (kind is not None and kind not in shapes):
                return False
            one = "|".join(f"(?:{choice})" for choice in choices)
            try:
                pattern = re.compile(f"(?:{one})(?:\n(?:{one}))*")
            except re.error:  # e.g. a shape with a named group cannot repeat
                pattern = re.compile("(?!)")
            self._line_patterns[kind] = pattern
        return pattern.fullmatch("\n".join(values)) is not None

    def matches_frames(self, expected: list[SseEvent], actual: list[SseEvent]) -> bool:
        return self.matches_text(
            sse.serialize(expected).decode("utf-8"), sse.serialize(actual).decode("utf-8")
        )
