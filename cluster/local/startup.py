"""Starting a whole local cluster: every node forked from one zygote, node 0 first, each
ready, then converged, with a progress report about once a second.

Rules:
1. The record is written before the first process starts (every node ``starting``); each
   node's watcher records it (``procs/``) before it runs. The pids forked are written into the
   record file together, before each readiness round (about once a second) and when the
   forking ends (one write a fork was the launcher's biggest cost at 1,000 nodes: the whole
   record each time). Whenever ``launch`` (or its whole process) stops, ``down`` finds every
   node it started.
2. Node 0 first: once it answers, every other node finds a live seed on its first join
   attempt, instead of waiting for a push/pull to repair a failed join.
3. On any failure or cancellation every process of the cluster is ended (shielded) before the
   error propagates, after the zygote has finished the fork in flight: a failed start leaves
   nothing running (and, for nodes in namespaces, no namespace or bridge).
4. Nodes in namespaces of their own: the network is made after the record names it and
   before the first fork; each node is forked by a zygote inside its namespace.
5. The launcher's own work stays small beside the nodes': readiness is asked of every
   started node that has not answered yet, at most ``ASK_AT_ONCE`` at a time, in rounds
   (also between forks, about once a second, with a short wait so the forks wait little),
   and recorded once per round; convergence asks only the nodes not yet seen converged, then
   all once more (``wait_converged``). While ``STARTING_AT_MOST`` or more forked nodes have
   not answered, every fork first waits for a readiness round (up to
   ``ROUND_WHILE_FORKING``): a start that outruns the machine (every node busy taking in the
   others' joins) is slowed down by it instead of sinking it into loop lag and false
   suspicions.
6. Progress (``LaunchProgress``: started, listening, converged) goes to the caller's
   callback between steps, at most once per ``REPORT_EVERY`` seconds, and once at the end.
7. Serf agents (``MixedCluster``) start once every node answers, all at once, each joining
   through nodes that answer; they count in the progress as members.
8. The timeout holds while the nodes are forked too: a start that outruns the machine (its
   forks slowed to one every few seconds by rule 5) ends at the timeout like any other,
   with every process it started ended (rule 3), instead of forking on long past it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import trio

from .convergence import ASK_AT_ONCE
from .launcher import LocalCluster
from .mixed import MixedCluster
from .record import ClusterError, ClusterRecord, NodeRecord

__all__ = ["LaunchProgress", "Progress", "launch"]

REPORT_EVERY = 1.0  # seconds between progress reports
READY_ROUND = 0.2  # seconds between rounds of readiness questions once every node is forked
FORKS_AHEAD = 4  # fork requests the zygote holds at once (``forks`` rule 2)
STARTING_AT_MOST = 4  # nodes forked and not yet answering from which each fork waits a round
ROUND_WHILE_FORKING = 0.25  # seconds a node gets to answer a round between forks, which wait


@dataclass(frozen=True, slots=True)
class LaunchProgress:
    """Where a launch stands: processes started, nodes answering (their sockets bound, the
    dashboard too when they have one), nodes listing every node alive; seconds since the
    first fork."""

    started: int
    listening: int
    converged: int
    total: int
    elapsed: float

    @property
    def done(self) -> bool:
        return self.converged == self.total


Progress = Callable[[LaunchProgress], None]


class _Tally:
    """The counts behind the progress reports, and when the last one went out."""

    def __init__(self, total: int, progress: Progress | None, t0: float) -> None:
        self.started = self.listening = self.converged = 0
        self.total = total
        self._progress = progress
        self.t0 = t0
        self._last = -REPORT_EVERY
        self._said: tuple[int, int, int] = (-1, -1, -1)

    def report(self, *, final: bool = False) -> None:
        """Report the counts, unless the last report is under ``REPORT_EVERY`` seconds old
        (a ``final`` one goes out then too, unless it would say the same)."""
        now = time.monotonic() - self.t0
        counts = (self.started, self.listening, self.converged)
        if self._progress is None or (now - self._last < REPORT_EVERY and not final):
            return
        if final and counts == self._said and now - self._last < REPORT_EVERY:
            return
        self._last, self._said = now, counts
        self._progress(LaunchProgress(*counts, self.total, now))


async def _ready_round(
    cluster: LocalCluster, waiting: dict[int, NodeRecord], timeout: float
) -> None:
    """Ask every node in ``waiting`` once (rule 5), waiting ``timeout`` seconds for each
    answer; those that answer are recorded running in one write and leave ``waiting``.
    NodeFailed for a node that died or has no dashboard."""
    found: list[tuple[int, dict[str, Any]]] = []
    failed: list[ClusterError] = []
    limiter = trio.CapacityLimiter(ASK_AT_ONCE)

    async def one(rec: NodeRecord) -> None:
        async with limiter:
            try:
                ident = await cluster.probe_ready(rec.node_id, timeout)
            except ClusterError as exc:
                failed.append(exc)
                return
        if ident is not None:
            found.append((rec.node_id, ident))

    async with trio.open_nursery() as nursery:
        for rec in waiting.values():
            nursery.start_soon(one, rec)
    cluster.mark_ready(found)
    for node_id, _ in found:
        del waiting[node_id]
    if failed:
        raise failed[0]


async def _start_all(
    cluster: LocalCluster,
    tally: _Tally,
    timeout: float,
    on_spawned: Callable[[ClusterRecord], object] | None,
) -> None:
    """Fork every node (node 0 first and ready, rule 2) and wait until each answers within
    ``timeout`` seconds of the launch's start."""
    deadline = tally.t0 + timeout
    waiting: dict[int, NodeRecord] = {}
    last_round = time.monotonic()
    with cluster.open_forker() as forks:  # left (and the zygotes done) before any down
        first, *rest = cluster.record.nodes
        forks.submit(first)
        forks.take()
        cluster.save_forks()
        tally.started = 1
        if on_spawned is not None:
            on_spawned(cluster.record)
        await cluster.wait_ready(first.node_id, max(1.0, deadline - time.monotonic()))
        tally.listening = 1
        for i, rec in enumerate(rest):
            if time.monotonic() >= deadline:  # rule 8: a start the machine cannot keep up with
                raise ClusterError(
                    f"only {tally.started} of {len(cluster.record.nodes)} nodes were started "
                    f"({tally.listening} answering) within {timeout:g}s; give it longer "
                    "(--timeout) or start fewer nodes"
                )
            forks.submit(rec)
            while forks.in_flight >= (FORKS_AHEAD if i + 1 < len(rest) else 1):
                new = forks.take()
                waiting[new.node_id] = new
                tally.started += 1
            # A round about once a second for the report, and whenever STARTING_AT_MOST nodes
            # have not answered yet: a busy machine slows the forks down (rule 5).
            if len(waiting) >= STARTING_AT_MOST or time.monotonic() - last_round >= REPORT_EVERY:
                cluster.save_forks()  # rule 1; and a node found ready is marked in the file
                await _ready_round(cluster, waiting, ROUND_WHILE_FORKING)
                last_round = time.monotonic()
                tally.listening = tally.started - len(waiting)
            tally.report()
            await trio.lowlevel.checkpoint()  # a cancellation ends the launch between forks
        if on_spawned is not None:
            on_spawned(cluster.record)
    while waiting:
        await _ready_round(cluster, waiting, 1.0)
        tally.listening = len(cluster.record.nodes) - len(waiting)
        tally.report()
        if not waiting:
            break
        if time.monotonic() >= deadline:
            late = next(iter(waiting.values()))
            raise await cluster.failure(late.node_id, f"did not come up within {timeout:g}s")
        await trio.sleep(READY_ROUND)


