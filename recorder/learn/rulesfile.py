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
saying what it saw (`# in all 4 runs and the recording`, `# seen 212..287 characters`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import yaml

from recorder.noise import Proposal

__all__ = ["merge", "render"]

_KEYS = ("generated_paths", "unordered_paths", "ignored_paths", "ignored_headers", "checks")

Scrub = Callable[[str], str]


def _quote(text: str) -> str:
    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


def _comment(proposal: Proposal, indent: str, scrub: Scrub) -> list[str]:
    lines = [
        f"{indent}# {proposal.reason} ({_places(proposal.places)})",
        f"{indent}#   in: {'; '.join(proposal.where)}",
    ]
    if proposal.samples:
        seen = ", ".join(scrub(sample) for sample in proposal.samples)
        lines.append(f"{indent}#   seen: {seen}")
    return [line.replace("\n", " ").replace("\r", " ") for line in lines]


def _places(count: int) -> str:
    return "1 exchange" if count == 1 else f"{count} exchanges or frames"


def _check_entry(proposal: Proposal, indent: str, scrub: Scrub) -> list[str]:
    """One `checks` item: its path, its scope, and each check with what it saw."""
    lines = [f"{indent}# {proposal.reason}: {'; '.join(proposal.where)}"]
    if proposal.samples:
        seen = ", ".join(scrub(sample) for sample in proposal.samples)
        lines.append(f"{indent}#   seen: {seen}")
    lines = [line.replace("\n", " ").replace("\r", " ") for line in lines]
    lines.append(f"{indent}- path: {_quote(proposal.target)}")
    if proposal.scope:
        lines.append(f"{indent}  in: {_quote(proposal.scope)}")
    lines.append(f"{indent}  assert:")
    for check in proposal.checks:
        item = ", ".join(
            f"{name}: {scrub(_flow(value))}" for name, value in check.as_rule().items()
        )
        commented = "# " if check.commented else ""  # (a model judge for the user to take)
        lines.append(f"{indent}    {commented}- {item}  # {check.seen}")
    return lines


def _flow(value: object) -> str:
    """A check's value as YAML flow text: `{min: 80, max: 400}`, `["a.py:3", "[todo]"]`."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{name}: {_flow(item)}" for name, item in value.items()) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False)


def _entries(key: str, proposals: Sequence[Proposal], indent: str, scrub: Scrub) -> list[str]:
    lines: list[str] = []
    for proposal in proposals:
        if key == "checks":
            lines.extend(_check_entry(proposal, indent, scrub))
            continue
        lines.extend(_comment(proposal, indent, scrub))
        if key == "generated_paths":
            lines.append(f"{indent}{_quote(proposal.target)}: {proposal.kind}")
        else:
            lines.append(f"{indent}- {_quote(proposal.target)}")
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
    """A new rules file holding `proposals`, under the comment lines `header`."""
    lines = [f"# {line}".rstrip() for line in header]
    lines.append("version: 1")
    for key, group in _by_key(proposals).items():
        lines.append("")
        lines.extend(_block(key, group, scrub))
    return "\n".join(lines) + "\n"


def merge(
    text: str, proposals: Sequence[Proposal], header: Sequence[str], scrub: Scrub = str
) -> str:
    """`text` (a valid rules file) with `proposals` added, every line of it kept."""
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(node, yaml.MappingNode):
        # an empty file (comments only): the new rules after what it holds
        body = render(proposals, header, scrub)
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
        return [f"{indent}{_quote(str(k.value))}: {_scalar(v)}" for k, v in value.value]
    if isinstance(value, yaml.SequenceNode):
        return [f"{indent}- {_quote(str(item.value))}" for item in value.value]
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
