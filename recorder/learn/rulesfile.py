"""The learned rules as a commented YAML rules file, new or merged into an existing one (pure).

`render` writes a new file: each rule under its key, with a comment that says why it was
needed, which exchanges made it necessary and a few of the live values seen there. List keys
take the `{add: [...]}` form, so the defaults stay (`ignored_headers` keeps `date`).

`merge` puts the same rules into the text of an existing rules file, leaving every line of it
as it was: under a key already there, the new entries go after its last entry (a block list or
mapping), or the key's flow value (`ignored_paths: []`) is rewritten as a block with its
entries and the new ones; a key not there is appended at the end.

`checks` entries (what held in every wording of a varying answer, `recorder.checks.facts`) are
written one per exchange and path, scoped with `in: "FILE#N"`, each check with a comment
saying what it saw (`# in all 4 runs and the recording`, `# seen 212..287 characters`); a
check with options beside its name is one flow mapping (`- {contains_all: [...],
ignore_case: true}`), strings are double-quoted on one line (JSON's escapes, and `\\uXXXX`
for what YAML would not read back as it is).

Both read what they made back before returning it (`rules_from_text`) and compare it with
the proposals: rules that would not read back the same are `LearnedRulesError`, an internal
error that names no file of the user's (learn writes nothing then).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

import yaml

from recorder.checks.entries import CheckEntry
from recorder.checks.vocabulary import CHECKS, CheckOptionError
from recorder.errors import RecorderError, RulesError
from recorder.rules.noise import Proposal
from recorder.rules.ruleset import Rules, rules_from_text

__all__ = ["LearnedRulesError", "merge", "render"]


class LearnedRulesError(RecorderError):
    """The rules `learn` made do not read back as it made them: a fault of the recorder's own,
    never of a file the user wrote (nothing is written)."""


_KEYS = (
    "generated_paths",
    "unordered_paths",
    "ignored_paths",
    "ignored_headers",
    "assembled",
    "checks",
)

Scrub = Callable[[str], str]


def _comment(proposal: Proposal, indent: str, scrub: Scrub) -> list[str]:
    lines = [
        f"{indent}# {proposal.reason} ({_places(proposal.places)})",
        f"{indent}#   in: {'; '.join(proposal.where)}",
    ]
    if proposal.samples:
        seen = ", ".join(scrub(sample) for sample in proposal.samples)
        lines.append(f"{indent}#   seen: {seen}")
    return [_one_line(line) for line in lines]


def _places(count: int) -> str:
    return "1 exchange" if count == 1 else f"{count} exchanges or frames"


def _check_entry(proposal: Proposal, indent: str, scrub: Scrub) -> list[str]:
    """One `checks` item: its path, its scope, and each check with what it saw."""
    lines = [f"{indent}# {proposal.reason}: {'; '.join(proposal.where)}"]
    if proposal.samples:
        seen = ", ".join(scrub(sample) for sample in proposal.samples)
        lines.append(f"{indent}#   seen: {seen}")
    lines = [_one_line(line) for line in lines]
    lines.append(f"{indent}- path: {_string(proposal.target)}")
    if proposal.scope:
        lines.append(f"{indent}  in: {_string(proposal.scope)}")
    lines.append(f"{indent}  assert:")
    for check in proposal.checks:
        commented = "# " if check.commented else ""  # (a model judge for the user to take)
        item = scrub(_item(check.as_rule()))
        lines.append(f"{indent}    {commented}- {item}  # {_one_line(check.seen)}")
    return lines


def _item(rule: dict[str, object]) -> str:
    """One check as a YAML item: `contains_all: ["a.py:3"]`, or, with options beside its name,
    a flow mapping `{contains_all: ["TODO"], ignore_case: true}` (a block item's members would
    need lines of their own)."""
    members = [f"{_key(name)}: {_flow(value)}" for name, value in rule.items()]
    return members[0] if len(members) == 1 else "{" + ", ".join(members) + "}"


def _flow(value: object) -> str:
    """A value as YAML flow text: `{min: 80, max: 400}`, `["a.py:3", "[todo]"]`, `0.55`."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_flow(item) for item in value) + "]"
    if isinstance(value, str):
        return _string(value)
    if value is None or isinstance(value, bool | int | float):
        return _dumped(value)
    raise TypeError(f"a check's value of type {type(value).__name__} has no YAML form here")


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _key(name: object) -> str:
    text = str(name)
    return text if _PLAIN_KEY.fullmatch(text) and _loads(text) == text else _string(text)


