"""docs/examples/calls/01-review-with-a-model.http, the golden conversation with the agent's
own calls (issue 36): recorded by docs/record_llm_calls.py from the kit with a model (the
scripted one, seeded) and an MCP tool; it checks, renders its calls tagged, exports without
sending them, holds no key, and a recording made again says the same (ports aside)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from recorder.checking import check_paths
from recorder.disk.transcripts import load
from recorder.docs.curlscript import export_curl
from recorder.docs.export import export_http
from recorder.docs.render import render_exchange

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parent.parent.parent
GOLDEN = REPO / "docs" / "examples" / "calls" / "01-review-with-a-model.http"
ADDRESS = re.compile(r"(127\.0\.0\.1|localhost):\d+")


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "record_llm_calls", REPO / "docs" / "record_llm_calls.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_golden_holds_the_review_and_its_calls_tagged() -> None:
    assert check_paths([GOLDEN]) == (1, [])
    transcript = load(GOLDEN)
    titles = [(e.title, e.call.text if e.call else None) for e in transcript.exchanges]
    assert titles == [
        ("GetAgentCard", None),
        ("SendStreamingMessage", None),
        ("tools: POST /mcp (server/discover)", "@call tools exchange 2 frame 2"),
        ("tools: POST /mcp (tools/call)", "@call tools exchange 2 frame 2"),
        ("tools: POST /mcp (tools/list)", "@call tools exchange 2 frame 2"),
        ("model: POST /v1/chat/completions", "@call model exchange 2 frame 2"),
    ]
    assert transcript.downstreams == {
        "model": "http://127.0.0.1:41270",
        "tools": "http://127.0.0.1:41271",
    }
    model = transcript.exchanges[5]
    assert model.request.headers.get("Authorization") == "Bearer {{MODEL_TOKEN}}"
    worded = model.response.json["choices"][0]["message"]["content"]
    review = transcript.exchanges[1].response.events[2].data
    assert worded.split("\n")[1] in review  # the model's words are the review's
    assert "sk-docs-example" not in GOLDEN.read_text()


def test_render_shows_a_call_tagged_and_exports_send_none() -> None:
    transcript = load(GOLDEN)
    rendered = render_exchange(transcript.exchanges[5])
    assert rendered.startswith("# @call model exchange 2 frame 2\nPOST /v1/chat/completions ")
    # the prompt and the model's words shown whole, whatever the line budget
    assert '"content": "Reviewed 1 file: 4 comments.\\nsrc/cart.py:2: [todo]' in rendered
    assert '"content": "I went through 1 file and have 4 findings.' in rendered
    tool = render_exchange(transcript.exchanges[3])
    assert '"structuredContent": {' in tool and '"rule": "hardcoded-secret"' in tool
    for text in (export_http(transcript.exchanges), export_curl(transcript.exchanges)):
        assert "#   6. model: POST /v1/chat/completions (# @call model exchange 2 frame 2)" in text
        assert "/mcp" not in "\n".join(
            line for line in text.split("\n") if not line.startswith("#")
        )


def test_a_recording_made_again_says_the_same(tmp_path: Path) -> None:
    script = _script()
    out = tmp_path / "calls"
    out.mkdir()
    shutil.copy(GOLDEN, out)  # (as the script is run: the recorded ids kept)
    ports = script.Ports(0, 0, 0, 0, 0, 0)
    text = script.record(out, ports)
    assert "src/cart.py:3 - [hardcoded-secret]" in text
    again = (out / GOLDEN.name).read_text()
    assert ADDRESS.sub("ADDRESS", again) == ADDRESS.sub("ADDRESS", GOLDEN.read_text())
