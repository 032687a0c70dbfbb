"""What the player needs of an agent it was handed started (the bundled kit, in the entry
points): `play(start_agent=...)` returns one."""

from __future__ import annotations

from typing import Protocol

__all__ = ["AgentHandle"]


class AgentHandle(Protocol):
    """A started agent (such as the kit): where it listens, what it calls itself, its token."""

    @property
    def url(self) -> str: ...

    @property
    def base_url(self) -> str: ...

    @property
    def token(self) -> str: ...

    def stop(self) -> None: ...
