"""Checkers: the scenario expectations as functions over a recorded history.

A checker is any ``Callable[[History], Verdict]``: ``dead(2)``, ``never_dead()``,
``converged()`` ... build one; ``Cluster.check(*checkers)`` (``play.chaos``) runs them
over what the cluster did and saw; ``expectation(e)`` turns a scenario file's expectation into
the same thing. A user adds one by writing a function of a ``History``.

Rules:
1. One judgement: every built-in checker builds the scenario file's ``Expectation`` record and
   hands it to ``analysis.judge``, the function the YAML runner calls; nothing is judged twice
   in two ways.
2. ``after`` names an action of the history (``kill1``, ``heal3``: kind and number, as
   ``Cluster`` names them) or is left out: then ``dead``/``alive`` follow the last action on
   their node that could cause that state (``converged``: the last recovery, any node;
   ``never_dead``: the start).
3. A bound left out is derived (``bounds.derive``) for the action's kind, the cluster's size
   then and the members already down, at 99.9 %. Where the protocol fixes no bound (a node
   seen dead during a partition, a check after the start), ``fallback_bound`` gives one and
   says so in its formula: twice the bound of a death after a kill, or the bound of a join.
4. Pure: a ``History`` is plain data (a ``Trace``, its ``Views``, its classified accusations).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from swim import SwimConfig

from ..format.bounds import CONFIDENCE, BoundError, derive
from ..format.records import STEP_KINDS, Bound, Expectation
from .analysis import describe, judge
from .cuts import slowest_rate
from .suspicions import Accusation, classify
from .trace import Action, Trace, Views, view_name

__all__ = [
    "CheckResult",
    "Checker",
    "History",
    "Verdict",
    "alive",
    "bound_for",
    "converged",
    "dead",
    "expectation",
    "fallback_bound",
    "last_action",
    "leader_change",
    "max_false_suspicions",
    "never_dead",
    "report",
    "touches",
]

DOWN_CAUSES = ("kill", "stop", "pause")
UP_CAUSES = ("resume", "restart", "add", "heal")
ANY_ACTION = tuple(kind for kind in STEP_KINDS if kind != "http")  # every fault a test makes
_FAULTS = ("partition", "loss", "delay", "cut")
Nodes = Iterable[int] | None


@dataclass(frozen=True, slots=True)
class History:
    """What a cluster did (actions) and saw (events), on one clock, with each view rebuilt."""

    trace: Trace
    views: Views
    accusations: tuple[Accusation, ...]
    config: SwimConfig
    real: bool  # real processes: bounds carry the loop-lag allowances

    @classmethod
    def of(cls, trace: Trace, config: SwimConfig, views: Views | None = None) -> History:
        """The history of ``trace``; ``views``: the trace's, when they were rebuilt already."""
        views = Views(trace) if views is None else views
        return cls(trace, views, tuple(classify(trace, views)), config, trace.mode != "sim")

    def action(self, name: str) -> Action:
        """The action called ``name``; ``KeyError`` naming the ones there are."""
        found = self.trace.action(name)
        if found is None:
            names = ", ".join(a.step for a in self.trace.actions) or "none"
            raise KeyError(f"no action {name!r} in this history (actions: {names})")
        return found


@dataclass(frozen=True, slots=True)
class Verdict:
    """One checker's answer: what it asked, whether it held, what was measured (seconds, or a
    count of events), the bound (seconds) and a detail naming who missed it."""

    name: str
    ok: bool
    measured: float | None = None
    bound: float | None = None
    detail: str = ""
    expectation: Expectation | None = None  # a built-in checker's, as a scenario file has it

    def line(self) -> str:
        word = "pass" if self.ok else "FAIL"
        got = "" if self.measured is None else f" (measured {self.measured:g})"
        return f"{word}: {self.name}{got}" + (f": {self.detail}" if self.detail else "")


Checker = Callable[[History], Verdict]


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The verdicts of ``Cluster.check``: ``ok``, the failed ones' lines, a text report."""

    ok: bool
    verdicts: tuple[Verdict, ...]
    report: str

    @property
    def failures(self) -> list[str]:
        return [v.line() for v in self.verdicts if not v.ok]