def _string(text: str) -> str:
    """A string as a YAML double-quoted scalar on one line: JSON's escapes, and `\\uXXXX` for
    what YAML would not read back as it is or a reader would not see (YAML's line breaks
    U+0085, U+2028, U+2029, the characters YAML does not print, a byte order mark)."""
    quoted = json.dumps(text, ensure_ascii=False)
    return _UNPRINTED.sub(lambda m: f"\\u{ord(m.group()):04X}", quoted)


# (not printable in YAML 1.1, or a line break to a reader: escaped; surrogates only come
# from a JSON text's lone escapes)
_UNPRINTED = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")


def _dumped(value: object) -> str:
    text = yaml.safe_dump(value, allow_unicode=True, width=float("inf"))
    return text.removesuffix("...\n").strip()


def _loads(text: str) -> object:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def _one_line(text: str) -> str:
    """A comment's text on one line that YAML reads: a line break (which would end the
    comment) as a space, a character YAML does not allow as `\\uXXXX`."""
    return _UNREADABLE.sub(
        lambda m: " " if m.group() in _BREAKS else f"\\u{ord(m.group()):04X}", text
    )


# (YAML's line breaks, and the others Python's str.splitlines sees)
_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
_UNREADABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")


def _entries(key: str, proposals: Sequence[Proposal], indent: str, scrub: Scrub) -> list[str]:
    lines: list[str] = []
    for proposal in proposals:
        if key == "checks":
            lines.extend(_check_entry(proposal, indent, scrub))
            continue
        lines.extend(_comment(proposal, indent, scrub))
        if key == "generated_paths":
            lines.append(f"{indent}{_string(proposal.target)}: {proposal.kind}")
        else:
            lines.append(f"{indent}- {_string(proposal.target)}")
    return lines


def _by_key(proposals: Sequence[Proposal]) -> dict[str, list[Proposal]]:
    grouped: dict[str, list[Proposal]] = {}
    for proposal in proposals:
        grouped.setdefault(proposal.key, []).append(proposal)
    return {key: grouped[key] for key in _KEYS if key in grouped}


def _block(key: str, proposals: Sequence[Proposal], scrub: Scrub) -> list[str]:
    if key in ("generated_paths", "checks"):
        return [f"{key}:", *_entries(key, proposals, "  ", scrub)]
    return [f"{key}:", "  add:", *_entries(key, proposals, "    ", scrub)]


def render(proposals: Sequence[Proposal], header: Sequence[str], scrub: Scrub = str) -> str:
    """A new rules file holding `proposals`, under the comment lines `header`. Raises
    LearnedRulesError when it would not read back to the same rules."""
    return _read_back(lambda scrub: _render(proposals, header, scrub), proposals, scrub)


def merge(
    text: str, proposals: Sequence[Proposal], header: Sequence[str], scrub: Scrub = str
) -> str:
    """`text` (a valid rules file) with `proposals` added, every line of it kept. Raises
    LearnedRulesError when the result would not read back with the same new rules."""
    return _read_back(lambda scrub: _merge(text, proposals, header, scrub), proposals, scrub)


# --- reading back what was made --------------------------------------------------------------

_MADE = "<the rules learn made>"


