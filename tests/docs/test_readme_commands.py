"""Every command the README and docs/ show is run by a test (issue 14).

The commands are read from the Markdown: each line of a ```sh block (continuation lines
joined, `# comments` dropped) and each inline code span that is a whole command line
(`recorder render transcripts/02-message-reply.http#1`, `make docs-sync`; not a bare command
name, a synopsis such as `recorder export -o FILE`, nor a message such as
`recorder play: cannot reach …`). `RUNS` says how each is run;
a command the docs show and `RUNS` does not know fails `test_every_documented_command_is_run`,
so a new one cannot slip in untested.

Each is run for real, in a copy of the repository's transcripts, README and docs, with the
venv's `recorder`: the documented ports (41242 the kit, 41241 the recorder) become free
loopback ports; a server (`recorder kit`, `recorder record`) is started, checked to serve,
and stopped with Ctrl-C. A `make` target is checked against the Makefile recipe, and its
recipe is one of the commands run here (`make test` is what CI runs: this very suite).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from installs import ci_jobs, readme_line

from recorder.kit import KitServer, start_kit

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parent.parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent
LIMIT = 30.0  # seconds, for every command and wait

_FENCE = re.compile(r"^```(\w*)\s*$")
_COMMAND = re.compile(r"^(recorder|make|python -m|curl)\s")


def documented_commands() -> dict[str, str]:
    """command -> where it is shown (`README.md:33`)."""
    found: dict[str, str] = {}
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        fence: str | None = None
        pending = ""
        prose: list[tuple[int, str]] = []
        for number, line in enumerate(lines, start=1):
            match = _FENCE.match(line)
            if match:
                fence = None if fence is not None else match.group(1)
                continue
            where = f"{path.relative_to(REPO)}:{number}"
            if fence in ("sh", "bash", "console", "shell"):
                text = pending + line.strip()
                if text.endswith("\\"):
                    pending = text[:-1].strip() + " "
                    continue
                if not _whole(text):  # a quoted argument goes on to the next line
                    pending = text + " "
                    continue
                pending = ""
                command = re.sub(r"\s+#\s.*$", "", text).strip()
                if command:
                    found.setdefault(command, where)
            elif fence is None:
                prose.append((number, line))
        found.update(
            (span, where) for span, where in _inline_commands(path, prose) if span not in found
        )
    return found


def _inline_commands(path: Path, prose: list[tuple[int, str]]) -> Iterator[tuple[str, str]]:
    """The code spans of the prose that are whole command lines (a span may wrap a line)."""
    text = "\n".join(line for _, line in prose)
    starts = [0]
    for _, line in prose:
        starts.append(starts[-1] + len(line) + 1)
    # (a span opens with a run of backticks and closes with a run as long, as CommonMark
    # reads it: `` `cart.py`, line 2 `` is one span, not two)
    for match in re.finditer(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", text, re.DOTALL):
        span = " ".join(match.group(2).split())
        words = span.split()
        if (
            _COMMAND.match(span)
            and len(words) >= 2
            and not any(word.endswith(":") for word in words)
            and "<" not in span
            and not any(re.fullmatch(r"[A-Z_]+", word) for word in words)  # a synopsis: FILE
            and not (words[0] == "recorder" and len(words) == 2)
        ):
            index = max(n for n, start in enumerate(starts) if start <= match.start())
            yield span, f"{path.relative_to(REPO)}:{prose[min(index, len(prose) - 1)][0]}"


def _whole(text: str) -> bool:
    try:
        shlex.split(text)
    except ValueError:  # no closing quotation
        return False
    return True


# --------------------------------------------------------------------------- running them


@dataclass
class Place:
    """A scratch copy of what the commands read, and the agent they talk to."""

    root: Path
    kit: KitServer
    env: dict[str, str]

    def command(self, text: str) -> str:
        """The documented command as run here: free ports, optional parts `[...]` given."""
        text = re.sub(r"\[(-[^\]]*)\]", r"\1", text)
        text = text.replace("41242", str(self.kit.port))
        if text.startswith("recorder record") and "--grpc-listen" not in text:
            # the kit's card lists its gRPC interface, so the recorder listens for gRPC: by
            # default on the --listen port + 1, which may be another's here
            text += " --grpc-listen 127.0.0.1:0"
        return text.replace("41241", str(free_port()))

    def run(self, text: str, *, expect: int = 0) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            self.command(text),
            shell=True,
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=LIMIT,
        )
        assert result.returncode == expect, (text, result.stdout[-2000:], result.stderr)
        return result

    def serve(self, text: str, *, ready: Callable[[str], bool]) -> str:
        """Start a server command, wait until `ready(first lines)`, Ctrl-C it: its output."""
        argv = shlex.split(self.command(text))
        with subprocess.Popen(
            argv,
            cwd=self.root,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ) as process:
            try:
                assert process.stdout is not None
                seen = ""
                deadline = time.monotonic() + LIMIT
                while not ready(seen):
                    assert time.monotonic() < deadline, seen
                    line = process.stdout.readline()
                    assert line, f"{text} ended early: {seen}"
                    seen += line
                process.send_signal(signal.SIGINT)
                rest, _ = process.communicate(timeout=LIMIT)
            finally:
                if process.poll() is None:
                    process.kill()
        assert process.returncode == 0, seen + rest
        return seen + rest


def free_port() -> int:
    from recorder.servers import bind_socket

    sock = bind_socket("127.0.0.1", 0)
    try:
        return int(sock.getsockname()[1])
    finally:
        sock.close()


def serving(url_word: int) -> Callable[[str], bool]:
    """Ready when a line's word `url_word` is a URL that answers."""

    def ready(seen: str) -> bool:
        for line in seen.splitlines():
            words = line.split()
            if len(words) > url_word and words[url_word].startswith("http://"):
                url = words[url_word].rstrip(",")
                try:
                    httpx.get(url + "/.well-known/agent-card.json", timeout=2)
                    return True
                except httpx.HTTPError:
                    return False
        return False

    return ready


