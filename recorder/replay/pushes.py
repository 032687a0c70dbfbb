"""Push notifications replayed: a file's push configs pointed at the run's receiver, its
recorded deliveries awaited and compared.

A transcript holds the agent's webhook deliveries as exchanges tagged `# @push config N` (N:
the 1-based number of the exchange whose request registered the config, a SendMessage's
`configuration.taskPushNotificationConfig` or a CreateTaskPushNotificationConfig). The player
does not send a delivery (it is the agent's call); `FilePushes`, one per file:

- `prepare`: a request that registers a push config goes out with the config's `url` replaced
  by the receiver's (`recorder.replay.pushrecv`, one path per config), so no delivery of a
  replay reaches the recorded webhook; the receiver answers each delivery with the recorded
  client answer of its place;
- `live`: the agent's echo of the receiver's URL in any reply of the file reads as the URL sent
  (a GetTaskPushNotificationConfig compares as recorded);
- `delivered`: at a delivery's place in the file, the Kth delivery of its config is awaited
  (within the timeout), to be compared like any reply (its body against the recorded request
  body, `as_reply`: aliasing, order; `--update` blesses it so); a delivery that does not come
  is a mismatch (`delivery 3 (push config 1): missing`); `after`: the recorded token header is
  required, and at the config's last recorded delivery each one that arrived beyond it is a
  mismatch (an extra update);
- a delivery recorded `# @forged` (its token was not its config's: someone other than the
  agent sent it, so far as the recorder could tell) is neither sent nor awaited, and is not
  counted among its config's deliveries (`is_forged`).

The parsing of the tag and the body rewrites are pure; the waiting is the receiver's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from recorder.bindings.push_configs import config_objects, is_forged
from recorder.format.model import Exchange, Headers, Request, Response, Transcript
from recorder.replay.pushrecv import Arrival, PushReceiver
from recorder.replay.verdict.diff import Mismatch
from recorder.replay.verdict.live import LiveReply
from recorder.replay.verdict.state import ReplayState

__all__ = [
    "FORGED_NOTE",
    "TOKEN_HEADER",
    "FilePushes",
    "PushReceiver",
    "as_reply",
    "delivery_plan",
    "point_configs",
    "push_config_of",
]

TOKEN_HEADER = "X-A2A-Notification-Token"
FORGED_NOTE = "a delivery recorded @forged (not its config's token): not the agent's, not awaited"


def push_config_of(exchange: Exchange) -> int | None:
    """N of the exchange's `# @push config N` tag (a recorded delivery of config N), or None."""
    return exchange.push_config


def delivery_plan(transcript: Transcript) -> dict[int, list[int]]:
    """Config number -> the 0-based indexes of its recorded deliveries, in file order (a
    `# @forged` one aside: not the agent's, it is not awaited)."""
    plan: dict[int, list[int]] = {}
    for index, exchange in enumerate(transcript.exchanges):
        config = push_config_of(exchange)
        if config is not None and not is_forged(exchange):
            plan.setdefault(config, []).append(index)
    return plan


def point_configs(request: Request, url: str) -> tuple[Request, str | None]:
    """`request` with its push config's `url` set to `url`, and the URL it had; (request,
    None) when it registers no push config."""
    if request.json is None:
        return request, None
    body = json.loads(request.body)  # a copy: the request's parsed body is cached, shared
    found = config_objects(request.method, request.target, body)
    if not found:
        return request, None
    sent = str(found[0]["url"])
    for config in found:
        config["url"] = url
    return replace(request, body=json.dumps(body).encode()), sent


@dataclass
class _Config:
    key: str
    url: str  # the receiver's
    sent: str  # the URL the request had (recorded, its placeholders filled)


