"""A transcript file's text as the store holds it: each exchange's block, made once and
reused (a long gRPC stream's kept on disk, `Archived`: read back a chunk at a time, never
joined into one string; every other block a string), and the `@during`, `@push config N`
and `@call NAME exchange N` tags by place in the file; its head's `@after` and
`@downstream` tags.

`Block` is an exchange given as its text, `Entry` one exchange of a file (its ticket: its
place in the request order), `OpenFile`
one file of `recorder.record.store.transcript_store.TranscriptStore` (its entries in ticket order,
what of them is on disk), `during_tagged` the exchanges of entries with their tags written as
comments.
"""

from __future__ import annotations

import bisect
import dataclasses
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from recorder.disk.archive import Archived
from recorder.format.httpfile import dumps, dumps_exchange
from recorder.format.model import CallTag, Exchange, Transcript

__all__ = [
    "FILE_HEAD",
    "Block",
    "CallOf",
    "Disk",
    "Entry",
    "OpenFile",
    "Text",
    "during_tag",
    "during_tagged",
]

FILE_HEAD = dumps(Transcript())  # "# recorder-format: 1\n"

Text = str | Archived
"""A piece of a file's text: a string, or a text kept on disk (a long stream's block)."""


@dataclass(frozen=True, slots=True)
class Block:
    """An exchange given as its block: the text `dumps_exchange` writes for it, made straight
    from its bytes (`recorder.record.proxy.direct`), or a long gRPC stream's kept on disk
    (`Archived`), and its title. It carries no `@during` or `@push config` tag (those are
    numbered by place in the file, so made from the model)."""

    text: Text
    title: str
    # the reply's status and frames, for its line when the writer has no model of it (a gRPC
    # stream's block, made from its spool: `recorder.record.grpc_record.stream_exchange`)
    status: int = 0
    frames: int | None = None


@dataclass(frozen=True)
class CallOf:
    """A call the agent made to a downstream (`name`, whose upstream is `url`) while it
    answered the exchange of ticket `exchange`, after `frame` frames of its reply (None:
    before the first); written as `# @call NAME exchange N [frame K] [ambiguous]`, N that
    exchange's place in the file."""

    name: str
    url: str
    exchange: int
    frame: int | None = None
    ambiguous: bool = False

    def tag(self, place: int | None) -> CallTag | None:
        """The tag, with the exchange at `place` in the file (None: not there)."""
        if place is None:
            return None
        return CallTag(self.name, place, self.frame, self.ambiguous)


@dataclass
class Entry:
    ticket: int
    # let go once written when the entry has no `@during` tag (`TranscriptStore.write`): its block
    # is then all a rewrite of its file needs, as no tag of it can change
    exchange: Exchange | None
    during: tuple[int, int] | None
    # the exchange's block of the file, cached with the `@during` tag it was made with (an
    # `Archived` one only as given, `Block`: it has no tag)
    block: Text = ""
    tag: str | None = None
    at: int = 0  # its place in a file shared with other writers (`Disk.shared`), once there
    # a push delivery: the ticket of the exchange that registered its config (written as
    # `@push config N`, N that exchange's place in the file), and the N its block holds
    push: int | None = None
    push_at: int | None = None
    # a call the agent made (`CallOf`), and the tag its block holds
    call: CallOf | None = None
    call_tag: CallTag | None = None

    def text(
        self, tag: str | None, push_at: int | None = None, call_tag: CallTag | None = None
    ) -> Text:
        if (
            not self.block
            or tag != self.tag
            or push_at != self.push_at
            or call_tag != self.call_tag
        ):
            exchange = self.exchange
            assert exchange is not None, "an exchange let go is never rendered again"
            if tag is not None:
                exchange = dataclasses.replace(exchange, comments=(*exchange.comments, tag))
            if push_at is not None:
                exchange = dataclasses.replace(exchange, push_config=push_at)
            if call_tag is not None:
                exchange = dataclasses.replace(exchange, call=call_tag)
            self.block, self.tag, self.push_at = dumps_exchange(exchange), tag, push_at
            self.call_tag = call_tag
        return self.block


