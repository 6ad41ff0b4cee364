"""``rt_cluster``, the whole command: the cluster commands of ``cluster.rt_cluster`` and the two
that run scenarios, ``scenario FILE`` and ``explore`` (docs/rt_cluster.md, docs/explore.md).

Rules:
1. This is the command's entry point (the ``rt_cluster`` console script, ``python -m
   scenarios.command``). It sits above ``cluster.rt_cluster`` and hands it its two commands as
   ``Command`` records, so the cluster commands never import a scenario.
2. Every argument is parsed strictly before a handler runs, by ``cluster.rt_cluster.cli``'s
   types (one number grammar, ``cluster.ground.parse``); a user mistake is a ``BadInput``
   (exit status 2), as in every other command.
3. The runners load when their command runs (``scenarios.runner``, ``scenarios.explore``; the
   loader of ``--property`` checkers when one is given): each command starts without paying
   for the others', and ``scenario --sim`` loads neither explore nor the launcher.
4. Run as the process's own command (``main()`` without ``argv``: the console script, ``python
   -m``), the command leaves its heap to the operating system: at exit the cyclic garbage is
   not collected (``gc.freeze`` before the interpreter's last collections). A simulated
   cluster's machines are such garbage, about 0.2 s of collection at 1,000 nodes for memory the
   process hands back anyway; every file is closed where it is written, so nothing waits on that
   collection to be flushed. One simulated run (``scenario --sim``, one run) goes further and
   runs with the collector off: the cyclic garbage it makes is its machines, kept to the end
   anyway, and the collections of its heap cost about 0.1 s at 1,000 nodes. A caller that
   passes ``argv`` (a test) keeps its collector as it was.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import math
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from cluster.ground.parse import ParseError, parse_float, parse_int
from cluster.local import BadInput
from cluster.rt_cluster.cli import MAX_NODES, Command, integer, number
from cluster.rt_cluster.cli import build_parser as _cluster_parser
from cluster.rt_cluster.cli import main as _cluster_main

if TYPE_CHECKING:
    from cluster.rt_cluster.cli import Subcommands

__all__ = ["COMMANDS", "MAX_SIM_NODES", "build_parser", "main"]

MAX_SIM_NODES = 65536  # scenario -n with --sim: SWIM's default member table cap (max_members)


# ---- scenario -------------------------------------------------------------------------------


def _add_scenario(sub: Subcommands) -> None:
    p = sub.add_parser("scenario", help="run a scenario file; exit 0 pass, 1 fail, 2 error")
    p.add_argument("file", help="a scenario YAML file, or the name of one in the library")
    p.add_argument("--sim", action="store_true", help="on the simulated network (virtual time)")
    p.add_argument("--seed", type=integer(0, 2**63 - 1, "--seed"), help="the scenario's seed")
    p.add_argument(
        "--runs",
        type=integer(1, 100_000, "--runs"),
        default=1,
        help="play it K times with seeds seed..seed+K-1; results and report sum them up",
    )
    p.add_argument("--out", help="directory for results.json and report.html")
    p.add_argument(
        "-n",
        "--nodes",
        dest="n",
        type=integer(1, MAX_SIM_NODES, "-n"),
        help=f"override the cluster size (at most {MAX_NODES}; {MAX_SIM_NODES} with --sim)",
    )
    p.add_argument(
        "--hostfile",
        metavar="H",
        help="play on the running cluster H names (host:port lines; node id = line offset)",
    )
    p.add_argument(
        "--storage",
        action="store_true",
        help="search schedules with an array on whole simulated nodes: writes while the "
        "members' nodes die, pause, restart and are cut off (default: membership only)",
    )
    p.add_argument(
        "--property",
        action="append",
        dest="properties",
        default=[],
        metavar="MODULE:FUNCTION",
        help="let the file's property: run this checker of yours (explore failure files)",
    )


def cmd_scenario(args: argparse.Namespace, *, own_process: bool = False) -> int:
    """``scenario FILE``; ``own_process``: run as the process's own command (rule 4)."""
    from .runner import run_scenario_cli  # rule 3

    if own_process and args.sim and (args.runs or 1) == 1:
        gc.disable()  # rule 4: the process ends with this run

    if args.n is not None and args.n > MAX_NODES and not args.sim:
        raise BadInput(f"-n {args.n}: real clusters have at most {MAX_NODES} nodes (--sim: more)")
    if args.properties:
        from .judge.properties import load_property  # rule 3: explore's failure files

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


# ---- explore --------------------------------------------------------------------------------


def _size_range(text: str) -> tuple[int, int]:
    """``-n N`` or ``-n A-B`` of ``explore``: 2 to 64 nodes (argparse names the option)."""
    low, _, high = text.partition("-")
    try:
        a = parse_int(low, low=0, high=1 << 20, what="-n")
        b = parse_int(high, low=0, high=1 << 20, what="-n") if high else a
    except ParseError:
        raise argparse.ArgumentTypeError(f"{text[:20]!r}: a size N or a range A-B") from None
    if not 2 <= a <= b <= 64:
        raise argparse.ArgumentTypeError(f"{text[:20]}: sizes of 2 to 64 nodes, low first")
    return a, b


