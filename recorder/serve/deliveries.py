"""The stand-in's push notifications: the recorded deliveries sent to the live client's webhook.

A transcript holds the agent's webhook deliveries as exchanges tagged `# @push config N` (N:
the exchange whose request registered the config). The stand-in never answers them (a client
does not send them: `Book` skips them); `Deliveries` sends them:

- when a request that registers a push config is answered, its live config (the client's
  `url`, `token`, `authentication`) is kept for the conversation, by N, and the recorded url
  reads as the live one in the replies (a CreateTaskPushNotificationConfig's echo);
- after a reply, the deliveries that follow its exchange in the file (up to the next exchange
  that is not one) are POSTed in order, each to its config's live `url`, its body the
  recorded one with the conversation's live ids (`Renderer`, as a reply is), the recorded
  token header filled with the live config's token (and `Authorization` from its
  `authentication`); a config the client never registered live is not delivered to, and a
  delivery recorded `# @forged` (not its config's token: not the agent's) is not sent. Like
  the recorder (`recorder.push_urls`), the stand-in delivers to http(s) webhooks on public or
  loopback addresses only (a host name looked up and the delivery pinned to the address
  screened), and never makes a URL's credentials Basic auth.

The sends run in background tasks on the serving loop, one chain per conversation so that
they keep the recorded order; a webhook that fails is logged (`recorder.serve`), never raised.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from typing import Any

import httpx

from recorder.bindings.push_configs import config_objects, is_forged
from recorder.format.model import Exchange, Response
from recorder.push_urls import WebhookScreen, webhook_target
from recorder.rules.pairing import PairingRules
from recorder.serve.book import Branch, Found
from recorder.serve.match import LiveRequest
from recorder.serve.replies import Renderer
from recorder.serve.steps import Step

__all__ = ["TOKEN_HEADER", "Deliveries", "following_deliveries"]

TOKEN_HEADER = "X-A2A-Notification-Token"
DELIVERY_TIMEOUT = 10.0  # seconds for one webhook to answer
# where the stand-in delivers: where the recorder does for local work (`recorder.push_urls`:
# http(s), public addresses and loopback, never a link-local or private one)
SCREEN = WebhookScreen(loopback=True)

logger = logging.getLogger("recorder.serve")


def following_deliveries(steps: list[Step], index: int) -> list[Step]:
    """The deliveries recorded right after exchange `index` of a file, in order (pure); one
    recorded `# @forged` (not its config's token: not the agent's) is not sent."""
    out: list[Step] = []
    for step in steps[index + 1 :]:
        if step.exchange.push_config is None:
            break
        if not is_forged(step.exchange):
            out.append(step)
    return out


@dataclasses.dataclass(frozen=True)
class _LiveConfig:
    url: str
    token: str | None
    authorization: str | None


def _live_config(live: LiveRequest) -> _LiveConfig | None:
    found = config_objects(live.method, live.target, live.json)
    if not found:
        return None
    config = found[0]
    token = config.get("token")
    auth = config.get("authentication")
    authorization = None
    if isinstance(auth, dict) and auth.get("scheme") and auth.get("credentials"):
        authorization = f"{auth['scheme']} {auth['credentials']}"
    return _LiveConfig(str(config["url"]), token if isinstance(token, str) else None, authorization)


class Deliveries:
    """The push configs registered live, and the deliveries sent to them (module docstring).
    Used from the serving loop only."""

    def __init__(self, steps: list[list[Step]], rules: PairingRules) -> None:
        self._steps = steps
        self._rules = rules
        # (the conversation, N) -> the live config (its branches speak of the same task)
        self._configs: dict[tuple[int, int], _LiveConfig] = {}
        self._chains: dict[int, asyncio.Task[None]] = {}
        self._running = 0
        self._idle = threading.Event()
        self._idle.set()
        self.delivered = 0
        """Deliveries the client's webhooks answered with a 2xx."""
        self.failed = 0

    def registered(self, found: Found, live: LiveRequest) -> None:
        """Before `found` answers `live`: a push config it registers is kept, and its recorded
        url reads as the client's live one in the replies (the agent's echo of it)."""
        step, number = found.step, found.conversation.number
        config = _live_config(live)
        if config is None:
            return
        self._configs[(number, step.index + 1)] = config
        request = step.exchange.request
        for recorded in config_objects(request.method, request.target, step.json):
            for branch in found.conversation.branches:
                branch.echo[str(recorded["url"])] = config.url

    def answered(self, found: Found, live: LiveRequest, host: str | None) -> None:
        """`found` answered `live`: send the deliveries that follow it (in the background,
        after the deliveries sent before in this conversation)."""
        step, branch, number = found.step, found.branch, found.conversation.number
        following = following_deliveries(self._steps[step.file], step.index)
        if not following:
            return
        sends = [
            (
                self._body(s, branch, host),
                s,
                self._configs.get((number, s.exchange.push_config or 0)),
            )
            for s in following
        ]
        previous = self._chains.get(number)
        self._running += 1
        self._idle.clear()
        self._chains[number] = asyncio.ensure_future(self._send_all(previous, sends))

    def _body(self, step: Step, branch: Branch, host: str | None) -> bytes:
        request = step.exchange.request
        # the delivery's body rendered as a reply is, with the conversation's live values
        as_reply = Exchange(request, Response(200, "OK", request.headers, request.body))
        renderer = Renderer(
            self._rules, dataclasses.replace(step, exchange=as_reply), branch, None, host
        )
        return renderer.body()

    async def _send_all(
        self,
        previous: asyncio.Task[None] | None,
        sends: list[tuple[bytes, Step, _LiveConfig | None]],
    ) -> None:
        try:
            if previous is not None:
                await asyncio.gather(previous, return_exceptions=True)
            # no keep-alive: a webhook connection never outlives its delivery
            limits = httpx.Limits(max_keepalive_connections=0)
            async with httpx.AsyncClient(
                timeout=DELIVERY_TIMEOUT, limits=limits, trust_env=False
            ) as client:
                for body, step, config in sends:
                    if config is None:
                        logger.warning(
                            "%s:%s: delivery not sent: push config %s was not registered live",
                            step.path,
                            step.exchange.line,
                            step.exchange.push_config,
                        )
                        self.failed += 1
                        continue
                    await self._send(client, body, step, config)
        finally:
            self._running -= 1
            if not self._running:
                self._idle.set()

    def wait_idle(self, timeout: float) -> bool:
        """Block (another thread than the serving loop's) until no delivery is under way, at
        most `timeout` seconds; whether none is (tests, fixtures: before the server stops)."""
        return self._idle.wait(timeout)

    async def _send(
        self, client: httpx.AsyncClient, body: bytes, step: Step, config: _LiveConfig
    ) -> None:
        headers: dict[str, str] = {}
        for name, value in step.exchange.request.headers:
            if name.lower() in ("content-type",):
                headers[name] = value
        if config.token is not None and step.exchange.request.headers.get(TOKEN_HEADER) is not None:
            headers[TOKEN_HEADER] = config.token
        if config.authorization is not None:
            headers["Authorization"] = config.authorization
        target = await webhook_target(config.url, SCREEN)
        if isinstance(target, str):
            self.failed += 1
            logger.warning(
                "%s:%s: delivery not sent: the stand-in does not deliver to that webhook: %s",
                step.path,
                step.exchange.line,
                target,
            )
            return
        # (the URL's credentials, if any, are not made Basic auth: the recorded headers say)
        url, named, extensions = target
        headers.update((n.decode("latin-1"), v.decode("latin-1")) for n, v in named)
        try:
            request = client.build_request(
                "POST", url, content=body, headers=headers, extensions=extensions
            )
            reply = await client.send(request)
        except httpx.HTTPError as exc:
            self.failed += 1
            logger.warning("push delivery to the client's webhook failed: %s", _what(exc))
            return
        if reply.is_success:
            self.delivered += 1
        else:
            self.failed += 1
            logger.warning("the client's webhook answered a delivery %d", reply.status_code)

    async def aclose(self) -> None:
        """Wait for the deliveries under way (bounded), then stop those left."""
        chains = [chain for chain in self._chains.values() if not chain.done()]
        if chains:
            await asyncio.wait(chains, timeout=DELIVERY_TIMEOUT)
            for chain in chains:
                chain.cancel()


def _what(exc: Exception) -> Any:
    # the URL may hold a secret path segment: the error's kind only
    return type(exc).__name__
