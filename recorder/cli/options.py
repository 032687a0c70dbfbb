"""Option spellings shared by the commands: one name per idea, the old names kept as aliases.

- the agent is `--agent URL` in every command (`record --upstream` and `export --base-url`
  still work), its gRPC address `--grpc-agent HOST:PORT`;
- a listening address is `--listen HOST:PORT`, a gRPC one `--grpc-listen HOST:PORT`
  (`kit --host/--port/--grpc-port` still work);
- where a command writes its product is `-o/--output` (`record --out`, `serve --record-new`
  still work); a report beside it is `--<format>-report FILE` (`play --junit-report`,
  `--json-report`; `--junit-xml`, `--report-json` still work);
- how much is said is `-q/--quiet` (errors and the result only) and `-v/--verbose` (more) on
  every command.

An alias is accepted where it used to be but not shown in `--help`, so the help teaches one
spelling.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

_F = TypeVar("_F", bound=Callable[..., Any])

__all__ = ["AliasedOption", "quiet_option", "transcripts_output_option", "verbose_option"]


class AliasedOption(click.Option):
    """A click option whose `aliases` (some of its option names) work but are not in --help.

    `@click.option("--agent", "--upstream", cls=AliasedOption, aliases=("--upstream",))`:
    both spellings set the same parameter; the help line names `--agent` only.
    """

    def __init__(self, *args: Any, aliases: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        unknown = set(aliases) - set(self.opts) - set(self.secondary_opts)
        if unknown:
            raise ValueError(f"aliases that are not option names: {sorted(unknown)}")
        self.aliases = tuple(aliases)

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        shown = [opt for opt in self.opts if opt not in self.aliases]
        hidden, self.opts = self.opts, shown or self.opts
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = hidden

    def get_error_hint(self, ctx: click.Context | None) -> str:
        """`'--agent'`, not `'--agent' / '--upstream'`, in a usage error."""
        shown = [opt for opt in self.opts if opt not in self.aliases]
        hidden, self.opts = self.opts, shown or self.opts
        try:
            return super().get_error_hint(ctx)
        finally:
            self.opts = hidden


def quiet_option(help: str) -> Callable[[_F], _F]:
    """`-q/--quiet`, a flag, with what it leaves out in this command (`help`)."""
    return click.option("-q", "--quiet", is_flag=True, help=help)


def verbose_option(help: str) -> Callable[[_F], _F]:
    """`-v/--verbose`, counted (`-vv` is 2), with what it adds in this command (`help`)."""
    return click.option("-v", "--verbose", count=True, help=help)


def transcripts_output_option() -> Callable[[_F], _F]:
    """`-o/--output DIRECTORY` (`--out` still works): the folder a command writes its
    transcripts into, numbering on after the highest (`record`, `import`)."""
    return click.option(
        "-o",
        "--output",
        "--out",
        "out",
        cls=AliasedOption,
        aliases=("--out",),
        default="transcripts/",
        show_default=True,
        metavar="DIRECTORY",
        type=click.Path(file_okay=False),
        help="Folder of the NN-slug.http transcripts (numbering continues after the highest).",
    )
