"""Replay: play transcripts against an agent and compare its replies.

The pure core (`state`: the alias map and pairing rules, carry-forward, the fast path, the
walk and its explanation, bless; `diff`) is fed by the I/O shell: `player` (`play`, and
`FilePlayer` for one file) with `plan` (loading, `-k`, shards), `variables` (placeholders),
`send` (the transport, reading live replies), `during` (requests sent while earlier exchanges
are open), `update` (what --update writes), `origins` (which file generated a recorded id sent
blind) and `jobs` (files in parallel). Its `results` go to `report`
(terminal, JUnit) and the pytest plugin. `rerecord` keeps recorded ids when a scenario is
recorded again. Nothing here starts an agent of its own: the entry points (`recorder play`,
the pytest plugin) start the bundled kit when no agent is named.
"""
