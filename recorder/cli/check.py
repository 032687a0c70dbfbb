"""`recorder check`: validate transcripts."""

from __future__ import annotations

from pathlib import Path

import click

from recorder.checking import check_paths
from recorder.cli import fail, plural


@click.command(short_help="Check that .http transcripts parse (exit 2 naming file:line).")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--canonical",
    is_flag=True,
    help="Also fail files that are not byte for byte what recorder's writer produces.",
)
def check(paths: tuple[str, ...], canonical: bool) -> None:
    """Parse every .http file in PATHS (files or folders).

    Exits 0 when all are valid, 2 with one `recorder check: path:line: message` line per
    problem otherwise. JSON bodies (requests and replies whose media type says JSON) and the
    JSON `data:` of event-stream frames must be JSON.
    """
    count, problems = check_paths(paths, canonical=canonical)
    for problem in problems:
        click.echo(f"recorder check: {problem}", err=True)
    if problems:
        bad = len({p.path for p in problems if not Path(p.path).is_dir()})
        if not bad:  # (a folder without transcripts is a problem of its own, said above)
            raise SystemExit(2)
        verb = "has" if bad == 1 else "have"
        fail("check", f"{bad} of {plural(count, 'transcript')} {verb} problems")
    click.echo(f"{plural(count, 'transcript')} OK")
