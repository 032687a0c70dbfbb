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
- `verdict`: at a delivery's place in the file, the Kth delivery of its config is awaited
  (within the timeout) and compared like any reply (its body against the recorded request
  body: aliasing, order), the recorded token header required; a delivery that does not come
  is a mismatch (`delivery 3 (push config 1): missing`), and at the config's last recorded
  delivery so is each one that arrived beyond it (an extra update).

The parsing of the tag and the body rewrites are pure; the waiting is the receiver's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from recorder.model import Exchange, Headers, Request, Response, Transcript
from recorder.push import config_objects
from recorder.replay.diff import Mismatch
from recorder.replay.live import LiveReply
from recorder.replay.pushrecv import Arrival, PushReceiver
from recorder.replay.state import ReplayState

__all__ = [
    "TOKEN_HEADER",
    "FilePushes",
    "PushReceiver",
    "delivery_plan",
    "point_configs",
    "push_config_of",
]

TOKEN_HEADER = "X-A2A-Notification-Token"


def push_config_of(exchange: Exchange) -> int | None:
    """N of the exchange's `# @push config N` tag (a recorded delivery of config N), or None."""
    return exchange.push_config


def delivery_plan(transcript: Transcript) -> dict[int, list[int]]:
    """Config number -> the 0-based indexes of its recorded deliveries, in file order."""
    plan: dict[int, list[int]] = {}
    for index, exchange in enumerate(transcript.exchanges):
        config = push_config_of(exchange)
        if config is not None:
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
        self._configs: dict[int, _Config] = {}

    def is_delivery(self, index: int) -> bool:
        """Whether exchange `index` (0-based) is a recorded delivery (awaited, not sent)."""
        return index in self._place

    def prepare(self, index: int, request: Request) -> Request:
        """The request of exchange `index` as sent: a push config pointed at the receiver."""
        if request.json is None or point_configs(request, "")[1] is None:
            return request  # no push config: no receiver started for it
        receiver = self._receiver
        key = receiver.new_key()
        url = receiver.url(key)
        pointed, sent = point_configs(request, url)
        assert sent is not None
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

    def verdict(
        self, index: int, state: ReplayState, timeout: float
    ) -> tuple[tuple[Mismatch, ...], Arrival | None]:
        """Await delivery `index` (0-based exchange) and compare it with the file's `state`:
        the mismatches, and the delivery (None: it did not come)."""
        config_number, place = self._place[index]
        name = f"delivery {place} (push config {config_number})"
        config = self._configs.get(config_number)
        if config is None:
            why = f"none: exchange {config_number} registered no push config"
            return (Mismatch(name, "a delivery", why),), None
        arrived = self._receiver.wait(config.key, place, timeout)
        if len(arrived) < place:
            missing = Mismatch(name, "a delivery", f"missing (none within {timeout:g} s)")
            return (missing,), None
        arrival = arrived[place - 1]
        golden = self._exchanges[index]
        mismatches = state.compare(_as_reply(golden), _live(arrival), number=index + 1)
        if golden.request.headers.get(TOKEN_HEADER) is not None and (
            arrival.header(TOKEN_HEADER) is None
        ):
            mismatches.append(Mismatch(f"header {TOKEN_HEADER}", "present", None))
        if place == len(self._plan[config_number]):
            # the config's last recorded delivery: what came beyond it is an extra update
            for extra, more in enumerate(arrived[place:], place + 1):
                mismatches.append(
                    Mismatch(
                        f"delivery {extra} (push config {config_number})",
                        "no delivery",
                        f"an extra one: {_glimpse(more.body)}",
                    )
                )
        return tuple(mismatches), arrival

    def _answer(self, index: int) -> Response:
        return self._exchanges[index].response


def _as_reply(golden: Exchange) -> Exchange:
    """A recorded delivery as a reply to compare: its request's body (and Content-Type), the
    request itself without a body (its values are the agent's, not the client's)."""
    request = golden.request
    content_type = request.headers.get("Content-Type") or "application/json"
    return Exchange(
        Request(request.method, request.target),
        Response(200, "OK", Headers([("Content-Type", content_type)]), request.body),
        title=golden.title,
    )


def _live(arrival: Arrival) -> LiveReply:
    content_type = arrival.header("Content-Type") or "application/json"
    return LiveReply(200, "OK", [("Content-Type", content_type)], arrival.body)


def _glimpse(body: bytes) -> str:
    text = body.decode("utf-8", "replace")
    return text if len(text) <= 120 else text[:119] + "…"
