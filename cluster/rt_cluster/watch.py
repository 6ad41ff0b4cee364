"""Watching a cluster: one look at every node, and the changes between two looks, one compact
line each (what ``up --foreground`` prints; ``status`` shows one look).

Rules:
1. A look asks every running node, in parallel, for its topology and its faults over the node
   RPC (``monitor topology``, ``monitor faults``), each bounded by ``ASK_TIMEOUT`` seconds. A
   paused node is not asked (it cannot answer, and the question would wait in its socket).
   Process states come from the cluster record and /proc, through ``cluster.local``.
2. ``changes`` is pure: two looks in, lines out, in a fixed order (processes, leaders, views,
   faults). What nodes believe is grouped: one line per (subject, old state, new state) naming
   every observer that saw it so, one per leader change.
3. A node that did not answer keeps what it last said (``carry``): silence is no change of
   mind. A new process of a node starts afresh: its first view is not a change.
4. Nothing here changes a cluster.
5. A node speaking memberlist (``up --serf``) names its members; a member it names is shown by
   that name (``serf-3``, ``rt-1``) in views and faults, rather than by the id it gives it.
6. While nothing changes the watch still speaks: after ``SUMMARY_EVERY`` seconds without a
   line it prints ``summary`` (nodes up, what each sees), so a quiet watch is seen alive.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, NoReturn

import trio

from cluster.local import LocalCluster, NodeRecord

from .hints import id_list
from .output import out

__all__ = [
    "ASK_TIMEOUT",
    "INTERVAL",
    "SUMMARY_EVERY",
    "Look",
    "NodeLook",
    "carry",
    "changes",
    "describe_faults",
    "look",
    "node_look",
    "serve_watch",
    "summary",
]

ASK_TIMEOUT = 1.0  # seconds one node gets to answer one question of a look
INTERVAL = 1.0  # seconds between the starts of two looks of ``serve_watch``
SUMMARY_EVERY = 10.0  # seconds without a printed line before ``serve_watch`` sums up (rule 6)
View = tuple[tuple[int, str], ...]  # (subject, state) as one node sees its members


@dataclass(frozen=True, slots=True)
class NodeLook:
    """One node in one look. ``views`` and ``leader`` are what its process last said (None:
    nothing yet); ``faults`` is its ``monitor faults`` body without ``node_id`` (None: unknown)."""

    node_id: int
    pid: int
    process: str  # running, paused or gone (this moment, from /proc)
    ending: str = ""  # how the process ended ("killed by SIGKILL"), "" when running or unknown
    dashboard: str = ""
    answered: bool = False  # answered the topology question of this look
    leader: int | None = None
    views: View | None = None
    faults: Mapping[str, Any] | None = None
    names: Mapping[int, str] | None = None  # the memberlist name of each member (rule 5)

    @property
    def silent(self) -> bool:
        """Runs, yet did not answer."""
        return self.process == "running" and not self.answered

    def faults_cell(self) -> str:
        """The faults in a few words; ``-`` none (or not running), ``?`` not known."""
        if self.process == "gone":
            return "-"
        return "?" if self.faults is None else describe_faults(self.faults, self.names) or "-"

    def alive_count(self) -> int | None:
        if self.views is None:
            return None
        return sum(1 for _, state in self.views if state == "alive")

    def alive_names(self) -> set[str] | None:
        """The names of the members it holds alive (rule 5; an unnamed one by its id)."""
        if self.views is None:
            return None
        names = self.names or {}
        return {names.get(i, str(i)) for i, state in self.views if state == "alive"}


@dataclass(frozen=True, slots=True)
class Look:
    """Every node of the cluster record at one moment, by node id."""

    nodes: tuple[NodeLook, ...]

    def get(self, node_id: int) -> NodeLook | None:
        return next((n for n in self.nodes if n.node_id == node_id), None)


# ---- looking (rule 1) -----------------------------------------------------------------------


def _names(topology: Mapping[str, Any]) -> dict[int, str] | None:
    """The name of each member a memberlist node lists (rule 5); None when it names none."""
    members = topology.get("nodes")
    names = {}
    for m in members if isinstance(members, list) else ():
        named = isinstance(m, Mapping) and isinstance(m.get("name"), str)
        if named and isinstance(m.get("node_id"), int):
            names[m["node_id"]] = m["name"]
    return names or None


def _view(topology: Mapping[str, Any]) -> View:
    members = topology.get("nodes")
    seen = []
    for m in members if isinstance(members, list) else ():
        if isinstance(m, Mapping) and isinstance(m.get("node_id"), int):
            # "view" folds probe_failed into alive; "state" is what older nodes answer
            seen.append((m["node_id"], str(m.get("view", m.get("state")))))
    return tuple(sorted(seen))


def node_look(rec: NodeRecord, process: str, topology: Any = None, faults: Any = None) -> NodeLook:
    """The look at one node from its record, its process state and its two answers."""
    ending = rec.ended.describe() if rec.ended is not None and process == "gone" else ""
    base = NodeLook(rec.node_id, rec.pid, process, ending, rec.dashboard)
    if isinstance(faults, Mapping):
        base = replace(base, faults={k: v for k, v in faults.items() if k != "node_id"})
    if not isinstance(topology, Mapping):
        return base
    leader = topology.get("leader_node_id")
    return replace(
        base,
        answered=True,
        leader=leader if isinstance(leader, int) else None,
        views=_view(topology),
        names=_names(topology),
    )


async def look(cluster: LocalCluster, timeout: float = ASK_TIMEOUT) -> Look:
    """Ask every running node of the cluster's record what it sees and which faults it has."""
    recs = cluster.record.nodes
    process = {rec.node_id: cluster.state_of(rec.node_id) for rec in recs}
    topologies: dict[int, Any] = {}
    faults: dict[int, Any] = {}

    async def ask_topology(rec: NodeRecord) -> None:
        topologies[rec.node_id] = await cluster.topology(rec.node_id, timeout)

    async def ask_faults(rec: NodeRecord) -> None:
        faults[rec.node_id] = await cluster.read_faults(rec.node_id, timeout)

    async with trio.open_nursery() as nursery:
        for rec in recs:
            if process[rec.node_id] == "running":
                nursery.start_soon(ask_topology, rec)
                nursery.start_soon(ask_faults, rec)
    return Look(
        tuple(
            node_look(
                rec, process[rec.node_id], topologies.get(rec.node_id), faults.get(rec.node_id)
            )
            for rec in recs
        )
    )


