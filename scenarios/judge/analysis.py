"""From a trace to figures: detection latencies, false positives, convergence, expectations.

Rules:
1. Pure functions of a ``Trace`` (and the scenario), so both runners share one judgement and
   tests can feed hand-written events.
2. Times in results are seconds after the start (``trace.t0``); latencies are seconds after the
   action that caused them. ``None`` means "did not happen before the end".
3. Every suspicion and death is classified *expected* or *false* by ``suspicions``; only the
   false ones count against ``never_dead`` and ``max_false_suspicions`` and in the summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..format.spec import Expectation, Scenario
from .durability import judge_storage
from .suspicions import ACCUSING, Accusation, classify
from .trace import DOWN_STATES, INF, Trace, Views

__all__ = ["Analysis", "analyse", "describe", "judge"]

DETECTED = ("kill", "stop", "pause")
RECOVERIES = ("resume", "restart", "heal", "add")
COUNTED = ("never_dead", "max_false_suspicions")  # expectations on counts of false accusations


@dataclass(slots=True)
class Analysis:
    detection: list[dict[str, Any]]
    accusations: list[dict[str, Any]]  # every suspicion and death, classified (``suspicions``)
    convergence: list[dict[str, Any]]
    expectations: list[dict[str, Any]]

    def accused(self, state: str, cls: str) -> list[dict[str, Any]]:
        """The accusations putting a member in ``state`` (suspected, dead) of class ``cls``."""
        return [a for a in self.accusations if a["state"] == state and a["class"] == cls]

    @property
    def false_suspicions(self) -> list[dict[str, Any]]:
        return self.accused("suspected", "false")

    @property
    def false_deaths(self) -> list[dict[str, Any]]:
        return self.accused("dead", "false")

    @property
    def verdict(self) -> str:
        return "fail" if any(e["status"] == "fail" for e in self.expectations) else "pass"


def analyse(trace: Trace, scenario: Scenario) -> Analysis:
    views = Views(trace)
    accusations = classify(trace, views)
    return Analysis(
        detection=detection(trace, views),
        accusations=[a.as_dict(trace) for a in accusations],
        convergence=convergence(trace, views),
        expectations=[
            *expectations(trace, views, scenario, accusations),
            *http_expectations(trace, scenario),
        ],
    )


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


# ---- detection ----------------------------------------------------------------------------


def detection(trace: Trace, views: Views) -> list[dict[str, Any]]:
    """For each kill/stop/pause: when each survivor first suspected and declared the node dead."""
    out = []
    for a in trace.actions:
        if a.kind not in DETECTED:
            continue
        for x in a.nodes:
            back = _next_up(trace, x, a.t)
            observers = [o for o in trace.up_throughout(a.t, min(back, trace.end)) if o != x]
            rows = []
            for o in observers:
                sus = views.first(o, x, ACCUSING, a.t, back)
                dead = views.first(o, x, DOWN_STATES, a.t, back)
                rows.append(
                    {
                        "observer": o,
                        "suspect": _r(None if sus is None else sus - a.t),
                        "dead": _r(None if dead is None else dead - a.t),
                    }
                )
            sus_all = [r["suspect"] for r in rows if r["suspect"] is not None]
            dead_all = [r["dead"] for r in rows if r["dead"] is not None]
            out.append(
                {
                    "step": a.step,
                    "kind": a.kind,
                    "subject": x,
                    "at": trace.rel(a.t),
                    "observers": len(rows),
                    "first_suspect": min(sus_all) if sus_all else None,
                    "first_dead": min(dead_all) if dead_all else None,
                    "full_dead": max(dead_all) if rows and len(dead_all) == len(rows) else None,
                    "completeness": round(len(dead_all) / len(rows), 4) if rows else None,
                    "per_observer": rows,
                }
            )
    return out


def _next_up(trace: Trace, node: int, t: float) -> float:
    """When ``node`` next came back (resume, restart) after ``t``, else infinity."""
    for a in sorted(trace.actions, key=lambda a: a.t):
        if a.t > t and node in a.nodes and a.kind in ("resume", "restart"):
            return a.t
    return INF


# ---- convergence --------------------------------------------------------------------------


def converged_at(trace: Trace, views: Views, t_from: float, t_to: float = INF) -> float | None:
    """First moment >= ``t_from`` at which every up node holds every up node alive."""
    action_times = sorted(a.t for a in trace.actions if t_from < a.t <= min(t_to, trace.end))
    times = sorted({t_from, *views.event_times(t_from, min(t_to, trace.end)), *action_times})
    for t in times:
        ups = trace.up_nodes(t)
        if ups and all(views.state(o, s, t) == "alive" for o in ups for s in ups):
            return t
    return None


def convergence(trace: Trace, views: Views) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if (trace.launched and trace.mode == "real") or trace.mode == "sim":
        out.append({"step": "launch", "seconds": _r(trace.t0 - trace.launched)})
    disruptions = sorted(a.t for a in trace.actions if a.kind not in (*RECOVERIES, "http"))
    for a in trace.actions:
        if a.kind not in RECOVERIES:
            continue
        nxt = next((t for t in disruptions if t > a.t), INF)
        t = converged_at(trace, views, a.t, nxt)
        out.append(
            {
                "step": a.step,
                "kind": a.kind,
                "at": trace.rel(a.t),
                "seconds": _r(None if t is None else t - a.t),
            }
        )
    return out


# ---- expectations -------------------------------------------------------------------------


def _unit(kind: str) -> str:
    """What an expectation's ``measured`` counts."""
    if kind == "no_lost_writes":
        return "records lost"
    return "events" if kind in COUNTED else "s"