@dataclass
class Disk:
    """What one store knows of a file on disk: its lock in the process, and the file as the
    store last left it (another writer's append or rewrite since is told by its size and
    inode: the file is then `shared`)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    ino: int = 0  # 0: not known (learned at the next write, when the size is as left)
    # the file's size as this store left it; None: not known, or not as left (the next write
    # rewrites it whole)
    size: int | None = None
    # another writer writes the file too: it is appended to, never rewritten from memory;
    # `count` is how many exchanges it holds (None: not known, no `@during` tag is written)
    shared: bool = False
    count: int | None = 0


@dataclass
class OpenFile:
    slug: str
    path: Path | None = None  # claimed on disk by its first write
    # `path` is an earlier file of its scenario (`replace`): its first write replaces it
    replacing: bool = False
    entries: list[Entry] = field(default_factory=list)  # sorted by ticket
    disk: Disk = field(default_factory=Disk)
    # entries[:written] are the file on disk, scrubbed with the store's first `secrets` secrets
    written: int = 0
    secrets: int = 0
    # the files this one needs (`# @after NAME` in its head, `recorder.record.lineage`), and
    # those the text on disk names: a head that changed is written whole, never appended to
    after: tuple[str, ...] = ()
    # the downstreams its calls went to (`# @downstream NAME URL`), by name
    downstreams: tuple[tuple[str, str], ...] = ()
    # the head the text on disk has (`head_tags` when it was written): one that changed is
    # written whole, never appended to
    head_written: tuple[tuple[str, ...], tuple[tuple[str, str], ...]] = ((), ())

    def head_tags(self) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
        return self.after, self.downstreams

    def add_downstream(self, name: str, url: str) -> None:
        """A call to downstream `name` (at `url`) is in the file: its head names it."""
        if all(known != name for known, _ in self.downstreams):
            self.downstreams = tuple(sorted((*self.downstreams, (name, url))))

    def head(self) -> str:
        """The file's head: the format marker, then its `# @after` and `# @downstream` tags."""
        tags = [f"# @after {name}\n" for name in self.after]
        tags.extend(f"# @downstream {name} {url}\n" for name, url in self.downstreams)
        return FILE_HEAD + "".join(tags)

    def pieces(self) -> tuple[Text, ...]:
        """The whole file in pieces (its head, each block, the blank lines between): the
        blocks of unchanged exchanges are reused, so an exchange costs one `dumps` of itself,
        not of the whole file; written as they are, a large block is not copied into the
        file's text first (and an archived one is never in memory whole)."""
        if len(self.entries) == 1:  # (a new file: its one exchange has no tag)
            return (self.head(), "\n", self.entries[0].text(None))
        position = {entry.ticket: n for n, entry in enumerate(self.entries, start=1)}
        parts: list[Text] = [self.head()]
        for entry in self.entries:
            parts.append("\n")
            push_at = None if entry.push is None else position.get(entry.push)
            call = None if entry.call is None else entry.call.tag(position.get(entry.call.exchange))
            parts.append(entry.text(during_tag(entry.during, position), push_at, call))
        return tuple(parts)

    def _place(self, ticket: int | None) -> int | None:
        """The 1-based place of the exchange of `ticket` among the entries (None: not there)."""
        if ticket is None:
            return None
        entries = self.entries
        at = bisect.bisect_left(entries, ticket, key=lambda e: e.ticket)
        return at + 1 if at < len(entries) and entries[at].ticket == ticket else None

    def last_pieces(self) -> tuple[str, Text]:
        """The text the last exchange adds to the file (the earlier ones are unchanged), in
        pieces: the blank line, the block."""
        entry = self.entries[-1]
        tag = None
        if entry.during is not None:
            entries = self.entries
            at = bisect.bisect_left(entries, entry.during[0], key=lambda e: e.ticket)
            if at < len(entries) and entries[at].ticket == entry.during[0]:
                tag = during_tag(entry.during, {entry.during[0]: at + 1})
        call = None if entry.call is None else entry.call.tag(self._place(entry.call.exchange))
        return "\n", entry.text(tag, self._place(entry.push), call)

    @property
    def lock(self) -> threading.Lock:
        """The file's lock in this process (each write holds it)."""
        return self.disk.lock

    def shared_tag(self, entry: Entry) -> str | None:
        """The `@during` tag of `entry` in a shared file: by the place its exchange N took
        there (None when N is not there, or the places are not known)."""
        if entry.during is None or self.disk.count is None:
            return None
        entries = self.entries
        at = bisect.bisect_left(entries, entry.during[0], key=lambda e: e.ticket)
        if at < len(entries) and entries[at].ticket == entry.during[0] and entries[at].at:
            return during_tag(entry.during, {entry.during[0]: entries[at].at})
        return None

    def shared_push(self, entry: Entry) -> int | None:
        """The N of `entry`'s `@push config N` in a shared file: the place its registering
        exchange took there (None when it is not there, or the places are not known)."""
        if entry.push is None or self.disk.count is None:
            return None
        place = self._place(entry.push)
        return self.entries[place - 1].at or None if place is not None else None

    def shared_call(self, entry: Entry) -> CallTag | None:
        """The `@call` tag of `entry` in a shared file: N the place its exchange took there
        (None when it is not there, or the places are not known)."""
        if entry.call is None or self.disk.count is None:
            return None
        place = self._place(entry.call.exchange)
        at = self.entries[place - 1].at or None if place is not None else None
        return entry.call.tag(at)

    def written_pieces(self) -> tuple[Text, ...]:
        """The exchanges on disk as made, before scrubbing (head left out): their blocks."""
        return tuple(entry.block for entry in self.entries[: self.written])


def during_tagged(
    entries: Iterable[tuple[int, Exchange, tuple[int, int] | None]],
) -> tuple[Exchange, ...]:
    """The exchanges of (ticket, exchange, during) entries in ticket order, each `during`
    written as the comment `@during exchange N frame K` once exchange N is in the list."""
    ordered = sorted(entries, key=lambda item: item[0])
    position = {ticket: n for n, (ticket, _, _) in enumerate(ordered, start=1)}
    out = []
    for _, exchange, during in ordered:
        tag = during_tag(during, position)
        if tag is not None:
            exchange = dataclasses.replace(exchange, comments=(*exchange.comments, tag))
        out.append(exchange)
    return tuple(out)


def during_tag(during: tuple[int, int] | None, position: Mapping[int, int]) -> str | None:
    """`@during exchange N frame K` for `during` = (ticket, K), N the ticket's place in
    `position` (None when it has none)."""
    if during is None or during[0] not in position:
        return None
    return f"@during exchange {position[during[0]]} frame {during[1]}"
