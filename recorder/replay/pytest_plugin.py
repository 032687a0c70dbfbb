"""pytest plugin: replay `.http` transcripts as tests, one test item per exchange.

    pytest transcripts/                                   # plays against a freshly started kit
    pytest transcripts/ --recorder-agent http://127.0.0.1:41242
    pytest transcripts/ -k GetTask                        # like `recorder play -k`
    pytest transcripts/ -v                                # a mismatch with the replies' diff
    pytest transcripts/ --recorder-update                 # like `recorder play --update`
    pytest transcripts/ --recorder-var A2A_TOKEN=… --recorder-env-file .env
    pytest transcripts/ --recorder-html-report report.html  # as recorder play --html-report

Which `.http` files are collected (the plugin is installed with recorder and must stay out of
the way of projects that do not use it):

- every `*.http` file under a folder listed in the ini option `recorder_transcripts`;
- every `*.http` file named on the command line;
- when `recorder_transcripts` is not set: every `*.http` file under a folder named on the
  command line that starts with recorder's format marker (`# recorder-format: 1`), so other
  tools' `.http` files are left alone. Folders reached only through `testpaths` are never
  searched.

Nothing else is collected, and nothing is started until the first exchange runs. Without
`--recorder-agent`, the bundled kit agent is started on a free loopback port for the session
(said on stderr; its token fills `{{A2A_TOKEN}}` unless the environment sets it);
`--recorder-wait SECONDS` waits for the named agent to answer first. The ini options
`recorder_agent`, `recorder_rules` (relative to the ini file's folder) and `recorder_timeout`
set the same as the command-line options, which win when given.

`--recorder-trials N` (ini `recorder_trials`) plays each file N times, afresh each time, when
its first item runs; an item passes when its exchange passed in at least ceil(R*N) trials, R
from `--recorder-pass-rate R` (ini `recorder_pass_rate`; 0 < R <= 1, default 1.0), or with
`--recorder-confidence C` (ini `recorder_confidence`) when Wilson's lower bound of its pass
rate at C is at least R; `--recorder-early-stop` (ini `recorder_early_stop = true`) stops once
no verdict can change; as `recorder play --trials N --pass-rate R --confidence C --early-stop`
does (`recorder.replay.trials`).

The agent's own calls (`# @call NAME` blocks: its model, its tools) are answered by the
session's stand-ins and compared like replies, as `recorder play` does: listening where the
calls were recorded to, or where `--recorder-downstream NAME@[HOST:]PORT` says (repeatable;
ini `recorder_downstreams`, a line each); `--recorder-live-downstreams` stands in for none.
A call's mismatch fails the item of the exchange that made it.

The items of one file share one `ReplayState` and must run in file order: a later request
carries forward ids from earlier replies. Selecting some items (`-k`) or running one item
alone still works: the earlier exchanges of its file are played first as setup (not reported).
With pytest-xdist use `--dist loadfile` (or `loadscope`): each file then runs on one worker in
order. Other modes stay correct but replay setup exchanges more than once.

A mismatch is reported as `recorder play` reports it (file, exchange, frame, JSON path,
expected and actual); with pytest's own `-v` it adds the diff of the two replies, normalized,
with `-vv` both whole, with `-vvv` the request as sent (`recorder play -v`'s levels).
`--recorder-var NAME=VALUE` (repeatable) and `--recorder-env-file FILE` (repeatable, later
files win) fill `{{NAME}}` placeholders over the environment, as `recorder play`'s `--var` and
`--env-file` do.

`--recorder-update` rewrites the golden files from the live replies, as `recorder play
--update` does: a mismatched exchange does not fail its item; once the last item of its file
ran, the file is rewritten (only the exchanges whose items ran) and the terminal summary
lists it with its differences. A file --update must leave as it is (the agent gave no reply,
the replies differ between two live runs, a request carried an unpaired recorded id) is an
error at the teardown of its last item, naming why, so the session fails.

An agent that goes away mid-session (once it has answered) fails the
exchange that lost its reply; the rest of that file is skipped, and each later file fails its
first exchange after one quick connection attempt, not a timeout per exchange.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from recorder.replay.plugin_settings import (
    add_options,
    agent_setting,
    downstreams_setting,
    grpc_agent_setting,
    rules_setting,
    timeout_setting,
    trials_setting,
    variables_setting,
)

if TYPE_CHECKING:
    import httpx

    from recorder.replay.grpc_send import GrpcTarget
    from recorder.replay.player import FilePlayer
    from recorder.replay.reports.results import ExchangeResult, TranscriptResult
    from recorder.replay.standin import StandIns
    from recorder.replay.trials import TrialPlayer
    from recorder.replay.verdict.live import LiveReply
    from recorder.replay.watch import AgentWatch
    from recorder.rules.ruleset import Rules

MARKER = b"# recorder-format:"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix != ".http" or not _wanted(file_path, parent.config):
        return None
    from recorder.disk.transcripts import is_export

    if is_export(file_path):
        return None  # a `recorder export` among the transcripts: not a transcript
    collector: TranscriptFile = TranscriptFile.from_parent(parent, path=file_path)
    return collector


def _wanted(file_path: Path, config: pytest.Config) -> bool:
    path = file_path.resolve()
    folders: list[Path] = config.getini("recorder_transcripts")
    if any(path.is_relative_to(folder.resolve()) for folder in folders):
        return True
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return False
    invoked_in = config.invocation_params.dir
    for arg in config.args:
        named = (invoked_in / arg.split("::", 1)[0]).resolve()
        if path == named:
            return True
        # with the ini option set, only its folders are searched (test fixtures stay out)
        if not folders and named.is_dir() and path.is_relative_to(named):
            return _has_marker(path)
    return False


def _has_marker(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(MARKER) + 3).lstrip(b"\xef\xbb\xbf").startswith(MARKER)
    except OSError:
        return False


class _Agent:
    """The session's agent: the one named by --recorder-agent, or a kit started on first use."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._handle: Any = None
        self._transport: httpx.HTTPTransport | None = None
        self._pushes: Any = None  # the session's push webhook receiver (started on use)
        self._rules: Rules | None = None
        self.models: Any = None  # the model checks' session (None: no check asks a model)
        self.base_url = ""
        self.live_base: str | None = None
        self.variables: dict[str, str] = {}
        self.watch: AgentWatch | None = None
        self._failed: Exception | None = None
        self.grpc: GrpcTarget | None = None
        self._stand_ins: StandIns | None = None  # the session's, started on first use

    def ensure(self) -> None:
        if self._transport is not None:
            return
        if self._failed is not None:
            raise self._failed  # once per session: not a wait, or a kit start, per item
        from recorder.errors import RecorderError

        try:
            self._start()
        except RecorderError as exc:
            self._failed = exc
            raise

    def _start(self) -> None:
        from recorder.replay.send import agent_base_url, make_transport
        from recorder.replay.watch import AgentWatch
        from recorder.rules.ruleset import load_rules

        self._rules = load_rules(rules_setting(self.config))
        self.variables = variables_setting(self.config)
        self._rules, self.models = _bind_models(self.config, self._rules, self.variables)
        agent = agent_setting(self.config)
        if agent:
            self.base_url = agent_base_url(agent)
            wait: float | None = self.config.getoption("recorder_wait", None)
            if wait is not None:
                from recorder.replay.wait import wait_for_agent

                wait_for_agent(self.base_url, wait)
        else:
            self._handle = _start_kit(self.config)
            self.base_url = agent_base_url(self._handle.url)
            self.live_base = agent_base_url(self._handle.base_url)
            self.variables.setdefault("A2A_TOKEN", self._handle.token)
        self._transport = make_transport(self.base_url)
        from recorder.replay.pushrecv import PushReceiver

        self._pushes = PushReceiver()
        from recorder.replay.grpc_send import grpc_target

        self.grpc = grpc_target(
            grpc_agent_setting(self.config), self.base_url, self._handle, self.timeout
        )
        # the agent going away mid-session: the exchange that lost its reply fails, the rest
        # of its file is skipped, each later file fails fast (`recorder.replay.watch`)
        self.watch = AgentWatch(self.base_url, probe_seconds=min(1.0, self.timeout))
        overrides = downstreams_setting(self.config)
        if overrides is not None:
            from recorder.replay.standin import StandIns
            from recorder.rules.pairing import PairingRules

            self._stand_ins = StandIns(PairingRules(self._rules), overrides)

    def stand_ins(self, transcripts: list[Any]) -> StandIns | None:
        """The session's stand-ins, listening for the calls of `transcripts` (a file and
        the files it needs) from now; None when nothing stands in."""
        self.ensure()
        if self._stand_ins is not None and any(t.calls for t in transcripts):
            self._stand_ins.stand_in_for(transcripts)
        return self._stand_ins

    @property
    def timeout(self) -> float:
        return timeout_setting(self.config)

    def file_player(
        self,
        path: str,
        transcript: Any,
        *,
        update: bool = False,
        on_reply: Callable[[int, LiveReply], None] | None = None,
    ) -> FilePlayer:
        from recorder.replay.player import FilePlayer

        self.ensure()
        assert self._transport is not None and self._rules is not None
        return FilePlayer(
            path,
            transcript,
            self._transport,
            self.base_url,
            rules=self._rules,
            variables=self.variables,
            timeout=self.timeout,
            update=update,
            live_base=self.live_base,
            watch=self.watch,
            # pytest's own -v: the diff of the replies; -vv both whole; -vvv the request too
            verbose=max(0, int(self.config.getoption("verbose", 0) or 0)),
            on_reply=on_reply,
            pushes=self._pushes,
            grpc=self.grpc,
            keep_replies=bool(self.config.getoption("recorder_html_report", None)),
            stand_ins=self.stand_ins([transcript]),
        )

    def close(self) -> None:
        if self._stand_ins is not None:
            self._stand_ins.close()
            self._stand_ins = None
        if self.models is not None:
            self.models.close()
        if self._pushes is not None:
            self._pushes.close()
            self._pushes = None
        if self._transport is not None:
            self._transport.close()
            self._transport = None
        if self.grpc is not None:
            self.grpc.channels.close()
        if self._handle is not None:
            self._handle.stop()
            self._handle = None


