"""`recorder record`: run the recording reverse proxy."""

from __future__ import annotations

import importlib
import importlib.util
import logging
from pathlib import Path
from typing import Any

import click

from recorder.errors import RecorderError


def _secret_names(rules_path: str | None) -> dict[str, Any]:
    """secret_headers / secret_fields from the rules file (recorder.rules), if any."""
    if importlib.util.find_spec("recorder.rules") is None:
        if rules_path is not None:
            raise click.UsageError("--rules needs recorder.rules, which this build does not have")
        return {}
    rules = importlib.import_module("recorder.rules").load_rules(rules_path)
    names: dict[str, Any] = {}
    for name in ("secret_headers", "secret_fields"):
        value = getattr(rules, name, None)
        if value is not None:
            names[name] = value
    return names


@click.command(short_help="Record the traffic to an agent as .http transcripts.")
@click.option("--upstream", required=True, help="The agent to record, e.g. http://localhost:41242")
@click.option(
    "--listen",
    default="127.0.0.1:41241",
    show_default=True,
    help="Where the proxy listens (HOST:PORT; loopback unless you say otherwise).",
)
@click.option(
    "--out",
    default="transcripts/",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder of the NN-slug.http transcripts (numbering continues after the highest).",
)
@click.option("--rules", type=click.Path(dir_okay=False), help="Rules file (YAML): secrets.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True, max=86400),
    default=60.0,
    show_default=True,
    help="Upstream read timeout, seconds.",
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
def record(
    upstream: str,
    listen: str,
    out: str,
    rules: str | None,
    timeout: float,
    max_body: int,
    fsync: bool,
) -> None:
    """Record every exchange between clients and the agent at UPSTREAM.

    Point clients at the proxy instead of the agent. Name a scenario with the request header
    `Recorder-Scenario: <name>` (or POST {"name": ...} to /_recorder/scenario): its exchanges go
    to one file. Agent cards are rewritten for the client so that every call goes through.
    """
    import httpx

    from recorder.record.proxy import create_proxy_app, parse_listen, serve

    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("recorder: %(message)s"))
    proxy_log = logging.getLogger("recorder.record.proxy")
    proxy_log.addHandler(handler)
    proxy_log.setLevel(logging.INFO)
    try:
        host, port = parse_listen(listen)
        names = _secret_names(rules)
        proxy = create_proxy_app(
            upstream,
            out=Path(out),
            timeout=httpx.Timeout(30.0, connect=5.0, read=timeout),
            max_body=max_body * 1024 * 1024,
            fsync=fsync,
            **names,
        )
        serve(proxy, host=host, port=port, announce=click.echo)
    except (ValueError, RecorderError, OSError) as exc:
        click.echo(f"recorder record: {exc}", err=True)
        raise SystemExit(2) from None
    finally:
        # a second `record` in one process (tests) must not log twice, nor to a closed stderr
        proxy_log.removeHandler(handler)
