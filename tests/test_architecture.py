"""The shape of the house (docs/architecture.md): which room may import which, no import cycle
between modules or between folders, the runtime without the concrete Runtime class or HTTP
words, size limits on modules and functions, and no formatter escapes in product code.

A room is a folder with one job. Every import counts between rooms and folders: at the top,
inside a function and under ``if TYPE_CHECKING:`` (a type hint is an edge too). Only the test of
cycles between modules leaves ``TYPE_CHECKING`` imports out (they cannot form a run-time cycle);
cluster/storage holds even those to one direction.
"""

from __future__ import annotations

import argparse
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
    "rpc": frozenset({"ground", "runtime", "swim"}),
    "hosts": frozenset({"ground"}),
    "node": frozenset({"ground", "runtime", "api", "swim", "rpc", "hosts"}),
    "local": frozenset({"ground", "rpc", "hosts"}),
    "sim": frozenset({"ground", "runtime", "swim", "rpc", "node"}),
    "scenarios": frozenset({"ground", "local", "swim", "rt_cluster", "sim"}),
    "rt_cluster": frozenset({"ground", "local"}),
    "facade": frozenset({"ground", "runtime", "node"}),
}
CLUSTER_ROOMS = (
    "ground",
    "runtime",
    "api",
    "modules",
    "storage",
    "rpc",
    "hosts",
    "node",
    "sim",
    "local",
    "rt_cluster",
)
MAX_MODULE_LINES = 450
TRIPWIRE = 25  # lines short of the limit at which a module already fails
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


def imports(src: Source, known: set[str], *, typing: bool = True) -> set[str]:
    """The project modules ``src`` imports (a name that is a module counts too): every import,
    at the top, inside a function or under ``if TYPE_CHECKING:``; with ``typing=False`` only
    those that run."""
    found: set[str] = set()
    for node in ast.walk(src.tree) if typing else _runtime_nodes(src.tree):
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
    """Module -> the modules it imports, every import counted."""
    srcs = sources()
    known = {s.module for s in srcs}
    return {s.module: imports(s, known) for s in srcs}


@pytest.fixture(scope="module")
def run_graph() -> dict[str, set[str]]:
    """Module -> the modules it imports when it runs (``TYPE_CHECKING`` imports left out)."""
    srcs = sources()
    known = {s.module for s in srcs}
    return {s.module: imports(s, known, typing=False) for s in srcs}


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


def test_no_import_cycle_between_modules(run_graph: dict[str, set[str]]) -> None:
    cycle = _cycle(run_graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def test_the_cycle_check_can_fail() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"a.x"}, "a.x": set()}) is None
    assert _cycle({"a": {"a.x"}, "a.x": {"a"}}, nested=True) == ["a", "a.x", "a"]


def test_modules_and_functions_stay_small() -> None:
    """A limit is a tripwire, not a target: a module within ``TRIPWIRE`` lines of the limit
    fails as one past it does, so its second job moves out before anyone squeezes it under."""
    big = []
    for src in sources():
        lines = len(src.path.read_text().splitlines())
        if lines >= MAX_MODULE_LINES - TRIPWIRE:
            big.append(f"{src.module}: {lines} lines (split it at its seam)")
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


# ---- cluster/local: one network interface, ids on every call, one convergence wait ----------

LOCAL_NETWORK_MODULES = {"network", "netns", "netplan", "record"}


