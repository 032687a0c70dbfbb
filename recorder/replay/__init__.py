"""Replay: play transcripts against an agent and compare its replies.

The pure core (`state`: the alias map and pairing rules, carry-forward, the fast path, the
walk and its explanation, bless; `diff`) is fed by the I/O shell (`player`), whose results go
to `report` (terminal, JUnit) and the pytest plugin. `rerecord` keeps recorded ids when a
scenario is recorded again.
"""
