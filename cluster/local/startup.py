"""Starting a whole local cluster: every node forked from one zygote, node 0 first, each
ready, then converged.

Rules:
1. The record is written before the first process starts (every node ``starting``), and each
   pid as soon as its fork returns; each node's watcher records it before it runs. Whenever
   ``launch`` (or its whole process) stops, ``down`` finds every node it started.
2. Node 0 first: once it answers, every other node finds a live seed on its first join
   attempt, instead of waiting for a push/pull to repair a failed join.
3. On any failure or cancellation every process of the cluster is ended (shielded) before the
   error propagates, after the zygote has finished the fork in flight: a failed start leaves
   nothing running (and, for nodes in namespaces, no namespace or bridge).
4. Nodes in namespaces of their own: the network is made after the record names it and
   before the first fork; each node is forked by a zygote inside its namespace.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import trio

from .launcher import LocalCluster, Progress
from .record import ClusterError, ClusterRecord

__all__ = ["launch"]


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
    record is already saved then).

    On any failure every process of the cluster is ended before the error propagates.
    """
    t0 = time.monotonic()
    deadline = t0 + timeout
    try:
        cluster.create()  # rule 1
        cluster.make_network()  # rule 4
        with cluster.open_forker() as fork:  # left (and the zygotes done) before any down
            first, *rest = cluster.record.nodes
            fork(first)  # rule 2
            if on_spawned is not None:
                on_spawned(cluster.record)
            await cluster.wait_ready(first.node_id, timeout)
            for rec in rest:
                fork(rec)
                await trio.lowlevel.checkpoint()  # a cancellation ends the launch between forks
            if on_spawned is not None:
                on_spawned(cluster.record)
        for rec in list(cluster.record.nodes):
            await cluster.wait_ready(rec.node_id, max(1.0, deadline - time.monotonic()))
            if progress is not None:
                ready = sum(n.state == "running" for n in cluster.record.nodes)
                progress(ready, 0, len(cluster.record.nodes), time.monotonic() - t0)
        if not wait:
            return None
        expect = {n.node_id for n in cluster.record.nodes}
        return await cluster.wait_converged(expect, timeout, progress, started=t0)
    except BaseException:
        with trio.CancelScope(shield=True), contextlib.suppress(ClusterError):
            await cluster.down(grace=5.0)
        raise
