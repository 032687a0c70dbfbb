"""Which recorded requests a live one can match, found without scoring the others (pure).

A live request matches a recorded one only if it shares what `Matching` compares exactly, so
the steps are filed by that, once, when the stand-in starts (linear in the recording):

1. `Step.key`: the HTTP method, the target's separators and the JSON-RPC method in its 1.0
   name (the binding and the operation).
2. The request's **outline**: the names of its A2A service headers (but on a card fetch, and
   `Accept`, which rank and do not rule out), and the places of its body's leaves that are not
   ProtoJSON defaults (`is_default`: a default is the member left out), but for a JSON-RPC
   `id` and a `messageId` (any value of the client's matches, a default too) and a push
   config's `url` (not matched): every one must be in the live request, and nothing more.
3. Within those, an **anchor**: one string of the recorded request that only itself matches
   (`compared_exactly`: no value the client makes up, no shape, no loopback URL; no text
   that holds a placeholder, `Step.templates`; no id an earlier reply handed out), with its
   place (a target piece, a member's path, a body that is not JSON, as sent), the rarest
   among the steps filed alike. A step without one is a
   candidate of every request filed alike.

A request's candidates are thus the steps filed with its key and outline whose anchor is one
of its (place, string) pairs, and the anchorless ones: every step that can match is among
them, each still scored. `Matching` compares a request as recorded, or both in A2A 1.0's
spelling (`Step.spelled`) when the two are spelled apart: a step is filed under both its
readings, and a live request looks under both of its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from recorder.format.jsonbody import NOT_JSON
from recorder.rules.pairing import PairingRules
from recorder.serve.match import (
    SOFT_HEADERS,
    LiveRequest,
    compared_exactly,
    is_card_fetch,
    is_default,
)
from recorder.serve.steps import Key, Step

__all__ = ["StepIndex"]

Path = tuple[Any, ...]
"""A place in a JSON value: member names and item indexes."""
Place = tuple[Any, ...]
"""A string and where it is: ("target", index, piece), ("json", path, value), ("body", text)."""
Outline = tuple[frozenset[str], frozenset[tuple[Any, ...]] | None]
"""(the ruling header names, the non-default leaves' paths; None: a body that is not JSON)."""
_Filed = tuple[Key, Outline]
_NOT_OUTLINED = frozenset({"messageId", "url"})  # (any value matches; not matched)


class StepIndex:
    """The steps by key, outline and anchor; `candidates` gives a live request's."""

    def __init__(self, steps: Iterable[Step], rules: PairingRules) -> None:
        self._rules = rules
        self._exact: dict[str, bool] = {}
        """`compared_exactly` of the strings seen (many recur: one look each)."""
        filed: dict[_Filed, list[tuple[Step, list[Place]]]] = {}
        for step in steps:
            request = step.exchange.request
            card = is_card_fetch(request.method, request.target)
            forms = [step.json]
            canon, _ = step.spelled
            if canon is not step.json and not step.unknown_method:
                forms.append(canon)  # (compared in 1.0's spelling with a request in the other)
            for form in forms:
                paths, strings = _read(form)
                outline = _outline(paths, step.significant, card)
                anchors = self._anchors(step, strings)
                filed.setdefault((step.key, outline), []).append((step, anchors))
        self._exact.clear()
        self._anchored: dict[_Filed, dict[Place, list[Step]]] = {}
        self._always: dict[_Filed, list[Step]] = {}
        for where, entries in filed.items():
            counts = Counter(place for _, anchors in entries for place in anchors)
            table = self._anchored.setdefault(where, {})
            for step, anchors in entries:
                if anchors:
                    # the rarest (the first of the rarest): the fewest candidates for a
                    # request that shares it
                    table.setdefault(min(anchors, key=counts.__getitem__), []).append(step)
                else:
                    self._always.setdefault(where, []).append(step)

    def candidates(self, live: LiveRequest) -> list[Step]:
        """The steps `live` can match (every one that does, and maybe others), in file
        order."""
        key = live.key
        card = is_card_fetch(live.method, live.target)
        forms = [live.json] if live.canon is live.json else [live.json, live.canon]
        pieces = [("target", i, live.pieces[i]) for i in range(0, len(live.pieces), 2)]
        found: dict[tuple[int, int], Step] = {}
        for form in forms:
            paths, strings = _read(form)
            where = (key, _outline(paths, live.significant, card))
            table = self._anchored.get(where)
            if table is None:
                continue
            for step in self._always.get(where, ()):
                found[step.file, step.index] = step
            places: list[Place] = list(pieces)
            if form is not NOT_JSON:
                places.extend(("json", path, string) for path, string in strings)
            elif live.body:
                places.append(("body", live.body.decode("utf-8", "replace")))
            for place in places:
                for step in table.get(place, ()):
                    found[step.file, step.index] = step
        return [found[spot] for spot in sorted(found)]

    def _anchors(self, step: Step, strings: list[tuple[Path, str]]) -> list[Place]:
        """The places of `step`'s request (its body's `strings`) that only themselves match,
        in order."""
        needs, templates = step.needs, step.templates
        anchors: list[Place] = [
            ("target", index, piece)
            for index, piece in enumerate(step.pieces)
            if index % 2 == 0
            and piece
            and piece not in needs
            and piece not in templates
            and self._exactly(piece)
        ]
        if step.json is NOT_JSON:
            text = step.body.decode("utf-8", "replace")  # (as sent)
            if step.body and text not in templates and self._exactly(text):
                anchors.append(("body", text))
            return anchors
        anchors.extend(
            ("json", path, string)
            for path, string in strings
            if _outlined(path)
            and string not in needs
            and string not in templates
            and self._exactly(string)
        )
        return list(dict.fromkeys(anchors))

    def _exactly(self, value: str) -> bool:
        # (no anchor is a messageId's: its name does not count)
        known = self._exact.get(value)
        if known is None:
            known = self._exact[value] = compared_exactly(self._rules, value, None)
        return known


def _outlined(path: Path) -> bool:
    """Whether a leaf's place counts in the outline (and may anchor)."""
    return path != ("id",) and not (path and path[-1] in _NOT_OUTLINED)


def _outline(paths: frozenset[Path] | None, significant: dict[str, str], card: bool) -> Outline:
    headers = frozenset() if card else frozenset(significant.keys() - SOFT_HEADERS)
    return headers, paths


def _read(form: Any) -> tuple[frozenset[Path] | None, list[tuple[Path, str]]]:
    """(the outlined paths of a JSON value's leaves that are not ProtoJSON defaults, every
    (path, string) it holds), members by name, items by index; (None, []) for NOT_JSON."""
    if form is NOT_JSON:
        return None, []
    paths: list[Path] = []
    strings: list[tuple[Path, str]] = []
    stack: list[tuple[Any, Path]] = [(form, ())]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            strings.append((where, item))
            if item and not item.endswith("_UNSPECIFIED"):  # (`is_default` of a string)
                paths.append(where)
        elif isinstance(item, dict):
            stack.extend((member, (*where, name)) for name, member in item.items())
        elif isinstance(item, list):
            stack.extend((member, (*where, number)) for number, member in enumerate(item))
        elif not is_default(item):
            paths.append(where)
    return frozenset(path for path in paths if _outlined(path)), strings
