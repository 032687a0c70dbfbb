"""Assembled replies: what a client makes of an answer whose structure varies (pure).

An agent that answers through a model cuts the same answer differently from run to run: one
text part or two, a streamed artifact in one chunk or four. What the client reads is the same:
the text of a message or artifact (its text parts joined, as the a2a-sdk's `get_message_text`
and `get_artifact_text` join them, with a line break), and a stream's task as the client
assembles it from the frames. Where the number of parts or of chunks varies between runs,
`recorder learn` names the exchange in the rules' `assembled` list, and the replay compares the
assembled replies there instead of part by part, frame by frame:

- `joined_parts(value)`: a copy of a reply's JSON in which every `parts` list holds its text
  parts as one (the first text part's other members, `mediaType`, kept; the joined text in
  `text`; the other parts in their places);
- `assemble(frames)`: one value for a stream's frames (the JSON of each `data:`), as the
  client assembles it (A2A §7.2, the a2a-sdk's `append_artifact_to_task`):
  `{..envelope.., "result": {"task": TASK, "states": [...], "messages": [...]}}` (no `result`
  level for the HTTP+JSON binding's frames, which have none), where TASK is the first
  frame's task (or one made of the first update's ids) with each status update's `status`
  laid over it (the last one stays), each artifact update's artifact added (a new
  `artifactId`, or `append` false: it replaces the one of that id; `append` true: its parts
  go after those of that id); `states` is the sequence of task states, a state repeated by
  consecutive frames said once; `messages` the messages sent as frames; `errors` the error
  frames' errors. The envelope (`jsonrpc`, `id`) is the first frame's. Parts are joined
  as `joined_parts` does.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Sequence
from typing import Any

from recorder.checks.entries import Scope

__all__ = [
    "PART_SEPARATOR",
    "STREAM_PAYLOADS",
    "assemble",
    "assembled_in",
    "joined_parts",
    "joined_text",
    "scope_of",
    "text_parts_counts",
]

PART_SEPARATOR = "\n"
"""How the text parts of one message or artifact are joined (as the a2a-sdk joins them)."""

STREAM_PAYLOADS = ("task", "message", "statusUpdate", "artifactUpdate")
"""The members a frame of an A2A stream holds its event in (one of them)."""
_PAYLOADS = STREAM_PAYLOADS


def _is_text_part(part: Any) -> bool:
    return isinstance(part, dict) and isinstance(part.get("text"), str)


def joined_text(parts: Any) -> str | None:
    """The text parts of a `parts` list joined (None: not a list, or no text part in it)."""
    if not isinstance(parts, list):
        return None
    texts = [part["text"] for part in parts if _is_text_part(part)]
    return PART_SEPARATOR.join(texts) if texts else None


def _joined_list(parts: list[Any]) -> list[Any]:
    texts = [part for part in parts if _is_text_part(part)]
    if len(texts) < 2:
        return [joined_parts(part) for part in parts]
    first = parts.index(texts[0])
    joined = {**texts[0], "text": PART_SEPARATOR.join(part["text"] for part in texts)}
    others = [joined_parts(part) for part in parts if not _is_text_part(part)]
    # (the other parts keep their order; the joined text stands where the first text stood)
    return [*others[:first], joined, *others[first:]]


def joined_parts(value: Any) -> Any:
    """`value` with the text parts of every `parts` list joined into one (a copy where it
    changes; see the module docstring)."""
    if isinstance(value, dict):
        return {
            name: _joined_list(item)
            if name == "parts" and isinstance(item, list)
            else joined_parts(item)
            for name, item in value.items()
        }
    if isinstance(value, list):
        return [joined_parts(item) for item in value]
    return value


def text_parts_counts(value: Any) -> dict[tuple[str | int, ...], int]:
    """The number of text parts of each `parts` list of `value`, by the keys of the list:
    where two replies' counts differ at one place, their text is cut differently."""
    found: dict[tuple[str | int, ...], int] = {}

    def walk(node: Any, keys: tuple[str | int, ...]) -> None:
        if isinstance(node, dict):
            for name, item in node.items():
                if name == "parts" and isinstance(item, list):
                    found[(*keys, name)] = sum(1 for part in item if _is_text_part(part))
                walk(item, (*keys, name))
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, (*keys, index))

    walk(value, ())
    return found