def carry(before: Look, after: Look) -> Look:
    """``after``, where a node whose same process did not answer keeps what it last said."""
    nodes = []
    for n in after.nodes:
        old = before.get(n.node_id)
        if old is not None and old.pid == n.pid:
            if not n.answered:
                n = replace(n, leader=old.leader, views=old.views, names=old.names)
            if n.faults is None:
                n = replace(n, faults=old.faults)
        nodes.append(n)
    return Look(tuple(nodes))


# ---- the changes between two looks (rules 2 and 3) --------------------------------------------


def changes(before: Look, after: Look) -> list[str]:
    """One line per change from ``before`` to ``after`` (no time stamp)."""
    lines: list[str] = []
    for n in after.nodes:
        lines += _process_lines(before.get(n.node_id), n)
    lines += _leader_lines(before, after)
    lines += _view_lines(before, after)
    lines += _fault_lines(before, after)
    return lines


def _process_lines(old: NodeLook | None, new: NodeLook) -> list[str]:
    me = f"node {new.node_id}:"
    if new.pid == 0:  # planned, not forked yet
        return []
    if old is None or old.pid == 0:
        where = f", dashboard {new.dashboard}" if new.dashboard else ""
        return [f"{me} {'added' if old is None else 'started'}, pid {new.pid}{where}"]
    if old.pid != new.pid:
        return [f"{me} restarted, pid {new.pid} (was {old.pid})"]
    lines = []
    if new.dashboard and new.dashboard != old.dashboard:
        lines.append(f"{me} dashboard {new.dashboard}")
    if old.process != new.process:
        if new.process == "paused":
            lines.append(f"{me} process paused")
        elif new.process == "gone":
            lines.append(f"{me} process ended" + (f" ({new.ending})" if new.ending else ""))
        else:
            lines.append(f"{me} process resumed")
    elif new.process == "gone" and new.ending and not old.ending:
        lines.append(f"{me} it ended: {new.ending}")
    elif new.silent and not old.silent:
        lines.append(f"{me} not answering (its process runs)")
    elif old.silent and not new.silent and new.process == "running":
        lines.append(f"{me} answering again")
    return lines


