"""Record: the recording reverse proxy and what it writes.

`proxy` (the ASGI app; a package with one module per room: forwarding, stream relay, card
rewriting, scenario control, recording), `upstream` (the HTTP/1.1 client to the agent), `store`
(numbered `.http` files, written atomically), `cards` (agent-card interface URLs pointed at the
proxy).
"""
