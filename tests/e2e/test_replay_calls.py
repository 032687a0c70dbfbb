"""An LLM-backed agent replayed without its model (issue 36), end to end with real parts on
loopback: an unscripted a2a-sdk client's conversations with an a2a-sdk agent
(`tests/llm_stack`) that calls a scripted model (streamed and not) and an MCP server (the
official SDK), recorded through `recorder record --downstream`; then played with the
player's stand-ins in their place (no model, no MCP server running): ten replays, no
mismatch, although the scripted model words each answer anew; the agent's regressions each
caught at the call's path; concurrent clients' files replayed in parallel."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from a2a.client import create_client
from a2a.helpers import new_text_message
from a2a.types import Role, SendMessageRequest
from click.testing import CliRunner
from helpers import downstream_listeners, recorder_process
from llm_stack import AgentSettings, start_agent, start_model, start_tools

from recorder.checking import check_paths
from recorder.cli import main
from recorder.disk.transcripts import load
from recorder.replay.reports.results import PlayResult
from recorder.replay.run import play
from recorder.replay.trials import TrialPlan
from recorder.servers import bind_socket

pytestmark = pytest.mark.e2e
pytest_plugins = ["pytester"]

LIMIT = 60.0
MODEL_KEY = "sk-test-model-Zq8K2m4Xv7Lp9Rt3"
TOOLS_KEY = "tools-key-Hd5Fw1Ny6Jc0Ub2"
QUESTION = "Which languages can you review for me?"


def diff(path: str, line: str = "print('debug')  # TODO remove") -> str:
    return f"--- a/{path}\n+++ b/{path}\n@@ -1,2 +1,3 @@\n import os\n+{line}\n x = 1\n"


async def _converse(url: str, texts: list[str], streaming: bool) -> None:
    client = await create_client(url)
    try:
        for text in texts:
            request = SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER))
            if streaming:
                async for _ in client.send_message(request):
                    pass
            else:
                await client.send_message_and_wait(request)  # type: ignore[attr-defined]
    finally:
        await client.close()


def _clients(url: str, conversations: list[list[str]], streaming: bool = True) -> None:
    async def all_at_once() -> None:
        await asyncio.gather(*(_converse(url, texts, streaming) for texts in conversations))

    asyncio.run(asyncio.wait_for(all_at_once(), LIMIT))


@dataclass
class Recording:
    """A folder of transcripts with calls, and the settings the agent ran with (its model and
    tools at the recorder's listeners: where the stand-ins listen on replay)."""

    folder: Path
    settings: AgentSettings


def record(
    folder: Path, conversations: list[list[str]], *, seed: int = 5, stream: bool = True
) -> Recording:
    """The conversations (all at once, a client each) through `recorder record
    --downstream model=… --downstream tools=…`, the scripted model seeded with `seed`."""
    with (
        start_model(seed=seed, api_key=MODEL_KEY) as model,
        start_tools(api_key=TOOLS_KEY) as tools,
    ):
        agent_sock = bind_socket("127.0.0.1", 0)
        agent_url = f"http://127.0.0.1:{agent_sock.getsockname()[1]}"
        args = (
            "--agent",
            agent_url,
            "--out",
            str(folder),
            "--downstream",
            f"model={model.url}/v1@0",
            "--downstream",
            f"tools={tools.url}@0",
        )
        with recorder_process(*args, limit=LIMIT) as (process, url):
            listeners = downstream_listeners(process, 2)
            settings = AgentSettings(
                model_url=listeners["model"],
                tools_url=listeners["tools"] + "/mcp",
                api_key=MODEL_KEY,
                tools_api_key=TOOLS_KEY,
                stream=stream,
            )
            with start_agent(settings, sock=agent_sock):
                _clients(url, conversations)
            process.send_signal(signal.SIGINT)
            try:
                _, stderr = process.communicate(timeout=LIMIT)
            except subprocess.TimeoutExpired:  # pragma: no cover - reported below
                stderr = "(did not stop)"
        assert process.returncode == 0, stderr
    assert check_paths([folder])[1] == []
    return Recording(folder, settings)


@contextmanager
def agent(settings: AgentSettings, **changes: Any) -> Iterator[str]:
    """The agent again (its model and tools where they were recorded to: the stand-ins'
    places), with `changes` (a regression)."""
    with start_agent(replace(settings, **changes)) as running:
        yield running.url


def lines(result: PlayResult) -> list[str]:
    return [
        f"{Path(t.path).name}#{e.number} {m}"
        for t in result.transcripts
        for e in t.exchanges
        for m in e.mismatches
    ] + [
        f"{Path(t.path).name}#{e.number} {e.error}"
        for t in result.transcripts
        for e in t.exchanges
        if e.error
    ]


@pytest.fixture(scope="module")
def review(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    """A review (streamed: the model's tool call, the MCP session, the model's words) and a
    question, one unscripted client."""
    folder = tmp_path_factory.mktemp("review")
    return record(folder, [[diff("src/app.py"), QUESTION]])


def test_ten_replays_with_the_stand_ins_match_exactly(review: Recording) -> None:
    calls = sum(len(load(path).calls) for path in review.folder.glob("*.http"))
    assert calls >= 6  # the model twice, the MCP session, the question's model call
    with agent(review.settings) as url:
        for _ in range(10):
            result = play([review.folder], agent=url)
            assert lines(result) == []
            assert result.call_count == calls
        # in trials, each trial's file player waits for its own calls
        trials = play([review.folder], agent=url, trials=TrialPlan(3, 1.0))
        assert trials.passed and trials.call_count == calls


def test_without_the_stand_ins_the_model_words_anew(review: Recording) -> None:
    # the same agent against its live model, seeded otherwise: its replies differ, which is
    # why the ten replays above owe their match to the stand-ins
    with (
        start_model(seed=99, api_key=MODEL_KEY) as model,
        start_tools(api_key=TOOLS_KEY) as tools,
        agent(review.settings, model_url=model.url + "/v1", tools_url=tools.url + "/mcp") as url,
    ):
        result = play([review.folder], agent=url, live_downstreams=True)
    assert result.call_count == 0
    assert any("parts[0].text" in line for line in lines(result)), lines(result)


def _other_file(arguments: dict[str, Any]) -> dict[str, Any]:
    return {**arguments, "diff": arguments["diff"].replace("src/app.py", "src/other.py")}


@pytest.mark.parametrize(
    ("change", "caught"),
    [
        pytest.param(
            {"system_prompt": "You are a code reviewer. Be brief."},
            r"#1 call 1 \(model\) \$\.messages\[0\]\.content: expected \"You are a code reviewer\. "
            r"Call the findings tool",
            id="prompt-template-changed",
        ),
        pytest.param(
            {"tool_arguments": _other_file},
            r"#1 call \d \(tools\) \$\.params\.arguments\.diff: expected \"--- a/src/app\.py",
            id="tool-called-with-another-argument",
        ),
        pytest.param(
            {"call_tools": False},
            r"#1 call 1 \(model\) \$\.tools: expected \[",
            id="tool-call-dropped",
        ),
        pytest.param(
            {"read_answer": lambda text: text.split("\n", 1)[0]},
            r"#1 frame 3: \$\.result\.artifactUpdate\.artifact\.parts\[0\]\.text: expected",
            id="answer-parsed-wrongly",
        ),
    ],
)
def test_a_regression_of_the_agent_is_caught_at_its_place(
    review: Recording, change: dict[str, Any], caught: str
) -> None:
    with agent(review.settings, **change) as url:
        result = play([review.folder], agent=url)
    found = lines(result)
    assert any(re.search(caught, line) for line in found), found
    if "read_answer" in change:
        # the agent made every call as recorded: only its reply differs
        assert not any(" call " in line for line in found), found


def test_a_model_that_answers_whole_replays_too(tmp_path: Path) -> None:
    recording = record(tmp_path / "json", [[diff("lib/util.py"), QUESTION]], stream=False)
    first = next(e for path in sorted(recording.folder.glob("*.http")) for e in load(path).calls)
    assert first.response.events is None and first.response.json["choices"]
    with agent(recording.settings) as url:
        for _ in range(3):
            assert lines(play([recording.folder], agent=url)) == []


def test_concurrent_clients_files_replay_in_parallel(tmp_path: Path) -> None:
    paths = ["src/alpha.py", "lib/beta.py", "pkg/gamma.py"]
    conversations = [[diff(path, f"print('{path}')  # TODO {n}")] for n, path in enumerate(paths)]
    recording = record(tmp_path / "three", conversations)
    files = [load(path) for path in sorted(recording.folder.glob("*.http"))]
    assert sum(1 for t in files if t.calls) == 3
    with agent(recording.settings) as url:
        for jobs in (3, 1, 3):
            result = play([recording.folder], agent=url, jobs=jobs)
            assert lines(result) == [], jobs
            assert result.call_count == sum(len(t.calls) for t in files)


def test_update_refuses_a_call_that_varies_between_runs(review: Recording, tmp_path: Path) -> None:
    # the agent sends the tool another argument on every call: the A2A replies stay as
    # recorded (the stand-in answers), only the call varies; blessing it would write a value
    # the next replay fails at
    folder = tmp_path / "noisy"
    folder.mkdir()
    for path in review.folder.glob("*.http"):
        (folder / path.name).write_text(path.read_text())
    runs = itertools.count()

    def each_run_anew(arguments: dict[str, Any]) -> dict[str, Any]:
        return {**arguments, "diff": f"{arguments['diff']}# run {next(runs)}\n"}

    with agent(review.settings, tool_arguments=each_run_anew) as url:
        result = play([folder], agent=url, update=True)
    refused = [t for t in result.transcripts if t.not_updated]
    assert refused and not any(t.updated for t in result.transcripts)
    assert re.search(
        r"call \d \(tools\) of exchange 1 differs between two live runs at"
        r" \$\.params\.arguments\.diff",
        refused[0].not_updated or "",
    ), refused[0].not_updated
    for path in review.folder.glob("*.http"):
        assert (folder / path.name).read_text() == path.read_text()


def test_learn_stands_in_for_the_calls_and_learns_a_call_that_varies(
    review: Recording, tmp_path: Path
) -> None:
    # the agent as recorded (its model and tools at the stand-ins' places), sending its tool
    # another diff each run: learn plays as play does, the calls answered from the file (the
    # model's words are the recorded ones: nothing of them to learn), and the call's varying
    # argument is learned as a varying reply's text is, scoped to the call's block
    files = {path.name: load(path) for path in sorted(review.folder.glob("*.http"))}
    calls = sum(len(t.calls) for t in files.values())
    exchanges = sum(len(t.exchanges) for t in files.values()) - calls
    rules = tmp_path / "learned.yaml"
    runs = itertools.count()

    def each_run_anew(arguments: dict[str, Any]) -> dict[str, Any]:
        return {
            **arguments,
            "diff": arguments["diff"].replace("import os", f"import os  # {next(runs)}"),
        }

    with agent(review.settings, tool_arguments=each_run_anew) as url:
        result = CliRunner().invoke(
            main,
            ["learn", str(review.folder), "--agent", url, "--runs", "3", "-o", str(rules)],
        )
    assert result.exit_code == 0, result.output
    assert re.search(
        rf"1 rule learned from 3 live runs of {exchanges} exchanges \({calls} calls\) in"
        rf" {len(files)} files?, written to .*; 0 likely regressions",
        result.output,
    ), result.output
    learned = yaml.safe_load(rules.read_text())
    assert list(learned) == ["version", "checks"], learned
    [entry] = learned["checks"]
    name, number = entry["in"].split("#")
    tool_calls = [
        index + 1
        for index, e in enumerate(files[name].exchanges)
        if e.call is not None and e.call.name == "tools" and b"tools/call" in e.request.body
    ]
    assert entry["path"] == "$.params.arguments.diff" and int(number) in tool_calls, entry
    assert f"{exchanges} exchanges (and their {calls} calls)" in rules.read_text()


def test_the_reports_show_the_calls(review: Recording, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    with agent(review.settings, system_prompt="You are a code reviewer. Be brief.") as url:
        result = CliRunner().invoke(
            main,
            ["play", str(review.folder), "--agent", url, "-v", "--json-report", str(report)],
        )
    assert result.exit_code == 1, result.output
    calls = sum(len(load(path).calls) for path in review.folder.glob("*.http"))
    assert f"exchanges ({calls} calls): " in result.stdout.splitlines()[-1]
    assert re.search(r"call 1 \(model\) \$\.messages\[0\]\.content: expected", result.stdout)
    # -v: the call's request, recorded and live, diffed
    assert "call 1 (model), POST /chat/completions:" in result.stdout
    assert "--- recorded request (normalized)" in result.stdout
    assert re.search(
        r"^\s+\+\s+\"content\": \"You are a code reviewer\. Be brief\.\"", result.stdout, re.M
    )
    records = json.loads(report.read_text())
    found = [m for r in records["exchanges"] for m in r["mismatches"] if "call" in m]
    assert found[0]["call"] == "call 1 (model)"
    assert found[0]["path"] == "$.messages[0].content"
    assert records["summary"]["calls"] == calls
    assert all(r["exchange"] for r in records["exchanges"])  # a call has no record of its own
    assert "standing in for model at http://127.0.0.1:" in result.stderr


def test_the_pytest_plugin_stands_in_too(review: Recording, pytester: pytest.Pytester) -> None:
    folder = pytester.path / "transcripts"
    folder.mkdir()
    for path in review.folder.glob("*.http"):
        (folder / path.name).write_text(path.read_text())
    with agent(review.settings) as url:
        passed = pytester.runpytest_subprocess("transcripts", "--recorder-agent", url)
    with agent(review.settings, tool_arguments=_other_file) as url:
        failed = pytester.runpytest_subprocess("transcripts", "--recorder-agent", url)
    exchanges = sum(
        1 for path in folder.glob("*.http") for e in load(path).exchanges if e.call is None
    )
    passed.assert_outcomes(passed=exchanges)
    failed.assert_outcomes(passed=exchanges - 1, failed=1)
    failed.stdout.re_match_lines([r".*call \d \(tools\) \$\.params\.arguments\.diff: expected.*"])


def test_update_blesses_a_changed_call_keeping_its_recorded_ids(
    review: Recording, tmp_path: Path
) -> None:
    folder = tmp_path / "update"
    folder.mkdir()
    for path in review.folder.glob("*.http"):
        (folder / path.name).write_text(path.read_text())
    brief = "You are a code reviewer. Be brief."
    with agent(review.settings, system_prompt=brief) as url:
        updated = play([folder], agent=url, update=True)
        assert updated.transcripts and any(t.updated for t in updated.transcripts)
        assert lines(play([folder], agent=url)) == []  # blessed: the new prompt is the call
    blessed = [e for path in sorted(folder.glob("*.http")) for e in load(path).calls]
    recorded = [e for path in sorted(review.folder.glob("*.http")) for e in load(path).calls]
    assert brief in blessed[0].request.text and brief not in recorded[0].request.text
    # only the requests changed: every recorded reply (its ids) is as it was
    assert [e.response for e in blessed] == [e.response for e in recorded]
    assert "{{MODEL_TOKEN}}" in blessed[0].request.headers.get("Authorization", "")


def test_the_pytest_plugin_refuses_a_call_that_varies_too(
    review: Recording, pytester: pytest.Pytester
) -> None:
    folder = pytester.path / "transcripts"
    folder.mkdir()
    for path in review.folder.glob("*.http"):
        (folder / path.name).write_text(path.read_text())
    runs = itertools.count()

    def each_run_anew(arguments: dict[str, Any]) -> dict[str, Any]:
        return {**arguments, "diff": f"{arguments['diff']}# run {next(runs)}\n"}

    with agent(review.settings, tool_arguments=each_run_anew) as url:
        result = pytester.runpytest_subprocess(
            "transcripts", "--recorder-agent", url, "--recorder-update"
        )
    result.stdout.re_match_lines(
        [r".*call \d \(tools\) of exchange 1 differs between two live runs at \$\.params.*"]
    )
    for path in review.folder.glob("*.http"):
        assert (folder / path.name).read_text() == path.read_text()
