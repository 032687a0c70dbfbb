"""`recorder kit`: run the reference code-reviewer agent in the foreground."""

from __future__ import annotations

import dataclasses
import os
import socket
from typing import TYPE_CHECKING, cast

import click

from recorder.cli.options import AliasedOption, quiet_option, verbose_option

# uvicorn's log levels, quietest first (-q: error; the default warning; -v info; -vv debug)
_LEVELS = ["critical", "error", "warning", "info", "debug"]

if TYPE_CHECKING:
    from recorder.kit.model import ModelWording


def _seed(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """`--vary` alone: a fresh wording sequence (-1 here); `--vary SEED`: a reproducible one."""
    if value is None or value == "":
        return None if value is None else -1
    try:
        seed = int(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a whole number (a seed)") from None
    if seed < 0:
        raise click.BadParameter(f"{seed} is negative: a seed is 0 or more")
    return seed


@click.command(short_help="Run the reference code-reviewer A2A agent.")
@click.option(
    "--listen",
    default=None,
    metavar="HOST:PORT",
    help="Where the kit listens (HOST:PORT, or a port; 0: any free port) "
    "[default: 127.0.0.1:41242].",
)
# the spellings before --listen, kept working (hidden: one spelling per idea in --help)
@click.option("--host", default=None, hidden=True)
@click.option("--port", default=None, hidden=True, type=click.IntRange(0, 65535))
@click.option(
    "--grpc-listen",
    "--grpc-port",
    "grpc_listen",
    cls=AliasedOption,
    aliases=("--grpc-port",),
    default=None,
    metavar="HOST:PORT",
    help="Where the gRPC binding listens (HOST:PORT, or a port on the --listen host; 0: any "
    "free port) [default: the HTTP port + 1; any free with --listen 0].",
)
@click.option(
    "--grpc/--no-grpc",
    "serve_grpc",
    default=True,
    show_default=True,
    help="Serve the gRPC binding (and list it in the card).",
)
@click.option(
    "--token",
    default=None,
    help="Bearer token for GetExtendedAgentCard [default: $RECORDER_KIT_TOKEN, else the demo "
    "token kit-demo-token].",
)
@click.option(
    "--log-level",
    default=None,
    type=click.Choice(_LEVELS),
    help="Log level of the server (uvicorn). The SDK's per-request warnings about client "
    "errors show from 'info' down.  [default: warning; error with -q, info with -v, debug "
    "with -vv]",
)
@quiet_option("No banner (where it listens) and no closing line: errors only.")
@verbose_option("Log every request (--log-level info); -vv: debug.")
@click.option(
    "--vary",
    "vary",
    metavar="[SEED]",
    is_flag=False,
    flag_value="",
    default=None,
    callback=_seed,
    help="Word every answer anew on each reply, facts kept, as a model-backed agent does "
    "(the review, the answers, the question for a file name); with SEED, the same sequence "
    "of wordings each start.",
)
@click.option(
    "--model",
    "model_url",
    metavar="URL",
    default=None,
    help="Word the review through a model: an OpenAI-compatible API's base URL (its "
    "POST URL/chat/completions; $OPENAI_API_KEY, when set, as its bearer token). A wording "
    "that drops a finding's file:line or [rule] is replaced by the kit's own text.",
)
@click.option(
    "--model-name",
    default="gpt-4o-mini",
    show_default=True,
    metavar="NAME",
    help="The model asked (with --model).",
)
@click.option(
    "--model-prompt",
    metavar="TEXT",
    default=None,
    help="The system prompt the review is worded with (with --model) [default: the kit's].",
)
@click.option(
    "--tools",
    "tools_url",
    metavar="URL",
    default=None,
    help="Ask an MCP server's 'findings' tool for the review's findings (Streamable HTTP "
    "endpoint, e.g. http://127.0.0.1:8931/mcp; with --model; needs the llm extra).",
)
def kit(
    listen: str | None,
    host: str | None,
    port: int | None,
    grpc_listen: str | None,
    serve_grpc: bool,
    token: str | None,
    log_level: str | None,
    quiet: bool,
    verbose: int,
    vary: int | None,
    model_url: str | None,
    model_name: str,
    model_prompt: str | None,
    tools_url: str | None,
) -> None:
    """Run the code-reviewer A2A agent (a2a-sdk) until Ctrl-C.

    JSON-RPC at /a2a/jsonrpc, HTTP+JSON under /a2a/rest, gRPC (lf.a2a.v1.A2AService) on
    --grpc-listen, the card at /.well-known/agent-card.json. Every HTTP request needs the
    header A2A-Version: 1.0.
    """
    import logging

    import uvicorn

    from recorder.bindings.grpc import MISSING
    from recorder.cli import fail, warn
    from recorder.extras import KIT_EXTRA, kit_sdk_problem

    problem = kit_sdk_problem()  # an older a2a-sdk imports, then fails inside the kit
    if problem is not None:
        fail("kit", problem)
    try:
        from recorder.kit import DEFAULT_TOKEN, create_app
        from recorder.kit.grpc_server import grpc_available
        from recorder.kit.serve import public_base_url
    except ImportError as exc:  # the core installed without the kit's server stack
        fail("kit", f"the bundled kit cannot start ({exc}): it needs {KIT_EXTRA}")
    from recorder.servers import SHUTDOWN_GRACE, bind_socket, listen_problem, quiet_shutdown

    host, port = _address(listen, host, port)
    try:
        sock = bind_socket(host, port)
    except (OSError, OverflowError) as error:
        fail("kit", listen_problem(host, port, error))
    bound_port = int(sock.getsockname()[1])
    base_url = public_base_url(host, bound_port)
    from recorder.kit.wording import Wording

    wording = None if vary is None else Wording(None if vary < 0 else vary)
    model = _model(model_url, model_name, tools_url, sock)
    if model is not None and model_prompt is not None:
        model = dataclasses.replace(model, prompt=model_prompt)
    grpc_host, grpc_port = host, None
    if not serve_grpc:
        pass
    elif not grpc_available():
        if grpc_listen is not None:  # asked for: an error, not a kit without it
            sock.close()
            fail("kit", f"--grpc-listen {grpc_listen}: {MISSING}")
        warn("kit", f"no gRPC binding: {MISSING}")
    else:
        grpc_host, asked = _grpc_address(grpc_listen, host, sock)
        grpc_port = _grpc_port(grpc_host, bound_port if port else 0, asked, sock)
    shown_host = f"[{host}]" if ":" in host else host
    started: list[bool] = []

    def banner(grpc_address: str | None) -> None:
        # (printed once the gRPC port is bound: the app's startup, before the first request)
        started.append(True)
        if quiet:
            return
        click.echo(f"code-reviewer listening on http://{shown_host}:{bound_port}")
        click.echo(f"  agent card  {base_url}/.well-known/agent-card.json")
        click.echo(f"  JSON-RPC    {base_url}/a2a/jsonrpc")
        click.echo(f"  HTTP+JSON   {base_url}/a2a/rest")
        if grpc_address is not None:
            click.echo(f"  gRPC        {grpc_address}")
        if model is not None:
            click.echo(f"  model       {model.url} ({model.model_name})")
            if model.tools_url is not None:
                click.echo(f"  tools       {model.tools_url}")
        click.echo("Press Ctrl-C to stop.")

    app = create_app(
        base_url,
        token=token or os.environ.get("RECORDER_KIT_TOKEN") or DEFAULT_TOKEN,
        wording=wording,
        model=model,
        grpc_port=grpc_port,
        grpc_host=grpc_host,
        on_start=banner,
    )
    if log_level is None:  # (an explicit --log-level wins over -q/-v)
        log_level = "error" if quiet else _LEVELS[min(2 + verbose, len(_LEVELS) - 1)]
    level = logging.getLevelName(log_level.upper())
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s", level=level)
    # The SDK logs every client error (-32001, -32602 ...) as a warning; the kit is made to
    # answer such requests, so by default only the SDK's errors reach the console.
    logging.getLogger("a2a").setLevel(level if level <= logging.INFO else logging.ERROR)
    # a call still open at Ctrl-C (a slow review's blocking SendMessage, an event stream) is
    # cut after SHUTDOWN_GRACE, not waited for: the kit stops in well under a second (uvicorn
    # types the option int, but hands it to asyncio.wait_for, which takes any seconds)
    grace = cast(int, SHUTDOWN_GRACE)
    config = uvicorn.Config(app, log_level=log_level, timeout_graceful_shutdown=grace)
    server = uvicorn.Server(config)
    quiet_shutdown(server)  # the streams open at Ctrl-C end without an ERROR line
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn has shut down already; it re-raises the Ctrl-C it captured
    finally:
        sock.close()
    if not started:  # the app's startup failed (uvicorn said why above)
        fail("kit", "the agent did not start", 1)
    if not quiet:
        click.echo("code-reviewer stopped.")


def _model(
    model_url: str | None, model_name: str, tools_url: str | None, sock: socket.socket
) -> ModelWording | None:
    """--model, --model-name and --tools checked: the review's wording, or None."""
    from recorder.cli import fail
    from recorder.kit.model import ModelWording

    for option, url in (("--model", model_url), ("--tools", tools_url)):
        if url is not None and not url.startswith(("http://", "https://")):
            sock.close()
            fail("kit", f"{option} {url}: expected an http:// or https:// URL")
    if model_url is None:
        if tools_url is not None:
            sock.close()
            fail("kit", "--tools asks a tool for the findings that --model words: give --model")
        return None
    return ModelWording(model_url, model_name, tools_url)


def _grpc_port(host: str, http_port: int, asked: int | None, sock: socket.socket) -> int:
    """The gRPC port to serve on: the one asked for, else the HTTP port + 1 (any free one
    when the HTTP port was any free one); a busy one is an error here, before the start."""
    from recorder.cli import fail
    from recorder.servers import bind_socket, listen_problem

    port = asked if asked is not None else (http_port + 1 if http_port else 0)
    if port == 0:
        return 0
    if port > 65535:
        fail("kit", f"no gRPC port after {http_port}: give one with --grpc-listen")
    try:
        bind_socket(host, port).close()  # (a probe: the gRPC server binds it next)
    except (OSError, OverflowError) as error:
        sock.close()
        fail("kit", listen_problem(host, port, error) + " (gRPC: see --grpc-listen)")
    return port


def _grpc_address(
    grpc_listen: str | None, host: str, sock: socket.socket
) -> tuple[str, int | None]:
    """The gRPC host and the port asked for (None: the default): `--grpc-listen HOST:PORT`,
    or a port alone on the kit's own host (what the old `--grpc-port N` meant)."""
    from recorder.cli import fail
    from recorder.servers import parse_listen

    if grpc_listen is None:
        return host, None
    try:
        grpc_host, grpc_port = parse_listen(grpc_listen)
    except ValueError as exc:
        sock.close()
        fail("kit", f"--grpc-listen: {exc}")
    return (host if grpc_listen.strip().isdigit() else grpc_host), grpc_port


def _address(listen: str | None, host: str | None, port: int | None) -> tuple[str, int]:
    """The host and port to bind: --listen, else the old --host/--port, else the default."""
    from recorder.cli import fail
    from recorder.servers import parse_listen

    if listen is not None and (host is not None or port is not None):
        fail("kit", "--listen HOST:PORT replaces --host and --port: give one or the other")
    if listen is None:
        return host or "127.0.0.1", 41242 if port is None else port
    try:
        return parse_listen(listen)
    except ValueError as exc:
        fail("kit", f"--listen: {exc}")
