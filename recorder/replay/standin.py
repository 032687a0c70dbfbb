"""The player's stand-ins for the agent's downstreams: where its calls go on replay.

One `StandIns` per run (the player's `play` owns it; the pytest plugin one per session), a
threaded HTTP/1.1 server per listening address, each standing in for one downstream (its
model, an MCP server, a peer agent: the NAME of `# @call NAME exchange N`). It listens where
the transcripts say the agent sent (each call's recorded `Host`), or where `--downstream
NAME@[HOST:]PORT` says; port 0 takes a free one (`addresses` names it).

Each call that comes is offered to the files being played (`recorder.replay.filecalls`,
joined with `join`): the file whose waiting recorded call matches it takes it (one that
matches as `recorder serve` matches first, then one of an open exchange, then the closest,
then the one with more of its headers alike: with `--jobs` several files are open at once,
and the call's values tell which one made it; an MCP session's header keeps its calls in the
file that answered its `initialize`),
and the call is answered with the recorded reply (`recorder.replay.calls.answer_of`): a body
at once, a stream frame by frame (each frame written and flushed as it is, an unfinished
recording held open until the agent leaves). A call no recorded call waits for is answered
`500` with a JSON body naming the stand-in (and `x-should-retry: false`, which OpenAI's SDKs
honour: no retries of a call that will not be answered), and reported as an extra call of the
file it came closest to; one that comes while no file is open is logged and counted
(`strays`).
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from recorder.errors import RecorderError
from recorder.format.jsonbody import compact_json, json_value
from recorder.format.model import (
    DOWNSTREAM_NAME,
    Headers,
    Response,
    Transcript,
    header_bytes,
    header_text,
)
from recorder.replay.calls import NOT_ANSWERED_HEADERS, LiveCall, answer_of, frames_of
from recorder.replay.filecalls import FileCalls
from recorder.replay.plan import PlanItem
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import Rules
from recorder.secrets.redact import Redactor

__all__ = ["MAX_BODY", "Place", "StandIns", "parse_place", "places_of", "stand_ins_for"]

logger = logging.getLogger("recorder.play")

MAX_BODY = 16 * 1024 * 1024
"""A call's body larger than this is not read (the agent is answered 413)."""
HOLD_LIMIT = 3600.0
"""Seconds at most that an unfinished recorded stream is held open (its agent gone sooner)."""
_HOLD_TICK = 0.25  # seconds between two looks at a held stream's socket and the run's end


@dataclass(frozen=True)
class Place:
    """Where a stand-in listens: a downstream's name, a host and a port (0: any free one)."""

    name: str
    host: str
    port: int


def parse_place(text: str) -> tuple[str, str, int]:
    """`--downstream NAME@[HOST:]PORT` -> (NAME, HOST, PORT): HOST 127.0.0.1 when left out.
    Raises ValueError saying what is wrong."""
    name, at, where = text.partition("@")
    if not at or not name or not where:
        raise ValueError(f"expected NAME@[HOST:]PORT such as model@41260, got {text!r}")
    if not DOWNSTREAM_NAME.match(name):
        raise ValueError(
            f"a downstream's name is a letter then letters, digits, - or _: {name!r} in {text!r}"
        )
    host, colon, port_text = where.rpartition(":")
    if not colon:
        host, port_text = "127.0.0.1", where
    host = host.strip("[]") or "127.0.0.1"
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"expected a port from 0 to 65535 in {text!r}, got {port_text!r}")
    return name, host, int(port_text)


