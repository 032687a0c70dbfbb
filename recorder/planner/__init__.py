"""The planner: the client that drives the kit agent through the recorder.

`scenarios` holds the scripted conversations (the real a2a-sdk client, raw httpx for malformed
calls); `run` starts the kit and the recording proxy and turns the scenarios into the golden
`transcripts/` (`python -m recorder.planner --out transcripts/`, what `make record` runs).
"""
