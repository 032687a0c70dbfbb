"""`recorder rules check`: report the rules of a rules file that can never apply."""

from __future__ import annotations

import click

from recorder.cli import fail, plural


@click.group(short_help="Check a rules file (YAML) for rules that can never apply.")
def rules() -> None:
    """Work with rules files (the YAML given to `record --rules` and `play --rules`)."""


@rules.command(short_help="Report the rules of FILE that can never apply.")
@click.argument("file", type=click.Path(dir_okay=False))
def check(file: str) -> None:
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
    if warnings:
        fail("rules check", f"{file}: {plural(len(warnings), 'warning')}", code=1)
    click.echo(f"{file}: rules OK")
