"""Testing an LLM-backed agent, end to end (issue 23): the answers are worded anew on every
reply, the facts stay; what `recorder learn` proposes lets every fresh wording pass and still
catches the regressions a person would call regressions.

The agent is the real kit with `--vary` (a fixed seed: the same sequence of wordings each
run of the suite), recorded through the real recorder from an unscripted client (the a2a-sdk
client of `tests/traffic.py`: no scenario header, uuid ids). `recorder learn` runs it four
more times (fresh wording each time). Then:

- ten replays with fresh wording pass (one `recorder play --trials 10`);
- each regression below, injected by a loopback proxy in front of the kit that rewrites the
  answer (`wordy_agent.WordyAgent`: the fault is the test's, never the product's), fails
  `recorder play` at the answer's path with a reason a person understands.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from traffic import drive
from wordy_agent import IGNORE_SERVED_BY, WordyAgent

from recorder import load
from recorder.checks.language import language_available
from recorder.cli import main
from recorder.kit import KitServer, start_kit
from recorder.learn import learn
from recorder.learn.run import Learned
from recorder.record.proxy import create_proxy_app
from recorder.record.proxy.server import ProxyServer
from recorder.replay.run import play
from recorder.rules.ruleset import Rules, rules_from_text

pytestmark = pytest.mark.e2e

SEED = 23
TIMEOUT = 10.0  # seconds per exchange


@dataclass(frozen=True)
class Learnt:
    kit: KitServer
    folder: Path
    rules_file: Path
    learned: Learned

    def file(self, needle: str) -> Path:
        """The transcript whose first request carries `needle`."""
        for path in sorted(self.folder.glob("*.http")):
            if needle.encode() in load(path).exchanges[0].request.body:
                return path
        raise AssertionError(f"no transcript sends {needle!r}")

    def rules(self) -> Rules:
        return rules_from_text(self.rules_file.read_text() + IGNORE_SERVED_BY, "learned.yaml")


@pytest.fixture(scope="module")
def learnt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Learnt]:
    folder = tmp_path_factory.mktemp("llm-agent")
    out = folder / "rec"
    with start_kit(vary=True, seed=SEED) as kit:
        # (the traffic's webhook is on loopback: local work, said so)
        with ProxyServer(create_proxy_app(kit.url, out=out, push_loopback=True)) as server:
            drive(server.url, token=kit.token)
        rules_file = folder / "learned.yaml"
        learned = learn(
            [out],
            agent=kit.url,
            runs=4,
            environ={"A2A_TOKEN": kit.token},
            timeout=TIMEOUT,
            output=str(rules_file),
        )
        yield Learnt(kit, out, rules_file, learned)


def test_learn_checks_what_varied_where_it_varied_and_nothing_else(learnt: Learnt) -> None:
    learned = learnt.learned
    assert learned.errors == [] and learned.regressions == 0
    rules = yaml.safe_load(learnt.rules_file.read_text())
    # the answers vary and get checks; nothing is "any text", no place is ignored
    assert set(rules) == {"version", "checks"}, rules
    review = learnt.file("src/cart.py").name
    entries = {(e["in"], e["path"]): e for e in rules["checks"]}
    entry = entries[(f"{review}#1", "$.result.task.artifacts[*].parts[*].text")]
    checks = {name: value for item in entry["assert"] for name, value in item.items()}
    assert {"src/cart.py:2", "[todo]", "[debug-print]", "[missing-tests]"} <= set(checks["facts"])
    # a finding's facts are checked together: a line with its file, a rule with them
    assert ["[todo]", "src/cart.py:2", "TODO"] in checks["claims"]["each"]
    assert checks["claims"]["count"] == 3 and checks["claims"]["once"] is True
    assert checks["length"]["min"] > 50 and 0 < checks["similar"] < 1
    if language_available():
        assert checks["language"] == "en"
    assert all(re.fullmatch(r"\d\d-[\w-]+\.http#\d+", scope) for scope, _ in entries)
    text = learnt.rules_file.read_text()
    assert re.search(r"# in all \d+ runs and the recording", text) and "characters" in text


def test_ten_replays_with_fresh_wording_pass(learnt: Learnt, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "play",
            str(learnt.folder),
            "--agent",
            learnt.kit.url,
            "--rules",
            str(learnt.rules_file),
            "--trials",
            "10",
        ],
        env={"A2A_TOKEN": learnt.kit.token},
    )
    assert result.exit_code == 0, result.output
    assert re.search(r"exchanges: \d+ passed, 0 failed", result.stdout), result.stdout


def test_without_the_learned_checks_the_same_replay_fails(learnt: Learnt) -> None:
    result = play(
        [str(learnt.file("src/cart.py"))],
        agent=learnt.kit.url,
        environ={"A2A_TOKEN": learnt.kit.token},
        timeout=TIMEOUT,
    )
    assert result.failed_count > 0


# --- regressions ---------------------------------------------------------------------------

FRENCH = (
    "J'ai relu 1 fichier : 3 remarques.\n"
    "src/cart.py:2 : [todo] un TODO est resté dans le code ajouté.\n"
    "src/cart.py:2 : [debug-print] instruction de débogage dans du code Python : supprimez-la "
    "ou utilisez plutôt le module de journalisation.\n"
    "diff : [missing-tests] src/cart.py a changé, mais aucun fichier de test : ajoutez ou "
    "mettez à jour les tests."
)
LANGUAGES = (
    "I can review Python, JavaScript, TypeScript, Go, Java and Rust. Send me a unified diff "
    "and I will comment on the added lines."
)


def _drop_lines(word: str) -> Callable[[str], str]:
    return lambda text: "\n".join(line for line in text.splitlines() if word not in line)


def _no_file_names(text: str) -> str:
    return re.sub(r"src/cart\.py:(\d+)", r"line \1", text).replace("src/cart.py", "the file")


@dataclass(frozen=True)
class Regression:
    name: str
    target: str  # review, languages or question: the answer it breaks
    edit: Callable[[str], str]
    checks: frozenset[str]  # the checks that must fail (others may too)
    words: tuple[str, ...]  # in the failing mismatches' lines


def regression(
    name: str, target: str, edit: Callable[[str], str], checks: str, *words: str
) -> Regression:
    return Regression(name, target, edit, frozenset(checks.split()), words)


REGRESSIONS = [
    regression("empty", "review", lambda t: "", "facts length", "0 characters"),
    regression(
        "refusal",
        "review",
        lambda t: "I'm sorry, but I can't help with that request.",
        "facts length",
        '"src/cart.py:2"',
        "not found",
    ),
    regression("french", "review", lambda t: FRENCH, "language", "fr, expected en"),
    regression("finding-left-out", "review", _drop_lines("[todo]"), "facts", '"[todo]"'),
    regression(
        "wrong-file",
        "review",
        lambda t: t.replace("src/cart.py", "src/card.py"),
        "facts",
        '"src/cart.py:2" not found',
    ),
    regression("other-question", "review", lambda t: LANGUAGES, "facts", '"[todo]"'),
    regression("truncated", "review", lambda t: t[: len(t) // 2], "facts", "not found"),
    regression(
        "error-as-answer",
        "review",
        lambda t: "Error: the model provider timed out (request 7f3a9c). Please try again later.",
        "facts length",
        "not found",
    ),
    regression(
        "lines-off-by-9",
        "review",
        lambda t: t.replace("src/cart.py:2", "src/cart.py:11"),
        "facts",
        '"src/cart.py:2" not found',
    ),
    regression(
        "wrong-rule-tag",
        "review",
        lambda t: t.replace("[todo]", "[style]"),
        "facts",
        '"[todo]" not found',
    ),
    regression("file-names-dropped", "review", _no_file_names, "facts", '"src/cart.py:2"'),
    regression(
        "wrong-language-named",
        "review",
        lambda t: t.replace("Python", "Java"),
        "facts",
        '"Python" not found',
    ),
    regression(
        "as-an-ai",
        "review",
        lambda t: "As an AI language model, I cannot run code, but the diff looks fine to me.",
        "facts",
        "not found",
    ),
    regression(
        "duplicated-finding",
        "review",
        lambda t: "\n".join(
            line for line in t.splitlines() for _ in range(2 if "[todo]" in line else 1)
        ),
        "claims",
        'claim "[todo] src/cart.py:2 TODO" repeated: stated 2 times',
    ),
    regression(
        "one-paragraph",
        "review",
        lambda t: " ".join(t.splitlines()),
        "matches",
        "no match for",
    ),
    regression(
        "language-left-out",
        "languages",
        lambda t: t.replace("Rust", "Ruby"),
        "facts",
        '"Rust" not found',
    ),
    regression(
        "question-not-asked",
        "question",
        lambda t: "Reviewing your diff now.",
        "facts length",
        '"src/app.py" not found',
    ),
]
if not language_available():
    REGRESSIONS = [r for r in REGRESSIONS if "language" not in r.checks]

# target -> (what its first request sends, the text it breaks, the path that must fail)
TARGETS = {
    "review": ("src/cart.py", "[todo]", "$.result.task.artifacts[0].parts[*].text"),
    "languages": ("Which languages", "Python", "$.result.message.parts[*].text"),
    "question": ("def mean", "+++ b/", "$.result.task.status.message.parts[*].text"),
}


def _parts(value: Any, inside: bool = False) -> Iterator[dict[str, Any]]:
    """The agent's text parts of a reply: an artifact's, a message's, a status message's (a
    task's history, the user's words among them, is left alone)."""
    if isinstance(value, dict):
        if inside and isinstance(value.get("text"), str):
            yield value
        for name, item in value.items():
            if name != "history":
                yield from _parts(item, inside or name in ("artifacts", "artifact", "message"))
    elif isinstance(value, list):
        for item in value:
            yield from _parts(item, inside)


def _breaker(marker: str, edit: Callable[[str], str]) -> Callable[[dict[str, Any]], None]:
    def rewrite(body: dict[str, Any]) -> None:
        for part in _parts(body):
            if marker in part["text"]:
                part["text"] = edit(part["text"])

    return rewrite


@pytest.fixture(scope="module")
def breaking(learnt: Learnt) -> Iterator[WordyAgent]:
    with WordyAgent(learnt.kit) as agent:
        yield agent


def _failures(learnt: Learnt, agent: WordyAgent, target: str) -> list[tuple[int, Any]]:
    needle, _, _ = TARGETS[target]
    result = play(
        [str(learnt.file(needle))],
        agent=agent.url,
        rules=learnt.rules(),
        environ={"A2A_TOKEN": learnt.kit.token},
        timeout=TIMEOUT,
    )
    return [
        (exchange.number, mismatch)
        for transcript in result.transcripts
        for exchange in transcript.exchanges
        for mismatch in exchange.mismatches
    ]


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_proxy_alone_breaks_nothing(learnt: Learnt, breaking: WordyAgent, target: str) -> None:
    breaking.rewrite = None
    assert _failures(learnt, breaking, target) == []


@pytest.mark.parametrize("case", REGRESSIONS, ids=[r.name for r in REGRESSIONS])
def test_a_regressed_answer_fails_at_its_path_with_a_reason(
    learnt: Learnt, breaking: WordyAgent, case: Regression
) -> None:
    _, marker, path = TARGETS[case.target]
    breaking.rewrite = _breaker(marker, case.edit)
    try:
        failures = _failures(learnt, breaking, case.target)
    finally:
        breaking.rewrite = None
    at_answer = [m for number, m in failures if number == 1 and m.path == path]
    lines = "\n".join(m.describe() for m in at_answer)
    assert at_answer, [m.describe() for _, m in failures]
    assert case.checks <= {m.check for m in at_answer}, lines
    for word in case.words:
        assert word in lines, lines


def test_learn_says_when_two_runs_are_too_few(learnt: Learnt, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["learn", str(learnt.folder), "--agent", learnt.kit.url, "--runs", "2", "--max-runs", "2"],
        env={"A2A_TOKEN": learnt.kit.token},
    )
    # (two runs may not see an answer's wording vary yet: its next wording is then a likely
    # regression, exit status 1; that is what the note warns of)
    assert result.exit_code in (0, 1), result.output
    assert (
        "note: 2 live runs: too few to tell the facts of a varying answer from its wording;"
        " learn with --runs 4 or more\n" in result.stderr
    )
    assert "\nchecks:\n" in result.stdout
