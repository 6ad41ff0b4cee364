"""``rt_cluster``: local clusters of node processes, chaos on them, and scenarios.

Commands: ``up``, ``status``, ``down``, ``list``, node operations ``kill``, ``stop``, ``pause``,
``resume``, ``restart``, ``add``, faults ``partition``, ``cut``, ``clock``, ``disk``, ``heal``,
``loss``, ``delay``; the floor above adds ``scenario FILE`` and ``explore``
(``scenarios.command``, the entry point of the whole command). Every command takes ``--name``
(default ``default``). A user mistake is a one-line message on stderr and exit status 2 (1
when an operation failed); never a traceback.
An unknown command, cluster or node is answered with what exists ("did you mean", ``hints``).
See docs/rt_cluster.md.

Rules:
1. This module parses the command line and maps errors to exit statuses; the handlers live in
   ``commands``, what they print in ``output``. A command of a floor above comes in as a
   ``Command`` (its parser and its handler): nothing here imports ``scenarios``.
2. Every argument is parsed strictly by an argparse type before any handler runs: names by
   ``valid_name``, numbers by ``cluster.ground.parse`` (the one grammar: canonical ASCII
   digits, a decimal fraction where one makes sense, finite and within a stated range). A bad
   one is one line on stderr naming the argument once, and exit status 2.
3. An option is its whole name: no parser takes an abbreviation (``--budget`` is not
   ``--budget-s``); an unknown one is answered with the option of that meaning or the closest
   name (``hints.unknown_option``).
4. The handlers load when a command of this floor runs (``commands``, and through it the
   launcher): a command of the floor above (``scenario --sim``) starts without paying for
   them.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import trio

from cluster.ground.clock import MAX_CLOCK_OFFSET_S, MAX_CLOCK_RATE, MIN_CLOCK_RATE
from cluster.ground.parse import MAX_NODE_ID, ParseError, parse_float, parse_int, shown
from cluster.local import MAX_NODES, BadInput, ClusterError, valid_name

from .hints import unknown_command, unknown_option
from .output import err

__all__ = ["MAX_NODES", "MAX_SECONDS", "Command", "build_parser", "integer", "main", "number"]


# ---- argument types -------------------------------------------------------------------------


SUBNET = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}")
MAX_SECONDS = 24 * 3600.0  # the longest wait or grace period one may ask for


def _refusal(exc: ParseError, what: str) -> argparse.ArgumentTypeError:
    """The parse error without its leading ``what:``: argparse's ``argument -n/--nodes:``
    names the argument already (rule 2: named once)."""
    text = str(exc)
    return argparse.ArgumentTypeError(text.removeprefix(f"{what}: "))


def integer(low: int, high: int, what: str) -> Callable[[str], int]:
    """The argparse type of a whole number from ``low`` to ``high`` (``parse_int``)."""

    def parse(text: str) -> int:
        try:
            return parse_int(text, low=low, high=high, what=what)
        except ParseError as exc:
            raise _refusal(exc, what) from None

    return parse


def number(low: float, high: float, what: str) -> Callable[[str], float]:
    """The argparse type of a finite number from ``low`` to ``high`` (``parse_float``)."""

    def parse(text: str) -> float:
        try:
            return parse_float(text, low=low, high=high, what=what)
        except ParseError as exc:
            raise _refusal(exc, what) from None

    return parse


def _node_id(text: str) -> int:
    try:
        return parse_int(text, low=0, high=MAX_NODE_ID, what="node id")
    except ParseError:
        raise argparse.ArgumentTypeError(f"not a node id: {shown(text)}") from None


def _node_or_all(text: str) -> str:
    return text if text == "all" else str(_node_id(text))


def _name(text: str) -> str:
    try:
        return valid_name(text)
    except BadInput:
        raise argparse.ArgumentTypeError(
            f"bad cluster name {shown(text)}: use letters, digits, '.', '_' or '-' (at most 64)"
        ) from None


def _offset(text: str) -> float:
    """``clock --offset``: seconds either way, at most a year (``swim.MAX_CLOCK_OFFSET_S``)."""
    most = MAX_CLOCK_OFFSET_S
    try:
        return parse_float(text, low=-most, high=most, what="--offset")
    except ParseError as exc:
        if "out of range" not in str(exc):
            raise _refusal(exc, "--offset") from None
        raise argparse.ArgumentTypeError(
            f"{shown(text)} s is past a year: at most {most:.0f} s (366 days) either way"
        ) from None


def _pool(text: str) -> str:
    if not 0 < len(text) <= 64 or not text.isprintable():
        raise argparse.ArgumentTypeError(f"not a pool name: {shown(text)}")
    return text


def _subnet(text: str) -> str:
    if not SUBNET.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"--subnet: not an IPv4 network like 10.77.0.0/24: {shown(text)}"
        )
    return text


def _ids(part: str) -> list[int]:
    """One id (``3``) or a range of them (``2-4``: 2, 3 and 4, at most ``MAX_NODES``)."""
    first, dash, last = part.partition("-")
    low = parse_int(first, low=0, high=MAX_NODE_ID, what="node id")
    if not dash:
        return [low]
    high = parse_int(last, low=low, high=min(MAX_NODE_ID, low + MAX_NODES - 1), what="node id")
    return list(range(low, high + 1))


def _groups(text: str) -> list[int]:
    try:
        return [i for p in text.split(",") for i in _ids(p)]
    except ParseError:
        raise argparse.ArgumentTypeError(
            f"bad group {shown(text)}: expected comma-separated node ids or ranges, e.g. 0,1 or 2-4"
        ) from None


# ---- the parser -----------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)  # rule 3
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # one line and exit 2 (rule 2)
        line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
        if len(line) > 300:
            line = line[:300] + "..."
        print(f"{self.prog}: {line} (see: {self.prog} --help)", file=sys.stderr, flush=True)
        raise SystemExit(2)


if TYPE_CHECKING:
    Subcommands = argparse._SubParsersAction[_Parser]  # what add_subparsers returns


@dataclass(frozen=True, slots=True)
class Command:
    """A command the floor above adds (``scenarios.command``: ``scenario``, ``explore``):
    ``add`` puts its parser among the subcommands, ``run`` runs it and returns the exit
    status, raising ``BadInput`` or ``ClusterError`` as the handlers here do."""

    name: str
    add: Callable[[Subcommands], None]
    run: Callable[[argparse.Namespace], int]


def _command(sub: Subcommands, name: str, help_: str) -> argparse.ArgumentParser:
    """A subcommand on one named cluster (``--name``)."""
    p = sub.add_parser(name, help=help_, description=help_)
    p.add_argument("--name", type=_name, default="default", help="cluster name (default: default)")
    return p


def _add_cluster_commands(sub: Subcommands) -> None:
    p = _command(sub, "up", "start N node processes and wait until they all see each other alive")
    nodes = integer(1, MAX_NODES, "-n")
    p.add_argument("-n", "--nodes", dest="n", type=nodes, required=True, help="number of nodes")
    p.add_argument(
        "--serf",
        type=integer(0, MAX_NODES - 1, "--serf"),
        default=0,
        metavar="M",
        help="M real Serf agents too (members N..N+M-1); the nodes then speak memberlist",
    )
    port = integer(0, 65535, "--base-port")
    p.add_argument("--base-port", type=port, default=8080, help="dashboard of node i: base+i")
    port = integer(0, 65535, "--runtime-base-port")
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
    timeout = number(0.1, MAX_SECONDS, "--timeout")
    p.add_argument("--timeout", type=timeout, default=120.0, help="seconds to wait (default 120)")

    p = _command(sub, "status", "the nodes of a cluster and their process states")
    p.add_argument("--json", action="store_true")
    p = _command(sub, "down", "stop every process of a cluster (SIGTERM, then SIGKILL)")
    grace = number(0, MAX_SECONDS, "--grace")
    p.add_argument("--grace", type=grace, default=10.0, help="seconds before SIGKILL")
    sub.add_parser("list", help="the clusters under RT_CLUSTER_HOME")


def _add_node_commands(sub: Subcommands) -> None:
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


def _add_fault_commands(sub: Subcommands) -> None:
    p = _command(
        sub, "partition", "split the cluster: each node blocks the nodes of the other groups"
    )
    p.add_argument("groups", type=_groups, nargs="+", metavar="IDS", help="e.g. 0,1 2,3,4")
    p = _command(sub, "cut", "one-way cut: the nodes of FROM send nothing to the nodes of TO")
    p.add_argument("src", type=_groups, metavar="FROM", help="node ids, e.g. 0,1 or 0-2")
    p.add_argument("dst", type=_groups, metavar="TO", help="node ids, e.g. 3 or 3,4")
    p = _command(sub, "clock", "set a node's clock: an offset from true and a rate")
    p.add_argument("node", type=_node_id)
    p.add_argument("--offset", type=_offset, default=0.0, metavar="S", help="seconds (+-1 year)")
    rate = number(MIN_CLOCK_RATE, MAX_CLOCK_RATE, "--rate")
    p.add_argument("--rate", type=rate, default=1.0, metavar="R", help="times real speed, 0.5-2")
    p = _command(sub, "disk", "slow, fail or fill a node's rt_bdev device POOL")
    p.add_argument("node", type=_node_id)
    p.add_argument("pool", type=_pool, metavar="POOL", help="the rt_bdev pool's name or id")
    latency = number(0, 600_000, "--latency-ms")
    p.add_argument("--latency-ms", type=latency, default=0.0, metavar="M", help="per operation")
    errors = number(0, 100, "--errors")
    p.add_argument("--errors", type=errors, default=0.0, metavar="PCT", help="I/O errors, %%")
    p.add_argument("--full", action="store_true", help="refuse writes past its present use")
    _command(
        sub,
        "heal",
        "remove partitions, one-way cuts, loss, delay, clock and disk faults on every node",
    )
    p = _command(sub, "loss", "drop PERCENT of a node's packets (NODE may be 'all')")
    p.add_argument("node", type=_node_or_all)
    p.add_argument("percent", type=number(0, 100, "PERCENT"), metavar="PERCENT")
    p.add_argument("--peer", type=_node_id, help="only packets to/from this peer")
    p = _command(sub, "delay", "delay a node's packets by MS milliseconds (NODE may be 'all')")
    p.add_argument("node", type=_node_or_all)
    p.add_argument("ms", type=number(0, 60000, "MS"), metavar="MS")
    p.add_argument("--peer", type=_node_id, help="only packets to/from this peer")


def build_parser(more: Sequence[Command] = ()) -> argparse.ArgumentParser:
    """The command line, with the commands ``more`` adds after the fault commands; the
    subcommands in the order ``--help`` lists them."""
    parser = _Parser(prog="rt_cluster", description="local rtsim clusters, chaos and scenarios")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_cluster_commands(sub)
    _add_node_commands(sub)
    _add_fault_commands(sub)
    for command in more:
        command.add(sub)
    return parser


# ---- running a command ----------------------------------------------------------------------


def _run(args: argparse.Namespace, more: Sequence[Command]) -> int:
    for command in more:
        if args.command == command.name:
            return command.run(args)
    from .commands import ASYNC_COMMANDS, cmd_list  # rule 4

    if args.command == "list":
        return cmd_list(args)
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
    """The first ``--option`` in ``args`` that is none of ``options`` (rule 3: an abbreviation
    is none of them), else None."""
    for arg in args:
        if arg == "--":
            break
        name = arg.split("=", 1)[0]
        if name.startswith("--") and name not in options:
            return name
    return None


def main(argv: Sequence[str] | None = None, more: Sequence[Command] = ()) -> int:
    """Run ``rt_cluster`` with ``argv`` (default: the process's) and the commands ``more``
    adds; the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(more)
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
        return _run(args, more)
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