def _bind_models(config: pytest.Config, rules: Rules, environ: dict[str, str]) -> tuple[Rules, Any]:
    """The rules with their model checks bound to the session's own (None: none asks a
    model); a model check without an endpoint raises ModelEndpointError."""
    import dataclasses

    from recorder.checks.model_rules import bind_model_checks, start_session

    skip = bool(config.getoption("recorder_no_judge", False))
    models = start_session(rules.checks, skip=skip, environ=environ)
    if models is None:
        return rules, None
    return dataclasses.replace(rules, checks=bind_model_checks(rules.checks, models)), models


def _start_kit(config: pytest.Config) -> Any:
    """The bundled kit, for a session without --recorder-agent: said once on stderr (past
    pytest's capture), naming the option, since transcripts of another agent would fail
    against it for a reason the failures alone do not show."""
    from recorder.errors import RecorderError
    from recorder.extras import KIT_EXTRA

    problem = _kit_problem()
    if problem is not None:
        raise RecorderError(problem)
    try:
        from recorder.kit import start_kit
    except ImportError as exc:
        raise RecorderError(
            f"no --recorder-agent given, and the bundled kit cannot start ({exc}; it needs "
            f"{KIT_EXTRA}): give --recorder-agent URL"
        ) from None
    from recorder.kit.grpc_server import grpc_available

    # its gRPC binding, listed in its card (as `play`'s and `recorder kit`'s)
    grpc_port = 0 if grpc_available() else None
    handle = start_kit(host="127.0.0.1", port=0, grpc_port=grpc_port)
    message = (
        f"recorder: no --recorder-agent given: playing against the bundled kit at {handle.url}\n"
    )
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is None:
        sys.stderr.write(message)
    else:
        with capture.global_and_fixture_disabled():
            sys.stderr.write(message)
    return handle


