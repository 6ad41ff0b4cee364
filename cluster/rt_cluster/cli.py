"""``rt_cluster``: local clusters of node processes, chaos on them, and scenarios.

Commands: ``up``, ``status``, ``down``, ``list``, node operations ``kill``, ``stop``, ``pause``,
``resume``, ``restart``, ``add``, faults ``partition``, ``heal``, ``loss``, ``delay``, and
``scenario FILE``. Every command takes ``--name`` (default ``default``). A user mistake is a
one-line message on stderr and exit status 2 (1 when an operation failed); never a traceback.
See docs/rt_cluster.md.

Rules:
1. This module parses the command line and maps errors to exit statuses; the handlers live in
   ``commands``, what they print in ``output``.
2. Arguments are checked by argparse types before any handler runs (usage line, exit 2).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

import trio

from cluster.local import BadInput, ClusterError

from .commands import ASYNC_COMMANDS, cmd_list, cmd_scenario
from .output import err

__all__ = ["build_parser", "main"]


# ---- argument types -------------------------------------------------------------------------


def _node_id(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a node id: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a node id: {text!r}")
    return value


def _number(low: float, high: float | None, what: str) -> Callable[[str], float]:
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


# ---- the parser -----------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # a usage line and exit 2, as argparse does
        self.print_usage(sys.stderr)
        err(message)
        raise SystemExit(2)


if TYPE_CHECKING:
    _Sub = argparse._SubParsersAction[_Parser]  # what add_subparsers returns


def _command(sub: _Sub, name: str, help_: str) -> argparse.ArgumentParser:
    """A subcommand on one named cluster (``--name``)."""
    p = sub.add_parser(name, help=help_, description=help_)
    p.add_argument("--name", default="default", help="cluster name (default: default)")
    return p


def _add_cluster_commands(sub: _Sub) -> None:
    p = _command(sub, "up", "start N node processes and wait until they all see each other alive")
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

    p = _command(sub, "status", "the nodes of a cluster and their process states")
    p.add_argument("--json", action="store_true")
    p = _command(sub, "down", "stop every process of a cluster (SIGTERM, then SIGKILL)")
    p.add_argument("--grace", type=float, default=10.0, help="seconds before SIGKILL")
    sub.add_parser("list", help="the clusters under RT_CLUSTER_HOME")


def _add_node_commands(sub: _Sub) -> None:
    for name, help_ in (
        ("kill", "SIGKILL a node"),
        ("stop", "stop a node gracefully (it announces its leave)"),
        ("pause", "SIGSTOP a node"),
        ("resume", "SIGCONT a paused node"),
        ("restart", "stop a node (if running) and start it again"),
    ):
        p = _command(sub, name, help_)
        p.add_argument("node", type=_node_id)
        if name == "restart":
            p.add_argument("--kill", action="store_true", help="SIGKILL instead of a clean stop")
            p.add_argument("--no-wait", action="store_true", help="do not wait for convergence")
    p = _command(sub, "add", "start one more node that joins the cluster")
    p.add_argument("--induct", action="store_true", help="join without a hostfile entry")
    p.add_argument("--no-wait", action="store_true", help="do not wait for convergence")


def _add_fault_commands(sub: _Sub) -> None:
    p = _command(
        sub, "partition", "split the cluster: each node blocks the nodes of the other groups"
    )
    p.add_argument("groups", type=_groups, nargs="+", metavar="IDS", help="e.g. 0,1 2,3,4")
    _command(sub, "heal", "remove partitions, loss and delay on every node")
    p = _command(sub, "loss", "drop PERCENT of a node's packets (NODE may be 'all')")
    p.add_argument("node")
    p.add_argument("percent", type=_number(0, 100, "PERCENT"))
    p.add_argument("--peer", type=_node_id, help="only packets to/from this peer")
    p = _command(sub, "delay", "delay a node's packets by MS milliseconds (NODE may be 'all')")
    p.add_argument("node")
    p.add_argument("ms", type=_number(0, 60000, "MS"))
    p.add_argument("--peer", type=_node_id, help="only packets to/from this peer")


def _add_scenario_command(sub: _Sub) -> None:
    p = sub.add_parser("scenario", help="run a scenario file; exit 0 pass, 1 fail, 2 error")
    p.add_argument("file", help="a scenario YAML file, or the name of one in the library")
    p.add_argument("--sim", action="store_true", help="on the simulated network (virtual time)")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument("--out", help="directory for results.json and report.html")
    p.add_argument("-n", type=int, dest="n", help="override the cluster size")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; subcommands in the order ``--help`` lists them."""
    parser = _Parser(prog="rt_cluster", description="local rtsim clusters, chaos and scenarios")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_cluster_commands(sub)
    _add_node_commands(sub)
    _add_fault_commands(sub)
    _add_scenario_command(sub)
    return parser


# ---- running a command ----------------------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    if args.command == "list":
        return cmd_list(args)
    if args.command == "scenario":
        return cmd_scenario(args)
    return trio.run(ASYNC_COMMANDS[args.command], args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``rt_cluster`` with ``argv`` (default: the process's); the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except BadInput as exc:
        err(str(exc))
        return 2
    except ClusterError as exc:
        err(str(exc))
        return 1
    except KeyboardInterrupt:
        err("interrupted")
        return 130
    except BrokenPipeError:  # e.g. piped into head: the reader is gone, nothing to say
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
