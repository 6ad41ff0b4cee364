"""``rt_run``'s flags: the node's settings given on a command line, and their types.

Rules:
1. Every number is parsed by ``cluster.ground.parse`` (an argparse type from its strict
   parsers); a bad one is one line on stderr and exit status 2.
2. The flags that set a setting are the parser's own record: each ``add_*_flags`` files the
   destinations it added under ``settings_flags`` (a parser default), and ``settings_of``
   hands exactly those to ``load_settings``. A run option (``--induct``, ``--seed``, the
   clock a fault set: ``--clock-offset``, ``--clock-rate``) and the file to read
   (``--config``) are not among them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from cluster.ground.clock import MAX_CLOCK_OFFSET_S, MAX_CLOCK_RATE, MIN_CLOCK_RATE
from cluster.ground.parse import MAX_NODE_ID, ParseError, parse_float, parse_int, parse_port
from cluster.ground.settings import Settings, load_settings

__all__ = ["INTERVAL", "TIMEOUT", "add_node_flags", "add_target_flags", "settings_of"]


def _arg(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type from a strict parser of ``cluster.ground.parse``."""

    def typed(text: str) -> Any:
        try:
            return parse(text)
        except ParseError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return typed


PORT = _arg(parse_port)
NODE_ID = _arg(lambda t: parse_int(t, low=0, high=MAX_NODE_ID, what="node id"))
SEED = _arg(lambda t: parse_int(t, low=0, high=(1 << 64) - 1, what="seed"))
TIMEOUT = _arg(lambda t: parse_float(t, low=0.0, high=3600.0, what="seconds"))
INTERVAL = _arg(lambda t: parse_float(t, low=0.1, high=3600.0, what="seconds"))
CLOCK_OFFSET = _arg(
    lambda t: parse_float(t, low=-MAX_CLOCK_OFFSET_S, high=MAX_CLOCK_OFFSET_S, what="clock offset")
)
CLOCK_RATE = _arg(
    lambda t: parse_float(t, low=MIN_CLOCK_RATE, high=MAX_CLOCK_RATE, what="clock rate")
)


def _file_settings(p: argparse.ArgumentParser, flags: Sequence[argparse.Action]) -> None:
    """Rule 2: the destinations of ``flags`` are the settings this parser's flags set."""
    p.set_defaults(settings_flags=tuple(a.dest for a in flags))


def add_node_flags(p: argparse.ArgumentParser) -> None:
    """The flags of a command that runs a node (or shows the settings one would run with)."""
    p.add_argument(
        "--config", type=Path, help="configuration file (else $RT_SERVER_CONF, ~/.rt/rt.yaml)"
    )
    flags = [
        p.add_argument("--host", help="runtime address to bind (default 127.0.0.1)"),
        p.add_argument(
            "--advertise",
            metavar="ADDR",
            help="address peers reach this node at (default: --host; needed with --host 0.0.0.0)",
        ),
        p.add_argument(
            "--port", type=PORT, help="runtime port: UDP gossip and TCP RPC (default 9413)"
        ),
        p.add_argument(
            "--hostfile", help="one host[:port] per line; a node's id is its line offset"
        ),
        p.add_argument(
            "--node-id", type=NODE_ID, dest="node_id", help="override the hostfile offset"
        ),
    ]
    p.add_argument(
        "--induct", action="store_true", help="join without a hostfile entry; take the next free id"
    )
    flags += [
        p.add_argument("--events", help="membership event log (JSON lines)"),
        p.add_argument("--data-dir", dest="data_dir", help="where file block devices live"),
    ]
    p.add_argument("--seed", type=SEED, help="seed of the membership layer's randomness")
    p.add_argument(
        "--clock-offset",
        type=CLOCK_OFFSET,
        default=0.0,
        metavar="S",
        help="the node's wall clock reads S seconds off true (a fault; rt_cluster clock)",
    )
    p.add_argument(
        "--clock-rate",
        type=CLOCK_RATE,
        default=1.0,
        metavar="R",
        help="the node's clock runs at R times real speed, 0.5-2.0 (a fault; rt_cluster clock)",
    )
    flags += [
        p.add_argument(
            "--keyring", type=Path, help="gossip key file (sets swim.keyring_file; see docs)"
        ),
        p.add_argument(
            "--wire",
            choices=("swim", "memberlist"),
            help="membership protocol: rtsim's own, or memberlist's to join Serf (sets swim.wire)",
        ),
        p.add_argument("--name", help="memberlist name of this node (default rt-<node id>)"),
        p.add_argument(
            "--join",
            action="append",
            metavar="HOST:PORT",
            help="a memberlist member (a Serf agent's bind address) to join through; repeatable",
        ),
        p.add_argument("--log-file", dest="log_file", help="log file (default stderr)"),
    ]
    viz = p.add_mutually_exclusive_group()
    flags.append(
        viz.add_argument(
            "--viz", dest="viz", action="store_true", default=None, help="serve the dashboard"
        )
    )
    viz.add_argument(
        "--no-viz", dest="viz", action="store_false", help="do not serve the dashboard"
    )
    flags += [
        p.add_argument(
            "--viz-port", type=PORT, dest="viz_port", help="dashboard port; implies --viz"
        ),
        p.add_argument("--viz-bind", dest="viz_bind", help="dashboard bind address; implies --viz"),
    ]
    _file_settings(p, flags)


def add_target_flags(p: argparse.ArgumentParser) -> None:
    """The flags of a command that talks to the local node: where it listens."""
    p.add_argument("--config", type=Path, help="configuration file")
    flags = [
        p.add_argument(
            "--host", default=None, help="the node's runtime address (default 127.0.0.1)"
        ),
        p.add_argument(
            "--port", type=PORT, help="the local node's runtime port (default from settings)"
        ),
    ]
    _file_settings(p, flags)


def settings_of(
    args: argparse.Namespace, mode: Literal["daemon", "embedded"] = "daemon"
) -> Settings:
    """The settings a parsed command line gives: its file, then its settings flags (rule 2)."""
    flags = {name: getattr(args, name) for name in getattr(args, "settings_flags", ())}
    return load_settings(mode, flags=flags, config_file=getattr(args, "config", None))
