"""``rt_cluster``: local clusters of node processes, chaos on them, and scenarios.

Commands: ``up``, ``status``, ``down``, ``list``, node operations ``kill``, ``stop``, ``pause``,
``resume``, ``restart``, ``add``, faults ``partition``, ``heal``, ``loss``, ``delay``, and
``scenario FILE``. Every command takes ``--name`` (default ``default``). A user mistake is a
one-line message on stderr and exit status 2 (1 when an operation failed); never a traceback.
An unknown command, cluster or node is answered with what exists ("did you mean", ``hints``).
See docs/rt_cluster.md.

Rules:
1. This module parses the command line and maps errors to exit statuses; the handlers live in
   ``commands``, what they print in ``output``.
2. Every argument is parsed strictly by an argparse type before any handler runs: names by
   ``valid_name``, numbers as ASCII digits (an optional sign and decimals where a fraction
   makes sense), finite and within a stated range. A bad one is one line on stderr naming the
   argument, and exit status 2.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

import trio

from cluster.ground.parse import MAX_NODE_ID, shown
from cluster.local import MAX_NODES, BadInput, ClusterError, valid_name

from .commands import ASYNC_COMMANDS, cmd_explore, cmd_list, cmd_scenario
from .hints import unknown_command, unknown_option
from .output import err

__all__ = ["MAX_SIM_NODES", "build_parser", "main"]

MAX_SIM_NODES = 65536  # scenario -n with --sim: SWIM's default member table cap (max_members)


# ---- argument types -------------------------------------------------------------------------


INTEGER = re.compile(r"-?[0-9]{1,12}")
DECIMAL = re.compile(r"-?[0-9]{1,12}(\.[0-9]{1,12})?")
SUBNET = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}")
MAX_SECONDS = 24 * 3600.0  # the longest wait or grace period one may ask for


def _integer(low: int, high: int, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not INTEGER.fullmatch(text):
            raise argparse.ArgumentTypeError(f"{what}: not a whole number: {shown(text)}")
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{what}: {value} is out of range ({low}..{high})")
        return value

    return parse


def _number(low: float, high: float, what: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        if not DECIMAL.fullmatch(text):
            raise argparse.ArgumentTypeError(f"{what}: not a number: {shown(text)}")
        value = float(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{what}: {text} is out of range ({low:g}..{high:g})")
        return value

    return parse


def _node_id(text: str) -> int:
    if not INTEGER.fullmatch(text) or not 0 <= int(text) <= MAX_NODE_ID:
        raise argparse.ArgumentTypeError(f"not a node id: {shown(text)}")
    return int(text)


def _node_or_all(text: str) -> str:
    return text if text == "all" else str(_node_id(text))


def _name(text: str) -> str:
    try:
        return valid_name(text)
    except BadInput:
        raise argparse.ArgumentTypeError(
            f"bad cluster name {shown(text)}: use letters, digits, '.', '_' or '-' (at most 64)"
        ) from None


def _subnet(text: str) -> str:
    if not SUBNET.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"--subnet: not an IPv4 network like 10.77.0.0/24: {shown(text)}"
        )
    return text


def _groups(text: str) -> list[int]:
    parts = text.split(",")
    if not text or any(not INTEGER.fullmatch(p) or int(p) < 0 for p in parts):
        raise argparse.ArgumentTypeError(
            f"bad group {shown(text)}: expected comma-separated node ids, e.g. 0,1"
        )
    return [_node_id(p) for p in parts]


# ---- the parser -----------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line and exit 2 (rule 2)
        line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
        if len(line) > 300:
            line = line[:300] + "..."
        print(f"{self.prog}: {line} (see: {self.prog} --help)", file=sys.stderr, flush=True)
        raise SystemExit(2)


if TYPE_CHECKING:
    _Sub = argparse._SubParsersAction[_Parser]  # what add_subparsers returns


def _command(sub: _Sub, name: str, help_: str) -> argparse.ArgumentParser:
    """A subcommand on one named cluster (``--name``)."""
    p = sub.add_parser(name, help=help_, description=help_)
    p.add_argument("--name", type=_name, default="default", help="cluster name (default: default)")
    return p


def _add_cluster_commands(sub: _Sub) -> None:
    p = _command(sub, "up", "start N node processes and wait until they all see each other alive")
    p.add_argument("-n", type=_integer(1, MAX_NODES, "-n"), required=True, help="number of nodes")
    p.add_argument(
        "--serf",
        type=_integer(0, MAX_NODES - 1, "--serf"),
        default=0,
        metavar="M",
        help="M real Serf agents too (members N..N+M-1); the nodes then speak memberlist",
    )
    port = _integer(0, 65535, "--base-port")
    p.add_argument("--base-port", type=port, default=8080, help="dashboard of node i: base+i")
    port = _integer(0, 65535, "--runtime-base-port")
    p.add_argument("--runtime-base-port", type=port, default=9413, help="runtime of node i: base+i")
    p.add_argument("--config", help="node configuration file (YAML) for every node")
    p.add_argument("--no-wait", action="store_true", help="return once the nodes answer")
    p.add_argument("--no-viz", action="store_true", help="start the nodes without dashboards")
    p.add_argument(
        "--foreground",
        action="store_true",
        help="stay: print a line per change (processes, views, faults); Ctrl-C stops all",
    )
    p.add_argument(
        "--no-keyring", action="store_true", help="gossip without a shared key (not advised)"
    )
    p.add_argument(
        "--netns",
        action="store_true",
        help="each node in a network namespace of its own, at its own address (needs root)",
    )
    p.add_argument(
        "--subnet", type=_subnet, help="the --netns nodes' subnet (default 10.77.0.0/24)"
    )
    timeout = _number(0.1, MAX_SECONDS, "--timeout")
    p.add_argument("--timeout", type=timeout, default=120.0, help="seconds to wait (default 120)")

    p = _command(sub, "status", "the nodes of a cluster and their process states")
    p.add_argument("--json", action="store_true")
    p = _command(sub, "down", "stop every process of a cluster (SIGTERM, then SIGKILL)")
    grace = _number(0, MAX_SECONDS, "--grace")
    p.add_argument("--grace", type=grace, default=10.0, help="seconds before SIGKILL")
    sub.add_parser("list", help="the clusters under RT_CLUSTER_HOME")


def _add_node_commands(sub: _Sub) -> None:
    for name, help_ in (
        ("kill", "SIGKILL a node (or Serf agent)"),
        ("stop", "stop a node gracefully (it announces its leave; an agent gets SIGINT)"),
        ("pause", "SIGSTOP a node (or Serf agent)"),
        ("resume", "SIGCONT a paused node (or Serf agent)"),
        ("restart", "stop a node or agent (if running) and start it again"),
    ):
        p = _command(sub, name, help_)
        p.add_argument("node", type=_node_id, help="its number: a node id, or an agent's")
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
    p.add_argument("node", type=_node_or_all)
    p.add_argument("percent", type=_number(0, 100, "PERCENT"))
    p.add_argument("--peer", type=_node_id, help="only packets to/from this peer")
    p = _command(sub, "delay", "delay a node's packets by MS milliseconds (NODE may be 'all')")
    p.add_argument("node", type=_node_or_all)
    p.add_argument("ms", type=_number(0, 60000, "MS"))
    p.add_argument("--peer", type=_node_id, help="only packets to/from this peer")


def _add_scenario_command(sub: _Sub) -> None:
    p = sub.add_parser("scenario", help="run a scenario file; exit 0 pass, 1 fail, 2 error")
    p.add_argument("file", help="a scenario YAML file, or the name of one in the library")
    p.add_argument("--sim", action="store_true", help="on the simulated network (virtual time)")
    p.add_argument("--seed", type=_integer(0, 2**63 - 1, "--seed"), help="the scenario's seed")
    p.add_argument(
        "--runs",
        type=_integer(1, 100_000, "--runs"),
        default=1,
        help="play it K times with seeds seed..seed+K-1; results and report sum them up",
    )
    p.add_argument("--out", help="directory for results.json and report.html")
    p.add_argument(
        "-n",
        type=_integer(1, MAX_SIM_NODES, "-n"),
        help=f"override the cluster size (at most {MAX_NODES}; {MAX_SIM_NODES} with --sim)",
    )
    p.add_argument(
        "--hostfile",
        metavar="H",
        help="play on the running cluster H names (host:port lines; node id = line offset)",
    )
    p.add_argument(
        "--property",
        action="append",
        dest="properties",
        default=[],
        metavar="MODULE:FUNCTION",
        help="let the file's property: run this checker of yours (explore failure files)",
    )


def _size_range(text: str) -> tuple[int, int]:
    """``-n N`` or ``-n A-B`` of ``explore``: 2 to 64 nodes."""
    low, _, high = text.partition("-")
    try:
        a, b = int(low), int(high or low)
    except ValueError:
        raise argparse.ArgumentTypeError(f"-n {text[:20]!r}: a size N or a range A-B") from None
    if not 2 <= a <= b <= 64:
        raise argparse.ArgumentTypeError(f"-n {text[:20]}: sizes of 2 to 64 nodes, low first")
    return a, b


def _swim_range(text: str) -> tuple[str, float, float]:
    """``--swim KEY=LOW..HIGH`` of ``explore``."""
    key, _, span = text.partition("=")
    low, _, high = span.partition("..")
    try:
        a, b = float(low), float(high)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--swim {text[:40]!r}: KEY=LOW..HIGH") from None
    if not key or not 0 <= a <= b or b > 1e6:
        raise argparse.ArgumentTypeError(f"--swim {text[:40]}: KEY=LOW..HIGH, 0 <= LOW <= HIGH")
    return key, a, b


def _add_explore_command(sub: _Sub) -> None:
    p = sub.add_parser(
        "explore",
        help="search simulated fault schedules for a property violation, shrink it, write it; "
        "exit 0 none, 1 violation, 2 bad usage",
    )
    p.add_argument("-n", type=_size_range, default=(3, 5), help="size N or range A-B (3-5)")
    p.add_argument("--budget-s", type=_number(1, 86400, "--budget-s"), help="seconds in all")
    p.add_argument("--runs", type=_integer(1, 10**9, "--runs"), help="runs to search")
    p.add_argument("--seed", type=_integer(0, 2**31, "--seed"), default=0, help="search seed")
    p.add_argument("--jobs", type=_integer(1, 64, "--jobs"), default=1, help="worker processes")
    p.add_argument("--out", default="explore-out", help="where failures go (explore-out)")
    p.add_argument(
        "--swim", type=_swim_range, action="append", default=[], help="KEY=LOW..HIGH to draw from"
    )
    p.add_argument(
        "--property",
        action="append",
        dest="properties",
        help="check only these (repeat; built-in names, or module:function, a checker)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; subcommands in the order ``--help`` lists them."""
    parser = _Parser(prog="rt_cluster", description="local rtsim clusters, chaos and scenarios")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_cluster_commands(sub)
    _add_node_commands(sub)
    _add_fault_commands(sub)
    _add_scenario_command(sub)
    _add_explore_command(sub)
    return parser