def _read_back(make: Callable[[Scrub], str], proposals: Sequence[Proposal], scrub: Scrub) -> str:
    """The text `make` writes with `scrub`, once its unscrubbed twin has read back to exactly
    `proposals` (a scrubbed value stands for a secret: that one need only read)."""
    plain = make(str)
    _check(plain, proposals, strict=True)
    if scrub is str:
        return plain
    text = make(scrub)
    _check(text, proposals, strict=False)
    return text


def _check(text: str, proposals: Sequence[Proposal], *, strict: bool) -> None:
    try:
        rules = rules_from_text(text, _MADE)
    except RulesError as exc:
        problem = str(exc)
    else:
        found = [p for p in proposals if strict and not _holds(rules, p)]
        if not found:
            return
        problem = f"{found[0].key} {found[0].target!r} reads back otherwise"
    raise LearnedRulesError(
        "internal error: the rules learn made do not read back as it made them, so nothing "
        f"was written (a fault of recorder's own; please report it with this line): {problem}"
    )


def _holds(rules: Rules, proposal: Proposal) -> bool:
    """Whether `rules` hold `proposal` as it was proposed."""
    target = proposal.target
    if proposal.key == "generated_paths":
        return rules.generated_paths.get(target) == proposal.kind
    if proposal.key == "ignored_paths":
        return target in rules.ignored_paths
    if proposal.key == "unordered_paths":
        return target in rules.unordered_paths
    if proposal.key == "ignored_headers":
        return target.lower() in rules.ignored_headers
    if proposal.key == "assembled":
        return target in rules.assembled
    try:
        wanted = [
            (c.name, CHECKS[c.name].parse(c.value), c.ignore_case)
            for c in proposal.checks
            if not c.commented  # (written as a comment: not in the rules read back)
        ]
    except CheckOptionError:
        return False
    return any(_same_entry(entry, proposal, wanted) for entry in rules.checks)


def _same_entry(
    entry: CheckEntry, proposal: Proposal, wanted: list[tuple[str, object, bool]]
) -> bool:
    scopes = [str(scope) for scope in entry.scopes]
    return (
        entry.path == proposal.target
        and scopes == ([proposal.scope] if proposal.scope else [])
        and [(c.name, c.value, c.ignore_case) for c in entry.checks] == wanted
    )


# --- writing -----------------------------------------------------------------------------------


def _render(proposals: Sequence[Proposal], header: Sequence[str], scrub: Scrub) -> str:
    lines = [f"# {line}".rstrip() for line in header]
    lines.append("version: 1")
    for key, group in _by_key(proposals).items():
        lines.append("")
        lines.extend(_block(key, group, scrub))
    return "\n".join(lines) + "\n"


def _merge(text: str, proposals: Sequence[Proposal], header: Sequence[str], scrub: Scrub) -> str:
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(node, yaml.MappingNode):
        # an empty file (comments only): the new rules after what it holds
        body = _render(proposals, header, scrub)
        return text + ("\n" if text and not text.endswith("\n") else "") + body
    top = _members(node)
    edits: list[tuple[int, int, str]] = []  # (start, end, new text), applied from the end
    appended: list[str] = []
    starts = _line_starts(text)
    for key, group in _by_key(proposals).items():
        value = top.get(key)
        if value is None:
            appended.extend(["", *_block(key, group, scrub)])
        elif key not in ("generated_paths", "checks") and isinstance(value, yaml.MappingNode):
            edits.append(_into_add(text, value, key, group, scrub, starts))
        elif _is_block(value):
            edits.append(_insert(value, key, group, scrub, starts, len(text)))
        else:
            old = _old_entries(key, value, "  ", text)
            edits.append(_replace(value, old + _entries(key, group, "  ", scrub)))
    out = text
    for start, end, new in sorted(edits, reverse=True):
        out = out[:start] + new + out[end:]
    if appended:
        lines = [*(f"# {line}".rstrip() for line in header), *appended[1:]]
        out += ("" if out.endswith("\n") else "\n") + "\n" + "\n".join(lines) + "\n"
    return out


