"""`# @during exchange N frame K`: requests a transcript says were sent while an earlier event
stream was open. Stream N is then read in the background (`BackgroundExchange`), the tagged
exchanges are sent once its frame K arrived, and N is compared when its stream has ended
(`recorder.replay.player.FilePlayer` does the sending and comparing)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from recorder.errors import NoReplyError
from recorder.httpfile import DURING_TAG
from recorder.model import Transcript
from recorder.replay.state import LiveReply

__all__ = ["BackgroundExchange", "during_tags"]


def during_tags(transcript: Transcript) -> tuple[dict[int, int], dict[int, int]]:
    """The transcript's `@during` tags, with 0-based exchange numbers: (exchange -> the open
    stream it is sent during, stream -> how many frames arrive before the first such send)."""
    during: dict[int, int] = {}
    open_until: dict[int, int] = {}
    for index, exchange in enumerate(transcript.exchanges):
        for comment in exchange.comments:
            # `@during exchange N frame K` (httpfile checks it names an earlier stream)
            match = DURING_TAG.match(comment.strip())
            if match is None:
                continue
            stream, frames = int(match.group(1)) - 1, int(match.group(2))
            if 0 <= stream < index:
                during[index] = stream
                if stream not in open_until:
                    open_until[stream] = frames
    return during, open_until


class BackgroundExchange:
    """An exchange whose event stream is read in a thread while later exchanges are sent."""

    def __init__(self, start: Callable[[Callable[[int], None]], LiveReply], timeout: float) -> None:
        self.started = time.perf_counter()
        self._timeout = timeout
        self._changed = threading.Condition()
        self._frames = -1  # -1: the reply's head has not arrived
        self._done = False
        self._live: LiveReply | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(start,), name="recorder-play-stream", daemon=True
        )
        self._thread.start()

    def _run(self, start: Callable[[Callable[[int], None]], LiveReply]) -> None:
        try:
            self._live = start(self._on_frames)
        except BaseException as exc:  # handed to the player's thread in `result`
            self._error = exc
        finally:
            with self._changed:
                self._done = True
                self._changed.notify_all()

    def _on_frames(self, count: int) -> None:
        with self._changed:
            self._frames = count
            self._changed.notify_all()

    def wait_for_frames(self, count: int) -> None:
        """Until `count` frames arrived or the stream ended (its reply is compared later)."""
        with self._changed:
            self._changed.wait_for(lambda: self._done or self._frames >= count, self._timeout)

    def result(self) -> LiveReply:
        self._thread.join(self._timeout + 5)
        if self._error is not None:
            raise self._error
        if self._live is None:
            raise NoReplyError(f"the event stream did not end within {self._timeout:g} s")
        return self._live
