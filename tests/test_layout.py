"""The package layout keeps its promise: imports run one way (core <- jobs <- CLI), the
core's rooms stand on one another in one order, the pure rooms (the format, the rules, the
secrets, the bindings, the addresses and replay's verdict) do no I/O, and no modules import
each other in a circle.

See ARCHITECTURE.md. Every `import` in `recorder/`, including the lazy ones inside functions
and those made for type checking only, is read with `ast` and checked against the rooms each
room may use.
"""

from __future__ import annotations

import ast
import functools
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
    assert room_of("recorder.format.model") == "core"


@functools.cache
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


def test_no_modules_import_each_other_in_a_circle() -> None:
    # ARCHITECTURE.md: a room stands above all that it imports (lazy imports count: a circle
    # tied by one is still two rooms that cannot be read apart). Module size is no rule: a
    # long module is a place to look for two concerns, not a count to get under.
    found = circles(module_imports())
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


# --------------------------------------------------------------------------- the core's rooms

# what each room of the core may import of the recorder, besides itself (a room: a module or a
# package right under `recorder/`; `recorder` itself is the public API). One order, no circle:
# errors, jsonpath, addresses < format < bindings, secrets < checks < rules; disk < checking
CORE: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "jsonpath": frozenset(),
    "addresses": frozenset(),
    "servers": frozenset(),
    "extras": frozenset(),
    # (where push notifications are delivered: the recorder's and the stand-in's screen)
    "push_urls": frozenset({"errors"}),
    "format": frozenset({"errors"}),
    "bindings": frozenset({"errors", "format"}),
    "secrets": frozenset({"format"}),
    # (the model checks keep their answers on disk, written as every writer writes them)
    "checks": frozenset({"errors", "bindings", "jsonpath", "disk"}),
    "rules": frozenset({"errors", "format", "bindings", "checks", "jsonpath"}),
    "disk": frozenset({"errors", "format"}),
    "checking": frozenset({"errors", "format", "bindings", "disk"}),
    "recorder": frozenset({"errors", "format", "disk"}),
}


def core_room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "recorder"


CORE_MODULES = [path for path in MODULES if room_of(module_name(path)) == "core"]


@pytest.mark.parametrize("path", CORE_MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_core_rooms_stand_on_one_another_in_one_order(path: Path) -> None:
    name = module_name(path)
    room = core_room(name)
    assert room in CORE, f"{name}: a room of the core that ARCHITECTURE.md does not place"
    allowed = CORE[room] | {room}
    wrong = sorted(
        target
        for target in module_imports()[name]
        if room_of(target) == "core" and core_room(target) not in allowed
    )
    assert not wrong, f"{name} ({room}) imports {wrong}: see ARCHITECTURE.md"


# I/O: the network, threads, processes, the process's switches, the recorder's disk and servers
IO_MODULES = frozenset(
    {
        "asyncio",
        "concurrent",
        "fcntl",
        "gc",
        "grpc",
        "http",
        "httptools",
        "httpx",
        "multiprocessing",
        "select",
        "selectors",
        "shutil",
        "signal",
        "socket",
        "ssl",
        "starlette",
        "subprocess",
        "tempfile",
        "threading",
        "urllib.request",
        "uvicorn",
        "uvloop",
        "recorder.disk",
        "recorder.servers",
    }
)
# the rooms that take values and return values: parsing, writing, pairing, comparing
PURE = ("recorder.format", "recorder.rules", "recorder.secrets", "recorder.bindings")
PURE += ("recorder.addresses", "recorder.jsonpath", "recorder.errors", "recorder.replay.verdict")
# pure modules of the jobs: where an agent's own call belongs (record), which recorded call a
# live one stands for and what the stand-in answers (replay)
PURE += ("recorder.record.calls", "recorder.replay.calls")


def all_imports(path: Path) -> set[str]:
    """Every module `path` imports, of the recorder or not (lazy ones too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def io_imports(path: Path) -> list[str]:
    return sorted(
        module
        for module in all_imports(path)
        if any(module == io or module.startswith(io + ".") for io in IO_MODULES)
    )


PURE_MODULES = [
    path
    for path in MODULES
    if any(module_name(path) == room or module_name(path).startswith(room + ".") for room in PURE)
]


@pytest.mark.parametrize("path", PURE_MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_pure_rooms_do_no_io(path: Path) -> None:
    # ARCHITECTURE.md: the format, the rules, the secrets, the bindings and the verdict take
    # values and return values; a speed path does not switch the process's collector either
    assert not io_imports(path), f"{module_name(path)} imports {io_imports(path)}"


def test_the_io_check_sees_io(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import gc\ndef f():\n    from recorder.disk.atomic import write_text_atomic\n")
    assert io_imports(bad) == ["gc", "recorder.disk.atomic"]
    assert not io_imports(PACKAGE / "format" / "model.py")


VERDICT = "recorder.replay.verdict"
# what the verdict stands on besides itself: the pure rooms, and the checks a rules file names
VERDICT_USES = ("recorder.format", "recorder.rules", "recorder.secrets", "recorder.checks")
VERDICT_USES += ("recorder.bindings",)
VERDICT_USES += ("recorder.addresses", "recorder.jsonpath", "recorder.errors")


@pytest.mark.parametrize(
    "path", sorted((PACKAGE / "replay" / "verdict").glob("*.py")), ids=lambda p: p.name
)
def test_the_verdict_stands_on_the_pure_rooms_alone(path: Path) -> None:
    # the verdict on one exchange is decided from values: it imports none of the player's
    # shell (sending, files, reports), so it can be read, and tested, without them
    wrong = sorted(
        target
        for target in module_imports()[module_name(path)]
        if not target.startswith(VERDICT) and not target.startswith(VERDICT_USES)
    )
    assert not wrong, f"{path.name} imports {wrong}"


@pytest.mark.parametrize(
    "path", sorted((PACKAGE / "record" / "store").glob("*.py")), ids=lambda p: p.name
)
def test_the_store_stands_below_the_proxy(path: Path) -> None:
    # the store writes transcripts: it knows nothing of the proxy, its transport or the gRPC
    # listener that feed it
    feeders = ("recorder.record.proxy", "recorder.record.transport", "recorder.record.grpc_proxy")
    wrong = sorted(m for m in module_imports()[module_name(path)] if m.startswith(feeders))
    assert not wrong, f"{path.name} imports {wrong}"