def make_recipe(target: str) -> list[str]:
    """The recipe lines of a Makefile target, `$(BIN)/` dropped."""
    lines = (REPO / "Makefile").read_text().splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(f"{target}:"))
    recipe: list[str] = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip().replace("$(BIN)/", ""))
    return recipe


def run_play(place: Place, text: str) -> None:
    result = place.run(text)
    assert result.stdout.splitlines()[-1].endswith("0 failed"), result.stdout


def run_make(place: Place, text: str) -> None:
    target = text.split()[1]
    recipe = make_recipe(target)
    if target == "test":
        # what CI runs (.ci/run), and what runs this suite
        assert "make test" in (REPO / ".ci" / "run").read_text()
        prerequisites = next(
            line
            for line in (REPO / "Makefile").read_text().splitlines()
            if line.startswith("test:")
        )
        assert recipe == [] and "unit" in prerequisites.split(), prerequisites
        return
    if target == "bench":
        bench = REPO / "tests" / "test_benches.py"
        for line in recipe:
            script = Path(line.split()[1]).name
            assert script in bench.read_text(), f"{script} is not run by {bench.name}"
        return
    for line in recipe:
        if line.startswith("python -m recorder.planner"):
            run_planner(place, line)
        elif line.startswith("recorder play"):
            run_play(place, line)
        else:
            place.run(line)


def run_planner(place: Place, text: str) -> None:
    # `make record`: re-recording an unchanged kit leaves every golden file as it was
    before = {p.name: p.read_bytes() for p in (place.root / "transcripts").glob("*.http")}
    place.run(text.replace("python ", f"{sys.executable} ", 1))
    after = {p.name: p.read_bytes() for p in (place.root / "transcripts").glob("*.http")}
    if "--fresh" in text:
        assert after.keys() == before.keys() and after != before  # new ids everywhere
    else:
        assert after == before


def run_kit(place: Place, text: str) -> None:
    if "--listen" not in text:
        text += f" --listen 127.0.0.1:{free_port()}"
    if "--grpc-listen" not in text:
        text += " --grpc-listen 0"  # (its default, the HTTP port + 1, may be another's)
    out = place.serve(text, ready=serving(3))
    assert out.rstrip().endswith("code-reviewer stopped."), out


def run_record(place: Place, text: str) -> None:
    out = place.serve(text, ready=serving(4))
    assert "recorder record: stopped" in out, out


def run_curl(place: Place, text: str) -> None:
    reply = json.loads(place.run(text).stdout)
    assert reply["result"]["message"]["role"] == "ROLE_AGENT", reply