def places_of(
    transcripts: Iterable[Transcript], overrides: Mapping[str, tuple[str, int]]
) -> list[Place]:
    """Where to stand in for the downstreams the `transcripts`' calls went to: each
    downstream's `overrides` place (`--downstream NAME@[HOST:]PORT`), else every place its
    calls' recorded `Host` names (a loopback name listens on 127.0.0.1). Raises RecorderError
    for a recorded Host without a port."""
    hosts: dict[str, set[str]] = {}
    for transcript in transcripts:
        for exchange in transcript.exchanges:
            if exchange.call is not None:
                found = hosts.setdefault(exchange.call.name, set())
                host = exchange.request.headers.get("Host")
                if host:
                    found.add(host)
    places: list[Place] = []
    for name in sorted(hosts):
        if name in overrides:
            places.append(Place(name, *overrides[name]))
            continue
        if not hosts[name]:
            raise RecorderError(
                f"the calls to {name} name no Host to listen at: give --downstream {name}@PORT"
            )
        for host in sorted(hosts[name]):
            where, colon, port = host.rpartition(":")
            if not colon or not port.isdigit() or "]" in port:
                raise RecorderError(
                    f"the calls to {name} were recorded to {host}, which names no port: give "
                    f"--downstream {name}@PORT"
                )
            where = where.strip("[]")
            if where.lower() in ("localhost", ""):
                where = "127.0.0.1"
            places.append(Place(name, where, int(port)))
    return places


class StandIns:
    """The run's stand-ins (see the module docstring). Thread-safe."""

    def __init__(
        self, rules: PairingRules, overrides: Mapping[str, tuple[str, int]] | None = None
    ) -> None:
        """`overrides`: where a downstream's stand-in listens instead of the recorded places
        (`--downstream NAME@[HOST:]PORT`: name -> (host, port), port 0 any free one)."""
        self.rules = rules
        self.overrides = dict(overrides or {})
        # (a model API's `?key=`, as the recorder writes a call's: the rules' secrets besides)
        self.redactor = Redactor(fields={"key": "KEY", **rules.rules.secret_fields})
        """What a report shows of a call's target: its secret query values as placeholders."""
        self._files: weakref.WeakSet[FileCalls] = weakref.WeakSet()
        self._order: dict[int, int] = {}  # id(file) -> when it joined (ties go to the first)
        self._lock = threading.Lock()
        self._servers: dict[Place, tuple[ThreadingHTTPServer, threading.Thread]] = {}
        self._closing = threading.Event()
        self.answered = 0
        self.strays: list[str] = []
        """The calls that came while no file was open (the first 100)."""

    # ------------------------------------------------------------------ life

    def stand_in_for(self, transcripts: Iterable[Transcript]) -> None:
        """Listen wherever the `transcripts`' calls are to be answered (`places_of`), each
        place once; RecorderError naming a place that cannot be bound, or a place where two
        downstreams would be stood in for."""
        for place in places_of(transcripts, self.overrides):
            with self._lock:
                if place in self._servers:
                    continue
                for other in self._servers:
                    if (other.host, other.port) == (place.host, place.port) and place.port:
                        raise RecorderError(
                            f"the calls to {other.name} and to {place.name} were recorded to "
                            f"one place, {place.host}:{place.port}: give --downstream "
                            f"{place.name}@PORT"
                        )
                try:
                    server = _Server((place.host, place.port), _handler(self, place.name))
                except OSError as exc:
                    raise RecorderError(
                        f"cannot stand in for {place.name} at {place.host}:{place.port}: "
                        f"{exc.strerror or exc} (give --downstream {place.name}@PORT)"
                    ) from None
                thread = threading.Thread(
                    target=server.serve_forever,
                    kwargs={"poll_interval": _HOLD_TICK},  # (how long a shutdown waits)
                    name=f"stand-in-{place.name}",
                    daemon=True,
                )
                thread.start()
                self._servers[place] = (server, thread)

    @property
    def addresses(self) -> dict[str, list[str]]:
        """Each downstream's stand-in URLs (`http://127.0.0.1:41260`), the ports bound."""
        found: dict[str, list[str]] = {}
        for place, (server, _) in list(self._servers.items()):
            host = place.host if ":" not in place.host else f"[{place.host}]"
            found.setdefault(place.name, []).append(f"http://{host}:{server.server_address[1]}")
        return found

    def close(self) -> None:
        """Stop listening (idempotent); held streams end."""
        self._closing.set()
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server, thread in servers:
            server.shutdown()
            server.server_close()
            thread.join(5.0)

    def __enter__(self) -> StandIns:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the files

    def join(self, calls: FileCalls) -> None:
        """`calls`' file is played from now: the calls that come may be its."""
        with self._lock:
            self._order.setdefault(id(calls), len(self._order))
            self._files.add(calls)

    # ------------------------------------------------------------------ a call

    def route(self, live: LiveCall) -> tuple[Response, bool]:
        """The answer to `live`: the recorded reply of the call it stands for, taken from the
        file that made it; else the stand-in's error (an extra call, or a stray). With it,
        whether the recorded reply was unfinished (a stream held open after its frames)."""
        with self._lock:
            files = sorted(self._files, key=lambda f: self._order.get(id(f), 0))
            best: tuple[tuple[Any, ...], FileCalls, Any] | None = None
            for file in files:
                found = file.candidate(live)
                if found is None:
                    continue
                candidate, open_now = found
                rank = (candidate.matches, open_now, candidate.score, candidate.alike)
                if best is None or rank > best[0]:
                    best = (rank, file, candidate)
            if best is not None:
                _, file, candidate = best
                if file.take(candidate, live):
                    self.answered += 1
                    mapping = {**file.mapping(), **candidate.echoes}
                    answer = answer_of(candidate.call, live, mapping, self.rules.shapes)
                    return answer, candidate.call.truncated
            owner = _closest(files, live)
            if owner is not None:
                owner.extra(live)
                why = "no recorded call of it waits for this one"
            else:
                why = "no transcript is being played that waits for a call"
                if len(self.strays) < 100:
                    self.strays.append(f"{live.name}: {live.line}")
        logger.warning("stand-in %s: %s: %s", live.name, live.line, why)
        return _refusal(live, why), False


