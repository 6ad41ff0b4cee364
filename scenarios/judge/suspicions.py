"""Every suspicion and death of a run, classified *expected* or *false*, with the reason.

Rules:
1. An accusation is an event putting a member in ``suspected``, ``dead`` or ``left`` in
   another member's view, between the start and the end of the run, while the observer ran.
2. It is *expected* when the protocol was right to raise it: its subject was killed, stopped,
   paused or restarted, or cut off from the observer by an injected partition; or the
   observer itself was paused (its probes timed out while it was frozen); or, for a
   suspicion only, packet loss or delay was injected on the subject or the observer (a probe
   can fail on a lossy path, but a death there is false unless the loss is total), or a one-way
   cut from or to the subject or the observer (a death too when a node of its ``from`` can
   send to no other node: cut off as by total loss).
   A fault counts from its start to two protocol periods after its end (probes in flight).
3. An accusation learned second-hand (gossip, push/pull, a timer started by gossip) belongs
   to the rumour it repeats: the subject at that incarnation. It is expected when an
   accusation of that rumour made before it was expected (a partition's verdicts merging
   back after the heal are the partition's, not new false ones); else it is judged by rule 2
   on its own.
4. Everything else is *false*: a healthy member that the observer could reach was accused.
   Only false accusations count against ``never_dead`` and ``max_false_suspicions``.
5. Pure: a function of the ``Trace`` and its ``Views``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .trace import INF, Trace, Views

__all__ = ["Accusation", "classify"]

ACCUSING = ("suspected", "dead", "left")
FIRST_HAND = ("indirect_failed", "probe_timeout")  # the observer's own failed probe
_DOWN_REASON = {"kill": "killed", "stop": "stopped", "pause": "paused", "restart": "restarted"}
_SUSPICION_ONLY = ("loss", "delay", "cut")  # reasons that explain a suspicion, not a death


@dataclass(frozen=True, slots=True)
class Accusation:
    observer: int
    subject: int
    t: float  # trace clock
    since: float  # when this suspicion episode began in the observer's view
    state: str  # suspected, dead or left
    incarnation: int
    cause: str
    reason: str  # "" when false

    @property
    def expected(self) -> bool:
        return bool(self.reason)

    def as_dict(self, trace: Trace) -> dict[str, Any]:
        return {
            "observer": self.observer,
            "subject": self.subject,
            "t": trace.rel(self.t),
            "since": trace.rel(self.since),
            "state": "suspected" if self.state == "suspected" else "dead",
            "cause": self.cause,
            "class": "expected" if self.reason else "false",
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class _Fault:
    start: float
    end: float
    reason: str
    nodes: frozenset[int]  # whom it touches (partition: every node in a group)
    groups: dict[int, int] | None = None  # partition: node -> group
    total: bool = False  # loss of every packet: a cut, good for deaths too

    def relates(self, o: int, s: int) -> bool:
        if self.groups is not None:
            return self.groups.get(o, -1 - o) != self.groups.get(s, -1 - s)
        return s in self.nodes or o in self.nodes


def classify(trace: Trace, views: Views) -> list[Accusation]:
    """Every accusation of the run in time order, each with its reason ("" when false)."""
    ups = trace.up_intervals()
    faults = _faults(trace, ups)
    slack = 2.0 * trace.probe_interval
    rumours: dict[tuple[int, int], list[tuple[float, str]]] = {}
    out = []
    for raw in sorted(_accusations(trace, views), key=lambda a: a[2]):
        o, s, t, since, state, inc, cause = raw
        reason = _own_reason(faults, o, s, since, t, state, slack)
        if not reason and cause not in FIRST_HAND:
            reason = _inherited(rumours.get((s, inc), []), t, state)
        if reason:
            rumours.setdefault((s, inc), []).append((t, reason))
        if trace.t0 <= t <= trace.end and any(a <= t < b for a, b in ups.get(o, ())):
            out.append(Accusation(o, s, t, since, state, inc, cause, reason))
    return out


def _accusations(trace: Trace, views: Views) -> list[tuple[int, int, float, float, str, int, str]]:
    """(observer, subject, t, episode start, state, incarnation, cause) of every accusation."""
    incarnations = {
        (int(e["observer"]), int(e["subject"]), float(e["mono"])): int(e.get("incarnation") or 0)
        for e in trace.events
    }
    out = []
    for o, s in views.pairs():
        if o == s:
            continue
        episode: float | None = None
        for (t, st), cause in zip(views.transitions(o, s), views.causes(o, s), strict=True):
            if st is None or st not in ACCUSING:
                episode = None
                continue
            if episode is None:
                episode = t
            inc = incarnations.get((o, s, t), 0)
            out.append((o, s, t, episode, st, inc, cause))
    return out


def _own_reason(
    faults: list[_Fault], o: int, s: int, since: float, t: float, state: str, slack: float
) -> str:
    """Rule 2: the fault that explains ``o`` accusing ``s`` during [since, t], if any."""
    for f in faults:
        if not (f.start - 1e-9 <= t and since <= f.end + slack and f.relates(o, s)):
            continue
        if f.groups is not None:
            return f.reason
        if f.reason in _SUSPICION_ONLY:
            if state == "suspected" or f.total:
                return f.reason
        elif s in f.nodes:
            return f.reason
        elif f.reason == "paused":
            return "observer paused"
    return ""


def _inherited(origins: list[tuple[float, str]], t: float, state: str) -> str:
    """Rule 3: the reason of an earlier expected accusation of the same rumour."""
    for when, reason in origins:
        if when <= t + 1e-9 and (state == "suspected" or reason not in _SUSPICION_ONLY):
            return reason
    return ""


def _faults(trace: Trace, ups: dict[int, list[tuple[float, float]]]) -> list[_Fault]:
    """Every injected fault of the run as an interval (rule 2)."""
    out = []
    acts = sorted(trace.actions, key=lambda a: a.t)
    for node, spans in ups.items():
        t = -INF
        for a, b in sorted(spans):
            if a > t and t > -INF:
                out.append(_Fault(t, a, _ended_by(acts, node, t), frozenset({node})))
            t = b
        if t < INF:
            out.append(_Fault(t, INF, _ended_by(acts, node, t), frozenset({node})))
    for act in acts:
        if act.kind == "restart":  # the old process is gone at once (the new one is up)
            out += [_Fault(act.t, act.t, "restarted", frozenset({i})) for i in act.nodes]
    for a, b, groups in trace.partitions():
        if len(set(groups.values())) > 1:
            out.append(_Fault(a, b, "partition", frozenset(groups), groups))
    everyone = set(trace.initial) | {i for a in acts if a.kind == "add" for i in a.nodes}
    sends_cut: dict[int, set[int]] = {}  # the cuts in force: cuts add up until a heal
    for k, act in enumerate(acts):
        if act.kind == "heal":
            sends_cut.clear()
        if act.kind == "cut" and len(act.groups) == 2:
            end = next((x.t for x in acts[k + 1 :] if x.kind == "heal"), INF)
            src, dst = act.groups
            for i in src:
                sends_cut.setdefault(i, set()).update(dst)
            total = any(everyone - {i} <= sends_cut[i] for i in src)  # sends to no one
            out.append(_Fault(act.t, end, "cut", frozenset(src) | frozenset(dst), total=total))
        elif act.kind in _SUSPICION_ONLY and act.value > 0:
            end = next((x.t for x in acts[k + 1 :] if x.kind == "heal" or x.kind == act.kind), INF)
            total = act.kind == "loss" and act.value >= 100.0
            out.append(_Fault(act.t, end, act.kind, frozenset(act.nodes), total=total))
    return out


def _ended_by(acts: list[Any], node: int, t: float) -> str:
    """Why ``node`` stopped running at ``t``: the action that did it."""
    for a in acts:
        if abs(a.t - t) < 1e-9 and node in a.nodes and a.kind in _DOWN_REASON:
            return _DOWN_REASON[a.kind]
    return "down"
