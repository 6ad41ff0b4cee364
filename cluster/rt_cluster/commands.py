"""The ``rt_cluster`` command handlers: one function per command, taking the parsed arguments.

Rules:
1. A handler returns the exit status (0) or raises: ``BadInput`` (``UsageError`` among them) for
   a user mistake, ``ClusterError`` for a failed operation; ``cli.main`` maps them to 2 and 1.
2. Every change to a cluster is recorded by ``cluster.local`` as it happens (locked, re-read,
   atomic), so concurrent commands (``up --foreground`` and a ``restart``) never lose each
   other's processes; nothing here writes the record.
3. ``up`` turns SIGINT and SIGTERM into a cancellation: a launch cut short, or the end of
   ``--foreground``, ends every process of the cluster before ``up`` exits.
4. Clusters are reached only through ``cluster.local``; ``scenarios`` is imported only by the
   ``scenario`` command.
5. A cluster whose nodes live in namespaces (``up --netns``) is refused by every command but
   ``down`` once its bridge is gone, before anything is sent (``LocalCluster.require_network``).
"""

from __future__ import annotations

import argparse
import functools
import json
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import trio

from cluster.local import (
    DEFAULT_SUBNET,
    MAX_NODES,
    BadInput,
    ClusterError,
    LocalCluster,
    Member,
    NodeFailed,
    NodeRecord,
    cluster_dir,
    clusters_home,
    cut_nodes,
    launch,
    live_members,
    load_record,
    plan_cluster,
    process_state,
    read_record,
)

from .hints import unknown_cluster, unknown_node
from .output import (
    err,
    next_step,
    out,
    print_nodes,
    progress,
    real_and_simulated,
    status_lines,
    table,
)
from .watch import look, serve_watch

__all__ = ["ASYNC_COMMANDS", "UsageError", "cluster_names", "cmd_list", "cmd_scenario"]


class UsageError(BadInput):
    """Bad input on the command line (exit status 2)."""


def cluster_names() -> list[str]:
    """The clusters under the clusters' home (those with a record), sorted."""
    home = clusters_home()
    return sorted(d.parent.name for d in home.glob("*/cluster.json")) if home.is_dir() else []


def _open(name: str, *, reach: bool = True) -> LocalCluster:
    """The cluster named ``name``, its states refreshed; unless ``reach`` is False, refused
    when its nodes' addresses are out of reach (rule 5)."""
    if read_record(cluster_dir(name)) is None:
        raise UsageError(unknown_cluster(name, cluster_names(), clusters_home()))
    cluster = LocalCluster(load_record(name))
    cluster.refresh_states()
    if reach:
        cluster.require_network()
    return cluster


def _node(cluster: LocalCluster, node_id: int) -> NodeRecord:
    """The node's record; UsageError listing the ids there are when it has none."""
    rec = cluster.record
    if all(n.node_id != node_id for n in rec.nodes):
        raise UsageError(unknown_node(rec.name, node_id, (n.node_id for n in rec.nodes)))
    return rec.node(node_id)


def _again(cluster: LocalCluster, command: str) -> str:
    """``rt_cluster COMMAND``, with ``--name`` unless it is the default cluster."""
    name = cluster.record.name
    return f"rt_cluster {command}" + ("" if name == "default" else f" --name {name}")


def _target_nodes(cluster: LocalCluster, node: str) -> list[int]:
    if node == "all":
        live = [n.node_id for n in cluster.live_nodes()]
        if not live:
            raise UsageError(f"no node of cluster {cluster.record.name!r} is running")
        return live
    rec = _node(cluster, int(node))  # a number: checked by the parser
    cluster.require_live(rec)
    return [rec.node_id]


def _live_state(rec: NodeRecord) -> str:
    st = process_state(rec.pid, rec.started)
    if st == "gone":
        return rec.state if rec.state in ("stopped", "killed", "failed") else "exited"
    return st


async def _converge_live(cluster: LocalCluster, started: float) -> tuple[int, float]:
    """Wait until every live node lists every live node alive: (how many, seconds since
    ``started``, the ``time.monotonic()`` at which the command began)."""
    expect = {n.node_id for n in cluster.live_nodes()}
    return len(expect), await cluster.wait_converged(expect, 60.0, started=started)


