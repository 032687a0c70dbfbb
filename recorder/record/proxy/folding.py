"""Agent-card fetches folded into one file (issue 28): an A2A client run fetches the card two
to four times before its first call, each the same request with the same reply; without a
scenario each would start a file of its own. A card fetch without a scenario whose request
came right after another such card fetch (no unscripted request in between, `Recording.begin`)
and whose exchange is that one's, but for the reply's `Date`, goes into that one's file.

A folded file holds the card exchanges only, one after another: it replays alone, as every
file does; nothing is dropped (each exchange is recorded, and counted).
"""

from __future__ import annotations

import re
from collections import OrderedDict

from recorder.format.httpfile import dumps_exchange
from recorder.format.model import Exchange
from recorder.record.proxy.call import Call
from recorder.record.store.filetext import Block
from recorder.record.store.transcript_store import FileKey, TranscriptStore

__all__ = ["CardFolds", "fold_text"]

# a header line `Date: ...` (the only part of two such fetches' text that may differ)
_DATE = re.compile(r"^Date: [^\n]*\n", re.MULTILINE)
_KEPT = 16  # card fetches remembered (the next one can only follow a recent one)


def fold_text(block: str) -> str:
    """An exchange's text with its `Date:` header lines left out: two card fetches with the
    same request and the same reply have the same."""
    return _DATE.sub("", block)


class CardFolds:
    """The recording writer's recent card fetches without a scenario: (text, file key) by
    ticket. Used from the writer thread only."""

    def __init__(self, store: TranscriptStore) -> None:
        self.store = store
        self._recent: OrderedDict[int, tuple[str, FileKey]] = OrderedDict()

    def place(self, call: Call, exchange: Exchange | Block) -> None:
        """Before `call`'s card exchange is written: into the file of the card fetch it came
        right after, when that one's exchange is the same (`fold_text`)."""
        if isinstance(exchange, Block):
            if not isinstance(exchange.text, str):
                return  # (a long stream's, kept on disk: never a card fetch)
            text = fold_text(exchange.text)
        else:
            text = fold_text(dumps_exchange(exchange))
        before = self._recent.get(call.routing.follows_card) if call.routing.follows_card else None
        key: FileKey | None
        if before is not None and before[0] == text:
            key = before[1]
            self.store.fold(call.routing.ticket, key)
        else:
            key = self.store.file_key(call.routing.ticket)
        if key is not None:
            self._recent[call.routing.ticket] = (text, key)
            if len(self._recent) > _KEPT:
                self._recent.popitem(last=False)
