"""The recorder's HTTP/1.1 transport: the server its clients talk to and the client it talks
to the agent with. Not the recording: nothing here knows of transcripts, secrets or scenarios.

    client ──TCP──▶ http1.Http1Server / Http1Protocol ──▶ cycle.Cycle (ASGI receive, send)
                                                             └─▶ the app (RecordingProxy)
    the app ──▶ upstream.Http11Upstream (or HttpxUpstream) ──TCP──▶ the agent

`cycle` needs of its connection only what `cycle.Connection` names, so `http1` imports
`cycle` and not the other way round.
"""