_AGENT = pytest.StashKey[_Agent]()
_UPDATED = pytest.StashKey[list["TranscriptResult"]]()


def pytest_configure(config: pytest.Config) -> None:
    _check_options(config)
    config.stash[_AGENT] = _Agent(config)
    config.stash[_UPDATED] = []
    html: str | None = config.getoption("recorder_html_report", None)
    if html:
        from recorder.replay.reports.html_pytest import HtmlReportCollector

        config.pluginmanager.register(HtmlReportCollector(html), "recorder-html-report")


def _kit_problem() -> str | None:
    """Why the bundled kit cannot start beside the installed a2a-sdk (`recorder.extras`)."""
    from recorder.extras import kit_sdk_problem

    problem = kit_sdk_problem()
    return problem and f"no --recorder-agent given, and {problem}: give --recorder-agent URL"


def _check_the_kits_sdk(config: pytest.Config, transcripts: bool) -> None:
    """Transcripts to play without --recorder-agent, beside an a2a-sdk the bundled kit is not
    built for: one usage error before any test runs, not a failure per item. A session
    without transcripts never asks (the plugin is loaded in every pytest run of the venv)."""
    if transcripts and not config.option.collectonly and not agent_setting(config):
        problem = _kit_problem()
        if problem is not None:
            raise pytest.UsageError(problem)


