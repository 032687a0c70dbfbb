"""The `recorder` command line: a click group whose subcommands load lazily.

Each subcommand lives in its own module under `recorder.cli` and holds no logic: it parses
options, calls one library function and prints. Loading lazily keeps `recorder check` and
`recorder --help` fast: the A2A SDK is imported only by the commands that need it.
"""

from __future__ import annotations

import importlib
import importlib.util

import click

# name -> "module:attribute" of a click command
_COMMANDS: dict[str, str] = {
    "check": "recorder.cli.check:check",
    "kit": "recorder.cli.kit:kit",
    "record": "recorder.cli.record:record",
    "play": "recorder.cli.play:play",
    "render": "recorder.cli.docs:render",
    "docs": "recorder.cli.docs:docs",
    "export": "recorder.cli.docs:export",
}


def _available(target: str) -> bool:
    module = target.partition(":")[0]
    return importlib.util.find_spec(module) is not None


class LazyGroup(click.Group):
    """A group that imports a subcommand's module only when that subcommand is used."""

    def invoke(self, ctx: click.Context) -> object:
        # Ctrl-C that a command does not handle itself (while its module loads, say) exits
        # 130 like any interrupted command, not 1 (click's "Aborted!"), which reads as "mismatch"
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("\nrecorder: interrupted", err=True)
            ctx.exit(130)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, target in _COMMANDS.items() if _available(target))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None or not _available(target):
            return None
        module_name, _, attribute = target.partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="recorder")
def main() -> None:
    """Record, replay and document A2A agent exchanges as .http transcripts."""