def _apply_artifact(task: dict[str, Any], update: dict[str, Any]) -> None:
    artifact = update.get("artifact")
    if not isinstance(artifact, dict):
        return
    artifacts = task.setdefault("artifacts", [])
    if not isinstance(artifacts, list):
        return
    artifact_id = artifact.get("artifactId")
    index = next(
        (
            n
            for n, item in enumerate(artifacts)
            if isinstance(item, dict) and item.get("artifactId") == artifact_id
        ),
        None,
    )
    if index is None:
        artifacts.append(copy.deepcopy(artifact))
    elif not update.get("append"):
        artifacts[index] = copy.deepcopy(artifact)
    else:
        existing = artifacts[index]
        parts = existing.setdefault("parts", [])
        if isinstance(parts, list):
            parts.extend(copy.deepcopy(artifact.get("parts") or []))


def assemble(frames: Sequence[Any]) -> Any:
    """The frames' JSON values as one (see the module docstring)."""
    wrapped = any(isinstance(frame, dict) and "result" in frame for frame in frames)
    envelope: dict[str, Any] = {}
    task: dict[str, Any] | None = None
    states: list[Any] = []
    messages: list[Any] = []
    errors: list[Any] = []
    others: list[Any] = []
    for frame in frames:
        if not isinstance(frame, dict):
            others.append(frame)
            continue
        if wrapped and not envelope:
            envelope = {k: v for k, v in frame.items() if k not in ("result", "error")}
        if "error" in frame:
            errors.append(frame["error"])
            continue
        body = frame.get("result") if wrapped else frame
        if not isinstance(body, dict) or not any(name in body for name in _PAYLOADS):
            others.append(body)
            continue
        if isinstance(body.get("task"), dict):
            task = copy.deepcopy(body["task"])
            status = task.get("status")
            if isinstance(status, dict):
                states.append(status.get("state"))
        elif "message" in body:
            messages.append(body["message"])
        elif isinstance(body.get("statusUpdate"), dict):
            update = body["statusUpdate"]
            task = task if task is not None else _task_of(update)
            if "status" in update:
                task["status"] = copy.deepcopy(update["status"])
                status = update["status"]
                states.append(status.get("state") if isinstance(status, dict) else status)
        elif isinstance(body.get("artifactUpdate"), dict):
            update = body["artifactUpdate"]
            task = task if task is not None else _task_of(update)
            _apply_artifact(task, update)
    result: dict[str, Any] = {}
    if task is not None:
        result["task"] = task
    collapsed = [state for n, state in enumerate(states) if n == 0 or states[n - 1] != state]
    if collapsed:
        result["states"] = collapsed
    if messages:
        result["messages"] = messages
    if errors:
        result["errors"] = errors
    if others:
        result["others"] = others
    result = joined_parts(result)
    return {**envelope, "result": result} if wrapped else result


def _task_of(update: dict[str, Any]) -> dict[str, Any]:
    """A task made of an update's ids (a stream whose first frame is no task)."""
    task: dict[str, Any] = {}
    if "taskId" in update:
        task["id"] = update["taskId"]
    if "contextId" in update:
        task["contextId"] = update["contextId"]
    return task


# --- where: the rules' `assembled` list ------------------------------------------------------


@functools.lru_cache(maxsize=256)
def scope_of(item: str) -> Scope | None:
    """An `assembled` item (`FILE#N`, `FILE` (a glob), `*`) as a Scope, None when it is none
    (a path, an exchange number that is not one)."""
    file, hash_sign, number = item.strip().partition("#")
    if not file or "/" in file or "\\" in file:
        return None
    if not hash_sign:
        return Scope(file)
    if not number.isdigit() or int(number) < 1:
        return None
    return Scope(file, int(number))


def assembled_in(items: Sequence[str], file: str, exchange: int | None) -> bool:
    """Whether `items` (the rules' `assembled`) name exchange `exchange` (None: any) of the
    transcript at `file` (its file name is matched)."""
    name = os.path.basename(file)
    return any(
        scope is not None
        and scope.matches_file(name)
        and (scope.exchange is None or exchange is None or scope.exchange == exchange)
        for scope in map(scope_of, items)
    )
