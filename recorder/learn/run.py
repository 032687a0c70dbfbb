"""`recorder learn`'s I/O: play the transcripts N times, keep the live replies, propose, verify.

1. Each file is played `runs` times against the live agent by the replay's own `FilePlayer`
   (carry-forward, placeholders, @during: exactly as `recorder play` sends), which tells us each
   live reply (`FilePlayer.on_reply`).
2. `recorder.noise.propose` compares the live replies of each exchange with one another and
   proposes the narrowest rules that absorb what differs (pure).
3. The rules file is written (new, or merged into `--rules FILE`: `recorder.learn.rulesfile`).
4. One more run, `recorder play` with the learned rules: what still mismatches differs from the
   recording at a place that is stable between live runs, a likely regression, never learned.
"""

from __future__ import annotations

import datetime
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from recorder.atomic import write_text_atomic
from recorder.learn.rulesfile import merge, render
from recorder.model import Transcript
from recorder.noise import MoreChecks, Proposals, Replies, propose
from recorder.redact import scrub_text
from recorder.replay.grpc_send import grpc_target, has_grpc
from recorder.replay.live import LiveReply
from recorder.replay.needs import needs_of, play_needs
from recorder.replay.plan import load_transcripts
from recorder.replay.player import AgentHandle, FilePlayer, play
from recorder.replay.results import PlayResult
from recorder.replay.send import DEFAULT_TIMEOUT, agent_base_url, make_transport
from recorder.replay.variables import secret_values
from recorder.rules import DEFAULT_RULES, Rules, rules_from_text

__all__ = ["Learned", "learn"]


@dataclass
class Learned:
    """What one `learn` found and wrote."""

    proposals: Proposals
    files: int
    exchanges: int
    runs: int
    text: str
    """The rules file as written (new, or the merged `--rules` file)."""
    errors: list[str] = field(default_factory=list)
    """Exchanges that got no reply (or were not sent) in a learning run: not learned from."""
    verify: PlayResult | None = None
    """The run with the learned rules: its mismatches are the likely regressions."""

    @property
    def regressions(self) -> int:
        if self.verify is None:
            return 0
        return sum(1 for t in self.verify.transcripts for e in t.exchanges if not e.passed)


def _keep(
    lives: dict[tuple[int, int], list[LiveReply]],
    number: int,
    player: FilePlayer,
    index: int,
    live: LiveReply,
) -> None:
    # (a file that needs others, `# @after`: as compared, without other files' items)
    recorded = player.transcript.exchanges[index].response
    lives.setdefault((number, index), []).append(player.state.without_others(recorded, live))


class _Kept:
    """An agent the learn started, handed to `play` for the verification run: not stopped."""

    def __init__(self, handle: AgentHandle) -> None:
        self._handle = handle

    @property
    def url(self) -> str:
        return self._handle.url

    @property
    def base_url(self) -> str:
        return self._handle.base_url

    @property
    def token(self) -> str:
        return self._handle.token

    def stop(self) -> None:
        """Stopped by `learn` at its end."""


