"""The shape of the house (docs/architecture.md): which room may import which, no import cycle
between modules or between folders, the runtime without the concrete Runtime class or HTTP
words, size limits on modules and functions, and no formatter escapes in product code.

A room is a folder with one job. Imports under ``if TYPE_CHECKING:`` are left out (they cost
nothing at run time and cannot form a run-time cycle); imports inside functions count.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("swim", "cluster", "dashboard", "scenarios")

# room -> the rooms it may import. "ground" is cluster/ground/ (errors, ids, parse, safeyaml,
# settings), which every room of the runtime shares; "api" is cluster/api/, the HTTP
# description of the runtime's answers and of the modules' forms and routes; "facade" is
# cluster/__init__.py, the embedded API, which nothing inside the project imports (it loads
# its names lazily, so it imports nothing at all until asked).
ALLOWED: dict[str, frozenset[str]] = {
    "ground": frozenset({"swim"}),
    "swim": frozenset(),
    "storage": frozenset({"ground"}),
    "runtime": frozenset({"ground"}),
    "api": frozenset({"ground", "runtime"}),
    "modules": frozenset({"ground", "runtime", "api", "storage"}),
    "dashboard": frozenset({"ground", "runtime", "api"}),
    "node": frozenset({"ground", "runtime", "api", "dashboard", "swim"}),
    "local": frozenset({"ground", "node"}),
    "scenarios": frozenset({"ground", "local", "swim"}),
    "rt_cluster": frozenset({"ground", "local", "scenarios"}),
    "facade": frozenset({"ground", "runtime", "node"}),
}
CLUSTER_ROOMS = ("ground", "runtime", "api", "modules", "storage", "node", "local", "rt_cluster")
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80
HTTP_WORDS = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\b|/api/|/openapi")


def room_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] in ("swim", "dashboard", "scenarios"):
        return parts[0]
    if parts[0] != "cluster":
        return None
    if len(parts) == 1:
        return "facade"
    if parts[1] in CLUSTER_ROOMS:
        return parts[1]
    raise AssertionError(f"{module} is in no room: put it in a room's folder")


@dataclass(frozen=True)
class Source:
    path: Path
    module: str
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


def sources() -> list[Source]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found.append(Source(path, ".".join(parts), ast.parse(path.read_text())))
    return found


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node except what sits under ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            yield from (n for orelse in child.orelse for n in ast.walk(orelse))
            continue
        yield child
        yield from _runtime_nodes(child)


def imports(src: Source, known: set[str]) -> set[str]:
    """The project modules ``src`` imports at run time (a name that is a module counts too)."""
    found: set[str] = set()
    for node in _runtime_nodes(src.tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = src.module.split(".")
                if not src.is_package:
                    base.pop()
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)
    return {m for m in found if m in known and m != src.module}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    srcs = sources()
    known = {s.module for s in srcs}
    return {s.module: imports(s, known) for s in srcs}


def test_every_import_between_rooms_is_allowed(graph: dict[str, set[str]]) -> None:
    wrong = []
    for module, targets in graph.items():
        mine = room_of(module)
        assert mine is not None
        for target in targets:
            theirs = room_of(target)
            if theirs is not None and theirs != mine and theirs not in ALLOWED[mine]:
                wrong.append(f"{module} ({mine}) imports {target} ({theirs})")
    assert not wrong, "\n".join(sorted(wrong))


def test_the_table_has_no_cycle() -> None:
    seen: set[str] = set()

    def visit(room: str, path: tuple[str, ...]) -> None:
        assert room not in path, f"rooms import each other: {' -> '.join((*path, room))}"
        if room in seen:
            return
        for other in ALLOWED[room]:
            visit(other, (*path, room))
        seen.add(room)

    for room in ALLOWED:
        visit(room, ())


def _cycle(graph: dict[str, set[str]], *, nested: bool = False) -> list[str] | None:
    """One import cycle, or None. Between modules a package importing its own submodules is not
    a cycle (Python runs the submodule first); between folders (``nested``) it is."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def edges(m: str) -> set[str]:
        return {t for t in graph[m] if nested or not t.startswith(m + ".")}

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for t in sorted(edges(m)):
            if state.get(t) == 1:
                return [*stack[stack.index(t) :], t]
            if t not in state and (found := visit(t)) is not None:
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)) is not None:
            return found
    return None


