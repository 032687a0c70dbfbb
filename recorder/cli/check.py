"""`recorder check`: validate transcripts."""

from __future__ import annotations

from pathlib import Path

import click

from recorder.checking import check_paths


@click.command(short_help="Check that .http transcripts parse (exit 2 naming file:line).")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--canonical",
    is_flag=True,
    help="Also fail files that are not byte for byte what recorder's writer produces.",
)
def check(paths: tuple[str, ...], canonical: bool) -> None:
    """Parse every .http file in PATHS (files or folders).

    Exits 0 when all are valid, 2 with one `path:line: message` line per problem otherwise.
    """
    count, problems = check_paths(paths, canonical=canonical)
    for problem in problems:
        click.echo(str(problem), err=True)
    if problems:
        bad = len({p.path for p in problems if not Path(p.path).is_dir()})
        if bad:  # (a folder without transcripts is a problem of its own, said above)
            click.echo(f"{bad} of {count} transcripts have problems", err=True)
        raise SystemExit(2)
    click.echo(f"{count} transcripts OK" if count != 1 else "1 transcript OK")