def learn(
    paths: Sequence[str | os.PathLike[str]],
    *,
    agent: str | None,
    rules: Rules = DEFAULT_RULES,
    rules_file: str | None = None,
    output: str | None = None,
    runs: int = 4,
    environ: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    start_agent: Callable[..., AgentHandle] | None = None,
    grpc_agent: str | None = None,
    more_checks: MoreChecks | None = None,
) -> Learned:
    """Play `paths` `runs` times against `agent` (or the agent `start_agent` starts), propose
    the rules that absorb the noise over `rules` (read from `rules_file`, if any), write them
    to `output` (or merged into `rules_file`; neither: not written, see `Learned.text`), and
    play once more with them. gRPC calls go where `recorder.replay.grpc_send.grpc_target`
    says (`grpc_agent`, the started agent's, the card's); `more_checks` proposes more checks
    where prose varied (a model's: `recorder.checks.model_proposals`). Raises `TranscriptErrors`,
    `UpstreamError`, `RulesError`."""
    if runs < 2:
        raise ValueError("learning needs two live runs or more")
    loaded = load_transcripts(paths)
    needs = needs_of(loaded)
    variables = dict(os.environ if environ is None else environ)
    handle: AgentHandle | None = None
    live_base: str | None = None
    if agent is not None:
        base_url = agent_base_url(agent)
    elif start_agent is None:
        raise ValueError("no agent to learn from: give agent or start_agent")
    else:
        handle = start_agent(grpc=True) if has_grpc(t for _, t in loaded) else start_agent()
        base_url = agent_base_url(handle.url)
        live_base = agent_base_url(handle.base_url)
        variables.setdefault("A2A_TOKEN", handle.token)
    grpc = grpc_target(grpc_agent, base_url, handle, timeout)
    try:
        lives: dict[tuple[int, int], list[LiveReply]] = {}
        errors: list[str] = []
        with make_transport(base_url) as transport:
            for _ in range(runs):
                for number, (path, transcript) in enumerate(loaded):

                    def file_player(path: str, transcript: Transcript) -> FilePlayer:
                        return FilePlayer(
                            path,
                            transcript,
                            transport,
                            base_url,
                            rules=rules,
                            variables=variables,
                            timeout=timeout,
                            live_base=live_base,
                            grpc=grpc,
                        )

                    player = file_player(path, transcript)
                    if path in needs:  # (`# @after`: the files it needs, played first)
                        play_needs(
                            needs[path],
                            lambda need: file_player(need.path, need.transcript),
                            lambda: False,
                            into=player.state,
                        )
                    player.on_reply = functools.partial(_keep, lives, number, player)
                    for index in range(len(transcript.exchanges)):
                        result = player.play_until(index)
                        if result.error is not None:
                            errors.append(f"{path} exchange {index + 1}: {result.error}")
        replies = [
            Replies(
                f"{path} exchange {index + 1}",
                transcript.exchanges[index].response,
                tuple(live.response for live in lives.get((number, index), ())),
                path,
                index + 1,
            )
            for number, (path, transcript) in enumerate(loaded)
            for index in range(len(transcript.exchanges))
            if len(lives.get((number, index), ())) == runs
        ]
        proposals = propose(replies, rules, more_checks=more_checks)
        secrets = secret_values(
            variables, {*rules.secret_headers.values(), *rules.secret_fields.values()}
        )
        exchanges = sum(len(t.exchanges) for _, t in loaded)
        header = [
            f"recorder learn: {len(proposals.rules)} rules for the noise of {base_url},",
            f"learned from {runs} live runs of {exchanges} exchanges in {len(loaded)} files"
            f" on {datetime.date.today().isoformat()}.",
            "Each rule says why it is needed, the exchanges that made it necessary, and a few",
            "of the live values seen there.",
        ]

        def scrub(text: str) -> str:
            return scrub_text(text, secrets)

        if rules_file is not None:
            original = Path(rules_file).read_text(encoding="utf-8")
            text = merge(original, proposals.rules, header, scrub) if proposals.rules else original
        else:
            text = render(proposals.rules, header, scrub)
        learned_rules = rules_from_text(text, output or rules_file or "<learned rules>")
        target = output or rules_file
        if target is not None and (output is not None or proposals.rules):
            write_text_atomic(Path(target), text)
        start: Callable[..., AgentHandle] | None = None
        if handle is not None:
            kept = _Kept(handle)
            start = lambda **_: kept  # noqa: E731
        verify = play(
            paths,
            agent=base_url if handle is None else None,
            grpc_agent=grpc_agent or getattr(handle, "grpc_address", None),
            rules=learned_rules,
            environ=variables,
            timeout=timeout,
            start_agent=start,
        )
        return Learned(proposals, len(loaded), exchanges, runs, text, errors, verify)
    finally:
        grpc.channels.close()
        if handle is not None:
            handle.stop()