def _strays(cluster: LocalCluster) -> list[Member]:
    """Live processes of the cluster that are no node's current process."""
    current = {(n.pid, n.started) for n in cluster.record.nodes}
    return [m for m in cluster.running() if m.key not in current]


# ---- the cluster as a whole -----------------------------------------------------------------


async def cmd_up(args: argparse.Namespace) -> int:
    name = args.name
    directory = cluster_dir(name)
    if args.subnet and not args.netns:
        raise UsageError("--subnet is the subnet of --netns; add --netns")
    record = plan_cluster(
        directory,
        name,
        args.n,
        base_port=args.base_port,
        runtime_base_port=args.runtime_base_port,
        config=args.config or "",
        viz=not args.no_viz,
        keyring=False if args.no_keyring else None,
        subnet=(args.subnet or DEFAULT_SUBNET) if args.netns else "",
    )
    cluster = LocalCluster(record, viz=not args.no_viz)
    out(f"starting cluster {name!r}: {args.n} nodes (files in {directory})")
    signals: list[int] = []
    try:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
            await _until_signal(received, signals, functools.partial(_up, cluster, args))
    except BaseException:
        if args.foreground:  # whatever ended the watch, the cluster ends with it
            with trio.CancelScope(shield=True):
                await cluster.down()
        raise
    if args.foreground:
        out(f"stopping cluster {name!r} ...")
        with trio.CancelScope(shield=True):
            ended = await cluster.down()
        out(f"cluster {name!r} is down: {len(ended)} processes ended, none left running")
        return 0
    if signals:
        err(f"interrupted; no node of cluster {name!r} is left running")
        return 130
    return 0


async def _until_signal(
    received: AsyncIterator[int], signals: list[int], work: Callable[[], Awaitable[None]]
) -> None:
    """Run ``work`` until it returns or a signal arrives (then cancelled; noted in
    ``signals``); what ``work`` raised, unwrapped."""
    try:
        async with trio.open_nursery() as nursery:

            async def on_signal() -> None:
                async for signum in received:
                    signals.append(signum)
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(on_signal)
            await work()
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # the nursery wraps what work raised
        raise _sole(group) from None


