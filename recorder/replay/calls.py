"""The agent's own calls in a replay: which recorded call a live call stands for, what the
stand-in answers, and the call compared like a reply (pure).

A transcript holds the calls the agent made while it answered an exchange (its model, its MCP
tools, a peer: `# @call NAME exchange N [frame K]` blocks, `recorder.format.model.CallTag`). On
replay the player stands in for those downstreams (`recorder.replay.standin`): each live call
is matched to a recorded call, answered with the recorded reply, and compared:

- **Which recorded call** (`choose_call`): among the calls not yet made of the exchanges open
  in the file, of the downstream the call came to, the first in file order whose request
  matches the live one as `recorder serve` matches a request (`recorder.serve.match`: values
  the file paired read as their live ones, values the agent made up pair with any of their
  kind); else, when none matches, the first in file order (the order within the exchange
  decides: a changed prompt is still the call it was, compared and reported). Headers choose
  nothing: they are the agent's HTTP library's (its version, a retry count), and its API key
  a placeholder.
- **The answer** (`answer_of`): the recorded reply, with the recorded values the file paired
  (and the ones the live call paired) made live, and a JSON-RPC reply's `id` the live
  request's: the agent reads its own ids back.
- **The comparison** (`as_reply`, `live_as_reply`): the agent's request is what the agent
  made, so it is compared as a reply is, by the file's `ReplayState` (aliasing, rules,
  checks): its body as the reply's body, under its Content-Type; its method and target
  besides (`target_mismatches`). Mismatches are named by the call's place: `call 2 (model)
  $.messages[1].content: expected …, got …` (`Mismatch.call`), a recorded call that was not
  made `call 2 (model): not made`, a live call that matches no recorded one `an extra call
  (model): POST /v1/chat/completions`.

A call's number (`call 2`) counts the calls of its exchange, of every downstream, in file
order, from 1: it names one block of the file.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from recorder.bindings import jsonrpc
from recorder.format.jsonbody import json_value
from recorder.format.model import Exchange, Headers, Request, Response, Transcript
from recorder.format.sse import SseEvent
from recorder.replay.verdict.diff import Mismatch
from recorder.replay.verdict.live import LiveReply
from recorder.replay.verdict.strings import map_json_strings
from recorder.rules.pairing import PairingRules
from recorder.serve.match import LiveRequest, Matching, split_target

__all__ = [
    "Candidate",
    "LiveCall",
    "RecordedCall",
    "answer_of",
    "as_reply",
    "choose_call",
    "extra_call",
    "live_as_reply",
    "not_made",
    "recorded_calls",
    "request_as_reply",
    "target_mismatches",
]

# hop-by-hop and framing headers: the stand-in's server writes its own
NOT_ANSWERED_HEADERS = frozenset(
    {"content-length", "transfer-encoding", "connection", "keep-alive", "date", "server"}
)


@dataclass(frozen=True)
class RecordedCall:
    """One call block of a transcript."""

    index: int
    """Its 0-based place among the file's blocks."""
    name: str
    """The downstream it went to (`model`)."""
    exchange: int
    """The 0-based index of the exchange whose answer made it."""
    number: int
    """Its 1-based number among the calls of that exchange."""
    request: Request
    response: Response
    truncated: bool = False
    """The recording ended before its reply did (a stream the agent kept open): the
    stand-in holds it open after the recorded frames."""

    @property
    def label(self) -> str:
        """`call 2 (model)`: how a report names it."""
        return f"call {self.number} ({self.name})"

    @functools.cached_property
    def as_reply(self) -> Exchange:
        """Its request as a reply to compare (`request_as_reply`), made once."""
        return request_as_reply(self.request)


def recorded_calls(transcript: Transcript) -> tuple[RecordedCall, ...]:
    """The call blocks of `transcript`, in file order, numbered within their exchange."""
    found: list[RecordedCall] = []
    counts: dict[int, int] = {}
    for index, exchange in enumerate(transcript.exchanges):
        tag = exchange.call
        if tag is None:
            continue
        owner = tag.exchange - 1
        counts[owner] = counts.get(owner, 0) + 1
        found.append(
            RecordedCall(
                index,
                tag.name,
                owner,
                counts[owner],
                exchange.request,
                exchange.response,
                exchange.truncated,
            )
        )
    return tuple(found)


