"""`recorder import`: a HAR file's exchanges as .http transcripts."""

from __future__ import annotations

from pathlib import Path

import click

from recorder.cli import fail, plural
from recorder.cli.options import (
    quiet_option,
    transcripts_output_option,
    verbose_option,
)


@click.command("import", short_help="Import the exchanges of a HAR file as .http transcripts.")
@click.argument("har_file", metavar="FILE.har", type=click.Path(dir_okay=False))
@transcripts_output_option()
@click.option(
    "--scenario",
    metavar="NAME",
    help="Put every exchange in one file named after NAME, instead of grouping them by id "
    "lineage (or by the files a `recorder export --to har` names).",
)
@click.option(
    "--agent",
    metavar="URL",
    help="Import only the requests to this agent (its scheme-less origin and path prefix "
    "count: http://127.0.0.1:41242); the others are left out with a note.",
)
@click.option(
    "--rules",
    type=click.Path(dir_okay=False),
    help="Rules file (YAML): secrets, and what is generated (for grouping by id lineage).",
)
@click.option(
    "--during-by-time",
    is_flag=True,
    help="Tag a request that started before an earlier exchange of its file ended as @during "
    "it, from the HAR's times: for producers whose times are the wire's (mitmproxy); a "
    "browser's include its own reading of each body, so sequential calls seem to overlap.",
)
@quiet_option("Errors only: no note per entry left out, no line per file, no summary.")
@verbose_option("Also a line per file written.")
def import_har_file(
    har_file: str,
    out: str,
    scenario: str | None,
    agent: str | None,
    rules: str | None,
    during_by_time: bool,
    quiet: bool,
    verbose: int,
) -> None:
    """Write the exchanges of FILE.har (from browser devtools, mitmproxy's HAR export,
    Playwright's record_har, `recorder export --to har` ...) as transcripts in -o, as the
    recorder would have written that traffic.

    Exchanges are grouped by id lineage, as `recorder record` groups unscripted traffic (a
    request carrying an id an earlier reply generated joins that reply's file), unless
    --scenario puts them all in one file, or the HAR was exported by recorder (its files kept).
    Secrets are replaced by {{PLACEHOLDER}}s before anything is written; event streams are
    split into their frames; binary bodies are kept (base64 in the file); gRPC calls (HTTP/2
    POSTs of application/grpc) become GRPC calls. Entries without a reply, or whose body the
    HAR does not hold, are left out with a note. A HAR that cannot be read is an error naming
    its JSON path, and nothing is written.
    """
    from recorder.errors import RecorderError
    from recorder.record.harimport import import_har
    from recorder.rules.ruleset import load_rules

    try:
        data = Path(har_file).read_bytes()
    except OSError as exc:
        fail("import", f"{har_file}: {exc.strerror or exc}")
    try:
        imported = import_har(
            data,
            source=har_file,
            out=Path(out),
            rules=load_rules(rules),
            scenario=scenario,
            only=agent,
            during_by_time=during_by_time,
        )
    except RecorderError as exc:
        fail("import", str(exc))
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        fail("import", f"{where}{exc.strerror or exc}")
    if not quiet:
        for note in imported.skipped:
            click.echo(f"recorder import: left out {note}", err=True)
        for note in imported.notes:
            click.echo(f"recorder import: {note}", err=True)
    if verbose and not quiet:
        for path in imported.files:
            click.echo(f"recorder import: wrote {path}", err=True)
    if not imported.exchanges:
        fail("import", f"{har_file}: no exchange to import")
    if quiet:
        return
    left = f"; {plural(len(imported.skipped), 'entry', 'entries')} left out" * bool(
        imported.skipped
    )
    click.echo(
        f"imported {plural(imported.exchanges, 'exchange')} into "
        f"{plural(len(imported.files), 'file')} in {out}{left}"
    )