def _swim_range(text: str) -> tuple[str, float, float]:
    """``--swim KEY=LOW..HIGH`` of ``explore``."""
    key, _, span = text.partition("=")
    low, _, high = span.partition("..")
    try:
        a = parse_float(low, low=-math.inf, high=math.inf, what="--swim")
        b = parse_float(high, low=-math.inf, high=math.inf, what="--swim")
    except ParseError:
        raise argparse.ArgumentTypeError(f"--swim {text[:40]!r}: KEY=LOW..HIGH") from None
    if not key or not 0 <= a <= b or b > 1e6:
        raise argparse.ArgumentTypeError(f"--swim {text[:40]}: KEY=LOW..HIGH, 0 <= LOW <= HIGH")
    return key, a, b


def _fault_kinds(text: str) -> tuple[str, ...]:
    """``--faults KIND,...`` of ``explore`` (argparse names the option)."""
    from .explore.drawing import parse_faults  # rule 3: only the drawing, no runner

    try:
        return parse_faults(text[:400])
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--faults: ")) from None


def _add_explore(sub: Subcommands) -> None:
    p = sub.add_parser(
        "explore",
        help="search simulated fault schedules for a property violation, shrink it, write it; "
        "exit 0 none, 1 violation, 2 bad usage",
    )
    # Each help names its default in the words "(default: ...)", as --help shows it.
    p.add_argument(
        "-n",
        "--nodes",
        dest="n",
        type=_size_range,
        default=(3, 5),
        metavar="N|A-B",
        help="cluster size N or range A-B (default: 3-5)",
    )
    p.add_argument(
        "--budget-s",
        type=number(1, 86400, "--budget-s"),
        help="seconds in all (default: 60, unless --runs is given)",
    )
    p.add_argument(
        "--runs", type=integer(1, 10**9, "--runs"), help="runs to search (default: no limit)"
    )
    seed = integer(0, 2**31, "--seed")
    p.add_argument("--seed", type=seed, default=0, help="search seed (default: 0)")
    jobs = integer(1, 64, "--jobs")
    p.add_argument("--jobs", type=jobs, default=1, help="worker processes (default: 1)")
    p.add_argument("--out", default="explore-out", help="where failures go (default: explore-out)")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="write over an earlier search's failures in --out (default: refuse)",
    )
    p.add_argument(
        "--swim",
        type=_swim_range,
        action="append",
        default=[],
        help="KEY=LOW..HIGH to draw from (default: none: SWIM's defaults)",
    )
    p.add_argument(
        "--faults",
        type=_fault_kinds,
        metavar="KIND,...",
        help="the fault kinds to draw, comma-separated (default: all: "
        "kill,pause,restart,add,partition,loss,delay,rolling,cut,clock)",
    )
    p.add_argument(
        "--storage",
        action="store_true",
        help="search schedules with an array on whole simulated nodes: writes while the "
        "members' nodes die, pause, restart and are cut off (default: membership only)",
    )
    p.add_argument(
        "--property",
        action="append",
        dest="properties",
        help="check only these (repeat; built-in names, or module:function, a checker; "
        "default: every built-in property; with --storage: no_lost_writes, array_recovers, "
        "forward_bounded, no_exception)",
    )


def cmd_explore(args: argparse.Namespace) -> int:
    from .explore import BUILT_IN, FAULT_KINDS, Options, Search, run_search  # rule 3
    from .judge.properties import STORAGE_PROPERTIES

    swim = {key: (low, high) for key, low, high in args.swim}
    faults = args.faults or FAULT_KINDS
    try:
        Path(args.out).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"--out {args.out}: {exc.strerror or exc}") from None
    search = Search(
        options=Options(args.n[0], args.n[1], swim, faults, storage=args.storage),
        budget_s=args.budget_s if args.budget_s is not None or args.runs else 60.0,
        runs=args.runs,
        seed=args.seed,
        jobs=args.jobs,
        out=Path(args.out),
        properties=args.properties or list(STORAGE_PROPERTIES if args.storage else BUILT_IN),
        overwrite=args.overwrite,
    )
    try:
        return run_search(search, say=lambda line: print(line, flush=True))
    except ValueError as exc:
        raise BadInput(str(exc)) from None


# ---- the whole command ----------------------------------------------------------------------

COMMANDS = (
    Command("scenario", _add_scenario, cmd_scenario),
    Command("explore", _add_explore, cmd_explore),
)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line, subcommands in the order ``--help`` lists them."""
    return _cluster_parser(COMMANDS)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``rt_cluster`` with ``argv`` (default: the process's, and then rule 4); the exit
    status."""
    if argv is None:
        atexit.register(gc.freeze)  # rule 4: runs before the interpreter's last collections
        own = Command("scenario", _add_scenario, partial(cmd_scenario, own_process=True))
        return _cluster_main(argv, (own, *COMMANDS[1:]))
    return _cluster_main(argv, COMMANDS)


if __name__ == "__main__":
    sys.exit(main())
