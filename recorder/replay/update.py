"""What `recorder play --update` writes: the blessed replies of the exchanges that mismatched,
put back into their golden file, and when it must leave a file as it was.

A blessed reply is the live one with the golden generated values put back wherever the alias
mapping holds (`ReplayState.bless`), redacted as the recorder redacts. Only the rewritten
replies change: the rest of the file stays as it is, byte for byte where it can.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from recorder.disk.atomic import write_text_atomic
from recorder.errors import ParseError
from recorder.format.httpfile import dumps, loads, splice
from recorder.format.model import Exchange, Response, Transcript
from recorder.replay.calls import request_as_reply
from recorder.replay.pushes import as_reply
from recorder.replay.reports.results import ExchangeResult
from recorder.replay.verdict.state import LiveReply, ReplayState
from recorder.rules.noise import Replies, propose
from recorder.rules.ruleset import Rules
from recorder.secrets.redact import Redactor, scrub_response

__all__ = [
    "blessed_exchanges",
    "noise_refusal",
    "why_not_updated",
    "write_exchanges",
]


def blessed_exchanges(
    transcript: Transcript,
    state: ReplayState,
    rules: Rules,
    live: Mapping[int, LiveReply],
    secrets: Mapping[str, str],
) -> dict[int, Exchange]:
    """The exchanges of `transcript` (by 0-based index) whose reply --update rewrites from the
    `live` replies, each blessed through `state`; an exchange whose blessed reply is the
    recorded one is left out.

    A `truncated` recording stays truncated when its live stream was read only up to the
    recorded frames (`LiveReply.cut`); one whose live reply ended by itself loses the tag.

    Secrets never reach the disk: a blessed reply is redacted as the recorder redacts
    (rules.secret_headers, rules.secret_fields), and the `secrets` (value -> placeholder name:
    the values of {{A2A_TOKEN}} and the like) are scrubbed wherever such a reply echoes them.
    """
    redactor = Redactor(
        headers=rules.secret_headers,
        fields=rules.secret_fields,
        url_fields=rules.secret_url_fields,
    )
    blessed: dict[int, Response] = {}
    for index in sorted(live):
        exchange = transcript.exchanges[index]
        # a push delivery, a call the agent made: its request's body
        golden = request_as_reply(exchange.request) if exchange.call else as_reply(exchange)
        response = state.bless(golden.response, live[index], matched=False, number=index + 1)
        blessed[index] = redactor.redact_response(response)
    scrubbed = {**redactor.seen, **secrets}
    replaced: dict[int, Exchange] = {}
    for index, response in blessed.items():
        golden = transcript.exchanges[index]
        response = scrub_response(response, scrubbed)
        # a truncated recording whose live reply was read to its end is whole now
        truncated = golden.truncated and live[index].cut
        if truncated and golden.request.is_grpc:
            response = _left_as_recorded(golden.response, response)
        if golden.push_config is not None or golden.call is not None:
            # a delivery, a call: the agent's request is what was blessed, the answer stays
            if response.body != golden.request.body:
                replaced[index] = replace(
                    golden, request=replace(golden.request, body=response.body)
                )
        elif response != golden.response or truncated != golden.truncated:
            replaced[index] = replace(golden, response=response, truncated=truncated)
    return replaced


def _left_as_recorded(recorded: Response, blessed: Response) -> Response:
    """A gRPC call cut where its recording ends, blessed: its messages the live ones, its
    status, trailers (and, no message read, its body) the recorded ones, which say how the
    recording's client left; the cut replay read no status."""
    if not blessed.events:
        return replace(
            blessed,
            status=recorded.status,
            reason=recorded.reason,
            trailers=recorded.trailers,
            body=recorded.body,
            events=recorded.events,
        )
    return replace(
        blessed, status=recorded.status, reason=recorded.reason, trailers=recorded.trailers
    )


