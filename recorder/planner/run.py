"""The planner: regenerate `transcripts/` by recording the scenarios against the kit.

    python -m recorder.planner --out transcripts/         (what `make record` runs)

It starts the kit (on port 41242 when that is free, so that the recorded card URLs read
`http://localhost:41242/...` as in the guide; else on a free port) and the recording proxy on a
free loopback port, runs every scenario of `recorder.planner.scenarios` in order through the proxy
into a fresh folder, checks that each scenario produced exactly its file (`NN-name.http`, in
order) and that every file parses, and only then replaces the numbered transcripts in `--out`.
A failed run leaves `--out` as it was. Where a previous file of the same name says the same
thing, its generated values (ids, timestamps, Date headers) are kept
(`recorder.replay.rerecord`), so re-recording an unchanged scenario leaves the file unchanged;
`--fresh` turns that off.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from recorder.disk.transcripts import dump, load
from recorder.errors import ParseError
from recorder.kit import KitServer, start_kit
from recorder.planner.grpc_scenarios import GRPC_SCENARIOS
from recorder.planner.scenarios import SCENARIOS, Scenario, Session
from recorder.planner.webhook import Webhook
from recorder.record.naming import file_name
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.replay.rerecord import keep_recorded_values
from recorder.rules.ruleset import DEFAULT_RULES
from recorder.servers import bind_socket

__all__ = ["PLANNED", "PREFERRED_KIT_PORT", "main", "record_scenarios"]

PLANNED: tuple[Scenario, ...] = (*SCENARIOS, *GRPC_SCENARIOS)
"""Every scenario `make record` records, in file-number order: the HTTP bindings', then gRPC's."""

PREFERRED_KIT_PORT = 41242
"""The kit's HTTP port; its gRPC port is the next one (41243), as `recorder kit` has it."""
# the client's webhook (push notifications): its address is in the push scenario's file, and
# is the client's, so a re-recording keeps the file only when it is the same. Below Linux's
# ephemeral range (32768-60999), where no outgoing connection or port-0 listener of another
# process can hold it by chance (the kit's ports can be other ones: the agent's addresses
# pair with the recorded ones)
PREFERRED_WEBHOOK_PORT = 31242
# seconds one scenario may take in all (each wait inside it is bounded too, by LIMIT; the
# slowest, subscribe, takes well under a second)
SCENARIO_LIMIT = 120.0
_NUMBERED = re.compile(r"^\d+-.*\.http$")


logger = logging.getLogger(__name__)


def _port_free(port: int) -> bool:
    """Whether 127.0.0.1:`port` can be listened on now (the kit's gRPC port is bound inside
    its startup, where a busy port is a failed start rather than an OSError)."""
    try:
        bind_socket("127.0.0.1", port).close()  # (as a server binds: TIME_WAIT is no use)
    except OSError:
        return False
    return True


def _start_kit(port: int) -> KitServer:
    """The kit on `port` (0: any free port), serving gRPC on the next port and listing it in
    its card, as `recorder kit` runs: the recorded cards name its three bindings."""
    grpc_port = port + 1 if port and _port_free(port + 1) else 0
    try:
        kit = start_kit(port=port, grpc_port=grpc_port)
    except OSError as exc:
        kit = start_kit(port=0, grpc_port=0)
        # every Host header and card URL of the new files then names this other port
        logger.warning(
            "cannot listen on port %d (%s): the kit runs on port %d, so the transcripts name "
            "localhost:%d; free port %d and record again to keep the guide's address",
            port,
            exc.strerror or exc,
            kit.port,
            kit.port,
            port,
        )
        return kit
    if port and not grpc_port:
        logger.warning(
            "cannot listen on port %d: the kit serves gRPC on %s, so the cards name it; free "
            "port %d and record again to keep the guide's address",
            port + 1,
            kit.grpc_address,
            port + 1,
        )
    return kit


