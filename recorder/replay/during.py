"""`# @during exchange N frame K`: requests a transcript says arrived while an earlier exchange
of its file was still open (its reply's head not yet received, or its event stream still
open). `recorder.replay.player.FilePlayer` does the sending and comparing; this module holds
the tags and the exchanges read in the background.

- Every exchange that a later one is `@during` is read in a thread (`BackgroundExchange`),
  stream or not, and compared once its reply has ended.
- A tagged exchange is sent with every background exchange still open, once exchange N has
  got as far as the tag says: K >= 1, K data frames of its stream arrived (comment-only
  frames, keep-alive pings, are not counted); K = 0, N's request has been sent whole (N may
  be a blocking call that answers only once the tagged request has acted: a SendMessage that
  ends when it is canceled).
- An untagged exchange arrived when nothing of its file was open: every background exchange
  is read to its end (and compared) before it is sent.
- Before a tagged request is prepared, the frames that the open streams have sent so far are
  paired with their recorded frames (`ReplayState.learn_frames`): the request may carry an id
  that only such a frame holds (CancelTask by the id of a task an open stream announced).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from recorder.errors import NoReplyError
from recorder.format.httpfile import DURING_TAG
from recorder.format.model import Transcript
from recorder.format.sse import SseDecoder, SseEvent
from recorder.replay.verdict.live import real_frames
from recorder.replay.verdict.state import LiveReply

__all__ = ["BackgroundExchange", "during_tags"]


def during_tags(transcript: Transcript) -> tuple[dict[int, tuple[int, int]], frozenset[int]]:
    """The transcript's `@during` tags, with 0-based exchange numbers: (exchange -> (the
    exchange it is sent during, the frames of that exchange it waits for), the exchanges that
    a later one is sent during)."""
    during: dict[int, tuple[int, int]] = {}
    for index, exchange in enumerate(transcript.exchanges):
        for comment in exchange.comments:
            # `@during exchange N frame K` (httpfile checks it names an earlier exchange)
            match = DURING_TAG.match(comment.strip())
            if match is None:
                continue
            stream, frames = int(match.group(1)) - 1, int(match.group(2))
            if 0 <= stream < index:
                during[index] = (stream, frames)
                break
    return during, frozenset(stream for stream, _ in during.values())


class BackgroundExchange:
    """An exchange whose reply is read in a thread while later exchanges are sent.

    `start(self)` sends the request and reads the reply, telling this object how far it got:
    `on_sent` (the request written whole), `on_frames` (frames so far; 0 when the reply's head
    arrives), `on_chunk` (the bytes of an event stream as they arrive).
    """

    def __init__(self, start: Callable[[BackgroundExchange], LiveReply], timeout: float) -> None:
        self.started = time.perf_counter()
        self._timeout = timeout
        self._changed = threading.Condition()
        self._sent = False
        self._frames = -1  # -1: the reply's head has not arrived
        self._chunks: list[bytes] = []  # the stream's bytes not yet decoded (`new_frames`)
        self._decoder = SseDecoder()  # what `new_frames` decoded so far
        self._learned = 0  # frames handed out by `new_frames`
        self._done = False
        self._live: LiveReply | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(start,), name="recorder-play-stream", daemon=True
        )
        self._thread.start()

    def _run(self, start: Callable[[BackgroundExchange], LiveReply]) -> None:
        try:
            self._live = start(self)
        except BaseException as exc:  # handed to the player's thread in `result`
            self._error = exc
        finally:
            with self._changed:
                self._done = True
                self._changed.notify_all()

    def on_sent(self) -> None:
        with self._changed:
            self._sent = True
            self._changed.notify_all()

    def on_frames(self, count: int) -> None:
        with self._changed:
            self._frames = count
            self._changed.notify_all()

    def on_chunk(self, chunk: bytes) -> None:
        with self._changed:
            self._chunks.append(chunk)

    def _reached(self, frames: int) -> bool:
        if self._done or self._frames >= frames:
            return True
        return frames == 0 and self._sent

    def wait_for_frames(self, count: int) -> None:
        """Until `count` data frames arrived (0: until the request was sent whole, or the
        reply's head arrived when the transport reports no sending), or the exchange ended (its
        reply is compared later), for at most the timeout."""
        with self._changed:
            self._changed.wait_for(lambda: self._reached(count), self._timeout)

    def new_frames(self) -> tuple[int, list[SseEvent]]:
        """(n, the data frames arrived so far): the frames from n on were not handed out
        before. Whole frames only, decoded from the bytes that arrived."""
        with self._changed:
            data, self._chunks = b"".join(self._chunks), []
        self._decoder.feed(data)  # only what came since the last call
        frames = real_frames(self._decoder.events)
        start, self._learned = self._learned, max(self._learned, len(frames))
        return start, frames

    def result(self) -> LiveReply:
        self._thread.join(self._timeout + 5)
        if self._error is not None:
            raise self._error
        if self._live is None:
            raise NoReplyError(f"the event stream did not end within {self._timeout:g} s")
        return self._live
