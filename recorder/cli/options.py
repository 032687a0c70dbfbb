"""Option spellings shared by the commands: one name per idea, the old names kept as aliases.

The agent is `--agent` in every command (`record --upstream` and `export --base-url` still
work), a listening address is `--listen HOST:PORT` (`kit --host/--port` still work). An alias
is accepted where it used to be but not shown in `--help`, so the help teaches one spelling.
"""

from __future__ import annotations

from typing import Any

import click

__all__ = ["AliasedOption"]


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
