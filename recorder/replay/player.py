"""The player: send each recorded request to an agent and compare each reply with the golden one.

This is the I/O shell around the pure replay core (`recorder.replay.verdict.state.ReplayState`, one
per transcript file, decides what to send and what mismatched). `recorder.replay.run.play`
runs it; each concern has its own module:

1. Plan (`recorder.replay.plan`): find and parse the transcripts, select exchanges (`-k`),
   split the files across machines (`--shard K/N`). Broken input stops the run before
   anything is sent.
2. Send (`recorder.replay.send`): each exchange's request, after `ReplayState.prepare`
   (carry-forward of generated values) and after filling `{{NAME}}` placeholders from the
   environment (`recorder.replay.variables`), goes to the agent; the live reply is read as it
   arrives, within the timeout.
3. Compare (`FilePlayer`, one per file; `recorder.replay.during`: requests sent while a stream
   is open; `recorder.replay.pushes`: push deliveries, awaited): `ReplayState.compare`.
4. With `update`, bless (`recorder.replay.update`): `ReplayState.bless` gives the reply to
   write back into the golden file.

Files run in turn or in parallel (`recorder.replay.jobs`); the verdicts:
`recorder.replay.reports.results`.

A mismatch is a result (`ExchangeResult.mismatches`), and so is an exchange that got no whole
reply (`ExchangeResult.error`: a timeout, a dropped connection): the rest of its file is then
not played (its requests need that reply's ids), and the other files are. So is an exchange
that needs an environment variable that is not set (`recorder.replay.variables`: a credential
header's `{{A2A_TOKEN}}`; a secret elsewhere gets a stand-in): it is not sent, its error names
the variable, and the rest of its file plays. Exceptions are for broken input and broken
environments: `TranscriptErrors` (files that do not parse), `UpstreamError` (the agent cannot
be reached at all).

The player starts no agent of its own: with no `agent`, `play` calls the `start_agent` it is
given (the entry points pass the bundled kit's).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import httpx

from recorder.errors import NoReplyError, UpstreamError
from recorder.format.model import Exchange, Request, Transcript
from recorder.replay.calls import request_as_reply
from recorder.replay.during import BackgroundExchange, during_tags
from recorder.replay.filecalls import CallVerdict, FileCalls, call_details
from recorder.replay.grpc_send import GrpcTarget, send_grpc
from recorder.replay.origins import Origins, unpaired_notes
from recorder.replay.pushes import FORGED_NOTE, FilePushes, PushReceiver, as_reply
from recorder.replay.reports.results import ExchangeResult
from recorder.replay.reports.verbose import reply_views
from recorder.replay.send import DEFAULT_TIMEOUT, recorded_base_url, send_raw
from recorder.replay.standin import StandIns
from recorder.replay.update import (
    blessed_exchanges,
    noise_refusal,
    why_not_updated,
    write_exchanges,
)
from recorder.replay.variables import (
    fill_placeholders,
    fill_reply_placeholders,
    request_placeholders,
    scrub_mismatch,
    secret_placeholders,
    secret_values,
    stand_ins,
    transcript_placeholders,
    unset_variable,
)
from recorder.replay.verdict.diff import Mismatch
from recorder.replay.verdict.live import frames_read
from recorder.replay.verdict.state import LiveReply, ReplayState
from recorder.replay.watch import AgentWatch
from recorder.rules.ruleset import DEFAULT_RULES, Rules
from recorder.secrets.redact import scrub_text

__all__ = ["AgentHandle", "FilePlayer", "finish_update"]


class AgentHandle(Protocol):
    """A started agent (such as the kit): where it listens, what it calls itself, its token.
    `play(start_agent=...)` calls what returns one when no agent is named (the entry points
    pass the bundled kit's)."""

    @property
    def url(self) -> str: ...

    @property
    def base_url(self) -> str: ...

    @property
    def token(self) -> str: ...

    def stop(self) -> None: ...


# --------------------------------------------------------------------------- one file


@dataclass
class FilePlayer:
    """Plays the exchanges of one transcript in order, with its own `ReplayState`.

    `play_until(index)` plays every exchange not yet played up to `index` (0-based) and returns
    the verdict on `index`; the pytest plugin calls it item by item, the CLI file by file.
    `base_url` is where requests go; `live_base` is the address the agent names itself by in
    its replies (the kit's card says `http://localhost:PORT` while it listens on 127.0.0.1),
    by default `base_url`.

    Exchanges run one after another, each reply read to its end before the next request, except
    where the transcript says a request arrived while an earlier exchange was open
    (`# @during exchange N frame K`, see `recorder.replay.during`): N is then read in the
    background, the tagged exchange is sent once N got as far as the tag says, with every
    background exchange still open, and N is compared when its reply has ended (at the next
    untagged exchange, or the end of the file).
    """

    path: str
    transcript: Transcript
    transport: httpx.BaseTransport
    base_url: str
    rules: Rules = DEFAULT_RULES
    variables: Mapping[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    update: bool = False
    live_base: str | None = None
    origins: Origins | None = None
    """Where recorded generated values come from, over the run's files (built on first use);
    None: this file's own (`recorder.replay.origins`)."""
    watch: AgentWatch | None = None
    """The run's view of the agent (`recorder.replay.watch`): with it, an agent lost after it
    answered is this exchange's error, not an exception; None: `UpstreamError` is raised."""
    verbose: int = 0
    """1: a mismatch's result holds the diff of both replies, normalized; 2: both whole; 3:
    the request as sent too (`recorder.replay.reports.verbose`)."""
    on_reply: Callable[[int, LiveReply], None] | None = None
    """Told each whole live reply (the exchange's 0-based index, the reply), before it is
    compared (`recorder learn` keeps them)."""
    pushes: PushReceiver | None = None  # the run's webhook receiver; None: the file's own
    grpc: GrpcTarget | None = None  # where its gRPC calls go
    keep_replies: bool = False  # each result holds both replies, normalized (the HTML report)
    stand_ins: StandIns | None = None
    """The run's stand-ins for the agent's downstreams (`recorder.replay.standin`): the
    file's recorded calls (`# @call`) wait there while their exchange is open, and are
    compared with the live ones when its reply was; None: the calls go where the agent sends
    them, not compared."""
    state: ReplayState = field(init=False)
    results: dict[int, ExchangeResult] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        # the placeholders that stand for secrets: the rules' ({{A2A_TOKEN}}), and any this
        # file's requests use where a secret goes (a secret header, a secret member's value,
        # a secret query parameter); their values are kept off the terminal and the disk
        self._secret_names = secret_placeholders(self.transcript, self.rules)
        self.state = ReplayState(
            self.rules,
            recorded_base=recorded_base_url(self.transcript),
            live_base=self.live_base or self.base_url,
            secret_placeholders=self._secret_names,
            file=self.path,
        )
        # secret placeholders whose variable is unset get stand-ins (not in credential headers)
        self._stand_ins = stand_ins(self.transcript, self.variables, self.rules)
        self._filled: Mapping[str, str] = (
            {**self._stand_ins, **self.variables} if self._stand_ins else self.variables
        )
        # (a stand-in too: --update writes an echoed one back as its placeholder). The secret
        # headers' always (an agent may echo the token); a secret field's (TOKEN, PASSWORD)
        # only when this file uses it: such a name may be set in the environment for another
        # purpose, and its value scrubbed from the --update of an unrelated reply
        scrubbed = {*self.rules.secret_headers.values()} | (
            self._secret_names & transcript_placeholders(self.transcript)
        )
        self._secrets = secret_values(self._filled, scrubbed)
        # the placeholders a recorded reply may hold for the values the requests sent
        self._reply_names = self._secret_names | {
            name
            for exchange in self.transcript.exchanges
            for name in request_placeholders(exchange.request)
        }
        self._to_bless: dict[int, LiveReply] = {}  # --update: the replies that mismatched
        self._changed_on_disk = False  # --update: the file was edited while it was played
        self._notes: dict[int, tuple[str, ...]] = {}
        # exchange -> the exchange that generated an unpaired recorded value it sent
        self._unpaired: dict[int, tuple[str | None, int]] = {}
        self._no_reply: int | None = None  # the first exchange that got no whole reply
        self._sent: dict[int, Request] = {}  # -vv: the requests as sent
        self._next = 0
        self._open: dict[int, BackgroundExchange] = {}
        # exchange -> (the exchange it is sent during, frames); the exchanges read meanwhile
        self._during, self._in_background = during_tags(self.transcript)
        self._pushes = FilePushes(self.transcript, self.pushes or PushReceiver())
        self._calls: FileCalls | None = None
        if self.stand_ins is not None and any(e.call for e in self.transcript.exchanges):
            state = self.state
            self._calls = FileCalls(
                self.path, self.transcript, self.stand_ins.rules, lambda: state.mapping
            )
            self.stand_ins.join(self._calls)
        self._calls_left: dict[int, str] = {}  # --update: an exchange whose calls differ in number

    def play_until(self, index: int) -> ExchangeResult:
        while index not in self.results:
            self._step()
        return self.results[index]

    def _step(self) -> None:
        exchanges = self.transcript.exchanges
        index = self._next
        if index >= len(exchanges):
            if not self._open:
                raise IndexError(f"{self.path} has {len(exchanges)} exchanges")
            self._finish_open()
            return
        tag = self._during.get(index)
        if tag is None:
            # it arrived when nothing of its file was open: what is open ends first
            self._finish_open()
        golden = exchanges[index]
        self._next += 1
        if self._no_reply is not None:
            # the rest of the file needs the ids of the reply that did not come
            self.results[index] = self._result(
                index,
                error=f"not played: exchange {self._no_reply + 1} got no reply",
                played=False,
            )
            return
        if self._pushes.is_forged(index):  # not the agent's call: neither sent nor awaited
            self._notes[index] = (FORGED_NOTE,)
            self.results[index] = self._result(index, played=False)
            return
        if golden.call is not None:
            # the agent's own call to a downstream (`# @call`): never sent by the player, and
            # no exchange of the client's (`plan` reports none)
            self._notes[index] = ("a call the agent made: not sent",)
            self.results[index] = self._result(index)
            return
        if self._pushes.is_delivery(index):  # the agent's call: awaited, compared, not sent
            if (live := self._pushes.delivered(index, self.timeout)) is not None:
                self._record(index, live, time.perf_counter())
            else:  # it did not come
                self.results[index] = self._result(index, mismatches=self._pushes.after(index))
            return
        unset = unset_variable(
            golden.request,
            self.variables,
            self.rules,
            path=self.path,
            line=golden.line,
            stand_ins=self._stand_ins,
        )
        if unset is not None:
            # not sent; the rest of the file plays (it may mismatch where it needed this reply)
            self.results[index] = self._result(index, error=str(unset), error_type="unset-variable")
            return
        if self.watch is not None and self.watch.down is not None:
            down = self.watch.probe()
            if down is not None:
                # known down, and one quick attempt failed: no timeout waited for
                self._failed(index, UpstreamError(down), time.perf_counter(), agent_down=True)
                return
        if tag is not None:
            self._catch_up(*tag)
        started = time.perf_counter()
        request = self.state.prepare(golden.request)
        self._notes[index] = self._unpaired_notes(index, golden.request)
        request = fill_placeholders(request, self._filled, path=self.path, line=golden.line)
        request = self._pushes.prepare(index, request)
        max_events = frames_read(golden)
        if self._calls is not None:
            self._calls.open(index)  # its calls wait at the stand-ins from now
        if index in self._in_background:

            def start(background: BackgroundExchange) -> LiveReply:
                return self._send(
                    request,
                    max_events=max_events,
                    on_frames=background.on_frames,
                    on_chunk=background.on_chunk,
                    on_sent=background.on_sent,
                )

            self._open[index] = BackgroundExchange(start, self.timeout)
            if self.verbose > 2:
                self._sent[index] = request
            return
        try:
            live = self._send(request, max_events=max_events)
        except NoReplyError as exc:
            self._failed(index, exc, started)
            return
        except UpstreamError as exc:
            self._lost(index, exc, started)
            return
        if self.verbose > 2:
            self._sent[index] = request
        self._record(index, live, started)

    def _send(self, request: Request, **options: Any) -> LiveReply:
        if request.is_grpc:  # (`recorder.replay.grpc_send`)
            return send_grpc(self.grpc, request, timeout=self.timeout, **options)
        return send_raw(self.transport, self.base_url, request, timeout=self.timeout, **options)

    def _lost(self, index: int, error: UpstreamError, started: float) -> None:
        """The agent could not be reached: an exception before it ever answered (a wrong
        address stops the run), this exchange's error once it had (it went away)."""
        if self.watch is None or not self.watch.reached:
            raise error
        self.watch.lost(str(error))
        self._failed(index, error, started)

    def _catch_up(self, during: int, frames: int) -> None:
        """Before an exchange tagged `@during exchange {during+1} frame {frames}`: wait until
        that exchange got as far, then learn the pairs of the frames every open stream has sent
        so far (the request may carry an id only they hold; their verdict comes at their end)."""
        background = self._open.get(during)
        if background is not None:
            background.wait_for_frames(frames)
        for stream in sorted(self._open):
            if self.transcript.exchanges[stream].response.events is None:
                continue
            start, arrived = self._open[stream].new_frames()
            if len(arrived) > start:
                self.state.learn_frames(self._expected(stream), arrived, start, number=stream + 1)

    def _finish_open(self) -> None:
        for stream in sorted(self._open):
            self._finish(stream)

    def _finish(self, index: int) -> None:
        background = self._open.pop(index)
        try:
            live = background.result()
        except NoReplyError as exc:
            self._failed(index, exc, background.started)
            return
        except UpstreamError as exc:
            self._lost(index, exc, background.started)
            return
        self._record(index, live, background.started)

    def judge(self, index: int, live: LiveReply) -> list[Mismatch]:
        """Exchange `index`'s mismatches for a reply got in another play (`recorder learn`'s
        held-out runs), as `_record` compares one: in order, so pairs are learned as then."""
        if self.transcript.exchanges[index].call is not None:  # as `FileCalls.settle` does
            golden = request_as_reply(self.transcript.exchanges[index].request)
            return self.state.compare(golden, live, number=None)
        return self.state.compare(self._expected(index), live, number=index + 1)

    @property
    def changed_on_disk(self) -> bool:
        """--update found the file edited since it was read, and left it as it was."""
        return self._changed_on_disk

    @property
    def no_reply(self) -> ExchangeResult | None:
        """The exchange that got no whole reply (the rest of the file is not played), if any."""
        return None if self._no_reply is None else self.results[self._no_reply]

    def _result(self, index: int, **verdict: Any) -> ExchangeResult:
        golden = self.transcript.exchanges[index]
        return ExchangeResult(
            number=index + 1,
            title=golden.title,
            line=golden.line,
            notes=self._notes.get(index, ()),
            **verdict,
        )

    def _expected(self, index: int) -> Exchange:
        """The recorded exchange, with the placeholders of its reply filled."""
        golden = as_reply(self.transcript.exchanges[index])  # a push delivery: its request
        expected = fill_reply_placeholders(golden.response, self._filled, self._reply_names)
        return golden if expected is golden.response else replace(golden, response=expected)

    def _record(self, index: int, live: LiveReply, started: float) -> None:
        live = self._pushes.live(live)
        if self.on_reply is not None:
            self.on_reply(index, live)
        golden = self._expected(index)
        mismatches = self._pushes.compare(self.state, golden, live, index)
        if self.watch is not None:
            self.watch.answered()
        verbose = self.verbose if mismatches else 0  # -v: the replies of a mismatch
        sent, keep = self._sent.get(index), self.keep_replies  # (-vvv; the HTML report)
        views = reply_views(self.state, golden, live, self._secrets, verbose, keep, sent)
        calls = self._settle_calls(index)
        if calls.mismatches:
            mismatches = (*mismatches, *calls.mismatches)
            if self.verbose:
                assert self._calls is not None
                views["details"] = (
                    *views.get("details", ()),
                    *call_details(
                        self.state, self._calls, calls, self._secrets, whole=self.verbose > 1
                    ),
                )
        if self._secrets and mismatches:
            # a report must not print a secret (nor write it into a JUnit file)
            mismatches = tuple(scrub_mismatch(m, self._secrets) for m in mismatches)
        if self.update and mismatches:
            # blessed once the whole file is played: a value a later exchange pairs (a task id
            # a GetTask names) is put back in this reply too
            self._to_bless[index] = live
        seconds = time.perf_counter() - started
        self.results[index] = self._result(
            index, mismatches=mismatches, seconds=seconds, calls=calls.count, **views
        )

    def _settle_calls(self, index: int) -> CallVerdict:
        """Exchange `index`'s reply was compared: its calls now (`recorder.replay.filecalls`);
        --update keeps the live requests of the calls that differ, to bless."""
        if self._calls is None:
            return CallVerdict()
        verdict = self._calls.settle(index, self.state)
        if self.on_reply is not None:  # (--update's two runs: a call that varies is noise)
            for call, live in (verdict.lives or {}).items():
                self.on_reply(call, live)
        if self.update and verdict.mismatches:
            if verdict.whole:
                self._to_bless.update(verdict.made or {})
            else:
                first = next(m for m in verdict.mismatches if not m.path)
                self._calls_left[index] = f"exchange {index + 1}: {first.describe()}"
        return verdict

    def _failed(
        self, index: int, error: UpstreamError, started: float, *, agent_down: bool = False
    ) -> None:
        self._no_reply = index if self._no_reply is None else min(self._no_reply, index)
        if self.watch is not None and isinstance(error, NoReplyError):
            self.watch.contacted()  # reached, if not whole: losing it later is a result
        if self._calls is not None:
            self._calls.settle(index, None)  # no reply: its calls are not judged
        # the message names the request's target: a secret query parameter is in it
        message = scrub_text(str(error), self._secrets)
        self.results[index] = self._result(
            index, error=message, seconds=time.perf_counter() - started, agent_down=agent_down
        )

    def _unpaired_notes(self, index: int, request: Request) -> tuple[str, ...]:
        """Notes on the recorded generated values this request carries as recorded, because no
        live reply of this file paired them (an earlier exchange mismatched, or another file
        generated them): the agent is asked about something it never made, and the
        mismatches follow from that (`recorder.replay.origins`)."""
        values = self.state.unpaired(request)
        if not values:
            return ()
        if self.origins is None:
            self.origins = Origins([(self.path, self.transcript)], self.rules)
        notes, origin = unpaired_notes(values, self.origins, self.path, index)
        if origin is not None:
            self._unpaired[index] = origin
        return notes

    def write_update(self, selected: Iterable[int]) -> bool:
        """Write the blessed replies of the `selected` exchanges back to the file (atomically,
        see `recorder.replay.update`).

        Returns whether the file changed; an unchanged transcript is not rewritten.
        """
        chosen = set(selected)
        if self.not_updated(chosen) is not None:
            return False
        chosen |= set(self.calls_of(chosen))  # the calls of the chosen exchanges
        live = {index: self._to_bless[index] for index in chosen & self._to_bless.keys()}
        replaced = blessed_exchanges(self.transcript, self.state, self.rules, live, self._secrets)
        if not replaced:
            return False
        if not write_exchanges(self.path, self.transcript, replaced):
            self._changed_on_disk = True
            return False
        return True

    def calls_of(self, exchanges: Iterable[int]) -> list[int]:
        """The block indices of the calls the `exchanges` (0-based) made, in file order."""
        chosen = set(exchanges)
        if self._calls is None:
            return []
        return [call.index for call in self._calls.calls if call.exchange in chosen]

    def not_updated(self, selected: Iterable[int]) -> str | None:
        """Why --update must leave the file as it is, or None (`recorder.replay.update`); a
        call not made or an extra call: the file is to be recorded again (a call's place in
        the file, and the reply an extra one would need, are the recording's to give)."""
        chosen = set(selected)
        left = [why for index, why in sorted(self._calls_left.items()) if index in chosen]
        if left:
            return f"{left[0]}: record it again"
        return why_not_updated(
            self.results, self._no_reply, self._to_bless.keys(), chosen, self._unpaired
        )


def finish_update(
    player: FilePlayer,
    selected: Iterable[int],
    first: Mapping[int, LiveReply],
    replay: Callable[[], Mapping[int, LiveReply]],
) -> tuple[bool, str | None]:
    """--update, once a file was played with `update` (its live replies kept in `first`):
    whether the file was rewritten, else why not. `replay` plays it once more (its replies),
    so that a mismatch that differs between the two live runs where the rules do not absorb
    it is refused as noise, not blessed (`recorder.replay.update`: what it writes)."""
    chosen = set(selected)
    not_updated = player.not_updated(chosen)
    if not_updated is None:
        mismatched = sorted(
            i for i in chosen if i in player.results and player.results[i].mismatches
        )
        mismatched += player.calls_of(mismatched)  # their calls are blessed too
        not_updated = noise_refusal(player.transcript, first, replay(), mismatched, player.rules)
    updated = not_updated is None and player.write_update(chosen)
    if not updated and player.changed_on_disk:
        not_updated = "the file changed while it was played (run the update again)"
    elif not updated and not_updated is None:
        not_updated = (
            "the rewritten replies would be the recorded ones: the differences are in what"
            " the file does not keep"
        )
    return updated, not_updated