def run_render(place: Place, text: str) -> None:
    assert "HTTP/1.1 200 OK" in place.run(text).stdout


def run_export_curl(place: Place, text: str) -> None:
    assert "curl " in place.run(text).stdout


def run_rules(place: Place, text: str) -> None:
    (place.root / "rules.yaml").write_text("generated_fields: {sessionId: id}\n")
    if text.startswith("recorder play"):
        run_play(place, text + " transcripts/")
    else:
        place.run(text)


def run_docs(place: Place, text: str) -> None:
    place.run(text)
    if " sync " in text:
        # the docs are current: syncing changes nothing
        for path in DOCS:
            copy = place.root / path.relative_to(REPO)
            assert copy.read_text() == path.read_text(), copy


def run_record_with_rules(place: Place, text: str) -> None:
    run_rules(place, "recorder rules check rules.yaml")
    run_record(place, text)


def run_planner_fresh(place: Place, text: str) -> None:
    run_planner(place, text + " --out transcripts/")


# the goldens hold gRPC calls, so serve listens for gRPC too: by default on the HTTP port + 1,
# which may be another's (as for the kit's --grpc-listen)
GRPC_LISTEN = " --grpc-listen 127.0.0.1:0"


def run_serve(place: Place, text: str) -> None:
    listen = f"--listen 127.0.0.1:{free_port()}"
    text = re.sub(r"--listen \S+", listen, text) if "--listen" in text else f"{text} {listen}"
    if "--grpc-listen" not in text:
        text += GRPC_LISTEN
    out = place.serve(text, ready=serving(9))
    assert "recorder serve: stopped; " in out and " 0 unmatched" in out, out


FALLBACK = "recorder serve transcripts/ --fallback http://localhost:41242 -o new-traffic/"


def run_serve_fallback(place: Place, text: str) -> None:
    # a request the goldens lack goes to the kit, and is recorded into new-traffic/
    codes: list[int] = []
    answers = serving(9)

    def ready(seen: str) -> bool:
        if not answers(seen):
            return False
        found = re.search(r"on (http://\S+) ", seen)
        assert found, seen
        missing = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}
        reply = httpx.post(
            f"{found.group(1)}/a2a/jsonrpc",
            json=missing,
            headers={"A2A-Version": "1.0"},
            timeout=LIMIT,
        )
        codes.append(reply.json()["error"]["code"])
        return True

    out = place.serve(f"{text} --listen 127.0.0.1:{free_port()}{GRPC_LISTEN}", ready=ready)
    assert codes == [-32001], (codes, out)  # the kit's TASK_NOT_FOUND, not -32099
    assert ", 1 relayed" in out and "recorded 1 new exchange in new-traffic/" in out, out
    assert list((place.root / "new-traffic").glob("*.http")), out


def run_serve_faults(place: Place, text: str) -> None:
    # docs/faults.yaml's first fault: the first GetTask gets TaskNotFoundError, injected
    codes: list[int] = []
    answers = serving(9)

    def ready(seen: str) -> bool:
        if not answers(seen):
            return False
        found = re.search(r"on (http://\S+) ", seen)
        assert found, seen
        call = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "any"}}
        reply = httpx.post(f"{found.group(1)}/a2a/jsonrpc", json=call, timeout=LIMIT)
        codes.append(reply.json()["error"]["code"])
        return True

    out = place.serve(f"{text} --listen 127.0.0.1:{free_port()}{GRPC_LISTEN}", ready=ready)
    assert codes == [-32001], (codes, out)
    report = json.loads((place.root / "serve-report.json").read_text())
    assert [f["kind"] for f in report["faults"]] == ["error"], report
    assert "1 fault injected" in out, out


def run_export_har(place: Place, text: str) -> None:
    place.run(text)
    entries = json.loads((place.root / "transcripts.har").read_text())["log"]["entries"]
    titles = [
        line
        for path in (place.root / "transcripts").glob("*.http")
        for line in path.read_text().splitlines()
        if line.startswith("### ")
    ]
    assert len(entries) == len(titles) == 58


def run_import_har(place: Place, text: str) -> None:
    place.run("recorder export transcripts/ --to har -o transcripts.har")
    place.run(text)
    for path in (place.root / "transcripts").glob("*.http"):
        assert (place.root / "imported" / path.name).read_text() == path.read_text(), path


