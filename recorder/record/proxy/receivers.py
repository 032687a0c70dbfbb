"""The recorder's push receivers: one per registered push config, from its registration to
its end (the state of `recorder.record.proxy.push`'s room; no I/O).

- `add`: a config's receiver, at a path of 128 random bits (the agent's listing of the
  task's configs shows it, so it must not be guessed from anything else), with the client's
  URL and the token it registered; the config's `url` becomes the receiver's URL (its
  origin the proxy's, the client's credentials kept: `user:password@`).
- `restore`: a reply's receiver URLs made the client's again; the agent's echo of a config
  (its `id`, `taskId`) tells the receiver which config it is.
- A receiver ends (`end_state`) when the agent confirms the deletion of its config
  (`deleted`), when the agent's echo shows a later config of the same id and task in its
  place, or `grace` seconds after a delivery said its task reached a final state
  (`delivered`); one added `ended` never lived (its webhook refused: its deliveries go
  nowhere).
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import httpx

from recorder.bindings.push_configs import delivery_state

__all__ = ["PUSH_PREFIX", "Hook", "Receivers"]

PUSH_PREFIX = "/_recorder/push/"
PUSH_PREFIX_BYTES = PUSH_PREFIX.encode()
# a receiver URL in a reply: the proxy's own address (credentials too), the prefix, the id
_RECEIVER_URL = re.compile(rb"https?://[^\s\"'/]+" + re.escape(PUSH_PREFIX_BYTES) + rb"([\w-]+)")


@dataclass
class Hook:
    """One registered push config's receiver: the client's URL and the token it registered,
    the exchange that registered it (its ticket and file), what the agent's echoes and the
    deliveries told of it (its config id and task), and its end (`ended`: why it ended;
    `ends_at`: the clock's time when it ends, its task's final state seen)."""

    url: str
    token: str | None
    ticket: int
    file_key: Hashable | None
    task_id: str | None = None
    config_id: str | None = None
    ended: str | None = None
    ends_at: float | None = None


class Receivers:
    """The receivers of one proxy, by path id (module docstring). `grace`: seconds a
    receiver lives after its task's final state; `clock`: `time.monotonic` (tests give
    their own)."""

    def __init__(self, grace: float, clock: Callable[[], float]) -> None:
        self._grace = grace
        self._clock = clock
        self._hooks: dict[str, Hook] = {}

    def __bool__(self) -> bool:
        return bool(self._hooks)

    def add(
        self,
        config: dict[str, Any],
        *,
        ticket: int,
        file_key: Hashable | None,
        origin: str,
        ended: str | None = None,
    ) -> Hook:
        """A receiver for `config` (a parsed push config, registered by the exchange of
        `ticket` in the file `file_key`), whose `url` now names it on `origin`; `ended`: why
        it is born ended (its webhook refused)."""
        hook_id = secrets.token_urlsafe(16)
        url = str(config["url"])
        token = config.get("token")
        task_id, config_id = config.get("taskId"), config.get("id")
        hook = Hook(
            url,
            token if isinstance(token, str) and token else None,
            ticket,
            file_key,
            task_id=task_id if isinstance(task_id, str) and task_id else None,
            config_id=config_id if isinstance(config_id, str) and config_id else None,
            ended=ended,
        )
        self._hooks[hook_id] = hook
        config["url"] = receiver_url(origin, httpx.URL(url).userinfo, hook_id)
        return hook

    def get(self, hook_id: str) -> Hook | None:
        """The receiver at path id `hook_id` (None: there never was one)."""
        return self._hooks.get(hook_id)

    def end_state(self, hook: Hook) -> str | None:
        """Why `hook` has ended (None: it lives)."""
        if hook.ended is None and hook.ends_at is not None and self._clock() >= hook.ends_at:
            hook.ended = "its task reached a final state"
        return hook.ended

    # ---------------------------------------------------------------- replies

    def holds_receiver(self, data: bytes) -> bool:
        """Whether `data` (a reply's bytes, any encoding that keeps strings as UTF-8) may hold
        a receiver URL (cheap: no parsing; `restore` makes it the client's)."""
        return bool(self._hooks) and PUSH_PREFIX_BYTES in data

    def restore(self, body: bytes) -> bytes:
        """`body` with every receiver URL the client's URL again; the agent's echo (a config
        with its `id` and `taskId`) tells each receiver's config."""
        if not self.holds_receiver(body):
            return body
        self._learn_echo(body)

        def client_url(match: re.Match[bytes]) -> bytes:
            hook = self._hooks.get(match.group(1).decode("ascii"))
            if hook is None:
                return match.group(0)
            return json.dumps(hook.url, ensure_ascii=False)[1:-1].encode()

        return _RECEIVER_URL.sub(client_url, body)

    def _learn_echo(self, body: bytes) -> None:
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            return
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, dict):
                url = item.get("url")
                found = _RECEIVER_URL.search(url.encode()) if isinstance(url, str) else None
                hook = self._hooks.get(found.group(1).decode()) if found is not None else None
                if hook is not None:
                    task_id, config_id = item.get("taskId"), item.get("id")
                    if isinstance(task_id, str) and task_id:
                        hook.task_id = task_id
                    if isinstance(config_id, str) and config_id:
                        hook.config_id = config_id
                    self._replaced(hook)
                stack.extend(item.values())

    def _replaced(self, hook: Hook) -> None:
        """`hook`'s config took the place of an earlier one of the same id and task (a
        config is one per id: the agent no longer delivers to the earlier receiver)."""
        if hook.task_id is None or hook.config_id is None:
            return
        for other in self._hooks.values():
            if (
                other is not hook
                and other.ended is None
                and (other.task_id, other.config_id) == (hook.task_id, hook.config_id)
                and other.ticket < hook.ticket
            ):
                other.ended = "a later push config of the same id took its place"

    # ---------------------------------------------------------------- ends

    def deleted(self, task_id: str, config_id: str) -> None:
        """The agent deleted the push config `config_id` of task `task_id`: its receivers
        end."""
        for hook in self._hooks.values():
            if hook.ended is None and (hook.task_id, hook.config_id) == (task_id, config_id):
                hook.ended = "its push config was deleted"

    def delivered(self, hook: Hook, body: bytes) -> None:
        """A genuine delivery to `hook`: its task; a final state starts the grace of every
        receiver of that task."""
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            return
        task_id, final = delivery_state(value)
        if task_id is not None and hook.task_id is None:
            hook.task_id = task_id
        if final and hook.task_id is not None:
            ends_at = self._clock() + self._grace
            for other in self._hooks.values():
                if other.task_id == hook.task_id and other.ends_at is None:
                    other.ends_at = ends_at


def receiver_url(origin: str, userinfo: bytes, hook_id: str) -> str:
    """A receiver's URL: `origin` with the client's credentials (`user:password@`: the agent
    makes them its Basic auth, as it would for the webhook), the prefix and the id."""
    if userinfo:
        scheme, _, rest = origin.partition("://")
        origin = f"{scheme}://{userinfo.decode('ascii')}@{rest}"
    return origin + PUSH_PREFIX + hook_id
