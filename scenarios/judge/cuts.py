"""One-way cuts and node clocks as the judges see them: who can still reach whom, and how slow
a node's timers run.

Rules:
1. A cut action names its two ends as its two groups (``from``, ``to``); without groups, its
   nodes are ``from`` and nothing is cut. Cuts add up until a heal removes them all.
2. A pair of nodes keeps a *route* under the cuts in force when each can send to the other
   directly, or when an indirect probe cannot miss: the ``indirect_checks`` helpers a prober
   draws at random from the others include one that sends to and hears from both ends, whatever
   the draw (at least one such helper, and fewer than ``indirect_checks`` others).
3. ``cut_accuracy``: while the run's only faults are cuts (and heals) and every pair of nodes
   keeps a route, no node holds another suspect or dead anew. The judgement ends at the first
   other action, or at the first cut that leaves a pair without a route: past it, a suspicion
   is the protocol's right answer, and what follows is the other properties' to judge.
4. A clock action carries its rate as its ``rate`` (its offset is its ``value``). A node's timers
   run at its rate, so a bound counted from ``t`` is divided by the slowest rate in force from
   ``t`` until the next heal (``slowest_rate``); faster clocks keep the bound.
5. Pure: functions of a ``Trace`` and its ``Views``.
"""

from __future__ import annotations

from collections.abc import Iterable

from .trace import Action, Trace

__all__ = ["cut_accuracy", "cut_edges", "has_route", "slowest_rate"]

STATES_DOWN = ("suspected", "suspect", "dead", "left")


def cut_edges(a: Action) -> set[tuple[int, int]]:
    """Rule 1: the (sender, receiver) pairs a cut action drops."""
    if a.kind != "cut" or len(a.groups) != 2:
        return set()
    src, dst = a.groups
    return {(i, j) for i in src for j in dst if i != j}


def has_route(p: int, s: int, nodes: Iterable[int], cut: set[tuple[int, int]], k: int) -> bool:
    """Rule 2: can ``p`` and ``s`` reach each other, whatever helpers a probe draws?"""
    if (p, s) not in cut and (s, p) not in cut:
        return True
    good = bad = 0
    for h in nodes:
        if h in (p, s):
            continue
        if {(p, h), (h, p), (h, s), (s, h)} & cut:
            bad += 1
        else:
            good += 1
    return good >= 1 and bad < max(1, k)


def _all_routes(nodes: list[int], cut: set[tuple[int, int]], k: int) -> bool:
    return all(has_route(p, s, nodes, cut, k) for p in nodes for s in nodes if p < s)


def cut_accuracy(trace: Trace, k: int) -> str | None:
    """Rule 3, for a protocol whose probes draw ``k`` helpers (``indirect_checks``)."""
    nodes = sorted(trace.initial)
    cut: set[tuple[int, int]] = set()
    start, end = None, trace.end
    for a in sorted(trace.actions, key=lambda a: a.t):
        if a.kind == "heal":
            cut = set()
            continue
        if a.kind != "cut":
            end = a.t
            break
        cut |= cut_edges(a)
        start = a.t if start is None else start
        if not _all_routes(nodes, cut, k):
            end = a.t
            break
    if start is None:
        return None
    for e in trace.events:
        t = float(e["mono"])
        if start < t < end and e.get("new") in STATES_DOWN and e.get("old") not in STATES_DOWN:
            return (
                f"node {e['observer']} holds node {e['subject']} {e['new']} at "
                f"+{t - trace.t0:.3f} s ({e.get('cause', '')}), while only one-way cuts "
                "were in force and every pair of nodes kept a route"
            )
    return None


def slowest_rate(trace: Trace, t: float) -> float:
    """Rule 4: the slowest clock rate (at most 1) in force from ``t`` until the next heal."""
    rates: dict[int, float] = {}
    for a in sorted(trace.actions, key=lambda a: a.t):
        if a.kind == "heal":
            if a.t > t:
                break
            rates.clear()
        elif a.kind == "clock" and a.nodes:
            rate = a.rate if a.rate > 0 else 1.0
            rates[a.nodes[0]] = min(rates.get(a.nodes[0], 1.0), rate)
    return min([1.0, *rates.values()])