async def _start_agents(cluster: MixedCluster, tally: _Tally, deadline: float) -> None:
    """Start every agent (rule 7) and wait until each answers, by ``deadline`` (monotonic)."""
    spawned = []
    for agent in cluster.record.agents:
        spawned.append(cluster.spawn_agent(agent.index))
        tally.started += 1
    tally.report()
    for agent in spawned:
        await cluster.wait_agent_ready(agent.index, max(1.0, deadline - time.monotonic()))
        tally.listening += 1
        tally.report()


async def launch(
    cluster: LocalCluster,
    *,
    wait: bool = True,
    timeout: float = 120.0,
    progress: Progress | None = None,
    on_spawned: Callable[[ClusterRecord], object] | None = None,
) -> float | None:
    """Start every node of ``cluster.record``; wait until ready (and converged unless
    ``wait=False``). Seconds from the first spawn to convergence, or None without waiting.
    ``on_spawned`` is called with the record once node 0 and once all nodes have pids (the
    record is already saved then). ``progress`` gets a ``LaunchProgress`` about once a
    second and once at the end.

    On any failure every process of the cluster is ended before the error propagates.
    """
    t0 = time.monotonic()
    record = cluster.record
    tally = _Tally(len(record.nodes) + len(record.agents), progress, t0)
    try:
        cluster.create()  # rule 1
        cluster.make_network()  # rule 4
        await _start_all(cluster, tally, timeout, on_spawned)
        if record.agents:
            if not isinstance(cluster, MixedCluster):
                raise ClusterError("a cluster with Serf agents needs a MixedCluster (open_local)")
            await _start_agents(cluster, tally, t0 + timeout)
        if not wait:
            tally.report(final=True)
            return None
        expect = {n.node_id for n in record.nodes} | {a.index for a in record.agents}

        def seen(count: int) -> None:
            tally.converged = count
            tally.report()

        took = await cluster.wait_converged(expect, timeout, seen, started=t0)
        tally.report(final=True)
        return took
    except BaseException:
        with trio.CancelScope(shield=True), contextlib.suppress(ClusterError):
            await cluster.down(grace=5.0)
        raise
