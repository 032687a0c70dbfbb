"""Matching a live request to a recorded one: the player's pairing rules, in reverse (pure).

The player turns a recorded request into a live one and checks the agent's reply; the stand-in
gets the live request from a client and must find the recorded request it stands for. The
rules (`recorder.rules.pairing`), read the other way:

- A value the recorded request carried that an earlier reply of its file had generated (rule 1
  and 2: a task id, a contextId) is one the stand-in handed out: the live request must carry
  the value the stand-in handed out for it (`mapped`), nothing else.
- A value the client made up (rule 2: the JSON-RPC `id`, a `messageId`, any uuid or timestamp
  shape that no reply gave, a value with a random part such as a per-run suffix:
  `random_template`) matches any value of its kind: any JSON-RPC id, any messageId, any string
  wholly of the same shape or the same template. The pairing is kept (`echo`), one to one, so
  that the reply can carry the client's own value where the recording carried the recorded
  one, and so that a value the client made up once is the same value wherever the recording
  repeats it.
- A secret placeholder (`{{A2A_TOKEN}}`) matches any text, and the text is echoed where the
  recorded reply has the placeholder (a push config's token read back). Which recorded texts
  hold one is read where the placeholders stand (`Step.templates`): a literal `{{name}}` the
  client sent (escaped in the transcript, `recorder.format.literals`) is text like any other.
- A URL on a loopback address (a webhook the client listens on) matches the same URL on any
  loopback address and port, and is echoed like a value the client made up.
- ProtoJSON: a member left out and a member at its default (`is_default`) are the same.
- A body that is not JSON (a malformed call) compares as the text it was sent as, its
  generated shapes (a uuid the client made) matching any value of their kind, as inside a
  JSON string, and its placeholders any text.
- Everything else compares exactly: the HTTP method, the path and query, the JSON-RPC method,
  the rest of the body, and the A2A service headers (`A2A-*`, `Authorization`; the names in
  any case, `A2A-Extensions` as a set): a request without `A2A-Version` is not one with it.
  An agent card fetch (`GET .../agent-card.json`) is discovery, not an A2A operation: its
  headers do not rule a card out, they rank the cards (as `Accept` ranks any reply).

A match has a score (`Matching.score`): leaves equal exactly, then leaves paired by shape or
template, then leaves equal only as defaults; the book answers with the best.

`differences` gives every place that differs, as the player names them (`$.params.id`), so a
request that matches nothing can be told which recorded request came closest and where.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from recorder.addresses import loopback_urls_as_one
from recorder.bindings import jsonrpc
from recorder.format.jsonbody import NOT_JSON, compact_json, json_value
from recorder.format.literals import Template
from recorder.rules.pairing import JSON_STRING, PairingRules
from recorder.serve.spelling import canonical_method, modern

__all__ = [
    "SOFT_HEADERS",
    "LiveRequest",
    "Matching",
    "compared_exactly",
    "is_card_fetch",
    "is_default",
    "random_template",
    "significant_headers",
    "split_target",
    "target_pieces",
]

_EXTENSIONS = "a2a-extensions"
_LEGACY_EXTENSIONS = "x-a2a-extensions"
_SIGNIFICANT = frozenset({"authorization", "accept"})
SOFT_HEADERS = frozenset({"accept"})
"""Headers that rank candidates without ruling one out: what the client accepts."""
# members whose value the client makes up, whatever its shape
_CLIENT_MEMBERS = frozenset({"messageId"})
_TARGET_SEPARATORS = re.compile(r"([/?&=:])")
_PIECES = re.compile(r"([-_.:/ ]+)")
_HEX = re.compile(r"[0-9a-fA-F]+")
_DIGIT = re.compile(r"[0-9]")
_MAX_DIFFERENCES = 20
_CARD = "/agent-card.json"


def split_target(target: str) -> list[str]:
    """`/a2a/rest/tasks/ID:cancel?x=1` -> its pieces and separators, pieces percent-decoded."""
    return [
        piece if index % 2 else unquote(piece)
        for index, piece in enumerate(_TARGET_SEPARATORS.split(target))
    ]


def target_pieces(target: str) -> list[str]:
    """The pieces of a target as written (not percent-decoded), without the separators:
    `split_target`'s pieces before they are read."""
    return _TARGET_SEPARATORS.split(target)[::2]


