"""``rt_cluster``: local clusters of node processes, chaos on them, and scenarios.

Commands: ``up``, ``status``, ``down``, ``list``, node operations ``kill``, ``stop``, ``pause``,
``resume``, ``restart``, ``add``, faults ``partition``, ``heal``, ``loss``, ``delay``, and
``scenario FILE``. Every command takes ``--name`` (default ``default``). A user mistake is a
one-line message on stderr and exit status 2 (1 when an operation failed); never a traceback.
See docs/rt_cluster.md.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from cluster.local.launcher import LocalCluster, NodeFailed, launch, plan_cluster
from cluster.local.record import (
    BadInput,
    ClusterError,
    ClusterRecord,
    cluster_dir,
    clusters_home,
    load_record,
    process_state,
    save_record,
    valid_name,
)

__all__ = ["main"]


class UsageError(BadInput):
    """Bad input on the command line (exit status 2)."""


def _out(line: str = "") -> None:
    print(line, flush=True)


def _err(line: str) -> None:
    print(f"rt_cluster: {line}", file=sys.stderr, flush=True)


# ---- argument parsing ---------------------------------------------------------------------


def _node_id(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a node id: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a node id: {text!r}")
    return value


def _number(low: float, high: float | None, what: str) -> Any:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what}: not a number: {text!r}") from None
        if value != value or value < low or (high is not None and value > high):
            bound = f"{low:g}..{high:g}" if high is not None else f">= {low:g}"
            raise argparse.ArgumentTypeError(f"{what}: {text} is out of range ({bound})")
        return value

    return parse


def _groups(text: str) -> list[int]:
    try:
        ids = [int(x) for x in text.split(",") if x.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"bad group {text!r}: expected comma-separated node ids, e.g. 0,1"
        ) from None
    if not ids or any(i < 0 for i in ids):
        raise argparse.ArgumentTypeError(f"bad group {text!r}: expected node ids, e.g. 0,1")
    return ids


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # a usage line and exit 2, as argparse does
        self.print_usage(sys.stderr)
        _err(message)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rt_cluster", description="local rtsim clusters, chaos and scenarios")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def cmd(name: str, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        p.add_argument("--name", default="default", help="cluster name (default: default)")
        return p

    p = cmd("up", "start N node processes and wait until they all see each other alive")
    p.add_argument("-n", type=int, required=True, dest="n", help="number of nodes")
    p.add_argument("--base-port", type=int, default=8080, help="dashboard of node i: base+i")
    p.add_argument("--runtime-base-port", type=int, default=9413, help="runtime of node i: base+i")
    p.add_argument("--config", help="node configuration file (YAML) for every node")
    p.add_argument("--no-wait", action="store_true", help="return once the nodes answer")
    p.add_argument("--no-viz", action="store_true", help="start the nodes without dashboards")
    p.add_argument(
        "--foreground",
        action="store_true",
        help="stay, show membership every second, stop the cluster on Ctrl-C",
    )
    p.add_argument("--timeout", type=float, default=120.0, help="seconds to wait (default 120)")

    p = cmd("status", "the nodes of a cluster and their process states")
    p.add_argument("--json", action="store_true")
    p = cmd("down", "stop every process of a cluster (SIGTERM, then SIGKILL)")
    p.add_argument("--grace", type=float, default=10.0, help="seconds before SIGKILL")
    sub.add_parser("list", help="the clusters under RT_CLUSTER_HOME")

    for name, help_ in (
        ("kill", "SIGKILL a node"),
        ("stop", "stop a node gracefully (it announces its leave)"),
        ("pause", "SIGSTOP a node"),
        ("resume", "SIGCONT a paused node"),
        ("restart", "stop a node (if running) and start it again"),
    ):
        p = cmd(name, help_)
        p.add_argument("node", type=_node_id)
        if name == "restart":
            p.add_argument("--kill", action="store_true", help="SIGKILL instead of a clean stop")
            p.add_argument("--no-wait", action="store_true", help="do not wait for convergence")
    p = cmd("add", "start one more node that joins the cluster")
    p.add_argument("--induct", action="store_true", help="join without a hostfile entry")
    p.add_argument("--no-wait", action="store_true", help="do not wait for convergence")
    p = cmd("partition", "split the cluster: each node blocks the nodes of the other groups")
    p.add_argument("groups", type=_groups, nargs="+", metavar="IDS", help="e.g. 0,1 2,3,4")
    cmd("heal", "remove partitions, loss and delay on every node")
    p = cmd("loss", "drop PERCENT of a node's packets (NODE may be 'all')")
    p.add_argument("node")
    p.add_argument("percent", type=_number(0, 100, "PERCENT"))
    p.add_argument("--peer", type=_node_id, help="only packets to/from this peer")
    p = cmd("delay", "delay a node's packets by MS milliseconds (NODE may be 'all')")
    p.add_argument("node")
    p.add_argument("ms", type=_number(0, 60000, "MS"))
    p.add_argument("--peer", type=_node_id, help="only packets to/from this peer")

    p = sub.add_parser("scenario", help="run a scenario file; exit 0 pass, 1 fail, 2 error")
    p.add_argument("file", help="a scenario YAML file, or the name of one in the library")
    p.add_argument("--sim", action="store_true", help="on the simulated network (virtual time)")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument("--out", help="directory for results.json and report.html")
    p.add_argument("-n", type=int, dest="n", help="override the cluster size")
    return parser


# ---- helpers ------------------------------------------------------------------------------


def _table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    cells = [[str(c) for c in header], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells
    )


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


def _live_state(rec: Any) -> str:
    st = process_state(rec.pid, rec.started)
    if st == "gone":
        return rec.state if rec.state in ("stopped", "killed", "failed") else "exited"
    return st


def _progress(quiet: bool) -> Any:
    tty = sys.stdout.isatty()
    last = [-1.0]

    def show(ready: int, converged: int, total: int, elapsed: float) -> None:
        if quiet or (not tty and elapsed - last[0] < 1.0 and converged < total):
            return
        last[0] = elapsed
        line = (
            f"  {elapsed:5.1f}s  {ready}/{total} nodes up, {converged}/{total} see all "
            f"{total} alive"
        )
        if tty:
            print("\r" + line, end="", flush=True)
            if converged == total:
                print(flush=True)
        else:
            _out(line)

    return show


def _print_nodes(rec: ClusterRecord) -> None:
    rows = [
        (n.node_id, n.pid, n.runtime_port, n.dashboard or "-", Path(n.log).name) for n in rec.nodes
    ]
    _out(_table(rows, ("node", "pid", "runtime", "dashboard", "log")))


# ---- commands -----------------------------------------------------------------------------


async def cmd_up(args: argparse.Namespace) -> int:
    name = valid_name(args.name)
    directory = cluster_dir(name)
    try:
        old = load_record(name)
    except ClusterError:
        old = None
    if old is not None:
        running = [n for n in old.nodes if process_state(n.pid, n.started) != "gone"]
        if running:
            raise ClusterError(
                f"cluster {name!r} is already running ({len(running)} node processes, e.g. "
                f"node {running[0].node_id} pid {running[0].pid}); stop it first with: "
                f"rt_cluster down --name {name}"
            )
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
    _out(f"starting cluster {name!r}: {args.n} nodes (files in {directory})")
    try:
        took = await launch(
            cluster,
            wait=not args.no_wait,
            timeout=args.timeout,
            progress=_progress(False),
            on_spawned=save_record,
        )
    except NodeFailed as exc:
        save_record(cluster.record)
        raise ClusterError(f"{exc}\nno node of cluster {name!r} is left running") from None
    except ClusterError as exc:
        save_record(cluster.record)
        raise ClusterError(f"{exc}; no node of cluster {name!r} is left running") from None
    save_record(cluster.record)
    _out()
    _print_nodes(cluster.record)
    _out()
    if took is not None:
        _out(f"converged in {took:.1f}s: every node lists {args.n} alive")
    else:
        _out("nodes are up (not waiting for convergence: --no-wait)")
    if args.foreground:
        return await _foreground(cluster)
    _out(f"status: rt_cluster status --name {name}    stop: rt_cluster down --name {name}")
    return 0


async def _foreground(cluster: LocalCluster) -> int:
    name = cluster.record.name
    _out("membership as each node sees it, every second; Ctrl-C stops the cluster")
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:

            async def wait_signal() -> None:
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(wait_signal)
            while True:
                _out(await summary(cluster))
                await trio.sleep(1.0)
    _out(f"stopping cluster {name!r} ...")
    with trio.CancelScope(shield=True):
        await cluster.down()
        save_record(cluster.record)
    _out(f"cluster {name!r} is down: all {len(cluster.record.nodes)} processes ended")
    return 0


async def summary(cluster: LocalCluster) -> str:
    """One line per node: its process state, leader, and what it believes of every member."""
    ids = [n.node_id for n in cluster.record.nodes]
    _, bodies = await cluster.converged(set(ids))
    lines = [time.strftime("%H:%M:%S") + f" cluster {cluster.record.name}"]
    for rec in cluster.record.nodes:
        proc = cluster.state_of(rec)
        body = bodies.get(rec.node_id)
        if proc == "gone":
            lines.append(f"  node {rec.node_id}: not running ({rec.state})")
        elif body is None:
            lines.append(f"  node {rec.node_id}: {proc}, not answering")
        else:
            seen = " ".join(f"{n['node_id']}:{n['state']}" for n in body.get("nodes", ()))
            alive = sum(1 for n in body.get("nodes", ()) if n.get("state") == "alive")
            lines.append(
                f"  node {rec.node_id}: leader {body.get('leader_node_id')}, {alive} alive | {seen}"
            )
    return "\n".join(lines)


async def cmd_status(args: argparse.Namespace) -> int:
    rec = load_record(args.name)
    if args.json:
        doc = {"name": rec.name, "nodes": [n.to_status(_live_state(n)) for n in rec.nodes]}
        _out(json.dumps(doc, indent=2))
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
    _out(f"cluster {rec.name!r} ({rec.directory})")
    _out(_table(rows, ("node", "pid", "state", "runtime", "sees alive", "dashboard")))
    return 0


async def cmd_down(args: argparse.Namespace) -> int:
    cluster = _open(args.name)
    live = cluster.live_nodes()
    await cluster.down(grace=args.grace)
    save_record(cluster.record)
    _out(f"cluster {args.name!r}: stopped {len(live)} node processes; none left running")
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
        _out(f"no clusters under {home}")
    else:
        _out(_table(rows, ("name", "nodes", "running", "directory")))
    return 0


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
    _out(msg)
    return 0


async def _converge_live(cluster: LocalCluster) -> tuple[int, float]:
    """Wait until every live node lists every live node alive: (how many, seconds)."""
    expect = {n.node_id for n in cluster.live_nodes()}
    return len(expect), await cluster.wait_converged(expect, 60.0)


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
    _out(msg)
    return 0


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
        _out(f"note: {note}")
    _out("partitioned: " + " | ".join(",".join(map(str, g)) for g in groups))
    return 0


async def cmd_heal(args: argparse.Namespace) -> int:
    cluster = _open(args.name)
    notes = await cluster.heal()
    for note in notes:
        _out(f"note: {note}")
    _out("healed: no partitions, loss or delay on any running node")
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
    _out(f"{args.command} {value:g}{unit}{scope} on node(s) {', '.join(map(str, targets))}")
    return 0


def cmd_scenario(args: argparse.Namespace) -> int:
    from scenarios import run_scenario_cli  # scenarios -> cluster; imported only here

    return int(run_scenario_cli(args.file, sim=args.sim, seed=args.seed, out=args.out, n=args.n))


_ASYNC = {
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


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "list":
            return cmd_list(args)
        if args.command == "scenario":
            return cmd_scenario(args)
        handler = _ASYNC[args.command]
        return trio.run(handler, args)
    except BadInput as exc:
        _err(str(exc))
        return 2
    except ClusterError as exc:
        _err(str(exc))
        return 1
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except BrokenPipeError:  # e.g. piped into head: the reader is gone, nothing to say
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
