"""The recording reverse proxy: an ASGI app that forwards to one upstream agent and records.

    client ──▶ proxy (this app, under http1) ──recorder.record.transport.upstream──▶ upstream agent
                 │
                 └─▶ TranscriptStore: NN-slug.http, one file per scenario

`RecordingProxy` is the ASGI entry; each concern is a room of its own, holding references to
the rooms it uses:

- `forwarding` (`Forwarder`): reads the request, forwards it (hop-by-hop and the proxy's own
  headers dropped, a body over `max_body` answered 413), answers a small reply as soon as it
  is whole (its recording follows, off the reply path), and the upstream's failures with
  502/504;
- `relay` (`StreamRelay`): event streams and large or unsized bodies, chunk by chunk as they
  arrive, recorded when they end (truncated when the client leaves, the upstream breaks off,
  or the server shuts down);
- `agent_cards` (`AgentCards`): agent cards reach the client with their URLs pointing at the
  proxy (`recorder.record.cards`), with their own ETag;
- `scenarios` (`Scenarios`): `Recorder-Scenario` / `Recorder-Title` and the control endpoint
  `/_recorder/scenario`: which file an exchange goes to; and `GET /_recorder/status`;
- `recording` (`Recording`): the exchange as the upstream got and sent it, secrets replaced by
  `{{PLACEHOLDER}}`s (`recorder.secrets.redact`), written through the `TranscriptStore` by one
  writer thread, after the client has its reply;
- `push` (`PushRoom`): push notifications: a config's url pointed at the proxy's receiver
  (`/_recorder/push/<id>`, `receivers`) and back in the agent's echo; each delivery forwarded
  to the client's webhook and recorded in its config's file, tagged `# @push config N`; a
  webhook the recorder does not deliver to (`recorder.push_urls`) refused with the recorder's
  own A2A error; a receiver ended with its config or its task;
- `downstream` (`Downstreams`, `DownstreamApp`): the agent's own calls, through a listener per
  downstream (`add_downstream`: its model, its MCP servers, its peers), each written into the
  file of the A2A exchange that made it, tagged `# @call NAME exchange N`;
- `call` (`Call`): one request while it is handled, and the ASGI helpers the rooms share;
- `server`: `serve` and `ProxyServer` (the proxy's own HTTP/1.1 server, `http1` and `cycle`),
  `parse_listen`, `listening_socket` (the transport's): imported from there (the server is
  typed with this app, so this package does not hand its names on).

Per request: the forwarder takes the request, the scenario room chooses its scenario, the
card room tells its operation (and a card request), the recording room gives it its file (the
scenario's, else by id lineage, `recorder.record.lineage`) and its place there, and the
forwarder forwards it and answers (or the relay streams the reply).

Failures are never silent: upstream refused / reset: 502, timed out: 504 (forwarding); a
transcript that cannot be written (by the writer thread, after the client has its reply)
changes nothing the client gets: it is logged as an error, counted (`GET /_recorder/status`;
`recorder record` prints the count and exits 1 at shutdown) (recording); a stream cut by the
client, the upstream or shutdown is recorded truncated (relay); anything else the proxy fails
at is a 500 naming it (here), or, once the reply has started, a connection closed without the
final chunk. At shutdown (`aclose`) the pending recordings are written, for at most
`drain_timeout` seconds; those still pending then are counted as not recorded.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from recorder.push_urls import WebhookScreen
from recorder.record.cards import Origin
from recorder.record.lineage import Lineage
from recorder.record.proxy.agent_cards import AgentCards
from recorder.record.proxy.call import (
    Receive,
    Scope,
    Send,
    answer_own_failure,
    send_error,
)
from recorder.record.proxy.downstream import DownstreamApp, Downstreams, parse_downstream
from recorder.record.proxy.forwarding import (
    BUFFER_LIMIT,
    CLIENT_TIMEOUT,
    DEFAULT_TIMEOUT,
    MAX_REQUEST_BODY,
    Forwarder,
    Pool,
)
from recorder.record.proxy.push import PUSH_GRACE, PUSH_PREFIX, PushRoom
from recorder.record.proxy.recording import Recording
from recorder.record.proxy.relay import STREAM_GRACE, StreamRelay
from recorder.record.proxy.scenarios import CONTROL_PATH, STATUS_PATH, Scenarios
from recorder.record.proxy.writer import BACKLOG
from recorder.record.store.modes import Keep
from recorder.record.store.transcript_store import TranscriptStore
from recorder.record.transport.http1 import listening_socket
from recorder.rules.ruleset import DEFAULT_RULES, Rules
from recorder.secrets.redact import (
    DEFAULT_SECRET_FIELDS,
    DEFAULT_SECRET_HEADERS,
    Redactor,
    scrub_text,
    secret_names,
)

if TYPE_CHECKING:
    from recorder.record.grpc_proxy import GrpcListener

__all__ = [
    "CONTROL_PATH",
    "STATUS_PATH",
    "DownstreamListener",
    "RecordingProxy",
    "create_proxy_app",
    "parse_downstream",
]

log = logging.getLogger(__name__)

# seconds the shutdown waits for the recordings still pending
DRAIN_TIMEOUT = 10.0


class DownstreamListener:
    """One downstream's listener: its app (`DownstreamApp`) and the socket it listens on
    (bound when it is added: its port is known before the proxy serves)."""

    def __init__(self, app: DownstreamApp, sock: socket.socket) -> None:
        self.app = app
        self.sock = sock

    @property
    def url(self) -> str:
        host, port = self.sock.getsockname()[:2]
        return f"http://{f'[{host}]' if ':' in host else host}:{port}"


class RecordingProxy:
    """The ASGI app: the recording proxy for `upstream` (an http(s) URL), writing transcripts
    under `out`.

    `fsync=True` flushes every transcript file to the disk before it replaces the old one
    (survives a power loss; costs a disk flush per exchange). Without it writes are still
    atomic: a reader, or a restart after the recorder crashed, sees whole files.
    `max_body`: the longest request body forwarded (bytes; a longer one gets a 413).
    `buffer_limit`: replies with a Content-Length up to this are read whole before the
    client gets the end of them (so that a card can be rewritten and their ids learned;
    over 64 KiB all but their last chunk pass on as they arrive); longer ones are relayed.
    `drain_timeout`: seconds the shutdown waits for the recordings still pending.
    `stream_grace`: seconds the upstream is still read after a client left a stream.
    `client_timeout`: seconds a request's head, and then its body, may take (a 408 after).
    `rules`: what is generated (for grouping unscripted traffic by id lineage).
    `mode` (`new`, `replace`, `once`): what a scenario that already has a file in `out` does,
    and `keep` the pass `replace` lays a re-recorded file over its previous text with when
    the proxy stops (`recorder.record.store.modes`; the CLI hands in `recorder.replay.rerecord`).
    `push_loopback`: push webhooks on loopback addresses are delivered to (local work; else
    refused, as every address that is not public is: `recorder.push_urls`);
    `push_receiver`: the origin (`https://host[:port]`) the agent is given for the proxy's
    push receiver, for an agent that refuses loopback webhooks (a tunnel to the listener);
    `push_grace`: seconds a push receiver lives after its task's final state."""

    def __init__(
        self,
        upstream: str,
        *,
        out: Path,
        secret_headers: Mapping[str, str] | Iterable[str] = DEFAULT_SECRET_HEADERS,
        secret_fields: Mapping[str, str] | Iterable[str] = DEFAULT_SECRET_FIELDS,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        pool: Pool = "per-connection",
        transport: httpx.AsyncBaseTransport | None = None,
        buffer_limit: int = BUFFER_LIMIT,
        max_body: int = MAX_REQUEST_BODY,
        fsync: bool = False,
        stream_grace: float = STREAM_GRACE,
        rules: Rules = DEFAULT_RULES,
        drain_timeout: float = DRAIN_TIMEOUT,
        client_timeout: float = CLIENT_TIMEOUT,
        mode: str = "new",
        keep: Keep | None = None,
        push_loopback: bool = False,
        push_receiver: str | None = None,
        push_grace: float = PUSH_GRACE,
    ) -> None:
        if "@" in urllib.parse.urlsplit(upstream).netloc:
            # httpx would send them as Basic auth; this proxy forwards the client's headers
            # only, so they would be dropped without a word (and the message leaves them out)
            raise ValueError(
                "the upstream URL holds credentials (user:password@): they are not sent; "
                "let the client send its Authorization header through the proxy instead"
            )
        self.drain_timeout = drain_timeout
        self.upstream = Origin.parse(upstream)
        self.upstream_url = self.upstream.base
        self.client_timeout = client_timeout
        parts = httpx.URL(self.upstream_url)
        self.store = TranscriptStore(Path(out), scrub=scrub_text, fsync=fsync, mode=mode, keep=keep)
        redactor = Redactor(
            headers=secret_names(secret_headers, fold=True),
            fields=secret_names(secret_fields, fold=False),
            url_fields=rules.secret_url_fields,
        )
        self.recording = Recording(
            self.store, redactor, host_header=parts.netloc.decode("ascii"), lineage=Lineage(rules)
        )
        self.writer = self.recording.writer  # (the counts, the backlog, the drain)
        self.scenarios = Scenarios(self.store, self.upstream_url)
        self.cards = AgentCards(self.upstream)
        self.grpc: GrpcListener | None = None  # `listen_grpc`
        self.relay = StreamRelay(self.recording, self.upstream_url, grace=stream_grace)
        timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self.read_timeout = timeout.read  # (the gRPC listener's bound too: `listen_grpc`)
        self.forwarder = Forwarder(
            self.upstream,
            parts,
            timeout=timeout,
            pool=pool,
            transport=transport,
            buffer_limit=buffer_limit,
            max_body=max_body,
            client_timeout=client_timeout,
            recording=self.recording,
            relay=self.relay,
            cards=self.cards,
        )
        self.push = PushRoom(
            self.recording,
            redactor,
            max_body=max_body,
            client_timeout=client_timeout,
            screen=WebhookScreen(loopback=push_loopback),
            receiver=push_receiver,
            grace=push_grace,
        )
        self.forwarder.restore = self.push.restore
        self._redactor = redactor
        self._timeout = timeout
        self._buffer_limit = buffer_limit
        self._max_body = max_body
        self._stream_grace = stream_grace
        self.calls: Downstreams | None = None  # made by the first `add_downstream`
        self.downstreams: list[DownstreamListener] = []

    def add_downstream(
        self, name: str, url: str, host: str = "127.0.0.1", port: int = 0
    ) -> DownstreamListener:
        """Record the agent's calls to a downstream of its own too: a listener on host:port
        (0: a free port; bound now) forwarding to `url`, each call written into the file of
        the A2A exchange that made it (`recorder.record.proxy.downstream`). Raises
        ValueError for a name given twice or a URL that is not a plain http(s) base URL, and
        OSError when the address cannot be listened on."""
        parse_downstream(f"{name}={url}@{port}")  # (the same checks as the CLI's spelling)
        if any(listener.app.name == name for listener in self.downstreams):
            raise ValueError(f"--downstream {name} is given twice: one URL per downstream")
        if self.calls is None:
            self.calls = Downstreams(self.recording)
        app = DownstreamApp(
            self.calls,
            name,
            url,
            redactor=self._redactor,
            timeout=self._timeout,
            buffer_limit=self._buffer_limit,
            max_body=self._max_body,
            client_timeout=self.client_timeout,
            stream_grace=self._stream_grace,
        )
        listener = DownstreamListener(app, listening_socket(host, port))
        self.downstreams.append(listener)
        # a webhook there would send the agent's own calls' listener a delivery
        self.push.also_own(*listener.sock.getsockname()[:2])
        return listener

    def listen_grpc(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        upstream: str | None = None,
        *,
        max_message: int | None = None,
    ) -> GrpcListener:
        """Forward and record A2A's gRPC binding too: a listener on host:port (0: a free
        port), started and stopped with the proxy, calling the agent at `upstream` (its
        card's GRPC interface, `host:port`; None: learned from the first card relayed),
        each reply message awaited at most the proxy's read timeout; `max_message`: the
        longest message it passes on, in bytes (None: no limit of its own).
        Raises RecorderError without grpcio (`recorder.record.grpc_proxy`)."""
        from recorder.record.grpc_proxy import GrpcListener

        listener = GrpcListener(
            self.recording,
            self.scenarios,
            host=host,
            port=port,
            upstream=upstream,
            timeout=self.read_timeout,
            push=self.push,
            max_message=max_message,
        )
        listener.http_upstream = self.upstream_url
        self.grpc = self.cards.grpc = listener
        # (its address is the recorder's own too: no webhook may name it)
        self.push.grpc_address = lambda: (listener.host, listener.port) if listener.port else None
        return listener

    @property
    def scenario(self) -> str | None:
        """The scenario the control endpoint set (None: none)."""
        return self.scenarios.current

    @scenario.setter
    def scenario(self, name: str | None) -> None:
        self.scenarios.current = name

    @property
    def recorded(self) -> int:
        """How many exchanges were written."""
        return self.writer.recorded

    @property
    def recorded_calls(self) -> int:
        """How many of the agent's own calls were written."""
        return self.writer.calls

    @property
    def ambiguous_calls(self) -> int:
        """How many calls were written with the earliest of the exchanges then open, tagged
        ambiguous (`recorder.record.calls`)."""
        return 0 if self.calls is None else self.calls.ambiguous

    @property
    def unrecorded_calls(self) -> int:
        """How many calls were relayed and not recorded: made before any exchange, or for
        an exchange that was not recorded."""
        return 0 if self.calls is None else self.calls.unattributed + self.calls.dropped

    @property
    def not_recorded(self) -> int:
        """How many exchanges could not be written (or were still pending at shutdown)."""
        return self.writer.failed

    @property
    def kept(self) -> int:
        """How many exchanges were not written because `mode="once"` kept their file."""
        return self.writer.kept

    @property
    def replaced(self) -> dict[Path, bool]:
        """The files `mode="replace"` wrote again in place, each with whether it changed
        (known once the proxy stopped)."""
        return dict(self.store.replaced)

    def status(self) -> dict[str, object]:
        """What `GET /_recorder/status` reports: recorded, failed, kept, pending, out,
        last_error, push_refused (push registrations and deliveries the recorder refused), and
        with downstreams, the agent's calls recorded and those attributed ambiguously."""
        status = {**self.writer.status(), "push_refused": self.push.refused}
        if self.calls is not None:
            status.update(self.calls.status())
        return status

    async def flush(self, timeout: float = DRAIN_TIMEOUT) -> bool:
        """Wait (bounded) until every exchange answered so far is written or has failed."""
        return await self.writer.flush(timeout)

    # ---------------------------------------------------------------- ASGI entry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    self.store.prepare()
                except OSError as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def aclose(self) -> None:
        """Close the upstream connections, write the pending recordings (at most
        `drain_timeout` seconds; those still pending then are counted as not recorded)."""
        await self.forwarder.aclose()
        await self.push.aclose()
        for listener in self.downstreams:
            await listener.app.aclose()
        await self.writer.drain(self.drain_timeout)
        if self.calls is not None:
            self.calls.close()
        self.store.close()

    def stop_streams(self) -> None:
        """End every relayed stream now (called in the event loop when the server shuts down,
        before it waits for open connections): each is recorded as truncated and its client
        connection closed without the final chunk. Without this an endless stream (e.g.
        SubscribeToTask) would hold Ctrl-C for the server's whole grace period and then be
        cancelled."""
        self.relay.stop_all()
        for listener in self.downstreams:
            listener.app.stop_streams()

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        await answer_own_failure(self._handle, scope, receive, send, self.upstream_url)

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One request, through the rooms."""
        # the control prefix is matched on the path as sent: `/%5Frecorder/status` is the
        # agent's path (its decoded spelling is the proxy's only when sent so)
        raw_path: bytes | None = scope.get("raw_path")
        path = raw_path.decode("latin-1") if raw_path else scope["path"]
        if path.startswith("/_recorder/"):
            if path == CONTROL_PATH:
                await self.scenarios.control(scope, receive, send)
                return
            if path == STATUS_PATH:
                await self.scenarios.status(scope, receive, send, self.status())
                return
            if path.startswith(PUSH_PREFIX):
                await self.push.deliver(scope, receive, send, path)
                return
        call = await self.forwarder.take(scope, receive, send)
        if call is None:
            return
        try:
            self.scenarios.choose(call)
        except ValueError as exc:
            await send_error(send, 400, str(exc), self.upstream_url)
            return
        self.cards.inspect(call, scope)
        self.recording.begin(call)
        # (`record -v`: which file a request goes to is the question a user debugs; after
        # begin, which gives the call the redactor that `shown` hides secrets with)
        log.debug("%s: scenario %s", call.shown, call.scenario or "none (grouped by id lineage)")
        try:
            refusal = self.push.rewrite(call, scope)
            if refusal is not None:  # (a webhook the recorder does not deliver to)
                await self.push.refuse(call, send, refusal)
                return
            deletes = self.push.deletes(call)
            if deletes is not None:  # (its receivers end once the agent confirms it)
                send = self.push.confirming(send, call, deletes)
            if self.writer.pending > BACKLOG:
                # the writer has fallen behind: it catches up first (a crash costs less)
                await self.writer.catch_up()
            await self.forwarder.forward(call, receive, send)
        except asyncio.CancelledError:
            if not call.reply.queued:  # e.g. the server's shutdown grace period ran out
                log.warning("%s was cancelled before its reply was recorded", call.shown)
            raise
        finally:
            self.recording.finish(call)


# the name the CLI, the tests and the benchmarks build the proxy by
create_proxy_app = RecordingProxy
