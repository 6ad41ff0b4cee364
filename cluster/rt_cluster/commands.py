"""The ``rt_cluster`` command handlers: one function per command, taking the parsed arguments.

Rules:
1. A handler returns the exit status (0) or raises: ``BadInput`` (``UsageError`` among them) for
   a user mistake, ``ClusterError`` for a failed operation; ``cli.main`` maps them to 2 and 1.
2. Every change to a cluster is recorded by ``cluster.local`` as it happens (locked, re-read,
   atomic), so concurrent commands (``up --foreground`` and a ``restart``) never lose each
   other's processes; nothing here writes the record.
3. ``up`` (up.py) turns SIGINT and SIGTERM into a cancellation: a launch cut short, or the end
   of ``--foreground``, ends every process of the cluster before ``up`` exits.
4. Clusters are reached only through ``cluster.local``. The commands that run scenarios are
   the floor above's (``scenarios.command``).
5. A cluster whose nodes live in namespaces (``up --netns``) is refused by every command but
   ``down`` once its bridge is gone, before anything is sent (clusters.py).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Awaitable, Callable

from cluster.local import (
    AgentRecord,
    ClusterError,
    LocalCluster,
    MixedCluster,
    NodeRecord,
    clusters_home,
    live_members,
    load_record,
)

from .clusters import (
    UsageError,
    cluster_names,
    command_for,
    converge_live,
    member_record,
    node_record,
    open_cluster,
    target_nodes,
)
from .output import out, table
from .status import cmd_status
from .up import cmd_up

__all__ = ["ASYNC_COMMANDS", "UsageError", "cluster_names", "cmd_list"]


# ---- the cluster as a whole -----------------------------------------------------------------


async def cmd_down(args: argparse.Namespace) -> int:
    cluster = open_cluster(args.name, reach=False)
    ended = await cluster.down(grace=args.grace)
    # A node another command started while we stopped the others: once more, then refuse.
    if cluster.running():
        ended += await cluster.down(grace=args.grace)
    left = cluster.running()
    if left:
        raise ClusterError(
            f"cluster {args.name!r}: still running: {', '.join(m.label() for m in left)} "
            f"(another command keeps starting nodes?)"
        )
    agents = sum(1 for m in ended if m.agent)
    what = f"{len(ended) - agents} node and {agents} Serf agent" if agents else f"{len(ended)} node"
    out(f"cluster {args.name!r}: stopped {what} processes; none left running")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    home = clusters_home()
    rows = []
    for name in cluster_names():
        try:
            rec = load_record(name)
        except ClusterError:
            continue
        running = len(live_members(rec.directory, rec))
        members = f"{len(rec.nodes)}+{len(rec.agents)} serf" if rec.agents else len(rec.nodes)
        rows.append((rec.name, members, running, rec.directory))
    if not rows:
        out(f"no clusters under {home}")
    else:
        out(table(rows, ("name", "nodes", "running", "directory")))
    return 0


# ---- one node -------------------------------------------------------------------------------


async def cmd_node(args: argparse.Namespace) -> int:
    cluster = open_cluster(args.name)
    nid = args.node
    rec = member_record(cluster, nid)
    who = f"agent {rec.name}" if isinstance(rec, AgentRecord) else f"node {nid}"
    _check_node_command(cluster, args.command, rec, who)
    if args.command == "kill":
        await cluster.kill(nid)
        msg = f"{who} killed (SIGKILL)"
    elif args.command == "stop":
        await cluster.stop(nid)
        msg = f"{who} stopped" + (" (SIGINT: it left)" if isinstance(rec, AgentRecord) else "")
    elif args.command == "pause":
        cluster.pause(nid)
        msg = f"{who} paused (SIGSTOP); resume it with: {command_for(cluster, f'resume {nid}')}"
    elif args.command == "resume":
        cluster.resume(nid)
        msg = f"{who} resumed (SIGCONT)"
    else:
        began = time.monotonic()
        if isinstance(rec, AgentRecord) and isinstance(cluster, MixedCluster):
            pid = (await cluster.agent_restart(nid, hard=args.kill)).pid
        else:
            pid = (await cluster.restart(nid, hard=args.kill)).pid
        msg = f"{who} restarted: pid {pid}"
        if not args.no_wait:
            _, took = await converge_live(cluster, began)
            msg += f"; converged {took:.1f}s after the restart began"
    out(msg)
    return 0


def _check_node_command(
    cluster: LocalCluster, command: str, rec: NodeRecord | AgentRecord, who: str
) -> None:
    """Refuse what would do nothing, rather than claim it was done: a member that does not
    run (kill, stop, pause, resume), pause of a paused one, resume of a running one."""
    if command == "restart":
        return
    number = rec.index if isinstance(rec, AgentRecord) else rec.node_id
    cluster.require_live(number)
    state = cluster.state_of(number)
    if command == "pause" and state == "paused":
        raise UsageError(
            f"{who} is already paused; resume it with: {command_for(cluster, f'resume {number}')}"
        )
    if command == "resume" and state != "paused":
        raise UsageError(f"{who} is not paused (it is {state}); nothing to resume")


async def cmd_add(args: argparse.Namespace) -> int:
    cluster = open_cluster(args.name)
    began = time.monotonic()
    rec = await cluster.add(induct=args.induct)
    msg = f"node {rec.node_id} added: pid {rec.pid}, dashboard {rec.dashboard or '-'}"
    if not args.no_wait:
        count, took = await converge_live(cluster, began)
        every = "members" if cluster.record.agents else "nodes"
        msg += f"; {count} {every} converged {took:.1f}s after the start"
    out(msg)
    return 0


# ---- faults ---------------------------------------------------------------------------------


async def cmd_partition(args: argparse.Namespace) -> int:
    cluster = open_cluster(args.name)
    groups: list[list[int]] = args.groups
    if len(groups) < 2:
        raise UsageError("a partition needs at least two groups, e.g. 0,1 2,3,4")
    seen: set[int] = set()
    for g in groups:
        for i in g:
            if i in seen:
                raise UsageError(f"node {i} is in more than one group")
            seen.add(i)
            member_record(cluster, i)
    everyone = {n.node_id for n in cluster.record.nodes} | {a.index for a in cluster.record.agents}
    missing = sorted(everyone - seen)
    if missing:
        raise UsageError(f"node(s) {', '.join(map(str, missing))} are in no group; list every node")
    for note in await cluster.partition(groups):
        out(f"note: {note}")
    real = " (real: unreachable routes in the namespaces)" if cluster.record.network else ""
    if cluster.record.agents:
        real = " (by the rtsim nodes, both directions of each node's paths across groups)"
    out(f"partitioned{real}: " + " | ".join(",".join(map(str, g)) for g in groups))
    return 0


async def cmd_cut(args: argparse.Namespace) -> int:
    cluster = open_cluster(args.name)
    src: list[int] = args.src
    dst: list[int] = args.dst
    for i in (*src, *dst):
        member_record(cluster, i)
    for note in await cluster.cut(src, dst):
        out(f"note: {note}")
    real = " (real: unreachable routes in FROM's namespaces)" if cluster.record.network else ""
    out(f"cut{real}: {','.join(map(str, src))} -> {','.join(map(str, dst))} (one way)")
    return 0


async def cmd_clock(args: argparse.Namespace) -> int:
    cluster = open_cluster(args.name)
    node_record(cluster, args.node)
    await cluster.clock(args.node, args.offset, args.rate)
    shown = f"offset {args.offset:+g} s, rate {args.rate:g}"
    out(f"clock of node {args.node}: {shown} (kept when it restarts; heal resets it)")
    return 0


async def cmd_disk(args: argparse.Namespace) -> int:
    cluster = open_cluster(args.name)
    node_record(cluster, args.node)
    await cluster.disk(args.node, args.pool, args.latency_ms, args.errors, args.full)
    full = ", full" if args.full else ""
    out(
        f"disk {args.pool} of node {args.node}: latency {args.latency_ms:g} ms, "
        f"errors {args.errors:g}%{full}"
    )
    return 0


async def cmd_heal(args: argparse.Namespace) -> int:
    cluster = open_cluster(args.name)
    notes = await cluster.heal()
    for note in notes:
        out(f"note: {note}")
    out("healed: no partitions, cuts, loss, delay, clock or disk faults on any running node")
    return 0


async def cmd_fault(args: argparse.Namespace) -> int:
    cluster = open_cluster(args.name)
    value = args.percent if args.command == "loss" else args.ms
    peer = None if args.peer is None else member_record(cluster, args.peer)
    targets = target_nodes(cluster, args.node)
    for nid in targets:
        node_record(cluster, nid)  # a node, not an agent
        peer_id = args.peer
        if isinstance(peer, AgentRecord) and isinstance(cluster, MixedCluster):
            peer_id = await cluster.agent_id_at(nid, peer.index)  # the id this node gives it
        await cluster.faults(nid, args.command, peer=peer_id, value=value)
    unit = "%" if args.command == "loss" else " ms"
    scope = f" to/from node {args.peer}" if peer is not None else ""
    if isinstance(peer, AgentRecord):
        scope = f" to/from agent {peer.name}"
    out(f"{args.command} {value:g}{unit}{scope} on node(s) {', '.join(map(str, targets))}")
    return 0


ASYNC_COMMANDS: dict[str, Callable[[argparse.Namespace], Awaitable[int]]] = {
    "up": cmd_up,
    "status": cmd_status,
    "down": cmd_down,
    "kill": cmd_node,
    "stop": cmd_node,
    "pause": cmd_node,
    "resume": cmd_node,
    "restart": cmd_node,
    "add": cmd_add,
    "partition": cmd_partition,
    "cut": cmd_cut,
    "clock": cmd_clock,
    "disk": cmd_disk,
    "heal": cmd_heal,
    "loss": cmd_fault,
    "delay": cmd_fault,
}
