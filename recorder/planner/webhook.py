"""The client's webhook: a loopback receiver of push notifications, for the planner's push
scenario (and the tests). Each delivery is kept (its path, headers and JSON body) and
answered `200 {"ok": true}`; `wait_for` waits, bounded, until so many have come.

    with Webhook() as hook:          # a free loopback port (or `port=`)
        url = hook.url("/.planner/push/q7Xk2mP9vL4tR8sW3nZ5")
        ...                          # register `url` in a push config
        deliveries = await hook.wait_for(3)
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from recorder.servers import ServerThread, bind_socket

__all__ = ["Delivery", "Webhook"]


@dataclass(frozen=True)
class Delivery:
    """One push notification as the webhook got it."""

    path: str
    headers: dict[str, str]  # lowercase names
    body: Any

    @property
    def state(self) -> str | None:
        """The task state a task or status update says (None for an artifact update)."""
        if not isinstance(self.body, dict):
            return None
        for kind in ("task", "statusUpdate"):
            event = self.body.get(kind)
            if isinstance(event, dict) and isinstance(event.get("status"), dict):
                state = event["status"].get("state")
                return state if isinstance(state, str) else None
        return None


class Webhook:
    """A push-notification receiver on a loopback port, in a thread of its own."""

    def __init__(self, port: int = 0) -> None:
        self.received: list[Delivery] = []
        self._changed = threading.Condition()
        app = Starlette(routes=[Route("/{path:path}", self._receive, methods=["POST"])])
        self.server = ServerThread(app, sock=bind_socket("127.0.0.1", port))

    async def _receive(self, request: Request) -> JSONResponse:
        raw = await request.body()
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        delivery = Delivery(request.url.path, dict(request.headers), body)
        with self._changed:
            self.received.append(delivery)
            self._changed.notify_all()
        return JSONResponse({"ok": True})

    @property
    def port(self) -> int:
        return int(self.server.port)

    def url(self, path: str = "/webhook") -> str:
        """The webhook's URL for `path` (any path reaches it)."""
        return f"{self.server.url}{path}"

    def wait(self, count: int, timeout: float) -> list[Delivery]:
        """The deliveries once `count` have come; RuntimeError after `timeout` seconds."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self.received) >= count, timeout):
                raise RuntimeError(
                    f"expected {count} push notifications within {timeout:g} s, "
                    f"the webhook got {len(self.received)}"
                )
            return list(self.received)

    async def wait_for(self, count: int, timeout: float = 20.0) -> list[Delivery]:
        """`wait`, from a coroutine (the waiting in a worker thread)."""
        return await asyncio.to_thread(self.wait, count, timeout)

    def _wait_state(self, state: str, after: int, timeout: float) -> list[Delivery]:
        def came() -> bool:
            return any(d.state == state for d in self.received[after:])

        with self._changed:
            if not self._changed.wait_for(came, timeout):
                raise RuntimeError(
                    f"no push notification of state {state} within {timeout:g} s (the "
                    f"webhook got {[d.state for d in self.received]})"
                )
            return list(self.received)

    async def wait_for_state(
        self, state: str, *, after: int = 0, timeout: float = 20.0
    ) -> list[Delivery]:
        """The deliveries once one after the first `after` says the task is in `state`
        (`TASK_STATE_COMPLETED`): a task's last update, nothing follows it."""
        return await asyncio.to_thread(self._wait_state, state, after, timeout)

    def __enter__(self) -> Webhook:
        self.server.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.server.stop()
