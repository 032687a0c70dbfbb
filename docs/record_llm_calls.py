"""Record docs/examples/calls/01-review-with-a-model.http: one review by the kit with a model,
with the calls the kit made while it answered (its MCP tool's findings, the model's wording).

    python docs/record_llm_calls.py [OUT]     (from the root; OUT: docs/examples/calls/)

Everything runs here, on loopback, on fixed ports (so the file's addresses stay the same from
one recording to the next): the scripted model and the MCP tool server of `tests/llm_stack`
(seed 7: the same words every time), the kit with `--model` and `--tools` pointed at the
recorder's `--downstream` listeners, the recorder in front of the kit (`--mode replace`: the
recorded ids are kept where nothing changed), and an a2a-sdk client that asks for a review.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from a2a.client import create_client  # noqa: E402
from a2a.helpers import new_text_message  # noqa: E402
from a2a.types import Role, SendMessageRequest  # noqa: E402
from llm_stack import start_model, start_tools  # noqa: E402

from recorder.kit import start_kit  # noqa: E402
from recorder.kit.model import ModelWording  # noqa: E402
from recorder.record.proxy import RecordingProxy  # noqa: E402
from recorder.record.proxy.server import ProxyServer  # noqa: E402
from recorder.replay.rerecord import keep_recorded_values  # noqa: E402
from recorder.rules.ruleset import DEFAULT_RULES  # noqa: E402
from recorder.servers import bind_socket  # noqa: E402

SCENARIO = "review-with-a-model"
SEED = 7
# the model's API key (the scripted model asks for it; the kit sends $OPENAI_API_KEY): on the
# wire, never on the disk ({{MODEL_TOKEN}})
API_KEY = "sk-docs-example-6f1c0d2e9b8a7"
DIFF = """--- a/src/cart.py
+++ b/src/cart.py
@@ -1,2 +1,4 @@
 def total(items):
+    print(items)  # TODO remove
+    api_key = "sk-live-0123456789"
     return sum(items)
"""


# a completion's `created` (the clock's seconds, an integer) kept from the last recording too:
# no default rule makes an integer generated (a call's reply is served, not compared)
KEEP_RULES = dataclasses.replace(DEFAULT_RULES, generated_paths={"$.created": "integer"})


@dataclass(frozen=True)
class Ports:
    """Where each part listens (0: any free port)."""

    model: int = 41270
    tools: int = 41271
    kit: int = 41272
    recorder: int = 41273
    model_listener: int = 41274
    tools_listener: int = 41275


async def ask_for_a_review(url: str) -> str:
    """The review's text, as the a2a-sdk client (uuid ids, no recorder header) gets it."""
    client = await create_client(url)
    text = ""
    try:
        request = SendMessageRequest(message=new_text_message(DIFF, role=Role.ROLE_USER))
        async for event in client.send_message(request):
            if event.WhichOneof("payload") == "artifact_update":
                text = "".join(part.text for part in event.artifact_update.artifact.parts)
    finally:
        await client.close()
    return text


def record(out: Path, ports: Ports = Ports()) -> str:
    """Record the review into `out` (the scenario's file), returning the review's text."""
    os.environ["OPENAI_API_KEY"] = API_KEY
    with (
        start_model(seed=SEED, api_key=API_KEY, port=ports.model) as model,
        start_tools(port=ports.tools) as tools,
    ):
        kit_sock = bind_socket("127.0.0.1", ports.kit)
        kit_url = f"http://127.0.0.1:{kit_sock.getsockname()[1]}"
        proxy = RecordingProxy(
            kit_url,
            out=out,
            mode="replace",
            keep=lambda previous, fresh: keep_recorded_values(previous, fresh, KEEP_RULES),
        )
        proxy.scenario = SCENARIO
        to_model = proxy.add_downstream("model", model.url, port=ports.model_listener)
        to_tools = proxy.add_downstream("tools", tools.url, port=ports.tools_listener)
        wording = ModelWording(to_model.url + "/v1", "scripted-1", to_tools.url + "/mcp")
        with (
            start_kit(sock=kit_sock, grpc_port=None, model=wording),
            ProxyServer(proxy, port=ports.recorder) as server,
        ):
            return asyncio.run(ask_for_a_review(server.url))


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "examples" / "calls"
    print(record(folder))
