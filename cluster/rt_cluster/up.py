"""``rt_cluster up``: plan a cluster, launch it, and with ``--foreground`` watch it until a signal.

Rules:
1. SIGINT and SIGTERM become a cancellation: a launch cut short, or the end of
   ``--foreground``, ends every process of the cluster before ``up`` exits.
2. A launch that fails leaves no node (and no Serf agent) of the cluster running, and says so.
"""

from __future__ import annotations

import argparse
import functools
import signal
from collections.abc import AsyncIterator, Awaitable, Callable

import trio

from cluster.local import (
    DEFAULT_SUBNET,
    ClusterError,
    LocalCluster,
    NodeFailed,
    cluster_dir,
    launch,
    open_local,
    plan_cluster,
)

from .clusters import UsageError
from .output import err, next_step, out, print_nodes, progress
from .watch import serve_watch

__all__ = ["cmd_up"]


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
        serf=args.serf,
    )
    cluster = open_local(record, viz=not args.no_viz)
    agents = f" and {args.serf} Serf agents (memberlist)" if args.serf else ""
    out(f"starting cluster {name!r}: {args.n} nodes{agents} (files in {directory})")
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
        err(f"interrupted; {_nothing_left(cluster)}")
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


def _nothing_left(cluster: LocalCluster) -> str:
    """``no node of cluster 'c' is left running`` (``... no node and no Serf agent ...``)."""
    agents = " and no Serf agent" if cluster.record.agents else ""
    return f"no node{agents} of cluster {cluster.record.name!r} is left running"


async def _up(cluster: LocalCluster, args: argparse.Namespace) -> None:
    """Launch (and with ``--foreground`` watch until cancelled)."""
    try:
        took = await launch(
            cluster, wait=not args.no_wait, timeout=args.timeout, progress=progress(False)
        )
    except NodeFailed as exc:
        raise ClusterError(f"{exc}\n{_nothing_left(cluster)}") from None
    except ClusterError as exc:
        raise ClusterError(f"{exc}; {_nothing_left(cluster)}") from None
    out()
    print_nodes(cluster.record)
    out()
    if took is not None:
        every = "member" if args.serf else "node"
        out(f"converged in {took:.1f}s: every {every} lists {args.n + args.serf} alive")
    else:
        out("nodes are up (not waiting for convergence: --no-wait)")
    for line in next_step(cluster.record, foreground=args.foreground):
        out(line)
    if args.foreground:
        await serve_watch(cluster)
