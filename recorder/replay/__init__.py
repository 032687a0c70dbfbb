"""Replay: play transcripts against an agent and compare its replies.

The verdict (`verdict`: `ReplayState` with carry-forward, the fast path, the walk and its
explanation, the checked places, rule 5's addresses, bless; pure) is fed by the I/O shell:
`player` (`play`, and `FilePlayer` for one file) with `plan` (loading, `keywords` for -k,
shards), `variables` (placeholders), `send` and `grpc_send` (the transport, reading live
replies), `during` (requests sent while earlier exchanges are open), `pushes` (deliveries),
`update` (what --update writes), `origins` (which file generated a recorded id sent blind),
`needs` (@after) and `jobs` (files in parallel). What a run found (`reports.results`) goes to
the `reports` (terminal, JUnit, JSON, recap, -v) and the pytest plugin. `rerecord` keeps
recorded ids when a scenario is recorded again. Nothing here starts an agent of its own: the
entry points (`recorder play`, the pytest plugin) start the bundled kit when no agent is named.
"""
