"""What a documentation block always shows, and generated ids shortened for reading.

Pure: no files, no clock.

`JsonPath` is the small JSONPath subset the `pick` option takes (RFC 9535 syntax):

    $               the root
    .name  ['name'] a member
    [N]             element N of an array (from 0)
    .*  [*]         every member or element
    ..name  ..*     `name` (or anything) at any depth below

A path matches a node when it names that node exactly; everything inside a matched node goes
with it. `DEFAULT_PICK` is what a reader of an A2A example needs whatever the line budget: the
parts of every message (the question, the answer, a status message), every task state, every
artifact, in A2A 1.0's shapes and 0.3's (a JSON-RPC `result` that is the message itself,
`result.parts`; a ProtoJSON message's `content`). A task's `history` repeats the question and
is not picked.

`ExchangeName` names an exchange of a transcript by what it is rather than where it is (a
marker's `FILE#SendStreamingMessage`, `FILE#"GetTask: read the task back"`): removing an
earlier exchange does not re-point it, and a name that no longer names exactly one exchange is
an error, not a silent pick. An exchange's operation is its JSON-RPC `method`, and the start of
its title up to `: ` (the recorder titles an exchange `Operation: description`); a title is
matched whole, exactly.

`IdShortener` shortens the UUIDs an SDK generates (`3b4b1206-4b6f-467f-b735-2d7e4f7f4bcd` ->
`3b4b1206…`): one UUID always gets the same short form within a block, and two UUIDs that share
their first 8 hex digits get longer prefixes until they differ.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from recorder.bindings import jsonrpc
from recorder.format.jsonbody import dumps
from recorder.format.model import Exchange

__all__ = [
    "DEFAULT_PICK",
    "ELLIPSIS",
    "ExchangeName",
    "IdShortener",
    "JsonPath",
    "Step",
    "dumps_scalar",
    "envelope_first",
    "exchange_operations",
    "first_leaf_path",
    "named_exchange",
    "parse_exchange_reference",
    "parse_pick",
    "picked_paths",
]

DEFAULT_PICK: tuple[str, ...] = (
    "$..message.parts",
    # A2A 0.3: a JSON-RPC reply (or stream frame) whose result is the message itself
    "$.result.parts",
    # A2A 0.3's HTTP+JSON and gRPC messages hold their parts in `content`
    "$..message.content",
    "$..status.state",
    "$..artifacts",
    "$..artifact",
    # an agent's own call (`# @call`): the prompt and the model's words (the answer, JSON or
    # streamed: `$..message.content` above), an MCP tool's arguments and its findings
    "$.messages[*].content",
    "$..delta.content",
    "$.params.arguments",
    "$.result.structuredContent",
)

Step = str | int
ELLIPSIS = "…"
# Rule 2 of render: the JSON-RPC 2.0 members, in the order the spec's examples write them.
_ENVELOPE = jsonrpc.ENVELOPE
_PAYLOADS = jsonrpc.PAYLOADS
# Characters that JSON allows raw in strings but editors show as line breaks or not at all.
_INVISIBLE = re.compile("[\x7f-\x9f\u2028\u2029]")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_NAME = re.compile(r"[A-Za-z_$@][\w$@-]*")
_BRACKET = re.compile(r"\[(?:(\*)|(\d+)|'([^']*)'|\"([^\"]*)\")\]")


def envelope_first(value: Any) -> Any:
    """Rule 2: a JSON-RPC object with its envelope members first; anything else unchanged."""
    if not jsonrpc.is_jsonrpc(value):
        return value
    ordered = {key: value[key] for key in _ENVELOPE if key in value}
    ordered.update((key, member) for key, member in value.items() if key not in ordered)
    return ordered


def dumps_scalar(value: Any) -> str:
    """A JSON scalar (or empty container) as the transcript writes it, invisibles escaped."""
    text = dumps(value)  # (a number as it was written: `recorder.format.jsonbody.JsonNumber`)
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def first_leaf_path(value: Any) -> tuple[Step, ...]:
    """The path down the chain that rules 3 and 4 of render never hide.

    In a JSON-RPC object: the payload member (`params`, `result`, `error`), then its first
    member, and so on, down to the first value that is not a non-empty container. Elsewhere the
    same chain from the top.
    """
    path: tuple[Step, ...] = ()
    node = value
    if jsonrpc.is_jsonrpc(value):
        payload = next((key for key in _PAYLOADS if key in value), None)
        if payload is None:
            return (next(reversed(value)),) if value else ()
        path, node = (payload,), value[payload]
    while True:
        if isinstance(node, dict) and node:
            key = next(iter(node))
            path, node = (*path, key), node[key]
        elif isinstance(node, list) and node:
            path, node = (*path, 0), node[0]
        else:
            return path


# path tokens
_DESCENDANTS = ("..",)
_ANY = ("*",)


@dataclass(frozen=True)
class JsonPath:
    """One parsed path; `matches(path)` for a node's path from the root."""

    text: str
    tokens: tuple[tuple[Any, ...], ...]

    def matches(self, path: Sequence[Step]) -> bool:
        return _match(self.tokens, tuple(path))

    @classmethod
    def parse(cls, text: str) -> JsonPath:
        """`"$..status.state"` -> JsonPath (ValueError naming what is wrong)."""
        source = text.strip()
        if not source.startswith("$"):
            raise ValueError(f"a JSON path starts with '$': {text!r}")
        tokens: list[tuple[Any, ...]] = []
        at = 1
        while at < len(source):
            if source.startswith("..", at):
                tokens.append(_DESCENDANTS)
                at += 2
                if at < len(source) and source[at] == "[":
                    continue
            elif source[at] == ".":
                at += 1
            elif source[at] == "[":
                match = _BRACKET.match(source, at)
                if match is None:
                    raise ValueError(f"bad [...] in JSON path {text!r} at {at + 1}")
                star, number, single, double = match.groups()
                if star:
                    tokens.append(_ANY)
                elif number is not None:
                    tokens.append(("index", int(number)))
                else:
                    tokens.append(("name", single if single is not None else double))
                at = match.end()
                continue
            else:
                raise ValueError(f"expected '.' or '[' in JSON path {text!r} at {at + 1}")
            if at < len(source) and source[at] == "*":
                tokens.append(_ANY)
                at += 1
                continue
            match = _NAME.match(source, at)
            if match is None:
                raise ValueError(f"expected a member name in JSON path {text!r} at {at + 1}")
            tokens.append(("name", match.group()))
            at = match.end()
        return cls(source, tuple(tokens))


