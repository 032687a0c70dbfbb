"""The recorded exchanges, prepared once for serving (pure).

A `Step` is one recorded exchange with what matching and replying need computed up front: its
request's pieces, the generated values it carries that earlier replies of its file handed out
(`needs`), the generated values its reply hands out (`hands_out`, in document order), and its
`@during` links.

A file that needs others (`# @after NAME.http`, `Transcript.after`) reads the state they made:
`needed_files` names them (transitively, among the served files), and the generated values
their replies hand out count, in the needing file, as handed out earlier (a request of the
file that carries one needs it; its reply hands it out again, as the needed file's value when
the conversation played that file: `recorder.serve.book`).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from recorder.bindings import jsonrpc
from recorder.format.httpfile import DURING_TAG
from recorder.format.literals import literal_text
from recorder.format.model import Exchange, Transcript
from recorder.rules.pairing import PairingRules
from recorder.serve.match import NOT_JSON, parse_json, significant_headers, split_target
from recorder.serve.spelling import canonical_method, modern

__all__ = ["Step", "needed_files", "prepare"]

_METHOD_NOT_FOUND = str(jsonrpc.METHOD_NOT_FOUND).encode()  # (looked for before a parse)


@dataclass
class Step:
    """One recorded exchange, ready to be matched and answered."""

    file: int
    """The transcript's number among those served (0-based)."""
    index: int
    """The exchange's number in its file (0-based)."""
    path: str
    exchange: Exchange
    pieces: list[str]
    significant: dict[str, str]
    json: Any
    needs: frozenset[str]
    hands_out: list[tuple[str, str]]
    """(recorded generated value, kind) of the reply (every frame), client values excluded."""
    frames: list[Any] = field(default_factory=list)
    """A stream's frames' data parsed (NOT_JSON: sent as recorded); empty for other replies."""
    during: tuple[int, int] | None = None
    """(the exchange this one arrived during, that exchange's frames sent by then)."""
    waited: dict[int, list[int]] = field(default_factory=dict)
    """frames sent -> the later exchanges that arrived then (this reply waits for them)."""
    shapes: re.Pattern[str] | None = None
    """The rules' generated shapes (`PairingRules.shapes`), for `reply_shape`."""

    @functools.cached_property
    def key(self) -> tuple[str, tuple[str, ...], str | None]:
        """What a matching live request has the same (`LiveRequest.key`): the method, the
        target's separators, the JSON-RPC method. Compared first, as a cheap filter."""
        return (
            self.exchange.request.method,
            tuple(self.pieces[1::2]),
            canonical_method(self.rpc_method),
        )

    @functools.cached_property
    def unknown_method(self) -> bool:
        """Whether the recorded reply says the method is unknown (JSON-RPC -32601,
        `METHOD_NOT_FOUND`)."""
        response = self.exchange.response
        if response.events is not None or _METHOD_NOT_FOUND not in response.body:
            return False
        value = parse_json(response.body)
        error = value.get("error") if isinstance(value, dict) else None
        return isinstance(error, dict) and error.get("code") == jsonrpc.METHOD_NOT_FOUND

    @functools.cached_property
    def spelled(self) -> tuple[Any, bool]:
        """(the request body spelled as A2A 1.0, whether it is spelled as 0.3)."""
        return modern(self.json)

    @functools.cached_property
    def reply_shape(self) -> str:
        """The recorded reply (status, body or frames) with every uuid and time shape taken
        out: two steps with the same shape answer alike but for generated values."""
        response = self.exchange.response
        if response.events is not None:
            text = "\n".join(event.data or "" for event in response.events)
        else:
            text = response.body.decode("utf-8", "replace")
        shapes = self.shapes
        return f"{response.status} {shapes.sub('', text) if shapes is not None else text}"

    @property
    def where(self) -> str:
        line = self.exchange.line
        return f"{self.path}:{line}" if line is not None else f"{self.path} #{self.index + 1}"

    @property
    def title(self) -> str:
        return self.exchange.title

    @property
    def rpc_method(self) -> str | None:
        return jsonrpc.method_of(self.json)

    @property
    def host(self) -> str | None:
        return self.exchange.request.headers.get("Host")


def _reply_values(exchange: Exchange) -> tuple[list[Any], Any]:
    """(the parsed frames of a stream, or [] ; the parsed body of another reply)."""
    response = exchange.response
    if response.events is not None:
        frames = [
            parse_json(event.data.encode()) if event.data is not None else NOT_JSON
            for event in response.events
        ]
        return frames, NOT_JSON
    return [], parse_json(response.body) if response.body else NOT_JSON