def run_serve_grown(place: Place, text: str) -> None:
    run_serve_fallback(place, FALLBACK)
    run_serve(place, text)


def run_learn(place: Place, text: str) -> None:
    # the kit's goldens learn nothing: the rules file holds no rule, and play passes with it
    if text.startswith("recorder play"):
        place.run(text.replace(" --rules rules.yaml", " -o rules.yaml").replace("play", "learn", 1))
        run_play(place, text)
        return
    out = place.run(text).stdout
    assert out.rstrip().endswith("0 likely regressions"), out
    assert "\nversion: 1\n" in (place.root / "rules.yaml").read_text()


CHECKS_EXAMPLE = """\
checks:
  - path: "$.result.task.artifacts[*].parts[*].text"
    in: "03-review-task.http#1"
    assert:
      - contains_all: ["src/payments.py:12", "[todo]", "[hardcoded-secret]"]
      - not_contains: ["I'm sorry", "I can't help"]
      - length: {min: 80, max: 2000}
      - similar: 0.6
"""


def run_checks(place: Place, text: str) -> None:
    # docs/checks.md's example checks (comments taken out), on the goldens, in trials
    page = (REPO / "docs" / "checks.md").read_text()
    example = re.sub(r" +#.*", "", page.partition("```yaml\nchecks:\n")[2].partition("```")[0])
    assert "checks:\n" + example == CHECKS_EXAMPLE, example
    (place.root / "checks.yaml").write_text(CHECKS_EXAMPLE)
    run_play(place, text)
    # and a regression: the finding it names is not in the live answer
    (place.root / "checks.yaml").write_text(CHECKS_EXAMPLE.replace("payments.py:12", "pay.py:1"))
    failed = place.run(text, expect=1)
    assert '"src/pay.py:1" not found' in failed.stdout, failed.stdout


def run_client(place: Place, text: str) -> None:
    # the page's a2a-sdk client, here straight to the agent (through the recorder: the page's
    # own test, tests/docs/test_live_traffic_page.py)
    assert "Reviewed 1 file" in place.run(text.replace("41241", "41242")).stdout


def run_own_agent(place: Place, text: str) -> None:
    # "your agent at 127.0.0.1:8000": here the kit stands in for it
    text = text.replace("127.0.0.1:8000", f"127.0.0.1:{place.kit.port}")
    if text.startswith("recorder record"):
        run_record(place, text + " --listen 127.0.0.1:41241")
    else:
        run_play(place, text)


def run_own_scenario(place: Place, text: str) -> None:
    # the README's quick start: a client recorded twice under one --scenario is one file,
    # recorded again in place (without it, the second run would add new files)
    text = text.replace("127.0.0.1:8000", f"127.0.0.1:{place.kit.port}")
    before = set((place.root / "transcripts").glob("*.http"))
    for run in (1, 2):
        sent: list[str] = []
        out = place.serve(text + " --listen 127.0.0.1:41241", ready=_client_sent(sent, run))
        assert sent, out
    made = set((place.root / "transcripts").glob("*.http")) - before
    assert [path.name[3:] for path in made] == ["smoke.http"], (made, out)
    (path,) = made
    assert path.read_text().count("\nPOST /a2a/jsonrpc ") == 1, path.read_text()
    assert "recorded again in place" in out, out


def _client_sent(sent: list[str], run: int) -> Callable[[str], bool]:
    """Ready once the recorder serves and a client's SendMessage went through it."""
    serves = serving(4)

    def ready(seen: str) -> bool:
        if not serves(seen):
            return False
        url = next(w for line in seen.splitlines() for w in line.split() if "://" in w)
        message = {"messageId": f"smoke-{run}", "role": "ROLE_USER", "parts": [{"text": "Hi"}]}
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        headers = {"A2A-Version": "1.0"}
        reply = httpx.post(url.rstrip(",") + "/a2a/jsonrpc", json=body, headers=headers, timeout=5)
        assert reply.status_code == 200, reply.text
        sent.append(reply.text)
        return True

    return ready


