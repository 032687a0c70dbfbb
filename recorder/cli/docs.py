"""`recorder render`, `recorder docs sync|check`, `recorder export`: docs from transcripts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from recorder.cli import fail, plural
from recorder.cli.options import AliasedOption, quiet_option, verbose_option
from recorder.disk.transcripts import find_transcripts, is_export
from recorder.docs.curlscript import export_curl
from recorder.docs.export import DIALECTS, ExportError, export_http
from recorder.docs.grpcexport import PROTO_FILE, has_grpc
from recorder.docs.protofile import write_proto
from recorder.docs.render import (
    DEFAULT_MAX_LINES,
    DEFAULT_PICK,
    DEFAULT_WIDTH,
    RenderOptions,
    render_exchanges,
)
from recorder.docs.select import parse_exchange_reference
from recorder.docs.sync import (
    FileReport,
    SourceError,
    load_selection,
    sync_paths,
    write_text_file,
)
from recorder.format.model import Exchange


@dataclass(frozen=True)
class _Selection:
    """The transcript a reference names, and which of its exchanges (numbers from 1)."""

    path: str
    exchanges: tuple[Exchange, ...]
    numbers: tuple[int, ...]

    @property
    def chosen(self) -> tuple[Exchange, ...]:
        return tuple(self.exchanges[number - 1] for number in self.numbers)


def _load(command: str, reference: str) -> _Selection:
    """FILE, FILE#N, FILE#Operation or FILE#"title" -> the exchanges; exit 2 with the reason
    when they cannot be had (a name that names none or several: the choices)."""
    try:
        path, index = parse_exchange_reference(reference)
        exchanges, numbers = load_selection(path, index)
    except (ValueError, SourceError) as exc:
        fail(command, str(exc))
    return _Selection(path, exchanges, numbers)


@click.command(short_help="Print an exchange as a documentation block.")
@click.argument("reference", metavar="FILE[#N|#NAME]")
@click.option(
    "--headers",
    default="Content-Type",
    show_default=True,
    help="Comma-separated headers to keep; the others are elided with one '…' line.",
)
@click.option(
    "--max-lines",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_LINES,
    show_default=True,
    help="Lines of each body (or of a stream's frames) before the rest is elided; "
    "picked members are shown whatever the budget.",
)
@click.option(
    "--width",
    type=click.IntRange(min=20),
    default=DEFAULT_WIDTH,
    show_default=True,
    help="Longest SSE 'data:' line before members are elided with '…' (picked members stay).",
)
@click.option(
    "--pick",
    default=None,
    metavar="PATHS",
    help="Comma-separated JSON paths always shown whole ($.a.b, $..name, [N], [*]), "
    "instead of the default ones below; 'none' for the plain line budget.",
)
@click.option(
    "--ids",
    type=click.Choice(["full", "short"]),
    default="full",
    show_default=True,
    help="short: UUIDs as their first 8 hex digits and '…', the same UUID the same way.",
)
@click.option("--full", is_flag=True, help="Elide nothing.")
@click.option(
    "--open-end",
    is_flag=True,
    help="No closing '…' line after a body or stream cut at its end (an excerpt the text goes "
    "on from); the other elisions are still marked.",
)
@click.option(
    "--only",
    type=click.Choice(["request", "response"]),
    default=None,
    help="Show only the request or only the response.",
)
@click.option(
    "--list",
    "list_",
    is_flag=True,
    help="List the exchanges (#N and title, one a line) instead of rendering them.",
)
@quiet_option("Accepted as on every command: render prints its block and nothing else.")
@verbose_option("Also name each exchange rendered (#N and title), on stderr.")
def render(
    reference: str,
    headers: str,
    max_lines: int,
    width: int,
    pick: str | None,
    ids: str,
    full: bool,
    open_end: bool,
    only: str | None,
    list_: bool,
    quiet: bool,
    verbose: int,
) -> None:
    """Print exchange N of FILE (numbered from 1), or the one named NAME (its operation, or its
    whole title in double quotes), or every exchange, as a documentation block.

    The request line, the chosen headers, '…' for the other headers, the JSON body cut to a
    line budget at a line boundary, then the reply the same way; SSE frames as 'data:' lines cut
    with '…'. JSON-RPC envelope members (jsonrpc, id, method, params/result/error) come first.
    Whatever the budget, the picked members are shown whole: by default the parts of every
    message (the question, the answer), every task state and every artifact, that is

    \b
    --pick '{pick}'

    Tags show what an exchange is: '# @push config N' (the agent's call to the client's
    webhook), '# @call NAME exchange N' (the agent's call to its downstream NAME while it
    answered exchange N), '# @during exchange N frame K' (sent while exchange N was open), and
    exchange N says where: '# here the client sent exchange M (Operation)'.
    """
    selection = _load("render", reference)
    if list_:  # (the other options do not apply)
        for number in selection.numbers:
            title = selection.exchanges[number - 1].title
            click.echo(f"#{number}  {title}".rstrip())
        return
    try:
        options = RenderOptions(
            headers=tuple(headers.split(",")),
            max_lines=max_lines,
            width=width,
            full=full,
            only="both" if only is None else only,  # type: ignore[arg-type]
            pick=None if pick is None else tuple(pick.split(",")),
            ids=ids,  # type: ignore[arg-type]
            open_end=open_end,
        )
    except ValueError as exc:
        fail("render", f"--pick: {exc}")
    text = render_exchanges(selection.exchanges, options, numbers=selection.numbers)
    if verbose and not quiet:
        for number in selection.numbers:
            title = selection.exchanges[number - 1].title
            click.echo(f"recorder render: {selection.path} #{number}  {title}".rstrip(), err=True)
    click.echo(text, nl=False)


render.help = (render.help or "").replace("{pick}", ",".join(DEFAULT_PICK))  # one source


@click.group(short_help="Keep Markdown blocks in sync with their transcripts.")
def docs() -> None:
    """Keep Markdown code blocks in sync with the transcripts they show.

    Mark a fenced block with a comment on the line above it, for example
    `<!-- recorder: ../transcripts/02-message-reply.http#1 max-lines=12 -->` (the path is
    relative to the Markdown file's folder; options: headers=, max-lines=, width=, only=,
    pick=, ids=, full, open-end). A marker in a code block, fenced or indented, is an example
    and is left alone.
    """


def _print_problems(command: str, reports: list[FileReport]) -> bool:
    problems = [problem for report in reports for problem in report.problems]
    for problem in problems:
        click.echo(f"recorder {command}: {problem}", err=True)
    return bool(problems)


@docs.command(short_help="Rewrite the marked Markdown blocks from their transcripts.")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@quiet_option("Problems only: no line per file updated, no closing line.")
@verbose_option("Also a line per file with marked blocks, updated or not.")
def sync(paths: tuple[str, ...], quiet: bool, verbose: int) -> None:
    """Rewrite the marked blocks of PATHS (Markdown files or folders of *.md) in place.

    Exits 0 when done, 2 when a marker names a missing transcript or exchange (the other blocks
    are still synced).
    """
    reports = sync_paths(paths, write=True)
    for report in reports:
        if quiet:
            break
        if report.written:
            click.echo(f"{report.path}: {plural(len(report.outdated), 'block')} updated")
        elif verbose and report.markers:
            click.echo(f"{report.path}: {plural(report.markers, 'block')} up to date")
    if _print_problems("docs sync", reports):
        raise SystemExit(2)
    if not quiet and not any(report.written for report in reports):
        click.echo("all blocks up to date")


@docs.command(short_help="Fail when a marked Markdown block is out of date (CI).")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@quiet_option("Problems only: no closing line when all are up to date.")
@verbose_option("Also a line per file with marked blocks, and how many are up to date.")
def check(paths: tuple[str, ...], quiet: bool, verbose: int) -> None:
    """Fail when a marked block of PATHS differs from its transcript (for CI).

    Exits 0 when all are up to date, 1 naming `file:line` of each out-of-date block with a
    unified diff of it (the file's lines against the transcript's rendering), 2 naming
    `file:line` of each marker whose transcript or exchange is missing.
    """
    reports = sync_paths(paths, write=False)
    stale = 0
    for report in reports:
        if verbose and not quiet and report.markers:
            fresh = report.markers - len(report.outdated)
            click.echo(f"{report.path}: {fresh} of {plural(report.markers, 'block')} up to date")
        for marker in report.outdated:
            stale += 1
            what = "has no code block below it" if marker.block is None else "is out of date"
            click.echo(
                f"{report.path}:{marker.line}: the block from {marker.reference} {what} "
                f"(run: recorder docs sync {report.path})"
            )
            for line in report.diff(marker):
                click.echo(line)
    if _print_problems("docs check", reports):
        raise SystemExit(2)
    if stale:
        raise SystemExit(1)
    blocks = sum(report.markers for report in reports)
    if not quiet:
        click.echo(f"{plural(blocks, 'block')} up to date")


@click.command(short_help="Export as a bash script (curl), a .http file or a HAR file.")
@click.argument("reference", metavar="FILE[#N|#NAME]|FOLDER")
@click.option(
    "--to",
    "target",
    type=click.Choice(["curl", "http", "har"]),
    required=True,
    help="curl: a bash script of curl commands; http: a requests-only .http file; har: the "
    "exchanges (requests and replies) as one HAR 1.2 file.",
)
@click.option(
    "--dialect",
    type=click.Choice(DIALECTS),
    default="jetbrains",
    show_default=True,
    help="With --to http: how requests refer to earlier replies. jetbrains: JetBrains HTTP "
    "Client and httpyac; vscode: VS Code REST Client.",
)
@click.option(
    "--agent",
    "--base-url",
    "base_url",
    cls=AliasedOption,
    aliases=("--base-url",),
    metavar="URL",
    default=None,
    help="The agent the requests go to (default: http:// + the recorded Host header).",
)
@click.option(
    "--grpc-agent",
    metavar="HOST:PORT",
    default=None,
    help="Where the gRPC calls go (default: the recorded host, else GRPC_HOST / grpc_host to set).",
)
@click.option(
    "--proto",
    "proto_dir",
    metavar="DIR",
    type=click.Path(file_okay=False),
    default=None,
    help="Write the a2a.proto that gRPC calls load into DIR (default: beside -o's export).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(),
    default=None,
    help="Write to this file (a folder when exporting a folder) instead of standard output.",
)
@quiet_option("Errors only: no line on stderr for what was written, nor the a2a.proto hint.")
@verbose_option("Also a line per file written when exporting a folder.")
def export(
    reference: str,
    target: str,
    dialect: str,
    base_url: str | None,
    grpc_agent: str | None,
    proto_dir: str | None,
    output: str | None,
    quiet: bool,
    verbose: int,
) -> None:
    """Export the requests of FILE (or exchange N), or of every transcript in FOLDER, as a bash
    script of curl commands or a .http file, in which later requests send the ids earlier
    replies generated.

    Secrets recorded as {{NAME}} become "${NAME:?}" in the script (it stops when one is unset)
    and stay {{NAME}} variables in the .http file. A folder is exported to the folder -o names,
    one NN-name.sh or NN-name.http per transcript. Exports start with a line `# exported by
    recorder`, and `recorder play` and `recorder check` skip them.

    gRPC calls are httpyac GRPC requests (--to http) or grpcurl commands (--to curl), which
    load the service from a2a.proto: written beside the export (-o), or into --proto DIR.

    --to har writes the exchanges, replies included, as one HAR 1.2 file (a folder's
    transcripts as its pages), for browser devtools, mitmproxy or Postman; placeholders stay
    placeholders, and `recorder import` reads it back into the same transcripts. A gRPC call
    is the HTTP/2 POST it travels in (protobuf bodies in base64, its status in `_trailers`).
    """
    settings = _Settings(target, dialect, base_url, grpc_agent, quiet, verbose > 0 and not quiet)
    if target == "har":
        _export_har(Path(reference), reference, settings, output)
        return
    if Path(reference).is_dir():
        _export_folder(Path(reference), settings, output, proto_dir)
        return
    selection = _load("export", reference)
    exchanges, source = selection.chosen, selection.path
    if output is not None and Path(output).resolve() == Path(source).resolve():
        fail("export", f"-o {output} would overwrite the transcript it exports")
    text = _exported(exchanges, settings, source, selection.numbers[0])
    grpc = has_grpc(exchanges)
    if proto_dir is not None or (grpc and output is not None):
        folder = Path(proto_dir) if proto_dir is not None else Path(output or ".").parent
        _write_proto(folder, settings)
    elif grpc and not quiet:
        click.echo(
            f"recorder export: the gRPC calls load ./{PROTO_FILE} from the export's folder:"
            " write it there with --proto DIR",
            err=True,
        )
    if output is None:
        click.echo(text, nl=False)
        return
    _write_export(Path(output), text)
    # (the result is the file: nothing on stdout, which may be piped; the status on stderr)
    settings.say(f"wrote {output}")


@dataclass(frozen=True)
class _Settings:
    """How the export command exports (its options)."""

    target: str
    dialect: str
    base_url: str | None
    grpc_agent: str | None
    quiet: bool = False
    verbose: bool = False

    def say(self, line: str) -> None:
        """A status line on stderr (`recorder export: ...`), unless -q."""
        if not self.quiet:
            click.echo(f"recorder export: {line}", err=True)


def _export_har(path: Path, reference: str, settings: _Settings, output: str | None) -> None:
    """A folder's transcripts, a file, or the exchanges chosen of one, as one HAR file."""
    from recorder.disk.transcripts import load
    from recorder.docs.harexport import HarFile, export_har
    from recorder.errors import ParseError

    files: list[HarFile] = []
    if path.is_dir():
        paths = [found for found in find_transcripts([path]) if not is_export(found)]
        if not paths:
            fail("export", f"{path}: no .http transcripts in this folder")
        for found in paths:
            try:
                transcript = load(found)
            except ParseError as exc:
                fail("export", str(exc))
            files.append(HarFile(found.relative_to(path).as_posix(), transcript))
    else:
        selection = _load("export", reference)
        try:
            transcript = load(selection.path)
        except ParseError as exc:
            fail("export", str(exc))
        numbers = selection.numbers
        if len(numbers) == len(transcript.exchanges):
            numbers = ()
        files.append(HarFile(Path(selection.path).name, transcript, numbers))
    if output is not None and any(
        Path(output).resolve() == (path / f.name if path.is_dir() else path).resolve()
        for f in files
    ):
        fail("export", f"-o {output} would overwrite a transcript it exports")
    try:
        text = export_har(
            files,
            base_url=settings.base_url,
            grpc_host=settings.grpc_agent,
            version=_version(),
        )
    except ExportError as exc:
        fail("export", str(exc))
    if output is None:
        click.echo(text, nl=False)
        return
    _write_export(Path(output), text)
    settings.say(f"wrote {output}")


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("a2a-recorder")
    except importlib.metadata.PackageNotFoundError:
        return ""