def _heard_by_both(before: Look, after: Look) -> list[tuple[NodeLook, NodeLook]]:
    """(old, new) of each node whose same process said something in both looks."""
    pairs = []
    for n in after.nodes:
        old = before.get(n.node_id)
        if old is not None and old.pid == n.pid and old.views is not None and n.views is not None:
            pairs.append((old, n))
    return pairs


def _leader_lines(before: Look, after: Look) -> list[str]:
    groups: dict[tuple[int | None, int | None], list[int]] = {}
    for old, new in _heard_by_both(before, after):
        if old.leader != new.leader:
            groups.setdefault((old.leader, new.leader), []).append(new.node_id)

    def name(leader: int | None) -> str:
        return "none" if leader is None else f"node {leader}"

    return [
        f"leader: {name(was)} -> {name(now)}, as seen by {id_list(observers)}"
        for (was, now), observers in sorted(groups.items(), key=lambda g: g[1])
    ]


def _view_lines(before: Look, after: Look) -> list[str]:
    known = {s for n in before.nodes for s, _ in n.views or ()}
    groups: dict[tuple[int, str | None, str | None], list[int]] = {}
    for old, new in _heard_by_both(before, after):
        was, now = dict(old.views or ()), dict(new.views or ())
        for subject in sorted(was.keys() | now.keys()):
            a, b = was.get(subject), now.get(subject)
            if a == b or (a is None and subject in known):  # a first sight of a known member
                continue
            groups.setdefault((subject, a, b), []).append(new.node_id)
    names = {i: name for n in (*before.nodes, *after.nodes) for i, name in (n.names or {}).items()}
    lines = []
    for (subject, a, b), observers in sorted(groups.items(), key=lambda g: (g[0][0], g[1])):
        by = id_list(observers)
        who = names.get(subject, f"node {subject}")
        if a is None:
            lines.append(f"{who}: joined, {b} as seen by {by}")
        elif b is None:
            lines.append(f"{who}: forgotten by {by} (was {a})")
        else:
            lines.append(f"{who}: {a} -> {b}, as seen by {by}")
    return lines


def _fault_lines(before: Look, after: Look) -> list[str]:
    lines = []
    for n in after.nodes:
        old = before.get(n.node_id)
        if old is None or old.faults is None or n.faults is None:
            continue
        was, now = describe_faults(old.faults, old.names), describe_faults(n.faults, n.names)
        if was != now:
            lines.append(f"node {n.node_id}: faults: {now or 'none'}")
    return lines


