"""`recorder play`: replay transcripts against an agent and report mismatches."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator

import click

from recorder.errors import RecorderError
from recorder.replay.plan import TranscriptErrors, parse_shard
from recorder.replay.player import AgentHandle
from recorder.replay.player import play as play_transcripts
from recorder.replay.report import (
    TerminalReport,
    exit_status,
    plural,
    write_junit_error,
    write_junit_xml,
)
from recorder.replay.results import PlayResult
from recorder.replay.send import DEFAULT_TIMEOUT, agent_base_url
from recorder.replay.variables import MissingVariableError
from recorder.rules import load_rules


def _shard(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        return parse_shard(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _start_embedded_kit() -> AgentHandle:
    """The bundled kit agent on a free loopback port: what `recorder play` plays against
    without --agent (imported only then: the kit brings in the a2a-sdk)."""
    from recorder.kit import start_kit

    return start_kit(host="127.0.0.1", port=0)


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
    "Default: start the bundled kit agent on a free loopback port.",
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
    "--junit-xml",
    "junit_path",
    metavar="FILE",
    callback=_report_path,
    help="Also write a JUnit XML report.",
)
@click.option(
    "-k",
    "pattern",
    metavar="PATTERN",
    help='Play only exchanges whose "<file> <title>" contains PATTERN (case-insensitive). '
    "The exchanges before a match in the same file are played too (later requests need "
    "the ids of earlier replies) but not reported.",
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
def play(
    paths: tuple[str, ...],
    agent: str | None,
    rules_path: str | None,
    update: bool,
    junit_path: str | None,
    pattern: str | None,
    jobs: int,
    shard: tuple[int, int] | None,
    timeout: float,
) -> None:
    """Replay the .http transcripts in PATHS (files, or folders searched for *.http).

    Requests are sent in order, with generated values (task ids …) carried forward and
    {{NAME}} placeholders filled from the environment (an unset secret gets a made-up stand-in,
    except in a credential header such as Authorization: the exchanges that send one fail,
    naming the variable, and the others play); each reply is compared with the recorded one.
    Exit status: 0 all match, 1 mismatches, 2 usage, parse or connection errors, or an exchange
    without a reply or with an unset credential variable.
    """
    report = TerminalReport(sys.stdout, update=update)
    try:
        rules = load_rules(rules_path)
        with _quiet_embedded_kit(agent is None):
            result = play_transcripts(
                paths,
                agent=agent,
                rules=rules,
                update=update,
                pattern=pattern,
                jobs=jobs,
                shard=shard,
                timeout=timeout,
                listener=report,
                start_agent=_start_embedded_kit,
            )
    except TranscriptErrors as exc:
        for error in exc.errors:
            click.echo(str(error), err=True)
        _write_junit_error(junit_path, str(exc))
        raise SystemExit(2) from None
    except MissingVariableError as exc:
        click.echo(str(exc), err=True)
        _write_junit_error(junit_path, str(exc))
        raise SystemExit(2) from None
    except RecorderError as exc:
        click.echo(f"recorder: {exc}", err=True)
        _write_junit_error(junit_path, str(exc))
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        click.echo("\nrecorder: interrupted", err=True)
        _write_junit_error(junit_path, "interrupted")
        raise SystemExit(130) from None
    if not result.transcripts:
        if shard is not None and result.selected_files:
            # another shard has them: nothing wrong with this machine's share
            click.echo(
                f"recorder: shard {shard[0]}/{shard[1]} has nothing to play"
                f" ({plural(result.selected_files, 'file')} to play in all shards)",
                err=True,
            )
            _write_junit(junit_path, result)
            raise SystemExit(0)
        click.echo("recorder: no exchange to play (no transcript, or -k matched nothing)", err=True)
        _write_junit_error(junit_path, "no exchange to play (no transcript, or -k matched nothing)")
        raise SystemExit(2)
    report.summary(result)
    _write_junit(junit_path, result)
    sys.stdout.flush()
    raise SystemExit(exit_status(result))


def _write_junit(path: str | None, result: PlayResult) -> None:
    if path is None:
        return
    try:
        write_junit_xml(result, path)
    except OSError as exc:
        click.echo(f"recorder: cannot write {path}: {exc.strerror or exc}", err=True)
        raise SystemExit(2) from None


def _write_junit_error(path: str | None, message: str) -> None:
    """A run that stopped before any verdict still leaves a report saying why (not the last
    run's file, which would show passes)."""
    if path is None:
        return
    with contextlib.suppress(OSError):
        write_junit_error(message, path)
