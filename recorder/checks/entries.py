"""The `checks` key of a rules file: places whose value is checked, not compared for equality.

    checks:
      - path: "$.result.task.artifacts[*].parts[*].text"   # JSONPath into a reply (a frame)
        in: "03-review-task.http#1"      # optional: "*", "FILE" (a glob), "FILE#N", or a list
        assert:
          - contains_all: ["src/payments.py:12", "[todo]"]
          - length: {min: 80}
          - similar: 0.6

`read_checks` turns the key's list into `CheckEntry` values (each `Check` read by its type in
`recorder.checks.CHECKS`), raising `CheckRulesError` with the key of the item at fault
(`checks[0].assert[1]`) for the rules loader to put at its line. A user file's checks are
added to the defaults' (which have none). `CheckEntry.applies` says whether an entry applies to
an exchange of a file; the player asks once per file (`entries_for_file`) so a file no check
names pays nothing.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from recorder.bindings import jsonrpc
from recorder.checks.vocabulary import CHECKS, TEXT_OPTIONS, Check, CheckOptionError, json_schema
from recorder.jsonpath import JsonPathError, parse_path

__all__ = [
    "CheckEntry",
    "CheckRulesError",
    "Scope",
    "check_warnings",
    "entries_for_file",
    "read_checks",
]


class CheckRulesError(ValueError):
    """`key` (`checks[0].assert[1]`) and what is wrong with it."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


@dataclass(frozen=True)
class Scope:
    """One `in` string: a file name glob, and an exchange number (1-based) or None (all)."""

    file: str
    exchange: int | None = None

    def matches_file(self, name: str) -> bool:
        return self.file == "*" or fnmatch.fnmatchcase(name, self.file)

    def __str__(self) -> str:
        return self.file if self.exchange is None else f"{self.file}#{self.exchange}"


@dataclass(frozen=True)
class CheckEntry:
    """A place (`path`) and the checks that must hold there, where `scopes` say (none: all)."""

    path: str
    checks: tuple[Check, ...]
    scopes: tuple[Scope, ...] = ()
    source: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)

    def applies(self, file: str, exchange: int | None) -> bool:
        """Whether the entry applies to exchange `exchange` (1-based; None: any) of the file
        named `file` (a path: its last part is matched)."""
        if not self.scopes:
            return True
        name = os.path.basename(file)
        return any(
            scope.matches_file(name)
            and (scope.exchange is None or exchange is None or scope.exchange == exchange)
            for scope in self.scopes
        )


def entries_for_file(entries: Sequence[CheckEntry], file: str) -> tuple[CheckEntry, ...]:
    """The entries that apply to some exchange of the file at `file`."""
    return tuple(entry for entry in entries if entry.applies(file, None))


# a JSON-RPC request's own members: no reply has them
_CLIENT_PATH = jsonrpc.client_member_path()


def check_warnings(entries: Sequence[CheckEntry]) -> list[tuple[int | None, str]]:
    """(line, why) for each check entry that can never apply: its path names what only a
    request holds (`$.params...`: checks look at replies)."""
    return [
        (
            entry.line,
            f"checks: {entry.path!r} can never apply: it names what only a JSON-RPC request"
            " holds (jsonrpc, method, params), and checks look at replies",
        )
        for entry in entries
        if _CLIENT_PATH.match(entry.path)
    ]


def read_checks(
    value: Any, source: str | None, lines: Mapping[str, int] | None = None
) -> tuple[CheckEntry, ...]:
    """The `checks` key's list read; `source` (the rules file) resolves `schema_file` and a
    judge command's folder; `lines` (`checks[0].assert[1]` -> line) gives entries theirs.
    Raises CheckRulesError."""
    if not isinstance(value, list):
        raise CheckRulesError(
            "checks", f"expected a list of {{path, assert}} items, got {_kind(value)}"
        )
    lines = lines or {}
    folder = os.path.dirname(os.path.abspath(source)) if source else None
    entries = []
    for n, item in enumerate(value):
        key = f"checks[{n}]"
        if not isinstance(item, Mapping):
            raise CheckRulesError(
                key, f"expected a mapping with path and assert, got {_kind(item)}"
            )
        unknown = sorted(str(k) for k in item if k not in ("path", "in", "assert", "comment"))
        if unknown:
            raise CheckRulesError(
                f"{key}.{unknown[0]}", "unknown key (known: path, in, assert, comment)"
            )
        path = item.get("path")
        if not isinstance(path, str):
            raise CheckRulesError(f"{key}.path", f"expected a JSONPath string, got {_kind(path)}")
        try:
            parse_path(path)
        except JsonPathError as exc:
            raise CheckRulesError(f"{key}.path", f"bad path {path!r}: {exc}") from None
        scopes = _scopes(f"{key}.in", item.get("in"))
        checks = item.get("assert")
        if not isinstance(checks, list) or not checks:
            raise CheckRulesError(
                f"{key}.assert", f"expected a list of one or more checks, got {_kind(checks)}"
            )
        read = tuple(
            _check(f"{key}.assert[{m}]", one, source, lines.get(f"{key}.assert[{m}]"), folder)
            for m, one in enumerate(checks)
        )
        entries.append(CheckEntry(path, read, scopes, source, lines.get(key)))
    return tuple(entries)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    text = json.dumps(value, default=str)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:39] + '…'}"


