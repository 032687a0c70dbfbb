"""Which earlier reply each exported request takes its generated values from (pure).

A recorded request that sends a value an earlier reply of its file generated (the task id a
SendMessage reply gave, sent back by GetTask) cannot be sent as recorded to a fresh agent: the
agent never made that task. An export therefore *captures* the value from the earlier live
reply and sends the capture instead. The rules are the player's (`recorder.rules.pairing`):

1. A reply generates the values the rules call generated (`PairingRules.generated_values`, of
   strict kinds: ids, not timestamps) that no request of the file up to it carried (rule 2: the
   client's own values, echoed back, are not generated). The first reply that generates a value
   is its origin: the JSON path of the first string equal to it, in the body or in the data of
   one event-stream frame. A value that is only part of a longer string is not captured.
2. A later request that carries an origin's value (`PairingRules.request_values`) uses its
   capture; every occurrence of the value in the target, the header values and the body (inside
   JSON strings for a JSON body) becomes the capture's `{{name}}`.
3. A value generated in another file (a task created by one transcript and read by another) is
   sent as recorded: exports chain within one file only.
4. `@during exchange N frame K` tags are kept (`Chains.during`) so a runner can send the request
   while exchange N's stream is open, once K frames came.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from recorder.format.httpread import DURING_TAG
from recorder.format.jsonbody import NOT_JSON, json_value
from recorder.format.literals import escape_json_text
from recorder.format.model import Exchange, Headers, Request, Response
from recorder.rules.pairing import JSON_STRING, PairingRules, string_value
from recorder.rules.ruleset import DEFAULT_RULES, Rules

__all__ = ["Capture", "Chains", "find_chains", "templated_request"]

JsonPath = tuple[str | int, ...]
_WORD = re.compile(r"[^0-9A-Za-z]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True)
class Capture:
    """A generated value taken from an earlier reply: `name` (a shell-safe identifier), the
    recorded `value`, the 0-based `exchange` whose reply generated it, the 1-based `frame` of a
    stream reply (None: the whole JSON body) and the JSON `path` within it."""

    name: str
    value: str
    exchange: int
    frame: int | None
    path: JsonPath


@dataclass(frozen=True)
class Chains:
    """The captures of a file that a later request uses (in order of origin), the ones each
    exchange's request uses, and
    the `@during` tags: 0-based exchange -> (0-based open exchange, frames to wait for)."""

    captures: tuple[Capture, ...]
    uses: tuple[tuple[Capture, ...], ...]
    during: dict[int, tuple[int, int]]

    def of(self, exchange: int) -> list[Capture]:
        """The captures exchange `exchange`'s reply gives."""
        return [capture for capture in self.captures if capture.exchange == exchange]