class FilePushes:
    """The push configs and deliveries of one file (see the module docstring)."""

    def __init__(self, transcript: Transcript, receiver: PushReceiver) -> None:
        self._exchanges = transcript.exchanges
        self._plan = delivery_plan(transcript)
        self._place = {
            index: (config, place)
            for config, indexes in self._plan.items()
            for place, index in enumerate(indexes, 1)
        }
        self._receiver = receiver
        # the exchanges whose recorded request registers a push config (parsed once: a
        # recorded request's JSON is kept with it)
        self._registering = {
            index
            for index, exchange in enumerate(self._exchanges)
            if exchange.request.is_json
            and config_objects(
                exchange.request.method, exchange.request.target, exchange.request.json
            )
        }
        self._configs: dict[int, _Config] = {}
        self._arrivals: dict[int, Arrival] = {}
        self._missing: dict[int, Mismatch] = {}

    def is_delivery(self, index: int) -> bool:
        """Whether exchange `index` (0-based) is a recorded delivery (awaited, not sent)."""
        return index in self._place

    def is_forged(self, index: int) -> bool:
        """Whether exchange `index` (0-based) is a delivery recorded `# @forged` (its token
        was not its config's: not the agent's call, so neither sent nor awaited)."""
        exchange = self._exchanges[index]
        return exchange.push_config is not None and is_forged(exchange)

    def prepare(self, index: int, request: Request) -> Request:
        """The request of exchange `index` as sent: a push config pointed at the receiver."""
        if index not in self._registering:
            return request  # no push config: no receiver started for it, no body parsed
        receiver = self._receiver
        key = receiver.new_key()
        url = receiver.url(key)
        pointed, sent = point_configs(request, url)
        if sent is None:  # (the request as filled no longer holds one: sent as it is)
            return request
        number = index + 1
        self._configs[number] = _Config(key, url, sent)
        answers = [self._answer(i) for i in self._plan.get(number, ())]
        receiver.answer(key, answers)
        return pointed

    def live(self, reply: LiveReply) -> LiveReply:
        """`reply` with the receiver's URLs read as the URLs the requests had."""
        body = reply.body
        for config in self._configs.values():
            if config.url.encode() in body:
                body = body.replace(config.url.encode(), config.sent.encode())
        if body is reply.body:
            return reply
        return LiveReply(
            reply.status, reply.reason, reply.headers, body, reply.http_version, cut=reply.cut
        )

    def delivered(self, index: int, timeout: float) -> LiveReply | None:
        """Await delivery `index` (0-based exchange), within `timeout`: it as a live reply (its
        body), to compare with `as_reply` of the recorded one; None: it did not come (`after`
        says so)."""
        config_number, place = self._place[index]
        name = f"delivery {place} (push config {config_number})"
        config = self._configs.get(config_number)
        if config is None:
            why = f"none: exchange {config_number} registered no push config"
            self._missing[index] = Mismatch(name, "a delivery", why)
            return None
        arrived = self._receiver.wait(config.key, place, timeout)
        if len(arrived) < place:
            missing = f"missing (none within {timeout:g} s)"
            self._missing[index] = Mismatch(name, "a delivery", missing)
            return None
        arrival = arrived[place - 1]
        self._arrivals[index] = arrival
        content_type = arrival.header("Content-Type") or "application/json"
        return LiveReply(200, "OK", [("Content-Type", content_type)], arrival.body)

    def compare(
        self, state: ReplayState, golden: Exchange, live: LiveReply, index: int
    ) -> tuple[Mismatch, ...]:
        """`state.compare` of exchange `index` (0-based), and for a delivery what `after` adds."""
        return (*state.compare(golden, live, number=index + 1), *self.after(index))

    def after(self, index: int) -> tuple[Mismatch, ...]:
        """What else is wrong with delivery `index`: it did not come; it came without the
        recorded token header; at its config's last recorded delivery, each that came beyond
        it (an extra update)."""
        if index in self._missing:
            return (self._missing[index],)
        arrival = self._arrivals.get(index)
        if arrival is None:
            return ()
        out: list[Mismatch] = []
        golden = self._exchanges[index]
        if golden.request.headers.get(TOKEN_HEADER) is not None and (
            arrival.header(TOKEN_HEADER) is None
        ):
            out.append(Mismatch(f"header {TOKEN_HEADER}", "present", None))
        config_number, place = self._place[index]
        if place == len(self._plan[config_number]):
            # the config's last recorded delivery: what came beyond it is an extra update
            beyond = self._receiver.arrived(self._configs[config_number].key)[place:]
            for extra, more in enumerate(beyond, place + 1):
                out.append(
                    Mismatch(
                        f"delivery {extra} (push config {config_number})",
                        "no delivery",
                        f"an extra one: {_glimpse(more.body)}",
                    )
                )
        return tuple(out)

    def _answer(self, index: int) -> Response:
        return self._exchanges[index].response


def as_reply(golden: Exchange) -> Exchange:
    """A recorded delivery as a reply to compare (or bless): its request's body and
    Content-Type, the request itself without a body (its values are the agent's, not the
    client's); any other exchange as it is."""
    if golden.push_config is None:
        return golden
    request = golden.request
    content_type = request.headers.get("Content-Type") or "application/json"
    return Exchange(
        Request(request.method, request.target),
        Response(200, "OK", Headers([("Content-Type", content_type)]), request.body),
        title=golden.title,
    )


def _glimpse(body: bytes) -> str:
    text = body.decode("utf-8", "replace")
    return text if len(text) <= 120 else text[:119] + "…"
