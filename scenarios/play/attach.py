"""Run a scenario against a cluster that is already running, named by its hostfile
(``rt_cluster scenario FILE --hostfile H``).

Rules:
1. Node ids are hostfile offsets; the scenario is read at the hostfile's size.
2. Before any node is contacted, every step is checked against where its node runs
   (``refuse_steps``): faults (partition, cut, clock, disk, heal, loss, delay) and HTTP steps
   work on any host; kill, stop, pause and resume need the node's process on this machine;
   restart and add start processes, which only a cluster started by ``rt_cluster up`` (the
   hostfile in its directory, its record matching) knows how to do. A refusal names the
   step and the node.
3. Then every node's identity is asked over the RPC (dashboard URL, pid), the cluster must
   have converged, and the steps are played by the one engine (``engine``) on a ``Cluster``
   over its backend: ``realcluster.RealBackend.over`` the record of an ``rt_cluster up``
   cluster, else ``AttachedBackend`` (the hostfile's nodes: faults everywhere, signals on
   this machine, nothing started). Events over HTTP, actions on the host's monotonic clock.
4. Nothing is launched and nothing is torn down. What the run itself left behind is undone:
   a node it paused is resumed, and faults it left in force are healed (both said).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

import swim
from cluster.local import BadInput, ClusterError, ClusterRecord, LocalCluster
from cluster.local.attached import (
    AttachedCluster,
    AttachedNode,
    managing_record,
    read_hostfile,
)

from ..format.spec import Scenario, Step
from ..judge.trace import Action, Trace
from .backend import Backend
from .chaos import Cluster
from .engine import OnAction, Say, play
from .processes import ProcessBackend, new_client
from .realcluster import RealBackend

__all__ = [
    "CONVERGE_TIMEOUT",
    "AttachedBackend",
    "Target",
    "refuse_steps",
    "run_attached",
    "target_of",
]

CONVERGE_TIMEOUT = 30.0  # seconds a running cluster gets to show every node alive to all
SIGNAL_STEPS = {"kill": "kills", "stop": "stops", "pause": "pauses", "resume": "resumes"}
START_STEPS = {"restart": "restarts", "add": "adds"}


@dataclass(frozen=True, slots=True)
class Target:
    """A running cluster as its hostfile names it, read without contacting any node."""

    hostfile: str
    nodes: tuple[AttachedNode, ...]
    record: ClusterRecord | None  # the rt_cluster record whose hostfile this is, if any

    def node(self, node_id: int) -> AttachedNode | None:
        return self.nodes[node_id] if 0 <= node_id < len(self.nodes) else None


def target_of(hostfile: str) -> Target:
    """Read the hostfile (and find the record of the cluster it belongs to, if any);
    ``BadInput`` naming the file when it cannot be used."""
    path = Path(os.path.expanduser(hostfile))
    if not path.is_file():
        raise BadInput(f"hostfile {hostfile}: no such file")
    nodes = read_hostfile(path)
    return Target(str(path), nodes, managing_record(path, nodes))


def refuse_steps(scenario: Scenario, target: Target) -> None:
    """Rule 2: ``ClusterError`` naming the first step this cluster cannot carry out."""
    for step in scenario.steps:
        if step.kind in START_STEPS and target.record is None:
            what = f"{START_STEPS[step.kind]} {_whom(step)}"
            raise ClusterError(
                f"{step.label()} {what}: starting a node process needs a cluster started by "
                f"'rt_cluster up' (run with the hostfile in its directory); {target.hostfile} "
                "is no such cluster's"
            )
        if step.kind not in SIGNAL_STEPS or target.record is not None:
            continue
        ids = range(scenario.nodes) if step.target == "leader" else [step.target]
        for i in ids:
            node = target.node(i) if isinstance(i, int) else None
            if node is not None and not node.local:
                who = "the leader, which may be " if step.target == "leader" else ""
                raise ClusterError(
                    f"{step.label()} {SIGNAL_STEPS[step.kind]} {who}node {i} on another host "
                    f"({node.where}): a signal reaches only processes of this machine (faults "
                    "work on any host)"
                )


def _whom(step: Step) -> str:
    return "a node" if step.kind == "add" else f"node {step.target}"


class AttachedBackend(ProcessBackend):
    """A hostfile's nodes: faults everywhere, signals on this machine, nothing started
    (``processes``; a node on another host counts as running: its faults still apply)."""

    def __init__(self, cluster: AttachedCluster) -> None:
        self.cluster = cluster
        super().__init__(cluster, new_client(), 0.0, time.monotonic())

    def _ids(self) -> list[int]:
        return sorted(self.cluster.nodes)

    def _running(self, i: int) -> bool:
        return self.cluster.state_of(i) in ("running", "unknown")

    def _url(self, i: int) -> str:
        return self.cluster.node(i).dashboard

    async def _topology(self, i: int, timeout: float) -> dict[str, Any] | None:
        return await self.cluster.topology(i, timeout=timeout)

    async def _fault(self, i: int, kind: str, value: float) -> None:
        await self.cluster.faults(i, kind, value=value)

    async def restart(self, i: int) -> None:
        raise ClusterError(f"node {i}: a cluster named by a hostfile starts no process")

    async def add(self, induct: bool = False) -> int:
        raise ClusterError("a cluster named by a hostfile starts no process: no node is added")

    async def aclose(self) -> None:
        await self.client.aclose()  # rule 4: nothing was launched, nothing is torn down


async def _backend_of(target: Target) -> Backend:
    """Rule 3: the nodes, identified over the RPC."""
    attached = AttachedCluster(target.nodes, target.hostfile)
    if target.record is None:
        await attached.identify()
        return AttachedBackend(attached)
    cluster = LocalCluster(target.record)
    cluster.refresh_states()
    cluster.require_network()  # namespaced nodes: nothing is sent once their bridge is gone
    await attached.identify()
    for node in attached.nodes.values():
        recorded = cluster.record.node(node.node_id).pid
        if recorded != node.pid:
            raise ClusterError(
                f"node {node.node_id} answers as pid {node.pid}, but the record of cluster "
                f"{cluster.record.name!r} says pid {recorded}: the record is stale"
            )
    return RealBackend.over(cluster)


async def run_attached(
    scenario: Scenario,
    hostfile: str,
    *,
    on_action: OnAction | None = None,
    say: Say | None = None,
) -> Trace:
    """Play ``scenario`` on the running cluster of ``hostfile``; the trace of the run."""
    target = target_of(hostfile)
    if len(target.nodes) != scenario.nodes:
        raise BadInput(
            f"the scenario is for {scenario.nodes} nodes, the hostfile names {len(target.nodes)}"
        )
    refuse_steps(scenario, target)
    backend = await _backend_of(target)
    config = swim.SwimConfig.from_mapping(scenario.swim)
    c = Cluster(backend, scenario.nodes, scenario.seed, config, strict=False)
    try:
        took = await _converged(c)
        if say is not None:
            kind = "an rt_cluster cluster" if target.record is not None else "a running cluster"
            say(
                f"{kind} of {len(target.nodes)} nodes ({hostfile}), converged in {took:.1f} s; "
                "steps start now"
            )
        # A run cut short may have left a fault half made (no action recorded): heal then.
        heal = any(s.kind in FAULT_KINDS for s in scenario.steps)
        try:
            trace = await play(c, scenario, on_action=on_action, say=say)
            heal = False
        finally:
            with trio.CancelScope(shield=True):
                await _leave_as_found(c, say, heal=heal)
        return trace
    finally:
        with trio.CancelScope(shield=True):
            await backend.aclose()


async def _converged(c: Cluster) -> float:
    """Seconds until every running node lists every running node alive; ``ClusterError``
    saying who sees what when ``CONVERGE_TIMEOUT`` passes first."""
    try:
        return await c.wait_converged(within=CONVERGE_TIMEOUT)
    except AssertionError as exc:  # WaitTimeout
        raise ClusterError(f"the cluster has not converged: {exc}") from None


async def _leave_as_found(c: Cluster, say: Say | None, *, heal: bool = False) -> None:
    """Rule 4: resume what the run paused and heal the faults it left in force (``heal``: a
    run cut short, which may have been injecting one)."""
    notes = []
    for i in [i for i in c.nodes if c.state(i) == "paused"]:
        try:
            await c.backend.resume(i)
            notes.append(f"resumed node {i}, which the run left paused")
        except ClusterError as exc:
            notes.append(str(exc))
    if heal or _in_force(c.actions):
        try:
            await c.backend.heal()
            notes.append("healed the faults the run left in force")
        except ClusterError as exc:
            notes.append(f"could not heal every node: {exc}")
    if say is not None:
        for note in notes:
            say(f"note: {note}")


def _in_force(actions: list[Action]) -> bool:
    """Whether a fault is in force after ``actions``: one was made and none healed since."""
    faults = [a for a in actions if a.kind in FAULT_KINDS]
    return bool(faults) and faults[-1].kind != "heal"


FAULT_KINDS = ("partition", "cut", "clock", "disk", "heal", "loss", "delay")
