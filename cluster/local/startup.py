"""Starting a whole local cluster: node 0 first, then the others forked from one zygote, each
ready, then converged.

Rules:
1. Node 0 first: once it answers, every other node finds a live seed on its first join
   attempt, instead of waiting for a push/pull to repair a failed join.
2. On any failure or cancellation every process started here is ended (shielded) before the
   error propagates: a failed start leaves nothing running.
3. The caller saves the record (``on_spawned`` is called as soon as pids are known).
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
    on_spawned: Callable[[ClusterRecord], None] | None = None,
) -> float | None:
    """Start every node of ``cluster.record``; wait until ready (and converged unless
    ``wait=False``). Seconds from the first spawn to convergence, or None without waiting.

    On any failure every process started here is ended before the error propagates.
    """
    t0 = time.monotonic()
    deadline = t0 + timeout
    try:
        # Node 0 first (rule 1).
        first, *rest = cluster.record.nodes
        cluster.spawn(first)
        if on_spawned is not None:
            on_spawned(cluster.record)
        await cluster.wait_ready(first.node_id, timeout)
        cluster.spawn_many(rest)
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