def test_no_import_cycle_between_modules(graph: dict[str, set[str]]) -> None:
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def test_the_cycle_check_can_fail() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"a.x"}, "a.x": set()}) is None
    assert _cycle({"a": {"a.x"}, "a.x": {"a"}}, nested=True) == ["a", "a.x", "a"]


def test_modules_and_functions_stay_small() -> None:
    big = []
    for src in sources():
        lines = len(src.path.read_text().splitlines())
        if lines > MAX_MODULE_LINES:
            big.append(f"{src.module}: {lines} lines")
        for node in ast.walk(src.tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    big.append(f"{src.module}.{node.name}: {length} lines")
    assert not big, "\n".join(big)


def folder_of(module: str, graph: dict[str, set[str]]) -> str:
    """The folder a module sits in: a package is its own folder."""
    if any(m.startswith(module + ".") for m in graph):
        return module
    return module.rpartition(".")[0] or module


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Folder -> the other folders its modules import (TYPE_CHECKING imports left out)."""
    folders: dict[str, set[str]] = {}
    for module, targets in graph.items():
        mine = folder_of(module, graph)
        theirs = {folder_of(t, graph) for t in targets} - {mine}
        folders.setdefault(mine, set()).update(theirs)
    for targets in list(folders.values()):
        for t in targets:
            folders.setdefault(t, set())
    return folders


def test_no_import_cycle_between_folders(graph: dict[str, set[str]]) -> None:
    folders = folder_graph(graph)
    # Unlike modules, a folder importing a folder inside it counts: cluster -> cluster.runtime
    # -> cluster was the cycle the facade and the ground floor once made.
    cycle = _cycle(folders, nested=True)
    assert cycle is None, "folders import each other: " + " -> ".join(cycle or ())


def _all_imports(tree: ast.AST) -> Iterator[ast.ImportFrom | ast.Import]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def test_the_runtime_never_names_the_concrete_runtime() -> None:
    """Rooms under cluster/runtime/ see the runtime through Protocols, even for type hints."""
    wrong = []
    for src in sources():
        if not src.module.startswith("cluster.runtime."):
            continue
        for node in _all_imports(src.tree):
            if isinstance(node, ast.ImportFrom) and any(a.name == "Runtime" for a in node.names):
                wrong.append(f"{src.module}: {ast.unparse(node)}")
    assert not wrong, "\n".join(wrong)


def test_the_runtime_holds_no_http_words() -> None:
    """Methods and paths are the dashboard's (and its description room's), not the runtime's."""
    found = [
        f"{src.path.relative_to(ROOT)}:{n}: {line.strip()}"
        for src in sources()
        if src.module.startswith("cluster.runtime")
        for n, line in enumerate(src.path.read_text().splitlines(), 1)
        if HTTP_WORDS.search(line)
    ]
    assert not found, "\n".join(found)


def test_no_format_skips_in_product_code() -> None:
    """Size limits are met by structure, not by packing lines past the formatter."""
    found = [
        f"{src.path.relative_to(ROOT)}:{n}"
        for src in sources()
        for n, line in enumerate(src.path.read_text().splitlines(), 1)
        if "fmt: skip" in line or "fmt: off" in line
    ]
    assert not found, "\n".join(found)


# ---- scenarios: one engine ------------------------------------------------------------------