def write_exchanges(path: str, transcript: Transcript, replaced: Mapping[int, Exchange]) -> bool:
    """Write `transcript`, with the `replaced` exchanges, back to `path` (atomically).

    Returns False, writing nothing, when the file no longer holds `transcript`: it was edited
    while it was played, and writing the update would lose the edit.
    """
    try:
        with open(path, encoding="utf-8", newline="") as file:
            original = file.read()
        current = loads(original, source=path)
    except (OSError, UnicodeDecodeError, ParseError):
        current = None
    if current is None or (current.exchanges, current.comments) != (
        transcript.exchanges,
        transcript.comments,
    ):
        return False
    text = splice(original, transcript, replaced)
    if text is None:
        exchanges = tuple(replaced.get(i, e) for i, e in enumerate(transcript.exchanges))
        text = dumps(replace(transcript, exchanges=exchanges))
    write_text_atomic(Path(path), text)
    return True


def why_not_updated(
    results: Mapping[int, ExchangeResult],
    no_reply: int | None,
    to_bless: Iterable[int],
    selected: Iterable[int],
    unpaired: Mapping[int, tuple[str | None, int]] | None = None,
) -> str | None:
    """Why --update must leave a file as it is, or None: an exchange got no reply (`no_reply`,
    0-based), or a request had to carry a recorded id that no live reply paired (blessing its
    reply would write the agent's answer about an id it never made into the golden file).

    `results` are the verdicts so far, `to_bless` the exchanges whose replies would be
    rewritten, `selected` the exchanges the run reports, `unpaired` the exchanges that sent
    such an id, each with the exchange that generated it: (None, its number) in this file,
    (the file's name, its number) in another file of the run (`recorder.replay.origins`).
    """
    if no_reply is not None:
        return f"exchange {no_reply + 1} got no reply"
    unpaired = unpaired or {}
    for index in sorted({*selected, *to_bless}):
        result = results.get(index)
        if result is None or not result.played:
            continue
        origin = unpaired.get(index)
        if origin is not None and result.mismatches:
            other, number = origin
            if other is not None:
                return (
                    f"exchange {result.number} sent a recorded id that exchange {number} of"
                    f" {other} generated,"
                    " and no reply in this file paired it; record the two together, or use"
                    " one scenario"
                )
            return (
                f"exchange {result.number} sent a recorded id that no live reply paired;"
                " fix the exchange before it, or record this scenario again"
            )
    return None


def noise_refusal(
    transcript: Transcript,
    first: Mapping[int, LiveReply],
    second: Mapping[int, LiveReply],
    indices: Iterable[int],
    rules: Rules,
) -> str | None:
    """Why --update must not bless the exchanges `indices`, or None: their live replies in two
    runs (`first`, `second`) differ at a place the rules do not absorb (`recorder.rules.noise`, as
    `recorder learn` would see it). Blessing it would write a volatile value into the golden
    file, and the next replay would fail there without a hint. The reason names the rule.

    `indices` may name call blocks (`# @call`): a call's live requests are compared as its
    comparison sees them (its request's body in a reply's place), and it is named as a report
    names it (`call 2 (model) of exchange 1`)."""
    played = [index for index in sorted(indices) if index in first and index in second]
    replies = [
        Replies(
            _where(transcript, index),
            _golden(transcript, index).response,
            (first[index].response, second[index].response),
            exchange=index + 1,
        )
        for index in played
    ]
    found = propose(replies, rules).rules
    if not found:
        return None
    noise = found[0]
    # (a checks proposal names its place by the block's number: a call is named as a report
    # names it)
    names = {f"exchange {index + 1}": _where(transcript, index) for index in played}
    where = names.get(noise.where[0], noise.where[0])
    more = f" ({len(found) - 1} more such places)" if len(found) > 1 else ""
    return (
        f"{where} differs between two live runs at {noise.target}{more}: noise, not a"
        f" change; add `{noise.rule_text()}` to the rules, or run `recorder learn`"
    )


def _golden(transcript: Transcript, index: int) -> Exchange:
    """Block `index` as its live reply is compared: a call's request, a delivery's request,
    an exchange's reply."""
    exchange = transcript.exchanges[index]
    return request_as_reply(exchange.request) if exchange.call else as_reply(exchange)


def _where(transcript: Transcript, index: int) -> str:
    """`exchange 3`, or for a call block `call 2 (model) of exchange 1` (its number among
    that exchange's calls, as the reports count)."""
    call = transcript.exchanges[index].call
    if call is None:
        return f"exchange {index + 1}"
    number = sum(
        1
        for other in transcript.exchanges[:index]
        if other.call is not None and other.call.exchange == call.exchange
    )
    return f"call {number + 1} ({call.name}) of exchange {call.exchange}"
