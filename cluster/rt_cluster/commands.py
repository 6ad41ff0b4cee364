"""The ``rt_cluster`` command handlers: one function per command, taking the parsed arguments.

Rules:
1. A handler returns the exit status (0) or raises: ``BadInput`` (``UsageError`` among them) for
   a user mistake, ``ClusterError`` for a failed operation; ``cli.main`` maps them to 2 and 1.
2. Every change to a cluster is recorded by ``cluster.local`` as it happens (locked, re-read,
   atomic), so concurrent commands (``up --foreground`` and a ``restart``) never lose each
   other's processes; nothing here writes the record.
3. ``up`` (up.py) turns SIGINT and SIGTERM into a cancellation: a launch cut short, or the end
   of ``--foreground``, ends every process of the cluster before ``up`` exits.
4. Clusters are reached only through ``cluster.local``; ``scenarios`` is imported only by the
   ``scenario`` command.
5. A cluster whose nodes live in namespaces (``up --netns``) is refused by every command but
   ``down`` once its bridge is gone, before anything is sent (clusters.py).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from cluster.local import (
    MAX_NODES,
    BadInput,
    ClusterError,
    LocalCluster,
    NodeRecord,
    clusters_home,
    cut_nodes,
    live_members,
    load_record,
)

from .clusters import (
    UsageError,
    cluster_names,
    command_for,
    converge_live,
    live_state,
    node_record,
    open_cluster,
    stray_members,
    target_nodes,
)
from .output import out, real_and_simulated, status_lines, table
from .up import cmd_up
from .watch import look

__all__ = ["ASYNC_COMMANDS", "UsageError", "cluster_names", "cmd_list", "cmd_scenario"]


# ---- the cluster as a whole -----------------------------------------------------------------


async def cmd_status(args: argparse.Namespace) -> int:
    cluster = open_cluster(args.name)
    rec = cluster.record
    strays = stray_members(cluster)
    seen = await look(cluster)
    cuts = cut_nodes(rec)
    if args.json:
        nodes = []
        for n in rec.nodes:
            faults = getattr(seen.get(n.node_id), "faults", None)
            nodes.append(
                {
                    **n.to_status(live_state(n)),
                    "host": rec.host_of(n),
                    "faults": faults,
                    "cut_from": cuts.get(n.node_id),
                }
            )
        strays_json = [{"pid": m.pid, "node_id": m.node_id} for m in strays]
        network = None if rec.network is None else rec.network.to_status()
        body = {"name": rec.name, "nodes": nodes, "strays": strays_json, "network": network}
        out(json.dumps(body, indent=2))
        return 0
    rows = []
    for n in rec.nodes:
        node = seen.get(n.node_id)
        alive = node.alive_count() if node is not None else None
        state = live_state(n)
        over = n.ended is not None and state not in ("running", "paused")
        ended = n.ended.describe() if over and n.ended is not None else "-"
        faults = "-" if node is None else node.faults_cell()
        if rec.network is not None:
            faults = real_and_simulated(cuts.get(n.node_id), faults)
        rows.append(
            (
                n.node_id,
                n.pid,
                state,
                ended,
                rec.host_of(n),
                n.runtime_port,
                "-" if alive is None else alive,
                faults,
                n.dashboard or "-",
            )
        )
    out(f"cluster {rec.name!r} ({rec.directory})")
    header = (
        "node",
        "pid",
        "state",
        "ended",
        "host",
        "runtime",
        "sees alive",
        "faults",
        "dashboard",
    )
    out(table(rows, header))
    for line in status_lines(rec, strays):
        out(line)
    return 0


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
    out(f"cluster {args.name!r}: stopped {len(ended)} node processes; none left running")
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
        rows.append((rec.name, len(rec.nodes), running, rec.directory))
    if not rows:
        out(f"no clusters under {home}")
    else:
        out(table(rows, ("name", "nodes", "running", "directory")))
    return 0


# ---- one node -------------------------------------------------------------------------------


async def cmd_node(args: argparse.Namespace) -> int:
    cluster = open_cluster(args.name)
    nid = args.node
    _check_node_command(cluster, args.command, node_record(cluster, nid))
    if args.command == "kill":
        await cluster.kill(nid)
        msg = f"node {nid} killed (SIGKILL)"
    elif args.command == "stop":
        await cluster.stop(nid)
        msg = f"node {nid} stopped"
    elif args.command == "pause":
        cluster.pause(nid)
        msg = (
            f"node {nid} paused (SIGSTOP); resume it with: {command_for(cluster, f'resume {nid}')}"
        )
    elif args.command == "resume":
        cluster.resume(nid)
        msg = f"node {nid} resumed (SIGCONT)"
    else:
        began = time.monotonic()
        rec = await cluster.restart(nid, hard=args.kill)
        msg = f"node {nid} restarted: pid {rec.pid}"
        if not args.no_wait:
            _, took = await converge_live(cluster, began)
            msg += f"; converged {took:.1f}s after the restart began"
    out(msg)
    return 0


def _check_node_command(cluster: LocalCluster, command: str, rec: NodeRecord) -> None:
    """Refuse what would do nothing, rather than claim it was done: a node that does not run
    (kill, stop, pause, resume), pause of a paused node, resume of a running one."""
    if command == "restart":
        return
    cluster.require_live(rec)
    state = cluster.state_of(rec)
    if command == "pause" and state == "paused":
        raise UsageError(
            f"node {rec.node_id} is already paused; resume it with: "
            f"{command_for(cluster, f'resume {rec.node_id}')}"
        )
    if command == "resume" and state != "paused":
        raise UsageError(f"node {rec.node_id} is not paused (it is {state}); nothing to resume")


async def cmd_add(args: argparse.Namespace) -> int:
    cluster = open_cluster(args.name)
    began = time.monotonic()
    rec = await cluster.add(induct=args.induct)
    msg = f"node {rec.node_id} added: pid {rec.pid}, dashboard {rec.dashboard or '-'}"
    if not args.no_wait:
        count, took = await converge_live(cluster, began)
        msg += f"; {count} nodes converged {took:.1f}s after the start"
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
            node_record(cluster, i)
    missing = sorted({n.node_id for n in cluster.record.nodes} - seen)
    if missing:
        raise UsageError(f"node(s) {', '.join(map(str, missing))} are in no group; list every node")
    for note in await cluster.partition(groups):
        out(f"note: {note}")
    real = " (real: unreachable routes in the namespaces)" if cluster.record.network else ""
    out(f"partitioned{real}: " + " | ".join(",".join(map(str, g)) for g in groups))
    return 0


async def cmd_heal(args: argparse.Namespace) -> int:
    cluster = open_cluster(args.name)
    notes = await cluster.heal()
    for note in notes:
        out(f"note: {note}")
    out("healed: no partitions, loss or delay on any running node")
    return 0


async def cmd_fault(args: argparse.Namespace) -> int:
    cluster = open_cluster(args.name)
    value = args.percent if args.command == "loss" else args.ms
    if args.peer is not None:
        node_record(cluster, args.peer)
    targets = target_nodes(cluster, args.node)
    for nid in targets:
        await cluster.faults(node_record(cluster, nid), args.command, peer=args.peer, value=value)
    unit = "%" if args.command == "loss" else " ms"
    scope = f" to/from node {args.peer}" if args.peer is not None else ""
    out(f"{args.command} {value:g}{unit}{scope} on node(s) {', '.join(map(str, targets))}")
    return 0


# ---- scenarios ------------------------------------------------------------------------------


def cmd_scenario(args: argparse.Namespace) -> int:
    from scenarios import run_scenario_cli  # scenarios -> cluster; imported only here

    if args.n is not None and args.n > MAX_NODES and not args.sim:
        raise BadInput(f"-n {args.n}: real clusters have at most {MAX_NODES} nodes (--sim: more)")
    if args.properties:
        from scenarios.explore import load_property

        for name in args.properties:
            try:
                load_property(name)  # given here: a file may name it (properties rule 3)
            except ValueError as exc:
                raise BadInput(str(exc)) from None
    return int(
        run_scenario_cli(
            args.file,
            sim=args.sim,
            seed=args.seed,
            out=args.out,
            n=args.n,
            runs=args.runs,
            hostfile=args.hostfile,
        )
    )


def cmd_explore(args: argparse.Namespace) -> int:
    from scenarios.explore import BUILT_IN, Options, Search, run_search

    swim = {key: (low, high) for key, low, high in args.swim}
    try:
        Path(args.out).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"--out {args.out}: {exc.strerror or exc}") from None
    search = Search(
        options=Options(args.n[0], args.n[1], swim),
        budget_s=args.budget_s if args.budget_s is not None or args.runs else 60.0,
        runs=args.runs,
        seed=args.seed,
        jobs=args.jobs,
        out=Path(args.out),
        properties=args.properties or list(BUILT_IN),
    )
    try:
        return run_search(search, say=lambda line: print(line, flush=True))
    except ValueError as exc:
        raise BadInput(str(exc)) from None


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
    "heal": cmd_heal,
    "loss": cmd_fault,
    "delay": cmd_fault,
}
