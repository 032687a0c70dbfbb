"""`recorder check`: validate transcripts."""

from __future__ import annotations

from pathlib import Path

import click

from recorder.checking import Problem, check_paths
from recorder.cli import fail, plural
from recorder.cli.options import quiet_option, verbose_option
from recorder.disk.transcripts import note_skipped


@click.command(short_help="Check that .http transcripts parse (exit 2 naming file:line).")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--canonical",
    is_flag=True,
    help="Also fail files that are not byte for byte what recorder's writer produces.",
)
@quiet_option("Problems only: no note of the exports skipped, no closing OK line.")
@verbose_option("Also a line per transcript checked, with its problem count.")
def check(paths: tuple[str, ...], canonical: bool, quiet: bool, verbose: int) -> None:
    """Parse every .http file in PATHS (files or folders).

    Exits 0 when all are valid, 2 with one `recorder check: path:line: message` line per
    problem otherwise. JSON bodies (requests and replies whose media type says JSON) and the
    JSON `data:` of event-stream frames must be JSON.
    """

    def checked(path: Path, found: list[Problem]) -> None:
        click.echo(f"{path}: {plural(len(found), 'problem') if found else 'OK'}")

    count, problems = check_paths(
        paths,
        canonical=canonical,
        on_export=None if quiet else note_skipped,
        on_file=checked if verbose and not quiet else None,
    )
    for problem in problems:
        click.echo(f"recorder check: {problem}", err=True)
    if problems:
        bad = len({p.path for p in problems if not Path(p.path).is_dir()})
        if not bad:  # (a folder without transcripts is a problem of its own, said above)
            raise SystemExit(2)
        verb = "has" if bad == 1 else "have"
        fail("check", f"{bad} of {plural(count, 'transcript')} {verb} problems")
    if not quiet:
        click.echo(f"{plural(count, 'transcript')} OK")
