"""`recorder rules check`: report the rules of a rules file that can never apply."""

from __future__ import annotations

import click

from recorder.cli import fail, plural
from recorder.cli.options import quiet_option, verbose_option


@click.group(short_help="Check a rules file (YAML) for rules that can never apply.")
def rules() -> None:
    """Work with rules files (the YAML given to `record --rules` and `play --rules`)."""


@rules.command(short_help="Report the rules of FILE that can never apply.")
@click.argument("file", type=click.Path(dir_okay=False))
@quiet_option("Warnings only: no closing OK line.")
@verbose_option("Also say what FILE sets: each top-level key and how many entries it holds.")
def check(file: str, quiet: bool, verbose: int) -> None:
    """Load FILE as `play --rules` would, and warn (with `file:line`) about each rule that can
    never apply: a generated_fields name or generated_paths path naming what only the client
    sends, a kind that is neither known (id, time, token) nor declared in FILE, and a check
    on a place only a request has.

    Exits 0 when there is nothing to say, 1 with warnings, 2 when FILE is not valid rules.
    """
    from recorder.errors import RulesError
    from recorder.rules.ruleset import rules_warnings

    try:
        warnings = rules_warnings(file)
    except RulesError as exc:
        fail("rules check", str(exc))
    for warning in warnings:
        click.echo(f"recorder rules check: warning: {warning}", err=True)
    if verbose and not quiet:
        for key, entries in _keys(file):
            click.echo(f"{file}: {key}: {entries}")
    if warnings:
        fail("rules check", f"{file}: {plural(len(warnings), 'warning')}", code=1)
    if not quiet:
        click.echo(f"{file}: rules OK")


def _keys(file: str) -> list[tuple[str, str]]:
    """Each top-level key of the rules file and what it holds (`3 entries`, or its value)."""
    import yaml

    with open(file, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)  # (valid rules: rules_warnings read it already)
    if not isinstance(data, dict):
        return []
    return [
        (str(key), plural(len(value), "entry", "entries"))
        if isinstance(value, dict | list)
        else (str(key), str(value))
        for key, value in data.items()
    ]