def significant_headers(headers: Any) -> dict[str, str]:
    """The headers that choose an answer: the A2A service parameters, Authorization and
    Accept, names lower-cased (a repeated header: its values joined by ", ").

    A2A 0.3's `X-A2A-Extensions` is `A2A-Extensions` (the SDK's compat layer sends both
    names), and the extensions are a set: their order and repeats do not matter."""
    found: dict[str, str] = {}
    for name, value in headers:
        lower = name.lower()
        if lower == _LEGACY_EXTENSIONS:
            lower = _EXTENSIONS
        if lower.startswith("a2a-") or lower in _SIGNIFICANT:
            found[lower] = f"{found[lower]}, {value}" if lower in found else value
    extensions = found.get(_EXTENSIONS)
    if extensions is not None:
        items = {item.strip() for item in extensions.split(",")}
        found[_EXTENSIONS] = ", ".join(sorted(items - {""}))
    return found


@dataclass
class LiveRequest:
    """A request as a client sent it to the stand-in."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes
    json: Any = field(init=False)
    pieces: list[str] = field(init=False)
    significant: dict[str, str] = field(init=False)
    canon: Any = field(init=False)
    """The body spelled as A2A 1.0 (`recorder.serve.spelling`)."""
    legacy: bool = field(init=False)
    """Whether the body is spelled as A2A 0.3."""

    def __post_init__(self) -> None:
        self.json = json_value(self.body)  # (a number as it was written: `JsonNumber`)
        self.pieces = split_target(self.target)
        self.significant = significant_headers(self.headers)
        self.canon, self.legacy = modern(self.json)

    @functools.cached_property
    def key(self) -> tuple[str, tuple[str, ...], str | None]:
        """The method, the target's separators, the JSON-RPC method in its 1.0 name
        (`Step.key`)."""
        return (self.method, tuple(self.pieces[1::2]), canonical_method(self.rpc_method))

    @functools.cached_property
    def rpc_method(self) -> str | None:
        return jsonrpc.method_of(self.json)

    @property
    def rpc_id(self) -> Any:
        value = self.json
        return value.get("id") if jsonrpc.is_jsonrpc(value) else None

    def strings(self) -> list[str]:
        """Every string the request carries where a handed-out id could be: the JSON
        strings of its body (the string literals of a body that is not JSON, such as a
        malformed call), its path pieces, its significant header values."""
        found: list[str] = [piece for piece in self.pieces[::2] if piece]
        if self.json is NOT_JSON and self.body:
            text = self.body.decode("utf-8", "replace")
            found.extend(token[1:-1] for token in JSON_STRING.findall(text))
        stack = [self.json]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                found.append(item)
            elif isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        found.extend(self.significant.values())
        return found


class _Differs(Exception):
    """A difference was found and only the first was asked for."""


@functools.lru_cache(maxsize=8192)
def random_template(value: str) -> str | None:
    """`value` with each part that looks made at random (a hex run such as a per-run suffix
    `af33c277`, a long mix of letters and digits, a long number) as `\\0`, or None when it has
    no such part: `tck-missing-af33c277` and `tck-missing-6e3f1958` have one template."""
    if len(value) < 6 or len(value) > 200:
        return None
    pieces = _PIECES.split(value)
    changed = False
    for index in range(0, len(pieces), 2):
        if _random(pieces[index]):
            pieces[index] = "\0"
            changed = True
    return "".join(pieces) if changed else None


def _random(piece: str) -> bool:
    if len(piece) < 6 or not piece.isascii() or not piece.isalnum():
        return False
    if piece.isdigit():
        return len(piece) >= 8
    if _DIGIT.search(piece) is None:
        # a random hex run may hold no digit at all (`afaeddef`: one in ~2,500 of 8 digits)
        return len(piece) >= 8 and _HEX.fullmatch(piece) is not None
    return len(piece) >= 10 or _HEX.fullmatch(piece) is not None


def is_card_fetch(method: str, target: str) -> bool:
    """Whether a request fetches an agent card (discovery, not an A2A operation: its headers
    rank the recorded cards, they rule none out)."""
    return method == "GET" and target.partition("?")[0].endswith(_CARD)


def compared_exactly(rules: PairingRules, value: str, name: str | None) -> bool:
    """Whether a recorded string (at member `name`) matches only itself, whatever the
    conversation (`Matching._string` takes no other reading of it): not a value the client
    makes up (a messageId, a shape, a shape inside a text, a random part), no loopback URL,
    no ProtoJSON default. (An id handed out earlier, and a text that holds a placeholder, are
    the caller's to rule out: `Step.needs`, `Step.templates`.)"""
    if name in _CLIENT_MEMBERS or is_default(value) or random_template(value) is not None:
        return False
    if "//" in value and loopback_urls_as_one(value) != value:
        return False
    return rules.shapes is None or next(rules.shape_matches(value), None) is None


def is_default(value: Any) -> bool:
    """Whether `value` is a ProtoJSON default (null, "", 0, false, [], an enum's
    `*_UNSPECIFIED`, an object of nothing but defaults): the same as the member being
    absent."""
    if value is None or value == "" or value == []:
        return True
    if isinstance(value, dict):
        return all(is_default(item) for item in value.values())
    if isinstance(value, bool | int | float):
        return not value
    return isinstance(value, str) and value.endswith("_UNSPECIFIED")


class Matching:
    """One comparison of a recorded request with a live one, and its score.

    `needs`: the recorded generated values the recorded request carried (handed out by earlier
    replies of its file); `mapped`: recorded -> live values handed out so far in the
    conversation; `echo`: recorded -> live client values paired so far; `templates`: the
    recorded texts that hold placeholders (`Step.templates`). After `compare`,
    `differences` lists what differs and `echoes` the client values newly paired.

    The score (`score`, higher is closer) puts a recording in the client's own spelling (A2A
    0.3 or 1.0) first, then counts the leaves compared: `exact` ones (equal as
    recorded, or the id handed out), `close` ones (a client's value paired with one of the
    same shape or the same template), and `loose` ones (equal only as ProtoJSON defaults, a
    client's messageId of another pattern, a header that ranks but does not rule out).
    """

    def __init__(
        self,
        rules: PairingRules,
        needs: frozenset[str],
        mapped: Mapping[str, str],
        echo: Mapping[str, str],
        *,
        templates: Mapping[str, Template] | None = None,
        first_only: bool = False,
    ) -> None:
        self.rules = rules
        self.templates: Mapping[str, Template] = templates or {}
        self.first_only = first_only
        self.needs = needs
        self.mapped = mapped
        self.echo = echo
        self.echoes: dict[str, str] = {}
        self.differences: list[str] = []
        self.exact = 0
        self.close = 0
        self.loose = 0
        self.respelled = False
        """Set by the caller: compared in A2A 1.0's spelling, the two being spelled apart."""

    @property
    def score(self) -> tuple[int, int, int, int]:
        """(-respelled, exact, close, -loose): compared as a tuple, a request in the
        recording's own spelling first, then more exact leaves."""
        return (-int(self.respelled), self.exact, self.close, -self.loose)

    def _differ(self, where: str, why: str) -> None:
        if len(self.differences) < _MAX_DIFFERENCES:
            self.differences.append(f"{where}: {why}")
        if self.first_only:
            raise _Differs

    def compare(
        self,
        method: str,
        pieces: list[str],
        significant: Mapping[str, str],
        recorded_json: Any,
        recorded_body: bytes,
        live: LiveRequest,
        live_json: Any = NOT_JSON,
    ) -> list[str]:
        """Every difference between the recorded request (given by its parts) and `live`
        (with `first_only`, the first one); `live_json`, when given, is compared for the
        live body (its 1.0 spelling, against a recording's)."""
        with contextlib.suppress(_Differs):
            self._compare(
                method,
                pieces,
                significant,
                recorded_json,
                recorded_body,
                live,
                live.json if live_json is NOT_JSON else live_json,
            )
        return self.differences

    def _compare(
        self,
        method: str,
        pieces: list[str],
        significant: Mapping[str, str],
        recorded_json: Any,
        recorded_body: bytes,
        live: LiveRequest,
        live_json: Any,
    ) -> None:
        if method != live.method:
            self._differ("method", f"recorded {method}, got {live.method}")
        self._target(pieces, live.pieces)
        # the agent card is discovery, not an A2A operation: fetched with or without them,
        # though the headers rank the recorded cards (A2A-Version: 1.0 gets the 1.0 card)
        card = is_card_fetch(live.method, live.target)
        for name in sorted(set(significant) | set(live.significant)):
            recorded, got = significant.get(name), live.significant.get(name)
            if card or name in SOFT_HEADERS:
                if recorded == got:
                    self.exact += 1
                else:
                    self.loose += 1
            elif recorded is None:
                self._differ(f"header {name}", f"not recorded, got {got!r}")
            elif got is None:
                self._differ(f"header {name}", f"recorded {recorded!r}, got none")
            else:
                self._string(recorded, got, f"header {name}", None)
        if recorded_json is NOT_JSON:
            # (`recorded_body` as sent: `Step.body`)
            if recorded_body == live.body:
                if recorded_body:
                    self.exact += 1
            elif not (
                self._placeheld_body(recorded_body, live.body)
                or self._shaped_body(recorded_body, live.body)
            ):
                self._differ("body", "differs from the recorded body (not JSON)")
        elif live_json is NOT_JSON:
            self._differ("body", "recorded JSON, got a body that is not JSON")
        else:
            self._value(recorded_json, live_json, "$", None, top=True)

    def _target(self, recorded: list[str], live: list[str]) -> None:
        if len(recorded) != len(live) or recorded[1::2] != live[1::2]:
            self._differ("target", f"recorded {''.join(recorded)}, got {''.join(live)}")
            return
        for index in range(0, len(recorded), 2):
            self._string(recorded[index], live[index], "target", None)

    def _value(self, recorded: Any, live: Any, where: str, name: str | None, top: bool) -> None:
        if (
            top
            and name == "id"
            and isinstance(recorded, str | int)
            and not isinstance(recorded, bool)
        ):
            if not isinstance(live, str | int) or isinstance(live, bool):
                self._differ(where, f"expected a JSON-RPC id, got {_show(live)}")
            return
        if isinstance(recorded, dict):
            if not isinstance(live, dict):
                self._differ(where, f"recorded an object, got {_show(live)}")
                return
            # ProtoJSON: a member at its default is the same as the member left out
            for key in recorded.keys() - live.keys():
                if is_default(recorded[key]):
                    self.loose += 1
                else:
                    self._differ(f"{where}.{key}", "missing")
            for key in live.keys() - recorded.keys():
                if is_default(live[key]):
                    self.loose += 1
                else:
                    self._differ(f"{where}.{key}", f"not recorded, got {_show(live[key])}")
            is_rpc = top and jsonrpc.is_jsonrpc(recorded)
            for key, item in recorded.items():
                if key in live:
                    self._value(item, live[key], f"{where}.{key}", key, is_rpc)
        elif isinstance(recorded, list):
            if not isinstance(live, list) or len(live) != len(recorded):
                self._differ(where, f"recorded {_show(recorded)}, got {_show(live)}")
                return
            for index, (one, other) in enumerate(zip(recorded, live, strict=True)):
                self._value(one, other, f"{where}[{index}]", None, False)
        elif isinstance(recorded, str):
            if not isinstance(live, str):
                if is_default(recorded) and is_default(live):
                    self.loose += 1
                else:
                    self._differ(where, f"recorded {_show(recorded)}, got {_show(live)}")
            else:
                self._string(recorded, live, where, name)
        elif recorded == live and type(recorded) is type(live):
            self.exact += 1
        elif is_default(recorded) and is_default(live):
            self.loose += 1  # null, 0, false: one default
        else:
            self._differ(where, f"recorded {_show(recorded)}, got {_show(live)}")

    def _string(self, recorded: str, live: str, where: str, name: str | None) -> None:
        if recorded in self.needs:
            expected = self.mapped.get(recorded)
            if expected is None:
                self._differ(where, f"recorded {recorded}, an id this conversation was not given")
            elif live != expected:
                self._differ(where, f"expected {expected} (handed out for recorded {recorded})")
            else:
                self.exact += 1
            return
        kind = self.rules.shape_kind(recorded)
        if kind is not None or name in _CLIENT_MEMBERS:
            if kind is not None and self.rules.shape_kind(live) != kind:
                self._differ(where, f"expected a {kind} value such as {recorded}, got {live!r}")
                return
            if self._echo(recorded, live, where):
                if recorded == live:
                    self.exact += 1
                elif kind is not None or random_template(recorded) == random_template(live):
                    self.close += 1
                else:
                    self.loose += 1  # any messageId will do, but one of its pattern is closer
            return
        if recorded == live:
            self.exact += 1
            return
        held = self.templates.get(recorded) if "{{" in recorded else None
        if held is not None:
            if self._placeheld(held, live):
                return
        elif self.rules.shapes is not None and self._shaped(recorded, live, where):
            return
        template = random_template(recorded)
        if template is not None and template == random_template(live):
            # a value the client made with a random part (a per-run suffix): paired one to one
            if self._echo(recorded, live, where):
                self.close += 1
            return
        if "//" in recorded and loopback_urls_as_one(recorded) != recorded:
            # a loopback URL (a webhook of the client's) on any port, with any random part
            here, there = loopback_urls_as_one(recorded), loopback_urls_as_one(live)
            if here == there or random_template(here) == random_template(there) is not None:
                if self._echo(recorded, live, where):
                    self.close += 1
                return
        self._differ(where, f"recorded {_show(recorded)}, got {_show(live)}")

    def _placeheld(self, held: Template, live: str) -> bool:
        """Whether `live` is the recorded text `held` with its placeholders standing for any
        text (each then echoed: the client's secret, given back where the recorded reply has
        the placeholder)."""
        match = held.pattern.fullmatch(live)
        if match is None:
            return False
        for number, placeholder in enumerate(held.placeholders):
            self.echoes.setdefault(placeholder, match.group(number + 1))
        self.close += 1
        return True

    def _placeheld_body(self, recorded: bytes, live: bytes) -> bool:
        """`_placeheld` for a body that is not JSON (a form the recorder took a secret out of)."""
        if b"{{" not in recorded:
            return False
        held = self.templates.get(recorded.decode("utf-8", "replace"))
        return held is not None and self._placeheld(held, live.decode("utf-8", "replace"))

    def _shaped_body(self, recorded: bytes, live: bytes) -> bool:
        """Whether a body that is not JSON (a malformed call a test suite sends) is the
        recorded one with its generated shapes (a uuid the client made this run) taken as
        the pairing rules take them in a JSON string (`_shaped`): True when it is, or when
        what differs was said already."""
        if self.rules.shapes is None:
            return False
        try:
            recorded_text, live_text = recorded.decode(), live.decode()
        except UnicodeDecodeError:
            return False
        return self._shaped(recorded_text, live_text, "body")

    def _echo(self, recorded: str, live: str, where: str) -> bool:
        """Pair a client's value with the recorded one, one to one; False when it differs."""
        paired = self.echo.get(recorded, self.echoes.get(recorded))
        if paired is None:
            self.echoes[recorded] = live
        elif paired != live:
            self._differ(where, f"expected {paired} (the value the client sent for {recorded})")
            return False
        return True

    def _shaped(self, recorded: str, live: str, where: str) -> bool:
        """Whether `live` is `recorded` with each generated shape inside it replaced by a value
        of the same kind (a handed-out one where the recording had a handed-out one); the
        client's shapes are paired (a uuid it made, quoted inside a text)."""
        parts: list[str] = []
        free: list[str] = []
        last = 0
        assert self.rules.shapes is not None
        for match in self.rules.shape_matches(recorded):
            parts.append(re.escape(recorded[last : match.start()]))
            value = match.group()
            if value in self.needs and value in self.mapped:
                parts.append(re.escape(self.mapped[value]))
            else:
                group = f"k_{match.lastgroup[2:]}" if match.lastgroup else ""
                pattern = self.rules.rules.generated_shapes.get(group[2:], ".+?")
                parts.append(f"((?:{pattern}))")
                free.append(value)
            last = match.end()
        if not parts:
            return False
        parts.append(re.escape(recorded[last:]))
        try:
            found = re.fullmatch("".join(parts), live)
        except re.error:
            return False
        if found is None:
            return False
        for number, value in enumerate(free):
            if value not in self.needs and not self._echo(value, found.group(number + 1), where):
                return True
        self.close += 1
        return True


def _show(value: Any) -> str:
    text = compact_json(value).decode() if value is not NOT_JSON else "no JSON"
    return text if len(text) <= 60 else text[:57] + "..."