# ---- running a command ----------------------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    if args.command == "list":
        return cmd_list(args)
    if args.command == "scenario":
        return cmd_scenario(args)
    if args.command == "explore":
        return cmd_explore(args)
    return trio.run(ASYNC_COMMANDS[args.command], args)


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands and their parsers, in the order ``--help`` lists them."""
    return {
        name: sub
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name, sub in action.choices.items()
    }


def _long_options(sub: argparse.ArgumentParser) -> list[str]:
    return [o for a in sub._actions for o in a.option_strings if o.startswith("--")]


def _unknown_long_option(options: Sequence[str], args: Sequence[str]) -> str | None:
    """The first ``--option`` in ``args`` that is none of ``options`` (nor abbreviates one),
    else None."""
    for arg in args:
        if arg == "--":
            break
        name = arg.split("=", 1)[0]
        if name.startswith("--") and not any(o.startswith(name) for o in options):
            return name
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``rt_cluster`` with ``argv`` (default: the process's); the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    commands = _commands(parser)
    # The command comes first (there are no options before it): a typo gets "did you mean",
    # in the command or in one of its long options.
    if argv and not argv[0].startswith("-") and argv[0] not in commands:
        parser.error(unknown_command(argv[0], list(commands)))
    if argv and argv[0] in commands:
        sub = commands[argv[0]]
        options = _long_options(sub)
        option = _unknown_long_option(options, argv[1:])
        if option is not None:
            sub.error(unknown_option(option, options))
    args = parser.parse_args(argv)
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
    except OSError as exc:  # a file the user named (or the clusters' home) cannot be used
        err(str(exc))
        return 1


if __name__ == "__main__":
    sys.exit(main())
