"""Run a scenario against a cluster that is already running, named by its hostfile
(``rt_cluster scenario FILE --hostfile H``).

Rules:
1. Node ids are hostfile offsets; the scenario is read at the hostfile's size.
2. Before any node is contacted, every step is checked against where its node runs
   (``refuse_steps``): faults (partition, heal, loss, delay) and HTTP steps work on any host;
   kill, stop, pause and resume need the node's process on this machine; restart and add
   start processes, which only a cluster started by ``rt_cluster up`` (the hostfile in its
   directory, its record matching) knows how to do. A refusal names the step and the node.
3. Then every node's identity is asked over the RPC (dashboard URL, pid), the cluster must
   have converged, and the steps are played as in any real run (``real.play``): events over
   HTTP, actions on the host's monotonic clock.
4. Nothing is launched and nothing is torn down. What the run itself left behind is undone:
   a node it paused is resumed, and faults it left in force are healed (both said).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import trio

from cluster.local import BadInput, ClusterError, ClusterRecord, LocalCluster
from cluster.local.attached import (
    AttachedCluster,
    AttachedNode,
    managing_record,
    read_hostfile,
)

from .nodes import AttachedNodes, ClusterNodes, Nodes, converge
from .real import OnAction, Say, play
from .spec import Scenario, Step
from .trace import Action, Trace

__all__ = ["CONVERGE_TIMEOUT", "Target", "refuse_steps", "run_attached", "target_of"]

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


async def _nodes_of(target: Target) -> Nodes:
    """Rule 3: the nodes, identified over the RPC."""
    attached = AttachedCluster(target.nodes, target.hostfile)
    if target.record is None:
        await attached.identify()
        return AttachedNodes(attached)
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
    return ClusterNodes(cluster)


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
    nodes = await _nodes_of(target)
    took = await converge(nodes, CONVERGE_TIMEOUT)
    if say is not None:
        kind = "an rt_cluster cluster" if target.record is not None else "a running cluster"
        say(
            f"{kind} of {len(target.nodes)} nodes ({hostfile}), converged in {took:.1f} s; "
            "steps start now"
        )
    seen: list[Action] = []

    def hear(a: Action, t0: float) -> None:
        seen.append(a)
        if on_action is not None:
            on_action(a, t0)

    # A run cut short may have left a fault half made (no action recorded): heal then.
    heal = any(s.kind in FAULT_KINDS for s in scenario.steps)
    try:
        played = await play(scenario, nodes, on_action=hear, say=say)
        heal = False
    finally:
        with trio.CancelScope(shield=True):
            await _leave_as_found(nodes, seen, say, heal=heal)
    return played.trace(scenario, tuple(range(len(target.nodes))), 0.0)


async def _leave_as_found(
    nodes: Nodes, actions: list[Action], say: Say | None, *, heal: bool = False
) -> None:
    """Rule 4: resume what the run paused and heal the faults it left in force (``heal``: a
    run cut short, which may have been injecting one)."""
    notes = []
    paused: set[int] = set()
    for a in actions:
        if a.kind == "pause":
            paused.update(a.nodes)
        elif a.kind == "resume":
            paused.difference_update(a.nodes)
    for i in sorted(paused):
        if nodes.state(i) == "paused":
            try:
                nodes.resume(i)
                notes.append(f"resumed node {i}, which the run left paused")
            except ClusterError as exc:
                notes.append(str(exc))
    faults = [a for a in actions if a.kind in FAULT_KINDS]
    if heal or (faults and faults[-1].kind != "heal"):
        try:
            await nodes.heal()
            notes.append("healed the faults the run left in force")
        except ClusterError as exc:
            notes.append(f"could not heal every node: {exc}")
    if say is not None:
        for note in notes:
            say(f"note: {note}")


FAULT_KINDS = ("partition", "heal", "loss", "delay")
