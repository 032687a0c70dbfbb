"""The recorded reply, made this conversation's (pure).

- Values the recording's reply handed out are the ones handed out live (`Branch.to_live`:
  as recorded, or fresh).
- Values the recorded client sent and the reply echoed (a `messageId` in the history, a uuid
  the client made up) are the live client's (`Branch.echo`); the JSON-RPC `id` of the reply is
  the live request's when the recorded reply's was the recorded request's.
- The recorded agent's address (`http://localhost:41242` in card interface URLs) is the
  stand-in's, as the client reached it.
- A stream's frames are rendered one by one; `pacing` gives the waits between them that the
  frames' own timestamps show.
- Every number is written as it was recorded (`JsonNumber`: `12345678901234567.89`, `1.50`,
  `-0` as they went over the wire), every literal `{{NAME}}` as it was sent.
"""

from __future__ import annotations

import itertools
import re
from datetime import datetime
from typing import Any

from recorder.addresses import address_in_urls
from recorder.bindings import jsonrpc
from recorder.bindings.grpc import BINDING
from recorder.format.jsonbody import NOT_JSON, compact_json, json_value
from recorder.format.literals import PLACEHOLDER, literal_text
from recorder.format.sse import SseEvent, serialize
from recorder.rules.pairing import PairingRules
from recorder.serve.book import Branch
from recorder.serve.match import random_template
from recorder.serve.steps import Step

__all__ = ["Renderer", "grpc_card", "grpc_card_reply", "pacing"]

_DROPPED = frozenset({"date", "server", "content-length", "transfer-encoding", "connection"})


class Renderer:
    """Renders one step's reply for one branch and one live request."""

    def __init__(
        self,
        rules: PairingRules,
        step: Step,
        branch: Branch,
        rpc_id: Any,
        address: str | None,
        *,
        grpc: str | None = None,
    ) -> None:
        self.rules = rules
        self.grpc = grpc  # the stand-in's gRPC address: a card's GRPC interface names it
        self.step = step
        # (what the request's placeholders matched live, by `{{NAME}}`: filled where the
        # recorded reply has the placeholder, never where it has a literal spelled alike)
        self.placeheld = {k: v for k, v in branch.echo.items() if PLACEHOLDER.fullmatch(k)}
        echo = {k: v for k, v in branch.echo.items() if k not in self.placeheld}
        self.values = {**echo, **branch.to_live}
        # the client's values with a random part (`tck-missing-af33c277`), wherever a recorded
        # text quotes them ("Task tck-missing-af33c277 not found"); uuids are found as shapes
        quoted = sorted(
            (
                value
                for value, live in branch.echo.items()
                if value != live
                and random_template(value) is not None
                and rules.shape_kind(value) is None
            ),
            key=len,
            reverse=True,
        )
        self.quoted = re.compile("|".join(map(re.escape, quoted))) if quoted else None
        self.address = address_in_urls(step.host) if address else None
        self.live_address = f"//{address}"
        request_json = step.json
        self.recorded_id = request_json.get("id") if isinstance(request_json, dict) else None
        self.rpc_id = rpc_id

    def headers(self) -> list[tuple[str, str]]:
        """The recorded reply's headers, less those the server sets itself."""
        return [
            (
                name,
                literal_text(value),
            )  # (a literal `{{NAME}}` as sent: `recorder.format.literals`)
            for name, value in self.step.exchange.response.headers
            if name.lower() not in _DROPPED
        ]

    def body(self) -> bytes:
        """The whole body of a reply that is no stream."""
        response = self.step.exchange.response
        value = json_value(response.body) if response.is_json else NOT_JSON
        if value is NOT_JSON:
            return self._text(literal_text(response.body.decode("utf-8", "replace"))).encode()
        rendered = self._value(value, top=True)
        return compact_json(grpc_card_reply(rendered, self.grpc))

    def frame_data(self, number: int) -> str | None:
        """The data of frame `number` of a stream, rendered (a gRPC stream's message)."""
        event = (self.step.exchange.response.events or ())[number]
        parsed = self.step.frames[number] if number < len(self.step.frames) else NOT_JSON
        if parsed is NOT_JSON:
            return None if event.data is None else self._text(literal_text(event.data))
        return compact_json(self._value(parsed, top=True)).decode()

    def frame(self, number: int) -> bytes:
        """Frame `number` of a stream, as SSE bytes."""
        events = self.step.exchange.response.events or ()
        event = events[number]
        data = self.frame_data(number)
        return serialize(
            [
                SseEvent(
                    data=data,
                    event=event.event,
                    id=None if event.id is None else literal_text(event.id),
                    retry=event.retry,
                    comments=event.comments,
                )
            ]
        )

    # ------------------------------------------------------------------ values

    def _value(self, value: Any, *, top: bool = False) -> Any:
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, dict):
            rpc = top and jsonrpc.is_jsonrpc(value)
            out = {key: self._value(item) for key, item in value.items()}
            if (
                rpc
                and "id" in value
                and value["id"] == self.recorded_id
                and self.rpc_id is not None
            ):
                out["id"] = self.rpc_id
            return out
        if isinstance(value, list):
            return [self._value(item) for item in value]
        return value

    def _text(self, text: str) -> str:
        if "{{" in text:
            held = self.step.reply_templates.get(text)
            if held is not None:
                text = held.filled(self.placeheld)
        values = self.values
        whole = values.get(text)
        if whole is not None:
            return whole
        if values and "-" in text and self.rules.shapes is not None:
            pieces: list[str] = []
            last = 0
            for match in self.rules.shape_matches(text):
                found = values.get(match.group())
                if found is not None:
                    pieces.extend((text[last : match.start()], found))
                    last = match.end()
            if pieces:
                pieces.append(text[last:])
                text = "".join(pieces)
        if self.quoted is not None:
            text = self.quoted.sub(lambda m: values.get(m.group(), m.group()), text)
        if self.address is not None and "//" in text:
            text = self.address.sub(self.live_address, text)
        return text


