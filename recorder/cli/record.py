"""`recorder record`: run the recording reverse proxy."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import click

from recorder.cli import fail, plural
from recorder.cli.options import (
    AliasedOption,
    quiet_option,
    transcripts_output_option,
    verbose_option,
)
from recorder.errors import RecorderError
from recorder.format.model import Transcript
from recorder.record.store.modes import MODES

if TYPE_CHECKING:
    from recorder.record.proxy import RecordingProxy


@click.command(short_help="Record the traffic to an agent as .http transcripts.")
@click.option(
    "--agent",
    "--upstream",
    "upstream",
    cls=AliasedOption,
    aliases=("--upstream",),
    required=True,
    metavar="URL",
    help="The agent to record, e.g. http://localhost:41242",
)
@click.option(
    "--listen",
    default="127.0.0.1:41241",
    show_default=True,
    metavar="HOST:PORT",
    help="Where the proxy listens (HOST:PORT, or a port; loopback unless you say otherwise).",
)
@transcripts_output_option()
@click.option(
    "--rules",
    type=click.Path(dir_okay=False),
    help="Rules file (YAML): secrets, and what is generated (for grouping by id lineage).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True, max=86400),
    default=60.0,
    show_default=True,
    help="Upstream read timeout, seconds: how long the agent may take to send the next part "
    "of a reply (a gRPC call's next message, or its end, too).",
)
@click.option(
    "--max-body",
    default=64,
    show_default=True,
    type=click.IntRange(min=1),
    help="Longest request body forwarded, in MiB (bodies are held whole; longer ones get 413).",
)
@click.option(
    "--fsync",
    is_flag=True,
    help="Flush each transcript to the disk before it replaces the old file (survives a power "
    "loss; slower). Without it writes are still atomic (temporary file, then rename).",
)
@click.option(
    "--stream-grace",
    type=click.FloatRange(min=0, max=3600),
    default=2.0,
    show_default=True,
    help="Seconds the agent's event stream is still read after the client left it, so that a "
    "stream about to end is recorded whole (only one still open then is marked @truncated).",
)
@click.option(
    "--client-timeout",
    type=click.FloatRange(min=0, min_open=True, max=86400),
    default=30.0,
    show_default=True,
    help="Seconds a client's request head, then its body, may take (408, connection closed).",
)
@click.option(
    "--keep-alive",
    type=click.FloatRange(min=0, min_open=True, max=86400),
    default=5.0,
    show_default=True,
    help="Seconds a client connection may stay idle before or between requests.",
)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="replace",
    show_default=True,
    help="What a scenario whose file NN-name.http is already in --output does: replace: it is "
    "recorded again into that file (same number, same name; the recorded ids are kept where "
    "the agent's behaviour did not change, final when the recorder stops); new: it gets a new "
    "file; once: its file is kept, its traffic forwarded but not recorded.",
)
@click.option(
    "--scenario",
    "scenario",
    metavar="NAME",
    help="The scenario of every request without a Recorder-Scenario header (for clients that "
    "cannot send one), as if POSTed to /_recorder/scenario at the start.",
)
@click.option(
    "--grpc-listen",
    metavar="HOST:PORT",
    default=None,
    help="Where the gRPC listener listens: A2A's gRPC binding, forwarded to the GRPC interface "
    "the agent's card lists, and recorded [default: when the card lists one, the --listen host "
    "and its port + 1, or the next port that is not the agent's own (41244 in front of the "
    "kit); any free port with port 0]. Needs the grpc extra.",
)
@click.option(
    "--grpc-max-message",
    type=click.IntRange(min=1),
    default=None,
    metavar="MIB",
    help="Longest gRPC message the recorder passes on, either way, in MiB (a longer one is "
    "refused with RESOURCE_EXHAUSTED, said to be the recorder's, and not recorded as the "
    "agent's) [default: no limit of its own; the agent's and the client's hold].",
)
@click.option(
    "--push-loopback",
    is_flag=True,
    help="Deliver push notifications to webhooks on loopback addresses (127.0.0.1, ::1, "
    "localhost): local work, a client and its webhook on this machine. Without it those are "
    "refused, as every address that is not public is.",
)
@click.option(
    "--push-receiver-url",
    metavar="URL",
    default=None,
    help="The address the agent is given for the recorder's push receiver (an origin, "
    "https://host[:port], that reaches --listen: a tunnel or a public address), instead of "
    "the --listen address: for an agent that refuses loopback webhooks.",
)
@click.option(
    "--downstream",
    "downstreams",
    multiple=True,
    metavar="NAME=URL@[HOST:]PORT",
    help="Record the agent's own calls to a downstream too (repeatable): a listener on "
    "HOST:PORT (HOST 127.0.0.1 by default, PORT 0: any free one) forwarding to URL; point "
    "the agent's base URL for it there (OPENAI_BASE_URL, an MCP server's URL). Each call is "
    "written into the file of the exchange that made it, tagged '# @call NAME exchange N'.",
)
@quiet_option("No line per recorded exchange: errors, warnings and the summary only.")
@verbose_option(
    "Also a line per request as it is forwarded (its scenario, or none: grouped by id "
    "lineage), and each scenario started or ended."
)
def record(
    upstream: str,
    listen: str,
    out: str,
    rules: str | None,
    timeout: float,
    max_body: int,
    fsync: bool,
    stream_grace: float,
    client_timeout: float,
    keep_alive: float,
    mode: str,
    scenario: str | None,
    grpc_listen: str | None,
    grpc_max_message: int | None,
    push_loopback: bool,
    push_receiver_url: str | None,
    downstreams: tuple[str, ...],
    quiet: bool,
    verbose: int,
) -> None:
    """Record every exchange between clients and the agent at --agent.

    Point clients at the proxy instead of the agent. Name a scenario with the request header
    `Recorder-Scenario: <name>` (or POST {"name": ...} to /_recorder/scenario): its exchanges go
    to one file. Without one, an exchange joins the file of the exchange that generated an id
    its request carries (a GetTask goes with the SendMessage that made the task), else starts
    a new file. Agent cards are rewritten for the client so that every call goes through.

    gRPC: when the agent's card (fetched once at the start) lists a GRPC interface, a gRPC
    listener forwards and records that binding too, on --grpc-listen or else the --listen
    port + 1 (the next port not the agent's own: 41244 in front of the kit), and the card the
    client gets names it. An interface the recorder does not
    proxy is named in a warning: what is called there is not recorded.

    Record modes (--mode), for a scenario whose file is already in --output: replace (the
    default) records it again into that file, same number and name, keeping the previous
    file's ids, timestamps and Date headers where the agent's behaviour did not change, so
    `git diff` shows only real changes (the file is final when the recorder stops, Ctrl-C
    or SIGTERM); new gives it a new file, numbered after the highest; once keeps the file
    and records nothing of the scenario. A scenario with no file yet, and traffic without a
    scenario (grouped by id lineage), are recorded into new files in every mode.

    Push notifications: a push config's webhook reaches the agent as the recorder's own
    receiver, and each delivery is forwarded to the webhook and recorded. The recorder never
    delivers where an agent that screens webhooks (the a2a-sdk's validator) would not: not to
    a non-http(s) URL, its own listeners, or an address that is not public (loopback only
    with --push-loopback); such a registration gets the recorder's InvalidParams error, not
    forwarded. An agent that refuses loopback webhooks is recorded with --push-receiver-url.

    The agent's own calls (--downstream model=https://api.example/v1@41260, one per model API,
    MCP server or peer agent it calls): each downstream gets a listener that forwards to its URL
    (event streams frame by frame); point the agent at it. A call goes into the file of the
    exchange whose request values it carries (the user's text in a prompt, a task's id), else
    of the one exchange open; one that neither decides is written with the earliest open
    exchange, tagged ambiguous, and counted. API keys become placeholders named for the
    downstream ({{MODEL_TOKEN}}).

    Replies reach the clients as soon as they come; recording follows. An exchange that cannot
    be written is logged with its reason, counted in GET /_recorder/status, and at shutdown
    the count is printed and the exit status is 1.
    """
    import httpx

    from recorder.record.naming import slugify
    from recorder.record.proxy import create_proxy_app
    from recorder.record.proxy.server import parse_listen, serve
    from recorder.replay.rerecord import keep_recorded_values

    # no caller, thread or process lookups for the log records, which do not show them
    # (the documented optimizations of the logging module: ~25% of a line per exchange)
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("recorder record: %(message)s"))
    # (the proxy's and its transport's, `recorder.record.transport`)
    proxy_log = logging.getLogger("recorder.record")
    proxy_log.addHandler(handler)
    proxy_log.setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)
    try:
        host, port = parse_listen(listen)
        from recorder.rules.ruleset import load_rules

        loaded = load_rules(rules)
        if scenario is not None:
            try:
                slugify(scenario)
            except ValueError as exc:
                fail("record", f"--scenario: {exc}")

        def keep(previous: Transcript, fresh: Transcript) -> Transcript:
            return keep_recorded_values(previous, fresh, loaded)

        proxy = create_proxy_app(
            upstream,
            out=Path(out),
            timeout=httpx.Timeout(30.0, connect=5.0, read=timeout),
            max_body=max_body * 1024 * 1024,
            fsync=fsync,
            stream_grace=stream_grace,
            client_timeout=client_timeout,
            rules=loaded,
            secret_headers=loaded.secret_headers,
            secret_fields=loaded.secret_fields,
            mode=mode,
            keep=keep,
            push_loopback=push_loopback,
            push_receiver=push_receiver_url,
        )
        proxy.scenario = scenario
        _add_downstreams(proxy, downstreams)
        max_message = grpc_max_message * 1024 * 1024 if grpc_max_message else None
        _listen_grpc(proxy, upstream, host, port, grpc_listen, max_message)
        serve(proxy, host=host, port=port, announce=_status, keep_alive=keep_alive)
    except (ValueError, RecorderError) as exc:
        fail("record", str(exc))
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        fail("record", f"{where}{exc.strerror or exc}")
    finally:
        # a second `record` in one process (tests) must not log twice, nor to a closed stderr
        proxy_log.removeHandler(handler)
    for path, changed in proxy.replaced.items():
        _status(f"{path} recorded again in place ({'changed' if changed else 'unchanged'})")
    if proxy.kept:
        _status(f"{plural(proxy.kept, 'exchange')} not recorded: --mode once kept their files")
    if proxy.push.refused:
        refused = plural(
            proxy.push.refused,
            "push registration or delivery",
            "push registrations or deliveries",
        )
        _status(f"{refused} refused (see above)")
    if proxy.not_recorded:
        # each one was logged above with its reason; the clients got the agent's replies
        fail(
            "record",
            f"{plural(proxy.recorded, 'exchange')} recorded, {proxy.not_recorded} not recorded "
            "(see above)",
            code=1,
        )


def _add_downstreams(proxy: RecordingProxy, specs: tuple[str, ...]) -> None:
    """A listener per --downstream NAME=URL@[HOST:]PORT."""
    from recorder.record.proxy import parse_downstream
    from recorder.servers import listen_problem

    for spec in specs:
        try:
            name, url, host, port = parse_downstream(spec)
            proxy.add_downstream(name, url, host, port)
        except ValueError as exc:
            fail("record", f"--downstream: {exc}")
        except OSError as exc:
            fail("record", f"--downstream {spec}: {listen_problem(host, port, exc)}")


def _listen_grpc(
    proxy: RecordingProxy,
    upstream: str,
    host: str,
    port: int,
    grpc_listen: str | None,
    max_message: int | None,
) -> None:
    """Add the gRPC listener when the card lists a GRPC interface, or --grpc-listen asks
    (its agent address then learned from the first card relayed, if the card cannot be
    fetched now)."""
    from recorder.record.grpc_proxy import card_grpc_interface
    from recorder.record.proxy.server import parse_listen

    agent = card_grpc_interface(upstream)
    if grpc_listen is None and agent is None:
        return
    if grpc_listen is not None:
        try:
            grpc_host, grpc_port = parse_listen(grpc_listen)
        except ValueError as exc:
            fail("record", f"--grpc-listen: {exc}")
    else:
        grpc_host, grpc_port = host, _next_port(port, upstream, agent)
    try:
        proxy.listen_grpc(grpc_host, grpc_port, agent, max_message=max_message)
    except RecorderError as exc:
        if grpc_listen is not None:
            fail("record", f"--grpc-listen {grpc_listen}: {exc}")
        click.echo(
            f"recorder record: warning: the agent's card lists a GRPC interface at {agent}: "
            f"not proxied ({exc}); calls there are NOT recorded",
            err=True,
        )
        return


def _next_port(port: int, upstream: str, agent: str | None) -> int:
    """The gRPC listener's default port: the --listen port + 1, or the next one after it that
    is not one of the agent's own (in front of the kit, 41241 + 1 is its HTTP port, + 2 its
    gRPC port: 41244); 0 (any free) with --listen port 0."""
    if not port:
        return 0
    import urllib.parse

    from recorder.record.cards import grpc_address

    taken = {urllib.parse.urlsplit(upstream).port}
    found = grpc_address(agent) if agent else None
    if found is not None:
        taken.add(found[1])
    candidate = port + 1
    while candidate in taken and candidate < 65535:
        candidate += 1
    return candidate


def _status(line: str) -> None:
    """Status and progress go to stderr (stdout is for results; `record` has none)."""
    click.echo(f"recorder record: {line}", err=True)