def describe(e: Expectation) -> str:
    """One line saying what the expectation asks."""
    who = "all" if e.seen_by == "all" else ",".join(map(str, e.seen_by))
    after = f" after {e.after}" if e.after != "start" else ""
    bound = f" within {e.within:g} s{after}"
    subj = "any node" if e.subjects == "all" else "node(s) " + ",".join(map(str, e.subjects))
    if e.kind == "dead":
        return f"node {e.subject} seen dead by {who}{bound}"
    if e.kind == "alive":
        return f"node {e.subject} seen alive by {who}{bound}"
    if e.kind == "never_dead":
        return f"{subj} never falsely seen dead by {who}{after}"
    if e.kind == "max_false_suspicions":
        return f"at most {e.limit} false suspicions of {subj} by {who}{after}"
    if e.kind == "leader_change":
        return f"a new leader agreed by every live node{bound}"
    if e.kind == "no_lost_writes":
        return "every write the array acknowledged reads back byte for byte after the run"
    return f"every live node sees every live node alive{bound}"


def _subject(trace: Trace, views: Views, e: Expectation, t: float) -> int | None:
    if isinstance(e.subject, int):
        return e.subject
    a = trace.action(e.after)
    if a is not None and a.nodes and a.kind in (*DETECTED, "restart"):
        return a.nodes[0]
    return _leader_before(trace, views, t)


def _leader_before(trace: Trace, views: Views, t: float) -> int | None:
    ups = trace.up_nodes(t - 1e-6)
    return views.leader(ups[0], t - 1e-6) if ups else None


def _observers(
    trace: Trace, e: Expectation, t: float, deadline: float, exclude: int | None
) -> list[int]:
    if not isinstance(e.seen_by, str):
        return [o for o in e.seen_by if o != exclude]
    return [o for o in trace.up_throughout(t, min(deadline, trace.end)) if o != exclude]


def expectations(
    trace: Trace, views: Views, scenario: Scenario, accusations: list[Accusation]
) -> list[dict[str, Any]]:
    out = []
    for e in scenario.expectations:
        out.append(
            {
                "index": e.index,
                "kind": e.kind,
                "description": describe(e),
                "bound": e.within or None,
                "bound_source": "derived" if e.derived is not None else "file",
                "bound_detail": e.derived.as_dict() if e.derived is not None else None,
                "unit": _unit(e.kind),
                **judge(trace, views, e, accusations),
            }
        )
    return out


def judge(
    trace: Trace, views: Views, e: Expectation, accusations: list[Accusation]
) -> dict[str, Any]:
    """Status, measured value and detail of one expectation (plus the subject for dead/alive):
    the one judgement of the YAML runner and of ``checks`` (Python)."""
    a = trace.action(e.after) if e.after != "start" else None
    if e.after != "start" and a is None:
        return {"status": "fail", "measured": None, "detail": f"step {e.after} did not run"}
    t = a.t if a is not None else trace.t0
    if e.kind in ("dead", "alive"):
        return _judge_seen(trace, views, e, t)
    if e.kind in COUNTED:
        return _judge_false(trace, e, t, accusations)
    if e.kind == "leader_change":
        return _judge_leader_change(trace, views, e, t)
    if e.kind == "no_lost_writes":
        return judge_storage(trace)
    return _judge_converged(trace, views, e, t)


