"""The walk: two JSON values normalized place by place (rules 1-6), and what differs explained.

6. Objects compare member by member (order free), arrays item by item; an array of another
   length is aligned first (`recorder.replay.verdict.diff.align`) so a dropped item is one mismatch.
   `rules.ignored_paths` (and the error free-text paths unless `compare_error_message`) are
   skipped; `rules.unordered_paths` arrays compare as multisets.

The walk (`Walk._normalize`) pairs the values of both trees place by place (rules 1-4 in
`recorder.rules.pairing`, rule 5 in `recorder.replay.verdict.strings`, rule 6 here; rule 8's secret
members are compared for presence only) and returns both normalized: generated values as their
aliases, ignored members left out, arrays of another length or order laid out item by item. A place
that compares equal comes back as one and the same object on both sides, so `golden is live` is the
verdict, and the normalized values share every part that matches. Only when they differ does
deepdiff run, on the normalized values, to say where and how (`_explain`); it passes over the
shared parts without looking into them, and the notes the walk kept (which real ids stand
behind two aliases, an array's item counts) become the mismatches' messages. A difference more
than 64 levels deep is found by a loop of the same report instead (deepdiff copies its path at
each level: quadratic in the depth).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from recorder.jsonpath import State, format_path
from recorder.replay.verdict.diff import ABSENT, Mismatch, align
from recorder.replay.verdict.strings import Strings
from recorder.rules.kinds import describe_kind, is_of_kind
from recorder.rules.pairing import AliasMap, PairingRules

__all__ = ["Walk"]

_Keys = tuple[str | int, ...]


class Walk:
    """Rule 6: the tree walk over two JSON values, pairing in `aliases` as it goes."""

    def __init__(
        self, rules: PairingRules, aliases: AliasMap, strings: Strings, *, status: bool = False
    ) -> None:
        self.rules = rules.rules
        self._made_of = (rules, aliases, strings)
        self._shapes = rules.shapes
        self._value_kinds = rules.value_kinds
        self._field_kind = rules.field_kind
        # `status`: this walk compares failed gRPC calls' google.rpc.Status bodies
        self._ignored = self.rules.status_ignored_matcher if status else self.rules.ignored_matcher
        self._status_walk: Walk | None = self if status else None
        self._unordered = self.rules.unordered_matcher
        self._generated_paths = rules.generated_paths
        # rule 8: secret member names in any case, as the recorder redacts them
        self._secret_fields = {k.lower(): v for k, v in self.rules.secret_fields.items()}
        self._client = aliases.client
        self._golden_to_live = aliases.golden_to_live
        self._live_to_golden = aliases.live_to_golden
        self._pair = aliases.pair
        self.alias = aliases.alias
        self._alias_of = aliases.alias_of
        self._live_alias = aliases.live_alias
        self._compare_text = strings.compare
        self._wildcard_text = strings.wildcard

    def compare_json(
        self,
        expected: Any,
        actual: Any,
        frame: int | None,
        out: list[Mismatch],
        *,
        status: bool = False,
    ) -> None:
        """Rule 6: both values normalized; where they differ, deepdiff says where and how.
        `status`: they are a failed gRPC call's google.rpc.Status (`Rules.status_ignored_matcher`
        says what is left out), compared by a walk of the same pairs that knows it."""
        if status and self._status_walk is not self:
            if self._status_walk is None:
                self._status_walk = Walk(*self._made_of, status=True)
            self._status_walk.compare_json(expected, actual, frame, out, status=True)
            return
        notes = _Notes()
        golden, live = self._normalize(
            expected,
            actual,
            (),
            (),
            None,
            self._ignored.start(),
            self._unordered.start(),
            self._generated_paths.start(),
            notes,
        )
        if golden is not live:
            out.extend(_explain(golden, live, frame, notes))

    def _normalize(
        self,
        expected: Any,
        actual: Any,
        keys: _Keys,
        place: _Keys,
        kind: str | None,
        ignored: State,
        unordered: State,
        generated: State,
        notes: _Notes,
    ) -> tuple[Any, Any]:
        """The recorded and the live value normalized for comparison (rules 1-6).

        Generated values are shown as their aliases, ignored members are left out, and an
        array of another length (or an unordered one) is laid out item by item, a missing item
        against `ABSENT`. A place that compares equal is one and the same object on both sides:
        `golden is live` is the verdict, and deepdiff skips such places without looking in.
        `keys` is the place in the replies (what reports name), `place` the place in the
        normalized values; they differ below a laid-out array (`_Notes.layouts`).
        """
        if generated and self._generated_paths.matches(generated):
            kind = self.rules.generated_path_kind(keys) or kind
        if isinstance(expected, dict):
            if not isinstance(actual, dict):
                return self._display(expected), self._display_live(actual)
            golden_members: dict[str, Any] = {}
            live_members: dict[str, Any] = {}
            differs = False
            for name, expected_value in expected.items():
                child_ignored = self._ignored.step(ignored, name)
                if child_ignored and self._ignored.matches(child_ignored):
                    continue
                if name not in actual:
                    golden_members[name] = (
                        self._secret_placeholder(name)
                        if name.lower() in self._secret_fields
                        else self._display(expected_value)
                    )
                    differs = True
                    continue
                if name.lower() in self._secret_fields:  # rule 8: there, not compared
                    golden_members[name] = live_members[name] = expected_value
                    continue
                golden_members[name], live_members[name] = pair = self._normalize(
                    expected_value,
                    actual[name],
                    (*keys, name),
                    (*place, name),
                    self._field_kind(name, expected),
                    child_ignored,
                    self._unordered.step(unordered, name),
                    self._generated_paths.step(generated, name),
                    notes,
                )
                differs = differs or pair[0] is not pair[1]
            for name, actual_value in actual.items():
                if name in expected:
                    continue
                child_ignored = self._ignored.step(ignored, name)
                if child_ignored and self._ignored.matches(child_ignored):
                    continue
                live_members[name] = (
                    self._secret_placeholder(name)
                    if name.lower() in self._secret_fields
                    else self._display_live(actual_value)
                )
                differs = True
            return (golden_members, live_members) if differs else (expected, expected)
        if isinstance(expected, list):
            if not isinstance(actual, list):
                return self._display(expected), self._display_live(actual)
            if unordered and self._unordered.matches(unordered):
                return self._normalize_unordered(
                    expected, actual, keys, place, kind, (ignored, unordered, generated), notes
                )
            if len(expected) == len(actual):
                pairs: list[tuple[int | None, int | None]] = list(
                    zip(range(len(expected)), range(len(actual)), strict=True)
                )
            else:
                pairs = align(
                    [json.dumps(self.wildcard(v), sort_keys=True) for v in expected],
                    [json.dumps(self.wildcard(v), sort_keys=True) for v in actual],
                )
                notes.layouts[place] = pairs
            message = f"expected {len(expected)} items, got {len(actual)}"
            golden_items: list[Any] = []
            live_items: list[Any] = []
            differs = len(expected) != len(actual)
            for k, (i, j) in enumerate(pairs):
                if i is not None and j is not None:
                    child_ignored = self._ignored.step(ignored, i)
                    if child_ignored and self._ignored.matches(child_ignored):
                        golden_item = live_item = expected[i]  # not compared: the same object
                    else:
                        golden_item, live_item = self._normalize_item(
                            expected, actual, (i, j, k), (child_ignored, unordered, generated),
                            keys, place, kind, notes,
                        )  # fmt: skip
                        differs = differs or golden_item is not live_item
                elif i is not None:
                    golden_item, live_item = self._display(expected[i]), ABSENT
                    notes.messages[(*place, k)] = message
                else:
                    assert j is not None
                    golden_item, live_item = ABSENT, self._display_live(actual[j])
                    notes.messages[(*place, k)] = message
                golden_items.append(golden_item)
                live_items.append(live_item)
            return (golden_items, live_items) if differs else (expected, expected)
        if isinstance(expected, str) and isinstance(actual, str):
            if kind is not None and expected and expected not in self._client:
                if expected == actual and self._golden_to_live.get(expected) == actual:
                    return expected, expected
                problem = self._pair(expected, actual, kind)
                if problem is None:
                    return expected, expected
                notes.messages[place] = problem
                return self.alias(expected, kind), self._live_alias(actual, kind)
            text_problem = self._compare_text(expected, actual)
            if text_problem is None:
                return expected, expected
            notes.messages[place] = text_problem[2]
            return text_problem[0], text_problem[1]
        if kind in self._value_kinds and not isinstance(expected, dict | list | str):
            # a value kind (`integer`, `number`) at a number's place: any value of the kind
            if is_of_kind(kind, actual):
                return expected, expected
            notes.messages[place] = f"expected {describe_kind(kind)}"
            return self._display(expected), self._display_live(actual)
        if isinstance(actual, dict | list) or not _same_scalar(expected, actual):
            return self._display(expected), self._display_live(actual)
        return expected, expected

    def _normalize_item(
        self,
        expected: list[Any],
        actual: list[Any],
        slots: tuple[int, int, int],
        states: tuple[State, State, State],
        keys: _Keys,
        place: _Keys,
        kind: str | None,
        notes: _Notes,
    ) -> tuple[Any, Any]:
        """Recorded item i against live item j (`slots` is (i, j, k)) as item k of the
        normalized arrays; `states[0]` is item i's ignored state already, the others the
        array's."""
        i, j, k = slots
        ignored, unordered, generated = states
        return self._normalize(
            expected[i],
            actual[j],
            (*keys, i),
            (*place, k),
            kind,
            ignored,
            self._unordered.step(unordered, i),
            self._generated_paths.step(generated, i),
            notes,
        )

    def _normalize_unordered(
        self,
        expected: list[Any],
        actual: list[Any],
        keys: _Keys,
        place: _Keys,
        kind: str | None,
        states: tuple[State, State, State],
        notes: _Notes,
    ) -> tuple[Any, Any]:
        """Rule 6: an unordered array matches when its items pair up one to one. Laid out as
        the pairs in recorded order, then the recorded items no live item matches, then the
        live items left over."""
        ignored, unordered, generated = states
        by_key: dict[str, list[int]] = {}
        for j in range(len(actual)):
            by_key.setdefault(json.dumps(self.wildcard(actual[j]), sort_keys=True), []).append(j)
        pairs: list[tuple[int, int]] = []
        unmatched: list[int] = []
        for i, item in enumerate(expected):
            candidates = by_key.get(json.dumps(self.wildcard(item), sort_keys=True))
            if candidates:
                pairs.append((i, candidates.pop(0)))
            else:
                unmatched.append(i)
        extra = sorted(j for js in by_key.values() for j in js)
        golden_items: list[Any] = []
        live_items: list[Any] = []
        differs = bool(unmatched or extra)
        for k, (i, j) in enumerate(pairs):
            golden_item, live_item = self._normalize_item(
                expected, actual, (i, j, k), (self._ignored.step(ignored, i), unordered, generated),
                keys, place, kind, notes,
            )  # fmt: skip
            differs = differs or golden_item is not live_item
            golden_items.append(golden_item)
            live_items.append(live_item)
        if not differs:
            return expected, expected
        for i in unmatched:
            notes.messages[(*place, len(golden_items))] = "no live item matches (order ignored)"
            golden_items.append(self._display(expected[i]))
            live_items.append(ABSENT)
        for j in extra:
            notes.messages[(*place, len(golden_items))] = "unexpected live item (order ignored)"
            golden_items.append(ABSENT)
            live_items.append(self._display_live(actual[j]))
        notes.layouts[place] = [
            *pairs,
            *((i, None) for i in unmatched),
            *((None, j) for j in extra),
        ]
        return golden_items, live_items

    # --- normalized forms for display and alignment ---------------------------------------------

    def _display(self, value: Any, kind: str | None = None, live: bool = False) -> Any:
        """A recorded (or live) value with its generated values shown as aliases, for reports."""

        def text(s: str, k: str | None) -> str:
            if k is not None and s and s not in self._client:
                if live:
                    return self._live_alias(s, k)
                return self._alias_of(s) or s
            if self._shapes is None:
                return s
            table = self._live_to_golden if live else None

            def sub(match: re.Match[str]) -> str:
                found = match.group()
                if found in self._client or match.lastgroup is None:
                    return found
                golden = table.get(found) if table is not None else found
                if golden is None:
                    return found
                return self._alias_of(golden) or found

            return self._shapes.sub(sub, s)

        shown = _map_with_kinds(value, kind, self._field_kind, text)
        return self._mask_secrets(shown) if self._secret_fields else shown

    def _mask_secrets(self, value: Any) -> Any:
        """A value with every secret member's value shown as its placeholder (rule 8): a
        report must not print a secret (nor write it into a JUnit file)."""
        if isinstance(value, dict):
            return {
                name: self._secret_placeholder(name)
                if name.lower() in self._secret_fields
                else self._mask_secrets(item)
                for name, item in value.items()
            }
        if isinstance(value, list):
            return [self._mask_secrets(item) for item in value]
        return value

    def _secret_placeholder(self, name: str) -> str:
        return "{{" + self._secret_fields[name.lower()] + "}}"

    def _display_live(self, value: Any) -> Any:
        return self._display(value, live=True)

    def wildcard(self, value: Any) -> Any:
        """A value with every generated value replaced by `<kind>` (and every secret member's
        by its placeholder: rule 8): the key for aligning items."""
        if self._secret_fields:
            value = self._mask_secrets(value)
        return _map_with_kinds(value, None, self._field_kind, self._wildcard_leaf)

    def _wildcard_leaf(self, text: str, kind: str | None) -> str:
        if kind is not None and text and text not in self._client:
            return f"<{kind}>"
        return self._wildcard_text(text)


