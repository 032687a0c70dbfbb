"""Strings of a replay: the agent's address (rule 5), secret placeholders (rule 9), and one
string compared with another, generated values inside it paired (rules 1 and 2, see
`recorder.rules.pairing`).

5. The agent's addresses, in any spelling (a URL `http://localhost:41242/a2a`, a bare
   `127.0.0.1:18702` such as a gRPC interface, inside any string), pair one to one like
   generated ids (`Addresses`): the recorded base (`recorded_base`) with the live base first
   (`<agent>`), every other address as met (`<address:N>`). A card recorded on localhost:41242
   and :18702 matches one served on 127.0.0.1:5555 and :6001; one that lists :5555 twice does
   not. Only loopback names and the agent's own host make an address (`app.py:12` is text).
9. A secret placeholder (`secret_placeholders`) left in a recorded string, because its
   variable is not set (the player fills the set ones first), matches any text: the recorder
   wrote a secret the agent made and echoed (`"key {{API_KEY}} accepted"`) so.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from recorder.addresses import LOOPBACK_HOST, LOOPBACK_NAMES, address_key, split_netloc
from recorder.format.literals import PLACEHOLDER, escape_json_text
from recorder.rules.pairing import (
    JSON_STRING,
    AliasMap,
    PairingRules,
    one_to_one_conflict,
    string_value,
)

__all__ = ["AGENT", "Addresses", "Strings", "map_json_strings"]

AGENT = "<agent>"
_ADDRESS = "<address>"  # the kind of an address among the values of a string (no rules kind)
_LOOPBACK_HOST = re.compile(LOOPBACK_HOST, re.IGNORECASE)


def map_json_strings(text: str, mapper: Callable[[str], str]) -> str:
    """JSON text with each string literal passed through `mapper`; everything else kept, a
    string's own escapes too (`\\u00e9`, a literal's `\\u007b{`: `recorder.format.literals`) where
    the mapper changed only text written as it is (ids, addresses)."""

    def sub(match: re.Match[str]) -> str:
        token = match.group()
        value = string_value(token)
        if value is None:
            return token  # no JSON string (the text is no JSON): kept as it is
        new = mapper(value)
        if new == value:
            return token
        if "\\" in token:
            kept = '"' + mapper(token[1:-1]) + '"'
            if string_value(kept) == new:
                return kept
        written = json.dumps(new, ensure_ascii=False)
        placeholders = {m.group(1) for m in PLACEHOLDER.finditer(token)}
        return escape_json_text(written, placeholders)

    return JSON_STRING.sub(sub, text)


def _base(url: str | None) -> tuple[str, str] | None:
    """`"http://localhost:41242/"` -> ("http://localhost:41242", "localhost:41242")."""
    if not url:
        return None
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}", parts.netloc


# `LOOPBACK_HOST`'s names for a regex that matches case (it keeps the regex's quick skip to
# the names' first letters)
_LOOPBACK_NAMES = ("localhost", "LOCALHOST", r"127(?:\.[0-9]{1,3}){3}", r"\[::1\]")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@functools.lru_cache(maxsize=32)
def _address_pattern(hosts: tuple[str, ...]) -> re.Pattern[str]:
    """An address (see `Addresses`): `host:port` whose host is a loopback name or one of
    `hosts` (group `h`), or such a host with no port right after `://` (group `u`). Whether a
    `host:port` sits inside a longer name (`my-localhost:1`) is `Addresses.spans`'s look: a
    lookbehind here would cost the regex its quick skip to the first letters of the names."""
    host = "(?:" + "|".join([*_LOOPBACK_NAMES, *map(re.escape, hosts)]) + ")"
    return re.compile(rf"(?P<h>{host}):[0-9]{{1,5}}(?![0-9])|://(?P<u>{host})(?![\w\-:]|\.\w)")


@functools.lru_cache(maxsize=32)
def _patterns(*netlocs: str | None) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The address regex for agents at `netlocs`, and what a text must hold to hold one."""
    hosts = {
        host
        for netloc in netlocs
        if netloc is not None
        for host in (split_netloc(netloc)[0], split_netloc(netloc)[0].lower())
    }
    hosts = {host for host in hosts if not _LOOPBACK_HOST.fullmatch(host)}
    needles = ["localhost", "LOCALHOST", r"127\.", r"\[::1\]", *map(re.escape, sorted(hosts))]
    return _address_pattern(tuple(sorted(hosts))), re.compile("|".join(needles))


