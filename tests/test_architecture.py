"""The shape of the house (docs/architecture.md): which room may import which, no import cycles,
and size limits on modules and functions.

A room is a folder with one job. Imports under ``if TYPE_CHECKING:`` are left out (they cost
nothing at run time and cannot form a run-time cycle); imports inside functions count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("swim", "cluster", "dashboard", "scenarios")

# room -> the rooms it may import. "ground" is cluster's errors, ids and settings, which every
# room of the runtime shares; "facade" is cluster/__init__.py, the embedded API, which nothing
# inside the project imports.
ALLOWED: dict[str, frozenset[str]] = {
    "ground": frozenset({"swim"}),
    "swim": frozenset(),
    "storage": frozenset({"ground"}),
    "runtime": frozenset({"ground"}),
    "modules": frozenset({"ground", "runtime", "storage"}),
    "dashboard": frozenset({"ground", "runtime"}),
    "node": frozenset({"ground", "runtime", "dashboard", "swim"}),
    "local": frozenset({"ground", "node"}),
    "scenarios": frozenset({"ground", "local", "swim"}),
    "rt_cluster": frozenset({"ground", "local", "scenarios"}),
    "facade": frozenset({"ground", "runtime", "node"}),
}
CLUSTER_ROOMS = ("ground", "runtime", "modules", "storage", "node", "local", "rt_cluster")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


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


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle between modules, or None (a package importing its own submodules is
    not a cycle: Python runs the submodule first)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def edges(m: str) -> set[str]:
        return {t for t in graph[m] if not t.startswith(m + ".")}

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
