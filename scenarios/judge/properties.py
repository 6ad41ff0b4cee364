"""The properties ``rt_cluster explore`` checks on every run, by name, over one finished run.

A property is a function of a ``Run`` returning None when it holds, else one line saying who
saw what when. The five built in (all on by default):

- ``completeness``: a node killed (and not started again) is not alive or suspect (dead, left,
  or never known: a node restarted after the kill may not know it) at any node up from the
  later of its kill and the last heal to the end, at the bound derived for the death after a
  kill (``checks.bound_for``) counted from that later moment, and at the end. After loss,
  delay, a partition or a pause, bounds are derived for the probe interval stretched by
  Lifeguard's local health (``awareness_max`` times); every bound is at 1 - 10^-6, and divided
  by the slowest clock rate in force when it is counted from (``cuts`` rule 4).
- ``convergence``: after the last action, within the bound derived for it (for a heal or a
  resume: the bound of a recovery; plus ``rejoin_interval`` when a node was cut off longer than
  ``gossip_to_the_dead_time``, as the others forgot it), every node up from that action to the
  end holds every such node alive.
- ``quiet_accuracy``: once the convergence bound has passed, no node up holds a node up
  suspect or dead anew until the end (the quiet window: no fault is in force).
- ``no_exception``: no machine raised (the simulator stops on the first exception: the run's
  ``error``).
- ``cut_accuracy``: while the only faults are one-way cuts and every pair of nodes keeps a
  route (directly both ways, or through any helper an indirect probe may draw), no node holds
  another suspect or dead (``cuts`` rule 3).
- ``incarnation``: at every observer, the incarnation it records for a subject never goes
  down, except for a later boot of the subject (simulated events name the boot, and the trace
  lists each node's boots in the order made: a return to the same or an older boot is a
  violation, whatever arrived late), or across a restart of the observer; without boots (real
  runs), across a restart of either since the higher one was first recorded.

With whole simulated nodes and an array (``explore --storage``, ``STORAGE_PROPERTIES`` by
default), also ``no_lost_writes``, ``array_recovers`` and ``forward_bounded``
(``storageprops``; each holds where there is nothing to judge).

A user's property is a checker of the Python API (``scenarios.judge.checks``: a function of a
``History`` returning a ``Verdict``), named ``module:function`` on the command line.

Rules:
1. Pure: a ``Run`` is a scenario, its trace and its error; nothing here runs anything.
2. The same names are a scenario file's ``property:`` key: the runner checks the named
   property on a replay, so a failure file fails the same property wherever it is played.
3. A ``module:function`` property is code: a scenario file may name one only when this process
   was given the same name on its command line or by its caller (``records.TRUSTED``, filled
   by ``load_property``); a file alone never makes rtsim import a module.
4. A run is judged from its recorded events once: the views (and a user's ``History``) are
   rebuilt on the first property that asks and shared by the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property

from swim import SwimConfig

from ..format.records import PROPERTY_NAMES, TRUSTED, Scenario
from . import cuts, storageprops
from .checks import Checker, History, bound_for, last_action
from .cuts import slowest_rate
from .trace import Action, Trace, Views

__all__ = [
    "BUILT_IN",
    "STORAGE_PROPERTIES",
    "Property",
    "Run",
    "check",
    "judged",
    "load_property",
]

DOWN_KINDS = ("kill", "stop")
UP_KINDS = ("restart", "add")
DEGRADING = ("loss", "delay", "partition", "pause", "cut")
STATES_DOWN = ("suspected", "suspect", "dead", "left")
# The bounds' confidence: a search plays thousands of runs, so a 99.9 % bound (the scenario
# library's) would be exceeded by chance once a thousand; one in a million is not.
SURE = 0.999999
ALIVE = ("alive", "probe_failed")  # probe_failed: alive to all but the prober's timer
ALIVE_OR_SUSPECT = (*ALIVE, "suspected", "suspect")


@dataclass(frozen=True)
class Run:
    """One finished run: the scenario played, its trace (None when the run raised) and the
    exception's text (``error``). Its settings, views and history are made once, on first
    use, for every property that judges it (rule 4)."""

    scenario: Scenario
    trace: Trace | None
    error: str = ""

    @cached_property
    def config(self) -> SwimConfig:
        return SwimConfig.from_mapping(self.scenario.swim)

    @cached_property
    def views(self) -> Views:
        """Every observer's view over time, rebuilt from the trace's events."""
        assert self.trace is not None
        return Views(self.trace)

    @cached_property
    def history(self) -> History:
        """The history a user's checker judges (``checks.History``)."""
        assert self.trace is not None
        return History.of(self.trace, self.config, self.views)


Property = Callable[[Run], "str | None"]