def _start_webhook(port: int) -> Webhook:
    try:
        return Webhook(port=port)  # (bound here, started by `with`)
    except OSError as exc:
        hook = Webhook()
        logger.warning(
            "cannot listen on port %d (%s): the webhook runs on port %d, so the push "
            "scenario's file names 127.0.0.1:%d",
            port,
            exc.strerror or exc,
            hook.port,
            hook.port,
        )
        return hook


async def _run(
    scenarios: Sequence[Scenario],
    proxy_url: str,
    token: str,
    *,
    limit: float = SCENARIO_LIMIT,
    grpc_address: str | None = None,
    webhook: Webhook | None = None,
) -> None:
    card = None
    for scenario in scenarios:
        session = Session(scenario.name, proxy_url, token=token, card=card)
        session.grpc_address = grpc_address
        session.webhook = webhook
        try:
            await asyncio.wait_for(scenario.run(session), limit)
        except TimeoutError as exc:
            raise RuntimeError(
                f"scenario {scenario.name!r} did not finish within {limit:g} s"
            ) from exc
        except Exception as exc:
            raise RuntimeError(f"scenario {scenario.name!r} failed: {exc!r}") from exc
        finally:
            await session.aclose()
        card = session.card


def record_scenarios(
    out: Path, scenarios: Sequence[Scenario] = PLANNED, *, kit_port: int = PREFERRED_KIT_PORT
) -> list[Path]:
    """Record `scenarios` into the empty folder `out`; returns the files, checked.

    The kit listens on `kit_port` when it is free, else on a free port (0: any free port)."""
    hook = _start_webhook(PREFERRED_WEBHOOK_PORT if kit_port else 0)
    with contextlib.ExitStack() as stack:
        stack.enter_context(hook)
        kit = stack.enter_context(_start_kit(kit_port))
        # (the planner's webhook is on loopback: local work, said so)
        proxy = create_proxy_app(kit.base_url, out=out, push_loopback=True)
        # the gRPC scenarios' calls go through the recorder's gRPC listener: the card the
        # client gets names it (the recorded card names the kit's own gRPC address)
        listener = proxy.listen_grpc(port=0, upstream=kit.grpc_address)
        server = stack.enter_context(ProxyServer(proxy))
        grpc_address = f"127.0.0.1:{listener.port}"
        asyncio.run(_run(scenarios, server.url, kit.token, grpc_address=grpc_address, webhook=hook))
    expected = [file_name(n, s.name) for n, s in enumerate(scenarios, start=1)]
    written = sorted(p.name for p in out.iterdir())
    if written != expected:
        raise RuntimeError(f"expected the files {expected}, the recorder wrote {written}")
    paths = [out / name for name in expected]
    for path in paths:
        load(path)  # every file parses
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="transcripts/", help="the transcripts folder")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="write the new recording as it came, without keeping the previous files' "
        "generated values where nothing else changed",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        print(f"planner: --out {out} is a file; name the transcripts folder", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    with tempfile.TemporaryDirectory(prefix="recorder-planner-") as tmp:
        # the error scenarios are deliberate: the SDK's logs of the errors it answers
        # (-32700, task not found ...) are expected, not news; the planner's own errors still show
        sdk_log = logging.getLogger("a2a")
        level = sdk_log.level
        sdk_log.setLevel(logging.CRITICAL)
        try:
            paths = record_scenarios(Path(tmp))
        except Exception as exc:
            print(f"planner: {exc}; {out} is unchanged", file=sys.stderr)
            return 1
        finally:
            sdk_log.setLevel(level)
        out.mkdir(parents=True, exist_ok=True)
        previous = {}
        for old in out.iterdir():
            if _NUMBERED.match(old.name):
                if not args.fresh:
                    with contextlib.suppress(ParseError):
                        previous[old.name] = load(old)
                old.unlink()
        for path in paths:
            fresh = load(path)
            if path.name in previous:
                fresh = keep_recorded_values(previous[path.name], fresh, DEFAULT_RULES)
            dump(fresh, out / path.name)
    for path in paths:
        count = len(load(out / path.name))
        print(f"planner: wrote {out / path.name} ({count} exchange{'s' if count != 1 else ''})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
