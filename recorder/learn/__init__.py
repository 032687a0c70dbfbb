"""`recorder learn`: play transcripts against a live agent twice or more, and propose the rules
that absorb what differs between the live runs (the agent's noise), keeping every check that
can stay. A job that uses the replay (`recorder.replay.player`); the proposals are pure
(`recorder.rules.noise`), the rules file is written by `recorder.learn.rulesfile`."""

from recorder.learn.run import Learned, learn

__all__ = ["Learned", "learn"]
