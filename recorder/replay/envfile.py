"""Variables for `{{NAME}}` placeholders from the command line: `--var NAME=VALUE` and
`--env-file FILE` (dotenv), over the environment (`--var` > `--env-file` > environment).

A dotenv file holds `NAME=VALUE` lines: blank lines and `#` comments are skipped, an
`export ` prefix is allowed, a value may be quoted ('single': as written; "double": with
`\\n`, `\\t`, `\\"` and `\\\\` escapes), an unquoted value ends at ` #` (a comment) and is
stripped. Anything else is an `EnvFileError` naming `file:line`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from recorder.errors import RecorderError

__all__ = ["EnvFileError", "merge_variables", "parse_env_file", "parse_var"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "$": "$"}


class EnvFileError(RecorderError):
    """A line of an env file that is not `NAME=VALUE`."""


def parse_var(text: str) -> tuple[str, str]:
    """`NAME=VALUE` -> (NAME, VALUE); ValueError when it is not that."""
    name, equals, value = text.partition("=")
    name = name.strip()
    if not equals or not _NAME.match(name):
        raise ValueError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def parse_env_file(text: str, path: str) -> dict[str, str]:
    """The variables of a dotenv file's `text` (later lines win)."""
    variables: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export ") or line.startswith("export\t"):
            line = line[len("export") :].lstrip()
        name, equals, rest = line.partition("=")
        name = name.strip()
        if not equals:
            raise EnvFileError(f"{path}:{number}: expected NAME=VALUE, got {raw.strip()!r}")
        if not _NAME.match(name):
            raise EnvFileError(f"{path}:{number}: {name!r} is not a variable name")
        try:
            variables[name] = _value(rest.strip())
        except ValueError as exc:
            raise EnvFileError(f"{path}:{number}: {exc}") from None
    return variables


def _value(text: str) -> str:
    if text[:1] in ("'", '"'):
        quote = text[0]
        end = _closing(text, quote)
        if end is None:
            raise ValueError(f"the value has no closing {quote}")
        after = text[end + 1 :].strip()
        if after and not after.startswith("#"):
            raise ValueError(f"unexpected text after the closing {quote}: {after!r}")
        inner = text[1:end]
        if quote == "'":
            return inner
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group()), inner)
    value, _, _ = text.partition(" #")
    return value.strip()


def _closing(text: str, quote: str) -> int | None:
    position = 1
    while position < len(text):
        char = text[position]
        if char == "\\" and quote == '"':
            position += 2
            continue
        if char == quote:
            return position
        position += 1
    return None


def merge_variables(
    environ: Mapping[str, str], env_files: Iterable[Mapping[str, str]], variables: Mapping[str, str]
) -> dict[str, str]:
    """The variables a run fills placeholders from: the environment, each env file over it,
    the `--var`s over all."""
    merged = dict(environ)
    for values in env_files:
        merged.update(values)
    merged.update(variables)
    return merged