def _judge_seen(trace: Trace, views: Views, e: Expectation, t: float) -> dict[str, Any]:
    """dead/alive: every observer saw the subject in that state within the bound after ``t``."""
    deadline = t + e.within
    x = _subject(trace, views, e, t)
    if x is None:
        return {"status": "fail", "measured": None, "detail": "no subject (no leader)"}
    states = DOWN_STATES if e.kind == "dead" else frozenset({"alive"})
    late, worst = [], 0.0
    for o in _observers(trace, e, t, deadline, x):
        hit = views.first(o, x, states, t, trace.end)
        if hit is None or hit > deadline:
            late.append(o)
        else:
            worst = max(worst, hit - t)
    measured = None if late else _r(worst)
    detail = f"subject {x}" + (f"; not within the bound at: {late}" if late else "")
    return {
        "status": "fail" if late else "pass",
        "measured": measured,
        "detail": detail,
        "subject": x,
    }


def _judge_false(
    trace: Trace, e: Expectation, t: float, accusations: list[Accusation]
) -> dict[str, Any]:
    """never_dead / max_false_suspicions: false accusations by ``seen_by`` of the subjects,
    from ``t`` to the end (``suspicions`` rule 4: expected ones do not count)."""
    states = ("suspected",) if e.kind == "max_false_suspicions" else DOWN_STATES
    hits = [
        x
        for x in accusations
        if not x.expected
        and x.state in states
        and t <= x.t
        and (isinstance(e.seen_by, str) or x.observer in e.seen_by)
        and (isinstance(e.subjects, str) or x.subject in e.subjects)
    ]
    limit = e.limit if e.kind == "max_false_suspicions" else 0
    detail = ""
    if hits:
        h = hits[0]
        word = "suspected" if e.kind == "max_false_suspicions" else "dead"
        detail = f"first: node {h.observer} saw {h.subject} {word} at {trace.rel(h.t)} s"
    return {
        "status": "fail" if len(hits) > limit else "pass",
        "measured": len(hits),
        "detail": detail,
    }


def _judge_leader_change(trace: Trace, views: Views, e: Expectation, t: float) -> dict[str, Any]:
    """leader_change: every up node agrees on one leader other than the one before ``t``."""
    old = _leader_before(trace, views, t)
    times = [t, *views.event_times(t, trace.end)]
    for u in times:
        ups = [o for o in trace.up_nodes(u)]
        leaders = {views.leader(o, u) for o in ups}
        if len(leaders) == 1 and old not in leaders:
            took = u - t
            ok = took <= e.within
            return {
                "status": "pass" if ok else "fail",
                "measured": _r(took),
                "detail": f"leader {old} -> {leaders.pop()}",
            }
    return {
        "status": "fail",
        "measured": None,
        "detail": f"leader {old} was never replaced everywhere",
    }


def _judge_converged(trace: Trace, views: Views, e: Expectation, t: float) -> dict[str, Any]:
    """converged: every up node holds every up node alive within the bound after ``t``."""
    conv = converged_at(trace, views, t)
    spent = None if conv is None else conv - t
    ok = spent is not None and spent <= e.within
    return {"status": "pass" if ok else "fail", "measured": _r(spent), "detail": ""}


def http_expectations(trace: Trace, scenario: Scenario) -> list[dict[str, Any]]:
    out = []
    base = len(scenario.expectations)
    for k, step in enumerate(s for s in scenario.steps if s.kind == "http" and s.expect):
        assert step.expect is not None
        lo, hi = step.expect.within
        desc = (
            f"{step.method} {step.path} on node {step.target} answers "
            f"{step.expect.status} within {lo:g}..{hi:g}s"
        )
        row: dict[str, Any] = {
            "index": base + k,
            "kind": "http",
            "description": desc,
            "bound": [lo, hi],
            "step": step.name,
        }
        if trace.mode == "sim":
            out.append(
                {
                    **row,
                    "status": "not_applicable",
                    "measured": None,
                    "detail": "no HTTP on the simulated network",
                }
            )
            continue
        res = next((h for h in trace.http if h.step == step.name), None)
        if res is None:
            out.append({**row, "status": "fail", "measured": None, "detail": "not sent"})
            continue
        ok = res.status == step.expect.status and lo <= res.elapsed <= hi
        out.append(
            {
                **row,
                "status": "pass" if ok else "fail",
                "measured": _r(res.elapsed),
                "detail": f"status {res.status}" + (f" ({res.error})" if res.error else ""),
            }
        )
    return out
