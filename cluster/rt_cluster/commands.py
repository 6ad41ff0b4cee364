"""The ``rt_cluster`` command handlers: one function per command, taking the parsed arguments.

Rules:
1. A handler returns the exit status (0) or raises: ``BadInput`` (``UsageError`` among them) for
   a user mistake, ``ClusterError`` for a failed operation; ``cli.main`` maps them to 2 and 1.
2. A handler that changed a cluster saves its record before returning, also when it fails.
3. Clusters are reached only through ``cluster.local``; ``scenarios`` is imported only by the
   ``scenario`` command.
"""

from __future__ import annotations

import argparse
import json
import signal
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from cluster.local import (
    BadInput,
    ClusterError,
    LocalCluster,
    NodeFailed,
    NodeRecord,
    cluster_dir,
    clusters_home,
    launch,
    load_record,
    plan_cluster,
    process_state,
    save_record,
    valid_name,
)

from .output import out, print_nodes, progress, summary, table

__all__ = ["ASYNC_COMMANDS", "UsageError", "cmd_list", "cmd_scenario"]


class UsageError(BadInput):
    """Bad input on the command line (exit status 2)."""


def _open(name: str) -> LocalCluster:
    cluster = LocalCluster(load_record(name))
    cluster.refresh_states()
    return cluster


def _target_nodes(cluster: LocalCluster, node: str) -> list[int]:
    if node == "all":
        return [n.node_id for n in cluster.live_nodes()]
    try:
        nid = int(node)
    except ValueError:
        raise UsageError(f"not a node id: {node!r} (use a node id or 'all')") from None
    cluster.record.node(nid)
    return [nid]


def _live_state(rec: NodeRecord) -> str:
    st = process_state(rec.pid, rec.started)
    if st == "gone":
        return rec.state if rec.state in ("stopped", "killed", "failed") else "exited"
    return st


async def _converge_live(cluster: LocalCluster) -> tuple[int, float]:
    """Wait until every live node lists every live node alive: (how many, seconds)."""
    expect = {n.node_id for n in cluster.live_nodes()}
    return len(expect), await cluster.wait_converged(expect, 60.0)


# ---- the cluster as a whole -----------------------------------------------------------------


def _refuse_if_running(name: str) -> None:
    try:
        old = load_record(name)
    except ClusterError:
        return
    running = [n for n in old.nodes if process_state(n.pid, n.started) != "gone"]
    if running:
        raise ClusterError(
            f"cluster {name!r} is already running ({len(running)} node processes, e.g. "
            f"node {running[0].node_id} pid {running[0].pid}); stop it first with: "
            f"rt_cluster down --name {name}"
        )


async def cmd_up(args: argparse.Namespace) -> int:
    name = valid_name(args.name)
    directory = cluster_dir(name)
    _refuse_if_running(name)
    record = plan_cluster(
        directory,
        name,
        args.n,
        base_port=args.base_port,
        runtime_base_port=args.runtime_base_port,
        config=args.config or "",
        viz=not args.no_viz,
    )
    cluster = LocalCluster(record, viz=not args.no_viz)
    out(f"starting cluster {name!r}: {args.n} nodes (files in {directory})")
    try:
        took = await launch(
            cluster,
            wait=not args.no_wait,
            timeout=args.timeout,
            progress=progress(False),
            on_spawned=save_record,
        )
    except NodeFailed as exc:
        save_record(cluster.record)
        raise ClusterError(f"{exc}\nno node of cluster {name!r} is left running") from None
    except ClusterError as exc:
        save_record(cluster.record)
        raise ClusterError(f"{exc}; no node of cluster {name!r} is left running") from None
    save_record(cluster.record)
    out()
    print_nodes(cluster.record)
    out()
    if took is not None:
        out(f"converged in {took:.1f}s: every node lists {args.n} alive")
    else:
        out("nodes are up (not waiting for convergence: --no-wait)")
    if args.foreground:
        return await _foreground(cluster)
    out(f"status: rt_cluster status --name {name}    stop: rt_cluster down --name {name}")
    return 0


async def _foreground(cluster: LocalCluster) -> int:
    name = cluster.record.name
    out("membership as each node sees it, every second; Ctrl-C stops the cluster")
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:

            async def wait_signal() -> None:
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(wait_signal)
            while True:
                out(await summary(cluster))
                await trio.sleep(1.0)
    out(f"stopping cluster {name!r} ...")
    with trio.CancelScope(shield=True):
        await cluster.down()
        save_record(cluster.record)
    out(f"cluster {name!r} is down: all {len(cluster.record.nodes)} processes ended")
    return 0