def report(h: History, verdicts: Iterable[Verdict], seed: int) -> str:
    """The verdicts, the actions and every observer's changes, one line each, in time order
    (seconds after the start)."""
    t0 = h.trace.t0
    lines = [
        f"rtsim cluster: mode {h.trace.mode}, seed {seed}, nodes "
        f"{_ids(h.trace.initial)}, {h.trace.end - t0:.2f} s after the start",
        *(f"  {v.line()}" for v in verdicts),
        "actions:",
        *(f"  +{a.t - t0:7.2f} s  {a.step}: {_act(a)}" for a in h.trace.actions),
        "timeline, per observer:",
    ]
    rows = [row for o, s in h.views.pairs() if o != s for row in _changes(h.views, o, s)]
    for t, o, s, st, cause in sorted(rows, key=lambda row: (row[0], row[1], row[2])):
        lines.append(f"  +{t - t0:7.2f} s  node {o} sees {s} {st} ({cause})")
    return "\n".join(lines)


def _changes(views: Views, o: int, s: int) -> list[tuple[float, int, int, str, str]]:
    """What ``o`` held of ``s``, each change in the API's words (``backend.view_name``):
    a missed probe alone (alive -> probe_failed) is no change; a restart's reset is
    ``forgotten``."""
    out, last = [], "alive" if o == s else None
    for (t, state), cause in zip(views.transitions(o, s), views.causes(o, s), strict=True):
        name = view_name(state) or "forgotten"
        if name != last:
            out.append((t, o, s, name, cause))
        last = name
    return out


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(map(str, ids)) or "nobody"


def _act(a: Action) -> str:
    if a.groups:
        return " | ".join(",".join(map(str, g)) for g in a.groups)
    value = f" {a.value:g}" if a.kind in ("loss", "delay") else ""
    return _ids(a.nodes) + value


def _size_at(trace: Trace, t: float) -> tuple[int, set[int]]:
    """Members at ``t`` (every node started before it) and those of them up just before."""
    members = set(trace.initial)
    for a in trace.actions:
        if a.kind == "add" and a.t <= t:
            members.update(a.nodes)
    return len(members), set(trace.up_nodes(t - 1e-9))


def _after_kind(trace: Trace, a: Action) -> str:
    if a.kind != "heal":
        return a.kind
    faults = [b.kind for b in trace.actions if b.t <= a.t and b.kind in _FAULTS and b is not a]
    return "heal-" + ("partition" if faults[-1:] in (["partition"], ["cut"]) else "loss")


def fallback_bound(kind: str, n: int, config: SwimConfig, *, real: bool) -> Bound:
    """Rule 3: the bound used where none is derived (seconds, marked as such)."""
    if kind in ("dead", "leader_change"):
        b = derive("dead", "kill", n, config, real=real)
        return Bound(
            round(2 * b.seconds, 2),
            b.confidence,
            (("twice a death after a kill", round(2 * b.seconds, 3)),),
            f"no bound derived here: 2 x ({b.formula})",
        )
    b = derive("converged", "add", n, config, real=real)
    return replace(b, formula=f"no bound derived here: a join's, {b.formula}")


def bound_for(
    kind: str,
    action: Action | None,
    trace: Trace,
    config: SwimConfig,
    *,
    real: bool,
    confidence: float = CONFIDENCE,
) -> Bound:
    """The bound (seconds after ``action``) of a ``kind`` expectation: derived for the action
    (at ``confidence``), else ``fallback_bound``; divided by the slowest clock rate in force
    from the action to the next heal (a node's timers run at its clock's rate)."""
    t = action.t if action is not None else trace.t0
    n, up = _size_at(trace, t)
    if action is None:
        return fallback_bound(kind, n, config, real=real)
    subject = action.nodes[0] if action.nodes else None
    down = len([i for i in range(n) if i not in up and i != subject])
    try:
        b = derive(
            kind, _after_kind(trace, action), n, config, real=real, confidence=confidence, down=down
        )
    except BoundError:
        b = fallback_bound(kind, n, config, real=real)
    return _slowed(b, slowest_rate(trace, t))


def _slowed(b: Bound, rate: float) -> Bound:
    """``b`` for timers that run at ``rate`` (at most 1) times true speed."""
    if rate >= 1.0:
        return b
    return replace(
        b,
        seconds=round(b.seconds / rate, 2),
        terms=(*b.terms, ("clock rate", round(b.seconds / rate - b.seconds, 3))),
        formula=f"({b.formula}) / clock rate {rate:g}",
    )


