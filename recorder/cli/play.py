"""`recorder play`: replay transcripts against an agent and report mismatches."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import click

from recorder.checks.model_rules import bind_model_checks, start_session
from recorder.checks.model_session import DEFAULT_CONCURRENCY, ModelSession
from recorder.checks.model_usage import ModelUsage, usage_json, usage_lines
from recorder.cli.options import AliasedOption
from recorder.errors import RecorderError
from recorder.extras import KIT_EXTRA, kit_sdk_problem
from recorder.replay.envfile import EnvFileError, merge_variables, parse_env_file, parse_var
from recorder.replay.keywords import Selection, SelectionError
from recorder.replay.plan import TranscriptErrors, parse_shard
from recorder.replay.player import AgentHandle
from recorder.replay.reports.html_report import write_html_error, write_html_report
from recorder.replay.reports.json_report import write_json_error, write_json_report
from recorder.replay.reports.results import PlayResult
from recorder.replay.reports.terminal import (
    TerminalReport,
    exit_status,
    plural,
    write_junit_error,
    write_junit_xml,
)
from recorder.replay.run import play as play_transcripts
from recorder.replay.send import DEFAULT_TIMEOUT, agent_base_url
from recorder.replay.trials import TrialPlan
from recorder.replay.variables import MissingVariableError
from recorder.replay.wait import wait_for_agent
from recorder.rules.ruleset import Rules, load_rules, rules_warnings


def _shard(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        return parse_shard(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _selection(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A -k expression checked before anything is played (a usage error naming it)."""
    if value is not None:
        try:
            Selection.parse(value)
        except SelectionError as exc:
            raise click.BadParameter(str(exc)) from None
    return value


def embedded_kit(command: str) -> Callable[..., AgentHandle]:
    """What `recorder <command>` starts without --agent: the bundled kit agent on a free
    loopback port (imported only then: the kit brings in the a2a-sdk's server). Starting it
    is said on stderr, once, naming the flag: transcripts of another agent played against the
    kit would fail for a reason the report alone does not show."""

    def start(*, grpc: bool = False) -> AgentHandle:
        # the kit as `recorder kit` runs it: its gRPC binding on another free port, listed in
        # its card (the goldens' cards list it), when grpcio is there; `grpc` (a file holds a
        # gRPC call) needs it
        # an a2a-sdk the kit is not built for (older than its extra's) is told before the
        # kit is imported: it would import, then fail deep inside with a TypeError
        problem = kit_sdk_problem()
        if problem is not None:
            raise RecorderError(f"no --agent given, and {problem}: give --agent URL")
        try:
            from recorder.kit import start_kit
            from recorder.kit.grpc_server import grpc_available
        except ImportError as exc:
            raise RecorderError(
                f"no --agent given, and the bundled kit cannot start ({exc}; it needs "
                f"{KIT_EXTRA}): give --agent URL"
            ) from None
        grpc_port = 0 if grpc or grpc_available() else None
        handle = start_kit(host="127.0.0.1", port=0, grpc_port=grpc_port)
        verb = "learning from" if command == "learn" else "playing against"
        click.echo(
            f"recorder {command}: no --agent given: {verb} the bundled kit at {handle.url}",
            err=True,
        )
        return handle

    return start


_start_embedded_kit = embedded_kit("play")  # the starter of `recorder play`


@contextlib.contextmanager
def _quiet_embedded_kit(quiet: bool) -> Iterator[None]:
    """The kit started for the replay logs the bad requests the transcripts send on purpose
    (missing A2A-Version, old method names): noise under the report, so errors only."""
    sdk_log = logging.getLogger("a2a")
    level = sdk_log.level
    if quiet:
        sdk_log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        sdk_log.setLevel(level)