def _write_proto(folder: Path, settings: _Settings) -> None:
    try:
        path = write_proto(folder)
    except ExportError as exc:
        fail("export", str(exc))
    settings.say(f"wrote {path} (the gRPC calls' service definition)")


def _exported(exchanges: tuple[Exchange, ...], settings: _Settings, source: str, start: int) -> str:
    base_url, grpc_host = settings.base_url, settings.grpc_agent
    try:
        if settings.target == "curl":
            return export_curl(
                exchanges, base_url=base_url, source=source, start=start, grpc_host=grpc_host
            )
        return export_http(
            exchanges,
            base_url=base_url,
            source=source,
            start=start,
            dialect=settings.dialect,
            grpc_host=grpc_host,
        )
    except ExportError as exc:
        fail("export", str(exc))


def _write_export(path: Path, text: str) -> None:
    try:
        write_text_file(path, text)
    except OSError as exc:
        fail("export", f"cannot write {path}: {exc.strerror or exc}")


def _export_folder(
    folder: Path, settings: _Settings, output: str | None, proto_dir: str | None
) -> None:
    if output is None:
        fail("export", f"{folder} is a folder: pass -o FOLDER to export it to")
    destination = Path(output)
    if destination.resolve() == folder.resolve():
        fail("export", f"-o {output} is the folder it exports: choose another")
    if destination.exists() and not destination.is_dir():
        fail("export", f"-o {output} is a file: a folder exports to a folder")
    paths = [path for path in find_transcripts([folder]) if not is_export(path)]
    if not paths:
        fail("export", f"{folder}: no .http transcripts in this folder")
    try:
        destination.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail("export", f"cannot create {output}: {exc.strerror or exc}")
    suffix = ".sh" if settings.target == "curl" else ".http"
    protos: set[Path] = set()  # the folders whose exports load a2a.proto
    for path in paths:
        exchanges = _load("export", str(path)).chosen
        name = path.relative_to(folder).with_suffix(suffix)
        text = _exported(exchanges, settings, str(path), 1)
        (destination / name).parent.mkdir(parents=True, exist_ok=True)
        _write_export(destination / name, text)
        if settings.verbose:
            settings.say(f"wrote {destination / name}")
        if has_grpc(exchanges):
            protos.add((destination / name).parent)
    if proto_dir is not None:
        protos = {Path(proto_dir)}
    for place in sorted(protos):
        _write_proto(place, settings)
    settings.say(f"wrote {plural(len(paths), 'file')} to {output}")