def test_the_readme_screen_is_what_make_demo_prints(place: Place) -> None:
    """The README's screen of `make demo` is the real one (the kit's port aside)."""
    readme = (REPO / "README.md").read_text()
    shown = readme.partition("`make demo` replays")[2].partition("```text\n")[2].partition("```")[0]
    (line,) = make_recipe("demo")
    result = place.run(line)
    printed = result.stderr + result.stdout

    def ports(text: str) -> str:
        return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)

    assert ports(printed) == ports(shown)


def run_install(place: Place, text: str) -> None:
    # the README's install lines need the package index and fresh venvs: run as written by
    # tests/e2e/test_install.py (the wheel built, installed beside a2a-sdk 1.1.0, pipx, [kit])
    # and tests/e2e/test_packaging.py (the package index's lines, against the release's
    # files), each picked there by `readme_line(PREFIX)`
    users = "".join(
        (REPO / "tests" / name).read_text()
        for name in ("installs.py", "e2e/test_install.py", "e2e/test_packaging.py")
    )
    prefixes = re.findall(r'readme_line\("([^"]+)"\)', users)
    assert any(readme_line(prefix) == text for prefix in prefixes), (text, prefixes)


def run_check(place: Place, text: str) -> None:
    assert place.run(text).stdout.strip(), "recorder check printed nothing"


def run_llm(place: Place, text: str) -> None:
    # docs/llm-agents.md: the shipped recording (of `kit --vary`), against a kit worded
    # anew (no seed: fresh wordings); play and trials learn first, as the page does
    with start_kit(vary=True) as kit:
        text = text.replace("http://localhost:41242", kit.url)
        folder = "docs/llm/"
        if " --rules llm-rules.yaml" not in text and not text.startswith("recorder learn"):
            failed = place.run(text, expect=1)  # the wording differs: equality fails
            assert failed.stdout.rstrip().endswith("1 passed, 3 failed"), failed.stdout
            return
        learned = place.run(f"recorder learn {folder} --agent {kit.url} -o llm-rules.yaml")
        assert learned.stdout.rstrip().endswith("0 likely regressions"), learned.stdout
        rules = (place.root / "llm-rules.yaml").read_text()
        page = (REPO / "docs" / "llm-agents.md").read_text()
        for line in page.partition("```yaml\n")[2].partition("```")[0].splitlines():
            if not line.lstrip().startswith(("#", "- length", "- lines", "- similar")):
                assert line in rules.splitlines(), line  # the page shows what learn writes
        assert rules.count("\n  - path: ") == 3, rules
        if text.startswith("recorder play"):
            run_play(place, text)


def run_unprovable(place: Place, text: str) -> None:
    # docs/llm-agents.md: a trial count that can never prove the rate, refused before anything
    # is sent (no agent, no rules file needed): the page shows the error as printed
    refused = place.run(text, expect=2)
    page = (REPO / "docs" / "llm-agents.md").read_text()
    first = refused.stderr.splitlines()[0]
    assert f"```text\n{first}\n```" in page, refused.stderr


def run_llm_judge(place: Place, text: str) -> None:
    # docs/llm-agents.md, "5. A model as judge": the shipped recording against a kit worded
    # anew, the shipped rules' model judge answered by the tests' scripted model server on
    # loopback (no model is shipped): the output the page shows (its figures aside)
    from model_server import ModelServer

    section = (REPO / "docs" / "llm-agents.md").read_text().partition("## 5. A model as judge")[2]
    rules = section.partition("```yaml\n")[2].partition("```")[0]
    assert rules and rules in (REPO / "docs" / "llm-judge.yaml").read_text()
    shown = section.partition("```text\n")[2].partition("```")[0].splitlines()
    skipped = re.search(r"The summary then says `([^`]+)`", section)
    assert skipped is not None
    with start_kit(vary=True) as kit, ModelServer() as server:
        place.env.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="", A2A_TOKEN=kit.token)
        lines = place.run(text.replace("http://localhost:41242", kit.url)).stdout.splitlines()
    if text.endswith("--no-judge"):
        assert server.requests == []
        assert lines == [shown[0], skipped.group(1), shown[-1]], lines
        return
    assert server.count() > 0

    def figures(line: str) -> str:
        return re.sub(r"\d[\d,.]*", "N", line) if line.startswith("model calls:") else line

    assert [figures(line) for line in lines] == [figures(line) for line in shown], lines


CALLS_KIT = (
    "recorder kit --no-grpc --model http://127.0.0.1:41274/v1 --model-name scripted-1 "
    "--tools http://127.0.0.1:41275/mcp"
)
PROMPT = "Word this review briefly."


