"""Playing the planned files one after another, or in worker threads (`--jobs N`): each file
keeps its order and its worker's keep-alive transport, and results are reported in name order
as they finish. An exception in one worker (the agent cannot be reached) stops the others
before their next exchange and is raised once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import httpx

from recorder.replay.plan import PlanItem
from recorder.replay.reports.results import Listener, TranscriptResult
from recorder.replay.send import make_transport

__all__ = ["PlayFile", "Stopped", "run_files"]

PlayFile = Callable[[PlanItem, httpx.BaseTransport, threading.Event], TranscriptResult]
"""Plays one planned file through a transport; raises `Stopped` once the event is set."""


class Stopped(Exception):
    """Another worker failed; this one stops before its next exchange."""


def run_files(
    items: Sequence[PlanItem],
    play_file: PlayFile,
    *,
    base_url: str,
    jobs: int,
    timeout: float,
    listener: Listener | None,
) -> list[TranscriptResult]:
    """Each item's `play_file` result, in the order of `items`, each told to `listener` as it
    is ready; `jobs` files at a time, in daemon threads, each with its own transport to
    `base_url`. `timeout` bounds the wait for the replies in flight after a worker failed."""
    stop = threading.Event()
    if jobs == 1 or len(items) <= 1:
        results = []
        with make_transport(base_url) as transport:
            for item in items:
                result = play_file(item, transport, stop)
                results.append(result)
                if listener is not None:
                    listener.transcript_done(result)
        return results

    # Daemon threads, not a ThreadPoolExecutor: on Ctrl-C the run ends at once, without
    # waiting (up to --timeout) for the replies in flight; an executor's threads are joined
    # at exit. Files are taken in name order and reported in name order as they finish.
    changed = threading.Condition()
    waiting = list(enumerate(items))
    finished: dict[int, TranscriptResult] = {}
    in_order: list[TranscriptResult] = []
    errors: list[BaseException] = []

    def worker() -> None:
        with make_transport(base_url) as transport:
            while not stop.is_set():
                with changed:
                    if not waiting:
                        return
                    position, item = waiting.pop(0)
                try:
                    result = play_file(item, transport, stop)
                except Stopped:
                    return
                except BaseException as exc:  # handed to the main thread, which raises it
                    with changed:
                        errors.append(exc)
                        stop.set()
                        changed.notify_all()
                    return
                with changed:
                    finished[position] = result
                    while len(in_order) in finished:
                        ready = finished.pop(len(in_order))
                        in_order.append(ready)
                        if listener is not None:
                            listener.transcript_done(ready)
                    changed.notify_all()

    threads = [
        threading.Thread(target=worker, name=f"recorder-play-{n}", daemon=True)
        for n in range(min(jobs, len(items)))
    ]
    for thread in threads:
        thread.start()
    try:
        with changed:
            while not errors and len(in_order) < len(items):
                changed.wait(0.2)  # with a timeout: Ctrl-C is seen at once
    except BaseException:  # Ctrl-C: the workers start no other exchange; no waiting for them
        stop.set()
        raise
    if errors:
        # the others stop before their next exchange: wait for the ones in flight, so that
        # nothing is reported after the error
        for thread in threads:
            thread.join(timeout + 5)
        raise errors[0]
    return in_order
