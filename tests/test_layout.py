"""The package layout keeps its promise: imports run one way (core <- jobs <- CLI).

See ARCHITECTURE.md. Every `import` in `recorder/`, including the lazy ones inside functions,
is read with `ast` and checked against the rooms each room may use.
"""

from __future__ import annotations

import ast
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
    wrong = sorted(target for target in imported_modules(path) if room_of(target) not in allowed)
    assert not wrong, f"{name} ({room}) imports {wrong}: see ARCHITECTURE.md"


def test_the_rooms_check_sees_a_wrong_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from recorder.replay.player import play\n")
    assert imported_modules(bad) == {"recorder.replay.player", "recorder.replay.player.play"}
    assert room_of("recorder.replay.player") == "replay"
    assert room_of("recorder.format.model") == "core"


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


CHECKS_ROOM = PACKAGE / "checks"


def import_cycle(folder: Path) -> list[str]:
    """A circle of imports among the modules of `folder` (lazy ones too), or []."""
    names = {module_name(path): path for path in sorted(folder.glob("*.py"))}
    graph = {
        name: sorted(m for m in imported_modules(path) if m in names and m != name)
        for name, path in names.items()
    }

    def walk(name: str, trail: list[str]) -> list[str]:
        if name in trail:
            return [*trail[trail.index(name) :], name]
        for target in graph[name]:
            found = walk(target, [*trail, name])
            if found:
                return found
        return []

    for name in graph:
        found = walk(name, [])
        if found:
            return found
    return []


def test_the_checks_room_imports_in_no_circle() -> None:
    # ARCHITECTURE.md: the check types are in `base`, which the registry (`vocabulary`) and
    # the checks it holds (`judges`, `extract`, …) import; none of them imports the registry
    assert import_cycle(CHECKS_ROOM) == []


def test_the_circle_check_sees_a_circle(tmp_path: Path) -> None:
    room = tmp_path / "recorder" / "room"
    room.mkdir(parents=True)
    (room / "a.py").write_text("import recorder.room.b\n")
    (room / "b.py").write_text("def f():\n    from recorder.room import a\n")
    global PACKAGE
    saved, PACKAGE = PACKAGE, tmp_path / "recorder"
    try:
        assert import_cycle(room) == ["recorder.room.a", "recorder.room.b", "recorder.room.a"]
    finally:
        PACKAGE = saved