def run_calls(place: Place, text: str) -> None:
    # docs/llm-without-a-model.md: the kit with a model and the recorder with --downstream are
    # started and stopped (the page's listener ports are free ones here); the shipped
    # recording is replayed with the stand-ins (on free ports too, the kit pointed at them),
    # then against the kit with another prompt: the page shows what play prints
    if text.startswith("recorder kit"):
        run_kit(place, text)
        return
    if text.startswith("recorder record"):
        run_record(place, re.sub(r"@4127[45]\b", "@0", text))
        return
    from recorder.kit.model import ModelWording

    ports = {name: free_port() for name in ("model", "tools")}
    wording = ModelWording(
        f"http://127.0.0.1:{ports['model']}/v1",
        "scripted-1",
        f"http://127.0.0.1:{ports['tools']}/mcp",
    )
    text += "".join(f" --downstream {name}@{port}" for name, port in ports.items())
    page = (REPO / "docs" / "llm-without-a-model.md").read_text()
    for prompt, expect in ((wording.prompt, 0), (PROMPT, 1)):
        model = dataclasses.replace(wording, prompt=prompt)
        with start_kit(grpc_port=None, model=model) as kit:
            out = place.run(text.replace("http://localhost:41242", kit.url), expect=expect)
        for line in out.stdout.splitlines():
            assert line in page, line


RUNS: dict[str, Callable[[Place, str], None]] = {
    "make demo": run_make,
    "make test": run_make,
    "make record": run_make,
    "make docs-sync": run_make,
    "make docs-check": run_make,
    "make bench": run_make,
    "recorder kit": run_kit,
    "recorder kit --listen 127.0.0.1:0 --token s3cret": run_kit,
    "curl -s localhost:41242/a2a/jsonrpc -H 'Content-Type: application/json' -H "
    '\'A2A-Version: 1.0\' -d \'{"jsonrpc":"2.0","id":1,"method":"SendMessage",'
    '"params":{"message":{"messageId":"m1", "role":"ROLE_USER","parts":[{"text":'
    '"What languages can you review?"}]}}}\'': run_curl,
    "recorder record --agent http://localhost:41242 [--listen 127.0.0.1:41241] "
    "[-o transcripts/] [--rules rules.yaml]": run_record_with_rules,
    "python -m recorder.planner --fresh": run_planner_fresh,
    "recorder play transcripts/": run_play,
    "recorder play transcripts/ --agent http://localhost:41242": run_play,
    "recorder play --rules rules.yaml": run_rules,
    "recorder rules check rules.yaml": run_rules,
    "recorder check transcripts/": run_check,
    "recorder serve transcripts/": run_serve,
    "recorder serve transcripts/ --fresh-ids --strict": run_serve,
    FALLBACK: run_serve_fallback,
    "recorder serve transcripts/ new-traffic/": run_serve_grown,
    "recorder serve transcripts/ --faults docs/faults.yaml --json-report serve-report.json": (
        run_serve_faults
    ),
    "recorder export transcripts/ --to har -o transcripts.har": run_export_har,
    "recorder import transcripts.har -o imported/": run_import_har,
    "recorder learn transcripts/ --agent http://localhost:41242 -o rules.yaml": run_learn,
    "recorder play transcripts/ --agent http://localhost:41242 --rules rules.yaml": run_learn,
    "recorder play transcripts/ --rules checks.yaml --trials 5 --pass-rate 0.8": run_checks,
    "recorder render transcripts/02-message-reply.http#1": run_render,
    "recorder export transcripts/02-message-reply.http --to curl": run_export_curl,
    "recorder docs check README.md docs/": run_docs,
    "recorder docs sync docs/": run_docs,
    # docs/live-traffic.md (its whole flow, in order: tests/docs/test_live_traffic_page.py)
    "recorder record --agent http://localhost:41242 -o docs/examples/ "
    "--scenario ask-and-review": run_record,
    "recorder record --agent http://localhost:41242 -o docs/examples/ "
    "--scenario ask-and-review --mode replace": run_record,
    "recorder docs check docs/": run_docs,
    "python docs/ask_and_review.py http://127.0.0.1:41241": run_client,
    # docs/llm-agents.md
    "recorder kit --vary": run_kit,
    "recorder record --agent http://localhost:41242 -o docs/llm/ --scenario llm-review": run_record,
    "recorder play docs/llm/ --agent http://localhost:41242": run_llm,
    "recorder learn docs/llm/ --agent http://localhost:41242 -o llm-rules.yaml": run_llm,
    "recorder play docs/llm/ --agent http://localhost:41242 --rules llm-rules.yaml": (run_llm),
    "recorder play docs/llm/ --agent http://localhost:41242 --rules llm-rules.yaml "
    "--trials 10": run_llm,
    "recorder play docs/llm/ --agent http://localhost:41242 --rules llm-rules.yaml "
    "--trials 10 --pass-rate 0.9 --confidence 0.95": run_unprovable,
    "recorder play docs/llm/ --agent http://localhost:41242 --rules docs/llm-judge.yaml": (
        run_llm_judge
    ),
    "recorder play docs/llm/ --agent http://localhost:41242 --rules docs/llm-judge.yaml "
    "--no-judge": run_llm_judge,
    # docs/llm-without-a-model.md
    CALLS_KIT: run_calls,
    f'{CALLS_KIT} --model-prompt "{PROMPT}"': run_calls,
    "recorder record --agent http://localhost:41242 -o docs/examples/calls/ --downstream "
    "model=http://127.0.0.1:41270@41274 --downstream tools=http://127.0.0.1:41271@41275": run_calls,
    "recorder play docs/examples/calls/ --agent http://localhost:41242": run_calls,
    # README.md, "Using it from your own project"
    "pip install a2a-recorder": run_install,
    "pipx install a2a-recorder": run_install,
    "uv tool install a2a-recorder": run_install,
    "pip install 'a2a-recorder[kit]'": run_install,
    "pip wheel --no-deps -w dist/ .": run_install,
    "pip install dist/a2a_recorder-0.1.0-py3-none-any.whl": run_install,
    "pipx install dist/a2a_recorder-0.1.0-py3-none-any.whl": run_install,
    "pip install 'dist/a2a_recorder-0.1.0-py3-none-any.whl[kit]'": run_install,
    "recorder record --agent http://127.0.0.1:8000 -o transcripts/": run_own_agent,
    "recorder play transcripts/ --agent http://127.0.0.1:8000": run_own_agent,
    "recorder record --agent http://127.0.0.1:8000 -o transcripts/ --scenario smoke": (
        run_own_scenario
    ),
}


