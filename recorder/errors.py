"""The exception tree.

    RecorderError            anything recorder raises on broken input or a broken environment
     ├── ParseError          a transcript that is not valid .http (has .path and .line)
     ├── RulesError          a rules file that is not valid (the message names file and key)
     ├── HarError            a HAR file that cannot be imported (has .path and .where)
     └── UpstreamError       an agent that cannot be reached (refused, timed out, reset)
          └── NoReplyError   an agent reached that sent no whole reply (too slow, dropped)

A mismatch between a recorded and a live reply is a result, not an exception.
"""

from __future__ import annotations


class RecorderError(Exception):
    """Base class of every error recorder raises on purpose."""


class ParseError(RecorderError):
    """A transcript is not valid: `path:line: message`."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        self.message = message
        self.path = path
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path or "<string>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.message}"

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_parse_error, (self.message, self.path, self.line))


def _rebuild_parse_error(message: str, path: str | None, line: int | None) -> ParseError:
    return ParseError(message, path=path, line=line)


class RulesError(RecorderError):
    """A rules file (YAML) is not valid."""


class HarError(RecorderError):
    """A HAR file that cannot be read or imported: `path: $.log.entries[3].request.url:
    message` (`where`: the JSON path of the value at fault, or `line:column` of a JSON
    syntax error)."""

    def __init__(self, message: str, *, path: str | None = None, where: str = "$") -> None:
        self.message = message
        self.path = path
        self.where = where
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.path or '<string>'}: {self.where}: {self.message}"

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_har_error, (self.message, self.path, self.where))


def _rebuild_har_error(message: str, path: str | None, where: str) -> HarError:
    return HarError(message, path=path, where=where)


class UpstreamError(RecorderError):
    """The agent could not be reached."""


class NoReplyError(UpstreamError):
    """The agent was reached, but no whole reply came: too slow, or the connection dropped.

    The player records it as the exchange's error and goes on with the next file (the rest
    of this one needs this reply's ids); an agent that cannot be reached at all stops the run.
    """
