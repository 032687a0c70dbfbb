"""`recorder learn`: learn an agent's noise from live runs, and write the rules that absorb it."""

from __future__ import annotations

import os

import click

from recorder.checks.model_proposals import learn_with_models
from recorder.checks.model_session import DEFAULT_CONCURRENCY, ModelSession
from recorder.cli import fail, plural
from recorder.cli.play import (
    _agent,
    _quiet_embedded_kit,
    _read_env_files,
    bind_models,
    embedded_kit,
    variable_options,
)
from recorder.errors import RecorderError
from recorder.replay.envfile import merge_variables
from recorder.replay.plan import TranscriptErrors
from recorder.replay.send import DEFAULT_TIMEOUT
from recorder.replay.variables import MissingVariableError
from recorder.replay.wait import wait_for_agent
from recorder.rules.ruleset import load_rules, rules_warnings

_NAME = "learn"


def _percent(rate: float) -> str:
    return f"{rate * 100:.1f}%"


def _output(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A rules file path whose folder exists, and that is not a transcript: checked before the
    runs, not after."""
    if value is None:
        return None
    if not os.path.isdir(os.path.dirname(value) or "."):
        raise click.BadParameter(f"the folder of {value} does not exist")
    if value.endswith(".http"):
        raise click.BadParameter(f"{value} is a transcript: the rules would overwrite it")
    return value


@click.command(short_help="Learn an agent's noise from live runs; write the rules for it.")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--agent",
    metavar="URL",
    callback=_agent,
    help="The agent to learn from. Without it the bundled kit agent is started on a free "
    "loopback port (said on stderr).",
)
@click.option(
    "--wait",
    type=click.FloatRange(min=0, max=3600),
    default=None,
    metavar="SECONDS",
    help="Wait up to SECONDS for the agent to answer (its card is polled) before the runs.",
)
@click.option(
    "--runs",
    type=click.IntRange(min=2, max=100),
    default=4,
    show_default=True,
    # 4: a varying answer's facts are what held in every run; a wording that recurs by
    # chance in four runs is unlikely, and "all runs but one" still leaves three
    help="Live runs of every transcript to start with (4 or more tell the facts of an "
    "answer worded anew each run from its wording); more are played while the proposal "
    "is not stable, up to --max-runs.",
)
@click.option(
    "--max-runs",
    type=click.IntRange(min=2, max=200),
    default=None,
    metavar="N",
    help="Live runs at most: while a run left out changes the proposal, or a held-out run "
    "fails it, one more run is played [default: 12, or --runs if more; --max-runs equal to "
    "--runs: exactly that many].",
)
@click.option(
    "--rules",
    "rules_path",
    metavar="FILE",
    help="A YAML rules file to learn over; the learned rules are merged into it (every line "
    "of it kept) unless -o is given.",
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    callback=_output,
    help="Write the rules (with --rules: FILE merged with the learned ones) to FILE. Without "
    "-o and --rules they are printed on stdout (with either, a line per rule only with -v).",
)
@variable_options
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True, max=86400),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    help="Seconds allowed for each reply.",
)
@click.option(
    "--judge-model",
    metavar="NAME",
    help="Where an answer's prose varies and its facts alone say little, propose a model "
    "judge, judge: {model: NAME}: live when a model endpoint is set (OPENAI_BASE_URL, "
    "OPENAI_API_KEY), else commented out (without this option too, with a placeholder name).",
)
@click.option(
    "--embedding-model",
    metavar="NAME",
    help="Where an answer's prose varies, propose similarity by meaning, similar: {method: "
    "embedding, model: NAME, min: F}, its floor from the live runs' embeddings (needs a "
    "model endpoint).",
)
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="Also print each rule written to a file (-o, --rules), what could not be learned, "
    "and each held-out run's failure.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print the likely regressions and the summary.")
def learn(
    paths: tuple[str, ...],
    agent: str | None,
    wait: float | None,
    runs: int,
    max_runs: int | None,
    rules_path: str | None,
    output: str | None,
    variables: dict[str, str],
    env_files: tuple[str, ...],
    timeout: float,
    judge_model: str | None,
    embedding_model: str | None,
    verbose: int,
    quiet: bool,
) -> None:
    """Play the transcripts in PATHS --runs times against the agent, compare each live reply
    with the other live replies, and propose the narrowest rules that absorb what differs
    between them: `id` at a place whose text changes and recurs in later replies (paired one
    to one), a value kind at a place whose value changes (`integer`, `hex`, `text` …),
    `checks` for an answer worded anew each run (what held in every run: its facts, length,
    format, a similarity floor; scoped to its exchange), `unordered_paths` for an array whose
    order changes, `ignored_paths` for a member that comes
    and goes or changes type, `ignored_headers` for a header that changes. A place that is the
    same in every live run is never learned: a difference from the recording there is reported
    as a likely regression, after one more run with the learned rules.

    Exit status: 0 when that run passes, 1 with likely regressions, 2 usage, parse or
    connection errors.
    """
    from recorder.learn.run import learn as learn_noise

    # the rules on stdout (no file to write): the report on stderr
    to_stderr = output is None and rules_path is None
    models: list[ModelSession | None] = []
    try:
        environ = merge_variables(os.environ, _read_env_files(env_files), variables)
        rules = load_rules(rules_path)
        if rules_path is not None:
            for warning in rules_warnings(rules_path):
                click.echo(f"recorder {_NAME}: warning: {warning}", err=True)
        # the rules' own model checks, and what a model may propose: a check without an
        # endpoint is a usage error now, before anything is sent
        rules, session = bind_models(rules, environ, skip=False, concurrency=DEFAULT_CONCURRENCY)
        proposer = learn_with_models(
            environ,
            judge_model=judge_model,
            embedding_model=embedding_model,
            rules_file=output or rules_path,
        )
        models += [session, proposer.session]
        if agent is not None and wait is not None:
            wait_for_agent(agent, wait)
        with _quiet_embedded_kit(agent is None):
            learned = learn_noise(
                paths,
                agent=agent,
                rules=rules,
                rules_file=rules_path,
                output=output,
                runs=runs,
                max_runs=max_runs,
                environ=environ,
                timeout=timeout,
                start_agent=embedded_kit(_NAME),
                more_checks=proposer,
            )
    except TranscriptErrors as exc:
        for error in exc.errors:
            click.echo(f"recorder {_NAME}: {error}", err=True)
        raise SystemExit(2) from None
    except (MissingVariableError, RecorderError, OSError) as exc:
        fail(_NAME, str(exc))
    except KeyboardInterrupt:
        fail(_NAME, "interrupted", code=130)
    finally:
        for made in models:
            if made is not None:
                made.close()
    proposals = learned.proposals
    for problem in learned.errors:
        click.echo(f"recorder {_NAME}: not learned from: {problem}", err=True)
    if output is None and rules_path is None:
        click.echo(learned.text, nl=False)
    # the rules go to a file (-o, --rules): they are not said again, line by line (a check's
    # values make lines of hundreds of characters), unless -v asks
    listed = not quiet and (to_stderr or verbose > 0)
    if listed:
        for proposal in proposals.rules:
            rule = proposal.rule_text()
            first = proposal.where[0] if proposal.where else ""
            more = f" and {proposal.places - 1} more" if proposal.places > 1 else ""
            click.echo(f"  {rule}  # {proposal.reason}: {first}{more}", err=to_stderr)
    if not quiet:
        for hint in proposals.hints:
            click.echo(f"note: {hint}", err=True)
        if verbose:
            for note in proposals.notes:
                click.echo(f"  not learned: {note}", err=to_stderr)
    held = learned.held_out
    if held is not None:
        low, high = held.interval(0.95)
        click.echo(
            f"recorder {_NAME}: estimated false-alarm rate per exchange: "
            f"{_percent(held.rate)} ({len(held.failures)} of {held.trials} held-out exchange runs"
            f" failed, each run judged by the rules learned without it; 95% interval "
            f"{_percent(low)}-{_percent(high)})",
            err=True,
        )
        if verbose:
            for failure in held.failures:
                for mismatch in failure.mismatches[:3]:
                    click.echo(
                        f"  held-out run {failure.run}: {failure.where}: {mismatch.describe()}",
                        err=True,
                    )
    for change in learned.adjusted:
        click.echo(f"note: {change}", err=True)
    if learned.unstable is not None:
        click.echo(f"note: {learned.unstable}", err=True)
    if learned.verify is not None:
        for transcript in learned.verify.transcripts:
            for exchange in transcript.exchanges:
                if exchange.passed:
                    continue
                where = f"{transcript.path} exchange {exchange.number} ({exchange.title})"
                if exchange.error is not None:
                    click.echo(f"likely regression: {where}: {exchange.error}", err=to_stderr)
                for mismatch in exchange.mismatches:
                    frame = f" frame {mismatch.frame}" if mismatch.frame else ""
                    click.echo(
                        f"likely regression: {where}{frame}: {mismatch.describe()}", err=to_stderr
                    )
    target = output or rules_path
    written = f", written to {target}" if target is not None and (output or proposals.rules) else ""
    calls = f" ({plural(learned.calls, 'call')})" if learned.calls else ""
    summary = (
        f"recorder {_NAME}: {plural(len(proposals.rules), 'rule')} learned from "
        f"{plural(learned.runs, 'live run')} of {plural(learned.exchanges, 'exchange')}{calls} "
        f"in {plural(learned.files, 'file')}{written}; "
        f"{plural(learned.regressions, 'likely regression')}"
    )
    click.echo(summary, err=to_stderr)
    raise SystemExit(1 if learned.regressions else 0)
