"""``rt_run``: run a node and talk to the local one.

Flat subcommands ``start``, ``stop``, ``restart``, ``refresh``, ``compose``, ``config``,
``migrate``, ``monitor``; the nested legacy forms ``runtime start|stop|restart`` and
``repo refresh`` resolve to the same handlers. This module holds the parser, ``main`` and the
commands that run a node or read its settings; the commands that talk to a running node are
``nodeclient``'s, the flags and the settings they give ``flags``'.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import yaml

from cluster.ground.errors import PeerUnavailable, SettingsError
from cluster.ground.settings import Settings

from .flags import INTERVAL, TIMEOUT, add_node_flags, add_target_flags, settings_of
from .nodeclient import CliError, cmd_compose, cmd_migrate, cmd_monitor, cmd_stop, stop_node

__all__ = ["Prepared", "build_parser", "cached_parser", "main", "prepare"]


class _Parser(argparse.ArgumentParser):
    """argparse whose refusal is one line on stderr (and exit status 2), no usage block; an
    option is its whole name (no abbreviation taken for it: ``--conf`` is not ``--config``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


# -- handlers ---------------------------------------------------------------------------------


def cmd_start(args: argparse.Namespace, settings: Settings | None = None) -> int:
    from .process import run_node

    settings = settings_of(args) if settings is None else settings
    clock = (args.clock_offset, args.clock_rate)
    return run_node(settings, induct=args.induct, seed=args.seed, clock=clock)


def cmd_restart(args: argparse.Namespace) -> int:
    stop_node(args, quiet_if_none=True)
    return cmd_start(args)


def cmd_refresh(args: argparse.Namespace) -> int:
    from cluster.api import routes_of
    from cluster.runtime import Runtime, available_modules

    settings = settings_of(args, "embedded")
    runtime = Runtime(settings, 0)
    print(f"modules found: {', '.join(available_modules())}")
    for name, module in runtime.modules.items():
        print(f"\n{name}: {module.title or name}")
        print(f"  methods: {', '.join(module.methods) or '-'}")
        print(f"  create form: {'yes' if module.has_create_form else 'no'}")
        for r in routes_of(module):
            print(f"  route: {r.method:4} /api/mod/{name}/{r.path}  {r.doc}")
        print(f"  assets: {runtime.assets.get(name, '(none found)')}")
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    text = yaml.safe_dump(
        {k: v for k, v in settings.to_dict().items() if k != "source"}, sort_keys=False
    )
    if args.path:
        try:
            Path(args.path).write_text(text)
        except OSError as exc:
            raise CliError(f"{args.path}: cannot write: {exc.strerror or exc}") from None
        print(f"wrote the effective settings to {args.path}")
    else:
        sys.stdout.write(text)
    return 0


# -- parser -----------------------------------------------------------------------------------


if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[_Parser]


def _add_start(
    sub: Subparsers, name: str, fn: Callable[[argparse.Namespace], int], help_: str
) -> None:
    p = sub.add_parser(name, help=help_)
    add_node_flags(p)
    p.add_argument("--timeout", type=TIMEOUT, default=10.0, help=argparse.SUPPRESS)
    p.set_defaults(fn=fn)


def _add_stop(sub: Subparsers) -> None:
    p = sub.add_parser("stop", help="stop the local node (found by its runtime port)")
    add_target_flags(p)
    p.add_argument("--timeout", type=TIMEOUT, default=10.0, help="seconds to wait for it to end")
    p.set_defaults(fn=cmd_stop)


def _add_refresh(sub: Subparsers) -> None:
    p = sub.add_parser("refresh", help="re-scan installed modules: methods, routes, assets")
    p.add_argument("--config", type=Path)
    p.set_defaults(fn=cmd_refresh)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rt_run", description="Run an rtsim runtime node and manage the local one."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_start(sub, "start", cmd_start, "run a node in the foreground until SIGINT/SIGTERM or stop")
    _add_stop(sub)
    _add_start(sub, "restart", cmd_restart, "stop the local node if running, then start one")
    _add_refresh(sub)

    runtime = sub.add_parser("runtime", help="legacy form: runtime start|stop|restart")
    rsub = runtime.add_subparsers(dest="legacy", required=True, metavar="COMMAND")
    _add_start(rsub, "start", cmd_start, "same as rt_run start")
    _add_stop(rsub)
    _add_start(rsub, "restart", cmd_restart, "same as rt_run restart")
    repo = sub.add_parser("repo", help="legacy form: repo refresh")
    _add_refresh(repo.add_subparsers(dest="legacy", required=True, metavar="COMMAND"))

    p = sub.add_parser(
        "compose", help="compose the pools of FILE on the local node; 'compose list' lists pools"
    )
    p.add_argument("file", metavar="FILE|list")
    add_target_flags(p)
    p.set_defaults(fn=cmd_compose)

    p = sub.add_parser("config", help="config export --path FILE: write the effective settings")
    p.add_argument("action", choices=["export"])
    p.add_argument("--path", help="file to write (default stdout)")
    add_node_flags(p)
    p.set_defaults(fn=cmd_config)

    p = sub.add_parser("migrate", help="move a pool's container to another node")
    p.add_argument("pool")
    p.add_argument("--to", required=True, help="target node id")
    add_target_flags(p)
    p.set_defaults(fn=cmd_migrate)

    p = sub.add_parser("monitor", help="active worker and pool statistics of the local node")
    p.add_argument("-i", "--interval", type=INTERVAL, default=2.0, help="seconds between samples")
    p.add_argument("--once", action="store_true")
    p.add_argument("--json", action="store_true")
    add_target_flags(p)
    p.set_defaults(fn=cmd_monitor)
    return parser


@functools.cache
def cached_parser() -> argparse.ArgumentParser:
    """Built once a process (a parser is not changed by parsing): the zygote builds it before
    it forks, so its nodes share it instead of each building its own (about 1 MB)."""
    return build_parser()


@dataclass(frozen=True)
class Prepared:
    """A ``start`` command line parsed and its settings loaded, ahead of the run."""

    args: argparse.Namespace
    settings: Settings


def prepare(argv: Sequence[str]) -> Prepared | None:
    """What ``main(argv)`` does first when ``argv`` starts a node (its command line parsed,
    its settings read), done ahead: by the zygote before it forks, so its nodes share that
    work's pages instead of each writing its own copy (issue 33, about 2 MB a node). None
    when ``argv`` is not a start that would succeed so far: ``main`` then does it all itself
    and reports what fails, as always. Prints nothing."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            args = cached_parser().parse_args(argv)
            if args.fn is not cmd_start:
                return None
            return Prepared(args, settings_of(args))
    except (Exception, SystemExit):
        return None


def main(argv: Sequence[str] | None = None, prepared: Prepared | None = None) -> int:
    """``rt_run``; ``prepared`` is ``prepare(argv)`` done ahead (then ``argv`` is not read)."""
    args = cached_parser().parse_args(argv) if prepared is None else prepared.args
    try:
        if prepared is not None:
            rc: int = cmd_start(prepared.args, prepared.settings)
        else:
            rc = args.fn(args)
    except (CliError, SettingsError) as exc:
        print(f"rt_run: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, SettingsError) else 1
    except PeerUnavailable as exc:
        print(f"rt_run: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return rc


if __name__ == "__main__":
    sys.exit(main())