def _members(node: yaml.MappingNode) -> dict[str, yaml.Node]:
    return {str(k.value): v for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def _is_block(value: yaml.Node) -> bool:
    return (
        isinstance(value, yaml.SequenceNode | yaml.MappingNode)
        and not value.flow_style
        and bool(value.value)
    )


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(i + 1 for i, ch in enumerate(text) if ch == "\n")
    return starts


def _insert(
    value: yaml.Node,
    key: str,
    group: Sequence[Proposal],
    scrub: Scrub,
    starts: list[int],
    size: int,
) -> tuple[int, int, str]:
    """New entries after a block collection's last entry, at its entries' indentation."""
    last = value.value[-1]
    end = (last[1] if isinstance(last, tuple) else last).end_mark
    line = end.line if end.column == 0 else end.line + 1
    at = starts[line] if line < len(starts) else size
    first = value.value[0]
    column = (first[0] if isinstance(first, tuple) else first).start_mark.column
    if isinstance(value, yaml.SequenceNode):
        column = max(0, column - 2)  # the item's text starts after "- "
    lines = _entries(key, group, " " * column, scrub)
    prefix = "\n" if at == size and starts[-1] != size else ""  # (no line break at the end)
    return at, at, prefix + "\n".join(lines) + "\n"


def _replace(value: yaml.Node, lines: list[str]) -> tuple[int, int, str]:
    """A flow value (`[]`, `{a: b}`) rewritten as a block of `lines`."""
    return value.start_mark.index, value.end_mark.index, "\n" + "\n".join(lines)


def _old_entries(key: str, value: yaml.Node, indent: str, text: str = "") -> list[str]:
    if key == "checks" and isinstance(value, yaml.SequenceNode):
        # a flow list of entries: each entry kept as written (a flow mapping is a block item)
        return [
            f"{indent}- " + text[item.start_mark.index : item.end_mark.index]
            for item in value.value
        ]
    if isinstance(value, yaml.MappingNode):
        return [f"{indent}{_string(str(k.value))}: {_scalar(v)}" for k, v in value.value]
    if isinstance(value, yaml.SequenceNode):
        return [f"{indent}- {_string(str(item.value))}" for item in value.value]
    return []


def _into_add(
    text: str,
    value: yaml.MappingNode,
    key: str,
    group: Sequence[Proposal],
    scrub: Scrub,
    starts: list[int],
) -> tuple[int, int, str]:
    """A list key in the `{add: [...], remove: [...]}` form: the new entries join `add`."""
    members = _members(value)
    add = members.get("add")
    if value.flow_style or not value.value:
        lines: list[str] = []
        for name, member in members.items():
            lines.append(f"  {name}:")
            lines.extend(_old_entries(key, member, "    "))
            if name == "add":
                lines.extend(_entries(key, group, "    ", scrub))
        if add is None:
            lines.extend(["  add:", *_entries(key, group, "    ", scrub)])
        return _replace(value, lines)
    if add is None:
        first = value.value[0][0]
        indent = " " * first.start_mark.column
        block = [f"{indent}add:", *_entries(key, group, indent + "  ", scrub)]
        end = value.value[-1][1].end_mark
        line = end.line if end.column == 0 else end.line + 1
        at = starts[line] if line < len(starts) else len(text)
        prefix = "\n" if at == len(text) and not text.endswith("\n") else ""
        return at, at, prefix + "\n".join(block) + "\n"
    if _is_block(add):
        return _insert(add, key, group, scrub, starts, len(text))
    indent = " " * (value.value[0][0].start_mark.column + 2)
    return _replace(add, _old_entries(key, add, indent) + _entries(key, group, indent, scrub))


def _scalar(node: yaml.Node) -> str:
    if isinstance(node, yaml.ScalarNode) and not node.tag.endswith(":null"):
        return str(node.value)
    return "null"