def _first_path(tree: Any, value: str) -> JsonPath | None:
    """The path of the first string equal to `value` in `tree` (document order), or None."""
    stack: list[tuple[Any, JsonPath]] = [(tree, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if item == value:
                return path
        elif isinstance(item, dict):
            stack.extend((member, (*path, key)) for key, member in reversed(item.items()))
        elif isinstance(item, list):
            items = reversed(list(enumerate(item)))
            stack.extend((member, (*path, index)) for index, member in items)
    return None


def _reply_trees(response: Response) -> list[tuple[int | None, Any]]:
    """(frame or None, parsed JSON) of a recorded reply: the body, or each frame's data."""
    if response.events is not None:
        return [
            (number, json_value(event.data))
            for number, event in enumerate(response.events, start=1)
            if event.data is not None
        ]
    if not response.body or not response.is_json:
        return []
    return [(None, json_value(response.body.decode("utf-8", "replace")))]


def _name(path: JsonPath, exchange: int, taken: set[str]) -> str:
    keys = [key for key in path if isinstance(key, str)][-2:]
    words = [_WORD.sub("_", _CAMEL.sub("_", key)).strip("_").lower() for key in keys]
    stem = "_".join(word for word in words if word) or "value"
    if stem[0].isdigit():
        stem = "v_" + stem
    name = f"{stem}_{exchange + 1}"
    suffix = 2
    while name in taken:
        name, suffix = f"{stem}_{exchange + 1}_{suffix}", suffix + 1
    taken.add(name)
    return name


def find_chains(exchanges: Sequence[Exchange], rules: Rules = DEFAULT_RULES) -> Chains:
    """Rules 1-4 over the exchanges of one file, in order."""
    pairing = PairingRules(rules)
    client: set[str] = set()
    origins: dict[str, Capture] = {}
    taken: set[str] = set()
    uses: list[tuple[Capture, ...]] = []
    during: dict[int, tuple[int, int]] = {}
    for index, exchange in enumerate(exchanges):
        if exchange.call is not None:
            # the agent's call to a downstream: neither the client's values nor a reply the
            # client reads (an export leaves it out)
            uses.append(())
            continue
        sent = pairing.request_values(exchange.request)
        uses.append(tuple(capture for value, capture in origins.items() if value in sent))
        client |= sent
        for comment in exchange.comments:
            match = DURING_TAG.match(comment.strip())
            if match is not None:
                during[index] = (int(match.group(1)) - 1, int(match.group(2)))
        for frame, tree in _reply_trees(exchange.response):
            if tree is NOT_JSON:
                continue
            for value, kind in pairing.generated_values(tree):
                if kind in pairing.loose or value in client or value in origins:
                    continue
                path = _first_path(tree, value)
                if path is None:
                    continue
                origins[value] = Capture(_name(path, index, taken), value, index, frame, path)
    used = {capture for captures in uses for capture in captures}
    kept = tuple(capture for capture in origins.values() if capture in used)
    return Chains(kept, tuple(uses), during)


def _replace_all(text: str, captures: Sequence[Capture]) -> str:
    for capture in captures:
        text = text.replace(capture.value, "{{" + capture.name + "}}")
    return text


def templated_request(request: Request, captures: Sequence[Capture]) -> Request:
    """The request with each capture's value replaced by `{{name}}` (rule 2)."""
    if not captures:
        return request
    target = _replace_all(request.target, captures)
    headers = Headers(
        (name, value if name.lower() == "host" else _replace_all(value, captures))
        for name, value in request.headers
    )
    body = request.body
    if body:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:
            if request.is_json:

                def replace(match: re.Match[str]) -> str:
                    token = match.group()
                    value = string_value(token)
                    if value is None:
                        return token
                    new = _replace_all(value, captures)
                    if new == value:
                        return token
                    # written anew: a literal `{{NAME}}` escaped again, the captures kept
                    keep = {capture.name for capture in captures}
                    return escape_json_text(json.dumps(new, ensure_ascii=False), keep)

                text = JSON_STRING.sub(replace, text)
            else:
                text = _replace_all(text, captures)
            body = text.encode("utf-8")
    return dataclasses.replace(request, target=target, headers=headers, body=body)


def call_notes(exchanges: Sequence[Exchange], start: int = 1) -> dict[int, list[str]]:
    """The comment lines an export puts under an exchange's title for the calls the agent
    made while it answered it (`# @call NAME exchange N`): they are the agent's to send, so
    an export names them and sends none. Keyed by the exchange's index in `exchanges`;
    `start` is the number of the first one in its file (the tags count in the file)."""
    notes: dict[int, list[str]] = {}
    for number, exchange in enumerate(exchanges, start=start):
        call = exchange.call
        index = call.exchange - start if call is not None else -1
        if call is None or not 0 <= index < len(exchanges):
            continue
        title = exchange.title.replace("{{", "{ {")  # (a name: never a variable)
        lines = notes.setdefault(
            index, ["# the agent's own calls while it answered (its to make: not sent here):"]
        )
        lines.append(f"#   {number}. {title} (# {call.text})")
    return notes