def _sole(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception inside ``group`` (nested groups opened), else the group."""
    leaves: list[BaseException] = []
    todo: list[BaseException] = [group]
    while todo:
        exc = todo.pop()
        if isinstance(exc, BaseExceptionGroup):
            todo.extend(exc.exceptions)
        else:
            leaves.append(exc)
    return leaves[0] if len(leaves) == 1 else group


async def _up(cluster: LocalCluster, args: argparse.Namespace) -> None:
    """Launch (and with ``--foreground`` watch until cancelled)."""
    name = cluster.record.name
    try:
        took = await launch(
            cluster, wait=not args.no_wait, timeout=args.timeout, progress=progress(False)
        )
    except NodeFailed as exc:
        raise ClusterError(f"{exc}\nno node of cluster {name!r} is left running") from None
    except ClusterError as exc:
        raise ClusterError(f"{exc}; no node of cluster {name!r} is left running") from None
    out()
    print_nodes(cluster.record)
    out()
    if took is not None:
        out(f"converged in {took:.1f}s: every node lists {args.n} alive")
    else:
        out("nodes are up (not waiting for convergence: --no-wait)")
    for line in next_step(cluster.record, foreground=args.foreground):
        out(line)
    if args.foreground:
        await serve_watch(cluster)


async def cmd_status(args: argparse.Namespace) -> int:
    cluster = _open(args.name)
    rec = cluster.record
    strays = _strays(cluster)
    seen = await look(cluster)
    cuts = cut_nodes(rec)
    if args.json:
        nodes = []
        for n in rec.nodes:
            faults = getattr(seen.get(n.node_id), "faults", None)
            nodes.append({**n.to_status(_live_state(n)), "host": rec.host_of(n),
                          "faults": faults, "cut_from": cuts.get(n.node_id)})  # fmt: skip
        strays_json = [{"pid": m.pid, "node_id": m.node_id} for m in strays]
        network = None if rec.network is None else rec.network.to_status()
        body = {"name": rec.name, "nodes": nodes, "strays": strays_json, "network": network}
        out(json.dumps(body, indent=2))
        return 0
    rows = []
    for n in rec.nodes:
        node = seen.get(n.node_id)
        alive = node.alive_count() if node is not None else None
        state = _live_state(n)
        over = n.ended is not None and state not in ("running", "paused")
        ended = n.ended.describe() if over and n.ended is not None else "-"
        faults = "-" if node is None else node.faults_cell()
        if rec.network is not None:
            faults = real_and_simulated(cuts.get(n.node_id), faults)
        rows.append(
            (n.node_id, n.pid, state, ended, rec.host_of(n), n.runtime_port,
             "-" if alive is None else alive, faults, n.dashboard or "-")
        )  # fmt: skip
    out(f"cluster {rec.name!r} ({rec.directory})")
    header = ("node", "pid", "state", "ended", "host", "runtime", "sees alive", "faults",
              "dashboard")  # fmt: skip
    out(table(rows, header))
    for line in status_lines(rec, strays):
        out(line)
    return 0


async def cmd_down(args: argparse.Namespace) -> int:
    cluster = _open(args.name, reach=False)
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
    cluster = _open(args.name)
    nid = args.node
    _check_node_command(cluster, args.command, _node(cluster, nid))
    if args.command == "kill":
        await cluster.kill(nid)
        msg = f"node {nid} killed (SIGKILL)"
    elif args.command == "stop":
        await cluster.stop(nid)
        msg = f"node {nid} stopped"
    elif args.command == "pause":
        cluster.pause(nid)
        msg = f"node {nid} paused (SIGSTOP); resume it with: {_again(cluster, f'resume {nid}')}"
    elif args.command == "resume":
        cluster.resume(nid)
        msg = f"node {nid} resumed (SIGCONT)"
    else:
        began = time.monotonic()
        rec = await cluster.restart(nid, hard=args.kill)
        msg = f"node {nid} restarted: pid {rec.pid}"
        if not args.no_wait:
            _, took = await _converge_live(cluster, began)
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
            f"{_again(cluster, f'resume {rec.node_id}')}"
        )
    if command == "resume" and state != "paused":
        raise UsageError(f"node {rec.node_id} is not paused (it is {state}); nothing to resume")


async def cmd_add(args: argparse.Namespace) -> int:
    cluster = _open(args.name)
    began = time.monotonic()
    rec = await cluster.add(induct=args.induct)
    msg = f"node {rec.node_id} added: pid {rec.pid}, dashboard {rec.dashboard or '-'}"
    if not args.no_wait:
        count, took = await _converge_live(cluster, began)
        msg += f"; {count} nodes converged {took:.1f}s after the start"
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
            _node(cluster, i)
    missing = sorted({n.node_id for n in cluster.record.nodes} - seen)
    if missing:
        raise UsageError(f"node(s) {', '.join(map(str, missing))} are in no group; list every node")
    for note in await cluster.partition(groups):
        out(f"note: {note}")
    real = " (real: unreachable routes in the namespaces)" if cluster.record.network else ""
    out(f"partitioned{real}: " + " | ".join(",".join(map(str, g)) for g in groups))
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
        _node(cluster, args.peer)
    targets = _target_nodes(cluster, args.node)
    for nid in targets:
        await cluster.faults(_node(cluster, nid), args.command, peer=args.peer, value=value)
    unit = "%" if args.command == "loss" else " ms"
    scope = f" to/from node {args.peer}" if args.peer is not None else ""
    out(f"{args.command} {value:g}{unit}{scope} on node(s) {', '.join(map(str, targets))}")
    return 0


# ---- scenarios ------------------------------------------------------------------------------


def cmd_scenario(args: argparse.Namespace) -> int:
    from scenarios import run_scenario_cli  # scenarios -> cluster; imported only here

    if args.n is not None and args.n > MAX_NODES and not args.sim:
        raise BadInput(f"-n {args.n}: real clusters have at most {MAX_NODES} nodes (--sim: more)")
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
