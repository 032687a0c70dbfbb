"""The `recorder` command line: a click group whose subcommands load lazily.

Each subcommand lives in its own module under `recorder.cli` and holds no logic: it parses
options, calls one library function and prints. Loading lazily keeps `recorder check` and
`recorder --help` fast: the A2A SDK is imported only by the commands that need it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any, NoReturn

import click

__all__ = ["fail", "main", "plural", "warn"]

# grpcio's core logs a connection's end at INFO on stderr (a GOAWAY when an agent stops, say):
# not the recorder's output. Set before grpc is first imported; a user's own setting wins.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


def fail(command: str, message: str, code: int = 2) -> NoReturn:
    """Print `recorder <command>: <message>` on stderr and exit `code` (2: usage or input)."""
    click.echo(f"recorder {command}: {message}", err=True)
    raise SystemExit(code)


def warn(command: str, message: str) -> None:
    """Print `recorder <command>: warning: <message>` on stderr; the exit status is unchanged."""
    click.echo(f"recorder {command}: warning: {message}", err=True)


def plural(count: int, word: str, words: str | None = None) -> str:
    """`1 file`, `2 files`, `0 files` (`words`: an irregular plural)."""
    return f"{count} {word if count == 1 else (words or word + 's')}"


def _command_path(ctx: click.Context | None) -> str:
    """`recorder docs check` for a context, whatever the program was called (tests: `main`)."""
    names: list[str] = []
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(["recorder", *reversed(names)])


def _show_usage_error(exc: click.UsageError) -> None:
    """`recorder check: Missing argument 'PATHS...'.` then the usage line and the help hint."""
    ctx = exc.ctx
    path = _command_path(ctx)
    click.echo(f"{path}: {exc.format_message()}", err=True)
    if ctx is not None:
        pieces = " ".join(ctx.command.collect_usage_pieces(ctx))
        click.echo(f"Usage: {path} {pieces}".rstrip(), err=True)
        click.echo(f"Try '{path} --help' for help.", err=True)


# name -> "module:attribute" of a click command
_COMMANDS: dict[str, str] = {
    "check": "recorder.cli.check:check",
    "kit": "recorder.cli.kit:kit",
    "record": "recorder.cli.record:record",
    "play": "recorder.cli.play:play",
    "render": "recorder.cli.docs:render",
    "docs": "recorder.cli.docs:docs",
    "export": "recorder.cli.docs:export",
    "import": "recorder.cli.har:import_har_file",
    "rules": "recorder.cli.rules:rules",
    "serve": "recorder.cli.serve:serve",
    "learn": "recorder.cli.learn:learn",
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
            name = " ".join(["recorder", *filter(None, [ctx.invoked_subcommand])])
            click.echo(f"\n{name}: interrupted", err=True)
            ctx.exit(130)

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """click's main, but its errors in the recorder's style: `recorder <command>: ...` on
        stderr; usage errors exit 2, Ctrl-C 130."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            result = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            _show_usage_error(exc)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            click.echo(f"{_command_path(None)}: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("recorder: interrupted", err=True)
            sys.exit(130)
        # (standalone_mode=False returns the code of a ctx.exit(), else the command's value)
        sys.exit(result if isinstance(result, int) else 0)

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
@click.version_option(package_name="a2a-recorder")
def main() -> None:
    """Record, replay and document A2A agent exchanges as .http transcripts."""