def _scopes(key: str, value: Any) -> tuple[Scope, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    if not items:
        raise CheckRulesError(key, 'expected "*", "FILE", "FILE#N" or a list of them, got []')
    scopes = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise CheckRulesError(
                key, f'expected "*", "FILE", "FILE#N" or a list of them, got {_kind(item)}'
            )
        file, hash_sign, number = item.partition("#")
        if "/" in file or "\\" in file:
            raise CheckRulesError(
                key, f"{item!r}: name the transcript by its file name (a glob), not a path"
            )
        if not file:
            raise CheckRulesError(key, f"{item!r}: the file name is missing before #")
        exchange = None
        if hash_sign:
            if not number.isdigit() or int(number) < 1:
                raise CheckRulesError(
                    key, f"{item!r}: after # comes an exchange number (1, 2 …), got {number!r}"
                )
            exchange = int(number)
        if item == "*":
            return ()
        scopes.append(Scope(file, exchange))
    return tuple(scopes)


def _check(key: str, item: Any, source: str | None, line: int | None, folder: str | None) -> Check:
    if not isinstance(item, Mapping):
        raise CheckRulesError(
            key, f"expected a mapping such as {{contains: TEXT}}, got {_kind(item)}"
        )
    names = [str(k) for k in item if k not in TEXT_OPTIONS]
    if len(names) != 1:
        given = f"{', '.join(names)}" if names else "none"
        raise CheckRulesError(key, f"expected one check name in each item, got {given}")
    name = names[0]
    check_type = CHECKS.get(name)
    if check_type is None:
        close = difflib.get_close_matches(name, list(CHECKS), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise CheckRulesError(
            key, f"unknown check {name!r}{hint}; checks: {', '.join(sorted(CHECKS))}"
        )
    ignore_case = item.get("ignore_case", False)
    if not isinstance(ignore_case, bool):
        raise CheckRulesError(
            f"{key}.ignore_case", f"expected true or false, got {_kind(ignore_case)}"
        )
    if ignore_case and not check_type.folds_case:
        raise CheckRulesError(f"{key}.ignore_case", f"{name} does not take ignore_case")
    comment = item.get("comment")
    if comment is not None and not isinstance(comment, str):
        raise CheckRulesError(f"{key}.comment", f"expected text, got {_kind(comment)}")
    options = item[name]
    try:
        if name == "json" and isinstance(options, Mapping) and "schema_file" in options:
            value: Any = _schema_file(options, folder)
        elif name == "language":
            value = _language(check_type.parse(options))
        else:
            value = check_type.parse(options)
    except CheckOptionError as exc:
        raise CheckRulesError(f"{key}.{name}", str(exc)) from None
    if name == "judge" and hasattr(value, "folder"):  # (a model judge has none)
        value = replace(value, folder=folder)  # (a command runs there; a module imports from it)
    return Check(name, value, ignore_case, comment, source, line)


def _language(code: str) -> str:
    from recorder.checks.language import LANGUAGE_MISSING, language_available

    if not language_available():
        raise CheckOptionError(LANGUAGE_MISSING)
    return code


def _schema_file(options: Mapping[str, Any], folder: str | None) -> Any:
    if len(options) != 1:
        raise CheckOptionError("give schema or schema_file, not both")
    name = options["schema_file"]
    if not isinstance(name, str) or not name:
        raise CheckOptionError("schema_file: expected a file name")
    path = os.path.join(folder or os.getcwd(), name)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise CheckOptionError(f"schema_file: cannot read {name}: {why}") from None
    try:
        schema = json.loads(text) if not name.endswith((".yaml", ".yml")) else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise CheckOptionError(f"schema_file: {name} is not valid JSON: {exc}") from None
    return json_schema(schema, name)
