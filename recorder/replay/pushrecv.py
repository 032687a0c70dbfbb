"""The player's webhook receiver: where a replayed push config points the agent's deliveries.

One `PushReceiver` per run (the player's `play` owns it; a `FilePlayer` without one makes its
own), a threaded HTTP server on 127.0.0.1, started on first use, one path per push config
(`/push/<key>`, the key made by `recorder.replay.pushes`). Each delivery that arrives is kept
(its method, path, headers, body) and answered with the answer set for its place (the recorded
client answer; 200 with no body past the recorded ones). `wait` blocks until a config got as
many deliveries as asked, or the time is up (bounded, woken by each arrival, no polling).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from recorder.format.model import Response

__all__ = ["Arrival", "PushReceiver"]

# a delivery body larger than this is not read (the agent is answered 413)
MAX_BODY = 16 * 1024 * 1024
# hop-by-hop and framing headers: the server writes its own
_NOT_RELAYED = frozenset({"content-length", "transfer-encoding", "connection", "date", "server"})


@dataclass(frozen=True)
class Arrival:
    """One delivery as the receiver got it."""

    method: str
    path: str
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        """The first value of header `name` (any case), or None."""
        folded = name.lower()
        return next((v for n, v in self.headers if n.lower() == folded), None)


class PushReceiver:
    """The loopback webhook of a run (see the module docstring). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._arrived: dict[str, list[Arrival]] = {}
        self._answers: dict[str, Sequence[Response]] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._keys = 0

    def new_key(self) -> str:
        """A key no other config of this run has (the receiver's path for one config)."""
        with self._lock:
            self._keys += 1
            return str(self._keys)

    def url(self, key: str) -> str:
        """The webhook URL of `key` (the server started on first use)."""
        server = self._start()
        return f"http://127.0.0.1:{server.server_address[1]}/push/{key}"

    def answer(self, key: str, answers: Sequence[Response]) -> None:
        """Answer the deliveries to `key` with `answers`, in order (the recorded ones)."""
        with self._lock:
            self._answers[key] = answers

    def arrived(self, key: str) -> list[Arrival]:
        """The deliveries to `key` so far, in arrival order."""
        with self._lock:
            return list(self._arrived.get(key, ()))

    def wait(self, key: str, count: int, timeout: float) -> list[Arrival]:
        """The deliveries to `key` once `count` arrived, or those that did within `timeout`."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self._arrived.get(key, ())) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._lock.wait(left)
            return list(self._arrived.get(key, ()))

    def close(self) -> None:
        """Stop the server (idempotent); a receiver never started has nothing to stop."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(5.0)

    def _start(self) -> ThreadingHTTPServer:
        with self._lock:
            if self._server is None:
                self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
                self._server.daemon_threads = True
                self._thread = threading.Thread(
                    target=self._server.serve_forever, name="push-receiver", daemon=True
                )
                self._thread.start()
            return self._server

    def _arrive(self, arrival: Arrival) -> Response | None:
        """Keep `arrival`; the answer for its place (None: 200, no body)."""
        key = arrival.path.removeprefix("/push/").split("?", 1)[0]
        with self._lock:
            got = self._arrived.setdefault(key, [])
            got.append(arrival)
            answers = self._answers.get(key, ())
            place = len(got) - 1
            self._lock.notify_all()
        return answers[place] if place < len(answers) else None


def _handler(receiver: PushReceiver) -> type[BaseHTTPRequestHandler]:
    class _Delivery(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 <= length <= MAX_BODY:
                self._send(Response(413 if length > MAX_BODY else 400))
                return
            body = self.rfile.read(length)
            arrival = Arrival(self.command, self.path, tuple(self.headers.items()), body)
            self._send(receiver._arrive(arrival) or Response(200, "OK"))

        do_PUT = do_POST

        def _send(self, answer: Response) -> None:
            self.send_response(answer.status, answer.reason or None)
            for name, value in answer.headers:
                if name.lower() not in _NOT_RELAYED:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the player's report says what arrived."""

    return _Delivery
