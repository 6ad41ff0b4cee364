"""``rt_run``: run a node and talk to the local one.

Flat subcommands ``start``, ``stop``, ``restart``, ``refresh``, ``compose``, ``config``,
``migrate``, ``monitor``; the nested legacy forms ``runtime start|stop|restart`` and
``repo refresh`` resolve to the same handlers. Commands that talk to a running node find it by
its runtime port (``--port``, else the settings' ``networking.port``) on the loopback RPC.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import psutil
import trio
import yaml

from cluster.ground.errors import ApiError, PeerUnavailable, PeerUnreachable, SettingsError
from cluster.ground.parse import MAX_NODE_ID, ParseError, parse_float, parse_int, parse_port
from cluster.ground.safeyaml import YamlError, YamlTooLarge, load_file
from cluster.ground.settings import Settings, load_settings
from cluster.rpc import Call, Compose, Migrate, Monitor, PeerTimeout, Pools, Stop, rpc_call

__all__ = ["main"]

RPC_TIMEOUT = 5.0


class CliError(Exception):
    """A message for stderr and a non-zero exit."""


class _Parser(argparse.ArgumentParser):
    """argparse whose refusal is one line on stderr (and exit status 2), no usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _arg(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type from a strict parser of ``cluster.ground.parse``."""

    def typed(text: str) -> Any:
        try:
            return parse(text)
        except ParseError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return typed


_PORT = _arg(parse_port)
_NODE_ID = _arg(lambda t: parse_int(t, low=0, high=MAX_NODE_ID, what="node id"))
_SEED = _arg(lambda t: parse_int(t, low=0, high=(1 << 64) - 1, what="seed"))
_TIMEOUT = _arg(lambda t: parse_float(t, low=0.0, high=3600.0, what="seconds"))
_INTERVAL = _arg(lambda t: parse_float(t, low=0.1, high=3600.0, what="seconds"))


def _add_node_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config", type=Path, help="configuration file (else $RT_SERVER_CONF, ~/.rt/rt.yaml)"
    )
    p.add_argument("--host", help="runtime address to bind (default 127.0.0.1)")
    p.add_argument(
        "--advertise",
        metavar="ADDR",
        help="address peers reach this node at (default: --host; needed with --host 0.0.0.0)",
    )
    p.add_argument("--port", type=_PORT, help="runtime port: UDP gossip and TCP RPC (default 9413)")
    p.add_argument("--hostfile", help="one host[:port] per line; a node's id is its line offset")
    p.add_argument("--node-id", type=_NODE_ID, dest="node_id", help="override the hostfile offset")
    p.add_argument(
        "--induct", action="store_true", help="join without a hostfile entry; take the next free id"
    )
    p.add_argument("--events", help="membership event log (JSON lines)")
    p.add_argument("--data-dir", dest="data_dir", help="where file block devices live")
    p.add_argument("--seed", type=_SEED, help="seed of the membership layer's randomness")
    p.add_argument(
        "--keyring", type=Path, help="gossip key file (sets swim.keyring_file; see docs)"
    )
    p.add_argument(
        "--wire",
        choices=("swim", "memberlist"),
        help="membership protocol: rtsim's own, or memberlist's to join Serf (sets swim.wire)",
    )
    p.add_argument("--name", help="memberlist name of this node (default rt-<node id>)")
    p.add_argument(
        "--join",
        action="append",
        metavar="HOST:PORT",
        help="a memberlist member (a Serf agent's bind address) to join through; repeatable",
    )
    p.add_argument("--log-file", dest="log_file", help="log file (default stderr)")
    viz = p.add_mutually_exclusive_group()
    viz.add_argument(
        "--viz", dest="viz", action="store_true", default=None, help="serve the dashboard"
    )
    viz.add_argument(
        "--no-viz", dest="viz", action="store_false", help="do not serve the dashboard"
    )
    p.add_argument("--viz-port", type=_PORT, dest="viz_port", help="dashboard port; implies --viz")
    p.add_argument("--viz-bind", dest="viz_bind", help="dashboard bind address; implies --viz")


def _add_target_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, help="configuration file")
    p.add_argument("--host", default=None, help="the node's runtime address (default 127.0.0.1)")
    p.add_argument(
        "--port", type=_PORT, help="the local node's runtime port (default from settings)"
    )


def _settings(args: argparse.Namespace, mode: str = "daemon") -> Settings:
    flags = {
        k: getattr(args, k, None)
        for k in (
            "viz",
            "viz_port",
            "viz_bind",
            "port",
            "hostfile",
            "node_id",
            "host",
            "advertise",
            "events",
            "log_file",
            "data_dir",
            "keyring",
            "wire",
            "name",
            "join",
        )
    }
    return load_settings(mode, flags=flags, config_file=getattr(args, "config", None))  # type: ignore[arg-type]


def _target(args: argparse.Namespace) -> tuple[str, int]:
    s = _settings(args)
    return s.networking.host, s.networking.port


def _call(args: argparse.Namespace, request: Call, timeout: float = RPC_TIMEOUT) -> Any:
    host, port = _target(args)
    try:
        return trio.run(rpc_call, host, port, request, timeout)
    except (PeerUnreachable, PeerTimeout) as exc:
        cause = exc.__cause__ or exc  # the transport's own error, as the user knows it
        raise CliError(
            f"no node is running at {host}:{port} ({cause.__class__.__name__}: {cause})"
        ) from None
    except ApiError as exc:
        raise CliError(f"node at {host}:{port}: {exc.message}") from None


# -- handlers ---------------------------------------------------------------------------------


def cmd_start(args: argparse.Namespace, settings: Settings | None = None) -> int:
    from .process import run_node

    settings = _settings(args) if settings is None else settings
    return run_node(settings, induct=args.induct, seed=args.seed)


def _stop(args: argparse.Namespace, quiet_if_none: bool = False) -> int:
    host, port = _target(args)
    try:
        ident = _call(args, Stop())
    except CliError:
        if quiet_if_none:
            return 0
        raise CliError(f"no node is running at {host}:{port}") from None
    pid = int(ident["pid"])
    deadline = time.monotonic() + args.timeout
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        raise CliError(f"node {ident['node_id']} (pid {pid}) did not stop within {args.timeout:g}s")
    print(f"stopped node {ident['node_id']} (pid {pid}) at {host}:{port}")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    return _stop(args)


def cmd_restart(args: argparse.Namespace) -> int:
    _stop(args, quiet_if_none=True)
    return cmd_start(args)


def cmd_refresh(args: argparse.Namespace) -> int:
    from cluster.api import routes_of
    from cluster.runtime import Runtime, available_modules

    settings = _settings(args, "embedded")
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


def cmd_compose(args: argparse.Namespace) -> int:
    if args.file == "list":
        body = _call(args, Pools())
        for p in body["pools"]:
            print(f"{p['pool_id']:>10}  {p['mod_name']:<14} {p['pool_name']}")
        return 0
    path = Path(args.file)
    try:
        data = load_file(path)
    except OSError as exc:
        raise CliError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except YamlTooLarge as exc:
        raise CliError(f"{path}: {exc}, the limit of a compose file") from None
    except YamlError as exc:
        raise CliError(f"{path}: not valid YAML: {exc}") from None
    entries = data.get("compose") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise CliError(f"{path}: expected a compose section (a list of pool entries)")
    failed = 0
    for i, entry in enumerate(entries):
        try:
            body = _call(args, Compose((entry,)))
            r = body["results"][0]
            print(f"composed {r['pool_name']} ({r['pool_id']})")
        except CliError as exc:
            failed += 1
            print(f"{path}: compose[{i}]: {exc}", file=sys.stderr)
    return 1 if failed else 0


def cmd_config(args: argparse.Namespace) -> int:
    settings = _settings(args)
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


def cmd_migrate(args: argparse.Namespace) -> int:
    body = _call(args, Migrate(args.pool, args.to), timeout=15.0)
    print(f"moved pool {body['pool_id']} to node {body['to']}")
    return 0


def _monitor_once(args: argparse.Namespace) -> dict[str, Any]:
    workers = _call(args, Monitor("workers"))
    containers = _call(args, Monitor("containers"))
    return {
        "node_id": workers["node_id"],
        "workers": workers["workers"],
        "pools": containers["containers"],
    }


def _print_monitor(snap: dict[str, Any]) -> None:
    print(f"node {snap['node_id']}  {time.strftime('%H:%M:%S')}")
    print(
        f"{'worker':>6} {'active':>6} {'queued':>6} {'blocked':>7} {'periodic':>8} {'retry':>5} "
        f"{'processed':>9} {'load_us':>9}"
    )
    for w in snap["workers"]:
        print(
            f"{w['worker_id']:>6} {'yes' if w['is_active'] else 'no':>6} "
            f"{w['num_queued_tasks']:>6} "
            f"{w['num_blocked_tasks']:>7} {w['num_periodic_tasks']:>8} {w['num_retry_tasks']:>5} "
            f"{w['num_tasks_processed']:>9} {w['load'] or 0:>9.0f}"
        )
    print(f"{'pool':>10}  {'module':<14} {'name':<16} methods (cpu coef / mape, trained only)")
    for p in snap["pools"]:
        methods = ", ".join(
            f"{m['name']} {m['coefficient']:.1f}/{m['mape']:.1f}%"
            for m in p["methods"]
            if m.get("trained")
        )
        print(f"{p['pool_id']:>10}  {p['mod_name']:<14} {p['pool_name']:<16} {methods or '-'}")


def cmd_monitor(args: argparse.Namespace) -> int:
    while True:
        snap = _monitor_once(args)
        if args.json:
            print(json.dumps(snap), flush=True)
        else:
            _print_monitor(snap)
            print(flush=True)
        if args.once:
            return 0
        time.sleep(args.interval)


# -- parser -----------------------------------------------------------------------------------


if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[_Parser]


def _add_start(
    sub: Subparsers, name: str, fn: Callable[[argparse.Namespace], int], help_: str
) -> None:
    p = sub.add_parser(name, help=help_)
    _add_node_flags(p)
    p.add_argument("--timeout", type=_TIMEOUT, default=10.0, help=argparse.SUPPRESS)
    p.set_defaults(fn=fn)


def _add_stop(sub: Subparsers) -> None:
    p = sub.add_parser("stop", help="stop the local node (found by its runtime port)")
    _add_target_flags(p)
    p.add_argument("--timeout", type=_TIMEOUT, default=10.0, help="seconds to wait for it to end")
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
    _add_target_flags(p)
    p.set_defaults(fn=cmd_compose)

    p = sub.add_parser("config", help="config export --path FILE: write the effective settings")
    p.add_argument("action", choices=["export"])
    p.add_argument("--path", help="file to write (default stdout)")
    _add_node_flags(p)
    p.set_defaults(fn=cmd_config)

    p = sub.add_parser("migrate", help="move a pool's container to another node")
    p.add_argument("pool")
    p.add_argument("--to", required=True, help="target node id")
    _add_target_flags(p)
    p.set_defaults(fn=cmd_migrate)

    p = sub.add_parser("monitor", help="active worker and pool statistics of the local node")
    p.add_argument("-i", "--interval", type=_INTERVAL, default=2.0, help="seconds between samples")
    p.add_argument("--once", action="store_true")
    p.add_argument("--json", action="store_true")
    _add_target_flags(p)
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
            return Prepared(args, _settings(args))
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