def describe_faults(body: Mapping[str, Any], names: Mapping[int, str] | None = None) -> str:
    """``blocked 2, 3; loss 10%; delay 50 ms to 1; cut to 4; clock -86400 s x1; disk m1
    full``; "" when there are none. A member ``names`` names is shown by its name (rule 5):
    ``blocked 1, serf-3``."""
    names = names or {}
    blocked = body.get("blocked")
    ids = [b for b in blocked if isinstance(b, int)] if isinstance(blocked, list) else []
    shown = [id_list(i for i in ids if i not in names), *(names[i] for i in ids if i in names)]
    parts = [f"blocked {', '.join(x for x in shown if x != 'none')}"] if ids else []
    for key, unit in (("loss", "%"), ("delay", " ms")):
        values = body.get(key)
        if not isinstance(values, Mapping):
            continue
        for peer in sorted(values, key=lambda p: (p != "all", len(str(p)), str(p))):
            value = values[peer]
            if isinstance(value, bool) or not isinstance(value, int | float) or not value:
                continue
            named = names.get(int(peer)) if str(peer).isdigit() else None
            where = "" if peer == "all" else f" to {named or peer}"
            parts.append(f"{key} {value:g}{unit}{where}")
    cut = body.get("cut")
    ids = [c for c in cut if isinstance(c, int)] if isinstance(cut, list) else []
    if ids:
        shown = [id_list(i for i in ids if i not in names), *(names[i] for i in ids if i in names)]
        parts.append(f"cut to {', '.join(x for x in shown if x != 'none')}")
    parts += _clock_words(body.get("clock"))
    parts += _disk_words(body.get("disk"))
    return "; ".join(parts)


def _disk_words(disk: Any) -> list[str]:
    """``disk m1 200 ms 10% full``: each device's disk fault, by pool name."""
    if not isinstance(disk, Mapping):
        return []
    out = []
    for pool in sorted(map(str, disk))[:8]:
        fault = disk[pool]
        if not isinstance(fault, Mapping):
            continue
        latency, errors = fault.get("latency_ms"), fault.get("errors")
        words = [f"{latency:g} ms"] if _positive(latency) else []
        words += [f"{errors:g}%"] if _positive(errors) else []
        words += ["full"] if fault.get("full") is True else []
        if words:
            out.append(f"disk {pool[:40]} {' '.join(words)}")
    return out


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _clock_words(clock: Any) -> list[str]:
    """``clock +3600 s x2``: a clock off true or off pace; nothing for the host's."""
    if not isinstance(clock, Mapping):
        return []
    offset, rate = clock.get("offset"), clock.get("rate")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (offset, rate)):
        return []
    if (offset, rate) == (0, 1):
        return []
    return [f"clock {offset:+g} s x{rate:g}"]


# ---- the summary while nothing changes (rule 6) -------------------------------------------------


def _seen_cell(n: NodeLook) -> str:
    """What one node sees in two words: ``3 alive``; or why it says nothing."""
    if n.pid == 0 or n.process == "gone":
        return "down"
    if n.process == "paused":
        return "paused"
    alive = n.alive_count()
    return "not answering" if alive is None else f"{alive} alive"


def summary(now: Look) -> str:
    """``3/3 nodes up; 0-2: 3 alive`` (nodes that see the same grouped, in id order)."""
    up = sum(1 for n in now.nodes if n.pid and n.process != "gone")
    groups: dict[str, list[int]] = {}
    for n in now.nodes:
        groups.setdefault(_seen_cell(n), []).append(n.node_id)
    parts = [f"{id_list(ids)}: {cell}" for cell, ids in sorted(groups.items(), key=lambda g: g[1])]
    return "; ".join([f"{up}/{len(now.nodes)} nodes up", *parts])


# ---- the watch --------------------------------------------------------------------------------


async def serve_watch(cluster: LocalCluster, interval: float = INTERVAL) -> NoReturn:
    """Print a time-stamped line per change, looking every ``interval`` seconds, and the
    summary after ``SUMMARY_EVERY`` quiet seconds (rule 6), until cancelled. The record is
    re-read before each look: other commands change the cluster."""
    before = await look(cluster)
    due = spoke = trio.current_time()
    while True:
        due = max(due + interval, trio.current_time())  # a slow look shifts, never piles up
        await trio.sleep_until(due)
        cluster.refresh_states()
        after = carry(before, await look(cluster))
        stamp = time.strftime("%H:%M:%S")
        lines = changes(before, after)
        if not lines and trio.current_time() - spoke >= SUMMARY_EVERY:
            lines = [summary(after)]
        for line in lines:
            out(f"{stamp}  {line}")
        if lines:
            spoke = trio.current_time()
        before = after
