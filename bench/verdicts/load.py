"""The loaded neighbour: a second local cluster, its synthetic workload on, running beside the
scenario runs under test; and the proof that a cluster's processes are all gone.

Rules:
1. The neighbour is an ordinary ``cluster.local`` cluster on free ports in a directory the
   caller owns. ``open_neighbour`` is a sync context manager that starts it in a ``trio.run``
   of its own and ends it (``down``) in another, in a ``finally``: the scenario runs between
   (each its own ``trio.run``) meet it only as load on the same host.
2. Processes are found and ended by pid and start marker, through the cluster's record and
   process files (``cluster.local``), never by name.
3. ``leftovers`` reports every process of a cluster directory that still runs (its nodes and
   their watchers); ``end_leftovers`` ends them. A benchmark or test that started a cluster
   proves with these that nothing of it outlived the run.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import trio

from cluster.local import (
    ClusterError,
    ClusterRecord,
    LocalCluster,
    launch,
    members,
    plan_cluster,
    process_state,
    read_record,
    save_record,
)

__all__ = ["NEIGHBOUR_NODES", "Neighbour", "end_leftovers", "leftovers", "open_neighbour"]

NEIGHBOUR_NODES = 5
WORKLOAD_RATE = 20.0  # workload steps a second per node: the node settings' default
LAUNCH_TIMEOUT = 90.0  # seconds for the neighbour to start and converge
DOWN_GRACE = 5.0  # seconds between SIGTERM and SIGKILL when a cluster is ended
WATCHER_WAIT = 5.0  # seconds a watcher gets to exit once its node has ended
POLL = 0.05  # seconds between looks while waiting for processes to be gone

Say = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A running loaded cluster: its directory, its record as launched (pids and start
    markers), and how long it took to converge (seconds)."""

    directory: Path
    record: ClusterRecord
    converged_s: float
    rate: float  # workload steps a second per node

    def processes(self) -> tuple[tuple[int, int], ...]:
        """(pid, start marker) of each node process as launched."""
        return tuple((n.pid, n.started) for n in self.record.nodes)

    def running(self) -> int:
        """How many of its node processes still run (not paused, not gone)."""
        return sum(process_state(pid, started) == "running" for pid, started in self.processes())

    def cpu_seconds(self) -> float:
        """User + system CPU seconds its node processes have used so far (gone ones count 0)."""
        total = 0.0
        for pid, started in self.processes():
            if process_state(pid, started) == "gone":
                continue
            with contextlib.suppress(psutil.Error):
                times = psutil.Process(pid).cpu_times()
                total += times.user + times.system
        return total


def _config(directory: Path, rate: float) -> Path:
    """The neighbour's node configuration: the workload on (demo pools composed)."""
    path = directory / "node.yaml"
    path.write_text(f"workload: {{enabled: true, rate: {rate:g}, pools: true}}\n")
    return path


@contextlib.contextmanager
def open_neighbour(
    directory: Path,
    *,
    nodes: int = NEIGHBOUR_NODES,
    rate: float = WORKLOAD_RATE,
    say: Say | None = None,
) -> Iterator[Neighbour]:
    """A converged ``nodes``-node cluster with its workload on, for the ``with`` block; every
    process of it is ended (and proved gone) when the block ends, however it ends."""
    directory.mkdir(parents=True, exist_ok=True)
    record = plan_cluster(
        directory / "cluster",
        "neighbour",
        nodes,
        base_port=0,
        runtime_base_port=0,
        config=str(_config(directory, rate)),
    )
    cluster = LocalCluster(record)
    try:
        if say is not None:
            say(
                f"neighbour: launching {nodes} nodes (workload on, {rate:g} steps/s) in {directory}"
            )
        took = trio.run(_launch, cluster)
        if say is not None:
            say(f"neighbour: converged after {took:.1f} s")
        yield Neighbour(directory / "cluster", cluster.record, took, rate)
    finally:
        trio.run(_down, cluster)
        left = leftovers(directory / "cluster")
        if left:
            raise ClusterError(f"neighbour processes outlived its end: {', '.join(left)}")
        if say is not None:
            say("neighbour: stopped")


async def _launch(cluster: LocalCluster) -> float:
    took = await launch(cluster, wait=True, timeout=LAUNCH_TIMEOUT, on_spawned=save_record)
    return float(took or 0.0)


async def _down(cluster: LocalCluster) -> None:
    try:
        await cluster.down(grace=DOWN_GRACE)
    finally:
        save_record(cluster.record)


def _running(directory: Path) -> list[str]:
    found = []
    for m in members(directory, read_record(directory)):
        if process_state(m.pid, m.started) != "gone":
            found.append(m.label())
        if m.watcher and process_state(m.watcher, m.watcher_started) != "gone":
            found.append(f"watcher pid {m.watcher} of {m.label()}")
    return found


def leftovers(directory: Path, wait: float = WATCHER_WAIT) -> list[str]:
    """Every process of the cluster in ``directory`` still running after up to ``wait`` s:
    its nodes (from the record and the process files) and their watchers (which exit just
    after recording their node's end); [] when all are gone."""
    deadline = time.monotonic() + wait
    found = _running(directory)
    while found and time.monotonic() < deadline:
        time.sleep(POLL)
        found = _running(directory)
    return found


def end_leftovers(directory: Path) -> list[str]:
    """End whatever of the cluster in ``directory`` still runs (``down``: by pid and start
    marker, signalling process groups); what was found running before."""
    left = leftovers(directory)
    record = read_record(directory)
    if left and record is not None:
        trio.run(_down, LocalCluster(record))
    return left