def last_action(trace: Trace, kinds: Iterable[str], node: int | None = None) -> Action | None:
    """The latest action of one of ``kinds`` (on ``node``, when given; a heal touches all)."""
    want = set(kinds)
    for a in reversed(trace.actions):
        if a.kind in want and (node is None or touches(a, node)):
            return a
    return None


def touches(a: Action, node: int) -> bool:
    """Whether action ``a`` acts on ``node``: named by it, in a partition's group, or a heal."""
    return node in a.nodes or any(node in g for g in a.groups) or a.kind == "heal"


def _judged(h: History, e: Expectation) -> Verdict:
    res = judge(h.trace, h.views, e, list(h.accusations))
    measured = res.get("measured")
    return Verdict(
        describe(e),
        res["status"] != "fail",
        None if measured is None else float(measured),
        e.within or None,
        str(res.get("detail", "")),
        e,
    )


def _timed(
    kind: str,
    h: History,
    after: str | None,
    within: float | None,
    causes: tuple[str, ...],
    node: int | None,
) -> tuple[str, float, Bound | None]:
    a = h.action(after) if after is not None else last_action(h.trace, causes, node)
    if within is not None:
        return (a.step if a else "start"), float(within), None
    b = bound_for(kind, a, h.trace, h.config, real=h.real)
    return (a.step if a else "start"), b.seconds, b


def _seen_by(by: Nodes) -> tuple[int, ...] | str:
    return "all" if by is None else tuple(sorted(set(by)))


def dead(
    node: int, *, by: Nodes = None, after: str | None = None, within: float | None = None
) -> Checker:
    """Every observer (``by``; default every node up from the action to the bound) holds
    ``node`` dead or left within ``within`` seconds (default derived, rule 3)."""

    def check(h: History) -> Verdict:
        step, secs, b = _timed("dead", h, after, within, DOWN_CAUSES, node)
        e = Expectation(0, "dead", node, seen_by=_seen_by(by), within=secs, after=step, derived=b)
        return _judged(h, e)

    return check


def alive(
    node: int, *, by: Nodes = None, after: str | None = None, within: float | None = None
) -> Checker:
    """Every observer (``by``) holds ``node`` alive within ``within`` seconds of the action."""

    def check(h: History) -> Verdict:
        step, secs, b = _timed("alive", h, after, within, UP_CAUSES, node)
        e = Expectation(0, "alive", node, seen_by=_seen_by(by), within=secs, after=step, derived=b)
        return _judged(h, e)

    return check


def converged(*, after: str | None = None, within: float | None = None) -> Checker:
    """Every up node holds every up node alive within ``within`` seconds of the action
    (default: the last recovery, else the start)."""

    def check(h: History) -> Verdict:
        step, secs, b = _timed("converged", h, after, within, UP_CAUSES, None)
        return _judged(h, Expectation(0, "converged", within=secs, after=step, derived=b))

    return check


def leader_change(after: str, *, within: float | None = None) -> Checker:
    """Every up node agrees on one leader other than the one before ``after``."""

    def check(h: History) -> Verdict:
        step, secs, b = _timed("leader_change", h, after, within, DOWN_CAUSES, None)
        return _judged(h, Expectation(0, "leader_change", within=secs, after=step, derived=b))

    return check


def never_dead(nodes: Nodes = None, *, by: Nodes = None, after: str | None = None) -> Checker:
    """No observer (``by``) falsely holds any of ``nodes`` (default every node) dead or left:
    deaths the faults explain do not count (``suspicions``)."""
    subjects = "all" if nodes is None else tuple(sorted(set(nodes)))

    def check(h: History) -> Verdict:
        e = Expectation(
            0, "never_dead", subjects=subjects, seen_by=_seen_by(by), after=after or "start"
        )
        return _judged(h, e)

    return check


def max_false_suspicions(
    limit: int, nodes: Nodes = None, *, by: Nodes = None, after: str | None = None
) -> Checker:
    """At most ``limit`` false suspicions of ``nodes`` by ``by`` from ``after`` to the end."""
    subjects = "all" if nodes is None else tuple(sorted(set(nodes)))

    def check(h: History) -> Verdict:
        e = Expectation(
            0,
            "max_false_suspicions",
            subjects=subjects,
            seen_by=_seen_by(by),
            after=after or "start",
            limit=limit,
        )
        return _judged(h, e)

    return check


def expectation(e: Expectation) -> Checker:
    """A scenario file's expectation (bound already set) as a checker."""
    return lambda h: _judged(h, e)
