"""The `language` check's detector: py3langid (an optional dependency, `a2a-recorder[language]`).

py3langid is langid.py's naive Bayes model (97 languages, ISO 639-1 codes): deterministic (the
same text gives the same answer on every run, unlike langdetect's sampling), about 5 MB with no
download at run time, right on a paragraph of plain English or French. It needs numpy, which is
why it is not a core dependency. Like any detector it is unreliable on a few words: a check on
a one-line answer is better written with `contains_any` or `matches`.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

__all__ = ["LANGUAGE_CODE", "LANGUAGE_MISSING", "detect_language", "language_available"]

LANGUAGE_CODE = re.compile(r"^[a-z]{2}$")
"""What a `language` check names: an ISO 639-1 code (py3langid knows a few languages
without one, such as Ligurian, `lij`)."""

LANGUAGE_MISSING = (
    "the language check needs py3langid, which is not installed:"
    " pip install 'a2a-recorder[language]' (or pip install py3langid)"
)

_lock = threading.Lock()
_identifier: Any = None


def language_available() -> bool:
    """Whether py3langid can be imported."""
    try:
        import py3langid  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return False
    return True


def detect_language(text: str) -> str | None:
    """The ISO 639-1 code of `text`'s language, or None for a text without letters. Raises
    ImportError (with `LANGUAGE_MISSING`) when py3langid is not installed."""
    if not any(c.isalpha() for c in text):
        return None
    return _classify(text)


@functools.lru_cache(maxsize=4096)  # (learn asks of the same texts again, run after run)
def _classify(text: str) -> str:
    global _identifier
    with _lock:
        if _identifier is None:
            try:
                import py3langid
            except ImportError:
                raise ImportError(LANGUAGE_MISSING) from None
            # (one model per process, its own instance: loading it takes ~0.5 s)
            _identifier = py3langid.langid.LanguageIdentifier.from_modelpath(
                py3langid.langid.MODEL_DIR / py3langid.langid.MODEL_FILE
            )
        language, _ = _identifier.classify(text)
    return str(language)
