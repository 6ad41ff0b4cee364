"""The nodes a real run plays on, whoever started them: one surface over a local cluster
(``cluster.local.LocalCluster``: a throwaway cluster, or one ``rt_cluster up`` started) and
over a cluster named only by its hostfile (``cluster.local.attached``).

Rules:
1. The runner sees ``Nodes`` only: ids, process states, dashboards, topology, the process
   steps and the faults. Which steps a cluster can carry out is checked before a run
   (``attach.refuse_steps``); a call the cluster cannot do raises ``ClusterError``.
2. ``state`` is ``running``, ``paused`` or ``gone``; ``unknown`` for a process on another
   host (it counts as running: its faults still apply).
3. ``converge`` waits until every node not gone lists exactly those nodes alive.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

import trio

from cluster.local import ClusterError, LocalCluster
from cluster.local.attached import AttachedCluster

__all__ = ["AttachedNodes", "ClusterNodes", "Nodes", "converge"]


class Nodes(Protocol):
    """What a scenario run does to a cluster's nodes (rule 1)."""

    def ids(self) -> list[int]: ...

    def state(self, node_id: int) -> str: ...

    def dashboard(self, node_id: int) -> str: ...

    async def topology(self, node_id: int) -> dict[str, Any] | None: ...

    async def kill(self, node_id: int) -> None: ...

    async def stop(self, node_id: int) -> None: ...

    def pause(self, node_id: int) -> None: ...

    def resume(self, node_id: int) -> None: ...

    async def start(self, node_id: int) -> None: ...

    async def add(self, induct: bool) -> int: ...

    async def partition(self, groups: Sequence[Sequence[int]]) -> None: ...

    async def heal(self) -> None: ...

    async def fault(self, node_id: int, kind: str, value: float) -> None: ...


class ClusterNodes:
    """A local cluster's nodes, through its record (every change recorded as it happens)."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster

    def ids(self) -> list[int]:
        return [n.node_id for n in self.cluster.record.nodes]

    def state(self, node_id: int) -> str:
        return self.cluster.state_of(node_id)

    def dashboard(self, node_id: int) -> str:
        return self.cluster.record.node(node_id).dashboard

    async def topology(self, node_id: int) -> dict[str, Any] | None:
        return await self.cluster.topology(node_id, timeout=2.0)

    async def kill(self, node_id: int) -> None:
        await self.cluster.kill(node_id)

    async def stop(self, node_id: int) -> None:
        await self.cluster.stop(node_id)

    def pause(self, node_id: int) -> None:
        self.cluster.pause(node_id)

    def resume(self, node_id: int) -> None:
        self.cluster.resume(node_id)

    async def start(self, node_id: int) -> None:
        await self.cluster.start_node(node_id)

    async def add(self, induct: bool) -> int:
        return (await self.cluster.add(induct=induct)).node_id

    async def partition(self, groups: Sequence[Sequence[int]]) -> None:
        await self.cluster.partition(groups)

    async def heal(self) -> None:
        await self.cluster.heal()

    async def fault(self, node_id: int, kind: str, value: float) -> None:
        await self.cluster.faults(node_id, kind, value=value)


class AttachedNodes:
    """A hostfile's nodes: faults everywhere, signals on this machine, nothing started."""

    def __init__(self, cluster: AttachedCluster) -> None:
        self.cluster = cluster

    def ids(self) -> list[int]:
        return sorted(self.cluster.nodes)

    def state(self, node_id: int) -> str:
        return self.cluster.state_of(node_id)

    def dashboard(self, node_id: int) -> str:
        return self.cluster.node(node_id).dashboard

    async def topology(self, node_id: int) -> dict[str, Any] | None:
        return await self.cluster.topology(node_id, timeout=2.0)

    async def kill(self, node_id: int) -> None:
        await self.cluster.kill(node_id)

    async def stop(self, node_id: int) -> None:
        await self.cluster.stop(node_id)

    def pause(self, node_id: int) -> None:
        self.cluster.pause(node_id)

    def resume(self, node_id: int) -> None:
        self.cluster.resume(node_id)

    async def start(self, node_id: int) -> None:
        raise ClusterError(f"node {node_id}: a cluster named by a hostfile starts no process")

    async def add(self, induct: bool) -> int:
        raise ClusterError("a cluster named by a hostfile starts no process: no node is added")

    async def partition(self, groups: Sequence[Sequence[int]]) -> None:
        await self.cluster.partition(groups)

    async def heal(self) -> None:
        await self.cluster.heal()

    async def fault(self, node_id: int, kind: str, value: float) -> None:
        await self.cluster.faults(node_id, kind, value=value)


async def converge(nodes: Nodes, timeout: float) -> float:
    """Rule 3: seconds until every live node lists every live node alive; ClusterError saying
    how far it got when ``timeout`` passes first."""
    began = time.monotonic()
    while True:
        live = [i for i in nodes.ids() if nodes.state(i) != "gone"]
        agree = await _agreeing(nodes, live)
        took = time.monotonic() - began
        if agree == len(live):
            return took
        if took > timeout:
            raise ClusterError(
                f"the cluster has not converged within {timeout:g}s: {agree} of "
                f"{len(live)} nodes list all {len(live)} alive"
            )
        await trio.sleep(0.25)


async def _agreeing(nodes: Nodes, live: list[int]) -> int:
    """How many of ``live`` list exactly ``live`` alive (asked at once)."""
    bodies: dict[int, dict[str, Any] | None] = {}

    async def ask(i: int) -> None:
        bodies[i] = await nodes.topology(i)

    async with trio.open_nursery() as nursery:
        for i in live:
            nursery.start_soon(ask, i)
    return sum(1 for body in bodies.values() if body is not None and _alive(body) == set(live))


def _alive(body: dict[str, Any]) -> set[int]:
    return {
        int(n["node_id"])
        for n in body.get("nodes", ())
        if isinstance(n, dict) and n.get("state") == "alive" and type(n.get("node_id")) is int
    }
