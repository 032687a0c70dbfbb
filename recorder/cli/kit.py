"""`recorder kit`: run the reference code-reviewer agent in the foreground."""

from __future__ import annotations

import os
from typing import cast

import click


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
def kit(
    listen: str | None, host: str | None, port: int | None, token: str | None, log_level: str
) -> None:
    """Run the code-reviewer A2A agent (a2a-sdk) until Ctrl-C.

    JSON-RPC at /a2a/jsonrpc, HTTP+JSON under /a2a/rest, the card at
    /.well-known/agent-card.json. Every request needs the header A2A-Version: 1.0.
    """
    import logging

    import uvicorn

    from recorder.cli import fail

    try:
        from recorder.kit import DEFAULT_TOKEN, create_app
        from recorder.kit.serve import public_base_url
    except ImportError as exc:  # the core installed without the kit's server stack
        fail(
            "kit", f"the bundled kit cannot start ({exc}): it needs pip install 'a2a-recorder[kit]'"
        )
    from recorder.servers import SHUTDOWN_GRACE, bind_socket, listen_problem, quiet_shutdown

    host, port = _address(listen, host, port)
    try:
        sock = bind_socket(host, port)
    except (OSError, OverflowError) as error:
        fail("kit", listen_problem(host, port, error))
    bound_port = int(sock.getsockname()[1])
    base_url = public_base_url(host, bound_port)
    app = create_app(base_url, token=token or os.environ.get("RECORDER_KIT_TOKEN") or DEFAULT_TOKEN)
    shown_host = f"[{host}]" if ":" in host else host
    click.echo(f"code-reviewer listening on http://{shown_host}:{bound_port}")
    click.echo(f"  agent card  {base_url}/.well-known/agent-card.json")
    click.echo(f"  JSON-RPC    {base_url}/a2a/jsonrpc")
    click.echo(f"  HTTP+JSON   {base_url}/a2a/rest")
    click.echo("Press Ctrl-C to stop.")
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
    click.echo("code-reviewer stopped.")


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
