"""Moved to `recorder.record.transport.upstream`; the names are re-exported here for imports
written before the move (drop this module once none is left)."""

from recorder.record.transport.upstream import (
    Http11Upstream,
    HttpxUpstream,
    UpstreamReply,
    tls_context,
)

__all__ = ["Http11Upstream", "HttpxUpstream", "UpstreamReply", "tls_context"]
