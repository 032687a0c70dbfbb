"""Strings of a replay: the agent's address (rule 5), secret placeholders (rule 9), and one
string compared with another, generated values inside it paired (rules 1 and 2, see
`recorder.pairing`).

5. The recorded agent address (`recorded_base`) in a recorded string and the live address in
   a live string are both read as `<agent>`, so a card recorded on localhost:41242 matches one
   served on 127.0.0.1:any-port.
9. A secret placeholder (`secret_placeholders`) left in a recorded string, because its
   variable is not set (the player fills the set ones first), matches any text: the recorder
   wrote a secret the agent made and echoed (`"key {{API_KEY}} accepted"`) so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from recorder.pairing import JSON_STRING, AliasMap, PairingRules, string_value
from recorder.redact import PLACEHOLDER

__all__ = ["AGENT", "Addresses", "Strings", "map_json_strings"]

AGENT = "<agent>"
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def map_json_strings(text: str, mapper: Callable[[str], str]) -> str:
    """JSON text with each string literal passed through `mapper`; everything else kept."""

    def sub(match: re.Match[str]) -> str:
        token = match.group()
        value = string_value(token)
        if value is None:
            return token  # no JSON string (the text is no JSON): kept as it is
        new = mapper(value)
        if new == value:
            return token
        return json.dumps(new, ensure_ascii=False)

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


def _loopback_spellings(url: str | None) -> tuple[str, ...]:
    """`http://127.0.0.1:5000` -> that URL, then `http://localhost:5000` and
    `http://[::1]:5000`: the names a loopback agent may give itself. Other URLs: themselves."""
    if url is None:
        return ()
    scheme, _, netloc = url.partition("://")
    host, colon, port = netloc.rpartition(":") if not netloc.endswith("]") else (netloc, "", "")
    if not colon or not port.isdigit():
        host, colon, port = netloc, "", ""
    if host.lower() not in _LOOPBACK:
        return (url,)
    others = [f"{scheme}://{name}{colon}{port}" for name in _LOOPBACK if name != host]
    return (url, *others)


class Addresses:
    """The recorded and the live agent address (rule 5): both or neither (`swapped` False)."""

    def __init__(self, recorded_base: str | None, live_base: str) -> None:
        recorded = _base(recorded_base)
        live = _base(live_base)
        self.recorded_url: str | None = recorded[0] if recorded else None
        self.recorded_host: str | None = recorded[1] if recorded else None
        self.live_url: str | None = live[0] if live else None
        self.live_host: str | None = live[1] if live else None
        if self.recorded_url is None or self.live_url is None:
            self.recorded_url = self.live_url = None
        # every spelling of each address (an agent on 127.0.0.1 may call itself localhost)
        self.live_urls: tuple[str, ...] = _loopback_spellings(self.live_url)
        self.recorded_urls: tuple[str, ...] = _loopback_spellings(self.recorded_url)

    @property
    def swapped(self) -> bool:
        """Whether the recorded address stands for the live one (both are known)."""
        return self.recorded_url is not None and self.live_url is not None


class Strings:
    """One recorded string against one live string (rules 1, 2, 5, 9), pairing in `aliases`."""

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
        self._swapped = addresses.swapped
        self._recorded_urls = addresses.recorded_urls
        self._live_urls = addresses.live_urls
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
        if self._swapped:
            for recorded_url in self._recorded_urls:
                if recorded_url in expected:
                    expected = expected.replace(recorded_url, AGENT)
            for live_url in self._live_urls:
                if live_url in actual:
                    actual = actual.replace(live_url, AGENT)
        shapes = self._shapes
        if shapes is None:
            return None if expected == actual else (expected, actual, "")
        expected_parts = self._split(expected)
        actual_parts = self._split(actual)
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
                problem = self._pair(g, a, kind)
                if problem is not None:
                    problems.append(problem)
            if not problems:
                return None
            return (
                _render(expected_text, [self._alias(g, k) for g, k in expected_values]),
                _render(actual_text, [self._live_alias(a, k) for a, k in actual_values]),
                "; ".join(problems),
            )
        return (
            _render(expected_text, [self._alias(g, k) for g, k in expected_values]),
            _render(actual_text, [self._live_alias(a, k) for a, k in actual_values]),
            "",
        )

    def wildcard(self, text: str) -> str:
        """`text` with both addresses as `<agent>` and each generated shape (not the client's)
        as `<kind>`: the key for aligning items."""
        if self._swapped:
            for recorded_url in self._recorded_urls:
                text = text.replace(recorded_url, AGENT)
            for live_url in self._live_urls:
                text = text.replace(live_url, AGENT)
        if self._shapes is None:
            return text
        return self._shapes.sub(
            lambda m: m.group() if m.group() in self._client else f"<{(m.lastgroup or 'k_')[2:]}>",
            text,
        )

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

    def _split(self, text: str) -> tuple[list[str], list[tuple[str, str]]] | None:
        """Text around the generated (non-client) shapes in `text`, and those values with kinds."""
        assert self._shapes is not None
        pieces: list[str] = []
        values: list[tuple[str, str]] = []
        last = 0
        for match in self._shapes.finditer(text):
            value = match.group()
            if value in self._client or match.lastgroup is None:
                continue
            pieces.append(text[last : match.start()])
            values.append((value, match.lastgroup[2:]))
            last = match.end()
        if not values:
            return None
        pieces.append(text[last:])
        return pieces, values


def _render(pieces: list[str], aliases: list[str]) -> str:
    out = [pieces[0]]
    for alias, piece in zip(aliases, pieces[1:], strict=True):
        out.append(alias)
        out.append(piece)
    return "".join(out)