def _real(trace: Trace) -> bool:
    """Whether the run was on real processes (a replay with ``--runs``): its bounds then add
    the loop-lag allowances, as the scenario library's do."""
    return trace.mode != "sim"


def completeness(run: Run) -> str | None:
    trace = run.trace
    if trace is None:
        return None
    views = run.views
    heal = last_action(trace, ("heal",))
    for kill in (a for a in trace.actions if a.kind == "kill"):
        i = kill.nodes[0]
        if any(a.kind in UP_KINDS and i in a.nodes and a.t > kill.t for a in trace.actions):
            continue  # started again: not a death to judge
        ref = heal if heal is not None and heal.t > kill.t else kill
        config = _as_degraded(run.config, trace, ref.t)
        bound = bound_for("dead", kill, trace, config, real=_real(trace), confidence=SURE).seconds
        bound = round(bound * slowest_rate(trace, kill.t) / slowest_rate(trace, ref.t), 2)
        at = ref.t + bound
        if at > trace.end:
            return f"node {i} ({kill.step}): the run ends before its bound ({bound:g} s)"
        for o in trace.up_throughout(ref.t, trace.end):
            for t in (at, trace.end):
                seen = views.state(o, i, t)
                if seen in ALIVE_OR_SUSPECT:  # dead, left or forgotten: all fine
                    return (
                        f"node {o} holds node {i} ({kill.step}) {seen} at "
                        f"+{t - trace.t0:.3f} s, {t - ref.t:.2f} s after {ref.step} "
                        f"(bound {bound:g} s)"
                    )
    return None


def _outage(trace: Trace) -> float:
    """The longest a node was cut off from the others: a pause until its resume (or restart,
    or kill), a partition or a one-way cut until the heal after it."""
    longest = 0.0
    for a in trace.actions:
        if a.kind not in ("pause", "partition", "cut"):
            continue
        back = ("resume", "restart", "kill") if a.kind == "pause" else ("heal",)
        ends = [
            b.t
            for b in trace.actions
            if b.t >= a.t and b.kind in back and (a.kind != "pause" or b.nodes == a.nodes)
        ]
        longest = max(longest, min(ends, default=trace.end) - a.t)
    return longest


def _as_degraded(config: SwimConfig, trace: Trace, t: float) -> SwimConfig:
    """``config`` for a bound counted from ``t``: after loss, delay, a partition or a pause
    before ``t``, Lifeguard's local health may still stretch every probe interval up to
    ``awareness_max`` times (it comes down one step per good probe), so the bound is derived
    for that longest interval; the derived bounds assume a healthy cluster."""
    if any(a.kind in DEGRADING and a.t <= t for a in trace.actions):
        return replace(config, probe_interval=config.probe_interval * config.awareness_max)
    return config


def _settle(run: Run) -> tuple[Action | None, float]:
    """The last action and the moment the convergence bound after it ends: the bound derived
    for it, plus ``rejoin_interval`` (unless the bound holds one, as after a heal) when a node
    was cut off longer than ``gossip_to_the_dead_time`` (the others forgot it: only the
    re-join finds it again)."""
    trace = run.trace
    assert trace is not None
    a = trace.actions[-1] if trace.actions else None
    config = _as_degraded(run.config, trace, a.t if a else trace.t0)
    b = bound_for("converged", a, trace, config, real=_real(trace), confidence=SURE)
    bound = b.seconds
    rejoin = any("re-join" in term for term, _ in b.terms)
    if not rejoin and _outage(trace) > config.gossip_to_the_dead_time:
        bound += config.rejoin_interval
    return a, (a.t if a else trace.t0) + bound


def convergence(run: Run) -> str | None:
    trace = run.trace
    if trace is None:
        return None
    a, until = _settle(run)
    since = a.step if a else "the start"
    if until > trace.end:
        return f"the run ends before the convergence bound after {since}"
    views = run.views
    up = trace.up_throughout(a.t if a else trace.t0, trace.end)
    for o in up:
        for s in up:
            seen = views.state(o, s, until)
            if seen not in ALIVE:
                return (
                    f"node {o} holds node {s} {seen or 'unknown'} at +{until - trace.t0:.3f} s, "
                    f"{until - (a.t if a else trace.t0):.2f} s after {since} (the bound)"
                )
    return None


def quiet_accuracy(run: Run) -> str | None:
    trace = run.trace
    if trace is None:
        return None
    _, start = _settle(run)
    up = set(trace.up_throughout(start, trace.end))
    for e in trace.events:
        t = float(e["mono"])
        if start < t <= trace.end and e.get("new") in STATES_DOWN:
            o, s = int(e["observer"]), int(e["subject"])
            if o in up and s in up and e.get("old") not in STATES_DOWN:
                return (
                    f"node {o} holds node {s} {e['new']} at +{t - trace.t0:.3f} s, in the quiet "
                    f"window from +{start - trace.t0:.3f} s ({e.get('cause', '')})"
                )
    return None


