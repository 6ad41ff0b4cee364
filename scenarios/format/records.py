"""What a scenario file becomes: frozen records, checked before anything runs (see ``spec``).

Rules:
1. Plain data: building these records never fails; the checks live in ``spec``, ``steps`` and
   ``values``, which raise the one ``ScenarioError``.
2. Times are seconds after the start (the moment the cluster has converged); node ids are those
   of the cluster the steps build (``nodes`` at the start, then one per ``add``).
3. A file with ``serf: M`` runs M real Serf agents beside its nodes: members are numbered
   nodes first, then the agents (``nodes`` .. ``nodes + M - 1``, named ``serf-<number>``),
   then the nodes the steps add.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EXPECT_KINDS",
    "MAX_AGENTS",
    "NODE_STEPS",
    "PROPERTY_NAMES",
    "STEP_KINDS",
    "TIMED_KINDS",
    "TRUSTED",
    "Bound",
    "Expectation",
    "HttpExpect",
    "Scenario",
    "ScenarioError",
    "Step",
    "StorageSpec",
    "Target",
]

STEP_KINDS = (
    "kill",
    "stop",
    "pause",
    "resume",
    "restart",
    "add",
    "partition",
    "heal",
    "loss",
    "delay",
    "http",
    "cut",
    "clock",
    "disk",
)
EXPECT_KINDS = (
    "dead",
    "never_dead",
    "alive",
    "leader_change",
    "converged",
    "max_false_suspicions",
    "no_lost_writes",
)
# The properties ``rt_cluster explore`` checks (``explore.properties``), by name: what a scenario
# file's ``property:`` key may say, besides a module:function this process was given
# (``TRUSTED``: a file alone never makes rtsim import a module).
PROPERTY_NAMES = (
    "completeness",
    "convergence",
    "quiet_accuracy",
    "no_exception",
    "incarnation",
    "cut_accuracy",
    "no_lost_writes",
    "array_recovers",
    "forward_bounded",
)
TRUSTED: set[str] = set()
TIMED_KINDS = ("dead", "alive", "leader_change", "converged")  # expectations with a bound
NODE_STEPS = ("kill", "stop", "pause", "resume", "restart")
MAX_AGENTS = 64  # Serf agents a mixed cluster runs beside its nodes (``serf:``), at most
Target = int | str  # a node id, "leader", or "all" where allowed


class ScenarioError(Exception):
    """A scenario file that cannot be run; the message names the file, the step, the problem."""


@dataclass(frozen=True, slots=True)
class HttpExpect:
    """The answer an ``http`` step expects: its status, and when it arrives."""

    status: int
    within: tuple[float, float]  # the answer arrives between these seconds after the request


@dataclass(frozen=True, slots=True)
class Step:
    """One timed action. ``target`` is a node id or ``leader`` for node steps."""

    index: int
    at: float
    kind: str
    name: str
    target: Target | None = None
    duration: float | None = None  # pause: resume after this many seconds
    count: int = 1  # add: how many nodes
    induct: bool = False
    groups: tuple[tuple[int, ...], ...] = ()  # partition; cut: (from, to)
    rest: int | None = None  # partition: the index of the group written ``rest``
    value: float = 0.0  # loss percent, delay ms, clock offset s, disk latency ms
    rate: float = 1.0  # clock
    pool: str = ""  # disk: the device
    errors: float = 0.0  # disk: percent of reads and writes failing
    full: bool = False  # disk: refuses growth
    method: str = "GET"  # http
    path: str = ""
    expect: HttpExpect | None = None

    def label(self) -> str:
        return f"step {self.index + 1} ({self.name})"

    def partition_groups(self, ids: list[int]) -> tuple[tuple[int, ...], ...]:
        """The groups with ``rest`` filled in from ``ids`` (the nodes that exist now)."""
        listed = {i for g in self.groups for i in g}
        rest = tuple(i for i in ids if i not in listed)
        return tuple(rest if k == self.rest else g for k, g in enumerate(self.groups))


@dataclass(frozen=True, slots=True)
class Bound:
    """A bound derived from the protocol's timing (``bounds``): seconds, and how."""

    seconds: float
    confidence: float  # the share of runs it is meant to hold in, e.g. 0.999
    terms: tuple[tuple[str, float], ...]  # (name, seconds) of each part of the sum
    formula: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "confidence": self.confidence,
            "terms": dict(self.terms),
            "formula": self.formula,
        }


@dataclass(frozen=True, slots=True)
class Expectation:
    index: int
    kind: str
    subject: Target | None = None  # dead/alive: a node id or "leader" (as of ``after``)
    subjects: tuple[int, ...] | str = "all"  # never_dead, max_false_suspicions
    seen_by: tuple[int, ...] | str = "all"
    within: float = 0.0  # seconds: from the file, or derived (then ``derived`` says how)
    after: str = "start"  # a step name, or "start"
    limit: int = 0  # max_false_suspicions: how many are accepted
    auto: bool = False  # ``within`` omitted or ``auto``: derived by ``bounds``
    derived: Bound | None = None

    def label(self) -> str:
        return f"expectation {self.index + 1} ({self.kind})"


@dataclass(frozen=True, slots=True)
class StorageSpec:
    """A scenario's array (``storage``): its owner, member nodes and the writes it takes."""

    array: int  # the node that owns the array
    members: tuple[int, ...]  # data members, one a node
    parity: tuple[int, ...]
    capacity: str  # of each member device, as written (4M)
    every: float  # seconds between two write requests
    records: int  # records one request writes
    size: int  # bytes of a record
    replace_after: float | None = None  # seconds a member is away before a spare replaces it


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    source: str
    nodes: int
    seed: int
    settings: Mapping[str, Any]  # node configuration sections (swim, workload, ...)
    steps: tuple[Step, ...]
    expectations: tuple[Expectation, ...]
    duration: float
    description: str = ""
    sim_nodes: int | None = None
    sim_overrides: Mapping[str, Any] = field(default_factory=dict)
    pass_rate: float = 1.0  # the share of runs that must pass (``--runs``)
    explore_property: str = (
        ""  # the ``property:`` key: an explore property the run must hold (``properties``)
    )
    storage: StorageSpec | None = None  # an array written through the run (``storage``)
    serf: int = 0  # real Serf agents beside the nodes, members ``nodes`` and up (rule 3)

    @property
    def swim(self) -> Mapping[str, Any]:
        value = self.settings.get("swim") or {}
        return value if isinstance(value, Mapping) else {}

    @property
    def workload(self) -> bool:
        w = self.settings.get("workload")
        return bool(w.get("enabled", True)) if isinstance(w, Mapping) else True

    def step(self, name: str) -> Step:
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(name)

    def node_count(self) -> int:
        """Every member the steps build: the nodes, the Serf agents and the nodes added."""
        return self.nodes + self.serf + sum(s.count for s in self.steps if s.kind == "add")

    @property
    def real_only(self) -> bool:
        """Whether the file plays on real processes only: it has Serf agents and no ``sim:``
        section setting ``serf: 0`` (``spec`` rule 7), or a ``disk`` step without a
        ``storage:`` section (the membership simulator runs no devices; whole simulated
        nodes, which a storage section brings, do)."""
        agents = bool(self.serf) and self.sim_overrides.get("serf", self.serf) != 0
        disks = self.storage is None and any(s.kind == "disk" for s in self.steps)
        return agents or disks

    @property
    def agents(self) -> tuple[int, ...]:
        """The member numbers of the Serf agents (rule 3)."""
        return tuple(range(self.nodes, self.nodes + self.serf))
