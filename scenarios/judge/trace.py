"""What a scenario run leaves behind, and each observer's view of the members rebuilt from it.

Rules:
1. A ``Trace`` is plain data: the membership events (event-log shape), the actions the runner
   carried out (with the node ids they resolved to) and the HTTP answers, all on one clock
   (``time.monotonic()`` of the host for real processes, virtual time for the simulation).
   Serf agents beside the nodes (``agents``) are members like the nodes: their views are in
   the events too (``play.agents`` rule 4), as observers numbered after the nodes.
2. ``Views`` replays the events into ``state(observer, subject, t)``; a restarted node's view
   starts empty at its restart, a killed node's view is not consulted after its death.
3. Pure: nothing here touches processes, sockets or clocks, so the analysis is testable with
   hand-written events.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DOWN_STATES",
    "UP_STATES",
    "VIEW",
    "Action",
    "HttpResult",
    "Trace",
    "Views",
    "events_digest",
    "view_name",
]

UP_STATES = frozenset({"alive", "probe_failed", "suspected"})
DOWN_STATES = frozenset({"dead", "left"})
INF = float("inf")
# A member state in the API's words, as views and chaos tests say it.
VIEW = {
    "alive": "alive",
    "probe_failed": "alive",
    "suspected": "suspect",
    "suspect": "suspect",
    "dead": "dead",
    "left": "left",
}


def view_name(state: str | None) -> str | None:
    """A machine's member state in the API's words (``backend`` rule 2); None stays None."""
    return None if state is None else VIEW.get(state, state)


@dataclass(frozen=True, slots=True)
class Action:
    """One thing the runner did, at ``t`` on the trace clock, to ``nodes`` (resolved ids)."""

    t: float
    kind: str
    step: str
    nodes: tuple[int, ...] = ()
    groups: tuple[tuple[int, ...], ...] = ()
    value: float = 0.0  # loss percent, delay ms, clock offset s, disk latency ms
    # a cut's groups are (from, to)
    note: str = ""
    rate: float = 1.0  # clock: its rate
    pool: str = ""  # disk: the device
    errors: float = 0.0  # disk: percent of reads and writes failing
    full: bool = False  # disk: refuses growth


@dataclass(frozen=True, slots=True)
class HttpResult:
    step: str
    node: int
    method: str
    path: str
    t: float  # when the request was sent
    elapsed: float  # seconds until the status line (or the failure)
    status: int | None
    error: str = ""


@dataclass(slots=True)
class Trace:
    mode: str  # "real" or "sim"
    t0: float  # the start: the cluster has converged; step times count from here
    end: float
    initial: tuple[int, ...]
    events: list[dict[str, Any]]
    actions: list[Action] = field(default_factory=list)
    http: list[HttpResult] = field(default_factory=list)
    launched: float = 0.0  # when the first node was started
    probe_interval: float = 1.0
    collection: dict[str, Any] | None = None  # real runs: how the events were read (collect)
    storage: dict[str, Any] | None = None  # runs with an array: its check and its last stats
    forwards: list[dict[str, Any]] | None = None  # whole simulated nodes: every call to a peer
    boots: dict[int, list[int]] | None = None  # sim: each node's boots in the order made
    agents: dict[int, str] = field(default_factory=dict)  # Serf agents: member number -> name
    _up: tuple[Any, dict[int, list[tuple[float, float]]]] | None = field(
        default=None, repr=False, compare=False
    )  # ``up_intervals``' last answer and what it was made of

    def rel(self, t: float | None) -> float | None:
        return None if t is None else round(t - self.t0, 4)

    def action(self, step: str) -> Action | None:
        for a in self.actions:
            if a.step == step:
                return a
        return None

    def all_nodes(self) -> list[int]:
        ids = set(self.initial)
        for a in self.actions:
            if a.kind == "add":
                ids.update(a.nodes)
        return sorted(ids)

    # ---- who was up, who was cut off -----------------------------------------------------

    def up_intervals(self) -> dict[int, list[tuple[float, float]]]:
        """Per node, the intervals its process ran unpaused (clock of the trace); made once
        for the same initial nodes and actions (a report asks it for every node), to read
        only."""
        made_of = (self.initial, id(self.actions), len(self.actions))
        if self._up is None or self._up[0] != made_of:
            self._up = (made_of, self._up_intervals())
        return self._up[1]

    def _up_intervals(self) -> dict[int, list[tuple[float, float]]]:
        start: dict[int, float | None] = {i: -INF for i in self.initial}
        out: dict[int, list[tuple[float, float]]] = {i: [] for i in self.initial}
        for a in sorted(self.actions, key=lambda a: a.t):
            for i in a.nodes:
                out.setdefault(i, [])
                start.setdefault(i, None)
                if a.kind in ("kill", "stop", "pause", "restart"):
                    began = start[i]
                    if began is not None:
                        out[i].append((began, a.t))
                    start[i] = a.t if a.kind == "restart" else None
                elif a.kind in ("resume", "add") and start[i] is None:
                    start[i] = a.t
        for i, began in start.items():
            if began is not None:
                out[i].append((began, INF))
        return out

    def partitions(self) -> list[tuple[float, float, dict[int, int]]]:
        """(from, to, node -> group) for every partition, ended by a heal or a new partition."""
        out: list[tuple[float, float, dict[int, int]]] = []
        current: tuple[float, dict[int, int]] | None = None
        for a in sorted(self.actions, key=lambda a: a.t):
            if a.kind in ("partition", "heal") and current is not None:
                out.append((current[0], a.t, current[1]))
                current = None
            if a.kind == "partition":
                current = (a.t, {i: g for g, grp in enumerate(a.groups) for i in grp})
        if current is not None:
            out.append((current[0], INF, current[1]))
        return out

    def is_up(self, node: int, t: float) -> bool:
        return any(a <= t < b for a, b in self.up_intervals().get(node, []))

    def up_nodes(self, t: float) -> list[int]:
        ups = self.up_intervals()
        return [i for i, ivs in sorted(ups.items()) if any(a <= t < b for a, b in ivs)]

    def up_throughout(self, a: float, b: float) -> list[int]:
        ups = self.up_intervals()
        return [i for i, ivs in sorted(ups.items()) if any(x <= a and b <= y for x, y in ivs)]


def events_digest(events: list[dict[str, Any]]) -> str:
    """The SHA-256 of an event log (every event, keys sorted): one replay of a simulated run is
    another exactly when their digests are equal."""
    text = json.dumps(events, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class Views:
    """Every observer's table over time, rebuilt from the events of a trace."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self._t: dict[tuple[int, int], list[float]] = {}
        self._s: dict[tuple[int, int], list[str | None]] = {}
        self._c: dict[tuple[int, int], list[str]] = {}
        self.subjects_of: dict[int, set[int]] = {}
        resets = sorted(
            (a.t, i) for a in trace.actions if a.kind in ("restart", "add") for i in a.nodes
        )
        # Events after the end (the teardown's leaves) are not part of the run.
        events = sorted(
            (e for e in trace.events if float(e["mono"]) <= trace.end),
            key=lambda e: float(e["mono"]),
        )
        ri = 0
        for ev in events:
            t = float(ev["mono"])
            while ri < len(resets) and resets[ri][0] <= t:
                self._reset(*resets[ri])
                ri += 1
            self._set(
                int(ev["observer"]), int(ev["subject"]), t, str(ev["new"]), str(ev.get("cause", ""))
            )
        for t, i in resets[ri:]:
            self._reset(t, i)

    def _set(self, o: int, s: int, t: float, state: str | None, cause: str = "reset") -> None:
        key = (o, s)
        self._t.setdefault(key, []).append(t)
        self._s.setdefault(key, []).append(state)
        self._c.setdefault(key, []).append(cause)
        self.subjects_of.setdefault(o, set()).add(s)

    def _reset(self, t: float, o: int) -> None:
        for s in self.subjects_of.get(o, ()):
            self._set(o, s, t, None)

    def state(self, o: int, s: int, t: float) -> str | None:
        """What ``o`` believed of ``s`` at ``t`` (None: unknown); a node is alive to itself."""
        ts = self._t.get((o, s))
        if ts:
            k = bisect.bisect_right(ts, t) - 1
            if k >= 0:
                st = self._s[(o, s)][k]
                if st is not None or o != s:
                    return st
        return "alive" if o == s else None

    def transitions(self, o: int, s: int) -> list[tuple[float, str | None]]:
        return list(zip(self._t.get((o, s), []), self._s.get((o, s), []), strict=True))

    def causes(self, o: int, s: int) -> list[str]:
        return list(self._c.get((o, s), []))

    def pairs(self) -> list[tuple[int, int]]:
        return sorted(self._t)

    def first(
        self, o: int, s: int, states: Iterable[str], t_from: float, t_to: float = INF
    ) -> float | None:
        """First moment in [t_from, t_to] at which ``o`` holds ``s`` in one of ``states``."""
        want = set(states)
        if self.state(o, s, t_from) in want:
            return t_from
        for t, st in self.transitions(o, s):
            if t_from < t <= t_to and st in want:
                return t
        return None

    def leader(self, o: int, t: float, among: Sequence[int] | None = None) -> int | None:
        """Lowest id ``o`` held up (alive, probe_failed, suspected) at ``t``, itself included."""
        subjects = set(self.subjects_of.get(o, ())) | {o}
        if among is not None:
            subjects |= set(among)
        ups = [s for s in subjects if self.state(o, s, t) in UP_STATES]
        return min(ups) if ups else None

    def event_times(self, t_from: float, t_to: float) -> list[float]:
        times = sorted({t for ts in self._t.values() for t in ts if t_from < t <= t_to})
        return times