def no_exception(run: Run) -> str | None:
    return run.error or None


def incarnation(run: Run) -> str | None:
    trace = run.trace
    if trace is None:
        return None
    boots = sorted((a.t, n) for a in trace.actions if a.kind in UP_KINDS for n in a.nodes)
    seen: dict[tuple[int, int], tuple[int, float, int | None]] = {}  # highest, since, boot
    for e in sorted(trace.events, key=lambda e: float(e["mono"])):
        if "incarnation" not in e:
            continue
        o, s, t = int(e["observer"]), int(e["subject"]), float(e["mono"])
        inc, boot = int(e["incarnation"]), e.get("boot")
        before = seen.get((o, s))
        if before is None or inc > before[0]:
            seen[(o, s)] = (inc, t, boot)
        elif inc < before[0]:
            rebooted = {n for bt, n in boots if before[1] <= bt <= t}
            if (
                o in rebooted  # a new observer learns afresh
                or _later_boot(trace, s, boot, before[2])
                or (before[2] is None and s in rebooted)  # no boots named: any restart
            ):
                seen[(o, s)] = (inc, t, boot)  # a new boot since: it may come back lower
                continue
            return (
                f"node {o} records node {s} at incarnation {inc} at +{t - trace.t0:.3f} s, "
                f"after {before[0]} since +{before[1] - trace.t0:.3f} s"
            )
    return None


def _later_boot(trace: Trace, node: int, new: int | None, old: int | None) -> bool:
    """Is ``new`` a boot of ``node`` made after ``old``? Only a simulation knows (its events
    name the boot, its trace the boots in the order made); a boot it did not make (a new boot
    epoch taken to refute) counts as later."""
    made = (trace.boots or {}).get(node)
    if made is None or new is None or old is None or new == old:
        return False
    if new not in made:
        return True
    return old in made and made.index(new) > made.index(old)


def cut_accuracy(run: Run) -> str | None:
    """``cuts`` rule 3 with the run's ``indirect_checks``."""
    if run.trace is None:
        return None
    return cuts.cut_accuracy(run.trace, run.config.indirect_checks)


def _of_trace(judge: Callable[[Trace], str | None]) -> Property:
    """A property of the trace alone (``storageprops``); a run that raised has none."""

    def prop(run: Run) -> str | None:
        return None if run.trace is None else judge(run.trace)

    return prop


BUILT_IN: dict[str, Property] = {
    "completeness": completeness,
    "convergence": convergence,
    "quiet_accuracy": quiet_accuracy,
    "no_exception": no_exception,
    "incarnation": incarnation,
    "cut_accuracy": cut_accuracy,
    "no_lost_writes": _of_trace(storageprops.no_lost_writes),
    "array_recovers": _of_trace(storageprops.array_recovers),
    "forward_bounded": _of_trace(storageprops.forward_bounded),
}
STORAGE_PROPERTIES = ("no_lost_writes", "array_recovers", "forward_bounded", "no_exception")


assert tuple(BUILT_IN) == PROPERTY_NAMES  # the names a scenario file may give


def _from_checker(checker: Checker) -> Property:
    def prop(run: Run) -> str | None:
        if run.trace is None:
            return None
        v = checker(run.history)
        return None if v.ok else v.line()

    return prop


def load_property(spec: str) -> tuple[str, Property]:
    """A built-in property by name, or a user's checker named ``module:function``; ValueError
    says what is wrong."""
    if spec in BUILT_IN:
        return spec, BUILT_IN[spec]
    module, _, name = spec.partition(":")
    if not module or not name:
        known = ", ".join(BUILT_IN)
        raise ValueError(f"property {spec!r}: one of {known}, or module:function (a checker)")
    TRUSTED.add(spec)  # given by the caller (rule 3)
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"property {spec!r}: {exc}") from None
    if not callable(fn):
        raise ValueError(f"property {spec!r}: not a function")
    return spec, _from_checker(fn)


def judged(scenario: Scenario, trace: Trace) -> dict[str, str] | None:
    """The ``property`` entry of a replay's results (rule 2): the file's property judged over
    ``trace``; None when the file names none."""
    name = scenario.explore_property
    if not name:
        return None
    why = load_property(name)[1](Run(scenario, trace))
    return {"name": name, "status": "fail" if why else "pass", "detail": why or ""}


def check(run: Run, names: list[str]) -> tuple[str, str] | None:
    """The first property of ``names`` the run violates, and how; None when all hold."""
    for name in names:
        _, prop = load_property(name)
        why = prop(run)
        if why:
            return name, why
    return None