def _match(tokens: tuple[tuple[Any, ...], ...], path: tuple[Step, ...]) -> bool:
    if not tokens:
        return not path
    head, rest = tokens[0], tokens[1:]
    if head == _DESCENDANTS:
        return any(_match(rest, path[start:]) for start in range(len(path) + 1))
    if not path:
        return False
    step = path[0]
    if head == _ANY:
        ok = True
    elif head[0] == "index":
        ok = isinstance(step, int) and step == head[1]
    else:
        ok = isinstance(step, str) and step == head[1]
    return ok and _match(rest, path[1:])


def parse_pick(texts: Iterable[str]) -> tuple[JsonPath, ...]:
    """JSON paths from option text; `none` alone picks nothing (ValueError on a bad path)."""
    items = [text.strip() for text in texts if text.strip()]
    if items == ["none"]:
        return ()
    return tuple(JsonPath.parse(item) for item in items)


def picked_paths(value: Any, paths: Sequence[JsonPath]) -> list[tuple[Step, ...]]:
    """The paths of the nodes of `value` that a pick names, in document order (outermost)."""
    if not paths:
        return []
    return list(_walk_picked(value, (), paths))


def _walk_picked(
    value: Any, path: tuple[Step, ...], paths: Sequence[JsonPath]
) -> Iterator[tuple[Step, ...]]:
    if path and any(pick.matches(path) for pick in paths):
        yield path
        return
    if isinstance(value, dict):
        for key, member in value.items():
            yield from _walk_picked(member, (*path, key), paths)
    elif isinstance(value, list):
        for index, element in enumerate(value):
            yield from _walk_picked(element, (*path, index), paths)


