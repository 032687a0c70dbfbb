"""One planned file in a run of the player: the files it needs first, its exchanges played
once or in trials (`recorder.replay.trials`), reported as they come, and --update's second
play and rewrite (`recorder.replay.update`); -x's stop. `RunSettings` is what every file of a
run shares (`recorder.replay.player.play` makes it; the workers of `recorder.replay.jobs`
read it). One file's exchanges are `recorder.replay.player.FilePlayer`'s.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import httpx

from recorder.replay.grpc_send import GrpcTarget
from recorder.replay.jobs import Stopped
from recorder.replay.live import LiveReply
from recorder.replay.needs import play_needs
from recorder.replay.origins import Origins
from recorder.replay.plan import PlanItem
from recorder.replay.pushes import PushReceiver
from recorder.replay.results import ExchangeResult, Listener, TranscriptResult
from recorder.replay.standin import StandIns
from recorder.replay.trials import play_in_trials
from recorder.replay.update import finish_update
from recorder.replay.watch import AgentWatch
from recorder.rules import Rules

if TYPE_CHECKING:
    from collections.abc import Mapping

    from recorder.replay.player import FilePlayer

__all__ = ["HALTED", "RunSettings", "file_player", "play_item", "stops_exitfirst"]


@dataclass(frozen=True)
class RunSettings:
    """What every file of a run is played with (one value, shared by the workers)."""

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
    trials: tuple[int, float] | None = None
    """--trials N, --pass-rate R (`recorder.replay.trials`)."""
    pushes: PushReceiver | None = None
    grpc: GrpcTarget | None = None
    stand_ins: StandIns | None = None


HALTED = "not played: the run stopped at the first failing file (-x)"


def play_item(
    settings: RunSettings, item: PlanItem, transport: httpx.BaseTransport, stop: threading.Event
) -> TranscriptResult:
    """`item` played (`jobs.run_files` calls it, in a worker): once, or in trials; nothing
    when -x stopped the run."""
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
        result = play_file(settings, item, transport, stop)
    else:
        # each trial a fresh FilePlayer; the report hears the combined verdicts only
        once = replace(settings, listener=None)
        result = play_in_trials(
            lambda: play_file(once, item, transport, stop),
            *settings.trials,
            selected=[index + 1 for index in sorted(item.selected)],
        )
        listener = settings.listener
        if listener is not None:
            for exchange in result.exchanges:
                listener.exchange_done(item, exchange)
    if settings.exitfirst and stops_exitfirst(result, update=settings.update):
        settings.halt.set()
    return result


def stops_exitfirst(result: TranscriptResult, *, update: bool) -> bool:
    """A file that makes the run fail: an error, or a mismatch (--update: a file left)."""
    if any(e.error is not None for e in result.exchanges):
        return True
    return bool(result.not_updated) if update else not result.passed


def file_player(
    settings: RunSettings,
    item: PlanItem,
    transport: httpx.BaseTransport,
    lives: dict[int, LiveReply] | None,
    *,
    update: bool,
) -> FilePlayer:
    """The `FilePlayer` of `item` in this run (`lives`: where its live replies go)."""
    from recorder.replay.player import FilePlayer  # (the player imports this module)

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
        stand_ins=settings.stand_ins,
    )


def replayed(
    settings: RunSettings, item: PlanItem, transport: httpx.BaseTransport
) -> dict[int, LiveReply]:
    """--update: the file played once more, its live replies (for `finish_update`)."""
    second: dict[int, LiveReply] = {}
    again = file_player(settings, item, transport, second, update=False)
    for index in range(item.play_count):
        again.play_until(index)
    return second


def play_file(
    settings: RunSettings, item: PlanItem, transport: httpx.BaseTransport, stop: threading.Event
) -> TranscriptResult:
    """`item` played once: the files it needs first, its exchanges in order (each reported
    as it comes), then --update's rewrite."""
    lives: dict[int, LiveReply] | None = {} if settings.update else None
    player = file_player(settings, item, transport, lives, update=settings.update)
    reported: list[ExchangeResult] = []

    def need_player(need: PlanItem) -> FilePlayer:  # a file `item` needs (@after), played first
        return file_player(settings, need, transport, None, update=False)

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
            player, item.selected, lives or {}, lambda: replayed(settings, item, transport)
        )
    return TranscriptResult(item.path, tuple(reported), updated=updated, not_updated=not_updated)