@pytest.fixture(scope="module")
def agent() -> Iterator[KitServer]:
    with start_kit(grpc_port=0) as server:  # as `recorder kit` runs: gRPC listed in its card
        yield server


@pytest.fixture
def place(tmp_path: Path, agent: KitServer) -> Place:
    for name in ("transcripts", "docs"):
        shutil.copytree(REPO / name, tmp_path / name)
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "A2A_TOKEN": agent.token,
        "NO_COLOR": "1",
    }
    return Place(tmp_path, agent, env)


def test_every_documented_command_is_run() -> None:
    shown = documented_commands()
    untested = {command: where for command, where in shown.items() if command not in RUNS}
    assert not untested, f"add these to RUNS in {Path(__file__).name}: {untested}"
    stale = sorted(set(RUNS) - set(shown))
    assert not stale, f"no longer in the docs, remove from RUNS: {stale}"


@pytest.mark.parametrize("command", sorted(RUNS))
def test_a_documented_command_runs(command: str, place: Place) -> None:
    RUNS[command](place, command)


def test_the_ci_pages_jobs_are_run_whole() -> None:
    """docs/ci.md's jobs are YAML (`run:` steps, `script:` lines), not sh blocks: each is run
    whole, in order, as its CI would (tests/e2e/test_install.py); here, that each job has
    lines to run, and plays with --wait and a JUnit report as the page says."""
    jobs = ci_jobs()
    assert set(jobs) == {"github", "gitlab"}
    for lines in jobs.values():
        (play,) = [line for line in lines if line.startswith("recorder play ")]
        assert " --agent " in play and " --wait " in play and " --junit-report " in play
        assert any(line.endswith("&") for line in lines)  # the agent starts in the background
    e2e = REPO / "tests" / "e2e" / "test_install.py"
    assert "ci_jobs()[job]" in e2e.read_text()
