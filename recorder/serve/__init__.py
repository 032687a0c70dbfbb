"""`recorder serve`: golden transcripts served as a stand-in agent for client developers.

`StandIn` (an ASGI app) answers each request with the recorded reply of the exchange it
matches (`book`: which one; `match`: the comparison; `replies`: the reply made the
conversation's). See docs/serve.md.
"""

from recorder.serve.app import NO_MATCH, StandIn, load_stand_in

__all__ = ["NO_MATCH", "StandIn", "load_stand_in"]
