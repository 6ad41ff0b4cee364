"""The cluster and the nodes an ``rt_cluster`` command names, looked up before it acts.

Rules:
1. A name with no record, or a node id the record does not hold, is a ``UsageError`` that lists
   the names or ids there are; nothing is sent before that check.
2. A cluster whose nodes live in namespaces (``up --netns``) is refused once its bridge is gone
   (``LocalCluster.require_network``), unless the command asks for it anyway (``down``).
3. In a cluster with Serf agents a number names a node or an agent (``member_record``); an
   operation only a node can do (loss, delay) refuses an agent, naming it.
"""

from __future__ import annotations

from cluster.local import (
    AgentRecord,
    BadInput,
    LocalCluster,
    Member,
    NodeRecord,
    cluster_dir,
    clusters_home,
    load_record,
    open_local,
    process_state,
    read_record,
)

from .hints import unknown_cluster, unknown_node

__all__ = [
    "UsageError",
    "cluster_names",
    "command_for",
    "converge_live",
    "live_state",
    "member_record",
    "node_record",
    "open_cluster",
    "stray_members",
    "target_nodes",
]


class UsageError(BadInput):
    """Bad input on the command line (exit status 2)."""


def cluster_names() -> list[str]:
    """The clusters under the clusters' home (those with a record), sorted."""
    home = clusters_home()
    return sorted(d.parent.name for d in home.glob("*/cluster.json")) if home.is_dir() else []


def open_cluster(name: str, *, reach: bool = True) -> LocalCluster:
    """The cluster named ``name``, its states refreshed; unless ``reach`` is False, refused
    when its nodes' addresses are out of reach (rule 2)."""
    if read_record(cluster_dir(name)) is None:
        raise UsageError(unknown_cluster(name, cluster_names(), clusters_home()))
    cluster = open_local(load_record(name))
    cluster.refresh_states()
    if reach:
        cluster.require_network()
    return cluster


def member_record(cluster: LocalCluster, number: int) -> NodeRecord | AgentRecord:
    """The record of the node or Serf agent numbered ``number``; UsageError listing the
    numbers there are when it has none."""
    rec = cluster.record
    if all(a.index != number for a in rec.agents):
        return node_record(cluster, number)
    return rec.member(number)


def node_record(cluster: LocalCluster, node_id: int) -> NodeRecord:
    """The node's record; UsageError listing the ids there are when it has none (and naming
    the agent, when the number is a Serf agent's)."""
    rec = cluster.record
    for a in rec.agents:
        if a.index == node_id:
            raise UsageError(
                f"member {node_id} of cluster {rec.name!r} is Serf agent {a.name}: only "
                "rtsim nodes inject faults (loss, delay, cuts, clocks, disks)"
            )
    if all(n.node_id != node_id for n in rec.nodes):
        agents = [a.index for a in rec.agents]
        raise UsageError(unknown_node(rec.name, node_id, (n.node_id for n in rec.nodes), agents))
    return rec.node(node_id)


def command_for(cluster: LocalCluster, command: str) -> str:
    """``rt_cluster COMMAND``, with ``--name`` unless it is the default cluster."""
    name = cluster.record.name
    return f"rt_cluster {command}" + ("" if name == "default" else f" --name {name}")


def target_nodes(cluster: LocalCluster, node: str) -> list[int]:
    if node == "all":
        live = [n.node_id for n in cluster.live_nodes()]
        if not live:
            raise UsageError(f"no node of cluster {cluster.record.name!r} is running")
        return live
    rec = node_record(cluster, int(node))  # a number: checked by the parser
    cluster.require_live(rec.node_id)
    return [rec.node_id]


def live_state(rec: NodeRecord | AgentRecord) -> str:
    st = process_state(rec.pid, rec.started)
    if st == "gone":
        return rec.state if rec.state in ("stopped", "killed", "failed") else "exited"
    return st


async def converge_live(cluster: LocalCluster, started: float) -> tuple[int, float]:
    """Wait until every live member (node, or Serf agent) lists every live member alive: (how
    many, seconds since ``started``, the ``time.monotonic()`` at which the command began)."""
    agents = {a.index for a in cluster.record.agents if cluster.state_of(a.index) != "gone"}
    expect = {n.node_id for n in cluster.live_nodes()} | agents
    return len(expect), await cluster.wait_converged(expect, 60.0, started=started)


def stray_members(cluster: LocalCluster) -> list[Member]:
    """Live processes of the cluster that are no node's current process."""
    current = {(n.pid, n.started) for n in cluster.record.nodes}
    current |= {(a.pid, a.started) for a in cluster.record.agents}
    return [m for m in cluster.running() if m.key not in current]
