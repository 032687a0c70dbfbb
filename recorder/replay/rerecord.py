"""Keep a re-recorded transcript's generated values when nothing else changed.

Re-recording a scenario against a fresh agent gives new task ids, context ids, timestamps and
`Date` headers. A golden file that is rewritten with all of them would show a `git diff` on
every line that names one, hiding the changes that matter. So, like `recorder play --update`,
the fresh recording is laid over the previous one through the player's aliasing
(`recorder.replay.verdict.state.ReplayState`): the previous file plays the recorded side, the fresh
recording the live side.

- Ids a client picks afresh for every run (an SDK client's uuid JSON-RPC `id` and
  `messageId`) are laid back first (`align_client_values`): where a fresh request differs
  from the previous one only in values wholly of a generated shape (a uuid), at the same
  places, each such fresh value is replaced by the previous one throughout the fresh
  recording (its replies echo them), provided the pairs are one-to-one.
- A request is kept as previously recorded when it is that request with the previously
  learned values carried forward (what the player would send). A request whose method,
  target and body are that but whose headers differ (a client library's new `User-Agent`,
  an added header) is the same call: its headers are the fresh ones, each header the fresh
  recording has unchanged keeping its previous text, so an upgrade is one changed line.
  When a request differs in anything else (the scenario changed), the fresh recording is
  taken whole: keeping the earlier exchanges' ids
  while the later ones name the fresh ids would give a file whose requests carry ids its
  replies never gave (a GetTask of a task no reply in the file made), which fails to replay.
- A reply that matches the previous one (no mismatch) is kept byte for byte; a reply that
  differs gets the previous values back wherever the alias mapping holds (`bless`).
- Titles and comments come from the fresh recording.

Pure: transcripts in, transcript out.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from recorder.format.httpfile import dumps, loads
from recorder.format.jsonvalue import loads as json_loads
from recorder.format.model import Exchange, Headers, Request, Response, Transcript
from recorder.replay.verdict.state import ReplayState
from recorder.rules.pairing import PairingRules
from recorder.rules.ruleset import Rules

__all__ = ["align_client_values", "keep_recorded_values"]

# a request target's parts: path segments, query names and values, `:cancel` suffixes
_TARGET_PARTS = re.compile(r"([/?&=:])")


def keep_recorded_values(previous: Transcript, fresh: Transcript, rules: Rules) -> Transcript:
    """`fresh` with the values `previous` recorded wherever the two say the same thing."""
    live_base = fresh.recorded_base_url
    recorded_base = previous.recorded_base_url
    if live_base is None and _all_grpc(fresh) and _all_grpc(previous):
        # gRPC calls name no host (no Host header, no URL): the two sides share one
        live_base = recorded_base = _NO_HOST
    if live_base is None:
        return fresh
    if len(fresh.exchanges) != len(previous.exchanges):
        return fresh
    fresh = align_client_values(previous, fresh, rules)
    state = ReplayState(rules, recorded_base=recorded_base, live_base=live_base)
    compared: list[tuple[Exchange, Exchange, bool]] = []
    pushed: dict[int, tuple[Response, Response, bool]] = {}  # a delivery's request, as a reply
    requests: dict[int, Request] = {}  # a request kept, its headers refreshed
    for number, (old, new) in enumerate(zip(previous.exchanges, fresh.exchanges, strict=True)):
        if old.sent_by_agent or new.sent_by_agent:
            # a push delivery, a call: the agent made its request, so it pairs as a reply does
            if _agent_sent(old) != _agent_sent(new) or old.request.target != new.request.target:
                return fresh
            golden, live = _as_reply(old.request), _as_reply(new.request)
            unpaired = Exchange(
                request=Request(method="POST", target=old.request.target), response=golden
            )
            pushed[number] = (golden, live, not state.compare(unpaired, live))
        else:
            prepared = state.prepare(old.request)
            if not _same_call(prepared, new.request):
                return fresh
            requests[number] = _headers_refreshed(old.request, prepared, new.request)
        compared.append((old, new, not state.compare(old, new.response)))
    # blessed once all are compared: a value a later exchange pairs is put back everywhere
    kept = []
    for number, (old, new, matched) in enumerate(compared):
        request = requests.get(number, old.request)
        if number in pushed:
            golden, live, same = pushed[number]
            body = state.bless(golden, live, matched=same).body
            request = old.request if same else dataclasses.replace(new.request, body=body)
        kept.append(
            dataclasses.replace(
                new,
                request=request,
                response=state.bless(old.response, new.response, matched=matched),
            )
        )
    return dataclasses.replace(fresh, exchanges=tuple(kept))


_NO_HOST = "http://grpc.invalid"


def _agent_sent(exchange: Exchange) -> tuple[int | None, str | None, int | None]:
    """What a request the agent sent was for: its push config, or its call's downstream and
    exchange (a call's frame is timing, which a re-recording may change)."""
    call = exchange.call
    return (exchange.push_config, *((call.name, call.exchange) if call else (None, None)))


def _same_call(prepared: Request, fresh: Request) -> bool:
    """Whether `fresh` is the recorded request `prepared` (its recorded values carried
    forward) but for its headers: the same method, target, version and body."""
    return (
        prepared.method == fresh.method
        and prepared.target == fresh.target
        and prepared.http_version == fresh.http_version
        and prepared.body == fresh.body
    )


def _headers_refreshed(old: Request, prepared: Request, fresh: Request) -> Request:
    """`old` with the fresh recording's headers, in its order: a header the fresh request
    sends as `prepared` (the old one carried forward) did keeps its old text (the recorded
    ids, a secret's placeholder), one it sends otherwise or anew is the fresh one. `old` as
    it is when the headers are the same."""
    if prepared.headers == fresh.headers:
        return old
    if len(prepared.headers) != len(old.headers):
        return dataclasses.replace(old, headers=fresh.headers)
    seen: dict[str, int] = {}
    before: dict[tuple[str, int], tuple[str, str, str]] = {}  # (name, nth) -> prepared, old
    for (name, value), (_, old_value) in zip(prepared.headers, old.headers, strict=True):
        key = name.lower()
        before[key, seen.get(key, 0)] = (name, value, old_value)
        seen[key] = seen.get(key, 0) + 1
    seen.clear()
    headers: list[tuple[str, str]] = []
    for name, value in fresh.headers:
        key = name.lower()
        nth = seen.get(key, 0)
        seen[key] = nth + 1
        earlier = before.get((key, nth))
        if earlier is not None and earlier[1] == value:
            headers.append((earlier[0], earlier[2]))
        else:
            headers.append((name, value))
    return dataclasses.replace(old, headers=Headers(headers))


def _all_grpc(transcript: Transcript) -> bool:
    return bool(transcript.exchanges) and all(e.request.is_grpc for e in transcript.exchanges)


def _as_reply(request: Request) -> Response:
    """A push delivery's request as a reply the player compares: its JSON body."""
    content_type = request.headers.get("Content-Type") or "application/json"
    return Response(
        status=200, headers=Headers([("Content-Type", content_type)]), body=request.body
    )


def align_client_values(previous: Transcript, fresh: Transcript, rules: Rules) -> Transcript:
    """`fresh` with the generated-shape values its requests carry where `previous`'s requests
    carry others, at the same places (request path segments, JSON body members), replaced by
    those throughout (requests and replies). `fresh` as it is when the requests differ in
    anything else at those places' level, when a pair is not one-to-one, or when nothing
    differs."""
    if len(fresh.exchanges) != len(previous.exchanges):
        return fresh
    pairing = PairingRules(rules)
    pairs: dict[str, str] = {}  # fresh -> previous
    for old, new in zip(previous.exchanges, fresh.exchanges, strict=True):
        if not _pair_requests(old.request, new.request, pairing, pairs):
            return fresh
    if not pairs or len(set(pairs.values())) != len(pairs):
        return fresh
    pattern = re.compile("|".join(re.escape(value) for value in sorted(pairs, key=len)[::-1]))
    text = pattern.sub(lambda match: pairs[match.group()], dumps(fresh))
    return loads(text)


def _pair_requests(
    old: Request, new: Request, pairing: PairingRules, pairs: dict[str, str]
) -> bool:
    if old.method != new.method:
        return False
    old_parts, new_parts = _TARGET_PARTS.split(old.target), _TARGET_PARTS.split(new.target)
    if len(old_parts) != len(new_parts):
        return False
    for a, b in zip(old_parts, new_parts, strict=True):
        if a != b and not _pair(a, b, pairing, pairs):
            return False
    if old.body == new.body:
        return True
    if not (old.is_json and new.is_json):
        return False
    try:
        # (each number as its text says: 12345678901234567.89 and ...88, -0 and 0, differ)
        old_value, new_value = json_loads(old.body), json_loads(new.body)
    except (ValueError, RecursionError):
        return False
    return _pair_values(old_value, new_value, pairing, pairs)


def _pair_values(old: Any, new: Any, pairing: PairingRules, pairs: dict[str, str]) -> bool:
    stack = [(old, new)]
    while stack:
        a, b = stack.pop()
        if isinstance(a, dict) and isinstance(b, dict):
            if list(a) != list(b):
                return False
            stack.extend((a[name], b[name]) for name in a)
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif isinstance(a, str) and isinstance(b, str):
            if a != b and not _pair(a, b, pairing, pairs):
                return False
        elif a != b or type(a) is not type(b):
            return False
    return True


def _pair(old: str, new: str, pairing: PairingRules, pairs: dict[str, str]) -> bool:
    """Pair the fresh `new` with the previous `old` when both are wholly of one generated
    shape (a uuid) and `new` is not already paired with another value."""
    kind = pairing.shape_kind(old)
    if kind is None or kind in pairing.loose or pairing.shape_kind(new) != kind:
        return False
    return pairs.setdefault(new, old) == old
