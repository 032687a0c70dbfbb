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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from recorder.bindings import jsonrpc
from recorder.bindings.push_configs import config_objects
from recorder.format.httpfile import DURING_TAG
from recorder.format.jsonbody import NOT_JSON, compact_json, json_value
from recorder.format.literals import (
    Template,
    body_as_sent,
    json_templates,
    literal_text,
    template,
)
from recorder.format.model import Exchange, Request, Transcript
from recorder.rules.pairing import PairingRules
from recorder.serve.match import significant_headers, split_target, target_pieces
from recorder.serve.spelling import canonical_method, modern
from recorder.serve.webhooks import without_urls

__all__ = ["Key", "Step", "needed_files", "prepare"]

Key = tuple[str, tuple[str, ...], str | None]
"""`Step.key`: the HTTP method, the target's separators, the JSON-RPC method's 1.0 name."""

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
    """A stream's frames' data parsed, each number as written (`JsonNumber`; NOT_JSON: sent
    as recorded); empty for other replies."""
    during: tuple[int, int] | None = None
    """(the exchange this one arrived during, that exchange's frames sent by then)."""
    waited: dict[int, list[int]] = field(default_factory=dict)
    """frames sent -> the later exchanges that arrived then (this reply waits for them)."""
    rules: PairingRules | None = None
    """The pairing rules the steps were prepared with, for `reply_key`."""
    body: bytes = b""
    """The request body as sent: a body that is no JSON with its literals read back
    (`recorder.format.literals`; a JSON body's are the same strings once read)."""
    templates: dict[str, Template] = field(default_factory=dict)
    """The request's texts that hold placeholders (a secret the recorder took out), by their
    value as matched (a target piece, a header value, a JSON string, a body that is no JSON):
    those placeholders match any value, and a literal `{{NAME}}` only itself."""

    @functools.cached_property
    def key(self) -> Key:
        """What a matching live request has the same (`LiveRequest.key`): the method, the
        target's separators, the JSON-RPC method. Compared first, as a cheap filter."""
        return (
            self.exchange.request.method,
            tuple(self.pieces[1::2]),
            canonical_method(self.rpc_method),
        )

    @functools.cached_property
    def request_identity(self) -> tuple[Any, ...]:
        """What matching reads of this step in a new conversation (its request as recorded,
        whether its agent knew the method; no earlier id needed): two steps with one identity
        match a live request alike."""
        request = self.exchange.request
        significant = tuple(sorted(self.significant.items()))
        return (
            request.method,
            request.target,
            significant,
            request.body,
            self.needs,
            self.unknown_method,
        )

    @functools.cached_property
    def unknown_method(self) -> bool:
        """Whether the recorded reply says the method is unknown (JSON-RPC -32601,
        `METHOD_NOT_FOUND`)."""
        response = self.exchange.response
        if response.events is not None or _METHOD_NOT_FOUND not in response.body:
            return False
        value = json_value(response.body, exact_numbers=False)
        error = value.get("error") if isinstance(value, dict) else None
        return isinstance(error, dict) and error.get("code") == jsonrpc.METHOD_NOT_FOUND

    @functools.cached_property
    def spelled(self) -> tuple[Any, bool]:
        """(the request body spelled as A2A 1.0, whether it is spelled as 0.3)."""
        return modern(self.json)

    @functools.cached_property
    def unhooked(self) -> tuple[Any, Any]:
        """(the request body as recorded, as spelled in A2A 1.0), each with its push configs'
        urls blank when it registers one (`without_urls`: what is matched of it), else None."""
        request = self.exchange.request
        forms = (self.json, self.spelled[0])
        blank = [
            without_urls(form, request)
            if config_objects(request.method, request.target, form)
            else None
            for form in forms
        ]
        return blank[0], blank[1]

    @functools.cached_property
    def reply_templates(self) -> dict[str, Template]:
        """The recorded reply's texts that hold placeholders (a secret of the client's that
        the reply echoed: a push config's token read back), by their value as rendered (a
        JSON string, a body or frame that is no JSON, as sent): `Renderer` fills those with
        what the request's placeholders matched live, and serves a literal `{{NAME}}` as it
        is."""
        response = self.exchange.response
        found: dict[str, Template] = {}
        if response.events is not None:
            texts = [
                (event.data, n < len(self.frames) and self.frames[n] is not NOT_JSON)
                for n, event in enumerate(response.events)
                if event.data is not None
            ]
        else:
            is_json = response.is_json and response.json is not None  # (as `Renderer` reads)
            texts = [(response.body.decode("utf-8", "replace"), is_json)]
        for text, is_json in texts:
            if "{{" not in text:
                continue
            if is_json:
                found.update(json_templates(text))
            else:
                held = template(text)
                if held is not None:
                    found[held.value] = held
        return found

    @functools.cached_property
    def reply_key(self) -> str:
        """The recorded reply (status, body or frames) with what a conversation makes its own
        held still: each generated value (`PairingRules.generated_values`: a task id, a
        messageId, a uuid or time inside a text) as an alias numbered by first appearance,
        and a JSON-RPC reply's `id`, where it is the request's own, as `<rpc-id>` (what
        `Renderer` gives the live values). Two steps with one key answer alike."""
        response = self.exchange.response
        if response.events is not None:
            parts = [
                (event.data or "", self.frames[n] if n < len(self.frames) else NOT_JSON)
                for n, event in enumerate(response.events)
            ]
        else:
            body = response.body.decode("utf-8", "replace")
            parts = [(body, json_value(response.body) if response.is_json else NOT_JSON)]
        aliases: dict[str, str] = {}  # (numbered on from one frame to the next)
        held = [self._held(text, value, aliases) for text, value in parts]
        return f"{response.status} " + "\n".join(held)

    def _held(self, text: str, value: Any, aliases: dict[str, str]) -> str:
        """One body or frame, its generated values aliased (`aliases`: those so far)."""
        rules = self.rules
        if rules is None:
            return text
        if value is not NOT_JSON:
            found = rules.generated_values(value)
        else:
            found = [(m.group(), (m.lastgroup or "k_?")[2:]) for m in rules.shape_matches(text)]
        for generated, kind in found:
            if generated not in aliases:
                aliases[generated] = f"<{kind}:{len(aliases) + 1}>"

        def still(item: Any, top: bool = False) -> Any:
            if isinstance(item, str):
                whole = aliases.get(item)
                if whole is not None:
                    return whole
                if rules.shapes is None or (rules.dashed and "-" not in item):
                    return item
                return rules.shapes.sub(lambda m: aliases.get(m.group(), m.group()), item)
            if isinstance(item, dict):
                out = {key: still(member) for key, member in item.items()}
                if top and jsonrpc.is_jsonrpc(item) and "id" in item and self._own_id(item):
                    out["id"] = "<rpc-id>"
                return out
            if isinstance(item, list):
                return [still(member) for member in item]
            return item

        if value is NOT_JSON:
            return str(still(text))
        return compact_json(still(value, True)).decode()  # (a `JsonNumber` as its text)

    def _own_id(self, reply: dict[str, Any]) -> bool:
        """Whether a JSON-RPC reply's `id` is its request's (the live client's, when served)."""
        request = self.json
        return isinstance(request, dict) and request.get("id") == reply["id"]

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
    """(the parsed frames of a stream, or [] ; the parsed body of another reply): each number
    as written (the frames are served from these: `recorder.serve.replies`)."""
    response = exchange.response
    if response.events is not None:
        frames = [
            json_value(event.data.encode()) if event.data is not None else NOT_JSON
            for event in response.events
        ]
        return frames, NOT_JSON
    return [], json_value(response.body) if response.body else NOT_JSON


def _templates(request: Request) -> dict[str, Template]:
    """`Step.templates`: read where the placeholders stand, in the request as written (once
    read, a literal `{{NAME}}` and a placeholder are alike)."""
    found: dict[str, Template] = {}

    def add(held: Template | None) -> None:
        if held is not None:
            found.setdefault(held.value, held)

    for piece in target_pieces(request.target):
        add(template(piece, lambda text: unquote(literal_text(text))))
    for value in significant_headers(request.headers).values():
        add(template(value))
    if "{{" in (body := request.body.decode("utf-8", "replace")):
        if request.json is not None:
            found.update((k, v) for k, v in json_templates(body).items() if k not in found)
        else:
            add(template(body))
    return found


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
                json=json_value(request.body),
                needs=needs,
                hands_out=hands_out,
                frames=frames,
                rules=rules,
                body=body_as_sent(request.body, request.json is not None),
                templates=_templates(request),
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
