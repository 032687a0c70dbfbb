"""The `judge` check: the user's code decides whether a live value is right.

Two kinds, both given the recorded value, the live one and where they are (`CheckContext`):

- a Python callable, `judge: "mypackage.judges:helpful"`: `helpful(recorded, live, context)`
  returns a bool, `(bool, reason)` or `{"pass": bool, "reason": str}`. Its module is imported
  once per process, with the rules file's folder first on the import path for that import
  (as Python puts a script's folder first: a `judges.py` beside the rules file imports
  without PYTHONPATH; `python_judge`). The player imports every judge of its rules before it
  sends anything (`import_judges`), so a bad name is a usage error naming the rules file's
  line;
- a command, `judge: {command: "python judge.py", timeout: 30}`: run in the rules file's
  folder (without a shell, split as a shell would, unless it uses a shell's syntax: a pipe,
  `;`, `&&`, a redirection, `$`), given one JSON object on its standard input (`recorded`,
  `live`, `file`, `exchange`, `title`, `path`, `frame`, `request`). Exit status 0 passes, 1
  fails; its standard output is the reason (plain text, or `{"pass": bool, "reason": str}`,
  which then decides). Another exit status, no answer within the timeout, or a command that
  cannot start is an error: the check fails, its reason names the judge and says what went
  wrong. A command that does not exist is a usage error before anything is sent
  (`import_judges`: the program is looked up on PATH, or in the rules file's folder when it
  names a path such as `./judge.sh`; a shell command's first word through the shell's
  `command -v`).

None is shipped; nothing is downloaded.
"""

from __future__ import annotations

import importlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from recorder.checks.base import Check, CheckContext, CheckOptionError, Outcome
from recorder.errors import RulesError

__all__ = [
    "CommandJudge",
    "PythonJudge",
    "import_judges",
    "judge_spec",
    "python_judge",
    "run_judge",
]

DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 3600.0
_REASON_CHARACTERS = 500  # of a judge's reason, in a report line


@dataclass(frozen=True)
class PythonJudge:
    """`module:function`, imported with `folder` (the rules file's; None: none) first on the
    import path."""

    name: str
    folder: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class CommandJudge:
    """A command line, run in `folder` (the rules file's; None: the current one)."""

    command: str
    timeout: float = DEFAULT_TIMEOUT
    folder: str | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        return repr(self.command)

    @property
    def uses_shell(self) -> bool:
        """Whether the command line needs a shell: it uses a shell's operators or expansions."""
        if any(c in self.command for c in "$`"):
            return True
        lexer = shlex.shlex(self.command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            return any(token and set(token) <= set("|&;<>()") for token in lexer)
        except ValueError:  # an unclosed quote: let the shell say so
            return True


_MODULE_FUNCTION = r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$"


def judge_spec(value: Any) -> PythonJudge | CommandJudge:
    """A `judge` check's options read: a `module:function` string, or {command, timeout}."""
    import re

    if isinstance(value, str):
        if not re.match(_MODULE_FUNCTION, value):
            raise CheckOptionError(
                f"expected module:function (such as mypackage.judges:helpful), got {value!r};"
                " a command is {command: ...}"
            )
        return PythonJudge(value)
    if not isinstance(value, Mapping):
        raise CheckOptionError(
            "expected module:function or {command: ..., timeout: SECONDS},"
            f" got {type(value).__name__}"
        )
    unknown = sorted(str(k) for k in value if k not in ("command", "timeout"))
    if unknown:
        raise CheckOptionError(f"unknown option {unknown[0]!r} (options: command, timeout)")
    command = value.get("command")
    if not isinstance(command, str) or not command.strip():
        raise CheckOptionError("command: expected a command line (a string)")
    timeout = value.get("timeout", DEFAULT_TIMEOUT)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout <= MAX_TIMEOUT
    ):
        raise CheckOptionError(
            f"timeout: expected seconds, more than 0 and at most {MAX_TIMEOUT:g}"
        )
    return CommandJudge(command, float(timeout))


_imported: dict[tuple[str | None, str], Callable[..., Any]] = {}
_import_lock = threading.Lock()


def python_judge(spec: PythonJudge) -> Callable[..., Any]:
    """The callable `spec` names, imported once per process, with the rules file's folder
    first on the import path during that import (`sys.path` is as it was after). Raises
    CheckOptionError (the caller adds the rules file's line) when it cannot be imported or
    is not callable."""
    with _import_lock:
        found = _imported.get((spec.folder, spec.name))
        if found is not None:
            return found
        module_name, _, function_name = spec.name.partition(":")
        try:
            module = _import(module_name, spec.folder)
        except Exception as exc:  # the user's module: any error it raises
            raise CheckOptionError(
                f"judge {spec.name}: cannot import {module_name}: {type(exc).__name__}: {exc}"
            ) from None
        function: Any = getattr(module, function_name, None)
        if not callable(function):
            raise CheckOptionError(
                f"judge {spec.name}: {module_name} has no function {function_name}"
            )
        _imported[(spec.folder, spec.name)] = function
        return _imported[(spec.folder, spec.name)]


def _import(module_name: str, folder: str | None) -> Any:
    if folder is None or folder in sys.path:
        return importlib.import_module(module_name)
    sys.path.insert(0, folder)
    try:
        return importlib.import_module(module_name)
    finally:
        # (only this import: a rules file's folder does not stay on every later import's path)
        if folder in sys.path:
            sys.path.remove(folder)


