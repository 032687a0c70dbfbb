"""Run the kit in a background thread: `with start_kit() as kit: ... kit.url ...`."""

from __future__ import annotations

import socket
from types import TracebackType
from typing import Any, Literal

from recorder.kit.app import DEFAULT_TOKEN, create_app
from recorder.kit.grpc_server import grpc_available
from recorder.kit.model import ModelWording
from recorder.kit.wording import Wording
from recorder.servers import ServerThread, bind_socket

__all__ = ["KitServer", "public_base_url", "start_kit"]


def public_base_url(host: str, port: int) -> str:
    """The base URL the agent card announces for a kit bound to host:port.

    A loopback or wildcard bind is announced as `localhost` (as in the guide's examples,
    `http://localhost:41242/a2a/jsonrpc`); any other host as itself.
    """
    if host in ("127.0.0.1", "localhost", "0.0.0.0", "::", "::1", ""):
        return f"http://localhost:{port}"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class KitServer:
    """A started kit: `.url` (where it listens), `.base_url` (what its card says), `.token`,
    `.grpc_address` (`127.0.0.1:PORT` where it serves gRPC, or None: not asked for)."""

    def __init__(
        self, server: ServerThread, *, base_url: str, token: str, grpc_address: str | None = None
    ) -> None:
        self._server = server
        self.base_url = base_url
        self.token = token
        self.grpc_address = grpc_address

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def port(self) -> int:
        return int(self._server.port)

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> KitServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_kit(
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    *,
    slow_review_seconds: float | None = None,
    vary: bool = False,
    seed: int | None = None,
    grpc_port: int | Literal["auto"] | None = "auto",
    grpc_in_card: bool = True,
    model: ModelWording | None = None,
    sock: socket.socket | None = None,
) -> KitServer:
    """Bind host:port (0: a free port), build the app with that port in its card, start it.
    `vary`: answers worded anew on each reply (`recorder.kit.wording`; `seed`: the same
    sequence of wordings each start).

    It serves the gRPC binding too, on the same host, on `grpc_port` (0: a free port), and its
    card lists it, as `recorder kit` does; by default ("auto") on a free port when grpcio is
    installed (the grpc extra), else not; None: the kit and its card are HTTP only.
    `grpc_in_card=False` serves it without listing it. `model`: the review worded by a model
    (`recorder.kit.model`, `recorder kit --model`). `sock`: a socket bound already (a
    recorder in front of the kit was made before the kit knew where to call it), in place of
    host:port."""
    if grpc_port == "auto":
        grpc_port = 0 if grpc_available() else None
    sock = sock if sock is not None else bind_socket(host, port)
    actual_port = int(sock.getsockname()[1])
    base_url = public_base_url(host, actual_port)
    kit_token = token or DEFAULT_TOKEN
    options: dict[str, Any] = {
        "grpc_port": grpc_port,
        "grpc_host": host,
        "grpc_in_card": grpc_in_card,
    }
    if slow_review_seconds is not None:
        options["slow_review_seconds"] = slow_review_seconds
    wording = Wording(seed) if vary else None
    app = create_app(base_url, token=kit_token, wording=wording, model=model, **options)
    try:
        server = ServerThread(app, sock=sock, lifespan="on").start()
    except BaseException:
        sock.close()
        raise
    grpc_address = app.state.grpc_address
    return KitServer(server, base_url=base_url, token=kit_token, grpc_address=grpc_address)
