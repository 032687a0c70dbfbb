"""Whether the agent is still there: what lets a run go on, and end quickly, when the agent
goes away mid-run (CI's commonest failure).

An agent that cannot be reached before any reply came stops the run (`UpstreamError`: a
wrong address). Once it has answered, losing it is a result: the exchange that lost its reply
is an error, the rest of its file is not played, and each later file first makes one quick
connection attempt (`probe`) instead of waiting for a timeout per exchange.
"""

from __future__ import annotations

import socket
import threading

import httpx

__all__ = ["AgentWatch"]

PROBE_SECONDS = 1.0


class AgentWatch:
    """Shared by the files of one run (and their worker threads)."""

    def __init__(self, base_url: str, *, probe_seconds: float = PROBE_SECONDS) -> None:
        self.base_url = base_url
        self.probe_seconds = probe_seconds
        self._where = f"cannot reach the agent at {base_url}"
        self._lock = threading.Lock()
        self._reached = False
        self._down: str | None = None

    @property
    def reached(self) -> bool:
        """The agent has answered at least once in this run."""
        return self._reached

    @property
    def down(self) -> str | None:
        """Why the agent is known down, or None."""
        return self._down

    def answered(self) -> None:
        with self._lock:
            self._reached = True
            self._down = None

    def contacted(self) -> None:
        """The agent was reached, though no whole reply came (it may be going away)."""
        with self._lock:
            self._reached = True

    def lost(self, reason: str) -> None:
        with self._lock:
            self._down = reason

    def probe(self, seconds: float | None = None) -> str | None:
        """When the agent is known down: one connection attempt of at most `seconds` (by
        default `probe_seconds`); None
        when it accepts (it is back), else why the agent is still down. None at once when the
        agent is not known down."""
        if self._down is None:
            return None
        seconds = self.probe_seconds if seconds is None else seconds
        url = httpx.URL(self.base_url)
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            with socket.create_connection((url.host, port), timeout=seconds):
                pass
        except TimeoutError:
            return f"{self._where}: it did not accept a connection within {seconds:g} s"
        except ConnectionRefusedError:
            return f"{self._where}: connection refused"
        except OSError as exc:
            return f"{self._where}: {(exc.strerror or str(exc)).lower()}"
        with self._lock:
            self._down = None
        return None