async def cmd_status(args: argparse.Namespace) -> int:
    rec = load_record(args.name)
    if args.json:
        doc = {"name": rec.name, "nodes": [n.to_status(_live_state(n)) for n in rec.nodes]}
        out(json.dumps(doc, indent=2))
        return 0
    cluster = LocalCluster(rec)
    ids = {n.node_id for n in rec.nodes}
    _, bodies = await cluster.converged(ids)
    rows = []
    for n in rec.nodes:
        body: Any = bodies.get(n.node_id)
        alive = (
            "-"
            if body is None
            else str(sum(1 for m in body.get("nodes", ()) if m.get("state") == "alive"))
        )
        rows.append((n.node_id, n.pid, _live_state(n), n.runtime_port, alive, n.dashboard or "-"))
    out(f"cluster {rec.name!r} ({rec.directory})")
    out(table(rows, ("node", "pid", "state", "runtime", "sees alive", "dashboard")))
    return 0


async def cmd_down(args: argparse.Namespace) -> int:
    cluster = _open(args.name)
    live = cluster.live_nodes()
    await cluster.down(grace=args.grace)
    save_record(cluster.record)
    out(f"cluster {args.name!r}: stopped {len(live)} node processes; none left running")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    home = clusters_home()
    rows = []
    for d in sorted(home.glob("*/cluster.json")) if home.is_dir() else []:
        try:
            rec = load_record(d.parent.name)
        except ClusterError:
            continue
        running = sum(process_state(n.pid, n.started) != "gone" for n in rec.nodes)
        rows.append((rec.name, len(rec.nodes), running, rec.directory))
    if not rows:
        out(f"no clusters under {home}")
    else:
        out(table(rows, ("name", "nodes", "running", "directory")))
    return 0


# ---- one node -------------------------------------------------------------------------------


async def cmd_node(args: argparse.Namespace) -> int:
    cluster = _open(args.name)
    nid = args.node
    cluster.record.node(nid)
    try:
        if args.command == "kill":
            await cluster.kill(nid)
            msg = f"node {nid} killed (SIGKILL)"
        elif args.command == "stop":
            await cluster.stop(nid)
            msg = f"node {nid} stopped"
        elif args.command == "pause":
            cluster.pause(nid)
            msg = f"node {nid} paused (SIGSTOP); resume with: rt_cluster resume {nid}"
        elif args.command == "resume":
            cluster.resume(nid)
            msg = f"node {nid} resumed (SIGCONT)"
        else:
            rec = await cluster.restart(nid, hard=args.kill)
            msg = f"node {nid} restarted: pid {rec.pid}"
            if not args.no_wait:
                _, took = await _converge_live(cluster)
                msg += f"; converged in {took:.1f}s"
    finally:
        save_record(cluster.record)
    out(msg)
    return 0


async def cmd_add(args: argparse.Namespace) -> int:
    cluster = _open(args.name)
    try:
        rec = await cluster.add(induct=args.induct)
        msg = f"node {rec.node_id} added: pid {rec.pid}, dashboard {rec.dashboard or '-'}"
        if not args.no_wait:
            count, took = await _converge_live(cluster)
            msg += f"; {count} nodes converged in {took:.1f}s"
    finally:
        save_record(cluster.record)
    out(msg)
    return 0


# ---- faults ---------------------------------------------------------------------------------


async def cmd_partition(args: argparse.Namespace) -> int:
    cluster = _open(args.name)
    groups: list[list[int]] = args.groups
    if len(groups) < 2:
        raise UsageError("a partition needs at least two groups, e.g. 0,1 2,3,4")
    seen: set[int] = set()
    for g in groups:
        for i in g:
            if i in seen:
                raise UsageError(f"node {i} is in more than one group")
            seen.add(i)
            cluster.record.node(i)
    missing = sorted({n.node_id for n in cluster.record.nodes} - seen)
    if missing:
        raise UsageError(f"node(s) {', '.join(map(str, missing))} are in no group; list every node")
    for note in await cluster.partition(groups):
        out(f"note: {note}")
    out("partitioned: " + " | ".join(",".join(map(str, g)) for g in groups))
    return 0


async def cmd_heal(args: argparse.Namespace) -> int:
    cluster = _open(args.name)
    notes = await cluster.heal()
    for note in notes:
        out(f"note: {note}")
    out("healed: no partitions, loss or delay on any running node")
    return 0


async def cmd_fault(args: argparse.Namespace) -> int:
    cluster = _open(args.name)
    value = args.percent if args.command == "loss" else args.ms
    if args.peer is not None:
        cluster.record.node(args.peer)
    targets = _target_nodes(cluster, args.node)
    for nid in targets:
        await cluster.faults(cluster.record.node(nid), args.command, peer=args.peer, value=value)
    unit = "%" if args.command == "loss" else " ms"
    scope = f" to/from node {args.peer}" if args.peer is not None else ""
    out(f"{args.command} {value:g}{unit}{scope} on node(s) {', '.join(map(str, targets))}")
    return 0


# ---- scenarios ------------------------------------------------------------------------------


def cmd_scenario(args: argparse.Namespace) -> int:
    from scenarios import run_scenario_cli  # scenarios -> cluster; imported only here

    return int(run_scenario_cli(args.file, sim=args.sim, seed=args.seed, out=args.out, n=args.n))


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