def _same_scalar(a: Any, b: Any) -> bool:
    # JSON true is not 1, and 1 is not "1"
    if type(a) is not type(b) and not (
        isinstance(a, int | float)
        and isinstance(b, int | float)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        return False
    return bool(a == b)


@dataclasses.dataclass
class _Notes:
    """What normalizing two values learned that the normalized values cannot say."""

    messages: dict[_Keys, str] = dataclasses.field(default_factory=dict)
    """Place in the normalized values -> why it differs (two aliases' real ids, an item count)."""
    layouts: dict[_Keys, list[tuple[int | None, int | None]]] = dataclasses.field(
        default_factory=dict
    )
    """Place of a laid-out array -> (recorded index, live index) of each normalized item."""

    def keys(self, place: _Keys) -> _Keys:
        """The place in the replies that a place in the normalized values stands for: an item
        of a laid-out array is named by its recorded index, or its live index when only live."""
        keys = list(place)
        for n, key in enumerate(place):
            if isinstance(key, int):
                layout = self.layouts.get(place[:n])
                if layout is not None:
                    i, j = layout[key]
                    index = i if i is not None else j
                    assert index is not None  # a laid-out item is on one side at least
                    keys[n] = index
        return tuple(keys)


def _explain(golden: Any, live: Any, frame: int | None, notes: _Notes) -> list[Mismatch]:
    """The mismatches between two normalized values that differ, in the order of the reply
    (recorded members first, then members only the live reply has), as deepdiff finds them."""
    found: list[tuple[int, Mismatch]] = []
    order = _visit_order(golden, live)
    for place, expected, actual in _differences(golden, live):
        found.append(
            (
                order.get(place, len(order)),
                Mismatch(
                    format_path(notes.keys(place)),
                    expected,
                    actual,
                    frame,
                    notes.messages.get(place, ""),
                ),
            )
        )
    if not found:
        # two aliases that read alike (a live value spelled "<id:1>"): the verdict stands
        found.append((0, Mismatch("$", golden, live, frame, "; ".join(notes.messages.values()))))
    found.sort(key=itemgetter(0))
    return [mismatch for _, mismatch in found]


def _differences(golden: Any, live: Any) -> list[tuple[_Keys, Any, Any]]:
    """(place, expected, actual) for each place where two normalized values differ, from
    deepdiff; ABSENT for a member or item on one side only."""
    if _differs_deeper_than(golden, live, _DEEPDIFF_DEPTH):
        # deepdiff copies its path at each level: quadratic in the depth (12 s at 490 levels,
        # where it stops with a RecursionError), for the same report
        return _differences_without_recursion(golden, live)
    from deepdiff import DeepDiff  # on the first mismatch only: deepdiff takes ~0.1 s to import
    from deepdiff.helper import notpresent

    try:
        tree = DeepDiff(
            golden,
            live,
            view="tree",
            # the normalized arrays are laid out item by item already
            zip_ordered_iterables=True,
            # every member's own path, however many differ (not the whole object past a third)
            threshold_to_diff_deeper=0,
            # JSON members named "__x" are members like any other
            ignore_private_variables=False,
            cache_size=0,
            log_frequency_in_sec=0,
        )
    except RecursionError:
        # deepdiff recurses about twice per level: past ~490 levels, the same walk without
        # recursion (what deepdiff reports, with the options above)
        return _differences_without_recursion(golden, live)
    return [
        (
            tuple(level.path(output_format="list")),
            ABSENT if level.t1 is notpresent else level.t1,
            ABSENT if level.t2 is notpresent else level.t2,
        )
        for levels in tree.values()
        for level in levels
    ]


_DEEPDIFF_DEPTH = 64  # levels of nesting where two values differ, past which deepdiff is not used


def _differs_deeper_than(golden: Any, live: Any, depth: int) -> bool:
    """Whether two normalized values differ more than `depth` levels down (the parts they
    share, one and the same object, are not looked into)."""
    stack: list[tuple[Any, Any, int]] = [(golden, live, 0)]
    while stack:
        g, a, level = stack.pop()
        if g is a:
            continue
        if level > depth:
            return True
        if type(g) is dict and type(a) is dict:
            stack.extend((g[name], a[name], level + 1) for name in g if name in a)
        elif type(g) is list and type(a) is list:
            stack.extend((x, y, level + 1) for x, y in zip(g, a, strict=False))
    return False


def _differences_without_recursion(golden: Any, live: Any) -> list[tuple[_Keys, Any, Any]]:
    found: list[tuple[_Keys, Any, Any]] = []
    stack: list[tuple[Any, Any, _Keys]] = [(golden, live, ())]
    while stack:
        g, a, place = stack.pop()
        if g is a:
            continue
        if type(g) is dict and type(a) is dict:
            for name in g:
                if name in a:
                    stack.append((g[name], a[name], (*place, name)))
                else:
                    found.append(((*place, name), g[name], ABSENT))
            found.extend(((*place, name), ABSENT, a[name]) for name in a if name not in g)
        elif type(g) is list and type(a) is list:
            for k in range(max(len(g), len(a))):
                item_g = g[k] if k < len(g) else ABSENT
                item_a = a[k] if k < len(a) else ABSENT
                if item_g is ABSENT or item_a is ABSENT:
                    found.append(((*place, k), item_g, item_a))
                else:
                    stack.append((item_g, item_a, (*place, k)))
        elif type(g) is not type(a) or g != a:
            found.append((place, g, a))
    return found


def _visit_order(golden: Any, live: Any) -> dict[_Keys, int]:
    """Place -> rank, for the places where two normalized values differ, in reply order
    (pre-order: a member before the members inside it; recorded members, then live-only)."""
    order: dict[_Keys, int] = {}
    stack: list[tuple[Any, Any, _Keys]] = [(golden, live, ())]
    while stack:
        g, a, place = stack.pop()
        order[place] = len(order)
        if g is a:
            continue
        children: list[tuple[Any, Any, _Keys]] = []
        if isinstance(g, dict) and isinstance(a, dict):
            children.extend(
                (value, a.get(name, ABSENT), (*place, name)) for name, value in g.items()
            )
            children.extend(
                (ABSENT, value, (*place, name)) for name, value in a.items() if name not in g
            )
        elif isinstance(g, list) and isinstance(a, list):
            children.extend(
                (g[k] if k < len(g) else ABSENT, a[k] if k < len(a) else ABSENT, (*place, k))
                for k in range(max(len(g), len(a)))
            )
        stack.extend(reversed(children))
    return order


def _map_with_kinds(
    value: Any,
    kind: str | None,
    field_kind: Callable[[str | int, dict[str, Any]], str | None],
    leaf: Callable[[str, str | None], str],
) -> Any:
    if isinstance(value, str):
        return leaf(value, kind)
    if isinstance(value, dict):
        return {
            name: _map_with_kinds(item, field_kind(name, value), field_kind, leaf)
            for name, item in value.items()
        }
    if isinstance(value, list):
        return [_map_with_kinds(item, kind, field_kind, leaf) for item in value]
    return value