def run_judge(
    spec: PythonJudge | CommandJudge, recorded: Any, live: Any, context: CheckContext, where: str
) -> Outcome:
    """Run a judge; an error of the judge's own is a failed check whose reason names it."""
    if isinstance(spec, PythonJudge):
        return _run_python(spec, recorded, live, context, where)
    return _run_command(spec, recorded, live, context, where)


def _run_python(
    spec: PythonJudge, recorded: Any, live: Any, context: CheckContext, where: str
) -> Outcome:
    try:
        function = python_judge(spec)
    except CheckOptionError as exc:
        return Outcome(False, f"error: {exc} ({where})")
    try:
        answer = function(recorded, live, context.as_dict())
    except Exception as exc:  # the user's code: any error it raises
        return Outcome(False, f"error: the judge raised {type(exc).__name__}: {exc} ({where})")
    return _verdict(answer, f"judge {spec.name} ({where})")


def _verdict(answer: Any, who: str) -> Outcome:
    if isinstance(answer, bool):
        return Outcome(answer, "" if answer else "the judge said no")
    if isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[0], bool):
        return Outcome(answer[0], _reason(answer[1]))
    if isinstance(answer, Mapping) and isinstance(answer.get("pass"), bool):
        return Outcome(answer["pass"], _reason(answer.get("reason", "")))
    return Outcome(
        False,
        f"error: {who} returned {type(answer).__name__}; expected a bool, (bool, reason) or"
        ' {"pass": bool, "reason": str}',
    )


def _reason(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = " ".join(text.split())
    return text if len(text) <= _REASON_CHARACTERS else text[: _REASON_CHARACTERS - 1] + "…"


def _run_command(
    spec: CommandJudge, recorded: Any, live: Any, context: CheckContext, where: str
) -> Outcome:
    payload = json.dumps(
        {"recorded": recorded, "live": live, **context.as_dict()}, ensure_ascii=False, default=str
    )
    arguments: str | list[str] = spec.command if spec.uses_shell else shlex.split(spec.command)
    try:
        done = subprocess.run(  # the user's own judge, from their rules file
            arguments,
            input=payload.encode(),
            capture_output=True,
            timeout=spec.timeout,
            cwd=spec.folder,
            shell=spec.uses_shell,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Outcome(False, f"error: no answer within {spec.timeout:g} s ({where})")
    except OSError as exc:
        return Outcome(False, f"error: cannot run {spec.command}: {exc.strerror or exc} ({where})")
    out = done.stdout.decode("utf-8", errors="replace").strip()
    if done.returncode not in (0, 1):
        err = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        last = f": {_reason(err[-1])}" if err else ""
        return Outcome(False, f"error: exited with status {done.returncode}{last} ({where})")
    if out.startswith("{"):
        try:
            answer = json.loads(out)
        except ValueError:
            answer = None
        if isinstance(answer, Mapping) and isinstance(answer.get("pass"), bool):
            return _verdict(answer, f"judge {spec.name}")
    passed = done.returncode == 0
    return Outcome(passed, _reason(out) if out else ("" if passed else "the judge said no"))


def import_judges(checks: Iterable[Check]) -> None:
    """Make the judges among `checks` ready before a run sends anything: import the Python
    ones (once per process), look up the program of each command. A judge that cannot be
    imported, or a command that does not exist, is a RulesError naming the rules file's line."""
    for check in checks:
        if check.name != "judge":
            continue
        try:
            if isinstance(check.value, PythonJudge):
                python_judge(check.value)
            elif isinstance(check.value, CommandJudge):
                _find_program(check.value)
        except CheckOptionError as exc:
            raise RulesError(f"{check.where}: {exc}") from None


def _find_program(spec: CommandJudge) -> None:
    """Raise CheckOptionError when the program a command runs does not exist: a path (with a
    slash) in the rules file's folder, else a name on PATH; a shell command's first word as
    the shell finds it (a builtin, a function of its own, or a program)."""
    if spec.uses_shell:
        words = spec.command.split(maxsplit=1)
        first = words[0] if words else ""
        if not first or not first.replace("-", "").replace("_", "").replace(".", "").isalnum():
            return  # (an assignment, a quote, a subshell: only the shell can tell)
        try:
            found = subprocess.run(  # the shell's own lookup: builtins and keywords too
                ["sh", "-c", 'command -v -- "$1"', "sh", first],
                capture_output=True,
                cwd=spec.folder,
                check=False,
            )
        except OSError:
            return  # (no POSIX shell here: the judge says so when it runs)
        if found.returncode != 0:
            raise CheckOptionError(f"judge {spec.name}: {first}: command not found")
        return
    try:
        program = shlex.split(spec.command)[0]
    except (ValueError, IndexError):
        return
    if os.sep in program or (os.altsep and os.altsep in program):
        path = os.path.join(spec.folder or os.getcwd(), program)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            why = "not an executable file" if os.path.exists(path) else "no such file"
            raise CheckOptionError(f"judge {spec.name}: {program}: {why}")
    elif shutil.which(program) is None:
        raise CheckOptionError(f"judge {spec.name}: {program}: command not found on PATH")