def _agent(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return agent_base_url(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _grpc_agent(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from recorder.replay.grpc_send import grpc_address

    try:
        return grpc_address(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _downstreams(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> dict[str, tuple[str, int]]:
    """`--downstream NAME@[HOST:]PORT` (repeatable) -> NAME -> (HOST, PORT), each name once."""
    from recorder.replay.standin import parse_place

    places: dict[str, tuple[str, int]] = {}
    for text in value:
        try:
            name, host, port = parse_place(text)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
        if name in places:
            raise click.BadParameter(f"{name} is given twice")
        places[name] = (host, port)
    return places


DOWNSTREAM_OPTIONS = [
    click.option(
        "--downstream",
        "downstreams",
        metavar="NAME@[HOST:]PORT",
        multiple=True,
        callback=_downstreams,
        help="Where the stand-in for the agent's downstream NAME (its model, its tools: the "
        "NAME of the transcripts' '# @call NAME' blocks) listens; HOST 127.0.0.1 when left out, "
        "PORT 0 any free one (repeatable). Default: where the calls were recorded to.",
    ),
    click.option(
        "--live-downstreams",
        is_flag=True,
        help="Stand in for none of the agent's downstreams: its calls go where it sends them "
        "(its real model and tools), and only its replies are compared.",
    ),
]


def downstream_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--downstream NAME@[HOST:]PORT` and `--live-downstreams`."""
    for option in reversed(DOWNSTREAM_OPTIONS):
        command = option(command)
    return command


def _report_path(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A JUnit report path whose folder exists, and that is not a transcript: checked before
    playing, not after."""
    if value is None:
        return None
    if not os.path.isdir(os.path.dirname(value) or "."):
        raise click.BadParameter(f"the folder of {value} does not exist")
    if value.endswith(".http") or (os.path.exists(value) and _is_transcript(value)):
        raise click.BadParameter(f"{value} is a transcript: the report would overwrite it")
    return value


def _vars(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> dict[str, str]:
    variables: dict[str, str] = {}
    for text in value:
        try:
            name, var = parse_var(text)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
        variables[name] = var
    return variables


def variable_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--var NAME=VALUE` and `--env-file FILE` (play, learn): values for placeholders."""
    for option in reversed(_VARIABLE_OPTIONS):
        command = option(command)
    return command


_VARIABLE_OPTIONS = [
    click.option(
        "--var",
        "variables",
        metavar="NAME=VALUE",
        multiple=True,
        callback=_vars,
        help="A value for {{NAME}} placeholders (repeatable); over --env-file and the environment.",
    ),
    click.option(
        "--env-file",
        "env_files",
        metavar="FILE",
        multiple=True,
        type=click.Path(dir_okay=False),
        help="A dotenv file of NAME=VALUE lines for placeholders (repeatable, later files win); "
        "over the environment.",
    ),
]


def bind_models(
    rules: Rules, environ: Mapping[str, str], *, skip: bool, concurrency: int
) -> tuple[Rules, ModelSession | None]:
    """`rules` with their model checks bound to a session of this run (None: none asks a
    model); ModelEndpointError (a usage error) when one has no endpoint and not `skip`."""
    models = start_session(rules.checks, skip=skip, concurrency=concurrency, environ=environ)
    if models is None:
        return rules, None
    return dataclasses.replace(rules, checks=bind_model_checks(rules.checks, models)), models


def model_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--no-judge` and `--judge-jobs N` (play, learn): the checks that ask a model."""
    command = click.option(
        "--judge-jobs",
        type=click.IntRange(min=1, max=64),
        default=DEFAULT_CONCURRENCY,
        show_default=True,
        metavar="N",
        help="Requests to the model (a model judge, embedding similarity) in flight at once, "
        "at most, whatever --jobs is.",
    )(command)
    return click.option(
        "--no-judge",
        is_flag=True,
        help="Skip the checks that ask a model (judge: {model: ...}, similar: {method: "
        "embedding}): for a run without a model endpoint. The summary counts them skipped, "
        "never passed. Without it, a model check with no endpoint (OPENAI_BASE_URL, "
        "OPENAI_API_KEY) is a usage error before anything is sent.",
    )(command)


def _color(no_color: bool, color: str) -> bool | None:
    """True, False, or None (colour on a terminal): --no-color and --color never are False;
    in auto mode, so are a non-empty NO_COLOR (no-color.org) and TERM=dumb."""
    if no_color or color == "never":
        return False
    if color == "always":
        return True
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return None


def _is_transcript(path: str) -> bool:
    try:
        with open(path, "rb") as file:
            return file.read(64).startswith(b"# recorder-format:")
    except OSError:
        return False


@click.command(short_help="Replay transcripts against an agent and compare the replies.")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--agent",
    metavar="URL",
    callback=_agent,
    help="The agent to play against (its scheme, host and port replace the recorded ones). "
    "Without it the bundled kit agent is started on a free loopback port (said on stderr).",
)
@click.option(
    "--grpc-agent",
    metavar="HOST:PORT",
    callback=_grpc_agent,
    help="Where the gRPC calls go. Default: the GRPC interface the --agent's card lists (the "
    "started kit's without --agent).",
)
@click.option(
    "--rules", "rules_path", metavar="FILE", help="A YAML rules file merged over the A2A defaults."
)
@click.option(
    "--update",
    is_flag=True,
    help="Rewrite the golden transcripts from the live replies, keeping golden generated "
    "values wherever the alias mapping holds (an unchanged file is not touched). The "
    "differences are reported; the exit status is 0 once the files are written.",
)
@click.option(
    "--junit-report",
    "--junit-xml",
    "junit_path",
    cls=AliasedOption,
    aliases=("--junit-xml",),
    metavar="FILE",
    callback=_report_path,
    help="Also write a JUnit XML report.",
)
@click.option(
    "-k",
    "pattern",
    metavar="EXPRESSION",
    callback=_selection,
    help="Play only the exchanges EXPRESSION selects, as pytest's -k: phrases that \"<file> "
    '<title>" contains (case-insensitive), joined by and, or, not and parentheses (-k "review '
    'a diff and not stream"; a phrase with a keyword in quotes). The exchanges before a '
    "match in the same file are played too (later requests need the ids of earlier replies) "
    "but not reported.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Transcript files played in parallel (each file keeps its order).",
)
@click.option(
    "--shard",
    metavar="K/N",
    callback=_shard,
    help="Play only shard K of N (1-based): every N-th file of the sorted list, starting "
    "with the K-th, so N CI machines split a suite without overlap.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True, max=86400),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    help="Seconds allowed for each reply (a whole event stream included).",
)
@click.option(
    "--wait",
    type=click.FloatRange(min=0, max=3600),
    default=None,
    metavar="SECONDS",
    help="Wait up to SECONDS for the --agent to answer (its card is polled) before playing: "
    "for CI, where the agent starts beside the player. (The bundled kit needs no wait.)",
)
@click.option(
    "--json-report",
    "--report-json",
    "json_path",
    cls=AliasedOption,
    aliases=("--report-json",),
    metavar="FILE",
    callback=_report_path,
    help="Also write a JSON report: one record per exchange (file, exchange, title, verdict, "
    "mismatches, duration) and a summary.",
)
@click.option(
    "--html-report",
    "html_path",
    metavar="FILE",
    callback=_report_path,
    help="Also write an HTML report: one self-contained page (no network) with each "
    "exchange's verdict, its mismatches and checks, the recorded and the live reply side by "
    "side, trial pass rates; built from the --json-report data.",
)
@variable_options
@downstream_options
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour the report: auto is on a terminal, unless NO_COLOR is set or TERM=dumb.",
)
@click.option("--no-color", is_flag=True, help="Same as --color never.")
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="On a mismatch, show a unified diff of the recorded and the live reply, normalized "
    "(generated values as aliases); -vv both replies whole; -vvv also the request as sent.",
)
@click.option(
    "-q", "--quiet", is_flag=True, help="Print the failures, their recap and the summary only."
)
@click.option(
    "-x",
    "--exitfirst",
    is_flag=True,
    help="Stop after the first file with a failure or error (the rest are not played).",
)
@click.option(
    "--trials",
    type=click.IntRange(min=1, max=1000),
    default=None,
    metavar="N",
    help="Play each file N times (each trial afresh), for an agent whose answers vary: an "
    "exchange passes when it passed in at least ceil(R*N) trials (R: --pass-rate). Not with "
    "--update.",
)
@click.option(
    "--pass-rate",
    type=click.FloatRange(min=0, min_open=True, max=1),
    default=None,
    metavar="R",
    help="With --trials: the fraction of trials an exchange must pass, 0 < R <= 1 "
    "(default 1.0: every trial).",
)
@click.option(
    "--confidence",
    type=click.FloatRange(min=0, min_open=True, max=1, max_open=True),
    default=None,
    metavar="C",
    help="With --trials: judge --pass-rate by a bound: an exchange passes when the lower "
    "bound of its pass rate (Wilson's, one-sided, at confidence C, e.g. 0.95) is at least R. "
    "A trial count that can never prove R is a usage error.",
)
@click.option(
    "--early-stop",
    is_flag=True,
    help="With --trials: stop a file's trials once no exchange's verdict can change.",
)
@model_options
def play(
    paths: tuple[str, ...],
    agent: str | None,
    grpc_agent: str | None,
    rules_path: str | None,
    update: bool,
    junit_path: str | None,
    pattern: str | None,
    jobs: int,
    shard: tuple[int, int] | None,
    timeout: float,
    wait: float | None,
    json_path: str | None,
    html_path: str | None,
    variables: dict[str, str],
    env_files: tuple[str, ...],
    color: str,
    no_color: bool,
    verbose: int,
    quiet: bool,
    exitfirst: bool,
    trials: int | None,
    pass_rate: float | None,
    confidence: float | None,
    early_stop: bool,
    no_judge: bool,
    judge_jobs: int,
    downstreams: dict[str, tuple[str, int]],
    live_downstreams: bool,
) -> None:
    """Replay the .http transcripts in PATHS (files, or folders searched for *.http).

    Requests are sent in order, with generated values (task ids …) carried forward and
    {{NAME}} placeholders filled from --var, --env-file and the environment, in that order of
    precedence (an unset secret gets a made-up stand-in,
    except in a credential header such as Authorization: the exchanges that send one fail,
    naming the variable, and the others play); each reply is compared with the recorded one.
    An agent that goes away mid-run fails the exchange that lost its reply; the rest of its
    file is not played, each later file fails fast, and the summary and reports are complete.
    The calls the agent makes to its own downstreams (its model, its MCP tools: '# @call'
    blocks) are answered by stand-ins from the transcripts and compared like replies: with
    every downstream stood in for, an LLM-backed agent replays without its model.
    Exit status: 0 all match, 1 mismatches, 2 usage, parse or connection errors, or an exchange
    without a reply or with an unset credential variable.
    """
    for given, name in ((pass_rate, "--pass-rate"), (confidence, "--confidence")):
        if given is not None and trials is None:
            raise click.UsageError(f"{name} needs --trials N")
    if early_stop and trials is None:
        raise click.UsageError("--early-stop needs --trials N")
    plan = None
    if trials is not None:
        rate = 1.0 if pass_rate is None else pass_rate
        plan = TrialPlan(trials, rate, confidence, early_stop)
        if (problem := plan.problem()) is not None:
            raise click.UsageError(problem)
    if trials is not None and update:
        raise click.UsageError("--trials and --update do not go together: update from one run")
    if downstreams and live_downstreams:
        raise click.UsageError("--downstream and --live-downstreams do not go together")
    report = TerminalReport(sys.stdout, color=_color(no_color, color), update=update, quiet=quiet)
    reports = (junit_path, json_path, html_path)
    models: ModelSession | None = None
    try:
        environ = merge_variables(os.environ, _read_env_files(env_files), variables)
        rules = load_rules(rules_path)
        if rules_path is not None:
            # rules that can never apply (a kind typo, a place only the client fills)
            for warning in rules_warnings(rules_path):
                click.echo(f"recorder play: warning: {warning}", err=True)
        # a model check without an endpoint: a usage error now, before anything is sent
        rules, models = bind_models(rules, environ, skip=no_judge, concurrency=judge_jobs)
        if agent is not None and wait is not None:
            wait_for_agent(agent, wait)
        with _quiet_embedded_kit(agent is None), _stand_in_warnings():
            result = play_transcripts(
                paths,
                agent=agent,
                grpc_agent=grpc_agent,
                rules=rules,
                update=update,
                pattern=pattern,
                jobs=jobs,
                shard=shard,
                timeout=timeout,
                listener=report,
                start_agent=_start_embedded_kit,
                environ=environ,
                verbose=verbose,
                exitfirst=exitfirst,
                trials=plan,
                replies=html_path is not None,
                downstreams=downstreams,
                live_downstreams=live_downstreams,
                announce=lambda line: click.echo(f"{PREFIX}{line}", err=True),
            )
    except TranscriptErrors as exc:
        for error in exc.errors:
            click.echo(f"{PREFIX}{error}", err=True)
        _write_error_reports(reports, str(exc))
        raise SystemExit(2) from None
    except (MissingVariableError, RecorderError) as exc:
        click.echo(f"{PREFIX}{exc}", err=True)
        _write_error_reports(reports, str(exc))
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        click.echo(f"\n{PREFIX}interrupted", err=True)
        _write_error_reports(reports, "interrupted")
        raise SystemExit(130) from None
    finally:
        if models is not None:
            models.close()
    usage = models.usage() if models is not None else None
    if not result.transcripts:
        if shard is not None and result.selected_files:
            # another shard has them: nothing wrong with this machine's share
            click.echo(
                f"{PREFIX}shard {shard[0]}/{shard[1]} has nothing to play"
                f" ({plural(result.selected_files, 'file')} to play in all shards)",
                err=True,
            )
            _write_reports(reports, result, report, usage)
            raise SystemExit(0)
        nothing = "no exchange to play (no transcript, or -k matched nothing)"
        click.echo(f"{PREFIX}{nothing}", err=True)
        _write_error_reports(reports, nothing)
        raise SystemExit(2)
    report.summary(result, usage_lines(usage) if usage is not None else ())
    _write_reports(reports, result, report, usage)
    sys.stdout.flush()
    raise SystemExit(exit_status(result))


PREFIX = "recorder play: "


@contextlib.contextmanager
def _stand_in_warnings() -> Iterator[None]:
    """The stand-ins' warnings (a call no recorded call waits for) on stderr as they come."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(f"{PREFIX}%(message)s"))
    log = logging.getLogger("recorder.play")
    log.addHandler(handler)
    try:
        yield
    finally:
        log.removeHandler(handler)


def _read_env_files(paths: tuple[str, ...]) -> list[dict[str, str]]:
    files = []
    for path in paths:
        try:
            with open(path, encoding="utf-8-sig") as file:
                text = file.read()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise EnvFileError(f"cannot read the env file {path}: {reason}") from None
        files.append(parse_env_file(text, path))
    return files


def _write_reports(
    paths: tuple[str | None, str | None, str | None],
    result: PlayResult,
    report: TerminalReport,
    usage: ModelUsage | None = None,
) -> None:
    extra = {"model": usage_json(usage)} if usage is not None else None
    for kind, path in zip(("junit", "json", "html"), paths, strict=True):
        if path is None:
            continue
        try:
            if kind == "junit":
                write_junit_xml(result, path)
            elif kind == "json":
                write_json_report(result, path, report.items, extra)
            else:
                write_html_report(result, path, report.items, extra)
        except OSError as exc:
            click.echo(f"{PREFIX}cannot write {path}: {exc.strerror or exc}", err=True)
            raise SystemExit(2) from None


def _write_error_reports(paths: tuple[str | None, str | None, str | None], message: str) -> None:
    """A run that stopped before any verdict still leaves reports saying why (not the last
    run's files, which would show passes)."""
    junit_path, json_path, html_path = paths
    with contextlib.suppress(OSError):
        if junit_path is not None:
            write_junit_error(message, junit_path)
        if json_path is not None:
            write_json_error(message, json_path)
        if html_path is not None:
            write_html_error(message, html_path)