def _spellings(key: str) -> list[str]:
    """The ways an address key is written: `localhost:5000`, `127.0.0.1:5000`, `[::1]:5000`."""
    host, port = split_netloc(key)
    if host != "localhost":
        return [key]
    return [f"{name}:{port}" if port else name for name in LOOPBACK_NAMES]


class Addresses:
    """Rule 5: the agent's addresses, recorded and live, paired one to one.

    An *address* is a `host:port` whose host is a loopback name (`localhost`, `127.x.x.x`,
    `[::1]`) or the recorded or live agent's host, with or without a scheme, anywhere in a
    string (a card's `http://localhost:41242/a2a/jsonrpc`, a gRPC `127.0.0.1:18702`, an error
    text); the scheme and the path around it are compared as text. The loopback names of one
    port are one address (an agent on 127.0.0.1 may call itself localhost).

    Like generated ids (rule 3), a recorded address and the live address in its place pair one
    to one across the file: the recorded base (`recorded_base`, from the Host header) with the
    live base first, then every other address as it is met. A live address that already stands
    for another recorded one (a card listing one live port twice where the recording had two)
    is a mismatch. An address the client sends in a request (a webhook of its own) that no
    reply paired yet pairs with itself: compared exactly. Reports show the base as `<agent>`
    and the others as `<address:N>`, numbered by first sight.
    """

    def __init__(self, recorded_base: str | None, live_base: str) -> None:
        recorded = _base(recorded_base)
        live = _base(live_base)
        self.recorded_url: str | None = recorded[0] if recorded else None
        self.recorded_host: str | None = recorded[1] if recorded else None
        self.live_url: str | None = live[0] if live else None
        self.live_host: str | None = live[1] if live else None
        if self.recorded_url is None or self.live_url is None:
            self.recorded_url = self.live_url = None
        self._pattern, self._needles = _patterns(self.recorded_host, self.live_host)
        # what a recorded text must hold to hold a recorded address that pairs with another
        # live one (see `FastPath`): each such address as it may be written
        self.moved_needles: tuple[str, ...] = ()
        self._forward: dict[str, str] = {}  # recorded key -> live key
        self._backward: dict[str, str] = {}  # live key -> recorded key
        self._recorded_spellings: dict[str, list[str]] = {}  # recorded key -> as written
        self._live_spelling: dict[str, str] = {}  # live key -> as first written
        self._aliases: dict[str, str] = {}
        self.base: str | None = None
        """The recorded base's key (shown as `<agent>`), when both bases are known."""
        self.moved = False
        """Whether a recorded address pairs with another live one (requests must change)."""
        if self.swapped:
            assert self.recorded_host is not None and self.live_host is not None
            self.base = address_key(self.recorded_host)
            self._aliases[self.base] = AGENT
            self._learn(self.recorded_host, self.live_host)

    @property
    def swapped(self) -> bool:
        """Whether the recorded base stands for the live one (both are known)."""
        return self.recorded_url is not None and self.live_url is not None

    def may_hold(self, text: str) -> bool:
        """False when `text` surely holds no address (one quick look)."""
        return self._needles.search(text) is not None

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, `host:port` or host) of each address in `text`, in order."""
        found: list[tuple[int, int, str]] = []
        for match in self._pattern.finditer(text):
            start = match.start("h")
            if start < 0:
                found.append((match.start("u"), match.end(), match.group("u")))
            elif start == 0 or text[start - 1] not in _NAME_CHARS:
                found.append((start, match.end(), match.group()))
        return found

    def _replace(self, text: str, new: Callable[[str], str]) -> str:
        """`text` with each address `a` as `new(a)`."""
        found = self.spans(text) if self.may_hold(text) else []
        if not found:
            return text
        out: list[str] = []
        last = 0
        for start, end, address in found:
            out.append(text[last:start])
            out.append(new(address))
            last = end
        out.append(text[last:])
        return "".join(out)

    # --- pairing ----------------------------------------------------------------------------

    def _learn(self, recorded: str, live: str) -> None:
        golden, current = address_key(recorded), address_key(live)
        self._forward[golden] = current
        self._backward[current] = golden
        self._live_spelling.setdefault(current, live)
        self._note(recorded, golden)
        if golden != current:
            self.moved = True
            self.moved_needles = tuple(dict.fromkeys([*self.moved_needles, *_spellings(golden)]))

    def _note(self, recorded: str, golden: str) -> None:
        spellings = self._recorded_spellings.setdefault(golden, [])
        if recorded not in spellings:
            spellings.append(recorded)
        if golden not in self._aliases:
            self._aliases[golden] = f"<address:{len(self._aliases) + (self.base is None)}>"

    def pair(self, recorded: str, live: str) -> str | None:
        """Pair a recorded and a live address (one to one). None, or why they do not pair."""
        golden, current = address_key(recorded), address_key(live)
        self._note(recorded, golden)
        mapped = self._forward.get(golden)
        if mapped is not None:
            if mapped == current:
                return None
            shown = self._live_spelling.get(mapped, mapped)
            return one_to_one_conflict(recorded, shown, live, self._known(current))
        known = self._known(current)
        if known is not None:
            return one_to_one_conflict(recorded, None, live, known)
        self._learn(recorded, live)
        return None

    def _known(self, current: str) -> tuple[str, str] | None:
        """(alias, recorded spelling) of the recorded address live `current` stands for."""
        other = self._backward.get(current)
        if other is None:
            return None
        return self._aliases[other], self._recorded_spellings[other][0]

    def would_pair(self, pairs: list[tuple[str, str]]) -> bool:
        """Whether every (recorded, live) address of `pairs` pairs, with what is known and
        among themselves; nothing learned (the fast path learns only when a whole reply
        passes, with `pair`)."""
        forward: dict[str, str] = {}
        backward: dict[str, str] = {}
        for recorded, live in pairs:
            golden, current = address_key(recorded), address_key(live)
            mapped = self._forward.get(golden) or forward.get(golden)
            if mapped is not None:
                if mapped != current:
                    return False
                continue
            other = self._backward.get(current) or backward.get(current)
            if other is not None and other != golden:
                return False
            forward[golden] = current
            backward[current] = golden
        return True

    def claim(self, text: str) -> None:
        """The addresses a recorded request carries that nothing paired yet are the client's
        own (a webhook it listens on): each pairs with itself, so a reply must echo it as it
        was sent."""
        for _, _, netloc in self.spans(text):
            golden = address_key(netloc)
            if golden not in self._forward and golden not in self._backward:
                self._learn(netloc, netloc)

    def alias(self, recorded: str) -> str:
        """`<agent>` for the recorded base, `<address:N>` for another recorded address."""
        golden = address_key(recorded)
        self._note(recorded, golden)
        return self._aliases[golden]

    def live_alias(self, live: str) -> str:
        """The alias of the recorded address a live one pairs with, or the live address."""
        golden = self._backward.get(address_key(live))
        return live if golden is None else self._aliases[golden]

    # --- texts ------------------------------------------------------------------------------

    def wildcard(self, text: str) -> str:
        """`text` with each address as `<address>` (a key for aligning items)."""
        return self._replace(text, lambda _: "<address>")

    def forward(self, text: str) -> str:
        """A recorded text with every address paired with another live one made live (as the
        live address was first written); the others kept as they are."""

        def sub(recorded: str) -> str:
            current = self._forward.get(address_key(recorded))
            if current is None or current == address_key(recorded):
                return recorded
            return self._live_spelling[current]

        return self._replace(text, sub)

    def backward(self, text: str, golden_text: str = "") -> str:
        """A live text with every paired address put back as recorded: the spelling that
        `golden_text` (the recorded reply) uses, else the one first seen."""

        def sub(live: str) -> str:
            golden = self._backward.get(address_key(live))
            if golden is None:
                return live
            return self._recorded_spelling(golden, golden_text)

        return self._replace(text, sub)

    def _recorded_spelling(self, golden: str, golden_text: str) -> str:
        spellings = self._recorded_spellings[golden]
        if golden_text:
            for spelling in [*spellings, *_spellings(golden)]:
                if spelling in golden_text:
                    return spelling
        return spellings[0]


class Strings:
    """One recorded string against one live string (rules 1, 2, 5, 9), pairing in `aliases`
    and `addresses`."""

    def __init__(
        self,
        rules: PairingRules,
        aliases: AliasMap,
        addresses: Addresses,
        secret_placeholders: Iterable[str] = (),
    ) -> None:
        # rule 9: `{{NAME}}` of these, left in a recorded string (its variable is not set),
        # stands for any text: a secret the agent made and echoed, written as its placeholder
        self._secret_placeholders = frozenset(secret_placeholders)
        self._addresses = addresses
        self._may_hold_address = addresses.may_hold
        self._address_spans = addresses.spans
        self._shapes = rules.shapes
        self._client = aliases.client
        self._pair = aliases.pair
        self._alias = aliases.alias
        self._live_alias = aliases.live_alias

    def compare(self, expected: str, actual: str) -> tuple[str, str, str] | None:
        """Compare two strings that may hold generated values. None, or (expected, actual, why)."""
        if self._secret_placeholders and "{{" in expected:
            pattern = self._placeholder_pattern(expected)
            if pattern is not None and pattern.fullmatch(actual):
                return None  # rule 9
        addressed = self._may_hold_address(expected) or self._may_hold_address(actual)
        if self._shapes is None and not addressed:
            return None if expected == actual else (expected, actual, "")
        expected_parts = self._split(expected, addressed)
        actual_parts = self._split(actual, addressed)
        if expected_parts is None and actual_parts is None:
            return None if expected == actual else (expected, actual, "")
        expected_parts = expected_parts or ([expected], [])
        actual_parts = actual_parts or ([actual], [])
        expected_text, expected_values = expected_parts
        actual_text, actual_values = actual_parts
        same_frame = expected_text == actual_text and [k for _, k in expected_values] == [
            k for _, k in actual_values
        ]
        if same_frame:
            problems = []
            for (g, kind), (a, _) in zip(expected_values, actual_values, strict=True):
                problem = self._addresses.pair(g, a) if kind == _ADDRESS else self._pair(g, a, kind)
                if problem is not None:
                    problems.append(problem)
            if not problems:
                return None
            return (
                self._render(expected_text, expected_values, live=False),
                self._render(actual_text, actual_values, live=True),
                "; ".join(problems),
            )
        return (
            self._render(expected_text, expected_values, live=False),
            self._render(actual_text, actual_values, live=True),
            "",
        )

    def wildcard(self, text: str) -> str:
        """`text` with each address as `<address>` and each generated shape (not the
        client's) as `<kind>`: the key for aligning items."""
        if self._may_hold_address(text):
            text = self._addresses.wildcard(text)
        if self._shapes is None:
            return text
        return self._shapes.sub(
            lambda m: m.group() if m.group() in self._client else f"<{(m.lastgroup or 'k_')[2:]}>",
            text,
        )

    def _render(self, pieces: list[str], values: list[tuple[str, str]], *, live: bool) -> str:
        """The text with each value as its alias (a live value not paired: as it is)."""
        addresses = self._addresses
        out = [pieces[0]]
        for (value, kind), piece in zip(values, pieces[1:], strict=True):
            if kind == _ADDRESS:
                out.append(addresses.live_alias(value) if live else addresses.alias(value))
            else:
                out.append(self._live_alias(value, kind) if live else self._alias(value, kind))
            out.append(piece)
        return "".join(out)

    def _placeholder_pattern(self, text: str) -> re.Pattern[str] | None:
        """`text` as a regex in which each secret placeholder matches any text (rule 9)."""
        regex: list[str] = []
        last = 0
        for match in PLACEHOLDER.finditer(text):
            if match.group(1) in self._secret_placeholders:
                regex.append(re.escape(text[last : match.start()]))
                regex.append(".+?")
                last = match.end()
        if not regex:
            return None
        regex.append(re.escape(text[last:]))
        return re.compile("".join(regex), re.DOTALL)

    def _split(self, text: str, addressed: bool) -> tuple[list[str], list[tuple[str, str]]] | None:
        """Text around the addresses (when `addressed`) and the generated (non-client) shapes
        in `text`, and those values with their kinds (`_ADDRESS` for an address)."""
        found: list[tuple[int, int, str, str]] = []
        if addressed:
            found = [
                (start, end, value, _ADDRESS) for start, end, value in self._address_spans(text)
            ]
        if self._shapes is not None:
            shapes = [
                (match.start(), match.end(), match.group(), match.lastgroup[2:])
                for match in self._shapes.finditer(text)
                if match.lastgroup is not None and match.group() not in self._client
            ]
            if found and shapes:
                # a shape never overlaps an address (no address holds a "-"); to be sure
                spans = [(start, end) for start, end, _, _ in found]
                shapes = [
                    item
                    for item in shapes
                    if not any(item[0] < end and start < item[1] for start, end in spans)
                ]
                found = sorted(found + shapes)
            elif shapes:
                found = shapes
        if not found:
            return None
        pieces: list[str] = []
        values: list[tuple[str, str]] = []
        last = 0
        for start, end, value, kind in found:
            pieces.append(text[last:start])
            values.append((value, kind))
            last = end
        pieces.append(text[last:])
        return pieces, values
