"""`recorder kit`: run the reference code-reviewer agent in the foreground."""

from __future__ import annotations

import os
import socket

import click


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
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option(
    "--port",
    default=41242,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port (0: any free).",
)
@click.option(
    "--grpc-port",
    default=None,
    type=click.IntRange(0, 65535),
    help="Port of the gRPC binding (0: any free) [default: the HTTP port + 1; any free with "
    "--port 0].",
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
    default="warning",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    help="Log level of the server (uvicorn). The SDK's per-request warnings about client "
    "errors show from 'info' down.",
)
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
def kit(
    host: str,
    port: int,
    grpc_port: int | None,
    serve_grpc: bool,
    token: str | None,
    log_level: str,
    vary: int | None,
) -> None:
    """Run the code-reviewer A2A agent (a2a-sdk) until Ctrl-C.

    JSON-RPC at /a2a/jsonrpc, HTTP+JSON under /a2a/rest, gRPC (lf.a2a.v1.A2AService) on
    --grpc-port, the card at /.well-known/agent-card.json. Every HTTP request needs the
    header A2A-Version: 1.0.
    """
    import logging

    import uvicorn

    from recorder.bindings.grpc import MISSING
    from recorder.cli import fail, warn
    from recorder.kit import DEFAULT_TOKEN, create_app
    from recorder.kit.grpc_server import grpc_available
    from recorder.kit.serve import public_base_url
    from recorder.servers import bind_socket, listen_problem, quiet_shutdown

    try:
        sock = bind_socket(host, port)
    except (OSError, OverflowError) as error:
        fail("kit", listen_problem(host, port, error))
    bound_port = int(sock.getsockname()[1])
    base_url = public_base_url(host, bound_port)
    if not serve_grpc:
        grpc_port = None
    elif not grpc_available():
        if grpc_port is not None:  # asked for: an error, not a kit without it
            sock.close()
            fail("kit", f"--grpc-port {grpc_port}: {MISSING}")
        warn("kit", f"no gRPC binding: {MISSING}")
    else:
        grpc_port = _grpc_port(host, bound_port if port else 0, grpc_port, sock)
    from recorder.kit.wording import Wording

    wording = None if vary is None else Wording(None if vary < 0 else vary)
    shown_host = f"[{host}]" if ":" in host else host
    started: list[bool] = []

    def banner(grpc_address: str | None) -> None:
        # (printed once the gRPC port is bound: the app's startup, before the first request)
        started.append(True)
        click.echo(f"code-reviewer listening on http://{shown_host}:{bound_port}")
        click.echo(f"  agent card  {base_url}/.well-known/agent-card.json")
        click.echo(f"  JSON-RPC    {base_url}/a2a/jsonrpc")
        click.echo(f"  HTTP+JSON   {base_url}/a2a/rest")
        if grpc_address is not None:
            click.echo(f"  gRPC        {grpc_address}")
        click.echo("Press Ctrl-C to stop.")

    app = create_app(
        base_url,
        token=token or os.environ.get("RECORDER_KIT_TOKEN") or DEFAULT_TOKEN,
        grpc_port=grpc_port,
        grpc_host=host,
        on_start=banner,
        wording=wording,
    )
    level = logging.getLevelName(log_level.upper())
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s", level=level)
    # The SDK logs every client error (-32001, -32602 ...) as a warning; the kit is made to
    # answer such requests, so by default only the SDK's errors reach the console.
    logging.getLogger("a2a").setLevel(level if level <= logging.INFO else logging.ERROR)
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level))
    quiet_shutdown(server)  # the streams open at Ctrl-C end without an ERROR line
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn has shut down already; it re-raises the Ctrl-C it captured
    finally:
        sock.close()
    if not started:  # the app's startup failed (uvicorn said why above)
        fail("kit", "the agent did not start", 1)
    click.echo("code-reviewer stopped.")


def _grpc_port(host: str, http_port: int, asked: int | None, sock: socket.socket) -> int:
    """The gRPC port to serve on: the one asked for, else the HTTP port + 1 (any free one
    when the HTTP port was any free one); a busy one is an error here, before the start."""
    from recorder.cli import fail
    from recorder.servers import bind_socket, listen_problem

    port = asked if asked is not None else (http_port + 1 if http_port else 0)
    if port == 0:
        return 0
    if port > 65535:
        fail("kit", f"no gRPC port after {http_port}: give one with --grpc-port")
    try:
        bind_socket(host, port).close()  # (a probe: the gRPC server binds it next)
    except (OSError, OverflowError) as error:
        sock.close()
        fail("kit", listen_problem(host, port, error) + " (gRPC: see --grpc-port)")
    return port