@dataclass(frozen=True)
class LiveCall:
    """A call as the agent sent it to a stand-in: the downstream's name and the request."""

    name: str
    method: str
    target: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    shown_target: str | None = None
    """The target as a report shows it, its secret query parameters as placeholders
    (`?key={{KEY}}`); None: the target itself."""

    @property
    def content_type(self) -> str | None:
        folded = "content-type"
        return next((v for n, v in self.headers if n.lower() == folded), None)

    @property
    def line(self) -> str:
        """`POST /v1/chat/completions` (its secrets placeholders)."""
        return f"{self.method} {self.shown_target or self.target}"


@dataclass(frozen=True)
class Candidate:
    """The recorded call a live call stands for: `matches` when their requests match as the
    stand-in matches (no difference), and how closely (`score`, `Matching.score`);
    `echoes`: the values the live call made up, paired with the recorded ones (answered
    back)."""

    call: RecordedCall
    matches: bool
    score: tuple[int, int, int, int]
    echoes: Mapping[str, str]
    alike: int = 0
    """How many of the recorded request's headers the live one has with the same value: what
    tells apart the calls of files whose bodies are alike (an MCP `initialize`: the session
    header of the call before it)."""


def _matching(
    call: RecordedCall, live: LiveRequest, rules: PairingRules, mapping: Mapping[str, str]
) -> Matching:
    matching = Matching(rules, frozenset(mapping), mapping, {})
    recorded = call.request
    recorded_json = json_value(recorded.body, exact_numbers=False)  # (as LiveRequest reads)
    matching.compare(
        recorded.method,
        split_target(recorded.target),
        {},  # headers choose nothing (see the module docstring)
        recorded_json,
        recorded.body,
        live,
    )
    return matching


def live_request(live: LiveCall) -> LiveRequest:
    """`live` as `recorder.serve.match` reads a request (headers left out: they choose
    nothing)."""
    request = LiveRequest(live.method, live.target, [], live.body)
    return request


def choose_call(
    live: LiveCall,
    waiting: Sequence[RecordedCall],
    rules: PairingRules,
    mapping: Mapping[str, str],
) -> Candidate | None:
    """The recorded call `live` stands for, among the `waiting` ones (not yet made, in file
    order): the first of its downstream that matches, else the first of its downstream sent
    with the live call's method to its path, else the first of its downstream (compared, its
    differences reported); None when no call of the downstream waits. (An MCP client's GET of
    its event stream and its POST of a tool call may come in either order: a tool call whose
    argument changed is the recorded POST's, not the GET's.)

    `mapping`: recorded -> live values the file paired so far (a task id in a prompt)."""
    request = live_request(live)
    first: Candidate | None = None
    same_route: Candidate | None = None  # (the first sent with the live method to its path)
    route = _route(live.method, live.target)
    for call in waiting:
        if call.name != live.name:
            continue
        matching = _matching(call, request, rules, mapping)
        candidate = Candidate(
            call,
            not matching.differences,
            matching.score,
            matching.echoes,
            _alike(call.request.headers, live.headers),
        )
        if candidate.matches:
            return candidate
        if same_route is None and _route(call.request.method, call.request.target) == route:
            same_route = candidate
        if first is None:
            first = candidate
    return same_route or first


def _route(method: str, target: str) -> tuple[str, str]:
    """A request's method and path (its query left out)."""
    return method.upper(), target.partition("?")[0]


def _alike(recorded: Headers, live: Sequence[tuple[str, str]]) -> int:
    sent = {(name.lower(), value) for name, value in live}
    return sum(1 for name, value in recorded if (name.lower(), value) in sent)


def closeness(
    live: LiveCall, calls: Iterable[RecordedCall], rules: PairingRules, mapping: Mapping[str, str]
) -> tuple[int, int, int, int] | None:
    """The best `Matching.score` of `live` against the `calls` of its downstream (made or
    not), or None when there is none: which file a call no recorded call waits for came
    from."""
    request = live_request(live)
    scores = [
        _matching(call, request, rules, mapping).score for call in calls if call.name == live.name
    ]
    return max(scores) if scores else None


# --------------------------------------------------------------------------- the answer


