"""Figures read from a running local cluster: memory (PSS and private) and CPU of its
processes, what its nodes' event logs say about live members, and their loop lag.

Rules:
1. Only reads: processes through psutil, event logs as files, nodes through their RPC.
2. A process that ended meanwhile is left out of a figure, never an error.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import psutil
import trio

from cluster.ground.errors import ApiError
from cluster.local import LocalCluster
from cluster.rpc import Monitor, rpc_call

__all__ = [
    "EventTally",
    "cpu_seconds",
    "event_logs",
    "loop_lag",
    "memory",
    "sizes_seen",
    "start_figures",
    "watchers",
]

MB = 2**20
ASK_AT_ONCE = 32


def watchers(pids: list[int]) -> list[int]:
    """The watcher (parent) of each node process, where there is one."""
    out = []
    for pid in pids:
        try:
            out.append(psutil.Process(pid).ppid())
        except psutil.Error:
            pass
    return out


def memory(pids: list[int]) -> dict[str, float]:
    """Mean and max PSS and private (USS) memory in MB, and RSS mean, over ``pids``."""
    pss, uss, rss = [], [], []
    for pid in pids:
        try:
            info = psutil.Process(pid).memory_full_info()
        except psutil.Error:
            continue
        pss.append(info.pss / MB)
        uss.append(info.uss / MB)
        rss.append(info.rss / MB)
    if not pss:
        return {}
    return {
        "pss_mb_mean": round(statistics.fmean(pss), 1),
        "pss_mb_max": round(max(pss), 1),
        "private_mb_mean": round(statistics.fmean(uss), 1),
        "rss_mb_mean": round(statistics.fmean(rss), 1),
    }


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds used so far by ``pids`` together."""
    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


async def loop_lag(cluster: LocalCluster) -> dict[str, Any]:
    """The nodes' own loop lag (``monitor process``): the largest last reading and the
    largest maximum, in ms, and how many nodes answered."""
    last: list[float] = []
    worst: list[float] = []
    limiter = trio.CapacityLimiter(ASK_AT_ONCE)

    async def one(host: str, port: int) -> None:
        async with limiter:
            try:
                body = await rpc_call(host, port, Monitor("process"), 2.0)
            except ApiError:  # a node that does not answer is left out
                return
        if isinstance(body, dict):
            if isinstance(body.get("loop_lag_ms"), (int, float)):
                last.append(float(body["loop_lag_ms"]))
            if isinstance(body.get("loop_lag_max_ms"), (int, float)):
                worst.append(float(body["loop_lag_max_ms"]))

    async with trio.open_nursery() as nursery:
        for rec in cluster.record.nodes:
            nursery.start_soon(one, cluster.record.host_of(rec), rec.runtime_port)
    return {
        "answered": len(last),
        "lag_ms_max_now": round(max(last), 1) if last else None,
        "lag_ms_max_ever": round(max(worst), 1) if worst else None,
    }


@dataclass
class EventTally:
    """Membership events about live members, read from every node's event log from
    ``since`` on (a ``time.monotonic()``); each file is read on from where the last look
    stopped."""

    logs: list[str]
    since: float
    counts: dict[str, int] = field(default_factory=dict)  # new state -> events
    subjects: set[int] = field(default_factory=set)  # members suspected or declared dead
    raised: int = 0  # suspicions an observer raised itself (not heard by gossip or push/pull)
    _offsets: dict[str, int] = field(default_factory=dict)

    def read(self, live: set[int]) -> None:
        """Count the new lines' events whose subject is in ``live`` (the members that were
        never stopped, so any suspicion of them is false)."""
        for path in self.logs:
            start = self._offsets.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(start)
                    data = f.read()
            except OSError:
                continue
            end = data.rfind(b"\n") + 1  # a half-written last line waits for the next look
            self._offsets[path] = start + end
            for line in data[:end].splitlines():
                self._count(line, live)

    def _count(self, line: bytes, live: set[int]) -> None:
        try:
            ev = json.loads(line)
        except ValueError:
            return
        if not isinstance(ev, dict) or ev.get("mono", 0) < self.since:
            return
        new = ev.get("new")
        if ev.get("subject") in live and new in ("probe_failed", "suspected", "dead", "left"):
            self.counts[new] = self.counts.get(new, 0) + 1
            if new in ("suspected", "dead"):
                self.subjects.add(int(ev["subject"]))
            if new == "suspected" and ev.get("cause") not in ("gossip", "pushpull"):
                self.raised += 1

    @property
    def suspicions(self) -> int:
        return self.counts.get("suspected", 0)

    @property
    def deaths(self) -> int:
        return self.counts.get("dead", 0) + self.counts.get("left", 0)


def event_logs(cluster: LocalCluster) -> list[str]:
    """Every node's event log file."""
    return [rec.events for rec in cluster.record.nodes if rec.events]


_UP = frozenset({"alive", "probe_failed", "suspected"})


def sizes_seen(events: Iterable[dict[str, Any]]) -> dict[int, int]:
    """Per observer, the distinct cluster sizes it passed through (the Rapid paper's measure of
    how smoothly a cluster bootstraps): the count of members it held up, itself included,
    after each instant at which its view changed (the events of one packet or one push/pull
    share their ``mono``, and nothing can see the view between them)."""
    up: dict[Any, set[Any]] = {}
    seen: dict[Any, set[int]] = {}
    last: dict[Any, Any] = {}
    for ev in events:
        o, subject = ev.get("observer"), ev.get("subject")
        if subject == o:
            continue
        u = up.setdefault(o, set())
        if o in last and last[o] != ev.get("mono"):  # the view as it stood after that instant
            seen.setdefault(o, {1}).add(len(u) + 1)
        last[o] = ev.get("mono")
        (u.add if ev.get("new") in _UP else u.discard)(subject)
    for o, u in up.items():
        seen.setdefault(o, {1}).add(len(u) + 1)
    return {o: len(v) for o, v in seen.items()}


def start_figures(logs: list[str], live: set[int]) -> dict[str, Any]:
    """What every node's event log says of a start in which no node was stopped: the false
    suspicions (``suspected`` events about ``live`` members), and the distinct cluster sizes
    each node passed through (``sizes_seen``; a log with no change of another member: 1)."""
    suspicions = 0
    sizes: list[int] = []
    for path in logs:
        try:
            with open(path, "rb") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        events = []
        for line in lines:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if isinstance(ev, dict):
                events.append(ev)
                suspicions += ev.get("new") == "suspected" and ev.get("subject") in live
        sizes.append(max(sizes_seen(events).values(), default=1))
    return {
        "start_false_suspicions": suspicions,
        "sizes_seen_max": max(sizes) if sizes else None,
        "sizes_seen_median": statistics.median(sizes) if sizes else None,
    }