def needed_files(transcripts: Sequence[Transcript]) -> list[tuple[int, ...]]:
    """For each transcript, the numbers of the served transcripts it needs (its `@after`
    tags, transitively, each once, the needed before those that need them). A tag naming a
    file that is not served, and a cycle, add nothing (the player reports those; serving
    answers the file alone)."""
    numbers: dict[str, int] = {}
    for number, transcript in enumerate(transcripts):
        if transcript.source:
            numbers.setdefault(os.path.normpath(transcript.source), number)

    def direct(number: int) -> list[int]:
        transcript = transcripts[number]
        if not transcript.after or not transcript.source:
            return []
        folder = os.path.dirname(transcript.source)
        found = (
            numbers.get(os.path.normpath(os.path.join(folder, name))) for name in transcript.after
        )
        return [other for other in found if other is not None and other != number]

    def visit(number: int, trail: tuple[int, ...], order: list[int]) -> None:
        for other in direct(number):
            if other in trail or other in order:
                continue
            visit(other, (*trail, other), order)
            order.append(other)

    needed: list[tuple[int, ...]] = []
    for number in range(len(transcripts)):
        order: list[int] = []
        visit(number, (number,), order)
        needed.append(tuple(order))
    return needed


def prepare(
    transcripts: list[Transcript],
    rules: PairingRules,
    after: Sequence[tuple[int, ...]] | None = None,
) -> list[list[Step]]:
    """Each transcript's steps, in order; `after` (`needed_files`, computed when None) gives
    each file the values its needs hand out."""
    needed = needed_files(transcripts) if after is None else after
    # file -> (the generated values its replies hand out, the values its client sent)
    handed: dict[int, tuple[set[str], set[str]]] = {}
    files: dict[int, list[Step]] = {}

    def visit(number: int, trail: tuple[int, ...]) -> None:
        for other in needed[number]:
            if other not in files and other not in trail:
                visit(other, (*trail, other))
        inherited: set[str] = set()
        theirs: set[str] = set()
        for other in needed[number]:
            their_generated, their_client = handed.get(other, (set(), set()))
            inherited |= their_generated
            theirs |= their_client
        steps, generated, client = _prepare_file(
            number, transcripts[number], rules, frozenset(inherited), theirs
        )
        files[number], handed[number] = steps, (generated, client)

    for number in range(len(transcripts)):
        if number not in files:
            visit(number, (number,))
    return [files[number] for number in range(len(transcripts))]


def _prepare_file(
    number: int,
    transcript: Transcript,
    rules: PairingRules,
    inherited: frozenset[str],
    theirs: set[str],
) -> tuple[list[Step], set[str], set[str]]:
    """(the steps of one transcript, the generated values its own replies hand out);
    `inherited`: the values the files it needs hand out; `theirs`: the values their client
    sent (the client's contextId a listing quotes: the client's, never handed out)."""
    loose = rules.loose
    learned: set[str] = set()
    client: set[str] = set(theirs)
    steps: list[Step] = []
    for index, exchange in enumerate(transcript.exchanges):
        request = exchange.request
        carried = rules.request_values(request)
        known = learned | inherited
        needs = frozenset(carried & known)
        client.update(carried - known)
        frames, body = _reply_values(exchange)
        found: dict[tuple[str, str], None] = {}
        for value in frames or [body]:
            if value is not NOT_JSON:
                found.update(dict.fromkeys(rules.generated_values(value)))
        # (a value a needed file handed out is handed out again: as that file's live
        # value when the conversation played it, else as any other)
        hands_out = [
            (value, kind)
            for value, kind in found
            if kind not in loose and value not in client and value not in learned
        ]
        learned.update(value for value, _ in hands_out if value not in inherited)
        steps.append(
            Step(
                file=number,
                index=index,
                path=transcript.source or f"transcript {number + 1}",
                exchange=exchange,
                # (a literal `{{NAME}}` as it was sent: `recorder.format.literals`)
                pieces=split_target(literal_text(request.target)),
                significant=significant_headers(
                    [(name, literal_text(value)) for name, value in request.headers]
                ),
                json=parse_json(request.body),
                needs=needs,
                hands_out=hands_out,
                frames=frames,
                shapes=rules.shapes,
            )
        )
    for step in steps:
        for comment in step.exchange.comments:
            match = DURING_TAG.match(comment.strip())
            if match is not None:
                stream, frames_sent = int(match.group(1)) - 1, int(match.group(2))
                if 0 <= stream < step.index:
                    step.during = (stream, frames_sent)
                    steps[stream].waited.setdefault(frames_sent, []).append(step.index)
                    break
    return steps, learned, client
