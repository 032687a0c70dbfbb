"""The package layout keeps its promise: imports run one way (core <- jobs <- CLI).

See ARCHITECTURE.md. Every `import` in `recorder/`, including the lazy ones inside functions,
is read with `ast` and checked against the rooms each room may use.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "recorder"
JOBS = ("record", "replay", "docs", "kit", "planner", "serve", "learn")
# which rooms each room may import, besides itself and the core
ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "record": frozenset(),
    "replay": frozenset(),
    "docs": frozenset(),
    "kit": frozenset(),
    "serve": frozenset(),
    # the planner drives the kit through the recorder and keeps recorded ids on re-record
    "planner": frozenset({"kit", "record", "replay"}),
    # learn plays the transcripts with the replay's player, N times, and keeps the live replies
    "learn": frozenset({"replay"}),
    "cli": frozenset(JOBS),
}
# entry points other tools load (pytest), which start the embedded default agent like the CLI
ENTRY_POINTS = {"recorder.replay.pytest_plugin": frozenset({"kit"})}
# pure modules of a job that another job may import: the player matches the agent's calls to
# the recorded ones as the stand-in matches a client's requests (one matching, not two)
SHARED_MODULES = {"replay": frozenset({"recorder.serve.match", "recorder.serve.spelling"})}


def room_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in (*JOBS, "cli"):
        return parts[1]
    return "core"


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            # `from recorder import kit` names a room as a member
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name == "recorder" or name.startswith("recorder.")}


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_run_one_way(path: Path) -> None:
    name = module_name(path)
    room = room_of(name)
    allowed = ALLOWED[room] | ENTRY_POINTS.get(name, frozenset()) | {room, "core"}
    shared = SHARED_MODULES.get(room, frozenset())
    wrong = sorted(
        target
        for target in imported_modules(path)
        if room_of(target) not in allowed
        and target not in shared
        and target.rpartition(".")[0] not in shared
    )
    assert not wrong, f"{name} ({room}) imports {wrong}: see ARCHITECTURE.md"


SHARED = sorted({module for modules in SHARED_MODULES.values() for module in modules})


@pytest.mark.parametrize("module", SHARED)
def test_a_shared_module_imports_only_the_core_and_shared_modules(module: str) -> None:
    # what another job imports of a job must not bring that job's I/O along
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    wrong = sorted(
        target
        for target in imported_modules(path)
        if room_of(target) != "core"
        and target not in SHARED
        and target.rpartition(".")[0] not in SHARED
    )
    assert not wrong, f"{module} imports {wrong}"


def test_a_shared_module_is_imported_without_the_rest_of_its_job() -> None:
    # a package's __init__ that imported its app would bring the job along all the same
    code = (
        "import sys\n"
        f"for name in {SHARED!r}: __import__(name)\n"
        "print(sorted(m for m in sys.modules if m.startswith('recorder.') and m.count('.') > 1))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=PACKAGE.parent,
    ).stdout
    rooms = {room_of(name) for name in ast.literal_eval(found)} - {"core"}
    jobs_loaded = {
        name for name in ast.literal_eval(found) if room_of(name) in rooms and name not in SHARED
    }
    assert not jobs_loaded, f"importing {SHARED} imports {sorted(jobs_loaded)}"


def test_the_rooms_check_sees_a_wrong_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from recorder.replay.player import play\n")
    assert imported_modules(bad) == {"recorder.replay.player", "recorder.replay.player.play"}
    assert room_of("recorder.replay.player") == "replay"
    assert room_of("recorder.model") == "core"


def test_no_module_is_too_long_to_hold_in_the_head() -> None:
    # ARCHITECTURE.md: a room a reader can hold in their head
    long = {
        str(path.relative_to(PACKAGE)): count
        for path in MODULES
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > 650
    }
    assert not long, f"modules over 650 lines: {long}"


TRANSPORT = PACKAGE / "record" / "transport"


@pytest.mark.parametrize("path", sorted(TRANSPORT.glob("*.py")), ids=lambda p: p.name)
def test_the_transport_is_a_room_of_its_own(path: Path) -> None:
    # ARCHITECTURE.md: the HTTP/1.1 server and client are not the recording: they import
    # nothing of the recorder but each other, and `cycle` does not import `http1` (no circle)
    imported = imported_modules(path)
    outside = sorted(m for m in imported if not m.startswith("recorder.record.transport"))
    assert not outside, f"{path.name} imports {outside}"
    if path.name == "cycle.py":
        assert not any(m.startswith("recorder.record.transport.http1") for m in imported)
