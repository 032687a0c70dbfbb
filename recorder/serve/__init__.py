"""`recorder serve`: golden transcripts served as a stand-in agent for client developers.

`StandIn` (an ASGI app) answers each request with the recorded reply of the exchange it
matches (`book`: which one; `match`: the comparison; `replies`: the reply made the
conversation's). See docs/serve.md.

The app is imported when first named: the player imports `match` alone (it matches the
agent's calls as the stand-in matches requests), without the server's modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recorder.serve.app import NO_MATCH, StandIn, load_stand_in

__all__ = ["NO_MATCH", "StandIn", "load_stand_in"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from recorder.serve import app

        return getattr(app, name)
    raise AttributeError(f"module 'recorder.serve' has no attribute {name!r}")
