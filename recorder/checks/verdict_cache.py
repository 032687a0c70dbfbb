"""Model answers kept on disk, so that a re-run pays nothing for answers that did not change.

The folder is `.recorder-cache/` beside the rules file (the current folder for checks made in
code); an entry is `model/v1/AB/ABCDEF….json`, named by `cache_key`: the SHA-256 of the
canonical JSON of what decides the answer (its kind, the model's NAME, not the endpoint's
address: the same model served by Ollama or vLLM answers alike; the messages sent: rubric,
recorded answer, live answer, context; the options: the vote's number). An entry holds the
answer alone (a verdict's pass, reason and differences; an embedding's vector): never a
key, never the texts judged. Delete the folder to forget every answer.

Each entry is written whole or not at all, and the first writer keeps it (`create_exclusive`:
two files played under `--jobs`, or two processes, that ask the same thing write the same
answer once). The folder gets a `.gitignore` (`*`) and a `CACHEDIR.TAG` when it is made, so
git and backup tools leave it alone. An entry that does not read (cut by a full disk, edited)
is a miss, and is removed. A folder that cannot be written turns the cache off for the run:
`problem` says why (the report shows it); the checks still run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import orjson

from recorder.disk.atomic import create_exclusive

__all__ = ["CACHE_FOLDER", "VerdictCache", "cache_key", "default_folder"]

CACHE_FOLDER = ".recorder-cache"
_VERSION = "v1"
_GITIGNORE = "# made by recorder: model answers kept for re-runs; safe to delete\n*\n"
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag made by recorder (model answers): see "
    "https://bford.info/cachedir/\n"
)


def cache_key(value: Any) -> str:
    """The SHA-256 (hex) of `value`'s canonical JSON (UTF-8, keys sorted, no spaces)."""
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()


class VerdictCache:
    """The answers kept under `folder` (a `.recorder-cache`); thread-safe."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)
        self._entries = self.folder / "model" / _VERSION
        self._lock = threading.Lock()
        self._made = False
        self.problem: str | None = None
        """Why nothing is written (None: it is)."""

    def get(self, key: str) -> dict[str, Any] | None:
        """The answer kept under `key`, or None."""
        path = self._path(key)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            self.forget(key)  # (unreadable: asked again, and written again)
            return None
        return value

    def forget(self, key: str) -> None:
        """Remove the answer kept under `key`, if any."""
        with contextlib.suppress(OSError):
            self._path(key).unlink()

    def put(self, key: str, answer: dict[str, Any]) -> None:
        """Keep `answer` under `key` (the first writer's answer stays)."""
        if not self._ready():
            return
        path = self._path(key)
        text = json.dumps(answer, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            path.parent.mkdir(exist_ok=True)
            create_exclusive(path, text)
        except FileExistsError:
            pass
        except OSError as exc:
            with self._lock:
                self.problem = self.problem or f"cannot write {path}: {exc.strerror or exc}"

    def _path(self, key: str) -> Path:
        return self._entries / key[:2] / f"{key}.json"

    def _ready(self) -> bool:
        with self._lock:
            if self._made or self.problem is not None:
                return self.problem is None
            try:
                fresh = not self.folder.exists()
                self._entries.mkdir(parents=True, exist_ok=True)
                if fresh or not (self.folder / ".gitignore").exists():
                    for name, text in ((".gitignore", _GITIGNORE), ("CACHEDIR.TAG", _TAG)):
                        with contextlib.suppress(FileExistsError):
                            create_exclusive(self.folder / name, text)
            except OSError as exc:
                self.problem = f"cannot write {self.folder}: {exc.strerror or exc}"
                return False
            self._made = True
            return True


def default_folder(rules_file: str | None) -> Path:
    """`.recorder-cache` beside `rules_file` (the current folder's when None)."""
    base = os.path.dirname(os.path.abspath(rules_file)) if rules_file else os.getcwd()
    return Path(base) / CACHE_FOLDER
