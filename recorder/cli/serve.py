"""`recorder serve`: golden transcripts served as a stand-in agent."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import click

from recorder.cli import fail, plural
from recorder.cli.options import AliasedOption, quiet_option, verbose_option
from recorder.errors import RecorderError

if TYPE_CHECKING:
    from recorder.record.proxy.server import ProxyServer
    from recorder.rules.ruleset import Rules
    from recorder.serve.app import StandIn
    from recorder.servers import ServerThread


@click.command(short_help="Serve transcripts as a stand-in agent for client tests.")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--listen",
    default="127.0.0.1:41242",
    show_default=True,
    metavar="HOST:PORT",
    help="Where the stand-in listens (HOST:PORT, or a port; 0: any free port).",
)
@click.option(
    "--grpc-listen",
    metavar="HOST:PORT",
    help="Where the stand-in serves the gRPC binding (HOST:PORT, or a port; 0: any free port) "
    "[default: the --listen port + 1 when the transcripts hold a gRPC call, else none].",
)
@click.option(
    "--rules",
    type=click.Path(dir_okay=False),
    help="Rules file (YAML): what is generated (the ids handed out, the values a client makes up).",
)
@click.option(
    "--fresh-ids",
    is_flag=True,
    help="Hand out a fresh id (a uuid4 for a uuid) for every id a reply generates, per "
    "conversation. Without it, ids are the recorded ones unless another conversation has one.",
)
@click.option(
    "--pace",
    is_flag=True,
    help="Space a stream's frames as the timestamps in them say (at most 5 s apart).",
)
@click.option(
    "--during-wait",
    type=click.FloatRange(min=0, max=3600),
    default=10.0,
    show_default=True,
    help="Seconds a reply recorded as still open when a later request came (@during) waits "
    "for that request before it goes on.",
)
@click.option(
    "--fallback",
    metavar="URL",
    help="Send a request that matches no recorded exchange to the agent at URL and relay its "
    "reply (a stand-in that passes through what it was not recorded for).",
)
@click.option(
    "-o",
    "--output",
    "--record-new",
    "record_new",
    cls=AliasedOption,
    aliases=("--record-new",),
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="With --fallback: record what the agent answers there into transcripts in DIR "
    "(through the recorder's proxy, secrets redacted), to serve next time.",
)
@click.option(
    "--downstream",
    "downstreams",
    metavar="NAME@[HOST:]PORT",
    multiple=True,
    help="Also stand in for the agent's downstream NAME (its model, its MCP tools: the "
    "transcripts' '# @call NAME' blocks) at [HOST:]PORT (repeatable; HOST 127.0.0.1 when left "
    "out, 0: any free port): a model or tool client gets the recorded answers.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 1 at shutdown when any request matched no recorded exchange (for CI).",
)
@click.option(
    "--faults",
    "faults_file",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Inject faults (YAML: per method, nth request or probability: a delay, an A2A "
    "error, an HTTP or gRPC status, a stream cut after N frames, a malformed frame).",
)
@click.option(
    "--json-report",
    "--report-json",
    "json_report",
    cls=AliasedOption,
    aliases=("--report-json",),
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Write the closing report (served, unused, unmatched, faults) as JSON to FILE.",
)
@quiet_option("Errors and warnings only: not where it listens, nor what it recorded.")
@verbose_option("Log every request and the exchange it matched.")
def serve(
    paths: tuple[str, ...],
    listen: str,
    grpc_listen: str | None,
    rules: str | None,
    fresh_ids: bool,
    pace: bool,
    during_wait: float,
    fallback: str | None,
    record_new: str | None,
    downstreams: tuple[str, ...],
    strict: bool,
    faults_file: str | None,
    json_report: str | None,
    quiet: bool,
    verbose: int,
) -> None:
    """Answer requests as the agent did in the transcripts under PATHS (files, folders).

    A request is matched to a recorded one by method, path, JSON-RPC method and body, with
    the values a client makes up (JSON-RPC id, messageId, uuids) matching any value of their
    kind and the ids the stand-in handed out read back as the recorded ones. Each conversation
    gets its recorded replies in order. A request that matches nothing gets an error naming
    the closest recorded request and what differs (a JSON-RPC error, else 404), or with
    --fallback the reply of a real agent.

    When it stops it reports what it served, which recorded exchanges it left unused, the
    requests it could not match and the faults it injected (--json-report: as JSON too).
    """
    from recorder.record.proxy.server import parse_listen
    from recorder.rules.ruleset import load_rules
    from recorder.serve import load_stand_in
    from recorder.serve.fallback import Fallback
    from recorder.serve.faults import load_faults
    from recorder.serve.server import serve as run

    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("recorder serve: %(message)s"))
    log = logging.getLogger("recorder.serve")
    log.addHandler(handler)
    log.setLevel(logging.INFO if verbose else logging.WARNING)
    if record_new is not None and fallback is None:
        fail("serve", "-o/--output needs --fallback URL (the agent to record)")
    recorder = None
    standing: list[tuple[StandIn, ServerThread]] = []
    stand_in = None
    try:
        faults = load_faults(faults_file) if faults_file is not None else None
        host, port = parse_listen(listen)
        loaded = load_rules(rules)
        relay = None
        grpc_relay = None
        if fallback is not None:
            relay = Fallback(fallback)  # (a URL that is none is refused before anything starts)
            agent_grpc = _fallback_grpc(fallback)
            grpc_relay = agent_grpc
            if record_new is not None:
                recorder = _recorder(fallback, record_new, loaded, agent_grpc)
                relay = Fallback(recorder.url)
                listener = recorder.proxy.grpc
                grpc_relay = listener.address if listener is not None else None
        stand_in = load_stand_in(
            list(paths),
            loaded,
            fresh_ids=fresh_ids,
            pace=pace,
            during_wait=during_wait,
            fallback=relay,
            faults=faults,
        )
        stand_in.grpc_fallback = grpc_relay
        standing = _downstreams(downstreams, paths, loaded, pace=pace, fresh_ids=fresh_ids)
        grpc_at = _grpc_listen(grpc_listen, host, port, stand_in)
        announce = _silent if quiet else _status
        run(stand_in, host=host, port=port, announce=announce, grpc_listen=grpc_at)
    except (ValueError, RecorderError) as exc:
        fail("serve", str(exc))
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        fail("serve", f"{where}{exc.strerror or exc}")
    finally:
        for _, thread in standing:
            thread.stop()
        if recorder is not None:
            recorder.stop()
            if not quiet:
                _status(
                    f"recorded {plural(recorder.proxy.recorded, 'new exchange')} in {record_new}"
                )
        log.removeHandler(handler)
    if stand_in is None:
        return
    _report(stand_in, json_report, verbose=bool(verbose), quiet=quiet)
    unmatched = stand_in.unmatched + sum(downstream.unmatched for downstream, _ in standing)
    if strict and unmatched:
        fail("serve", f"{plural(unmatched, 'request')} matched no recorded exchange", code=1)


def _downstreams(
    texts: tuple[str, ...], paths: tuple[str, ...], rules: Rules, **options: Any
) -> list[tuple[StandIn, ServerThread]]:
    """`--downstream NAME@[HOST:]PORT`: a stand-in for each, serving in a thread of its own,
    said where on stderr. ValueError for a bad one, or one no transcript has calls to;
    RecorderError when its address cannot be listened on."""
    from recorder.disk.transcripts import find_transcripts, load
    from recorder.replay.standin import parse_place
    from recorder.serve.downstream import downstream_stand_in
    from recorder.serve.server import server_options
    from recorder.servers import ServerThread, bind_socket, listen_problem

    if not texts:
        return []
    transcripts = [load(path) for path in find_transcripts(list(paths))]
    started: list[tuple[StandIn, ServerThread]] = []
    try:
        for text in texts:
            try:
                name, host, port = parse_place(text)
            except ValueError as exc:
                raise ValueError(f"--downstream: {exc}") from None
            downstream = downstream_stand_in(transcripts, name, rules, **options)
            try:
                sock = bind_socket(host, port)
            except (OSError, OverflowError) as error:
                raise RecorderError(listen_problem(host, port, error)) from None
            thread = ServerThread(downstream, sock=sock, **server_options()).start()
            started.append((downstream, thread))
            _status(
                f"standing in for {name} ({plural(downstream.exchanges, 'recorded call')} of "
                f"{plural(downstream.transcripts, 'transcript')}) on {thread.url}"
            )
    except BaseException:
        for _, thread in started:
            thread.stop()
        raise
    return started


def _grpc_listen(
    value: str | None, host: str, port: int, stand_in: StandIn
) -> tuple[str, int] | None:
    """Where to serve gRPC: `--grpc-listen`, else beside the HTTP port when a transcript
    holds a gRPC call or the fallback agent serves gRPC."""
    from recorder.record.proxy.server import parse_listen

    if value is not None:
        return parse_listen(value)
    grpc_calls = any(step.exchange.request.is_grpc for steps in stand_in.steps for step in steps)
    if not grpc_calls and stand_in.grpc_fallback is None:
        return None
    return host, port + 1 if port else 0


def _fallback_grpc(upstream: str) -> str | None:
    """The fallback agent's gRPC address (`host:port`), when its card (fetched now) lists a
    GRPC interface on its host and grpcio is installed: unmatched gRPC calls are relayed there."""
    import importlib.util

    from recorder.record.grpc_proxy import card_grpc_interface, grpc_target

    if importlib.util.find_spec("grpc") is None:
        return None
    url = card_grpc_interface(upstream)
    return grpc_target(url) if url is not None else None


def _recorder(upstream: str, out: str, rules: Rules, grpc: str | None) -> ProxyServer:
    """The recorder's proxy in front of the fallback agent, on a free loopback port, started:
    what passes through it is recorded into `out`, as `recorder record` would; with its gRPC
    listener on a free port when the agent serves gRPC at `grpc`."""
    from pathlib import Path

    from recorder.record.proxy import create_proxy_app
    from recorder.record.proxy.server import ProxyServer

    proxy = create_proxy_app(upstream, out=Path(out), rules=rules)
    if grpc is not None:
        proxy.listen_grpc(port=0, upstream=grpc)
    return ProxyServer(proxy).start()


def _report(stand_in: StandIn, json_path: str | None, *, verbose: bool, quiet: bool) -> None:
    """The closing report: on stderr (not with -q), and as JSON to `json_path`."""
    import json
    from pathlib import Path

    from recorder.disk.atomic import write_text_atomic
    from recorder.serve.report import report_json, report_text

    report = stand_in.report()
    if not quiet:
        first, *rest = report_text(report, verbose=verbose).splitlines()
        _status(first)
        for line in rest:
            click.echo(line, err=True)
    if json_path is not None:
        try:
            write_text_atomic(Path(json_path), json.dumps(report_json(report), indent=2) + "\n")
        except OSError as exc:
            fail("serve", f"{json_path}: {exc.strerror or exc}")
        if not quiet:
            _status(f"wrote {json_path}")


def _status(line: str) -> None:
    click.echo(f"recorder serve: {line}", err=True)


def _silent(line: str) -> None:
    """`serve -q`: the status lines are not said."""