# A step's kind, as a scenario file writes it, and the calls that carry a fault out on a
# cluster, a backend or the simulated network (``add`` and ``start`` are left out: sets and
# nurseries have them too).
STEP_KIND_WORDS = frozenset(
    {"kill", "stop", "pause", "resume", "restart", "add", "partition", "heal", "loss", "delay"}
)
FAULT_CALLS = frozenset(
    {
        "kill",
        "stop",
        "leave",
        "pause",
        "resume",
        "restart",
        "start_node",
        "add_nodes",
        "partition",
        "heal",
        "loss",
        "delay",
        "set_loss",
        "set_delay",
        "fault",
        "faults",
    }
)
ENGINE = "scenarios.play.engine"
# The backends, one per mode, and what they stand on: only these reach a cluster's processes
# (cluster.local) or the simulated network (swim.SimNetwork).
BACKENDS = frozenset(
    {
        "scenarios.play.simcluster",
        "scenarios.play.realcluster",
        "scenarios.play.processes",
        "scenarios.play.attach",
        "scenarios.play.leftovers",
        "scenarios.play.agents",
    }
)
LOCAL_ERRORS = frozenset({"ClusterError", "BadInput"})  # what any module may catch or raise


def _constants(node: ast.expr) -> Iterator[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for elt in node.elts:
            yield from _constants(elt)


def step_players(tree: ast.AST) -> list[str]:
    """The functions of ``tree`` that map a step kind to an action: one compares against a
    step kind's word and calls a fault in the same body."""
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        kinds = {
            word
            for node in ast.walk(fn)
            if isinstance(node, ast.Compare)
            for comparator in node.comparators
            for word in _constants(comparator)
        } & STEP_KIND_WORDS
        calls = {
            node.func.attr
            for node in ast.walk(fn)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        } & FAULT_CALLS
        if kinds and calls:
            found.append(f"{fn.name} (compares {sorted(kinds)}, calls {sorted(calls)})")
    return found


def test_only_the_engine_maps_step_kinds_to_actions() -> None:
    """A scenario file, explore and the Python API play through one engine: the calls of
    ``play.chaos.Cluster``, each step kind mapped to its call in ``scenarios.play.engine`` alone."""
    wrong = [
        f"{src.module}: {player}"
        for src in sources()
        if src.module.startswith("scenarios") and src.module != ENGINE
        for player in step_players(src.tree)
    ]
    assert not wrong, "\n".join(wrong)
    engine = next(s for s in sources() if s.module == ENGINE)
    assert step_players(engine.tree), "the engine plays the steps"


def reaches_past_the_backends(src: Source) -> list[str]:
    """What ``src`` takes of cluster.local beyond its errors, and any use of SimNetwork."""
    found = []
    for node in _runtime_nodes(src.tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cluster.local"):
            names = {a.name for a in node.names} - LOCAL_ERRORS
            if names or node.module != "cluster.local":
                found.append(ast.unparse(node))
        elif isinstance(node, ast.Import) and any(
            a.name.startswith("cluster.local") for a in node.names
        ):
            found.append(ast.unparse(node))
        elif isinstance(node, ast.Attribute | ast.alias | ast.Name) and "SimNetwork" in (
            getattr(node, "attr", None),
            getattr(node, "name", None),
            getattr(node, "id", None),
        ):
            found.append("SimNetwork")
    return sorted(set(found))


def test_only_the_backends_reach_processes_or_the_simulated_network() -> None:
    """One backend per mode: outside them, scenarios/ plays on a ``Cluster`` and takes only
    the launcher's errors from cluster.local."""
    wrong = [
        f"{src.module}: {what}"
        for src in sources()
        if src.module.startswith("scenarios") and src.module not in BACKENDS
        for what in reaches_past_the_backends(src)
    ]
    assert not wrong, "\n".join(wrong)


def test_scenario_modules_stay_under_the_tripwire() -> None:
    """A module of scenarios/ nears the limit: its second job moves out before it is reached."""
    big = [
        f"{src.module}: {n} lines"
        for src in sources()
        if src.module.startswith("scenarios")
        and (n := len(src.path.read_text().splitlines())) >= MAX_MODULE_LINES - 25
    ]
    assert not big, "\n".join(big)