def pytest_collection_finish(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):  # (a pytest-xdist worker: its controller)
        items = session.items
        _check_the_kits_sdk(session.config, any(isinstance(i, ExchangeItem) for i in items))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    # pytest-xdist's controller, told what a worker collected (a transcript's: FILE.http::…)
    _check_the_kits_sdk(node.config, any(".http::" in nodeid for nodeid in ids))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """What the model checks did and cost; --recorder-update: the files rewritten, with their
    differences."""
    agent = config.stash.get(_AGENT, None)
    if agent is not None and agent.models is not None:
        from recorder.checks.model_usage import usage_lines

        lines = usage_lines(agent.models.usage())
        if lines:
            terminalreporter.write_sep("-", "recorder model checks")
            for line in lines:
                terminalreporter.write_line(line)
    updated = config.stash.get(_UPDATED, [])
    if not updated:
        return
    from recorder.replay.reports.terminal import plural, transcript_lines

    terminalreporter.write_sep("-", "recorder --recorder-update")
    width = max(len(result.path) for result in updated)
    for result in updated:
        for line in transcript_lines(result, width=width, update=True):
            terminalreporter.write_line(line)
    terminalreporter.write_line(f"{plural(len(updated), 'transcript')} updated")


def _check_options(config: pytest.Config) -> None:
    """A bad --recorder-agent or --recorder-rules is one usage error, before any test runs
    (not one traceback per item). Nothing is imported unless the options are given."""
    agent = agent_setting(config)
    if agent:
        from recorder.replay.send import agent_base_url

        try:
            agent_base_url(agent)
        except ValueError as exc:
            raise pytest.UsageError(f"--recorder-agent: {exc}") from None
    grpc_agent_setting(config)
    trials_setting(config)
    downstreams_setting(config)
    wait: float | None = config.getoption("recorder_wait", None)
    if wait is not None and not 0 <= wait <= 3600:
        raise pytest.UsageError(f"--recorder-wait: expected 0 to 3600 seconds, got {wait:g}")
    timeout = timeout_setting(config)
    if not 0 < timeout <= 86400:
        raise pytest.UsageError(
            f"--recorder-timeout: expected seconds above 0 and at most 86400, got {timeout:g}"
        )
    if config.getoption("recorder_var", None) or config.getoption("recorder_env_file", None):
        variables_setting(config)
    rules = rules_setting(config)
    if rules:
        from recorder.checks.judges import import_judges
        from recorder.errors import RecorderError
        from recorder.rules.ruleset import load_rules

        try:
            loaded = load_rules(rules)
            # a judge of the checks that cannot be imported, a model check without an
            # endpoint: now, before any test runs
            import_judges(check for entry in loaded.checks for check in entry.checks)
            _, models = _bind_models(config, loaded, variables_setting(config))
            if models is not None:
                models.close()
        except RecorderError as exc:
            raise pytest.UsageError(f"--recorder-rules: {exc}") from None


def pytest_unconfigure(config: pytest.Config) -> None:
    agent = config.stash.get(_AGENT, None)
    if agent is not None:
        agent.close()


class ExchangeMismatch(Exception):
    """An exchange's live reply differs from the golden one."""

    def __init__(self, path: str, result: ExchangeResult) -> None:
        super().__init__(f"{path}: exchange {result.number} does not match")
        self.path = path
        self.result = result


