"""The kit: a deterministic reference "code-reviewer" A2A agent built on the official a2a-sdk.

`create_app(base_url, token=...)` gives the Starlette app; `start_kit()` runs it on a loopback
port in a background thread. JSON-RPC at `/a2a/jsonrpc`, HTTP+JSON under `/a2a/rest`, the
card at `/.well-known/agent-card.json`. Behaviour: see `recorder.kit.review` (what a message
means, the review rules) and `recorder.kit.executor` (the events it sends).
"""

from recorder.kit.app import DEFAULT_TOKEN, create_app
from recorder.kit.serve import KitServer, start_kit

__all__ = ["DEFAULT_TOKEN", "KitServer", "create_app", "start_kit"]