def answer_of(
    call: RecordedCall,
    live: LiveCall,
    mapping: Mapping[str, str],
    shapes: Any = None,
) -> Response:
    """The stand-in's answer to `live`, standing for `call`: the recorded reply, with each
    recorded value of `mapping` (the file's pairs, and what the live call paired) made live
    in its body or frames, and a JSON-RPC reply's `id` the live request's.

    `shapes` is `PairingRules.shapes` (a value inside a longer string is made live too)."""
    recorded = call.response
    table = dict(mapping)
    rpc_ids = _rpc_ids(call.request.body, live.body)

    def forward(text: str) -> str:
        mapped = table.get(text)
        if mapped is not None:
            return mapped
        if shapes is None or not table:
            return text
        result: str = shapes.sub(lambda m: table.get(m.group(), m.group()), text)
        return result

    def forward_json(text: str) -> str:
        if not table and rpc_ids is None:
            return text
        text = map_json_strings(text, forward) if table else text
        return _with_rpc_id(text, rpc_ids)

    if not table and rpc_ids is None:
        return recorded  # nothing to make live: the recorded reply as it is
    if recorded.events is not None:
        events = []
        changed = False
        for event in recorded.events:
            data = forward_json(event.data) if event.data else event.data
            if data != event.data:
                event, changed = replace(event, data=data), True
            events.append(event)
        return replace(recorded, events=tuple(events)) if changed else recorded
    if recorded.is_json and recorded.body:
        body = forward_json(recorded.body.decode("utf-8", "replace")).encode()
        return replace(recorded, body=body) if body != recorded.body else recorded
    return recorded


def _rpc_ids(recorded_body: bytes, live_body: bytes) -> tuple[Any, Any] | None:
    """(the recorded JSON-RPC request's id, the live one's) when they differ, else None."""
    recorded = json_value(recorded_body, exact_numbers=False)
    live = json_value(live_body, exact_numbers=False)
    if not (jsonrpc.is_jsonrpc(recorded) and jsonrpc.is_jsonrpc(live)):
        return None
    if "id" not in recorded or "id" not in live or recorded["id"] == live["id"]:
        return None
    return recorded["id"], live["id"]


def _with_rpc_id(text: str, ids: tuple[Any, Any] | None) -> str:
    """A JSON-RPC reply's text with its `id` the live request's (`ids`: recorded, live)."""
    if ids is None:
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if not isinstance(value, dict) or value.get("id") != ids[0] or "jsonrpc" not in value:
        return text
    value["id"] = ids[1]
    return json.dumps(value, ensure_ascii=False)


# --------------------------------------------------------------------------- the comparison


def as_reply(call: RecordedCall) -> Exchange:
    """The recorded call's request as a reply to compare (or bless): its body and
    Content-Type (a JSON request compared as a JSON reply)."""
    return call.as_reply


def request_as_reply(request: Request) -> Exchange:
    """A request the agent sent as a reply (`as_reply`): its body and Content-Type."""
    headers = Headers([("Content-Type", request.content_type)] if request.content_type else [])
    return Exchange(
        Request(request.method, request.target), Response(200, "OK", headers, request.body)
    )


def live_as_reply(live: LiveCall) -> LiveReply:
    """The live call's request as a live reply, to compare with `as_reply`."""
    content_type = live.content_type
    headers = [("Content-Type", content_type)] if content_type else []
    return LiveReply(200, "OK", headers, live.body)


def target_mismatches(call: RecordedCall, live: LiveCall) -> tuple[Mismatch, ...]:
    """The call's method and target: another endpoint is another call."""
    out: list[Mismatch] = []
    if call.request.method != live.method:
        out.append(Mismatch("method", call.request.method, live.method, call=call.label))
    if call.request.target != live.target:
        shown = live.shown_target or live.target
        out.append(Mismatch("target", call.request.target, shown, call=call.label))
    return tuple(out)


def not_made(call: RecordedCall) -> Mismatch:
    """`call 2 (model): not made`."""
    return Mismatch("", call.request.target, None, message="not made", call=call.label)


def extra_call(live: LiveCall, note: str = "") -> Mismatch:
    """`an extra call (model): POST /v1/chat/completions` (a live call no recorded one waits
    for)."""
    message = live.line + (f" ({note})" if note else "")
    return Mismatch("", None, live.line, message=message, call=f"an extra call ({live.name})")


def frames_of(response: Response) -> list[bytes]:
    """A streamed reply's frames as the stand-in writes them, one write each."""
    return [_frame(event) for event in response.events or ()]


def _frame(event: SseEvent) -> bytes:
    return "".join(f"{line}\n" for line in event.lines()).encode() + b"\n"