class TranscriptFile(pytest.File):
    """One `.http` transcript: its exchanges are the test items."""

    _player: FilePlayer | TrialPlayer | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ran: set[int] = set()  # the exchanges whose items ran in this session
        self.update = bool(self.config.getoption("recorder_update", False))
        self.lives: dict[int, LiveReply] = {}  # --recorder-update: the live replies

    @property
    def display_path(self) -> str:
        return os.path.relpath(self.path, self.config.invocation_params.dir)

    def collect(self) -> Iterator[pytest.Item]:
        from recorder.disk.transcripts import load
        from recorder.errors import ParseError

        try:
            self.transcript = load(self.path)
        except ParseError as exc:
            raise self.CollectError(str(exc)) from None
        if not self.transcript.exchanges:
            raise self.CollectError(f"{self.display_path}: no exchanges")
        self.needs: tuple[tuple[str, Any], ...] = ()
        if self.transcript.after:
            # the files it needs (`# @after`): a missing one or a cycle fails the collection
            from recorder.replay.needs import needs_of
            from recorder.replay.plan import TranscriptErrors

            try:
                self.needs = needs_of([(str(self.path), self.transcript)])[str(self.path)]
            except TranscriptErrors as exc:
                raise self.CollectError(str(exc)) from None
        for index, exchange in enumerate(self.transcript.exchanges):
            if exchange.call is not None:
                continue  # a call the agent made (`# @call`): no exchange of the client's
            title = exchange.title.replace("::", ":")
            name = f"{index + 1:02d} {title}".rstrip()
            yield ExchangeItem.from_parent(self, name=name, index=index)

    def player(self) -> FilePlayer | TrialPlayer:
        if self._player is None:
            agent = self.config.stash[_AGENT]
            trials = trials_setting(self.config)
            if trials is None:
                player = agent.file_player(
                    self.display_path,
                    self.transcript,
                    update=self.update,
                    on_reply=self.lives.__setitem__ if self.update else None,
                )
                if self.needs:
                    # the files it needs (`# @after`) played first, not items of this file
                    from recorder.replay.needs import play_needs

                    play_needs(
                        self.needs,
                        lambda need: agent.file_player(need.path, need.transcript),
                        lambda: False,
                        into=player.state,
                    )
                self._player = player
            else:
                from recorder.replay.trials import TrialPlayer

                self._player = TrialPlayer(
                    lambda: agent.file_player(self.display_path, self.transcript),
                    len(self.transcript.exchanges),
                    trials,
                )
        return self._player

    def teardown(self) -> None:
        """--recorder-update, once the file's last item ran: rewrite it (the exchanges whose
        items ran), or fail naming why it must stay as it is."""
        player = self._player
        if not self.update or player is None or not self.ran:
            return
        from recorder.replay.player import FilePlayer, finish_update

        assert isinstance(player, FilePlayer)  # (--recorder-trials is refused with update)
        ran = sorted(self.ran)
        results = tuple(player.results[i] for i in ran if i in player.results)
        if all(r.passed for r in results):
            return
        from recorder.replay.reports.results import TranscriptResult
        from recorder.replay.reports.terminal import transcript_lines

        agent = self.config.stash[_AGENT]

        def replay() -> dict[int, LiveReply]:
            second: dict[int, LiveReply] = {}
            again = agent.file_player(
                self.display_path, self.transcript, on_reply=second.__setitem__
            )
            for index in range(ran[-1] + 1):
                again.play_until(index)
            return second

        updated, why = finish_update(player, ran, self.lives, replay)
        result = TranscriptResult(self.display_path, results, updated=updated, not_updated=why)
        if updated:
            self.config.stash[_UPDATED].append(result)
            return
        pytest.fail("\n".join(transcript_lines(result, update=True)), pytrace=False)


class ExchangeItem(pytest.Item):
    """One exchange of a transcript, played after every earlier exchange of its file."""

    def __init__(self, *, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.index = index

    @property
    def transcript_file(self) -> TranscriptFile:
        parent = self.parent
        assert isinstance(parent, TranscriptFile)
        return parent

    def runtest(self) -> None:
        file = self.transcript_file
        file.ran.add(self.index)
        player = file.player()
        result = player.play_until(self.index)
        if self.config.getoption("recorder_html_report", None):
            from recorder.replay.reports.html_pytest import RECORD, exchange_record

            self.user_properties.append((RECORD, exchange_record(file.display_path, result)))
        if not result.played:
            # an earlier exchange of the file got no reply: this one would need its ids. When
            # that exchange was a test of its own, it failed already; when it was not selected
            # (-k), its error is this item's failure, not a silent skip
            cause = player.no_reply
            if cause is not None and cause.number - 1 not in file.ran:
                file.ran.add(cause.number - 1)  # reported once, here; the next items skip
                raise ExchangeMismatch(file.display_path, cause)
            pytest.skip(result.error or "not played")
        if file.update and result.error is None:
            return  # blessed once the file's last item ran (`TranscriptFile.teardown`)
        if not result.passed:
            raise ExchangeMismatch(file.display_path, result)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str:
        from recorder.errors import RecorderError

        error = excinfo.value
        if isinstance(error, ExchangeMismatch):
            from recorder.replay.reports.results import TranscriptResult
            from recorder.replay.reports.terminal import transcript_lines

            lines = transcript_lines(TranscriptResult(error.path, (error.result,)))
            return "\n".join(lines)
        if isinstance(error, RecorderError):
            return f"recorder: {error}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        file = self.transcript_file
        exchange = file.transcript.exchanges[self.index]
        line = exchange.line - 1 if exchange.line is not None else None
        title = f" ({exchange.title})" if exchange.title else ""
        return self.path, line, f"{file.display_path}: exchange {self.index + 1}{title}"