class IdShortener:
    """UUIDs shortened consistently across the texts it was built from."""

    def __init__(self, texts: Iterable[str]) -> None:
        ids = sorted({match.group().lower() for text in texts for match in _UUID.finditer(text)})
        self._short: dict[str, str] = {}
        for uuid in ids:
            length = 8
            while any(
                other != uuid and other.startswith(uuid[:length]) for other in ids
            ) and length < len(uuid):
                length += 1
            if uuid[length - 1] == "-":
                length += 1
            self._short[uuid] = uuid[:length] + ELLIPSIS

    def text(self, text: str) -> str:
        return _UUID.sub(lambda m: self._short.get(m.group().lower(), m.group()), text)

    def value(self, value: Any) -> Any:
        """A JSON value with the UUIDs in its strings (keys too) shortened."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(key): self.value(member) for key, member in value.items()}
        if isinstance(value, list):
            return [self.value(element) for element in value]
        return value


# --------------------------------------------------------------------------- exchanges by name

_OPERATION = re.compile(r"[A-Za-z][\w./-]*")


@dataclass(frozen=True)
class ExchangeName:
    """An exchange named by its operation (`SendMessage`) or, with `title`, its whole title."""

    text: str
    title: bool = False

    def __str__(self) -> str:
        return f'#"{self.text}"' if self.title else f"#{self.text}"


def parse_exchange_reference(reference: str) -> tuple[str, int | ExchangeName | None]:
    """`FILE`, `FILE#N`, `FILE#Operation` or `FILE#"whole title"` -> the path and the exchange
    (None: all of them). A name follows a path that ends in `.http` (ValueError when a
    quoted title is not closed, or N is 0)."""
    path, quote, title = reference.partition('#"')
    if quote and path.endswith(".http"):
        if not title.endswith('"') or '"' in title[:-1]:
            raise ValueError(f'a quoted title ends with " and holds none: {reference!r}')
        return path, ExchangeName(title[:-1], title=True)
    path, hash_sign, after = reference.rpartition("#")
    if hash_sign and after.isascii() and after.isdigit():
        if int(after) < 1:
            raise ValueError(f"exchanges are numbered from 1: {reference!r}")
        return path, int(after)
    if hash_sign and path.endswith(".http") and _OPERATION.fullmatch(after):
        return path, ExchangeName(after)
    return reference, None


def exchange_operations(exchange: Exchange) -> tuple[str, ...]:
    """What `FILE#Operation` may call an exchange: its JSON-RPC method, its title's start."""
    names: list[str] = []
    value = exchange.request.json if exchange.request.is_json else None
    method = jsonrpc.method_of(value)
    if method:
        names.append(method)
    head, colon, _ = exchange.title.partition(": ")
    if colon and head not in names:
        names.append(head)
    return tuple(names)


def named_exchange(exchanges: Sequence[Exchange], name: ExchangeName) -> int:
    """The number (from 1) of the one exchange `name` names; ValueError when none is, or more
    than one (naming them, and how to name one; when none is, the names there are)."""
    if name.title:
        found = [n for n, e in enumerate(exchanges, start=1) if e.title == name.text]
        what = f'titled "{name.text}"'
    else:
        found = [n for n, e in enumerate(exchanges, start=1) if name.text in exchange_operations(e)]
        what = name.text
    if len(found) == 1:
        return found[0]
    if not found and name.title:
        titles = ", ".join(f'#{n} "{e.title}"' for n, e in enumerate(exchanges, start=1))
        raise ValueError(f"no exchange is {what} (its titles: {titles})")
    if not found:
        known = sorted({op for e in exchanges for op in exchange_operations(e)})
        raise ValueError(f"no exchange is {what} (its operations: {', '.join(known) or 'none'})")
    numbers = ", ".join(f"#{n}" for n in found)
    raise ValueError(
        f"{len(found)} exchanges are {what} ({numbers}): name one by its whole title "
        f'(#"{exchanges[found[0] - 1].title}") or its number'
    )