def _closest(files: Sequence[FileCalls], live: LiveCall) -> FileCalls | None:
    """The open file whose calls `live` comes closest to (the first among equals)."""
    best: tuple[tuple[int, int, int, int], FileCalls] | None = None
    fallback: FileCalls | None = None
    for file in files:
        score = file.closeness(live)
        if score is None:
            if fallback is None and file.is_open:
                fallback = file
            continue
        if best is None or score > best[0]:
            best = (score, file)
    return best[1] if best is not None else fallback


def _refusal(live: LiveCall, why: str) -> Response:
    """The stand-in's answer to a call it has no recorded reply for: 500, a JSON body that
    names it (OpenAI's error shape; a JSON-RPC call's error too), no retries asked for."""
    message = f"recorder play's stand-in for {live.name}: {why}: {live.line}"
    body: dict[str, Any] = {
        "error": {"message": message, "type": "recorder_stand_in", "code": "no_recorded_call"}
    }
    request = json_value(live.body, exact_numbers=False)
    if isinstance(request, dict) and request.get("jsonrpc") == "2.0" and "id" in request:
        body = {
            "jsonrpc": "2.0",
            "id": request["id"],
            "error": {"code": -32603, "message": message},
        }
    return Response(
        500,
        "Internal Server Error",
        Headers([("Content-Type", "application/json"), ("x-should-retry", "false")]),
        compact_json(body),
    )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True  # a port a recording just left (TIME_WAIT) is taken again

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def server_close(self) -> None:
        """Stop listening, and end the agent's kept-alive connections too: a later run's
        stand-ins on the same port would not get the calls they carry."""
        super().server_close()
        with self.connections_lock:
            connections, self.connections = list(self.connections), set()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