def grpc_card(value: dict[str, Any], address: str | None) -> dict[str, Any]:
    """An agent card (a JSON object with `supportedInterfaces`) whose GRPC interface is
    `address` (one added, as the card's first interface's version, when it lists none);
    None (the stand-in serves no gRPC): the card without its GRPC interface, so that no
    client dials the recorded agent's address."""
    interfaces = value.get("supportedInterfaces")
    if not isinstance(interfaces, list) or not interfaces:
        return value

    def grpc(item: Any) -> bool:
        return isinstance(item, dict) and item.get("protocolBinding") == BINDING

    if address is None:
        if not any(map(grpc, interfaces)):
            return value
        return {**value, "supportedInterfaces": [i for i in interfaces if not grpc(i)]}
    fixed = [{**item, "url": address} if grpc(item) else item for item in interfaces]
    if not any(map(grpc, interfaces)):
        first = interfaces[0] if isinstance(interfaces[0], dict) else {}
        version = first.get("protocolVersion", "1.0")
        fixed.append({"url": address, "protocolBinding": BINDING, "protocolVersion": version})
    return {**value, "supportedInterfaces": fixed}


def grpc_card_reply(value: Any, address: str | None) -> Any:
    """`grpc_card` of a reply that is a card, or holds one as its JSON-RPC `result`
    (GetExtendedAgentCard); any other value as it is."""
    if not isinstance(value, dict):
        return value
    value = grpc_card(value, address)
    result = value.get("result")
    if jsonrpc.is_jsonrpc(value) and isinstance(result, dict):
        value = {**value, "result": grpc_card(result, address)}
    return value


def pacing(step: Step, rules: PairingRules, *, limit: float) -> list[float]:
    """The seconds to wait before each frame of a stream (0 for the first): the difference of
    the first RFC 3339 time in each frame and in the one before, 0 when either has none or
    time went back, at most `limit`."""
    times: list[datetime | None] = []
    for event in step.exchange.response.events or ():
        when = None
        for match in rules.shape_matches(event.data or ""):
            if match.lastgroup == "k_time":
                try:
                    when = datetime.fromisoformat(match.group().replace("z", "Z"))
                except ValueError:
                    when = None
                break
        times.append(when)
    waits = [0.0]
    for before, after in itertools.pairwise(times):
        seconds = (after - before).total_seconds() if before and after else 0.0
        waits.append(min(limit, max(0.0, seconds)))
    return waits
