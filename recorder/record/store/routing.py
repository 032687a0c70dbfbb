"""Which file each request of a recording goes to (`TranscriptStore`'s tickets and keys).

A request gets a ticket when it starts (its place in the request order) and a file key:
its scenario's file as the scenario is now (`(slug, generation)`; `end` starts the next
generation), a conversation's (`(CONVERSATION, id)`, `recorder.record.lineage`), or, with
neither, a file of its own. `Routes` keeps the files open in memory while a request begun in
them may still be written, and under `replace` tells which file from before the recording
a scenario's file is written over (`recorder.record.store.modes`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Hashable
from pathlib import Path

from recorder.record.naming import operation_slug, slugify
from recorder.record.store.filetext import OpenFile
from recorder.record.store.modes import existing_files

__all__ = ["CONVERSATION", "KEPT", "FileKey", "Routes"]

# the first part of the file key of a conversation of unscripted traffic (no slug has a "#")
CONVERSATION = "#conversation"
FileKey = tuple[str, Hashable]
# the generation of a scenario whose file `once` keeps: its exchanges are not written
KEPT = "#kept"


class Routes:
    """The tickets and file keys of one store's requests, and its files open in memory.
    Methods whose names start with `_` and `file_for` are called with `lock` held."""

    def __init__(self, out: Path, mode: str, lock: threading.Lock) -> None:
        self.out = out
        self.mode = mode
        self.lock = lock
        # slug -> its file in the folder when the recording started (replace, once)
        self._before: dict[str, Path] | None = None
        # `replace`: each of those files as `stat` told then (inode, size, mtime): a file
        # changed since by another writer is not replaced (`TranscriptStore`)
        self.stamps: dict[Path, tuple[int, int, int]] = {}
        # slug -> its scenario's file under `replace`: a run again in this recording goes on
        # in it (appended), never over it
        self._runs: dict[str, OpenFile] = {}
        # (scenario slug, generation) -> its file; `end` starts the slug's next generation
        self.open: dict[FileKey, OpenFile] = {}
        self._generation: dict[str, int] = {}
        # ticket -> (slug, generation) of a scenario request begun and not yet written, or
        # (CONVERSATION, id) of a conversation's
        self.pending: dict[int, FileKey] = {}
        self._slugs: dict[FileKey, str] = {}  # a conversation's file name, from its first request
        # a conversation folded into another's file (`fold`) -> that file's key
        self._folded: dict[FileKey, FileKey] = {}
        self._order = 0

    def begin(
        self,
        scenario: str | None = None,
        *,
        into: FileKey | None = None,
        operation: str = "",
    ) -> int:
        """`TranscriptStore.begin`."""
        with self.lock:
            self._order += 1
            if scenario is not None:
                self.pending[self._order] = self._scenario_key(slugify(scenario))
            elif into is not None:
                into = self._folded.get(into, into)
                if into[0] == CONVERSATION:
                    self._slugs.setdefault(into, operation_slug(operation))
                self.pending[self._order] = into
            return self._order

    def _scenario_key(self, slug: str) -> FileKey:
        # the key of a scenario's request (`KEPT` under `once` for a scenario whose file was
        # there when the store first saw it)
        if self.mode == "once" and self._existing(slug) is not None:
            return (slug, KEPT)
        return (slug, self._generation.get(slug, 0))

    def look(self) -> None:
        """Note the files in the folder now, before the recording starts: only these are
        `replace`d or kept by `once` (a file another recorder makes meanwhile is not)."""
        with self.lock:
            self._look()

    def _look(self) -> None:
        self._before = existing_files(self.out)
        if self.mode == "replace":
            for path in self._before.values():
                try:
                    found = os.stat(path)
                except OSError:
                    continue
                self.stamps[path] = (found.st_ino, found.st_size, found.st_mtime_ns)

    def _existing(self, slug: str) -> Path | None:
        """The file named for `slug` in the folder when the recording started (`look`; else
        at the first request: the lowest number when there are several; None when there is
        none, or the folder cannot be read)."""
        if self._before is None:
            self._look()
        assert self._before is not None
        return self._before.get(slug)

    def file_key(self, ticket: int) -> FileKey | None:
        """`TranscriptStore.file_key`."""
        return self.pending.get(ticket)

    def forget(self, ticket: int) -> None:
        """`TranscriptStore.forget`."""
        if ticket in self.pending:
            with self.lock:
                key = self.pending.pop(ticket, None)
                if key is not None:
                    self._release(key)

    def move(self, ticket: int, key: FileKey) -> None:
        """`TranscriptStore.move`."""
        with self.lock:
            before = self.pending.get(ticket)
            if before is None or before == key:
                return
            self.pending[ticket] = key
            self._release(before)

    def fold(self, ticket: int, key: FileKey) -> None:
        """`TranscriptStore.fold`."""
        with self.lock:
            before = self.pending.get(ticket)
            if before is None or before == key or before[0] != CONVERSATION:
                return
            self.pending[ticket] = key
            self._folded[before] = key

    def end(self, scenario: str) -> None:
        """`TranscriptStore.end`."""
        with self.lock:
            slug = slugify(scenario)
            generation = self._generation.get(slug, 0)
            self._generation[slug] = generation + 1
            self._release((slug, generation))

    def _release(self, key: FileKey) -> None:
        # an ended generation's file is dropped from memory once no request begun in it is
        # still on the way. A conversation's file stays: any later request may carry one of
        # its ids
        slug, generation = key
        if slug == CONVERSATION or not isinstance(generation, int):
            return  # (nor is a scenario's that `once` keeps: it has no file in memory)
        if generation < self._generation.get(slug, 0) and key not in self.pending.values():
            self.open.pop(key, None)

    def file_for(
        self, ticket: int, scenario: str | None, operation: str
    ) -> tuple[FileKey | None, OpenFile | None]:
        """The key and the open file the exchange of `ticket` goes to (a new file of its
        own when the key is None; no file when `once` keeps its scenario's)."""
        key = self.pending.pop(ticket, None)
        if key is not None:
            # (a request begun in a conversation folded since, `fold`: an agent's call made
            # while the card fetch it belongs to was being answered, goes where that went)
            key = self._folded.get(key, key)
        if key is None and scenario is not None:
            key = self._scenario_key(slugify(scenario))
        if key is None:
            return None, OpenFile(operation_slug(operation))
        if key[1] == KEPT:
            return key, None
        found = self.open.get(key)
        if found is None:
            found = self._new_file(key)
            self.open[key] = found
        self._release(key)
        return key, found

    def _new_file(self, key: FileKey) -> OpenFile:
        # the file of a scenario's run, or of a conversation. Under `replace`, a scenario's
        # file from before the recording started is written again in place by its first
        # run; a later run of it in this recording goes on in the same file (appended: what
        # this recording wrote is never replaced)
        slug = key[0]
        if self.mode != "replace" or slug == CONVERSATION:
            return OpenFile(self._slugs.get(key, slug))
        found = self._runs.get(slug)
        if found is None:
            path = self._existing(slug)
            found = OpenFile(slug) if path is None else OpenFile(slug, path=path, replacing=True)
            self._runs[slug] = found
        return found
