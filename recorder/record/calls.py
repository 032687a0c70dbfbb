"""Which A2A exchange an agent's own call belongs to (pure: no I/O, no clock; the downstream
room, `recorder.record.proxy.downstream`, asks).

An agent answering an A2A request calls its model, its MCP tools, its peers. Each such call
is written into the file of the A2A exchange whose answer made it, tagged `# @call NAME
exchange N [frame K]`. Which one, in this order:

1. **Lineage**: the call carries what one exchange's request or reply carried and no other
   exchange's did: the user's text (its whole, or one of its lines of 24 characters or more)
   in the prompt, an id (the task's, the context's, the client's message id) in an argument.
   The markers of an exchange are its request's strings of 12 characters or more that hold a
   space (text), or of 20 or more that hold a digit (ids), and the ids its reply generated
   (`learned`); a marker two exchanges share names neither. The open exchanges and the last
   `KEEP_CLOSED` closed ones are looked at (a call made after the reply ended has its
   lineage too).
2. **Links**: the call carries a value that ties it to an earlier call already placed: a
   session header (`Mcp-Session-Id`, any header whose name holds "session") sent or handed
   out, or the agent's connection to the listener (a client that opens a session per
   request talks on connections of its own). Each placed call homes its links to its
   exchange (a later one moves a connection's: pools are reused).
3. **Alone**: exactly one exchange is open.
4. Otherwise the call is **pending** among the exchanges open when it came: its place is the
   earliest of them until a later call placed by lineage hands one of its links a home
   (the MCP client's `initialize`, which carries nothing of the user's, is placed by its
   `tools/call`), or until every one of them is done: then it stays with the earliest, said
   to be ambiguous (`# @call NAME exchange N ambiguous`), and counted.

A call when no exchange was ever seen (an agent's start-up) belongs to none: it is relayed,
not recorded, and counted.

`frame` is the count of data frames of the exchange's streamed reply that had arrived when
the call came (none: before the reply's first frame).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "KEEP_CLOSED",
    "Attribution",
    "Attributor",
    "Placed",
    "call_text",
    "is_session_header",
    "markers_of",
]

# closed exchanges still looked at for lineage (calls made after a reply ended)
KEEP_CLOSED = 64
_TEXT_MIN = 12  # a marker that holds a space: text
_ID_MIN = 20  # a marker without a space: an id, if it holds a digit
_LINE_MIN = 24  # a line of a longer text, as its own marker
_DIGIT = re.compile(r"\d")
_SPACE = re.compile(r"\s")


def is_session_header(name: str) -> bool:
    """Whether a header (lowercase name) carries a session a downstream handed out."""
    return "session" in name


def markers_of(values: Iterable[str]) -> set[str]:
    """The values of an exchange that name it when a call carries them (the module
    docstring's rule 1)."""
    found: set[str] = set()
    for value in values:
        text = value.strip()
        if _SPACE.search(text):
            if len(text) >= _TEXT_MIN:
                found.add(text)
                if "\n" in text:
                    found.update(
                        line.strip() for line in text.splitlines() if len(line.strip()) >= _LINE_MIN
                    )
        elif len(text) >= _ID_MIN and _DIGIT.search(text):
            found.add(text)
    return found


def call_text(target: str, headers: Iterable[tuple[str, str]], body: Any, raw: str) -> str:
    """What a call's request says, as one text to look for markers in: its target, its header
    values, and its body's strings (`body`: the parsed JSON, or None: `raw`, the body's text)."""
    parts = [target, *(value for _, value in headers)]
    if body is None:
        parts.append(raw)
    else:
        _strings(body, parts)
    return "\n".join(parts)


def _strings(value: Any, into: list[str]) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            into.append(item)
        elif isinstance(item, dict):
            into.extend(str(key) for key in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


@dataclass
class _Exchange:
    ticket: int
    file_key: Hashable
    markers: set[str]
    frames: int = 0
    open: bool = True
    done: bool = False
    written: bool = False


@dataclass(frozen=True)
class Attribution:
    """Where a call goes: the exchange (its ticket, its file) and frame; `how` it was told
    (`lineage`, `link`, `alone`, `pending`, or `none`: no exchange to go to). A pending call's
    `candidates` are the exchanges it may belong to, each with its frames then (its place
    until it is placed: the first)."""

    ticket: int | None
    file_key: Hashable | None
    frame: int | None
    how: str
    candidates: tuple[tuple[int, int], ...] = ()

    @property
    def placed(self) -> bool:
        return self.how in ("lineage", "link", "alone")


@dataclass(frozen=True)
class Placed:
    """A pending call's place once known: the exchange (ticket), its frames when the call
    came, and whether it stays ambiguous (none of its links was placed); `exchange` None:
    none of its candidates was recorded."""

    call: int
    exchange: int | None
    frames: int
    ambiguous: bool


@dataclass
class _Pending:
    candidates: tuple[tuple[int, int], ...]
    links: set[str] = field(default_factory=set)


class Attributor:
    """The A2A exchanges of a recording as the calls see them, the homes of the calls' links,
    and the calls still pending (see the module docstring). Not thread-safe: its owner (the
    downstream room) holds a lock around each use."""

    def __init__(self, keep_closed: int = KEEP_CLOSED) -> None:
        self._keep_closed = keep_closed
        self._exchanges: OrderedDict[int, _Exchange] = OrderedDict()
        self._closed: OrderedDict[int, None] = OrderedDict()
        self._links: dict[str, int] = {}
        self._pending: dict[int, _Pending] = {}  # a pending call's ticket -> what it waits for

    # ---------------------------------------------------------------- the exchanges

    def opened(self, ticket: int, file_key: Hashable, values: Iterable[str]) -> None:
        """An A2A exchange began (its request's values)."""
        self._exchanges[ticket] = _Exchange(ticket, file_key, markers_of(values))

    def learned(self, ticket: int, values: Iterable[str]) -> None:
        """Values exchange `ticket`'s reply generated (its task's id, its context's)."""
        exchange = self._exchanges.get(ticket)
        if exchange is not None:
            exchange.markers.update(value for value in values if len(value) >= _ID_MIN)

    def framed(self, ticket: int, frames: int) -> None:
        """`frames` data frames of exchange `ticket`'s reply have arrived."""
        exchange = self._exchanges.get(ticket)
        if exchange is not None:
            exchange.frames = frames

    def closed(self, ticket: int) -> None:
        """Exchange `ticket`'s reply is whole (or will not be)."""
        exchange = self._exchanges.get(ticket)
        if exchange is None or not exchange.open:
            return
        exchange.open = False
        self._closed[ticket] = None
        while len(self._closed) > self._keep_closed:
            old, _ = self._closed.popitem(last=False)
            if not any(old in dict(p.candidates) for p in self._pending.values()):
                self._exchanges.pop(old, None)

    def file_key(self, ticket: int) -> Hashable | None:
        """The file of exchange `ticket` (None: not known)."""
        exchange = self._exchanges.get(ticket)
        return None if exchange is None else exchange.file_key

    def is_written(self, ticket: int) -> bool:
        """Whether exchange `ticket` is in its file (`done` said so)."""
        exchange = self._exchanges.get(ticket)
        return exchange is not None and exchange.written

    def is_done(self, ticket: int) -> bool:
        """Whether exchange `ticket` is written, or will not be (`done`), or long gone."""
        exchange = self._exchanges.get(ticket)
        return exchange is None or exchange.done

    # ---------------------------------------------------------------- a call

    def attribute(self, text: str, links: Iterable[str]) -> Attribution:
        """Where a call whose request says `text` (`call_text`) and carries `links` goes."""
        exchanges = self._exchanges
        if not exchanges:
            return Attribution(None, None, None, "none")
        seen: dict[str, int] = {}
        for exchange in exchanges.values():
            for marker in exchange.markers:
                seen[marker] = seen.get(marker, 0) + 1
        matched = [
            exchange
            for exchange in exchanges.values()
            if any(seen[m] == 1 and m in text for m in exchange.markers)
        ]
        if len(matched) == 1:
            return self._to(matched[0], "lineage")
        for link in links:
            home = self._links.get(link)
            if home is not None and home in exchanges:
                return self._to(exchanges[home], "link")
        opened = [exchange for exchange in exchanges.values() if exchange.open]
        if len(opened) == 1:
            return self._to(opened[0], "alone")
        among = opened or [next(reversed(exchanges.values()))]
        first = among[0]
        candidates = tuple((exchange.ticket, exchange.frames) for exchange in among)
        return Attribution(
            first.ticket, first.file_key, _frame(first.frames), "pending", candidates
        )

    def _to(self, exchange: _Exchange, how: str) -> Attribution:
        return Attribution(exchange.ticket, exchange.file_key, _frame(exchange.frames), how)

    def place(self, call: int, attribution: Attribution, links: Iterable[str]) -> list[Placed]:
        """A call (its ticket) went where `attribution` says: a pending one waits (with its
        `links`); a placed one homes its `links` to its exchange, and the pending calls that
        carry one of them are placed there too (returned)."""
        if attribution.how == "pending":
            self._pending[call] = _Pending(attribution.candidates, set(links))
            return self._settled()  # (none of its exchanges left to wait for: placed now)
        if attribution.ticket is None:
            return []
        return self.link(attribution.ticket, links)

    def link(self, exchange: int, links: Iterable[str]) -> list[Placed]:
        """`links` (a placed call's: sent, or handed out in its reply) belong to `exchange`;
        the pending calls that carry one are placed there (returned)."""
        new = set(links)
        if not new:
            return []
        for value in new:
            self._links[value] = exchange
        placed = []
        for call, pending in list(self._pending.items()):
            frames = dict(pending.candidates).get(exchange)
            if frames is not None and pending.links & new:
                placed.append(Placed(call, exchange, frames, ambiguous=False))
                del self._pending[call]
        return placed

    def more_links(self, call: int, links: Iterable[str]) -> list[Placed]:
        """Links a call's reply handed out (a session id): a pending call carries them from
        now on; a placed one (`exchange`, when given to `place`) homes them (see `link`)."""
        pending = self._pending.get(call)
        if pending is not None:
            pending.links.update(links)
        return []

    def is_pending(self, call: int) -> bool:
        return call in self._pending

    # ---------------------------------------------------------------- the end

    def done(self, ticket: int, *, written: bool) -> list[Placed]:
        """Exchange `ticket` is `written` in its file, or will not be: the pending calls none
        of whose candidates is left to wait for, each placed with the earliest candidate
        written (ambiguous), or with none."""
        exchange = self._exchanges.get(ticket)
        if exchange is not None:
            exchange.done, exchange.written = True, written
        return self._settled()

    def _settled(self) -> list[Placed]:
        """The pending calls none of whose candidates is left to wait for, placed (`done`)."""
        finished = []
        for call, pending in list(self._pending.items()):
            if not all(self.is_done(t) for t, _ in pending.candidates):
                continue
            del self._pending[call]
            kept = [(t, f) for t, f in pending.candidates if self.is_written(t)]
            if kept:
                finished.append(Placed(call, kept[0][0], kept[0][1], ambiguous=True))
            else:
                finished.append(Placed(call, None, 0, ambiguous=True))
        return finished


def _frame(frames: int) -> int | None:
    return frames or None
