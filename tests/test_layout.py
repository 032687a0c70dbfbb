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


def module_imports() -> dict[str, set[str]]:
    """Each module of `recorder/` and the modules of `recorder/` it imports. `from package
    import module` imports the module (its package's `__init__` runs first, but that is no
    arrow of the importer's)."""
    names = {module_name(path): path for path in MODULES}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                submodules = {f"{node.module}.{alias.name}" for alias in node.names} & names.keys()
                found.update(submodules or {node.module})
        graph[name] = {target for target in found if target in names and target != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


# the checks' room is the learned-checks issue's: `vocabulary` imports `judges` lazily, for the
# `judge` check, and `judges` takes the vocabulary's types
KNOWN_CIRCLES = [["recorder.checks.judges", "recorder.checks.vocabulary"]]


def test_no_modules_import_each_other_in_a_circle() -> None:
    # ARCHITECTURE.md: a room stands above all that it imports (lazy imports count: a circle
    # tied by one is still two rooms that cannot be read apart). Module size is no rule: a
    # long module is a place to look for two concerns, not a count to get under.
    found = [group for group in circles(module_imports()) if group not in KNOWN_CIRCLES]
    assert not found, f"modules that import each other: {found}"


def test_the_circle_check_sees_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


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
