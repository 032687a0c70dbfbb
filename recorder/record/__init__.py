"""Record: the recording reverse proxy and what it writes.

`proxy` (the ASGI app; a package with one module per room: forwarding, stream relay, card
rewriting, scenario control, recording, the writer thread), `transport` (the HTTP/1.1 server
and the client to the agent), `store` (numbered `.http` files, appended or written
atomically), `lineage` (which file unscripted traffic goes to), `cards` (agent-card interface
URLs pointed at the proxy), `grpc_proxy` (the gRPC listener).
"""