def test_only_the_network_modules_of_local_ask_which_network() -> None:
    """In cluster/local the host and namespace networks are chosen once (``network_of``):
    outside the network modules nothing reads ``<record>.network`` or ``<node>.netns``
    (``self.network``, the chosen ``NodeNetwork``, is the one way to ask)."""
    found = []
    for src in sources():
        parts = src.module.split(".")
        if parts[:2] != ["cluster", "local"] or parts[-1] in LOCAL_NETWORK_MODULES:
            continue
        for node in ast.walk(src.tree):
            if not isinstance(node, ast.Attribute) or node.attr not in ("network", "netns"):
                continue
            if node.attr == "network" and ast.unparse(node.value) == "self":
                continue
            found.append(f"{src.path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "\n".join(found)


def test_local_cluster_calls_name_nodes_by_id() -> None:
    """Every public method of a local cluster (its own and inherited) takes node ids or
    member numbers, never a NodeRecord or AgentRecord."""
    import inspect

    from cluster.local import LocalCluster, MixedCluster

    records = re.compile(r"\b(NodeRecord|AgentRecord|AnyMember|Member)\b")
    found = []
    for cls in (LocalCluster, MixedCluster):
        for name, fn in inspect.getmembers(cls, inspect.isfunction):
            if name.startswith("_"):
                continue
            for param in inspect.signature(fn).parameters.values():
                if records.search(str(param.annotation)):
                    found.append(f"{cls.__name__}.{name}({param.name}: {param.annotation})")
    assert not found, "\n".join(sorted(set(found)))


def test_local_clusters_share_one_convergence_wait() -> None:
    """One loop waits for a local cluster to converge (cluster.local.convergence); the
    clusters only say how they look."""
    loops = [
        f"{src.module}.{node.name}"
        for src in sources()
        if src.module.startswith("cluster.local")
        for node in ast.walk(src.tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name == "wait_converged"
        and any(isinstance(n, ast.While) for n in ast.walk(node))
    ]
    assert loops == ["cluster.local.convergence.wait_converged"], loops


def test_the_netns_plan_touches_nothing_of_the_host() -> None:
    """cluster/local/netplan.py is pure data (tested without root): it imports no module
    that reaches the host (sockets, files, processes, netlink)."""
    pure = {"__future__", "hashlib", "ipaddress", "collections.abc", "pathlib", "record"}
    src = next(s for s in sources() if s.module == "cluster.local.netplan")
    used = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in _all_imports(src.tree)
        for alias in node.names
    }
    assert used <= pure, sorted(used - pure)


# ---- swim: one door per wire format -------------------------------------------------------

# The machine's modules: messages and time in, messages and events out (swim.machine's rules).
SWIM_MACHINE = (
    "swim.machine",
    "swim.probes",
    "swim.relays",
    "swim.membership",
    "swim.corrections",
    "swim.newcomers",
    "swim.intake",
    "swim.resync",
    "swim.table",
    "swim.broadcast",
)
# Who may read and write rtsim's own bytes: the package's public surface, the TCP frames and
# the door (the outbox measures its packet budget with swim.sizes, which makes no bytes).
OWN_CODEC_USERS = frozenset({"swim", "swim.exchange", "swim.rtsimdoor"})
CODECS = ("swim.wire", "swim.exchange", "swim.rtsimdoor", "swim.memberlist")


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_the_swim_machine_imports_no_wire_codec(graph: dict[str, set[str]]) -> None:
    """The machine takes and hands out messages (``swim.messages``); bytes are a door's
    (``swim.wireformat`` rule 1), so no machine module imports a codec or a door."""
    found = [
        f"{m} -> {t}" for m in SWIM_MACHINE for t in sorted(graph.get(m, ())) if _under(t, CODECS)
    ]
    assert not found, "\n".join(found)


def test_the_swim_driver_always_has_a_door() -> None:
    """``swim.driver`` rule 8: every wire format is a door, ours included, so the driver never
    asks whether it has one."""
    text = (ROOT / "swim" / "driver.py").read_text()
    found = re.findall(r"door is (?:not )?None|Door \| None", text)
    assert not found, found


def test_each_wire_format_is_read_and_written_by_its_own_room(graph: dict[str, set[str]]) -> None:
    """Our own packets (``swim.wire``) are read and written only by their door and their TCP
    frames: not by the machine, the driver or memberlist's room; and
    nothing else in ``swim`` imports memberlist's room (the node passes ``Memberlist(name)``)."""
    found = []
    for module, targets in sorted(graph.items()):
        if "swim.wire" in targets and module not in OWN_CODEC_USERS:
            found.append(f"{module} -> swim.wire")
        inside = _under(module, ("swim",)) and not _under(module, ("swim.memberlist",))
        if inside and any(_under(t, ("swim.memberlist",)) for t in targets):
            found.append(f"{module} -> swim.memberlist")
    assert not found, "\n".join(found)


def test_no_cycle_between_the_top_level_folders(graph: dict[str, set[str]]) -> None:
    """The design card's folders (swim, cluster, dashboard, scenarios) point one way, counting
    every import: inside a function and under ``TYPE_CHECKING`` too. A room of ``cluster/``
    that needs a higher folder is handed it (a name, a callable, a ``Command``)."""
    top = {p: set() for p in PACKAGES}
    for module, targets in graph.items():
        mine = module.split(".")[0]
        top[mine].update(t.split(".")[0] for t in targets if t.split(".")[0] != mine)
    cycle = _cycle(top, nested=True)
    assert cycle is None, "top-level folders import each other: " + " -> ".join(cycle or ())


def test_no_import_cycle_in_storage_even_for_type_hints(graph: dict[str, set[str]]) -> None:
    """``cluster/storage`` modules see each other one way; a module that needs one above it
    for a type takes a Protocol (``recovery.Recoverable``), not the class under
    ``TYPE_CHECKING``."""
    storage = {
        m: {t for t in targets if t.startswith("cluster.storage")}
        for m, targets in graph.items()
        if m.startswith("cluster.storage")
    }
    cycle = _cycle(storage)
    assert cycle is None, "storage modules import each other: " + " -> ".join(cycle or ())


# A class name that two product modules define, and why that is one meaning (or two kept apart
# by their packages on purpose). Any other name defined twice fails: give one of them its own.
SHARED_CLASS_NAMES: dict[str, str] = {
    **dict.fromkeys(
        ("Ack", "Alive", "Dead", "Nack", "Ping", "Suspect"),
        "one SWIM message in two wire formats: ours (swim.wire) and memberlist's "
        "(swim.memberlist.messages), which the edge translates into each other",
    ),
    "Faults": "the RPC request (cluster.rpc.frames) that sets a node's injected faults "
    "(swim.faults.Faults): the request is named for what it carries",
    "History": "swim.history's numbered ring of a member's table changes; scenarios.judge.checks' "
    "History is a run's events as its checkers read them",
    "Intake": "the door that sheds before decoding: UDP packets (swim.intake) and HTTP "
    "requests (dashboard.intake)",
    "Member": "a member of the membership (swim.members), memberlist's view of one "
    "(swim.memberlist.edge) and a launched cluster's member process (cluster.local.ledger)",
    "Membership": "the SWIM handle's membership (swim.membership) and the Protocol the "
    "runtime reads it through (cluster.runtime.membership)",
    "NodeState": "memberlist's push/pull record of a node (swim.memberlist.messages, Go's "
    "name) and the runtime's Protocol of a node's state (cluster.runtime.nodestate)",
    "Target": "an array's placement target (cluster.storage.placement) and a node a "
    "scenario attaches to (scenarios.play.attach)",
}


def test_no_two_product_classes_share_a_name() -> None:
    """One name, one meaning: a public class name defined in two product modules is listed in
    ``SHARED_CLASS_NAMES`` with the reason, or renamed (``DeviceState`` is an array member's
    state, ``swim.MemberState`` a node's)."""
    where: dict[str, list[str]] = {}
    for src in sources():
        for node in src.tree.body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where.setdefault(node.name, []).append(src.module)
    shared = {name: modules for name, modules in where.items() if len(modules) > 1}
    unlisted = [
        f"{name}: {', '.join(modules)}"
        for name, modules in sorted(shared.items())
        if name not in SHARED_CLASS_NAMES
    ]
    assert not unlisted, "class names defined twice:\n" + "\n".join(unlisted)
    stale = sorted(set(SHARED_CLASS_NAMES) - set(shared))
    assert not stale, f"listed but defined once (drop them): {stale}"


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
        "scenarios.play.wholesim",
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


# ---- one bound on a forward, one number grammar ---------------------------------------------

TIMERS = ("move_on_after", "fail_after", "move_on_at", "fail_at")


def test_the_forward_bound_is_the_peers_alone() -> None:
    """The runtime sets no timer of a forward's timeout: the peers it asks bound every call
    by their ``timeout`` (``cluster.node.peers`` rule 1); ``FakePeers`` is peers too. (The
    views matrix's one deadline over all its queued asks is a deadline, not a timeout.)"""
    found = [
        f"{src.module}: {text}"
        for src in sources()
        if src.module.startswith("cluster.runtime.") and src.module != "cluster.runtime.testing"
        for node in ast.walk(src.tree)
        if isinstance(node, ast.Call)
        and ast.unparse(node.func).endswith(TIMERS)
        and "timeout" in (text := ast.unparse(node)).lower()
    ]
    assert not found, "\n".join(found)


SIGNED_NUMBERS = ("12", "-12")
NOT_NUMBERS = ("x", "1x")
NUMBER_GRAMMAR = "cluster.ground.parse"


def number_patterns(src: Source) -> list[str]:
    """The regular expressions of ``src`` that read a signed number (both of
    ``SIGNED_NUMBERS``) and nothing else (none of ``NOT_NUMBERS``): a grammar of numbers."""
    found = []
    for node in ast.walk(src.tree):
        if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "re.compile"):
            continue
        arg = node.args[0] if node.args else None
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            pattern = re.compile(arg.value)
            if all(pattern.fullmatch(t) for t in SIGNED_NUMBERS) and not any(
                pattern.fullmatch(t) for t in NOT_NUMBERS
            ):
                found.append(arg.value)
    return found


def test_numbers_are_read_by_one_grammar() -> None:
    """ASCII digits, ranged, finite, one wording of the error: ``cluster.ground.parse``
    alone writes the pattern; everyone else calls it."""
    found = [
        f"{src.module}: {pattern}"
        for src in sources()
        if src.module != NUMBER_GRAMMAR
        for pattern in number_patterns(src)
    ]
    assert not found, "\n".join(found)
    grammar = next(s for s in sources() if s.module == NUMBER_GRAMMAR)
    assert number_patterns(grammar), "the grammar itself is seen (the test can fail)"


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_no_command_line_takes_an_abbreviated_option() -> None:
    """Issue 44: an option is its whole name, in every parser and subparser of ``rt_cluster``
    and ``rt_run`` (argparse's prefix matching took ``--budget`` for ``--budget-s``)."""
    from cluster.node.cli import build_parser as rt_run
    from scenarios.command import build_parser as rt_cluster

    found = [p.prog for build in (rt_cluster, rt_run) for p in _parsers(build()) if p.allow_abbrev]
    assert not found, "\n".join(found)