def _handler(stand_ins: StandIns, name: str) -> type[BaseHTTPRequestHandler]:
    class _Call(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # a reply's head and body, and each frame, are written apart: without it Nagle's
        # algorithm holds the second write for the agent's delayed ACK (40 ms a call)
        disable_nagle_algorithm = True

        def handle_one_request(self) -> None:
            try:
                super().handle_one_request()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the agent left: nothing to answer

        def _serve(self) -> None:
            body = self._body()
            if body is None:
                return
            headers = tuple((n, header_text(v.encode("latin-1"))) for n, v in self.headers.items())
            shown = stand_ins.redactor.redact_target(self.path)
            live = LiveCall(name, self.command, self.path, headers, body, shown)
            try:
                answer = stand_ins.route(live)
            except Exception as exc:  # the stand-in's own trouble: said, never a crash
                logger.exception("stand-in %s: %s", name, live.line)
                message = f"the stand-in failed: {type(exc).__name__}"
                answer = _refusal(live, message), False
            self._answer(*answer)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = _serve

        def _body(self) -> bytes | None:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                return self._chunked()
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 <= length <= MAX_BODY:
                self._answer(Response(413 if length > MAX_BODY else 400))
                self.close_connection = True
                return None
            return self.rfile.read(length)

        def _chunked(self) -> bytes | None:
            chunks: list[bytes] = []
            size = 0
            for _ in range(1_000_000):  # bounded: MAX_BODY in one-byte chunks at most
                line = self.rfile.readline(1026)
                try:
                    length = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    self._answer(Response(400))
                    self.close_connection = True
                    return None
                if length == 0:
                    for _ in range(100):  # trailers, up to the blank line
                        if self.rfile.readline(8192) in (b"\r\n", b"\n", b""):
                            break
                    return b"".join(chunks)
                size += length
                if size > MAX_BODY:
                    self._answer(Response(413))
                    self.close_connection = True
                    return None
                chunks.append(self.rfile.read(length))
                self.rfile.readline(3)
            return b"".join(chunks)

        def _answer(self, answer: Response, unfinished: bool = False) -> None:
            self.send_response(answer.status, answer.reason or None)
            for header, value in answer.headers:
                if header.lower() not in NOT_ANSWERED_HEADERS:
                    self.send_header(header, header_bytes(value).decode("latin-1"))
            if answer.events is None:
                body = b"" if self.command == "HEAD" else answer.body
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            for frame in frames_of(answer):
                # each frame on its own, as the downstream sent it (a client reads it at once)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                self.wfile.flush()
            if unfinished:
                self._hold()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _hold(self) -> None:
            """A recorded stream that had not ended when the recording did (an MCP server's
            GET stream the agent kept open): held open until the agent leaves or the run
            ends, as it was."""
            deadline = time.monotonic() + HOLD_LIMIT
            connection: socket.socket = self.connection
            while not stand_ins._closing.is_set() and time.monotonic() < deadline:
                readable, _, _ = select.select([connection], [], [], _HOLD_TICK)
                if readable and not connection.recv(1, socket.MSG_PEEK):
                    self.close_connection = True
                    return  # the agent left

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the player's report says what came."""

    return _Call


def stand_ins_for(
    items: Sequence[PlanItem],
    loaded: Sequence[tuple[str, Transcript]],
    rules: Rules,
    downstreams: Mapping[str, tuple[str, int]] | None,
) -> StandIns | None:
    """The run's stand-ins, listening for the calls of the files to play (and of the files
    they need), or None when they hold none. RecorderError: a `downstreams` name that no
    transcript's calls name, a place that cannot be bound."""
    overrides = dict(downstreams or {})
    named = {e.call.name for _, t in loaded for e in t.exchanges if e.call is not None}
    unknown = sorted(set(overrides) - named)
    if unknown:
        known = ", ".join(sorted(named)) or "none"
        raise RecorderError(
            f"--downstream {unknown[0]}: no transcript has calls to {unknown[0]} (they have "
            f"calls to: {known})"
        )
    played = [item.transcript for item in items] + [t for item in items for _, t in item.needs]
    if not any(e.call is not None for t in played for e in t.exchanges):
        return None
    stand_ins = StandIns(PairingRules(rules), overrides)
    try:
        stand_ins.stand_in_for(played)
    except BaseException:
        stand_ins.close()
        raise
    return stand_ins
