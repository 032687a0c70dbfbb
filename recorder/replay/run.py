"""`play`: a run of transcripts against an agent, from the plan to the results.

It plans the files (`recorder.replay.plan`), starts the agent when none is given (the
`start_agent` it is handed) and the stand-ins for the agent's own calls
(`recorder.replay.standin`), then plays each file with its own `FilePlayer`
(`recorder.replay.player`: one file's sending, comparing and blessing), in turn or in parallel
(`recorder.replay.jobs`), once or in trials (`recorder.replay.trials`), and gathers their
verdicts (`recorder.replay.reports.results`).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import httpx

from recorder.checks.judges import import_judges
from recorder.format.model import Transcript
from recorder.replay.grpc_send import GrpcTarget, grpc_target, has_grpc
from recorder.replay.jobs import Stopped, run_files
from recorder.replay.needs import attach_needs, play_needs
from recorder.replay.origins import Origins
from recorder.replay.plan import PlanItem, load_transcripts, plan
from recorder.replay.player import AgentHandle, FilePlayer, finish_update
from recorder.replay.pushes import PushReceiver
from recorder.replay.reports.results import ExchangeResult, Listener, PlayResult, TranscriptResult
from recorder.replay.send import DEFAULT_TIMEOUT, agent_base_url
from recorder.replay.standin import StandIns, stand_ins_for
from recorder.replay.trials import TrialPlan, play_in_trials
from recorder.replay.verdict.state import LiveReply
from recorder.replay.watch import AgentWatch
from recorder.rules.ruleset import DEFAULT_RULES, Rules

__all__ = ["play"]


@dataclass(frozen=True)
class _Settings:
    base_url: str
    live_base: str | None
    rules: Rules
    variables: Mapping[str, str]
    timeout: float
    update: bool
    listener: Listener | None
    origins: Origins
    watch: AgentWatch
    verbose: int = 0
    exitfirst: bool = False
    halt: threading.Event = field(default_factory=threading.Event)
    """-x: set once a file failed; the files not yet started are not played."""
    trials: TrialPlan | None = None
    """--trials N, --pass-rate R, --confidence C, --early-stop (`recorder.replay.trials`)."""
    pushes: PushReceiver | None = None
    grpc: GrpcTarget | None = None
    replies: bool = False
    stand_ins: StandIns | None = None


HALTED = "not played: the run stopped at the first failing file (-x)"


def _play_item(
    settings: _Settings, item: PlanItem, transport: httpx.BaseTransport, stop: threading.Event
) -> TranscriptResult:
    if settings.halt.is_set():
        exchanges = item.transcript.exchanges
        return TranscriptResult(
            item.path,
            tuple(
                ExchangeResult(
                    index + 1,
                    exchanges[index].title,
                    exchanges[index].line,
                    error=HALTED,
                    played=False,
                )
                for index in sorted(item.selected)
            ),
        )
    if settings.trials is None:
        result = _play_file(settings, item, transport, stop)
    else:
        # each trial a fresh FilePlayer; the report hears the combined verdicts only
        once = replace(settings, listener=None)
        result = play_in_trials(
            lambda: _play_file(once, item, transport, stop),
            settings.trials,
            selected=[index + 1 for index in sorted(item.selected)],
        )
        listener = settings.listener
        if listener is not None:
            for exchange in result.exchanges:
                listener.exchange_done(item, exchange)
    if settings.exitfirst and result.stops_run(update=settings.update):
        settings.halt.set()
    return result


def _file_player(
    settings: _Settings,
    item: PlanItem,
    transport: httpx.BaseTransport,
    lives: dict[int, LiveReply] | None,
    *,
    update: bool,
) -> FilePlayer:
    return FilePlayer(
        item.path,
        item.transcript,
        transport,
        settings.base_url,
        rules=settings.rules,
        variables=settings.variables,
        timeout=settings.timeout,
        update=update,
        live_base=settings.live_base,
        origins=settings.origins,
        watch=settings.watch,
        verbose=settings.verbose,
        on_reply=None if lives is None else lives.__setitem__,
        pushes=settings.pushes,
        grpc=settings.grpc,
        keep_replies=settings.replies,
        stand_ins=settings.stand_ins,
    )


def _replayed(
    settings: _Settings, item: PlanItem, transport: httpx.BaseTransport
) -> dict[int, LiveReply]:
    """--update: the file played once more, its live replies (for `finish_update`)."""
    second: dict[int, LiveReply] = {}
    again = _file_player(settings, item, transport, second, update=False)
    for index in range(item.play_count):
        again.play_until(index)
    return second


def _play_file(
    settings: _Settings, item: PlanItem, transport: httpx.BaseTransport, stop: threading.Event
) -> TranscriptResult:
    lives: dict[int, LiveReply] | None = {} if settings.update else None
    player = _file_player(settings, item, transport, lives, update=settings.update)
    reported: list[ExchangeResult] = []

    def need_player(need: PlanItem) -> FilePlayer:  # a file `item` needs (@after), played first
        return _file_player(settings, need, transport, None, update=False)

    needs_notes = play_needs(item.needs, need_player, stop.is_set, into=player.state)
    for index in range(item.play_count):
        if stop.is_set():
            raise Stopped
        result = player.play_until(index)
        if needs_notes and index in item.selected:
            result, needs_notes = replace(result, notes=(*needs_notes, *result.notes)), ()
        # a setup exchange (played for its ids, not selected) is reported when it got no
        # reply: the exchanges that needed it are "not played", and that must say why
        if index in item.selected or (result.error is not None and result.played):
            reported.append(result)
            if settings.listener is not None:
                settings.listener.exchange_done(item, result)
    updated = False
    not_updated = None
    if settings.update and not all(r.passed for r in reported):
        updated, not_updated = finish_update(
            player, item.selected, lives or {}, lambda: _replayed(settings, item, transport)
        )
    return TranscriptResult(item.path, tuple(reported), updated=updated, not_updated=not_updated)


# --------------------------------------------------------------------------- the run


def play(
    paths: Sequence[str | os.PathLike[str]],
    *,
    agent: str | None = None,
    rules: Rules = DEFAULT_RULES,
    update: bool = False,
    pattern: str | None = None,
    jobs: int = 1,
    shard: tuple[int, int] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    environ: Mapping[str, str] | None = None,
    listener: Listener | None = None,
    start_agent: Callable[..., AgentHandle] | None = None,
    verbose: int = 0,
    exitfirst: bool = False,
    trials: TrialPlan | None = None,
    grpc_agent: str | None = None,
    replies: bool = False,
    downstreams: Mapping[str, tuple[str, int]] | None = None,
    live_downstreams: bool = False,
    announce: Callable[[str], None] | None = None,
) -> PlayResult:
    """Replay the transcripts under `paths` against `agent`, or against the agent that
    `start_agent` starts (only when there is something to play; stopped at the end). A
    started agent's token fills `{{A2A_TOKEN}}` unless `environ` sets it.

    `verbose` (1, 2, 3) keeps the diff of both replies of a mismatch, normalized (both whole; and
    the request as sent) in its result; `exitfirst` plays no file after the first that fails
    (their exchanges are "not played"). An agent that goes away after it answered is a result
    too (the exchange that lost it is an error, each later file fails fast:
    `recorder.replay.watch`).
    `trials` (a `TrialPlan`) plays each file N times, an exchange passing as the plan says
    (`recorder.replay.trials`; not with `update`). gRPC calls go to `grpc_agent` (HOST:PORT),
    else to the GRPC interface of the agent's card (`start_agent(grpc=True)` when a file has
    one: the started agent's). `replies`: each result holds both replies, normalized.

    The agent's own calls (`# @call NAME exchange N` blocks) are answered by stand-ins
    (`recorder.replay.standin`) listening where they were recorded to, or where
    `downstreams` says (NAME -> (host, port); port 0: any free one), and compared like
    replies; `announce` is told where each listens. With `live_downstreams` nothing stands
    in: the calls go where the agent sends them, and only its replies are compared.

    Raises `TranscriptErrors`, `RulesError` (a judge of the rules' checks cannot be imported),
    `UpstreamError` (the agent never answered), or ValueError for
    a bad agent URL or when neither `agent` nor `start_agent` is given; mismatches, and the
    exchanges that need a variable that is not set, are in the result.
    """
    if trials is not None and update:
        raise ValueError("trials and update do not go together: update from one run")
    loaded = load_transcripts(paths)
    items = attach_needs(plan(loaded, pattern=pattern, shard=shard), loaded)
    import_judges(check for entry in rules.checks for check in entry.checks)
    selected_files = len(items) if shard is None else len(plan(loaded, pattern=pattern))
    variables = dict(os.environ if environ is None else environ)
    stand_ins = None if live_downstreams else stand_ins_for(items, loaded, rules, downstreams)
    if stand_ins is not None and announce is not None:
        for name, urls in stand_ins.addresses.items():
            announce(f"standing in for {name} at {', '.join(urls)}")
    try:
        return _play_items(
            items,
            loaded,
            agent=agent,
            rules=rules,
            update=update,
            jobs=jobs,
            timeout=timeout,
            listener=listener,
            start_agent=start_agent,
            verbose=verbose,
            exitfirst=exitfirst,
            trials=trials,
            grpc_agent=grpc_agent,
            variables=variables,
            selected_files=selected_files,
            replies=replies,
            stand_ins=stand_ins,
        )
    finally:
        if stand_ins is not None:
            stand_ins.close()


def _play_items(
    items: Sequence[PlanItem],
    loaded: Sequence[tuple[str, Transcript]],
    *,
    agent: str | None,
    rules: Rules,
    update: bool,
    jobs: int,
    timeout: float,
    listener: Listener | None,
    start_agent: Callable[..., AgentHandle] | None,
    verbose: int,
    exitfirst: bool,
    trials: TrialPlan | None,
    grpc_agent: str | None,
    variables: dict[str, str],
    selected_files: int,
    replies: bool,
    stand_ins: StandIns | None,
) -> PlayResult:
    """`play` once its files are planned and its stand-ins listen."""
    live_base: str | None = None
    handle: AgentHandle | None = None
    if agent is not None:
        base_url = agent_base_url(agent)
    elif start_agent is None:
        raise ValueError("no agent to play against: give agent or start_agent")
    elif items:
        serves = has_grpc(item.transcript for item in items)
        handle = start_agent(grpc=True) if serves else start_agent()
        base_url = agent_base_url(handle.url)
        live_base = agent_base_url(handle.base_url)
        # the agent we started (the kit) checks this token: `make demo` needs no setup
        variables.setdefault("A2A_TOKEN", handle.token)
    else:
        base_url = "http://127.0.0.1"  # nothing to play: no agent started for nothing
    pushes = PushReceiver()  # started when a file registers a push config
    grpc = grpc_target(grpc_agent, base_url, handle, timeout)
    try:
        if listener is not None:
            listener.started(items)
        settings = _Settings(
            base_url,
            live_base,
            rules,
            variables,
            timeout,
            update,
            listener,
            Origins(loaded, rules),
            AgentWatch(base_url, probe_seconds=min(1.0, timeout)),
            verbose=verbose,
            exitfirst=exitfirst,
            trials=trials,
            pushes=pushes,
            grpc=grpc,
            replies=replies,
            stand_ins=stand_ins,
        )
        results = run_files(
            items,
            functools.partial(_play_item, settings),
            base_url=base_url,
            jobs=max(1, jobs),
            timeout=timeout,
            listener=listener,
        )
    finally:
        pushes.close()
        grpc.channels.close()
        if handle is not None:
            handle.stop()
    return PlayResult(tuple(results), update=update, selected_files=selected_files)
