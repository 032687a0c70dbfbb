"""An agent's address in any spelling of the machine's loopback names (pure).

A card recorded as `http://localhost:41242` while its client sent the requests to
`127.0.0.1:41242` names one agent: `localhost`, `127.0.0.1` (in a text, any `127.x.x.x`) and
`[::1]` (`::1` as a URL's host name) are spellings of one machine. One list of the names and
one pattern for the recorder's card rewrite (`recorder.record.cards`), the player's rule 5
(`recorder.replay.verdict.strings`) and the stand-in (`recorder.serve`).
"""

from __future__ import annotations

import functools
import re

__all__ = [
    "LOOPBACK_HOST",
    "LOOPBACK_NAMES",
    "address_in_urls",
    "address_key",
    "is_loopback",
    "loopback_urls_as_one",
    "split_netloc",
]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
"""The loopback names as a URL's authority writes them."""

LOOPBACK_HOST = r"localhost|127(?:\.[0-9]{1,3}){3}|\[::1\]"
"""A loopback host in a text, as a regular expression (to match ignoring case)."""

_HOST_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})  # as `urlsplit(...).hostname` has them
_LOOPBACK_URL = re.compile(rf"//(?:{LOOPBACK_HOST})(?::[0-9]+)?(?![0-9])", re.IGNORECASE)


def is_loopback(host: str) -> bool:
    """Whether a URL's host name (`urlsplit(url).hostname`: lower case, no brackets) is a
    loopback name."""
    return host in _HOST_NAMES


def split_netloc(netloc: str) -> tuple[str, str]:
    """`"localhost:41242"` -> ("localhost", "41242"); `"[::1]"` -> ("[::1]", "")."""
    host, colon, port = netloc.rpartition(":")
    if not colon or not port.isdigit() or (host.startswith("[") and not host.endswith("]")):
        return netloc, ""
    return host, port


def address_key(netloc: str) -> str:
    """The address a spelling names: the host lower-cased, every loopback name (`localhost`,
    `127.0.0.1`, `[::1]`) as `localhost`: `"127.0.0.1:5000"` -> `"localhost:5000"`."""
    host, port = split_netloc(netloc)
    host = host.lower()
    if host in LOOPBACK_NAMES:
        host = "localhost"
    return f"{host}:{port}" if port else host


def loopback_urls_as_one(text: str) -> str:
    """`text` with every loopback URL authority (`//127.0.0.1:41999`) spelled `//loopback`."""
    return _LOOPBACK_URL.sub("//loopback", text)


@functools.lru_cache(maxsize=64)
def address_in_urls(netloc: str | None) -> re.Pattern[str] | None:
    """The agent at `netloc` in URLs (`//localhost:41242`), its port in any loopback spelling
    (a card recorded as `localhost` while the requests went to `127.0.0.1`); None for none."""
    if not netloc:
        return None
    name, _, port = netloc.rpartition(":")
    if not port.isdigit() or not name:
        return re.compile(f"//{re.escape(netloc)}(?![A-Za-z0-9.:-])")
    names = {name.lower(), *LOOPBACK_NAMES}
    spelled = "|".join(re.escape(n) for n in sorted(names))
    return re.compile(f"//(?:{spelled}):{port}(?![0-9])", re.IGNORECASE)
